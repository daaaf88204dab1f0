"""Mistakes in the renderers' methods, for the "renderer" mutants of fuzz.testbed.mutants: each function is the broken
method a subclass of the real renderer gets (CStyleRenderer's reach both languages, OpenCLRenderer's OpenCL alone)."""
from __future__ import annotations

import math

from tinyspec.ops.spelling import INFIX, PREFIX
from tinyspec.uop import Ops, UOp


def divmod_zero_gives_zero(self, u: UOp, s: list[str]) -> str:
  a, b = u.src
  dt = u.dtype
  ret = self.cast_expr(f"{s[0]} {INFIX[u.op]} {s[1]}", dt)
  if dt.kind == "i" and dt.bits >= 32 and b.vmin <= -1 <= b.vmax and a.vmin == dt.min:
    ret = f"({s[1]} == -1 ? {self.wrapping(PREFIX[Ops.NEG], dt, s[0]) if u.op is Ops.IDIV else '0'} : {ret})"
  if b.vmin <= 0 <= b.vmax: ret = f"({s[1]} == 0 ? 0 : {ret})"  # MOD by 0 is the dividend, not 0
  return ret


def shift_count_unmasked(self, b: UOp, bs: str, dt) -> str:
  return bs  # the count taken as it is: a shift by the width or more is not taken modulo the width


def float_max_drops_nan(self, u: UOp, s: list[str]) -> str:
  if u.op is Ops.MAX: return f"({s[0]} > {s[1]} ? {s[0]} : {s[1]})"  # NaN in a is lost: NaN > b is false
  return type(self).__mro__[1].render_float_alu(self, u, s)


def const_loses_negative_zero(self, v, dt) -> str:
  if dt.is_float and v == 0 and not math.isnan(v): return "0.0" + self.float_suffix.get(dt, "")  # -0.0 rendered as 0.0
  return type(self).__mro__[1].render_const(self, v, dt)


def cast_float_to_int_unguarded(self, x: str, src, dst) -> str:
  if src.is_float and dst.kind in "iu": return self.cast_expr(x, dst)  # a plain C cast: NaN and out-of-range values are undefined
  return type(self).__mro__[1].render_cast(self, x, src, dst)


def float_fn_single(self, name: str, dt) -> str:
  return name + "f"  # the float32 function (sqrtf) for float64 too: the argument is rounded to float


def opencl_cast_no_sat(self, x: str, src, dst) -> str:
  if src.is_float and dst.kind in "iu": return f"convert_{self.type_name(dst)}_rtz({x})"  # no _sat: out-of-range values wrap
  return type(self).__mro__[1].render_cast(self, x, src, dst)


def opencl_signed_wraps_natively(self, op: str, dt, a: str, b: str | None = None) -> str:
  inner = f"{op}({a})" if b is None else f"{a} {op} {b}"  # signed overflow left to OpenCL C, where it is undefined
  return self.cast_expr(inner, dt) if dt.bits < 32 or dt.kind == "u" else f"({inner})"

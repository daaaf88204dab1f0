"""The scalar meaning of every elementwise op: one Python value in, one out, as the generated C computes it.

Fixed-width integers wrap (two's complement, as C with -fwrapv); `index` is unbounded (a Python int); bool
arithmetic is C's (bool)(a op b); float32 and float64 compute in their own dtype (a numpy scalar, so float32 rounds
as float32); the small floats (float16, bfloat16) compute in float32 and round back to their dtype after every op.
IDIV and MOD truncate toward zero as C does.

C leaves some points undefined. tinyspec gives each a fixed value, the same in the evaluator, the z3 meaning
(tinyspec.ops.smt) and the generated code (tinyspec.render adds the guards), and `c_undefined` names them, so a
consumer that must not depend on them (a bounds proof, the simplifier's constant folding, a fuzzer's UB screen)
can ask:

  division by zero      a IDIV 0 == 0, a MOD 0 == a
  MIN IDIV -1           wraps to MIN; MIN MOD -1 == 0
  shift count           taken modulo the shift width (count & (width - 1), as x86 does): the bits of the dtype, but
                        32 for dtypes narrower than int, which C promotes to int before shifting (a uint8 shifted
                        by 8 is 0, as tinygrad's C and its emulator give); 64 for index
  signed overflow       wraps (C with -fwrapv); SHL shifts the two's complement bits
  float -> int CAST     truncates toward zero; NaN gives 0; out of range (inf included) saturates to min or max
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tinyspec.dtype import DType, dtypes, round_float, truncate
from tinyspec.opcodes import Ops

INDEX_SHIFT_BITS = 64  # index is stored as int64, so a shift count on index is taken modulo 64
# the reasons c_undefined gives for the points every backend defines the same way as the evaluator by wrapping
SIGNED_OVERFLOW, INDEX_OVERFLOW, DIV_OVERFLOW = "signed overflow", "index value outside int64", "MIN divided by -1 overflows"
# the reasons c_undefined and cast_undefined give for the points tinyspec gives no value either; every other point they
# name has the value of the module docstring, the same in the evaluator and every backend
LEFT_OPEN = frozenset({INDEX_OVERFLOW})


# float ops whose meaning is the math library's, which is not correctly rounded: results may differ between numpy,
# C's libm and OpenCL's builtins by up to this many units in the last place (every other float op is exact IEEE)
APPROXIMATE_ULPS: dict[Ops, int] = {Ops.EXP2: 4, Ops.LOG2: 4, Ops.SIN: 4}


def cdiv(a: int, b: int) -> int:
  """a / b truncated toward zero (b != 0), exact on unbounded ints."""
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def cmod(a: int, b: int) -> int:
  """a % b with the sign of a (b != 0), so that a == cdiv(a, b) * b + cmod(a, b)."""
  return a - cdiv(a, b) * b


def shift_bits(dt: DType) -> int:
  """The width a shift count of dt is taken modulo: its bits, at least int's 32 (C shifts a narrower operand as int)."""
  return INDEX_SHIFT_BITS if dt is dtypes.index else max(dt.bits, 32)


def _idiv(dt: DType, a: int, b: int) -> int: return 0 if b == 0 else cdiv(a, b)
def _mod(dt: DType, a: int, b: int) -> int: return a if b == 0 else cmod(a, b)


def _shl(dt: DType, a: int, b: int) -> int: return a << (b & (shift_bits(dt) - 1))


def _shr(dt: DType, a: int, b: int) -> int:
  if dt.kind == "u": a &= (1 << dt.bits) - 1
  return a >> (b & (shift_bits(dt) - 1))  # Python's >> on negative ints is arithmetic, as C's on signed types


# integer meaning on exact Python ints, before wrapping into the dtype; also the meaning of bool ops on 0/1
INT_MEANING: dict[Ops, Callable[..., Any]] = {
  Ops.NEG: lambda dt, a: -a, Ops.ADD: lambda dt, a, b: a + b, Ops.SUB: lambda dt, a, b: a - b, Ops.MUL: lambda dt, a, b: a * b,
  Ops.MAX: lambda dt, a, b: max(a, b), Ops.IDIV: _idiv, Ops.MOD: _mod,
  Ops.AND: lambda dt, a, b: a & b, Ops.OR: lambda dt, a, b: a | b, Ops.XOR: lambda dt, a, b: a ^ b, Ops.SHL: _shl, Ops.SHR: _shr,
}
_CMP: dict[Ops, Callable[[Any, Any], bool]] = {Ops.CMPLT: lambda a, b: a < b, Ops.CMPNE: lambda a, b: a != b, Ops.CMPEQ: lambda a, b: a == b}
_FLOAT: dict[Ops, Callable[..., Any]] = {
  Ops.NEG: np.negative, Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.MAX: np.maximum,  # MAX propagates NaN
  Ops.FDIV: np.true_divide, Ops.RECIP: np.reciprocal, Ops.SQRT: np.sqrt, Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin, Ops.TRUNC: np.trunc,
}


def run(op: Ops, dt: DType, *vals: Any) -> Any:
  """The value of elementwise op on scalar operands of dtype dt (for CAST and BITCAST, dt is the target dtype and
  the operand's dtype is passed as `vals[1]`). The result is wrapped into the op's result dtype."""
  if op is Ops.CAST: return cast(vals[0], vals[1], dt)
  if op is Ops.BITCAST: return bitcast(vals[0], vals[1], dt)
  if op is Ops.WHERE: return vals[1] if vals[0] else vals[2]
  if op in _CMP:
    if dt.kind == "f": vals = tuple(dt.np.type(v) for v in vals)
    return bool(_CMP[op](*vals))
  if dt.is_small_float:  # computed in float32, rounded back (tinyspec.ops.vector.run)
    with np.errstate(all="ignore"): return float(round_float(_FLOAT[op](*(np.float32(v) for v in vals)), dt))
  if dt.kind == "f":
    with np.errstate(all="ignore"): return float(_FLOAT[op](*(dt.np.type(v) for v in vals)))
  # bool arithmetic is C's (bool)(a op b): nonzero is true (ADD of two trues is 2, true)
  if dt.kind == "b": return bool(INT_MEANING[op](dt, *(int(bool(v)) for v in vals)) != 0) if op is not Ops.NEG else not vals[0]
  return truncate(INT_MEANING[op](dt, *(int(v) for v in vals)), dt)


def reduce_identity(op: Ops, dt: DType) -> Any:
  """The value a REDUCE with op over no elements gives, and an accumulator starts from: 0 for ADD, 1 for MUL, the
  dtype's minimum for MAX (-inf for floats, False for bool)."""
  if op is Ops.ADD: return truncate(0, dt)
  if op is Ops.MUL: return truncate(1, dt)
  if op is Ops.MAX: return dt.min
  raise ValueError(f"{op!r} is not a reduce op (ADD, MUL, MAX)")


def cast(v: Any, src: DType, dst: DType) -> Any:
  """C conversion, defined everywhere (see the module docstring)."""
  if src.kind == "f": v = float(v)  # numpy float scalars too
  if dst.kind == "b": return bool(v != 0)
  if src.kind == "f" and dst.kind in "iux":
    if math.isnan(v): return 0
    if v >= dst.max: return int(dst.max)
    if v <= dst.min: return int(dst.min)
    return int(math.trunc(v))
  if dst.kind == "f":
    if dst.is_small_float: return float(round_float(np.float64(int(v)) if src.kind in "iuxb" else np.float64(v), dst))
    with np.errstate(all="ignore"): return float(dst.np.type(int(v) if src.kind in "iuxb" else v))
  return truncate(int(v), dst)


def bitcast(v: Any, src: DType, dst: DType) -> Any:
  """The bits of v (dtype src) read as dst (same item size)."""
  out = np.array(v, dtype=src.np).view(dst.np)
  return out.item() if dst.kind != "f" else float(out)


def c_undefined(op: Ops, dt: DType, *vals: Any) -> str | None:
  """Why C (without -fwrapv) leaves op on these operands undefined, or None where C defines it. tinyspec defines
  every such point (module docstring) except an `index` result past int64; consumers that must not rely on that
  choice ask here."""
  if dt.kind not in "iux" or op not in INT_MEANING: return None
  # index is unbounded in meaning but stored as int64 by the evaluator and the lowered programs
  if dt.kind == "x" and not dt.min <= INT_MEANING[op](dt, *(int(v) for v in vals)) <= dt.max: return INDEX_OVERFLOW
  if op in (Ops.IDIV, Ops.MOD):
    a, b = vals
    if b == 0: return "division by zero"
    if dt.kind == "i" and a == dt.min and b == -1: return DIV_OVERFLOW
  if op in (Ops.SHL, Ops.SHR):
    if not 0 <= vals[1] < shift_bits(dt): return f"shift count {vals[1]} outside [0, {shift_bits(dt)})"
  if op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.SHL) and dt.kind == "i":
    if not dt.min <= INT_MEANING[op](dt, *(int(v) for v in vals)) <= dt.max: return SIGNED_OVERFLOW
  return None


def left_open(why: str | None) -> str | None:
  """why (a reason of c_undefined, cast_undefined or intervals.undefined_in), when the point it names has no value in
  tinyspec either; None when tinyspec defines it. A screen that keeps cases to meaningful points asks here, and so
  reaches the points C leaves undefined and tinyspec defines (division by zero, shift counts past the width, NaN and
  out-of-range float to int casts)."""
  return why if why in LEFT_OPEN else None


def cast_undefined(v: Any, src: DType, dst: DType) -> str | None:
  """Why the conversion of v from src to dst is undefined: in C, NaN or an out-of-range float to an int (tinyspec
  saturates); for tinyspec, a value past int64 into `index`. None where it is defined."""
  if dst.kind == "x" and src.kind != "f" and not dst.min <= int(v) <= dst.max: return INDEX_OVERFLOW
  if src.kind != "f" or dst.kind not in "iux": return None
  if math.isnan(v): return "NaN cast to an integer"
  if not math.isfinite(v) or not dst.min <= math.trunc(v) <= dst.max: return f"{v} is outside the range of {dst.name}"
  return None

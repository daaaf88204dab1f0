"""Integer bounds (vmin, vmax) of a node, from its sources' bounds. Used by the simplifier and the bounds proofs.

Bounds are sound over-approximations: every value a node takes at run time lies in [vmin, vmax]. Nodes of a fixed
width integer dtype whose exact range would leave the dtype get the dtype's full range, since they may wrap.
"""
from __future__ import annotations

import itertools
from typing import Callable

from tinyspec.dtype import DType
from tinyspec.uop import Ops, UOp


def _cdiv(a: int, b: int) -> int:
  """C division: truncates toward zero."""
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def _fit(dt: DType, lo, hi) -> tuple:
  if dt.kind in "iu" and (lo < dt.min or hi > dt.max): return dt.min, dt.max
  return lo, hi


def _corners(fn: Callable, a: UOp, b: UOp) -> tuple:
  vals = [fn(x, y) for x in (a.vmin, a.vmax) for y in (b.vmin, b.vmax)]
  return min(vals), max(vals)


def _idiv(u: UOp) -> tuple:
  a, b = u.src
  if b.vmin > 0 or b.vmax < 0:  # the divisor keeps one sign, so the quotient is monotone in each argument
    return _corners(_cdiv, a, b)
  m = max(abs(a.vmin), abs(a.vmax))
  return -m, m


def _mod(u: UOp) -> tuple:
  a, b = u.src
  lo, hi = _mod_nonzero(a, b)
  # a MOD 0 is undefined in C; the evaluator (and the generated code) define it as a, so bounds must cover a there
  if b.vmin <= 0 <= b.vmax: return min(lo, a.vmin), max(hi, a.vmax)
  return lo, hi


def _mod_nonzero(a: UOp, b: UOp) -> tuple:
  if b.vmin == b.vmax == 0: return a.vmin, a.vmax
  m = max(abs(b.vmin), abs(b.vmax)) - 1  # |a % b| < |b|, and the sign follows a
  if a.vmin >= 0:
    if b.vmin > 0 and a.vmax < b.vmin: return a.vmin, a.vmax  # a % b == a
    return 0, min(a.vmax, m)
  if a.vmax <= 0: return max(a.vmin, -m), 0
  return max(a.vmin, -m), min(a.vmax, m)


def _cmp(u: UOp) -> tuple:
  a, b = u.src
  if u.op is Ops.CMPLT:
    if a.vmax < b.vmin: return True, True
    if a.vmin >= b.vmax: return False, False
  elif a.vmin == a.vmax == b.vmin == b.vmax:
    return (a.vmin == b.vmin) == (u.op is Ops.CMPEQ), (a.vmin == b.vmin) == (u.op is Ops.CMPEQ)
  elif a.vmax < b.vmin or b.vmax < a.vmin:
    return (u.op is Ops.CMPNE,) * 2
  return False, True


def _shl(u: UOp) -> tuple:
  a, b = u.src
  if b.vmin < 0 or b.vmax >= u.dtype.bits or a.vmin < 0: return u.dtype.min, u.dtype.max
  return a.vmin << b.vmin, a.vmax << b.vmax


def _shr(u: UOp) -> tuple:
  a, b = u.src
  if b.vmin < 0 or b.vmax >= u.dtype.bits or a.vmin < 0: return u.dtype.min, u.dtype.max
  return a.vmin >> b.vmax, a.vmax >> b.vmin


def _and(u: UOp) -> tuple:
  a, b = u.src
  if u.dtype.kind == "b": return a.vmin and b.vmin, a.vmax and b.vmax
  if a.vmin >= 0 and b.vmin >= 0: return 0, min(a.vmax, b.vmax)
  return u.dtype.min, u.dtype.max


def _or(u: UOp) -> tuple:
  a, b = u.src
  if u.dtype.kind == "b": return a.vmin or b.vmin, a.vmax or b.vmax
  return u.dtype.min, u.dtype.max


def _cast(u: UOp) -> tuple:
  s, dt = u.src[0], u.dtype
  if dt.kind == "b": return (False, True) if s.vmin <= 0 <= s.vmax else (True, True)
  if s.dtype.kind == "f" or dt.kind == "f": return dt.min, dt.max
  if dt.min <= s.vmin and s.vmax <= dt.max: return s.vmin, s.vmax
  return dt.min, dt.max


def _where(u: UOp) -> tuple:
  c, a, b = u.src
  if c.vmin == c.vmax: return (a.vmin, a.vmax) if c.vmin else (b.vmin, b.vmax)
  return min(a.vmin, b.vmin), max(a.vmax, b.vmax)


def _first_src(u: UOp) -> tuple:
  return u.src[0].vmin, u.src[0].vmax


def _bounded_index(u: UOp) -> tuple:
  return 0, u.src[0].vmax - 1


_rules: dict[Ops, Callable[[UOp], tuple]] = {
  Ops.CONST: lambda u: (u.arg, u.arg),
  Ops.RANGE: _bounded_index, Ops.SPECIAL: _bounded_index,
  Ops.ADD: lambda u: (u.src[0].vmin + u.src[1].vmin, u.src[0].vmax + u.src[1].vmax),
  Ops.SUB: lambda u: (u.src[0].vmin - u.src[1].vmax, u.src[0].vmax - u.src[1].vmin),
  Ops.NEG: lambda u: (-u.src[0].vmax, -u.src[0].vmin),
  Ops.MUL: lambda u: _corners(lambda x, y: x * y, *u.src),
  Ops.MAX: lambda u: (max(u.src[0].vmin, u.src[1].vmin), max(u.src[0].vmax, u.src[1].vmax)),
  Ops.IDIV: _idiv, Ops.MOD: _mod, Ops.CMPLT: _cmp, Ops.CMPNE: _cmp, Ops.CMPEQ: _cmp,
  Ops.SHL: _shl, Ops.SHR: _shr, Ops.AND: _and, Ops.OR: _or, Ops.CAST: _cast, Ops.WHERE: _where,
  Ops.AFTER: _first_src, Ops.DETACH: _first_src, Ops.CONTIGUOUS: _first_src,
}


# bool arithmetic is C's (bool)(a op b): the integer interval rules above do not apply to it
_BOOL_ALU: dict[Ops, Callable[..., bool]] = {Ops.ADD: lambda a, b: a or b, Ops.MAX: lambda a, b: a or b, Ops.MUL: lambda a, b: a and b,
                                             Ops.SUB: lambda a, b: a != b, Ops.XOR: lambda a, b: a != b, Ops.NEG: lambda a: not a}


def _bool_alu(u: UOp) -> tuple:
  outs = [_BOOL_ALU[u.op](*vals) for vals in itertools.product(*({bool(s.vmin), bool(s.vmax)} for s in u.src))]
  return min(outs), max(outs)


def bounds_rule(u: UOp) -> tuple:
  """(vmin, vmax) of u; the dtype's range where nothing tighter is known."""
  dt = u.dtype
  if dt.kind not in "iuxb": return dt.min, dt.max
  if dt.kind == "b" and u.op in _BOOL_ALU and all(s.dtype.kind == "b" for s in u.src): return _bool_alu(u)
  fn = _rules.get(u.op)
  if fn is None: return dt.min, dt.max
  lo, hi = fn(u)
  if dt.kind == "b": return bool(lo), bool(hi)
  return _fit(dt, lo, hi)

"""Interval bounds of every integer and bool op: the range [lo, hi] of its result from the ranges of its operands.

Bounds are sound over-approximations of the meaning in tinyspec.ops.scalar: every value the op gives on operands in
their ranges lies in [lo, hi], the defined values at C's undefined points included (a MOD 0 == a, shift counts
modulo the width). A fixed-width result whose exact range would leave the dtype gets the dtype's full range, since
it may wrap. `bounds_rule` gives a node's (vmin, vmax) from its sources' (UOp.vmin / UOp.vmax): this module installs it
as the IR's rule of UOp.vmin / vmax when imported (the IR lies below the registry). The simplifier, the bounds proofs
and the fuzzers' UB screens all use these functions.

Float ops have real-number bounds (`float_interval`): the range of the exact result on operands in their ranges, an end
of a range being +-inf where it is unbounded, computed in float64. Rounding to the dtype is the caller's to account for
(the fuzzers' screens keep only values whose float arithmetic is exact). The ops defined on part of the reals only
(SQRT below 0, LOG2 below 0) raise ValueError for a range reaching outside their domain.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from tinyspec.dtype import DType, round_float
from tinyspec.ops.scalar import cdiv, reduce_identity, shift_bits
from tinyspec.uop import Ops, UOp, install_bounds_rule

Interval = tuple  # (lo, hi): ints, or bools for bool values


def fit(dt: DType, lo, hi) -> Interval:
  """(lo, hi), or dt's whole range when a fixed-width value may wrap out of it."""
  if dt.kind in "iu" and (lo < dt.min or hi > dt.max): return dt.min, dt.max
  return lo, hi


def corners(fn: Callable, a: Interval, b: Interval) -> Interval:
  vals = [fn(x, y) for x in a for y in b]
  return min(vals), max(vals)


def _idiv(dt: DType, a: Interval, b: Interval) -> Interval:
  if b[0] > 0 or b[1] < 0: return corners(cdiv, a, b)  # one sign of divisor: monotone in each argument
  m = max(abs(a[0]), abs(a[1]))  # a IDIV 0 == 0 lies inside too
  return -m, m


def _mod(dt: DType, a: Interval, b: Interval) -> Interval:
  lo, hi = _mod_nonzero(a, b)
  if b[0] <= 0 <= b[1]: return min(lo, a[0]), max(hi, a[1])  # a MOD 0 == a
  return lo, hi


def _mod_nonzero(a: Interval, b: Interval) -> Interval:
  if b[0] == b[1] == 0: return a
  m = max(abs(b[0]), abs(b[1])) - 1  # |a % b| < |b|, and the sign follows a
  if a[0] >= 0:
    if b[0] > 0 and a[1] < b[0]: return a  # a % b == a
    return 0, min(a[1], m)
  if a[1] <= 0: return max(a[0], -m), 0
  return max(a[0], -m), min(a[1], m)


def _cmp(op: Ops) -> Callable:
  def f(dt: DType, a: Interval, b: Interval) -> Interval:
    if op is Ops.CMPLT:
      if a[1] < b[0]: return True, True
      if a[0] >= b[1]: return False, False
    elif a[0] == a[1] == b[0] == b[1]: return ((a[0] == b[0]) == (op is Ops.CMPEQ),) * 2
    elif a[1] < b[0] or b[1] < a[0]: return (op is Ops.CMPNE,) * 2
    return False, True
  return f


def _counts(dt: DType, b: Interval) -> Interval:
  """The counts a shift by a count in b actually shifts by: b taken modulo the width."""
  bits = shift_bits(dt)
  if b[0] == b[1]: return (int(b[0]) & (bits - 1),) * 2
  return (int(b[0]), int(b[1])) if 0 <= b[0] and b[1] < bits else (0, bits - 1)


def _shl(dt: DType, a: Interval, b: Interval) -> Interval:
  return corners(lambda x, k: x << k, a, _counts(dt, b))


def _shr(dt: DType, a: Interval, b: Interval) -> Interval:
  return corners(lambda x, k: x >> k, a, _counts(dt, b))  # arithmetic shift: monotone in x and, for a fixed sign, in k


def _neg_bits(lo: int) -> int:
  """k with -2**k <= lo (lo < 0): the two's complement width of lo, less its sign bit."""
  return (-lo - 1).bit_length()


def _and(dt: DType, a: Interval, b: Interval) -> Interval:
  if dt.kind == "b": return a[0] and b[0], a[1] and b[1]
  # x & y with y >= 0 lies in [0, y]: the result has no bit y lacks
  nonneg = [x[1] for x in (a, b) if x[0] >= 0]
  if nonneg: return 0, min(nonneg)
  # both may be negative: AND only clears bits, so the result stays within both operands' width and below the larger
  # one (below both when both are negative)
  lo = -(1 << max(_neg_bits(a[0]), _neg_bits(b[0])))
  return lo, (min(a[1], b[1]) if a[1] < 0 and b[1] < 0 else max(a[1], b[1]))


def _width_of(a: Interval, b: Interval) -> Interval:
  # a bitwise op of two k-bit two's complement values is a k-bit two's complement value
  k = max(_signed_bits(*a), _signed_bits(*b))
  return -(1 << (k - 1)), (1 << (k - 1)) - 1


def _signed_bits(lo: int, hi: int) -> int:
  return max((-int(lo) - 1).bit_length() if lo < 0 else 0, int(hi).bit_length() if hi >= 0 else 0) + 1


def _or(dt: DType, a: Interval, b: Interval) -> Interval:
  if dt.kind == "b": return a[0] or b[0], a[1] or b[1]
  if a[0] >= 0 and b[0] >= 0: return max(a[0], b[0]), (1 << max(int(a[1]), int(b[1])).bit_length()) - 1  # no bit above either's top bit
  return _width_of(a, b)


def _xor(dt: DType, a: Interval, b: Interval) -> Interval:
  if dt.kind == "b": return (a[0] != b[0],) * 2 if a[0] == a[1] and b[0] == b[1] else (False, True)
  if b[0] == b[1] == -1: return ~int(a[1]), ~int(a[0])  # x ^ -1 is ~x == -x - 1: exact
  if a[0] == a[1] == -1: return ~int(b[1]), ~int(b[0])
  if a[0] >= 0 and b[0] >= 0: return 0, (1 << max(int(a[1]), int(b[1])).bit_length()) - 1
  # x ^ y == ~x ^ ~y == ~(x ^ ~y): a negative operand is the complement of a non-negative one
  if a[1] < 0 and b[1] < 0: return 0, (1 << max(~int(a[0]), ~int(b[0])).bit_length()) - 1
  if a[0] >= 0 and b[1] < 0: return -(1 << max(int(a[1]), ~int(b[0])).bit_length()), -1
  if b[0] >= 0 and a[1] < 0: return -(1 << max(int(b[1]), ~int(a[0])).bit_length()), -1
  return _width_of(a, b)


def _max(dt: DType, a: Interval, b: Interval) -> Interval: return max(a[0], b[0]), max(a[1], b[1])


INTERVALS: dict[Ops, Callable[..., Interval]] = {
  Ops.ADD: lambda dt, a, b: (a[0] + b[0], a[1] + b[1]), Ops.SUB: lambda dt, a, b: (a[0] - b[1], a[1] - b[0]),
  Ops.NEG: lambda dt, a: (-a[1], -a[0]), Ops.MUL: lambda dt, a, b: corners(lambda x, y: x * y, a, b),
  Ops.MAX: _max, Ops.IDIV: _idiv, Ops.MOD: _mod,
  Ops.CMPLT: _cmp(Ops.CMPLT), Ops.CMPNE: _cmp(Ops.CMPNE), Ops.CMPEQ: _cmp(Ops.CMPEQ),
  Ops.SHL: _shl, Ops.SHR: _shr, Ops.AND: _and, Ops.OR: _or, Ops.XOR: _xor,
  Ops.WHERE: lambda dt, c, a, b: (a if c[0] else b) if c[0] == c[1] else (min(a[0], b[0]), max(a[1], b[1])),
}

# the ops with a meaning on bool (tinyspec.ops.classes), MAX being OR there and MUL AND
_BOOL_OPS = frozenset({Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.WHERE})


def raw_interval(op: Ops, dt: DType, *ivs: Interval) -> Interval:
  """The range of op's exact (unwrapped) integer result on operands of dtype dt in ranges ivs; for fixed-width dtypes
  it may leave the dtype (interval wraps it). Raises KeyError for an op with no integer interval."""
  return INTERVALS[op](dt, *ivs)


def interval(op: Ops, dt: DType, *ivs: Interval) -> Interval:
  """The range of op's result on operands of dtype dt in ranges ivs (WHERE: the condition's range first)."""
  if dt.kind == "b":
    op = {Ops.MAX: Ops.OR, Ops.MUL: Ops.AND}.get(op, op)
    if op not in _BOOL_OPS: return False, True
  fn = INTERVALS.get(op)
  if fn is None: return dt.min, dt.max
  lo, hi = fn(dt, *ivs)
  if dt.kind == "b": return bool(lo), bool(hi)
  return fit(dt, lo, hi)


def cast_interval(src: DType, dst: DType, a: Interval) -> Interval:
  """The range of CAST from src to dst of a value in a (a float in a is no NaN)."""
  if dst.kind == "b": return (False, True) if a[0] <= 0 <= a[1] else (True, True)
  if dst.kind == "f":  # rounding to the nearest dst value (saturating on fp8) is monotone; an fp8 NaN made of an inf is no number
    lo, hi = (float(round_float(np.float64(v), dst)) for v in a)
    return (dst.min if math.isnan(lo) else lo), (dst.max if math.isnan(hi) else hi)
  if src.kind == "f":  # truncates toward zero, saturating at dst's ends (tinyspec.ops.scalar.cast): monotone
    return tuple(int(dst.min) if v <= dst.min else int(dst.max) if v >= dst.max else int(math.trunc(v)) for v in a)
  if dst.min <= a[0] and a[1] <= dst.max: return int(a[0]), int(a[1])
  return dst.min, dst.max


def _pow(x, n: int):
  try: return x ** n
  except OverflowError: return math.inf if x > 0 or n % 2 == 0 else -math.inf  # a float past Python's range


def reduce_interval(op: Ops, dt: DType, a: Interval, n: int) -> Interval:
  """The range of REDUCE with op (ADD, MUL, MAX) over n values of dtype dt, each in a: the identity when n is 0; for a
  fixed-width int the whole dtype where the exact result may leave it (it wraps); for floats the exact real range."""
  if n == 0: return (reduce_identity(op, dt),) * 2
  if op is Ops.MAX or dt.kind == "b": return a  # on bool ADD is OR and MUL is AND: both stay within a
  if op is Ops.ADD: lo, hi = a[0] * n, a[1] * n
  elif op is Ops.MUL:
    m = max(abs(a[0]), abs(a[1]))
    lo, hi = (_pow(a[0], n), _pow(a[1], n)) if a[0] >= 0 else (-_pow(m, n), _pow(m, n))
  else: raise ValueError(f"{op!r} is not a reduce op (ADD, MUL, MAX)")
  return fit(dt, lo, hi)


def undefined_in(op: Ops, dt: DType, *ivs: Interval) -> str | None:
  """Why op on integer operands of dtype dt in ranges ivs may reach a point C leaves undefined other than wrap-around
  (tinyspec.ops.scalar.c_undefined pointwise: division by zero, MIN divided by -1, a shift count outside the shift
  width), or None when no point of the ranges does."""
  if dt.kind not in "iux": return None
  if op in (Ops.IDIV, Ops.MOD):
    a, b = ivs
    if b[0] <= 0 <= b[1]: return f"{op.name} by a range [{b[0]}, {b[1]}] holding 0"
    if dt.kind == "i" and a[0] <= dt.min and b[0] <= -1 <= b[1]: return f"{op.name} of the minimum by -1"
  if op in (Ops.SHL, Ops.SHR):
    b, bits = ivs[1], shift_bits(dt)
    if b[0] < 0 or b[1] >= bits: return f"{op.name} by a count in [{b[0]}, {b[1]}] outside [0, {bits})"
  return None


# ---- float operands ----
def _fmul(dt: DType, a: Interval, b: Interval) -> Interval:
  # operands are finite reals: an unbounded end times 0 is 0, not NaN
  return corners(lambda x, y: 0.0 if x == 0 or y == 0 else x * y, a, b)


def _ftrunc(dt: DType, a: Interval) -> Interval: return tuple(v if math.isinf(v) else float(math.trunc(v)) for v in a)


def _recip(dt: DType, a: Interval) -> Interval:
  if a[0] <= 0 <= a[1]: return -math.inf, math.inf  # 1 / +-0 is +-inf
  return 1 / a[1], 1 / a[0]


def _fdiv(dt: DType, a: Interval, b: Interval) -> Interval:
  if a[0] <= 0 <= a[1] and b[0] <= 0 <= b[1]: raise ValueError(f"FDIV of [{a[0]}, {a[1]}] by [{b[0]}, {b[1]}]: NaN at 0 / 0")
  return _fmul(dt, a, _recip(dt, b))  # a / b is a times 1 / b on the reals


def _sqrt(dt: DType, a: Interval) -> Interval:
  if a[0] < 0: raise ValueError(f"SQRT of [{a[0]}, {a[1]}]: NaN below 0")
  return math.sqrt(a[0]), math.sqrt(a[1])


def _log2(dt: DType, a: Interval) -> Interval:
  if a[0] < 0: raise ValueError(f"LOG2 of [{a[0]}, {a[1]}]: NaN below 0")
  return tuple(-math.inf if v == 0 else math.log2(v) for v in a)


def _exp2(v: float) -> float: return math.inf if v > 1024 else 2.0 ** v  # 2.0 ** v overflows Python floats past 1024


FLOAT_INTERVALS: dict[Ops, Callable[..., Interval]] = {
  **{op: INTERVALS[op] for op in (Ops.ADD, Ops.SUB, Ops.NEG, Ops.MAX, Ops.WHERE, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)},
  Ops.MUL: _fmul, Ops.FDIV: _fdiv, Ops.TRUNC: _ftrunc, Ops.RECIP: _recip, Ops.SQRT: _sqrt, Ops.LOG2: _log2,
  Ops.EXP2: lambda dt, a: (_exp2(a[0]), _exp2(a[1])), Ops.SIN: lambda dt, a: (-1.0, 1.0),
}


def float_interval(op: Ops, dt: DType, *ivs: Interval) -> Interval:
  """The range of the exact (unrounded) result of float op on operands of float dtype dt in ranges ivs (WHERE: the
  condition's range first; a comparison's is a bool range). Raises KeyError for an op with no float meaning."""
  return FLOAT_INTERVALS[op](dt, *ivs)


# ---- node bounds ----
def _src(u: UOp, i: int) -> Interval: return u.src[i].vmin, u.src[i].vmax


def _node_alu(u: UOp) -> Interval:
  dt = u.src[-1].dtype  # the operands' dtype (a comparison's own is bool)
  res = interval(u.op, dt, *(_src(u, i) for i in range(len(u.src))))
  if u.dtype.kind == "b": return bool(res[0]), bool(res[1])
  return res


_NODE: dict[Ops, Callable[[UOp], Interval]] = {
  Ops.CONST: lambda u: (u.arg, u.arg),
  Ops.RANGE: lambda u: (0, u.src[0].vmax - 1), Ops.SPECIAL: lambda u: (0, u.src[0].vmax - 1),
  Ops.CAST: lambda u: cast_interval(u.src[0].dtype, u.dtype, _src(u, 0)),
  Ops.AFTER: lambda u: _src(u, 0), Ops.DETACH: lambda u: _src(u, 0), Ops.CONTIGUOUS: lambda u: _src(u, 0),
  # a variable is known by its bounds; a bound one keeps them (the code using it is the same for every value it is bound to)
  Ops.DEFINE_VAR: lambda u: (u.arg.min, u.arg.max), Ops.BIND: lambda u: _src(u, 0),
  **{op: _node_alu for op in INTERVALS},
}


def bounds_rule(u: UOp) -> Interval:
  """(vmin, vmax) of u; the dtype's range where nothing tighter is known."""
  dt = u.dtype
  if dt.kind == "f" and u.op is Ops.CAST and u.src[0].dtype.kind in "iuxb":
    # an integer converted to a float: rounding is monotone, so a cast back to an integer (through a small float,
    # say) keeps bounds a proof can use
    return cast_interval(u.src[0].dtype, dt, _src(u, 0))
  if dt.kind not in "iuxb": return dt.min, dt.max
  fn = _NODE.get(u.op)
  if fn is None: return dt.min, dt.max
  if u.op in INTERVALS and any(s.dtype.kind not in "iuxb" for s in u.src[-2:]): return dt.min, dt.max  # float operands
  return fn(u)


install_bounds_rule(bounds_rule)


# ---- bounds where a condition holds (a gated LOAD or STORE addresses memory only where its gate is true) ----
def gate_bounds(gate: UOp) -> dict[UOp, Interval] | None:
  """Tighter bounds of the integer nodes a condition compares with a constant, where the condition holds: an AND of
  `x < c` and `c < x` atoms narrows x (anything else in it narrows nothing). None: the condition never holds."""
  if gate.op is Ops.CONST: return None if not gate.arg else {}
  known: dict[UOp, Interval] = {}
  stack = [gate]
  while stack:
    g = stack.pop()
    if g.op is Ops.AND and g.dtype.kind == "b":
      stack.extend(g.src)
      continue
    if g.op is not Ops.CMPLT or len(g.src) != 2: continue
    a, b = g.src
    if a.dtype.kind not in "iux": continue
    if b.op is Ops.CONST: x, lo, hi = a, a.vmin, b.arg - 1   # a < c
    elif a.op is Ops.CONST: x, lo, hi = b, a.arg + 1, b.vmax  # c < b
    else: continue
    old = known.get(x, (x.vmin, x.vmax))
    lo, hi = max(lo, old[0]), min(hi, old[1])
    if lo > hi: return None
    known[x] = (lo, hi)
  return known


def bounds_given(e: UOp, known: dict[UOp, Interval]) -> Interval:
  """(vmin, vmax) of integer e when the nodes of `known` lie in their given ranges: the interval rules recomputed on
  the nodes between e and them. A node whose rule is not recomputed here keeps its own bounds, which hold anyway."""
  if not known: return e.vmin, e.vmax
  memo: dict[UOp, Interval] = {}
  for u in e.toposort():
    if u in known:
      memo[u] = known[u]
      continue
    ivs = [memo.get(s) for s in u.src]
    if all(s not in known and memo.get(s) == (s.vmin, s.vmax) for s in u.src) or u.dtype.kind not in "iuxb":
      memo[u] = (u.vmin, u.vmax)
    elif u.op in INTERVALS and all(s.dtype.kind in "iuxb" for s in u.src[-2:]):
      res = interval(u.op, u.src[-1].dtype, *ivs)
      memo[u] = (bool(res[0]), bool(res[1])) if u.dtype.kind == "b" else res
    elif u.op is Ops.CAST: memo[u] = cast_interval(u.src[0].dtype, u.dtype, ivs[0])
    elif u.op in (Ops.AFTER, Ops.DETACH, Ops.CONTIGUOUS, Ops.BIND): memo[u] = ivs[0]
    else: memo[u] = (u.vmin, u.vmax)
    lo, hi = memo[u]
    memo[u] = (max(lo, u.vmin), min(hi, u.vmax))  # both hold: the tighter of the two
  return memo[e]

"""The numpy meaning of every elementwise op and of the reduce ops: the scalar meaning (tinyspec.ops.scalar) applied
to whole arrays at once, defined at the same points.

Arrays hold the dtype's numpy type (`DType.np`; index is int64). Callers run these under
`np.errstate(all="ignore")`: wrap-around and IEEE specials are meanings here, not warnings.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyspec.dtype import DType, dtypes, round_float
from tinyspec.opcodes import Ops
from tinyspec.ops import scalar
from tinyspec.ops.scalar import shift_bits


def _idiv(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  zero = b == 0
  sb = np.where(zero, 1, b).astype(a.dtype)
  if dt.kind == "u": return np.where(zero, 0, a // sb).astype(a.dtype)
  r = np.fmod(a, sb)
  # a - r is an exact multiple of b, so floor division of it truncates; MIN / -1 wraps back to MIN
  q = np.where(sb == -1, -a, (a - r) // np.where(sb == -1, 1, sb))
  return np.where(zero, 0, q).astype(a.dtype)


def _mod(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  zero = b == 0
  sb = np.where(zero, 1, b).astype(a.dtype)
  if dt.kind == "u": r = a % sb
  else: r = np.where(sb == -1, 0, np.fmod(a, np.where(sb == -1, 1, sb)))
  return np.where(zero, a, r).astype(a.dtype)


def _shl(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  cnt = b.astype(np.int64) & (shift_bits(dt) - 1)
  # shift the unsigned twin so signed values wrap instead of hitting C's signed-overflow case
  ua = a.view(np.dtype(f"uint{a.dtype.itemsize * 8}")) if a.dtype.kind == "i" else a
  return np.left_shift(ua, cnt.astype(ua.dtype)).view(a.dtype)


def _shr(dt: DType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  cnt = b.astype(np.int64) & (shift_bits(dt) - 1)
  return np.right_shift(a, cnt.astype(a.dtype))  # arithmetic on signed dtypes, logical on unsigned


def _bool_or(fn: Callable, bfn: Callable) -> Callable:
  # bool arithmetic is C's (bool)(a op b)
  return lambda dt, *xs: bfn(*xs) if dt.kind == "b" else fn(*xs)


def _plain(fn: Callable) -> Callable: return lambda dt, *xs: fn(*xs)


ELEMENTWISE: dict[Ops, Callable[..., np.ndarray]] = {
  Ops.NEG: _bool_or(np.negative, np.logical_not), Ops.ADD: _bool_or(np.add, np.logical_or), Ops.SUB: _plain(np.subtract),
  Ops.MUL: _bool_or(np.multiply, np.logical_and),
  Ops.MAX: _bool_or(np.maximum, np.logical_or),  # np.maximum propagates NaN
  Ops.IDIV: _idiv, Ops.MOD: _mod, Ops.SHL: _shl, Ops.SHR: _shr,
  Ops.AND: _plain(np.bitwise_and), Ops.OR: _plain(np.bitwise_or), Ops.XOR: _plain(np.bitwise_xor),
  Ops.CMPLT: _plain(np.less), Ops.CMPNE: _plain(np.not_equal), Ops.CMPEQ: _plain(np.equal),
  Ops.FDIV: _plain(np.true_divide), Ops.RECIP: _plain(np.reciprocal), Ops.SQRT: _plain(np.sqrt), Ops.EXP2: _plain(np.exp2), Ops.LOG2: _plain(np.log2),
  Ops.SIN: _plain(np.sin), Ops.TRUNC: _plain(np.trunc),
  Ops.WHERE: lambda dt, c, a, b: np.where(c, a, b).astype(a.dtype, copy=False),
}


def run(op: Ops, dt: DType, *xs: np.ndarray) -> np.ndarray:
  """op on arrays whose dtype is dt (WHERE: dt is the values' dtype). CAST and BITCAST go through cast/bitcast. A small
  float computes in float32 and is rounded back to dt (tinyspec.dtype.round_float): the one meaning docs/spec.md
  states, and for + - * / sqrt the correctly rounded result in dt."""
  if dt.is_small_float and op is not Ops.WHERE:
    out = np.asarray(ELEMENTWISE[op](dtypes.float32, *(x.astype(np.float32) for x in xs)))
    return out if out.dtype == np.bool_ else round_float(out, dt)
  return np.asarray(ELEMENTWISE[op](dt, *xs))


def cast(a: np.ndarray, src: DType, dst: DType) -> np.ndarray:
  """C conversion, defined everywhere (tinyspec.ops.scalar): float -> int truncates toward zero, NaN gives 0, values
  past the target's range saturate; anything -> bool is x != 0; int -> int wraps."""
  if dst.kind == "b": return np.asarray(a != 0)
  if src.kind == "f" and dst.kind in "iux":
    t = np.trunc(np.nan_to_num(a.astype(np.float64), nan=0.0))
    lo, hi = float(dst.min), float(dst.max)
    big = t >= hi  # float(max) of 64-bit types rounds up, so compare before converting
    out = np.clip(t, lo, hi).astype(dst.np)
    return np.asarray(np.where(big, np.array(dst.max, dtype=dst.np), out))
  if dst.kind == "f": return round_float(a, dst)
  return np.asarray(a.astype(dst.np))


def bitcast(a: np.ndarray, src: DType, dst: DType) -> np.ndarray:
  """The bits of a read as dst (same item size); a 0-d array stays 0-d."""
  return np.array(a, order="C", copy=True).view(dst.np)


# ---- reductions: the ops REDUCE combines with, their numpy ufunc and identity ----
REDUCE_UFUNC: dict[Ops, np.ufunc] = {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.MAX: np.maximum}
# on bool a REDUCE combines as C's (bool)(a op b): ADD and MAX are OR, MUL is AND
BOOL_REDUCE_UFUNC: dict[Ops, np.ufunc] = {Ops.ADD: np.logical_or, Ops.MUL: np.logical_and, Ops.MAX: np.logical_or}


def reduce_identity(op: Ops, dt: np.dtype):
  """The registry's identity of a REDUCE with op (tinyspec.ops.scalar.reduce_identity) as a numpy scalar of dt."""
  return dt.type(scalar.reduce_identity(op, dtypes.from_np(dt)))


def reduce_ufunc(op: Ops, dt: np.dtype) -> np.ufunc | None:
  """The ufunc a REDUCE with op combines values of numpy dtype dt with; None when op is no reduce op."""
  return (BOOL_REDUCE_UFUNC if dt == np.bool_ else REDUCE_UFUNC).get(op)

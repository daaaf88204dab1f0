"""The numpy meaning of elementwise ops, movement ops and tensor-form REDUCE, shared by every stage of the evaluator.

Every function takes and returns numpy arrays whose numpy dtype is the IR dtype's (`DType.np`); callers run them
under `np.errstate(all="ignore")` so wrap-around and IEEE specials never warn.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp


class EvalError(Exception):
  """A graph the evaluator cannot give a meaning to; the message names the node's op and what is wrong."""
  def __init__(self, u: UOp | None, msg: str):
    self.node = u
    super().__init__(f"{u.op.name} ({u.dtype.name}): {msg}" if u is not None else msg)


def np_dtype(u: UOp) -> np.dtype:
  if u.dtype is dtypes.void: raise EvalError(u, "a value of dtype void has no meaning")
  return u.dtype.np


# ---- integer division and shifts: C semantics, defined at C's undefined points ----
def _idiv_int(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
  zero = b == 0
  sb = np.where(zero, 1, b).astype(a.dtype)
  if dt.kind == "u" or dt.kind == "b": return np.where(zero, 0, a // sb).astype(a.dtype)
  r = np.fmod(a, sb)
  # a - r is an exact multiple of b, so floor division of it truncates; MIN / -1 wraps back to MIN
  q = np.where(sb == -1, -a, (a - r) // np.where(sb == -1, 1, sb))
  return np.where(zero, 0, q).astype(a.dtype)


def _mod_int(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
  zero = b == 0
  sb = np.where(zero, 1, b).astype(a.dtype)
  if dt.kind == "u": r = a % sb
  else: r = np.where(sb == -1, 0, np.fmod(a, np.where(sb == -1, 1, sb)))
  return np.where(zero, a, r).astype(a.dtype)


def _shift(a: np.ndarray, b: np.ndarray, dt: DType, left: bool) -> np.ndarray:
  cnt = b.astype(np.int64) & (dt.bits - 1)  # the count is taken modulo the width
  if left:
    # shift the unsigned twin so signed values wrap instead of hitting C's signed-overflow case
    ua = a.view(np.dtype(f"uint{dt.bits}")) if a.dtype.kind == "i" else a
    return np.left_shift(ua, cnt.astype(ua.dtype)).view(a.dtype)
  return np.right_shift(a, cnt.astype(a.dtype))  # arithmetic on signed dtypes, logical on unsigned


def _int_only(op: Ops, fn: Callable) -> Callable:
  def f(u: UOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not (u.dtype.is_int or (op is Ops.IDIV and u.dtype.is_float)):
      raise EvalError(u, f"{op.name} needs integer operands, got {u.src[0].dtype.name}")
    return fn(a, b, u.src[0].dtype)
  return f


def _idiv(a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
  if dt.is_float: return np.trunc(a / b).astype(a.dtype)
  return _idiv_int(a, b, dt)


def _bool_or(fn: Callable, bfn: Callable) -> Callable:
  return lambda u, a, b: bfn(a, b) if a.dtype == np.bool_ else fn(a, b)


BINARY: dict[Ops, Callable[[UOp, np.ndarray, np.ndarray], np.ndarray]] = {
  # bool arithmetic follows C's (bool)(a op b): ADD and MAX are OR, MUL is AND, SUB is XOR
  Ops.ADD: _bool_or(np.add, np.logical_or), Ops.SUB: _bool_or(np.subtract, np.logical_xor),
  Ops.MUL: _bool_or(np.multiply, np.logical_and), Ops.MAX: _bool_or(np.maximum, np.logical_or),
  Ops.IDIV: _int_only(Ops.IDIV, _idiv), Ops.MOD: _int_only(Ops.MOD, lambda a, b, dt: _mod_int(a, b, dt)),
  Ops.CMPLT: lambda u, a, b: np.less(a, b), Ops.CMPNE: lambda u, a, b: np.not_equal(a, b), Ops.CMPEQ: lambda u, a, b: np.equal(a, b),
  Ops.AND: lambda u, a, b: np.bitwise_and(a, b), Ops.OR: lambda u, a, b: np.bitwise_or(a, b),
  Ops.XOR: lambda u, a, b: np.bitwise_xor(a, b),
  Ops.SHL: _int_only(Ops.SHL, lambda a, b, dt: _shift(a, b, dt, True)),
  Ops.SHR: _int_only(Ops.SHR, lambda a, b, dt: _shift(a, b, dt, False)),
}


def _float_only(fn: Callable) -> Callable:
  def f(u: UOp, a: np.ndarray) -> np.ndarray:
    if not u.dtype.is_float: raise EvalError(u, f"{u.op.name} needs a float operand, got {u.dtype.name}")
    return fn(a)
  return f


UNARY: dict[Ops, Callable[[UOp, np.ndarray], np.ndarray]] = {
  Ops.NEG: lambda u, a: np.logical_not(a) if a.dtype == np.bool_ else np.negative(a),
  Ops.RECIP: _float_only(lambda a: np.reciprocal(a)), Ops.SQRT: _float_only(np.sqrt), Ops.EXP2: _float_only(np.exp2),
  Ops.LOG2: _float_only(np.log2), Ops.SIN: _float_only(np.sin), Ops.TRUNC: _float_only(np.trunc),
}


def cast(a: np.ndarray, src: DType, dst: DType) -> np.ndarray:
  """C conversion, defined everywhere: float -> int truncates toward zero, NaN gives 0 and values past the target's
  range saturate to its min or max; anything -> bool is x != 0; int -> int wraps."""
  if dst.kind == "b": return a != 0
  if src.is_float and dst.is_int:
    t = np.trunc(np.nan_to_num(a.astype(np.float64), nan=0.0))
    lo, hi = float(dst.min), float(dst.max)
    big = t >= hi  # float(max) of 64-bit types rounds up, so compare before converting
    out = np.clip(t, lo, hi).astype(dst.np)
    return np.where(big, np.array(dst.max, dtype=dst.np), out)
  return a.astype(dst.np)


def bitcast(u: UOp, a: np.ndarray) -> np.ndarray:
  src = u.src[0].dtype
  if src.itemsize != u.dtype.itemsize: raise EvalError(u, f"BITCAST from {src.name} to {u.dtype.name} changes the item size")
  return np.array(a, order="C", copy=True).view(u.dtype.np)  # a 0-d array stays 0-d


def elementwise(u: UOp, vals: list[np.ndarray]) -> np.ndarray:
  """The value of elementwise node u given its sources' values (already broadcast to one shape)."""
  op = u.op
  if op in BINARY:
    if len(vals) != 2: raise EvalError(u, f"takes 2 sources, has {len(vals)}")
    a, b = vals
    if a.dtype != b.dtype: raise EvalError(u, f"sources have dtypes {u.src[0].dtype.name} and {u.src[1].dtype.name}")
    return np.asarray(BINARY[op](u, a, b))
  if op in UNARY:
    if len(vals) != 1: raise EvalError(u, f"takes 1 source, has {len(vals)}")
    return np.asarray(UNARY[op](u, vals[0]))
  if op is Ops.CAST: return np.asarray(cast(vals[0], u.src[0].dtype, u.dtype))  # 0-d casts give numpy scalars
  if op is Ops.BITCAST: return np.asarray(bitcast(u, vals[0]))
  if op is Ops.WHERE:
    if len(vals) != 3: raise EvalError(u, f"takes 3 sources, has {len(vals)}")
    c, a, b = vals
    if c.dtype != np.bool_: raise EvalError(u, f"condition has dtype {u.src[0].dtype.name}, not bool")
    return np.where(c, a, b).astype(a.dtype, copy=False)
  raise EvalError(u, "is not an elementwise op")


# ---- reductions ----
REDUCE_UFUNC: dict[Ops, np.ufunc] = {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.MAX: np.maximum}
BOOL_REDUCE_UFUNC: dict[Ops, np.ufunc] = {Ops.ADD: np.logical_or, Ops.MUL: np.logical_and, Ops.MAX: np.logical_or}


def reduce_identity(op: Ops, dt: np.dtype):
  if op is Ops.ADD: return dt.type(0)
  if op is Ops.MUL: return dt.type(1)
  if dt == np.bool_: return np.bool_(False)
  return dt.type(-np.inf) if dt.kind == "f" else np.iinfo(dt).min


def reduce_ufunc(u: UOp, op: Ops, dt: np.dtype) -> np.ufunc:
  if op not in REDUCE_UFUNC: raise EvalError(u, f"reduce op {op!r} is not one of ADD, MUL, MAX")
  return (BOOL_REDUCE_UFUNC if dt == np.bool_ else REDUCE_UFUNC)[op]


def reduce_axes(u: UOp, op: Ops, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
  """x reduced over axes in x's own dtype (integers wrap), identity for empty axes."""
  if not axes: return x
  fn = reduce_ufunc(u, op, x.dtype)
  return np.asarray(fn.reduce(x, axis=axes, dtype=x.dtype, initial=reduce_identity(op, x.dtype)))


# ---- movement ----
def movement(u: UOp, x: np.ndarray, fill=0) -> np.ndarray:
  """The movement op u applied to x; PAD fills with `fill` (0 for values, -1 for index maps of storage views)."""
  op, a = u.op, u.arg
  try:
    if op is Ops.RESHAPE: return x.reshape(a)
    if op is Ops.PERMUTE: return x.transpose(a)
    if op is Ops.EXPAND: return np.broadcast_to(x, tuple(a) + x.shape)
    if op is Ops.FLIP: return np.flip(x, tuple(i for i, f in enumerate(a) if f)) if any(a) else x
    if len(a) != x.ndim: raise ValueError(f"arg has {len(a)} axes, source has {x.ndim}")
    if op is Ops.SHRINK:
      if any(o < 0 or o + n > d for (o, n), d in zip(a, x.shape)): raise ValueError(f"window {a} leaves shape {x.shape}")
      return x[tuple(slice(o, o + n) for o, n in a)]
    if op is Ops.PAD:
      if any(o < 0 or o + d > n for (o, n), d in zip(a, x.shape)): raise ValueError(f"cannot place shape {x.shape} at {a}")
      out = np.full(tuple(n for _, n in a), fill, dtype=x.dtype)
      out[tuple(slice(o, o + d) for (o, _), d in zip(a, x.shape))] = x
      return out
  except (ValueError, TypeError) as e:
    raise EvalError(u, f"arg {a!r} does not fit source shape {x.shape}: {e}") from None
  raise EvalError(u, "is not a movement op")

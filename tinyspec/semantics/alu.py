"""Elementwise ops, movement ops and tensor-form REDUCE on numpy values, shared by every stage of the evaluator.

The meaning of each elementwise and reduce op is the registry's (tinyspec.ops.vector); this module applies it to
nodes, checking their sources and raising EvalError where a node has no meaning.

Every function takes and returns numpy arrays whose numpy dtype is the IR dtype's (`DType.np`); callers run them
under `np.errstate(all="ignore")` so wrap-around and IEEE specials never warn.
"""
from __future__ import annotations

import numpy as np

from tinyspec.dtype import dtypes
from tinyspec.ops import vector
from tinyspec.ops.classes import dtype_error
from tinyspec.ops.vector import cast, reduce_identity
from tinyspec.uop import GroupOp, Ops, UOp

__all__ = ["EvalError", "np_dtype", "elementwise", "cast", "reduce_identity", "reduce_ufunc", "reduce_axes", "movement"]


class EvalError(Exception):
  """A graph the evaluator cannot give a meaning to; the message names the node's op and what is wrong."""
  def __init__(self, u: UOp | None, msg: str):
    self.node = u
    super().__init__(f"{u.op.name} ({u.dtype.name}): {msg}" if u is not None else msg)


def np_dtype(u: UOp) -> np.dtype:
  if u.dtype is dtypes.void: raise EvalError(u, "a value of dtype void has no meaning")
  return u.dtype.np


def elementwise(u: UOp, vals: list[np.ndarray]) -> np.ndarray:
  """The value of elementwise node u given its sources' values (already broadcast to one shape). The meaning is the
  registry's (tinyspec.ops); an op on a dtype outside its class has none and raises EvalError."""
  op = u.op
  if op not in GroupOp.Elementwise: raise EvalError(u, "is not an elementwise op")
  want = 3 if op is Ops.WHERE else 2 if op in GroupOp.Binary else 1
  if len(vals) != want: raise EvalError(u, f"takes {want} source{'s' if want > 1 else ''}, has {len(vals)}")
  if op is Ops.CAST: return vector.cast(vals[0], u.src[0].dtype, u.dtype)
  if op is Ops.BITCAST:
    src = u.src[0].dtype
    if (msg := dtype_error(op, src) or dtype_error(op, u.dtype)) is not None: raise EvalError(u, msg)
    if src.itemsize != u.dtype.itemsize: raise EvalError(u, f"BITCAST from {src.name} to {u.dtype.name} changes the item size")
    return vector.bitcast(vals[0], src, u.dtype)
  if op is Ops.WHERE:
    c, a, b = vals
    if c.dtype != np.bool_: raise EvalError(u, f"condition has dtype {u.src[0].dtype.name}, not bool")
    vals, dt = [a, b], u.src[1].dtype
  else: dt = u.src[0].dtype
  if len(vals) == 2 and vals[0].dtype != vals[1].dtype:
    raise EvalError(u, f"sources have dtypes {u.src[-2].dtype.name} and {u.src[-1].dtype.name}")
  if (msg := dtype_error(op, dt)) is not None: raise EvalError(u, msg)
  return vector.run(op, dt, *([c] if op is Ops.WHERE else []), *vals)


# ---- reductions ----
def reduce_ufunc(u: UOp, op: Ops, dt: np.dtype) -> np.ufunc:
  fn = vector.reduce_ufunc(op, dt)
  if fn is None: raise EvalError(u, f"reduce op {op!r} is not one of ADD, MUL, MAX")
  return fn


def reduce_axes(u: UOp, op: Ops, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
  """x reduced over axes in x's own dtype (integers wrap), identity for empty axes. A small float is combined one
  element at a time in index order, rounded to its dtype after every step, as its meaning says (docs/spec.md);
  numpy would sum float16 pairwise in float32."""
  if not axes: return x
  fn = reduce_ufunc(u, op, x.dtype)
  if (dt := dtypes.from_np(x.dtype)).is_small_float:
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    flat = np.transpose(x, rest + tuple(axes)).reshape(tuple(x.shape[i] for i in rest) + (-1,))
    acc = np.full(flat.shape[:-1], reduce_identity(op, x.dtype), dtype=x.dtype)
    for k in range(flat.shape[-1]): acc = vector.run(op, dt, acc, flat[..., k])
    return np.asarray(acc)
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

"""Indexing as tinygrad 0.14 builds it: basic indices become views, integer tensors become one-hot masks and a sum.

`x[...]` takes ints, slices with any step (negative included: SHRINK, FLIP, then a stride by PAD, RESHAPE and SHRINK),
None (a new axis of size 1), one `...`, and integer tensors or nested lists of ints (fancy indexing: negative entries
count from the end, the indexed axes broadcast together and, as in numpy, stay in place when they are adjacent and go
first otherwise; an int is a basic index, applied first, so unlike numpy's it never separates index tensors). A fancy
index out of range selects nothing, so its result is 0 (tinygrad's; numpy raises). An int
or slice bound out of range raises IndexError as in Python. A bounded variable (DEFINE_VAR or BIND) indexes an axis its
bounds lie in, as a one-hot sum (not together with index tensors).

gather, scatter and scatter_reduce (sum, prod, mean, amax, amin, with or without self) are tinygrad's one-hot forms;
scatter with repeated indices keeps the last source value. one_hot gives int32 rows."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from tinyspec.dtype import dtypes
from tinyspec.frontend.attach import method
from tinyspec.frontend.tensor import Tensor, broadcast_shape, is_variable, resolve_axis
from tinyspec.uop import UOp


def _is_int(x: Any) -> bool: return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _exact_sum(t: Tensor, axes: Sequence[int]) -> Tensor:
  """Sum that keeps t's dtype (a bool sum of one-hot selections is their or)."""
  return t.any(tuple(axes)) if t.dtype.is_bool else t.sum(tuple(axes), dtype=t.dtype)


@method
def _one_hot_along_dim(self: Tensor, num_classes: int, dim: int = -1) -> Tensor:
  if not self.dtype.is_int: raise TypeError(f"a one-hot index must be an integer tensor, not {self.dtype.name}")
  offset = self.ndim - resolve_axis(dim, self.ndim) - 1
  return self == Tensor.arange(num_classes).reshape((num_classes,) + (1,) * offset)


@method
def one_hot(self: Tensor, num_classes: int) -> Tensor:
  if not self.dtype.is_int: raise TypeError(f"one_hot needs an integer tensor, not {self.dtype.name}")
  if num_classes < 0: raise ValueError(f"num_classes must be non-negative, got {num_classes}")
  return self.unsqueeze(-1)._one_hot_along_dim(num_classes).where(1, 0)


def _view_index(index: Any, size: int, axis: int) -> dict:
  if index is None: return {"size": 1, "boundary": (0, 1), "stride": 1, "collapse": False}
  if _is_int(index):
    index = int(index)
    if not -size <= index < size: raise IndexError(f"index {index} is out of range for axis {axis} of size {size}")
    b = index % size
    return {"size": size, "boundary": (b, b + 1), "stride": 1, "collapse": True}
  if isinstance(index, slice):
    if index.step == 0: raise ValueError("slice step cannot be zero")
    for v in (index.start, index.stop, index.step):
      if v is not None and not _is_int(v): raise TypeError(f"slice {index} needs int bounds")
    start, stop, stride = index.indices(size)
    bound = (0, 0) if stride * (stop - start) < 0 else (stop + 1, start + 1) if stride < 0 else (start, stop)
    return {"size": -(-(bound[1] - bound[0]) // abs(stride)), "boundary": bound, "stride": stride, "collapse": False}
  raise IndexError(f"{type(index).__name__} is not a supported index")


def _apply_views(x: Tensor, mops: list[dict]) -> Tensor:
  x = x.shrink(tuple(m["boundary"] for m in mops))
  flips = [i for i, m in enumerate(mops) if m["stride"] < 0]
  if flips: x = x.flip(flips)
  strides = tuple(abs(m["stride"]) for m in mops)
  if any(st != 1 for st in strides):
    x = x.pad_to(tuple(-(-s // st) * st for s, st in zip(x.shape, strides)))
    x = x.reshape(tuple(v for s, st in zip(x.shape, strides) for v in (s // st, st)))
    x = x.shrink_to(tuple(v for s in x.shape[::2] for v in (s, 1))).reshape(x.shape[::2])
  return x


def _as_index_tensor(index: Any, size: int) -> Tensor:
  if isinstance(index, Tensor):
    if not index.dtype.is_int: raise IndexError(f"an index tensor must have an integer dtype, not {index.dtype.name}")
    return (index < 0).where(index + size, index)
  arr = np.array(index)
  if arr.size and arr.dtype.kind not in "iu": raise IndexError(f"index {index!r} holds something other than ints")
  arr = arr.astype(np.int64)
  arr = np.where(arr < 0, arr + size, arr)
  dt = dtypes.int32 if arr.size == 0 or -2**31 <= arr.min() and arr.max() < 2**31 else dtypes.int64
  return Tensor(arr.astype(dt.np), dt)


def _adv(index: Any) -> bool: return isinstance(index, (Tensor, list, tuple))


def _select_variables(x: Tensor, picks: list[tuple[int, UOp]]) -> Tensor:
  """x with each axis d of picks reduced to its element at the variable: the sum over d where arange == v (the IR has
  no gather, and a variable's value is known only at run time)."""
  zero = Tensor.full((), False if x.dtype.is_bool else 0, x.dtype)
  for d, v in reversed(picks):  # the last axis first, so the earlier axes keep their positions
    n = x.shape[d]
    hit = (Tensor.arange(n, dtype=dtypes.int64) == v).reshape((n,) + (1,) * (x.ndim - d - 1))
    x = _exact_sum(hit.where(x, zero), [d])
  return x


@method
def __getitem__(self: Tensor, indices: Any) -> Tensor:
  if (isinstance(indices, list) and all(_is_int(i) for i in indices)) or not isinstance(indices, (tuple, list)): indices = [indices]
  indices = list(indices)
  ell = [i for i, x in enumerate(indices) if x is Ellipsis]
  if len(ell) > 1: raise IndexError("an index can only have a single ellipsis (...)")
  real = len(indices) - len(ell) - sum(1 for i in indices if i is None)
  if real > self.ndim: raise IndexError(f"too many indices ({real}) for a tensor of {self.ndim} dims")
  at = ell[0] if ell else len(indices)
  indices[at:at + 1] = [slice(None)] * (self.ndim - real)
  parsed, dim = [], 0
  for index in indices:
    size = 1 if index is None else self.shape[dim]
    if is_variable(index):  # the axis kept whole here; the element at the variable is picked out below
      if not 0 <= index.vmin <= index.vmax < size:
        raise IndexError(f"variable index in [{index.vmin}, {index.vmax}] may fall outside axis {dim} of size {size}")
      p = {"size": size, "boundary": (0, size), "stride": 1, "collapse": False, "index": index, "var": index}
    elif _adv(index): p = {"size": size, "boundary": (0, size), "stride": 1, "collapse": False, "index": _as_index_tensor(index, size)}
    else: p = {**_view_index(index, size, dim), "index": index}
    parsed.append(p)
    if index is not None: dim += 1
  x = _apply_views(self, [p for p in parsed if p["index"] is not None]) if self.ndim else self
  x_dims = [p for p in parsed if not p["collapse"]]
  x = x.reshape(tuple(p["size"] for p in x_dims))
  tops = [(d, p) for d, p in enumerate(x_dims) if isinstance(p["index"], Tensor)]
  if any("var" in p for p in x_dims):
    if tops: raise IndexError("a variable index together with index tensors is not supported")
    return _select_variables(x, [(d, p["var"]) for d, p in enumerate(x_dims) if "var" in p])
  if not tops: return x
  dims, tensors = [d for d, _ in tops], [p["index"] for _, p in tops]
  big = broadcast_shape(*(t.shape for t in tensors))
  if len(dims) > 1 and dims == list(range(dims[0], dims[0] + len(dims))):
    # adjacent index tensors: one linear index into the flattened axes
    ishp = tuple(x.shape[d] for d in dims)
    strides = tuple(math.prod(ishp[i + 1:]) for i in range(len(dims)))
    linear = tensors[0] * strides[0]
    valid = (tensors[0] >= 0) & (tensors[0] < ishp[0])
    for t, s, n in zip(tensors[1:], strides[1:], ishp[1:]):
      linear, valid = linear + t * s, valid & (t >= 0) & (t < n)
    pre, post = x.shape[:dims[0]], x.shape[dims[-1] + 1:]
    out = x.reshape(pre + (math.prod(ishp),) + post)[(slice(None),) * len(pre) + (valid.where(linear, 0),)]
    zero = Tensor.full((), False if x.dtype.is_bool else 0, x.dtype)
    return valid.reshape((1,) * len(pre) + big + (1,) * len(post)).where(out, zero)
  pre_reduce = x.shape[:dims[0]] + big + x.shape[dims[0]:]
  mask = None
  for d, t in zip(dims, tensors):
    i = t.reshape(t.shape + (1,) * (x.ndim - dims[0])).expand(pre_reduce)
    m = i._one_hot_along_dim(x.shape[d], dim=d - x.ndim)
    mask = m if mask is None else mask & m
  xr = x.reshape(x.shape[:dims[0]] + (1,) * len(big) + x.shape[dims[0]:])
  zero = Tensor.full((), False if x.dtype.is_bool else 0, x.dtype)
  out = _exact_sum(mask.where(xr, zero), [d + len(big) for d in dims])
  if dims[0] != 0 and len(dims) != 1 and tuple(dims) != tuple(range(dims[0], dims[-1] + 1)):
    out = out.permute(*range(dims[0], dims[0] + len(big)), *range(0, dims[0]), *range(dims[0] + len(big), out.ndim))
  return out


@method
def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
  """out[i][j] = self[index[i][j]][j] for dim 0 (and so on): index has self's ndim and is no larger off dim."""
  if index.ndim != self.ndim: raise ValueError(f"gather: index has {index.ndim} dims, self {self.ndim}")
  dim = resolve_axis(dim, self.ndim)
  if any(s < i for d, (s, i) in enumerate(zip(self.shape, index.shape)) if d != dim):
    raise ValueError(f"gather: index shape {index.shape} is larger than self {self.shape} off axis {dim}")
  x = self.shrink_to(tuple(i if d != dim else None for d, i in enumerate(index.shape))).unsqueeze(-1).transpose(-1, dim)
  zero = Tensor.full((), False if self.dtype.is_bool else 0, self.dtype)
  return _exact_sum(index.unsqueeze(-1)._one_hot_along_dim(self.shape[dim]).where(x, zero), [-1])


def _pre_scatter(self: Tensor, dim: int, index: Tensor, src: Tensor) -> tuple[Tensor, Tensor]:
  dim = resolve_axis(dim, self.ndim)
  if not index.ndim == self.ndim == src.ndim:
    raise ValueError(f"scatter: self, index and src need equal ndim, got {self.ndim}, {index.ndim}, {src.ndim}")
  if not all((d == dim or s >= i) and sr >= i for d, (s, i, sr) in enumerate(zip(self.shape, index.shape, src.shape))):
    raise ValueError(f"scatter: index {index.shape} must fit in src {src.shape} and, off axis {dim}, in self {self.shape}")
  if self.dtype is not src.dtype: raise TypeError(f"scatter: src dtype {src.dtype.name} is not self's {self.dtype.name}")
  src = src.shrink_to(index.shape)
  src = src.unsqueeze(-1).expand(src.shape + (self.shape[dim],)).transpose(-1, dim)
  mask = index.unsqueeze(-1)._one_hot_along_dim(self.shape[dim]).transpose(-1, dim)
  return src.pad_to(*self.shape, None), mask.pad_to(*self.shape, None)


def _masked_merge(self: Tensor, values: Tensor, mask: Tensor, axis: int) -> Tensor:
  # of repeated indices the last one wins
  ms, vs = mask.split(1, axis), values.split(1, axis)
  m, v = ms[0], vs[0]
  for m2, v2 in zip(ms[1:], vs[1:]): m, v = m | m2, m2.where(v2, v)
  return m.squeeze(axis).where(v.squeeze(axis), self)


@method
def scatter(self: Tensor, dim: int, index: Tensor, src: Any, reduce: str | None = None) -> Tensor:
  if reduce not in (None, "add", "multiply"): raise ValueError(f"scatter reduce={reduce!r} is not one of None, 'add', 'multiply'")
  if not isinstance(src, Tensor): src = Tensor.full(index.shape, src, self.dtype)
  elif reduce: raise TypeError("scatter with reduce takes a scalar src; use scatter_reduce")
  if reduce == "add": return self.scatter_reduce(dim, index, src, "sum")
  if reduce == "multiply": return self.scatter_reduce(dim, index, src, "prod")
  s, mask = _pre_scatter(self, dim, index, src)
  return _masked_merge(self, s, mask, -1)


@method
def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool = True) -> Tensor:
  s, mask = _pre_scatter(self, dim, index, src)
  def inv(a: Any, b: Any) -> Tensor: return mask.any(-1).logical_not().where(a, b)
  if reduce == "sum": return mask.where(s, 0).sum(-1, dtype=self.dtype) + (self if include_self else inv(self, 0))
  if reduce == "prod": return mask.where(s, 1).prod(-1) * (self if include_self else inv(self, 1))
  if reduce == "amax": return mask.where(s, lo := s.dtype.min).max(-1).maximum(self if include_self else inv(self, lo))
  if reduce == "amin": return mask.where(s, hi := s.dtype.max).min(-1).minimum(self if include_self else inv(self, hi))
  if reduce == "mean":
    count = mask.where(1, 0).sum(-1) + (1 if include_self else inv(1, 0))
    return (mask.where(s, 0).sum(-1, dtype=self.dtype) + (self if include_self else inv(self, 0))).div(count)
  raise ValueError(f"scatter_reduce reduce={reduce!r} is not one of 'sum', 'prod', 'mean', 'amax', 'amin'")

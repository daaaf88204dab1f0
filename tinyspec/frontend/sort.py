"""sort, argsort and topk as tinygrad 0.14 builds them: a bitonic sorting network over the axis padded to a power of
two (with the dtype's maximum, or minimum when descending), each stage a split, MAX / min and cat of the halves, made
CONTIGUOUS between stages as tinygrad does. Indices are int32; equal values keep their original order (the k-th copy
of a value in the output takes the position of its k-th copy in the input), so the sort is stable."""
from __future__ import annotations

from tinyspec.dtype import dtypes
from tinyspec.frontend.attach import method
from tinyspec.frontend.tensor import Tensor, resolve_axis


@method
def sort(self: Tensor, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
  """(values, int32 indices) along dim, ascending unless descending."""
  if self.ndim == 0: return self, Tensor.full((), 0, dtypes.int32)
  dim = resolve_axis(dim, self.ndim)
  n = self.shape[dim]
  if n <= 1: return self, Tensor.full(self.shape, 0, dtypes.int32)
  stages = (n - 1).bit_length()
  fill = self.dtype.min if descending else self.dtype.max
  x = self.pad(tuple((0, 2 ** stages - n) if i == dim else None for i in range(self.ndim)), value=fill).unflatten(dim, (2,) * stages)
  for stage in range(1, stages + 1):
    if stage != stages:
      # flip the green boxes so their comparators point the way of the blue ones
      cross = dim + stages - stage - 1
      blue, green = x.split(1, cross)
      flips = tuple(-i for i in range(1, stage + 1 + (self.ndim - dim)))
      x = blue.cat(green.flip(flips), dim=cross).contiguous()
    for sub in range(stage - 1, -1, -1):
      partner = dim + stages - sub - 1
      top, bottom = x.split(1, partner)
      hi, lo = top.maximum(bottom), top.minimum(bottom)
      x = (hi.cat(lo, dim=partner) if descending else lo.cat(hi, dim=partner)).contiguous()
    if stage != stages:
      blue, green = x.split(1, cross)
      x = blue.cat(green.flip(flips), dim=cross)
  x = x.flatten(dim, dim + stages - 1).shrink_to(self.shape)
  # indices: the k-th copy of a value in x is the k-th copy of it in self
  mask = Tensor.ones(n, n, dtype=dtypes.bool).tril().reshape((n, n) + (1,) * (self.ndim - dim - 1))
  def counts(t: Tensor) -> Tensor: return (mask & (t.unsqueeze(dim) == t.unsqueeze(dim + 1))).sum(dim + 1)
  c_orig, c_sorted = counts(self), counts(x)
  cond = (self.unsqueeze(dim + 1) == x.unsqueeze(dim)) & (c_orig.unsqueeze(dim + 1) == c_sorted.unsqueeze(dim))
  idx = Tensor.arange(n).reshape(tuple(n if i == dim else 1 for i in range(self.ndim)))
  return x, cond.where(idx.unsqueeze(dim + 1), 0).sum(dim)


@method
def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor: return self.sort(dim, descending)[1]


@method
def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True) -> tuple[Tensor, Tensor]:
  """The k largest (smallest unless largest) values along dim and their int32 indices, in sorted order."""
  if not sorted_: raise ValueError("topk with sorted_=False is not supported (tinygrad's too)")
  d = resolve_axis(dim, self.ndim)
  if not 0 <= k <= (self.shape[d] if self.ndim else 1): raise ValueError(f"topk k={k} is out of range for axis {d} of shape {self.shape}")
  x, idx = self.sort(dim, descending=largest)
  if self.ndim == 0: return x, idx
  window = tuple(k if i == d else None for i in range(self.ndim))
  return x.shrink_to(window), idx.shrink_to(window)

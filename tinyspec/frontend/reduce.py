"""Reductions and prefix scans, from the IR's REDUCE (ADD, MAX, MUL) as tinygrad 0.14 builds them.

dtypes (tinygrad's): sum accumulates and returns at least int32 for bools and signed ints, uint32 for unsigned ints,
and keeps float32 and float64 (`dtype=` overrides); a small float (float16, bfloat16, fp8) accumulates in float32 and
is cast back to its dtype, and its mean and var divide in float32 and round once; prod keeps the dtype (a bool prod is `all`); any and all give
bool; mean, var and std give the input's float dtype, float32 for ints and bools. A mean over no elements is nan; var
divides by max(n - correction, 0). One difference from tinygrad: var of an integer tensor sums its float squares, as
numpy and torch do (tinygrad casts them to int32 first, so var([1, 2, 4]) there is 1.5, not 2.333).

Scans (cumsum, cumprod, cummax) are tinygrad's _cumalu: the axis padded with n-1 leading identity elements (0, 1, the
dtype's minimum), windows of length n by _pool, then the reduction; cummax's indices are the first position where the
running maximum is reached, cummin is cummax of the order-reversing bijection (-x for floats, ~x for ints);
logcumsumexp subtracts the running maximum. A 0-d tensor or an empty axis is its own scan (cumsum in sum's dtype)."""
from __future__ import annotations

import math
from typing import Sequence

from tinyspec.dtype import DType, dtypes
from tinyspec.frontend.attach import method, named
from tinyspec.frontend.promotion import promote
from tinyspec.frontend.tensor import Tensor, resolve_axes, resolve_axis
from tinyspec.uop import Ops

Axis = int | Sequence[int] | None


def sum_acc_dtype(dt: DType) -> DType:
  """The dtype sum accumulates in (tinygrad's sum_acc_dtype with SUM_DTYPE=float32) and returns in, except that a
  small float, accumulated in float32, is cast back to its own dtype."""
  if dt.kind == "u": return promote(dt, dtypes.uint32)
  if dt.is_int or dt.is_bool: return promote(dt, dtypes.int32)
  return promote(dt, dtypes.float32)


def _count(x: Tensor, axis: Axis) -> int:
  return math.prod(x.shape[i] for i in resolve_axes(axis, x.ndim))


@named("sum")
def tensor_sum(self: Tensor, axis: Axis = None, keepdim: bool = False, dtype: DType | None = None) -> Tensor:
  ret = self.cast(sum_acc_dtype(self.dtype) if dtype is None else dtype)._reduce(Ops.ADD, axis, keepdim)
  # a small float accumulates in float32 and gives its own dtype back (tinygrad's sum)
  return ret.cast(self.dtype) if dtype is None and self.dtype.is_small_float else ret


@method
def prod(self: Tensor, axis: Axis = None, keepdim: bool = False, dtype: DType | None = None) -> Tensor:
  x = self if dtype is None else self.cast(dtype)
  if x.dtype.is_bool: return x.all(axis, keepdim)
  return x._reduce(Ops.MUL, axis, keepdim)


@named("any")
def tensor_any(self: Tensor, axis: Axis = None, keepdim: bool = False) -> Tensor:
  return self.cast(dtypes.bool).max(axis, keepdim)


@named("all")
def tensor_all(self: Tensor, axis: Axis = None, keepdim: bool = False) -> Tensor:
  return self.cast(dtypes.bool).logical_not().any(axis, keepdim).logical_not()


def _out_float(x: Tensor) -> DType: return x.dtype if x.dtype.is_float else dtypes.float32


@method
def mean(self: Tensor, axis: Axis = None, keepdim: bool = False) -> Tensor:
  # the sum of the accumulator's dtype, divided there: a small float's mean is rounded once, at the end (tinygrad's)
  num = self.cast(sum_acc_dtype(self.dtype)).sum(axis, keepdim)
  return num.div(_count(self, axis)).cast(_out_float(self))


@method
def var(self: Tensor, axis: Axis = None, keepdim: bool = False, correction: int | float = 1) -> Tensor:
  x = self.cast(_out_float(self))
  squares = (x - x.mean(axis, keepdim=True)).square()
  num = squares.cast(sum_acc_dtype(squares.dtype)).sum(axis, keepdim)
  return num.div(max(_count(self, axis) - correction, 0)).cast(_out_float(self))


@method
def std(self: Tensor, axis: Axis = None, keepdim: bool = False, correction: int | float = 1) -> Tensor:
  return self.var(axis, keepdim, correction).sqrt()


@method
def var_mean(self: Tensor, axis: Axis = None, keepdim: bool = False, correction: int | float = 1) -> tuple[Tensor, Tensor]:
  return self.var(axis, keepdim, correction), self.mean(axis, keepdim)


@method
def std_mean(self: Tensor, axis: Axis = None, keepdim: bool = False, correction: int | float = 1) -> tuple[Tensor, Tensor]:
  return self.std(axis, keepdim, correction), self.mean(axis, keepdim)


def _squeeze_axes(x: Tensor, axis: Axis, ndim: int) -> Tensor:
  axes = resolve_axes(axis, ndim)
  return x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in axes))


@method
def logsumexp(self: Tensor, axis: Axis = None, keepdim: bool = False) -> Tensor:
  m = self.max(axis, keepdim=True).detach()
  return (self - m).exp().sum(axis, keepdim).log() + (m if keepdim else _squeeze_axes(m, axis, self.ndim))


def _softmax(x: Tensor, axis: int, dtype: DType | None) -> tuple[Tensor, Tensor, Tensor]:
  # bools are 0 and 1: tinygrad 0.14's bool subtraction (a or not b) happens to give the softmax of those, which the IR's
  # SUB (it takes no bool) gives from float32
  if x.dtype.is_bool: x = x.cast(dtypes.float32)
  m = x - x.max(axis, keepdim=True).detach()
  if dtype is not None: m = m.cast(dtype)
  e = m.exp()
  return m, e, e.sum(axis, keepdim=True)


@method
def softmax(self: Tensor, axis: int = -1, dtype: DType | None = None) -> Tensor:
  _, e, ss = _softmax(self, axis, dtype)
  return e * ss.reciprocal()


@method
def log_softmax(self: Tensor, axis: int = -1, dtype: DType | None = None) -> Tensor:
  m, _, ss = _softmax(self, axis, dtype)
  return m - ss.log()


@method
def softmin(self: Tensor, axis: int = -1, dtype: DType | None = None) -> Tensor: return (-self).softmax(axis, dtype)


# ---- scans ----
def _identity(op: Ops, dt: DType) -> bool | int | float:
  if op is Ops.ADD: return False if dt.is_bool else 0
  if op is Ops.MUL: return True if dt.is_bool else 1
  return -math.inf if dt.is_float else False if dt.is_bool else dt.min


def _cumalu(x: Tensor, axis: int, op: Ops) -> Tensor:
  n = x.shape[axis]
  t = x.transpose(axis, -1)
  pooled = t.pad((None,) * (t.ndim - 1) + ((n - 1, 0),), value=_identity(op, x.dtype))._pool((n,))
  return getattr(pooled, {Ops.ADD: "sum", Ops.MAX: "max", Ops.MUL: "prod"}[op])(-1).transpose(axis, -1)


def _scan(x: Tensor, axis: int, op: Ops) -> Tensor:
  axis = resolve_axis(axis, x.ndim)
  if x.ndim == 0 or 0 in x.shape: return x.cast(sum_acc_dtype(x.dtype)) if op is Ops.ADD and not x.dtype.is_small_float else x
  return _cumalu(x, axis, op)


@method
def cumsum(self: Tensor, axis: int = 0) -> Tensor: return _scan(self, axis, Ops.ADD)
@method
def cumprod(self: Tensor, axis: int) -> Tensor: return _scan(self, axis, Ops.MUL)


@method
def cummax(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
  """(running maximum, int32 index of the first element equal to it) along axis."""
  values = _scan(self, axis, Ops.MAX)
  if self.ndim == 0 or 0 in self.shape: return values, Tensor.zeros(self.shape, dtype=dtypes.int32)
  axis = resolve_axis(axis, self.ndim)
  n = self.shape[axis]
  x, vt = self.transpose(axis, -1), values.transpose(axis, -1)
  match = (x.unsqueeze(-1) == vt.unsqueeze(-2)) & Tensor.ones(n, n, dtype=dtypes.bool).triu()
  idx = (n - match.where(Tensor.arange(n, 0, -1).reshape(n, 1), 0).max(-2)).cast(dtypes.int32)
  return values, idx.transpose(-1, axis)


def _inverse(x: Tensor) -> Tensor: return -x if x.dtype.is_float else ~x


@method
def cummin(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
  values, idx = _inverse(self).cummax(axis)
  return _inverse(values), idx


@method
def logcumsumexp(self: Tensor, axis: int = 0) -> Tensor:
  if self.ndim == 0: return self
  axis = resolve_axis(axis, self.ndim)
  if self.shape[axis] == 0: return self._float()
  x = self._float().transpose(axis, -1)
  n = x.shape[-1]
  cm = x.cummax(-1)[0].detach()
  mask = Tensor.ones(n, n, dtype=dtypes.bool).tril()
  ret = mask.where(x.unsqueeze(-2) - cm.unsqueeze(-1), -math.inf).exp().sum(-1).log() + cm
  return ret.transpose(-1, axis)

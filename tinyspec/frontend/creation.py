"""Tensors made from nothing but a shape and values (no buffer), as tinygrad 0.14 makes them: constants expanded to a
shape, arange's prefix sum, comparisons of aranges (eye, tril, triu).

Shapes are given as tinygrad takes them: `Tensor.zeros(2, 3)`, `Tensor.zeros((2, 3))` or `Tensor.zeros([2, 3])`.
linspace and eye default to float32; linspace computes start + arange(steps) * ((stop - start) / (steps - 1)) in float32
and casts, as tinygrad does."""
from __future__ import annotations

from typing import Any

from tinyspec.dtype import DType, dtypes
from tinyspec.frontend.attach import method, static
from tinyspec.frontend.tensor import Tensor


def shape_arg(shape: tuple) -> tuple[int, ...]:
  """(2, 3), ((2, 3),) and ([2, 3],) all name the shape (2, 3)."""
  if len(shape) == 1 and isinstance(shape[0], (tuple, list)): shape = tuple(shape[0])
  return tuple(int(d) for d in shape)


def _shape_dtype(shape: tuple, dtype: DType) -> tuple[tuple[int, ...], DType]:
  # a DType after the shape is the dtype, as in zeros((2, 3), dtypes.int32)
  if shape and isinstance(shape[-1], DType): return shape_arg(shape[:-1]), shape[-1]
  return shape_arg(shape), dtype


_full = Tensor.full


@static
def full(shape: Any, fill_value: Any, dtype: DType | None = None) -> Tensor:
  return _full(shape if isinstance(shape, int) else tuple(shape), fill_value, dtype)


@static
def zeros(*shape: Any, dtype: DType = dtypes.float32) -> Tensor:
  shp, dt = _shape_dtype(shape, dtype)
  return Tensor.full(shp, 0, dt)


@static
def ones(*shape: Any, dtype: DType = dtypes.float32) -> Tensor:
  shp, dt = _shape_dtype(shape, dtype)
  return Tensor.full(shp, 1, dt)



@method
def full_like(self: Tensor, fill_value: Any, dtype: DType | None = None) -> Tensor: return Tensor.full(self.shape, fill_value, dtype or self.dtype)
@method
def zeros_like(self: Tensor, dtype: DType | None = None) -> Tensor: return self.full_like(0, dtype)
@method
def ones_like(self: Tensor, dtype: DType | None = None) -> Tensor: return self.full_like(1, dtype)


@static
def linspace(start: int | float, stop: int | float, steps: int, dtype: DType | None = None) -> Tensor:
  if steps < 0: raise ValueError(f"linspace needs a non-negative number of steps, got {steps}")
  dt = dtype or dtypes.float32
  if dt.is_bool: raise TypeError("linspace with bool dtype is not supported")
  if steps == 1: return Tensor.full((1,), start, dt)
  if steps == 0: return Tensor.full((0,), 0, dt)
  return (start + Tensor.arange(steps, dtype=dtypes.float32) * ((stop - start) / (steps - 1))).cast(dt)


@static
def eye(n: int, m: int | None = None, dtype: DType | None = None) -> Tensor:
  m = n if m is None else m
  if n < 0 or m < 0: raise ValueError(f"eye cannot have a negative size, got n={n}, m={m}")
  return (Tensor.arange(n).unsqueeze(-1) == Tensor.arange(m)).cast(dtype or dtypes.float32)


def _tri(r: int, c: int, diagonal: int = 0) -> Tensor:
  """bool (r, c): True where column - row >= diagonal."""
  return (Tensor.arange(r).unsqueeze(-1) + diagonal) <= Tensor.arange(c)


def _needs_2d(x: Tensor, what: str) -> None:
  if x.ndim < 2: raise ValueError(f"{what} needs at least 2 dims, got shape {x.shape}")


@method
def triu(self: Tensor, diagonal: int = 0) -> Tensor:
  _needs_2d(self, "triu")
  return _tri(self.shape[-2], self.shape[-1], diagonal).where(self, Tensor.full((), 0, self.dtype))


@method
def tril(self: Tensor, diagonal: int = 0) -> Tensor:
  _needs_2d(self, "tril")
  return _tri(self.shape[-2], self.shape[-1], diagonal + 1).where(Tensor.full((), 0, self.dtype), self)

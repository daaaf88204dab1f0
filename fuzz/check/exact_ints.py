"""Whether a generated tinygrad program overflows a signed integer: the program run on exact Python integers.

tinygrad treats signed overflow as undefined (its rewrites assume it never happens, and C compilers may too), so a
difference in a program that overflows a signed int is reported apart from the real bugs. This module runs a program's
source (fuzz.generate.tinygrad_programs) with a Tensor whose integers are unbounded Python ints: after every op, a
signed result outside its dtype's range sets the overflow flag (and is wrapped, so the run goes on as tinygrad's would);
an unsigned result wraps, as it is defined to. Floats run in float32 numpy. Only the ops the generator draws exist here.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from fuzz.generate.tinygrad_programs import INT_BITS, int_range, is_int, is_signed, run_program


class Overflow:
  """The flag one run sets."""
  def __init__(self) -> None: self.signed = False


def _dtype_name(d: Any) -> str: return d if isinstance(d, str) else d.name


class _Dtypes:
  def __getattr__(self, name: str) -> str: return name


def make_tensor(flag: Overflow) -> type:
  """A Tensor class over exact integers that sets flag.signed on a signed overflow."""

  def fit(a: np.ndarray, dt: str) -> np.ndarray:
    if not is_int(dt): return a
    lo, hi = int_range(dt)
    if is_signed(dt) and any(not lo <= int(v) <= hi for v in a.reshape(-1)): flag.signed = True
    m = 1 << INT_BITS[dt]
    return np.vectorize(lambda v: (int(v) - lo) % m + lo, otypes=[object])(a) if a.size else a.astype(object)

  class Exact:
    def __init__(self, data: Any, dtype: str | None = None):
      arr = np.asarray(data)
      self.dtype = dtype or arr.dtype.name
      self.a = arr.astype(object) if is_int(self.dtype) else arr.astype(np.bool_ if self.dtype == "bool" else np.float32)
      if is_int(self.dtype): self.a = np.vectorize(int, otypes=[object])(self.a) if self.a.size else self.a

    @property
    def shape(self) -> tuple[int, ...]: return self.a.shape

    def numpy(self) -> np.ndarray: return self.a

    def _lit(self, x: Any) -> np.ndarray:
      if isinstance(x, Exact): return x.a
      if is_int(self.dtype): return fit(np.array([int(x)], dtype=object), self.dtype)[0]  # a literal takes the tensor's dtype
      return np.float32(x)

    def _bin(self, x: Any, fn: Callable, out: str | None = None) -> Exact:
      return Exact(fit(np.asarray(fn(self.a, self._lit(x))), self.dtype) if out is None else fn(self.a, self._lit(x)), out or self.dtype)

    def __add__(self, x): return self._bin(x, operator.add)
    def __sub__(self, x): return self._bin(x, operator.sub)
    def __mul__(self, x): return self._bin(x, operator.mul)
    def __truediv__(self, x): return self._bin(x, operator.truediv)
    def __floordiv__(self, x): return self._bin(x, operator.floordiv)
    def __mod__(self, x): return self._bin(x, operator.mod)
    def __and__(self, x): return self._bin(x, operator.and_)
    def __or__(self, x): return self._bin(x, operator.or_)
    def __xor__(self, x): return self._bin(x, operator.xor)
    def __lshift__(self, k): return self._bin(1 << int(k), operator.mul) if is_int(self.dtype) else NotImplemented
    def __rshift__(self, k): return Exact(self.a // (1 << int(k)), self.dtype)
    def __neg__(self): return Exact(fit(-self.a, self.dtype), self.dtype)
    def __lt__(self, x): return self._bin(x, lambda a, b: np.asarray(a < b, dtype=np.bool_), "bool")
    def __eq__(self, x): return self._bin(x, lambda a, b: np.asarray(a == b, dtype=np.bool_), "bool")  # type: ignore[override]
    def __ne__(self, x): return self._bin(x, lambda a, b: np.asarray(a != b, dtype=np.bool_), "bool")  # type: ignore[override]
    def maximum(self, x): return self._bin(x, np.maximum)
    def minimum(self, x): return self._bin(x, np.minimum)
    def where(self, a, b):
      dt = a.dtype
      bb = b.a if isinstance(b, Exact) else a._lit(b)
      return Exact(np.where(self.a, a.a, bb), dt)

    def cast(self, to: Any) -> Exact:
      to = _dtype_name(to)
      if is_int(to): return Exact(fit(np.vectorize(int, otypes=[object])(self.a) if self.a.size else self.a.astype(object), to), to)
      return Exact(np.array([float(v) for v in self.a.reshape(-1)], dtype=np.float32).reshape(self.shape), to)

    def sum(self, axis: int, keepdim: bool = False) -> Exact:
      return Exact(fit(np.asarray(self.a.sum(axis=axis, keepdims=keepdim)), self.dtype), self.dtype)

    def max(self, axis: int, keepdim: bool = False) -> Exact: return Exact(np.asarray(self.a.max(axis=axis, keepdims=keepdim)), self.dtype)
    def reshape(self, shape: tuple) -> Exact: return Exact(self.a.reshape(shape), self.dtype)
    def permute(self, *order: Any) -> Exact:
      return Exact(self.a.transpose(order[0] if len(order) == 1 and isinstance(order[0], tuple) else order), self.dtype)
    def flip(self, axis: int) -> Exact: return Exact(np.flip(self.a, axis), self.dtype)
    def pad(self, pads: tuple) -> Exact: return Exact(np.pad(self.a, pads, constant_values=self._lit(0)), self.dtype)
    def shrink(self, win: tuple) -> Exact: return Exact(self.a[tuple(slice(a, b) for a, b in win)], self.dtype)
    def expand(self, shape: tuple) -> Exact: return Exact(np.broadcast_to(self.a, shape).copy(), self.dtype)
    def matmul(self, w: Exact) -> Exact: return Exact(self.a @ w.a, self.dtype)
    def contiguous(self) -> Exact: return self

  return Exact


def overflows_signed(src: str) -> bool:
  """Whether the program in src overflows a signed integer anywhere (exact arithmetic, ops applied as written)."""
  flag = Overflow()
  run_program(src, {"Tensor": make_tensor(flag), "dtypes": _Dtypes(), "function": lambda f: f})
  return flag.signed

"""A generated tinygrad program run on exact Python integers: whether it overflows a signed integer, and what it means
under either reading of an integer literal that its tensor's dtype cannot hold.

tinygrad treats signed overflow as undefined (its rewrites assume it never happens, and C compilers may too), so a
difference in a program that overflows a signed int is reported apart from the real bugs. And tinygrad keeps a Python
literal weak: `x // -1` on a uint32 tensor computes with the literal's own value (-1) and wraps the result, where
tinyspec (as C's conversions and numpy's casts do) first converts the literal to the tensor's dtype (4294967295). Both
readings are consistent rules; a difference between them is a policy difference, not a bug of either side.

This module runs a program's source (fuzz.generate.tinygrad_programs) with a Tensor whose integers are unbounded
Python ints. After every op the result is wrapped into its dtype (unsigned wrap is defined; a signed result outside its
range sets the overflow flag and is wrapped too, so the run goes on as tinygrad's would). A literal operand is
converted to the tensor's dtype first (`exact_literals=False`, tinyspec's reading) or kept as it is (`True`, tinygrad's);
a literal stored as a value (a WHERE branch, a pad) is converted in both. Floats run in float32 numpy. Only the ops
the generator draws exist here.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fuzz.generate.tinygrad_programs import INT_BITS, int_range, is_int, is_signed, run_program


@dataclass
class Run:
  """What one exact run gave: every output (numpy arrays of the program's dtypes) and whether a signed int overflowed."""
  outputs: list[np.ndarray]
  overflowed: bool


class _Dtypes:
  def __getattr__(self, name: str) -> str: return name


def _dtype_name(d: Any) -> str: return d if isinstance(d, str) else d.name


def make_tensor(flags: dict[str, bool], exact_literals: bool) -> type:
  """A Tensor class over exact integers that sets flags["signed"] on a signed overflow."""

  def fit(a: np.ndarray, dt: str) -> np.ndarray:
    if not is_int(dt): return a
    lo, hi = int_range(dt)
    if is_signed(dt) and any(not lo <= int(v) <= hi for v in a.reshape(-1)): flags["signed"] = True
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

    def numpy(self) -> np.ndarray:
      return np.array(self.a.reshape(-1).tolist(), dtype=self.dtype).reshape(self.a.shape)

    def _value(self, x: Any) -> Any:
      """x stored into this tensor's dtype: a literal converted."""
      if isinstance(x, Exact): return x.a
      return fit(np.array([int(x)], dtype=object), self.dtype)[0] if is_int(self.dtype) else np.float32(x)

    def _lit(self, x: Any) -> Any:
      """x as an operand: a tensor's values; a literal converted, or as it is under tinygrad's reading."""
      if isinstance(x, Exact) or not is_int(self.dtype) or not exact_literals: return self._value(x)
      return int(x)

    def _bin(self, x: Any, fn: Callable, out: str | None = None) -> Exact:
      return Exact(fit(np.asarray(fn(self.a, self._lit(x))), self.dtype) if out is None else fn(self.a, self._lit(x)), out or self.dtype)

    def __add__(self, x): return self._bin(x, operator.add)
    def __sub__(self, x): return self._bin(x, operator.sub)
    def __mul__(self, x): return self._bin(x, operator.mul)
    def __truediv__(self, x): return self._bin(x, operator.truediv)
    def __floordiv__(self, x): return self._bin(x, operator.floordiv)
    def __mod__(self, x): return self._bin(x, operator.mod)
    def __pow__(self, x): return self._bin(x, np.vectorize(lambda b, e: _power(int(b), int(e), self.dtype), otypes=[object]))
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
      return Exact(np.where(self.a, a.a, a._value(b)), a.dtype)

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
    def pad(self, pads: tuple) -> Exact: return Exact(np.pad(self.a, pads, constant_values=self._value(0)), self.dtype)
    def shrink(self, win: tuple) -> Exact: return Exact(self.a[tuple(slice(a, b) for a, b in win)], self.dtype)
    def expand(self, shape: tuple) -> Exact: return Exact(np.broadcast_to(self.a, shape).copy(), self.dtype)
    def matmul(self, w: Exact) -> Exact: return Exact(self.a @ w.a, self.dtype)
    def contiguous(self) -> Exact: return self

  return Exact


def _power(b: int, e: int, dt: str) -> int:
  """b ** e as an integer power means it (tinyspec.bridge.tinygrad.composite.int_pow): exact for e >= 0; for e < 0 the
  real power truncated toward zero (1 for b = 1, +-1 for b = -1, else 0). A power past 2**256 is not formed: its
  residue modulo 2**bits plus a multiple of 2**bits that puts it out of every range, so wrapping gives the residue and a
  signed dtype's overflow is seen."""
  if e < 0: return 1 if b == 1 else (-1 if e % 2 else 1) if b == -1 else 0
  if abs(b) < 2 or e * (abs(b).bit_length()) <= 256: return b ** e
  m = 1 << INT_BITS[dt]
  return pow(b, e, m) + 2 * m


def run_exact(src: str, exact_literals: bool = False) -> Run:
  """The program in src on exact integers, ops applied as written, its literals read as tinyspec does (converted to the
  tensor's dtype) or, with exact_literals, as tinygrad does (their own value)."""
  flags = {"signed": False}
  outs = run_program(src, {"Tensor": make_tensor(flags, exact_literals), "dtypes": _Dtypes(), "function": lambda f: f})
  return Run([o.numpy() for o in outs], flags["signed"])


def overflows_signed(src: str) -> bool:
  """Whether the program in src overflows a signed integer anywhere, under either reading of its literals."""
  return run_exact(src).overflowed or run_exact(src, exact_literals=True).overflowed

"""The dtypes of the frontend: the dtype a Python scalar gets, and the dtype a binary op computes in (tinygrad 0.14's
promotion lattice, the one table)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tinyspec.dtype import DType, dtypes


def default_dtype(x: Any) -> DType:
  """The dtype of a Python or numpy scalar standing alone: bool, int32 or float32, as tinygrad's defaults."""
  if isinstance(x, (bool, np.bool_)): return dtypes.bool
  if isinstance(x, (int, np.integer)): return dtypes.int32
  if isinstance(x, (float, np.floating)): return dtypes.float32
  raise TypeError(f"no dtype for {x!r}")


# tinygrad 0.14's promotion lattice (dtype.py promo_lattice, after JAX): each dtype's immediate parents. The least
# upper bound of two dtypes is the first dtype of _ORDER (tinygrad's priority) above both. tinygrad's weakint (between
# bool and the 8-bit ints) only orders Python scalars, so bool goes straight to int8 and uint8; its weakfloat sits
# between the ints and the floats, where a signed int meets uint64: that result has no width of its own and is made
# float32, tinygrad's default float (tinyspec has no weak dtypes, so it stays float32 in later ops).
_WEAKFLOAT = "weakfloat"
_PARENTS: dict[str, tuple[str, ...]] = {
  "bool": ("int8", "uint8"), "int8": ("int16",), "int16": ("int32",), "int32": ("int64",), "int64": (_WEAKFLOAT,),
  "uint8": ("int16", "uint16"), "uint16": ("int32", "uint32"), "uint32": ("int64", "uint64"), "uint64": (_WEAKFLOAT,),
  _WEAKFLOAT: ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"),
  "float8_e4m3fn": ("float16", "bfloat16"), "float8_e5m2": ("float16", "bfloat16"),
  "float8_e4m3fnuz": ("float16", "bfloat16"), "float8_e5m2fnuz": ("float16", "bfloat16"),
  "float16": ("float32",), "bfloat16": ("float32",), "float32": ("float64",), "float64": (),
}
_ORDER = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", _WEAKFLOAT,
          "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float16", "bfloat16", "float32", "float64")


@functools.cache
def _above(name: str) -> frozenset[str]:
  """name and every dtype above it in the lattice."""
  return frozenset({name}).union(*(_above(p) for p in _PARENTS[name]))


def promote(a: DType, b: DType) -> DType:
  """The dtype of a binary op on a and b: their least upper bound in tinygrad 0.14's lattice (_PARENTS).
  index, the IR's unbounded integer, wins over every int and bool and loses to every float."""
  if a is b: return a
  if dtypes.index in (a, b):
    other = b if a is dtypes.index else a
    return other if other.is_float else dtypes.index
  both = _above(a.name) & _above(b.name)
  name = next(n for n in _ORDER if n in both)
  return dtypes.float32 if name == _WEAKFLOAT else dtypes.by_name[name]


def scalar_dtype(t: DType, x: Any) -> DType:
  """The dtype a scalar x takes as the operand of a tensor of dtype t: t, unless x is an int beside bools (int32) or a
  float beside ints (float32)."""
  if isinstance(x, (bool, np.bool_)): return t
  if isinstance(x, (int, np.integer)): return dtypes.int32 if t.is_bool else t
  return t if t.is_float else dtypes.float32

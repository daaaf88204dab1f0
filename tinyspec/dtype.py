"""Scalar data types: their numpy, C and OpenCL names and their value ranges."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=True)
class DType:
  """A scalar element type. `kind` is one of b (bool), i (signed), u (unsigned), f (float), v (void), x (index)."""
  name: str
  itemsize: int
  kind: str
  cname: str
  clname: str

  def __repr__(self) -> str: return f"dtypes.{self.name}"
  def __reduce__(self): return (getattr, (dtypes, self.name))  # pickles as the singleton

  @property
  def is_int(self) -> bool: return self.kind in "iux"
  @property
  def is_float(self) -> bool: return self.kind == "f"
  @property
  def is_bool(self) -> bool: return self.kind == "b"
  @property
  def is_signed(self) -> bool: return self.kind in "ix"
  @property
  def bits(self) -> int: return self.itemsize * 8

  @property
  def np(self) -> np.dtype:
    """The numpy dtype that stores values of this type (index is stored as int64)."""
    if self.kind == "v": raise TypeError("void has no numpy dtype")
    return np.dtype({"index": "int64", "bool": "bool"}.get(self.name, self.name))

  @property
  def min(self) -> int | float | bool:
    if self.kind == "b": return False
    if self.kind == "i": return -(1 << (self.bits - 1))
    if self.kind == "u": return 0
    if self.kind == "x": return -(1 << 63)
    return -float("inf")

  @property
  def max(self) -> int | float | bool:
    if self.kind == "b": return True
    if self.kind == "i": return (1 << (self.bits - 1)) - 1
    if self.kind == "u": return (1 << self.bits) - 1
    if self.kind == "x": return (1 << 63) - 1
    return float("inf")


class dtypes:
  """The dtype singletons, by name."""
  bool = DType("bool", 1, "b", "_Bool", "bool")
  int8 = DType("int8", 1, "i", "int8_t", "char")
  int16 = DType("int16", 2, "i", "int16_t", "short")
  int32 = DType("int32", 4, "i", "int32_t", "int")
  int64 = DType("int64", 8, "i", "int64_t", "long")
  uint8 = DType("uint8", 1, "u", "uint8_t", "uchar")
  uint16 = DType("uint16", 2, "u", "uint16_t", "ushort")
  uint32 = DType("uint32", 4, "u", "uint32_t", "uint")
  uint64 = DType("uint64", 8, "u", "uint64_t", "ulong")
  float32 = DType("float32", 4, "f", "float", "float")
  float64 = DType("float64", 8, "f", "double", "double")
  void = DType("void", 0, "v", "void", "void")
  # the unbounded integer of shapes and indices; linearize lowers it to int32 or int64
  index = DType("index", 8, "x", "int64_t", "long")

  ints: tuple[DType, ...] = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
  floats: tuple[DType, ...] = (float32, float64)
  all: tuple[DType, ...] = (bool, *ints, *floats, void, index)
  by_name: dict[str, DType] = {d.name: d for d in all}

  @staticmethod
  def from_np(dt: Any) -> DType:
    """The dtype of a numpy dtype (or anything np.dtype accepts)."""
    name = np.dtype(dt).name
    if name not in dtypes.by_name: raise TypeError(f"numpy dtype {name} has no tinyspec dtype")
    return dtypes.by_name[name]


def truncate(x: Any, dt: DType) -> int | float | bool:
  """A Python scalar wrapped into the range of dt, as C does with -fwrapv (ints wrap, bools are x != 0)."""
  if dt.kind == "b": return bool(x)
  if dt.kind in "iu":
    x = int(x) & ((1 << dt.bits) - 1)
    return x - (1 << dt.bits) if dt.kind == "i" and x >= (1 << (dt.bits - 1)) else x
  if dt.kind == "x": return int(x)
  if dt.kind == "f": return float(np.array(x, dtype=dt.np))
  raise TypeError(f"no value of dtype {dt}")

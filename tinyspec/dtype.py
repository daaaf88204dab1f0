"""Scalar data types: their numpy, C and OpenCL names and their value ranges."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ml_dtypes
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
  def is_small_float(self) -> bool:
    """float16, bfloat16 and the fp8 dtypes: computed in float32 and rounded back after every op (docs/spec.md)."""
    return self.kind == "f" and self.itemsize < 4
  @property
  def storage_only(self) -> bool:
    """The fp8 dtypes: values are stored, moved, selected and converted, never computed on (tinyspec.ops.classes)."""
    return self.kind == "f" and self.itemsize == 1
  @property
  def compute_dtype(self) -> DType:
    """The dtype values of this type are computed in: float32 for the small floats (the evaluator widens float16 and
    bfloat16 to it; fp8 is cast to it by the program), the dtype itself otherwise (docs/spec.md "Small floats")."""
    return dtypes.float32 if self.is_small_float else self

  @property
  def np(self) -> np.dtype:
    """The numpy dtype that stores values of this type (index is stored as int64)."""
    if self.kind == "v": raise TypeError("void has no numpy dtype")
    return _NP.get(self.name) or np.dtype(self.name)

  @property
  def min(self) -> int | float | bool:
    if self.kind == "b": return False
    if self.kind == "i": return -(1 << (self.bits - 1))
    if self.kind == "u": return 0
    if self.kind == "x": return -(1 << 63)
    return -float("inf") if _has_inf(self) else -float(finfo(self).max)

  @property
  def max(self) -> int | float | bool:
    if self.kind == "b": return True
    if self.kind == "i": return (1 << (self.bits - 1)) - 1
    if self.kind == "u": return (1 << self.bits) - 1
    if self.kind == "x": return (1 << 63) - 1
    return float("inf") if _has_inf(self) else float(finfo(self).max)


# the numpy dtypes that are not named as the DType is: index is stored as int64; the small floats past float16 are
# ml_dtypes' (numpy has no bfloat16 or fp8)
_NP: dict[str, np.dtype] = {"index": np.dtype("int64"), "bool": np.dtype("bool"), "bfloat16": np.dtype(ml_dtypes.bfloat16),
                            "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
                            "float8_e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz), "float8_e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz)}


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
  # the small floats: their C and OpenCL names are those of their storage. In C that is the typedef of
  # tinyspec.render.smallfloat, which picks _Float16 / __bf16 where the compiler converts them and the bits otherwise;
  # in OpenCL float16 is half (read and written with vload_half / vstore_half_rte), the others their bits
  float16 = DType("float16", 2, "f", "ts_float16", "half")
  bfloat16 = DType("bfloat16", 2, "f", "ts_bfloat16", "ushort")
  float8_e4m3fn = DType("float8_e4m3fn", 1, "f", "ts_float8_e4m3fn", "uchar")   # 4 exponent bits, 3 mantissa bits, no infinity
  float8_e5m2 = DType("float8_e5m2", 1, "f", "ts_float8_e5m2", "uchar")         # 5 exponent bits, 2 mantissa bits, IEEE-like
  # the fnuz formats (AMD's and Graphcore's): no infinity, no negative zero, one NaN (bits 0x80, the negative zero's),
  # exponent bias one more than float8_e4m3fn's and float8_e5m2's
  float8_e4m3fnuz = DType("float8_e4m3fnuz", 1, "f", "ts_float8_e4m3fnuz", "uchar")
  float8_e5m2fnuz = DType("float8_e5m2fnuz", 1, "f", "ts_float8_e5m2fnuz", "uchar")
  void = DType("void", 0, "v", "void", "void")
  # the unbounded integer of shapes and indices; linearize lowers it to int32 or int64
  index = DType("index", 8, "x", "int64_t", "long")

  ints: tuple[DType, ...] = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
  fp8s: tuple[DType, ...] = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz)
  small_floats: tuple[DType, ...] = (float16, bfloat16, *fp8s)
  floats: tuple[DType, ...] = (float32, float64, *small_floats)
  all: tuple[DType, ...] = (bool, *ints, *floats, void, index)
  by_name: dict[str, DType] = {d.name: d for d in all}

  @staticmethod
  def from_np(dt: Any) -> DType:
    """The dtype of a numpy dtype (or anything np.dtype accepts)."""
    name = np.dtype(dt).name
    if name not in dtypes.by_name: raise TypeError(f"numpy dtype {name} has no tinyspec dtype")
    return dtypes.by_name[name]


def finfo(dt: DType) -> ml_dtypes.finfo:
  """The float format of dt: eps, max, smallest normal (tiny), smallest subnormal, bits of mantissa and exponent."""
  if dt.kind != "f": raise TypeError(f"{dt.name} is no float dtype")
  return ml_dtypes.finfo(dt.np)


def holds_floats(x: np.ndarray) -> bool:
  """Whether an array holds values of a float dtype (numpy's float16 ... float64, and ml_dtypes' bfloat16 and fp8, whose
  numpy kind is "V")."""
  return x.dtype.kind == "f" or (x.dtype.name in dtypes.by_name and dtypes.by_name[x.dtype.name].is_float)


def widens_exactly(src: DType, dt: DType) -> bool:
  """Every value of float src is one of float dt: a cast from src to dt never rounds (float16 into float32, not
  bfloat16 into float16)."""
  a, b = finfo(src), finfo(dt)
  return int(a.nmant) <= int(b.nmant) and int(a.maxexp) <= int(b.maxexp) and int(a.minexp) - int(a.nmant) >= int(b.minexp) - int(b.nmant)


def significand_bits(dt: DType) -> int:
  """The significant bits of float dt, the implicit one included: a dyadic value within them is exact in dt."""
  return int(finfo(dt).nmant) + 1


@functools.cache
def _has_inf(dt: DType) -> bool:
  """Whether float dt has an infinity (float8_e4m3fn and the fnuz formats have none), as its numpy storage says."""
  with np.errstate(invalid="ignore", over="ignore"): return bool(np.isinf(np.float32(np.inf).astype(dt.np).astype(np.float32)))


def rounding_bound(dt: DType, roundings: float, magnitude: float) -> float:
  """How far a result of dtype dt may lie from the exact value after `roundings` roundings to nearest, each of a value
  of magnitude at most `magnitude`: each errs by at most half an ulp, eps/2 relative, and to first order the errors
  add, so roundings * eps / 2 * magnitude (Higham, Accuracy and Stability of Numerical Algorithms, 2.2; a sum of n
  terms in any order rounds n - 1 times with partial sums bounded by the sum of the magnitudes, 4.2). 0 for ints,
  which never round."""
  if not dt.is_float or roundings <= 0: return 0.0
  return roundings * float(finfo(dt).eps) / 2 * magnitude


def round_float(a: Any, dt: DType) -> np.ndarray:
  """The one meaning of converting values into float dtype dt: a (a numpy array or scalar of any int, bool or float
  dtype) rounded once, to nearest even, from its exact value (ints into a small float go through float64, exact below
  2**53; into float32 and float64 they convert as C converts them). Past the
  largest finite value float16, bfloat16, float32 and float64 give +-inf; the fp8 dtypes saturate finite values to
  +-max, as tinygrad's float_to_fp8 does, and those with no infinity (float8_e4m3fn, float8_e4m3fnuz,
  float8_e5m2fnuz) turn +-inf into NaN (float_to_fp8 too). The fnuz formats have one NaN, 0x80, which every NaN and
  infinity becomes, and no negative zero: -0.0 and a negative value rounding to zero give 0x00 (ml_dtypes' rounding,
  and float_to_fp8's)."""
  a = np.asarray(a)
  if not dt.is_small_float:  # C's own conversion into float and double
    with np.errstate(over="ignore", invalid="ignore"): return np.asarray(a.astype(dt.np))
  if a.dtype.kind in "iub": a = a.astype(np.float64)
  elif a.dtype not in (np.float32, np.float64, np.float16): a = a.astype(np.float32)  # ml_dtypes values widen exactly
  if dt.storage_only:
    m = a.dtype.type(finfo(dt).max)
    with np.errstate(invalid="ignore"): a = np.where(np.isfinite(a), np.clip(a, -m, m), a)
  with np.errstate(over="ignore", invalid="ignore"): return np.asarray(a.astype(dt.np))


def truncate(x: Any, dt: DType) -> int | float | bool:
  """A Python scalar wrapped into the range of dt, as C does with -fwrapv (ints wrap, bools are x != 0)."""
  if dt.kind == "b": return bool(x)
  if dt.kind in "iu":
    x = int(x) & ((1 << dt.bits) - 1)
    return x - (1 << dt.bits) if dt.kind == "i" and x >= (1 << (dt.bits - 1)) else x
  if dt.kind == "x": return int(x)
  if dt.kind == "f": return float(round_float(x if isinstance(x, (np.ndarray, np.generic)) else np.float64(x), dt))
  raise TypeError(f"no value of dtype {dt}")

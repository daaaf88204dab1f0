"""The values generators put in inputs and constants: a dtype's ordinary values, and the edge and special values where
the spec's meanings change (docs/spec.md)."""
from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

from tinyspec.dtype import DType, finfo


def edge_values(dt: DType) -> list[Any]:
  """The values of dt at which the spec's meanings change (docs/spec.md): an int's wrap points, a float's signed zero,
  denormals and largest finite values."""
  if dt.is_bool: return []
  if dt.is_int: return list(dict.fromkeys(v for v in (dt.min, dt.max, -1, 0, 1) if dt.min <= v <= dt.max))
  fi = finfo(dt)
  return [-0.0, float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.tiny) / 2, float(fi.max), -float(fi.max)]


def special_values(dt: DType) -> list[float]:
  """The non-finite values of a float dtype, whose results the spec defines (IEEE: inf and NaN propagate); a dtype with
  no infinity (float8_e4m3fn and the fnuz fp8 dtypes, whose largest value is finite) holds only NaN."""
  if not dt.is_float: return []
  return [math.nan, math.inf, -math.inf] if math.isinf(dt.max) else [math.nan]


def input_values(r: random.Random, dt: DType, n: int) -> np.ndarray:
  """n values of dt for an input array, of one profile: small, positive, or wide (an int's whole range, its edges often)."""
  prof = r.choice(["small", "small", "small", "positive", "wide"])
  if dt.is_bool: return np.array([r.random() < 0.5 for _ in range(n)], dtype=np.bool_)
  if dt.is_float:
    if prof == "positive": vals = [r.randint(1, 16) / 4 for _ in range(n)]
    elif prof == "wide": vals = [r.randint(-256, 256) / 8 for _ in range(n)]
    else: vals = [r.randint(-16, 16) / 4 for _ in range(n)]
    return np.array(vals, dtype=dt.np)
  lo, hi = (dt.min, dt.max) if prof == "wide" else ((1, 9) if prof == "positive" else (max(dt.min, -8), min(dt.max, 8)))
  edges = [dt.min, dt.max, 0, 1, dt.min + 1, dt.max - 1] if prof == "wide" else []
  vals = [r.choice(edges) if edges and r.random() < 0.3 else r.randint(lo, hi) for _ in range(n)]
  return np.array(vals, dtype=dt.np)

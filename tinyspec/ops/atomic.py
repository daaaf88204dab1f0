"""What an atomic update means: ATOMIC(INDEX(storage, i), value[, gate]) with arg op, one registry entry for all of it.

Where its gate holds, ATOMIC replaces storage[i] by op(storage[i], value) as one indivisible step: no other update of
that element comes between its read and its write. Updates of one element by different iterations (or threads) are
applied one after another in an order nothing fixes, and no order with plain LOADs and STOREs of the element is
assumed. The meaning of op is the elementwise registry's (ADD wraps on fixed-width ints; MAX of floats propagates
NaN), so an integer result is exact in any order, and so is a float MAX. A float ADD is a sum in some order: each
order rounds differently, and a result is correct when it lies within `sum_tolerance` of the exact sum.

The spec (kernel.atomic_*), the evaluator, the renderers and the parity oracles read this module; none re-derives it.
"""
from __future__ import annotations

import numpy as np

from tinyspec.dtype import DType, dtypes, rounding_bound
from tinyspec.uop import GroupOp, Ops, UOp

# the combining ops an ATOMIC takes, and the element dtypes it updates: what C11 atomics and OpenCL (32-bit natively,
# 64-bit with cl_khr_int64_base_atomics / cl_khr_int64_extended_atomics) do on global memory, floats by compare-and-swap
ATOMIC_OPS: tuple[Ops, ...] = tuple(sorted(GroupOp.AtomicOps, key=lambda o: o.value))
ATOMIC_DTYPES: tuple[DType, ...] = (dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float32, dtypes.float64)


def atomic_error(op: object, dt: DType) -> str | None:
  """Why an ATOMIC with arg op cannot update elements of dtype dt, or None when it can."""
  if op not in ATOMIC_OPS:
    return f"arg {op!r} is not a combining op of an atomic update ({', '.join(o.name for o in ATOMIC_OPS)})"
  if dt not in ATOMIC_DTYPES:
    return f"an atomic update of {dt.name} elements is not defined (atomics update {', '.join(d.name for d in ATOMIC_DTYPES)})"
  return None


def commute(a: UOp, b: UOp) -> bool:
  """Whether two accesses of one element give one result in either order: two ATOMICs with the same combining op (an
  integer result is exact, a float sum within sum_tolerance). Any other pair with a write needs an order."""
  return a.op is Ops.ATOMIC and b.op is Ops.ATOMIC and a.arg is b.arg


def ufunc(op: Ops, dt: DType) -> np.ufunc:
  """The numpy ufunc whose `.at` applies op to repeated indices one after another (np.add.at semantics); on single
  values it is the elementwise registry's op (tests/test_atomic.py holds them equal on edge values)."""
  return {Ops.ADD: np.add, Ops.MAX: np.maximum}[op]


def apply(op: Ops, dt: DType, data: np.ndarray, where: tuple, values: np.ndarray) -> None:
  """data[where] = op(data[where], values) for each element of values in turn, repeated indices included (numpy's
  `ufunc.at`); integer ADD wraps as the elementwise registry's ADD does."""
  with np.errstate(over="ignore", invalid="ignore"):
    ufunc(op, dt).at(data, where, values)


def sum_tolerance(terms: np.ndarray, dt: DType) -> float:
  """How far a float atomic sum of `terms` (into an element holding the first term) may lie from the exact sum: summed
  in any order, n terms round n-1 times, each by at most half an ulp of a partial sum bounded by the sum of the
  magnitudes, so |result - exact| <= (n - 1) * eps / 2 * sum|terms| (Higham, Accuracy and Stability, 4.2); 0 for
  integer dtypes, where every order gives one result."""
  if not dt.is_float or len(terms) < 2: return 0.0
  return rounding_bound(dt, len(terms) - 1, float(np.sum(np.abs(terms.astype(np.float64)))))

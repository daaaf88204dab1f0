"""When two results agree: the one comparison of every parity oracle (reference against CPU and OpenCL, before against
after each pass and rule application, one lowering choice against another, tinyspec against a bridged compiler).

Values are compared as the spec defines them (docs/spec.md, "Comparing results" and "Small floats"):

- ints and bools are equal or not;
- a NaN equals any NaN, whatever its payload and sign bit: the spec leaves a NaN's bits open;
- +inf equals only +inf and -inf only -inf;
- finite floats agree within the rounding the spec allows them (below): |x - y| <= tol * |y| + tol * (1 + scale), scale
  the largest magnitude an output holds up to FLOAT_LIMIT (a sum that cancels keeps the rounding error of its largest
  terms; a value past the limit was only passed on, never summed, by the UB screen);
- a zero equals a zero of either sign: the spec leaves the sign of a zero result open (it depends on operand order and on
  identities rewrites apply: MAX of -0.0 and +0.0 gives its second operand; -0.0 + 0.0 is +0.0). Where a sign becomes a value
  (RECIP of a zero is an infinity of its sign, a BITCAST shows the sign bit), the result is an infinity or an integer,
  which are compared exactly: the edge kernels put an uncomputed -0.0 there on purpose (the spec defines its sign), and
  the screens keep a computed zero away from those ops.

The tolerance follows from the formats and from the roundings a value went through, not from a number picked per
dtype. Every float op the spec defines exactly (ADD, SUB, MUL, RECIP, SQRT, a CAST that can round: from an int, or
into a float of fewer digits or a smaller range) is one rounding to
nearest in its dtype: at most eps/2 relative, eps = tinyspec.dtype.finfo(dt).eps. A float16 or bfloat16 op computes in
float32 and rounds back: one rounding in its own dtype (the spec: this double rounding is the correctly rounded
result). EXP2, LOG2 and SIN are the math library's, within APPROXIMATE_ULPS ulps (2 * ulps half-ulp roundings, in
float32 for the small floats, which then round once more into their dtype). A REDUCE ADD of n terms rounds n - 1 times
in any order, a float ATOMIC ADD of n updates too: (n - 1) * eps / 2 * sum|terms| (Higham; tinyspec.dtype.rounding_bound,
which tinyspec.ops.atomic.sum_tolerance uses too). To first order the relative errors of a value are bounded by

  err(u) = own(u) + max(err(s) for s in u.src)    for sums and selections (ADD, SUB, MAX, WHERE, REDUCE ADD, moves)
  err(u) = own(u) + sum(err(s) for s in u.src)    for products and functions (MUL, RECIP, SQRT, EXP2, LOG2, SIN)

(`output_errors`; a REDUCE MUL of n terms n times its operand's), measured against the magnitude of the terms. The two
results compared each lie within err of the exact value, so they differ by at most 2 * err: tol = 2 * err of the output.
A float16 result is compared at float16's precision, a float32 result computed from float16 values at float16's too,
and the tolerance of n roundings in float16 is eps(float16) / eps(float32) = 2^13 times that of n in float32. A
comparison that has no graph to count in (`compare` without errors: a bridged compiler's results, a test's) allows
DEFAULT_ROUNDINGS roundings in the compared dtype.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from fuzz.generate.safety import FLOAT_LIMIT
from tinyspec.dtype import DType, dtypes, holds_floats, rounding_bound, widens_exactly
from tinyspec.ops.scalar import APPROXIMATE_ULPS
from tinyspec.uop import GroupOp, Ops, UOp

# the roundings a value of unknown history is allowed: a REDUCE over the generators' largest value (MAX_SIZE, 32 terms)
# of values that each went through as many (2^5 * 2^5)
DEFAULT_ROUNDINGS = 2 ** 10
ADDITIVE = frozenset({Ops.ADD, Ops.SUB})  # errors of the operands add as magnitudes: their bound is the larger one's
COMPOUNDING = frozenset({Ops.MUL, Ops.RECIP, Ops.SQRT, *APPROXIMATE_ULPS})  # relative errors of the operands add up


def tolerance(dt: DType, roundings: float) -> float:
  """The relative tolerance of two results of float dt that each went through `roundings` roundings in dt."""
  return 2 * rounding_bound(dt, roundings, 1.0)


def default_error(dt: DType) -> float:
  """The relative error bound of a float value of dt whose history is unknown (module docstring)."""
  return rounding_bound(dt, DEFAULT_ROUNDINGS, 1.0)


def own_error(u: UOp) -> float:
  """The relative error the op u adds to its result (module docstring): 0 for ops that round nothing."""
  dt, op = u.dtype, u.op
  if op is Ops.ATOMIC and u.arg is Ops.ADD: return rounding_bound(u.src[1].dtype, _terms(u) - 1, 1.0)
  if not dt.is_float: return 0.0
  if op is Ops.CAST:
    s = u.src[0].dtype
    return 0.0 if s.is_float and widens_exactly(s, dt) else rounding_bound(dt, 1, 1.0)
  if op in APPROXIMATE_ULPS:
    lib = dtypes.float32 if dt.is_small_float else dt  # the small floats' math runs in float32, rounded back once
    return rounding_bound(lib, 2 * APPROXIMATE_ULPS[op], 1.0) + (rounding_bound(dt, 1, 1.0) if dt.is_small_float else 0.0)
  if op in ADDITIVE or op in COMPOUNDING: return rounding_bound(dt, 1, 1.0)
  if op is Ops.REDUCE and _combine_op(u) in (Ops.ADD, Ops.MUL): return rounding_bound(dt, _terms(u) - 1, 1.0)
  return 0.0


def _combine_op(u: UOp) -> Any: return u.arg[0] if isinstance(u.arg, tuple) else u.arg


def _terms(u: UOp) -> int:
  """How many terms a REDUCE (TENSOR: the first n axes; kernels: its ranges) or an ATOMIC (every iteration of the ranges
  its index and value read: an upper bound of the updates of one element) combines."""
  if u.op is Ops.REDUCE and isinstance(u.arg, tuple):
    shape = u.src[0].shape or ()
    return int(np.prod(shape[:u.arg[1]], dtype=np.int64))
  ranges = u.src[1:] if u.op is Ops.REDUCE else [r for s in u.src for r in s.toposort() if r.op is Ops.RANGE]
  n = 1
  for r in dict.fromkeys(ranges):
    if r.op is Ops.RANGE and r.src and r.src[0].op is Ops.CONST: n *= max(int(r.src[0].arg), 1)
  return n


def node_errors(root: UOp) -> dict[UOp, float]:
  """The relative error bound (module docstring) of every node under root, value-call bodies included (a call's result
  is its body's, computed on args that carry their own errors)."""
  err: dict[UOp, float] = {}
  for u in root.toposort():
    srcs = [err.get(s, 0.0) for s in u.src]
    if u.op is Ops.CALL: err[u] = srcs[0] + max(srcs[1:], default=0.0)
    elif u.op in COMPOUNDING or (u.op is Ops.REDUCE and _combine_op(u) is Ops.MUL):
      k = _terms(u) if u.op is Ops.REDUCE else 1
      err[u] = own_error(u) + k * sum(srcs)
    else: err[u] = own_error(u) + max(srcs, default=0.0)
    if not (u.dtype.is_float or u.op in GroupOp.Order or u.op in GroupOp.Call or u.op is Ops.END): err[u] = 0.0  # ints are exact
  return err


def output_errors(root: UOp) -> list[float]:
  """The relative error bound of each output of a SINK root (its sources, in order): what `compare` takes as errors."""
  return list(_output_errors(root))


@functools.lru_cache(maxsize=64)  # nodes are interned and immutable: a graph's bounds never change (the oracles ask per pass)
def _output_errors(root: UOp) -> tuple[float, ...]:
  err = node_errors(root)
  return tuple(err[s] for s in root.src) if root.op is Ops.SINK else (err[root],)


def scale_of(x: np.ndarray) -> float:
  """The largest finite magnitude of x at most FLOAT_LIMIT: what the rounding error of a float result scales with."""
  with np.errstate(invalid="ignore"): m = np.abs(np.asarray(x, np.float64))  # a signalling NaN widens quietly
  return float(np.max(m[np.isfinite(m) & (m <= FLOAT_LIMIT)], initial=0.0))


def floats_agree(x: Any, y: Any, rtol: float, atol: float) -> np.ndarray:
  """Elementwise: x and y agree (the module docstring): both NaN, the same infinity, or finite and
  |x - y| <= atol + rtol * |y|. Zeros of either sign agree."""
  with np.errstate(invalid="ignore", over="ignore"):
    a, b = np.asarray(x, np.float64), np.asarray(y, np.float64)
    close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= atol + rtol * np.abs(b))
  return close | (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))


def float_tolerance(dt: DType, error: float | None) -> float:
  """The relative tolerance of two results of float dt that each lie within `error` (relative) of the exact value;
  None: of unknown history."""
  return 2 * (default_error(dt) if error is None else error)


def _entry(errors: float | Sequence[float | None] | None, i: int | None) -> float | None:
  """The error bound of entry i of the errors compare takes (one for all, or one per entry); i None: of a single value."""
  if errors is None or isinstance(errors, (int, float)): return errors
  return errors[i] if i is not None and i < len(errors) else None


def compare(a: Any, b: Any, errors: float | Sequence[float | None] | None = None) -> str | None:
  """None when the results agree, else what differs. Lists compare entry by entry (None entries are effects). errors:
  the relative error bound of each entry (output_errors of the graph that computes them), or one for all; None: of
  unknown history."""
  if isinstance(a, list) or isinstance(b, list):
    if not (isinstance(a, list) and isinstance(b, list)): return f"a {type(a).__name__} against a {type(b).__name__}"
    if len(a) != len(b): return f"{len(a)} results against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
      if x is None or y is None: continue
      if (msg := compare(x, y, _entry(errors, i))) is not None: return f"output {i}: {msg}"
    return None
  x, y = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
  if x.dtype != y.dtype: return f"dtype {x.dtype} against {y.dtype}"
  if x.size != y.size: return f"{x.size} elements against {y.size}"
  if holds_floats(x):
    tol = float_tolerance(dtypes.from_np(x.dtype), _entry(errors, None))
    ok = floats_agree(x, y, tol, tol * (1.0 + scale_of(x)))
  else:
    ok = x == y
  if bool(np.all(ok)): return None
  i = int(np.flatnonzero(~ok)[0])
  return f"element {i}: {x[i]!r} against {y[i]!r} ({int((~ok).sum())} of {x.size} differ)"

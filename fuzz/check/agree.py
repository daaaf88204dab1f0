"""When two results agree: the one comparison of every parity oracle (reference against CPU and OpenCL, before against
after each pass and rule application, one lowering choice against another, tinyspec against a bridged compiler).

Values are compared as the spec defines them (docs/spec.md, "Comparing results"):

- ints and bools are equal or not;
- a NaN equals any NaN, whatever its payload and sign bit: the spec leaves a NaN's bits open;
- +inf equals only +inf and -inf only -inf;
- finite floats agree within a tolerance, relative to the dtype's precision (RTOL) and absolute relative to the largest
  magnitude an output holds up to FLOAT_LIMIT (a sum that cancels keeps the rounding error of its largest terms; a value
  past the limit was only passed on, never summed, by the UB screen);
- a zero equals a zero of either sign: the spec leaves the sign of a zero result open (it depends on operand order and on
  identities rewrites apply: MAX of -0.0 and +0.0 gives its second operand; -0.0 + 0.0 is +0.0). Where a sign becomes a value
  (RECIP of a zero is an infinity of its sign, a BITCAST shows the sign bit), the result is an infinity or an integer,
  which are compared exactly: the edge kernels put an uncomputed -0.0 there on purpose (the spec defines its sign), and
  the screens keep a computed zero away from those ops.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fuzz.generate.safety import FLOAT_LIMIT

RTOL: dict[str, float] = {"float32": 1e-4, "float64": 1e-7}


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


def compare(a: Any, b: Any) -> str | None:
  """None when the results agree, else what differs. Lists compare entry by entry (None entries are effects)."""
  if isinstance(a, list) or isinstance(b, list):
    if not (isinstance(a, list) and isinstance(b, list)): return f"a {type(a).__name__} against a {type(b).__name__}"
    if len(a) != len(b): return f"{len(a)} results against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
      if x is None or y is None: continue
      if (msg := compare(x, y)) is not None: return f"output {i}: {msg}"
    return None
  x, y = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
  if x.dtype != y.dtype: return f"dtype {x.dtype} against {y.dtype}"
  if x.size != y.size: return f"{x.size} elements against {y.size}"
  if x.dtype.kind == "f":
    rtol = RTOL.get(x.dtype.name, 1e-4)
    ok = floats_agree(x, y, rtol, rtol * (1.0 + scale_of(x)))
  else:
    ok = x == y
  if bool(np.all(ok)): return None
  i = int(np.flatnonzero(~ok)[0])
  return f"element {i}: {x[i]!r} against {y[i]!r} ({int((~ok).sum())} of {x.size} differ)"

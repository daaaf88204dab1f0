"""KERNEL's in-bounds proofs: every INDEX a LOAD, STORE or ATOMIC goes through lies within its storage where the access's gate holds."""
from __future__ import annotations

from tinyspec import smt
from tinyspec.dtype import dtypes
from tinyspec.ops.intervals import bounds_given, gate_bounds
from tinyspec.spec.base import Ctx, rule
from tinyspec.spec.shared import storage_base, wellformed
from tinyspec.uop import Ops, UOp


def index_parts(u: UOp) -> tuple[UOp, UOp, int, UOp | None] | None:
  idx = u.src[0]
  if idx.op is not Ops.INDEX or idx.arg is not None or wellformed(idx) or len(idx.src) != 2: return None
  base = storage_base(idx.src[0])
  e = idx.src[1]
  if base is None or wellformed(base) or wellformed(e) or not e.dtype.is_int: return None
  gate = u.src[2] if len(u.src) == 3 else None
  if gate is not None and (wellformed(gate) or gate.dtype is not dtypes.bool): gate = None
  return idx, e, base.arg.size, gate


def in_bounds(e: UOp, size: int, gate: UOp | None = None) -> smt.BoundsResult:
  """Whether 0 <= e < size where gate holds: the interval bounds first (narrowed by the gate's comparisons with
  constants), z3 when they cannot decide."""
  if 0 <= e.vmin and e.vmax < size: return smt.BoundsResult("proved")
  if gate is not None:
    if (known := gate_bounds(gate)) is None: return smt.BoundsResult("proved")  # never accessed
    lo, hi = bounds_given(e, known)
    if 0 <= lo and hi < size: return smt.BoundsResult("proved")
  return smt.prove_in_bounds(e, size, gate)


def bounds_example(res: smt.BoundsResult) -> str:
  return ", ".join(f"{k}={v}" for k, v in sorted(res.example.items())) if res.example else "some values"


def _bounds_result(u: UOp) -> tuple[smt.BoundsResult, UOp, UOp, int] | None:
  """The in-bounds verdict of the INDEX a LOAD/STORE uses, cached on the LOAD/STORE, and on the INDEX per gate: a STORE
  rebuilt over a new value (every step of a rewrite of the value it stores) asks the same question again."""
  c = u._cache
  if "spec:bounds" in c: return c["spec:bounds"]
  parts = index_parts(u)
  ret = None
  if parts is not None:
    idx, e, size, gate = parts
    key = ("spec:bounds", gate)
    if (res := idx._cache.get(key)) is None: res = idx._cache[key] = in_bounds(e, size, gate)
    ret = (res, idx, e, size)
  c["spec:bounds"] = ret
  return ret


@rule("kernel.index_bounds", "Every INDEX is proven within [0, size) of its storage wherever the gate of the LOAD, STORE or ATOMIC using it is true "
      "(interval bounds first, z3 when they cannot decide).")
def index_bounds(u: UOp, cx: Ctx) -> str | None:
  r = _bounds_result(u)
  if r is None or r[0].status != "violated": return None
  res, idx, e, size = r
  ex = bounds_example(res)
  got = f" gives index {res.value}" if res.value is not None else " goes out of bounds"
  gated = " where its gate is true" if len(u.src) == 3 else ""
  return (f"{u.op.name} through an INDEX that can leave [0, {size}): {ex}{got}{gated}; at {cx.sname} every INDEX is in bounds "
          f"under the gate of the {u.op.name} using it")


@rule("kernel.index_bounds_timeout", "When z3 cannot decide an in-bounds proof within smt.TIMEOUT_MS, the INDEX is unproven: a violation.")
def index_bounds_timeout(u: UOp, cx: Ctx) -> str | None:
  r = _bounds_result(u)
  if r is None or r[0].status != "unknown": return None
  return (f"the proof that the INDEX of this {u.op.name} stays in [0, {r[3]}) timed out after {smt.TIMEOUT_MS} ms (z3 gave unknown); "
          f"at {cx.sname} every INDEX must be proven in bounds")

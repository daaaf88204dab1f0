"""C's signed-overflow rule as a condition, for proving a compiler's rules under its own policy.

tinyspec's fixed-width integers wrap (every backend builds with -fwrapv), so `tinyspec prove` compares the two sides of
a rewrite with wrap-around everywhere. A compiler that emits C without -fwrapv (tinygrad) treats signed overflow as
undefined, and its rules may assume it never happens. `signed_overflow_free(root)` is a bool expression over root's
leaves that holds exactly where no signed fixed-width ADD, SUB, MUL, NEG or SHL of root leaves its dtype's range (and
no SHL count is outside the width), and no `index` value leaves int64: where root is defined in C. A rewrite that
changes a value only where this is false is a policy difference (it relies on overflow being undefined), not a wrong
answer on a defined input. `index_casts_fit` is the same for unbounded values committed to a fixed width (tinygrad's
weak ints).
"""
from __future__ import annotations

from tinyspec.dtype import DType, dtypes
from tinyspec.ops.scalar import INT_MEANING, shift_bits
from tinyspec.prove.prover import evaluate_scalar
from tinyspec.uop import Ops, UOp

OVERFLOW_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.SHL)


def _between(x: UOp, lo: int, hi: int) -> UOp:
  """lo <= x <= hi for an index expression x."""
  out_lo = x.alu(Ops.CMPLT, UOp.const(dtypes.index, lo))
  out_hi = UOp.const(dtypes.index, hi).alu(Ops.CMPLT, x)
  return out_lo.alu(Ops.OR, out_hi).alu(Ops.XOR, UOp.const(dtypes.bool, True))


def overflow_nodes(root: UOp) -> list[UOp]:
  """The nodes of root that can overflow in C: signed fixed-width ADD, SUB, MUL, NEG and SHL, and those of `index`,
  which a lowered program holds in int64 at most (its range here is int64's)."""
  return [u for u in root.toposort() if u.op in OVERFLOW_OPS and isinstance(u.dtype, DType) and u.dtype.kind in "ix"]


def shift_counts_defined(root: UOp) -> UOp | None:
  """A bool expression: every SHL and SHR count of root is in [0, width) (64 for index), where C defines the shift;
  None when root has no shift."""
  conds = [_between(u.src[1].cast(dtypes.index), 0, shift_bits(u.dtype) - 1) for u in root.toposort()
           if u.op in (Ops.SHL, Ops.SHR) and isinstance(u.dtype, DType) and u.dtype.kind in "iux"]
  if not conds: return None
  ok = conds[0]
  for c in conds[1:]: ok = ok.alu(Ops.AND, c)
  return ok


def signed_overflow_free(root: UOp) -> UOp:
  """A bool expression: no node of overflow_nodes(root) leaves its dtype's range, computed exactly in `index`."""
  conds: list[UOp] = []
  for u in overflow_nodes(root):
    dt = u.dtype
    ex = [s.cast(dtypes.index) for s in u.src]
    if u.op is Ops.SHL:
      conds.append(_between(ex[1], 0, dt.bits - 1))
      exact = UOp(Ops.SHL, dtypes.index, (ex[0], ex[1]))
    else: exact = UOp(u.op, dtypes.index, tuple(ex))
    conds.append(_between(exact, int(dt.min), int(dt.max)))
  ok = UOp.const(dtypes.bool, True)
  for c in conds: ok = ok.alu(Ops.AND, c)
  return ok


def index_casts_fit(root: UOp) -> UOp | None:
  """A bool expression: every CAST of root from `index` to a fixed-width integer keeps its value (an unbounded value
  committed to a width it fits; tinygrad's weak ints commit so); None when root has no such CAST."""
  conds = [_between(u.src[0], int(u.dtype.min), int(u.dtype.max)) for u in root.toposort()
           if u.op is Ops.CAST and u.src and u.src[0].dtype is dtypes.index and isinstance(u.dtype, DType) and u.dtype.kind in "iu"]
  if not conds: return None
  ok = conds[0]
  for c in conds[1:]: ok = ok.alu(Ops.AND, c)
  return ok


def strictly_defined(root: UOp) -> UOp | None:
  """signed_overflow_free and index_casts_fit together (None when root has neither an overflow node nor such a CAST):
  where root computes the same value with and without wrap-around."""
  parts = [c for c in (signed_overflow_free(root) if overflow_nodes(root) else None, index_casts_fit(root)) if c is not None]
  if not parts: return None
  return parts[0] if len(parts) == 1 else parts[0].alu(Ops.AND, parts[1])


def overflows_at(root: UOp) -> list[str]:
  """For a constant expression: each node that overflows, as 'OP dtype: exact value' (empty when none does)."""
  out = []
  for u in overflow_nodes(root):
    try: vals = [int(evaluate_scalar(s)) for s in u.src]
    except Exception: continue
    exact = INT_MEANING[u.op](u.dtype, *vals) if u.op is not Ops.SHL else vals[0] << vals[1]
    if not u.dtype.min <= exact <= u.dtype.max: out.append(f"{u.op.name} {u.dtype.name}: {vals} -> {exact}")
  for u in root.toposort():
    if u.op is Ops.CAST and u.src and u.src[0].dtype is dtypes.index and isinstance(u.dtype, DType) and u.dtype.kind in "iu":
      try: v = int(evaluate_scalar(u.src[0]))
      except Exception: continue
      if not u.dtype.min <= v <= u.dtype.max: out.append(f"index value {v} committed to {u.dtype.name}")
  return out

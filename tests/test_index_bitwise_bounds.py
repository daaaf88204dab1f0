"""The KERNEL bounds proof decides bitwise index math exactly: AND, OR, XOR, SHL and SHR on `index` (and int32) under
gates, proven where every gated value is in bounds, refuted with a counterexample that really leaves the buffer."""
from __future__ import annotations

import re

import pytest

from tinyspec import Ops, Stage, UOp, check, dtypes, smt

pytestmark = pytest.mark.spec
F32 = dtypes.float32


def _c(dt, v): return UOp.const(dt, v)


def _kernel(dt, bound: int, size: int, idx_fn, gate_fn):
  """A kernel storing 1.0 at idx_fn(r) of a buffer of `size` elements for r in [0, bound) where gate_fn(r) holds."""
  r = UOp.range(bound, 0).cast(dt) if dt is not dtypes.index else UOp.range(bound, 0)
  rr = r.src[0] if r.op is Ops.CAST else r
  idx = idx_fn(r, lambda v: _c(dt, v))
  if dt is not dtypes.index: idx = idx.cast(dtypes.index)
  st = UOp.param(0, F32, size).index(idx).store(_c(F32, 1.0), gate_fn(r, lambda v: _c(dt, v)))
  return UOp(Ops.SINK, src=(st.end(rr),)), idx, gate_fn(r, lambda v: _c(dt, v))


# (name, bound, size, index expression, gate, the same index and gate in plain Python)
PROVEN = [
  ("and_mask", 32, 16, lambda r, c: r & c(-4), lambda r, c: r < c(16), lambda r: r & -4, lambda r: r < 16),
  ("or_low_bits", 32, 16, lambda r, c: r | c(3), lambda r, c: r < c(12), lambda r: r | 3, lambda r: r < 12),
  ("xor_high_bit", 32, 16, lambda r, c: r.alu(Ops.XOR, c(8)), lambda r, c: r < c(8), lambda r: r ^ 8, lambda r: r < 8),
  ("shl_by_one", 32, 16, lambda r, c: r.alu(Ops.SHL, c(1)), lambda r, c: r < c(8), lambda r: r << 1, lambda r: r < 8),
  ("shr_of_negative", 32, 16, lambda r, c: (r - c(8)).alu(Ops.SHR, c(1)), lambda r, c: c(7) < r, lambda r: (r - 8) >> 1, lambda r: 7 < r),
  ("and_or_mix", 64, 16, lambda r, c: (r & c(12)) | c(3), lambda r, c: r < c(64), lambda r: (r & 12) | 3, lambda r: r < 64),
]
REFUTED = [
  ("and_keeps_bit_4", 32, 16, lambda r, c: r & c(28), lambda r, c: r < c(20), lambda r: r & 28, lambda r: r < 20),
  ("or_sets_bit_3", 32, 12, lambda r, c: r | c(8), lambda r, c: r < c(16), lambda r: r | 8, lambda r: r < 16),
  ("xor_all_ones", 32, 16, lambda r, c: r.alu(Ops.XOR, c(-1)), lambda r, c: r < c(16), lambda r: r ^ -1, lambda r: r < 16),
  ("shl_too_far", 32, 16, lambda r, c: r.alu(Ops.SHL, c(2)), lambda r, c: r < c(8), lambda r: r << 2, lambda r: r < 8),
  ("shr_of_negative", 32, 16, lambda r, c: (r - c(20)).alu(Ops.SHR, c(1)), lambda r, c: r < c(16), lambda r: (r - 20) >> 1, lambda r: r < 16),
]


@pytest.mark.parametrize("dt", [dtypes.index, dtypes.int32], ids=lambda d: d.name)
@pytest.mark.parametrize("case", PROVEN, ids=lambda c: c[0])
def test_bitwise_index_in_bounds_is_proven(case, dt):
  name, bound, size, idx_fn, gate_fn, py_idx, py_gate = case
  # the claim itself, checked by enumeration in plain Python
  assert all(0 <= py_idx(r) < size for r in range(bound) if py_gate(r)), name
  root, _, _ = _kernel(dt, bound, size, idx_fn, gate_fn)
  assert check(root, Stage.KERNEL) == []


@pytest.mark.parametrize("dt", [dtypes.index, dtypes.int32], ids=lambda d: d.name)
@pytest.mark.parametrize("case", REFUTED, ids=lambda c: c[0])
def test_bitwise_index_out_of_bounds_is_refuted_with_a_real_counterexample(case, dt):
  name, bound, size, idx_fn, gate_fn, py_idx, py_gate = case
  root, idx, gate = _kernel(dt, bound, size, idx_fn, gate_fn)
  vs = check(root, Stage.KERNEL)
  assert [v.rule for v in vs] == ["kernel.index_bounds"], [str(v) for v in vs]
  # the counterexample the message gives is one: within the loop, the gate holds there, and Python's own operators put
  # the index where the message says, outside the buffer
  m = re.search(r"r0=(-?\d+) gives index (-?\d+)", vs[0].message)
  assert m is not None, vs[0].message
  r, got = int(m.group(1)), int(m.group(2))
  assert 0 <= r < bound and py_gate(r) and py_idx(r) == got and not 0 <= got < size, (name, vs[0].message)
  res = smt.prove_in_bounds(idx, size, gate)
  assert res.status == "violated" and not 0 <= py_idx(res.example["r0"]) < size

"""ATOMIC: its meaning (tinyspec.ops.atomic), its KERNEL rules, the evaluator's updates, and its way through the kernel passes."""
from __future__ import annotations

import numpy as np
import pytest

from builders import assert_breaks_exactly
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.ops import atomic, scalar
from tinyspec.semantics import kernel as kernel_eval
from tinyspec.semantics.graph import evaluate
from tinyspec.semantics.kernel import evaluate_kernel
from tinyspec.uop import AddrSpace, AxisType, Ops, RangeArg, UOp, kernel_calls, walk

IDX = dtypes.index


def grange(n: int, axis: int = 0, kind: AxisType = AxisType.GLOBAL) -> UOp:
  return UOp(Ops.RANGE, IDX, (UOp.const(IDX, n),), RangeArg(axis, kind))


def scatter_kernel(dt, op: Ops, n: int, bins: int, kind: AxisType = AxisType.GLOBAL, gated: bool = True) -> UOp:
  """for r in range(n): if 0 <= idx[r] < bins: ATOMIC(op, out[idx[r]], src[r]); out is slot 0, idx slot 1, src slot 2."""
  out, ix, src = UOp.param(0, dt, bins), UOp.param(1, dtypes.int32, n), UOp.param(2, dt, n)
  r = grange(n, 0, kind)
  i = ix.index(r).load().cast(IDX)
  gate = (i < bins) & (UOp.const(IDX, -1) < i)
  return UOp(Ops.SINK, src=(out.index(i).atomic(op, src.index(r).load(), *((gate,) if gated else ())).end(r),))


def data(dt, n: int, bins: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  rng = np.random.default_rng(seed)
  idx = rng.integers(-2, bins + 2, n).astype(np.int32)  # some indices fall outside: the gate skips them
  vals = (rng.standard_normal(n) * 100).astype(dt.np) if dt.is_float else rng.integers(0, 1 << 20, n).astype(dt.np)
  return np.arange(bins).astype(dt.np), idx, vals


def expected(op: Ops, dt, out: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
  """The updates applied one value at a time with the elementwise registry's scalar meaning, in iteration order."""
  res = [v.item() for v in out]
  for i, v in zip(idx.tolist(), vals.tolist()):
    if 0 <= i < len(res): res[i] = scalar.run(op, dt, res[i], v)
  return np.array(res, dtype=dt.np)


# ---- the meaning ----

@pytest.mark.parametrize("dt", atomic.ATOMIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", atomic.ATOMIC_OPS, ids=lambda o: o.name)
def test_ufunc_at_is_the_registry_op_applied_in_turn(op, dt):
  # edge values: the wrap points of ints, inf and NaN of floats
  edges = [0, 1, dt.max, dt.min, dt.max - 1] if not dt.is_float else [0.0, -0.0, 1.5, float("inf"), -float("inf"), float("nan"), 3e38]
  vals = np.array(edges * 3, dtype=dt.np)
  idx = np.array([k % 3 for k in range(len(vals))], dtype=np.int64)
  out = np.array([dt.max if not dt.is_float else 1.0, 0, 7], dtype=dt.np)
  want = expected(op, dt, out, idx, vals)
  atomic.apply(op, dt, out, (idx,), vals)
  np.testing.assert_array_equal(out, want)  # NaN equals NaN here


def test_atomic_error_names_what_is_wrong():
  assert atomic.atomic_error(Ops.ADD, dtypes.float32) is None
  assert "MUL" in atomic.atomic_error(Ops.MUL, dtypes.float32)
  assert "uint8" in atomic.atomic_error(Ops.ADD, dtypes.uint8)
  assert "bool" in atomic.atomic_error(Ops.MAX, dtypes.bool)


def test_sum_tolerance_bounds_every_order_of_a_float_sum():
  rng = np.random.default_rng(1)
  terms = (rng.standard_normal(2000) * 10 ** rng.uniform(-3, 3, 2000)).astype(np.float32)
  exact = float(np.sum(terms.astype(np.float64)))
  tol = atomic.sum_tolerance(terms, dtypes.float32)
  sums = []
  for _ in range(20):
    acc = np.float32(0)
    for t in rng.permutation(terms): acc = np.float32(acc + t)
    sums.append(float(acc))
    assert abs(float(acc) - exact) <= tol
  assert len(set(sums)) > 1  # orders really differ: the tolerance is needed
  assert atomic.sum_tolerance(terms.astype(np.int32), dtypes.int32) == 0.0


# ---- the KERNEL rules ----

def test_a_scatter_with_colliding_data_indices_is_legal():
  for dt in atomic.ATOMIC_DTYPES:
    for op in atomic.ATOMIC_OPS:
      assert check(scatter_kernel(dt, op, 64, 5), Stage.KERNEL) == []


def test_an_ungated_data_index_is_not_proven_in_bounds():
  assert_breaks_exactly(scatter_kernel(dtypes.float32, Ops.ADD, 64, 5, gated=False), Stage.KERNEL, {"kernel.index_bounds"})


def test_atomic_updates_global_storage_only():
  r = grange(8)
  acc = UOp.buffer(dtypes.float32, 4, addrspace=AddrSpace.REG)
  k = UOp(Ops.SINK, src=(acc.index(r % 4).atomic(Ops.ADD, UOp.const(dtypes.float32, 1.0)).end(r),))
  vs = assert_breaks_exactly(k, Stage.KERNEL, {"kernel.atomic_target"})
  assert "REG" in vs[0].message
  loc = UOp.param(0, dtypes.float32, 4, addrspace=AddrSpace.LOCAL)
  assert_breaks_exactly(UOp(Ops.SINK, src=(loc.index(r % 4).atomic(Ops.ADD, UOp.const(dtypes.float32, 1.0)).end(r),)), Stage.KERNEL,
                        {"kernel.atomic_target"})


def test_atomic_dtype_and_op():
  r = grange(8)
  u8 = UOp.param(0, dtypes.uint8, 8)
  vs = assert_breaks_exactly(UOp(Ops.SINK, src=(u8.index(r).atomic(Ops.ADD, UOp.const(dtypes.uint8, 1)).end(r),)), Stage.KERNEL,
                             {"kernel.atomic_dtype"})
  assert "uint8" in vs[0].message
  f = UOp.param(0, dtypes.float32, 8)
  assert_breaks_exactly(UOp(Ops.SINK, src=(f.index(r).atomic(Ops.ADD, UOp.const(dtypes.float64, 1.0)).end(r),)), Stage.KERNEL,
                        {"kernel.atomic_dtype"})
  vs = assert_breaks_exactly(UOp(Ops.SINK, src=(f.index(r).atomic(Ops.MUL, UOp.const(dtypes.float32, 1.0)).end(r),)), Stage.KERNEL,
                             {"node.arg"})
  assert "ADD or MAX" in vs[0].message


def test_atomic_ranges_are_closed():
  r = grange(8)
  f = UOp.param(0, dtypes.float32, 4)
  vs = assert_breaks_exactly(UOp(Ops.SINK, src=(f.index(r % 4).atomic(Ops.ADD, UOp.const(dtypes.float32, 1.0)),)), Stage.KERNEL,
                             {"kernel.range_closed"})
  assert "ATOMIC depends on RANGE axis 0" in vs[0].message


def test_atomics_of_one_op_may_meet_across_threads_others_may_not():
  r = grange(8)
  f = UOp.param(0, dtypes.float32, 4)
  one = UOp.const(dtypes.float32, 1.0)
  add, mx = f.index(r % 4).atomic(Ops.ADD, one), f.index(r % 4).atomic(Ops.MAX, one)
  assert check(UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(add, f.index((r + 1) % 4).atomic(Ops.ADD, one))).end(r),)), Stage.KERNEL) == []
  vs = assert_breaks_exactly(UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(add, mx)).end(r),)), Stage.KERNEL, {"kernel.thread_independent"})
  assert "updates (ADD)" in vs[0].message and "updates (MAX)" in vs[0].message
  # an atomic and a load of the element by another thread: the load sees some of the updates, in no fixed order
  rd = f.index(r % 4).atomic(Ops.ADD, f.index((r + 1) % 4).load())
  vs = assert_breaks_exactly(UOp(Ops.SINK, src=(rd.end(r),)), Stage.KERNEL, {"kernel.thread_independent"})
  assert "loads it" in vs[0].message
  st = f.index(r % 4).store(one)
  assert_breaks_exactly(UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(add, st)).end(r),)), Stage.KERNEL, {"kernel.thread_independent"})
  # in a sequential loop the same read is ordered, so it is legal
  lr = grange(8, 0, AxisType.LOOP)
  seq = f.index(lr % 4).atomic(Ops.ADD, f.index((lr + 1) % 4).load())
  assert check(UOp(Ops.SINK, src=(seq.end(lr),)), Stage.KERNEL) == []


def test_atomic_is_a_kernel_op_only():
  b = UOp.buffer(dtypes.float32, 4)
  t = UOp(Ops.SINK, src=(b.index(UOp.const(IDX, 0)).atomic(Ops.ADD, UOp.const(dtypes.float32, 1.0)),))
  assert "tensor.no_range_ops" in {v.rule for v in check(t, Stage.TENSOR)}
  malformed = UOp(Ops.ATOMIC, dtypes.float32, (b.index(UOp.const(IDX, 0)), UOp.const(dtypes.float32, 1.0)), Ops.ADD)
  assert "node.dtype_void" in {v.rule for v in check(UOp(Ops.SINK, src=(malformed,)), Stage.KERNEL)}


# ---- the evaluator ----

@pytest.mark.parametrize("dt", atomic.ATOMIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", atomic.ATOMIC_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("kind", [AxisType.GLOBAL, AxisType.LOOP], ids=lambda k: k.name)
def test_evaluator_applies_every_update(op, dt, kind):
  out, idx, vals = data(dt, 600, 7)
  want = expected(op, dt, out, idx, vals)
  evaluate_kernel(scatter_kernel(dt, op, 600, 7, kind), [out, idx, vals])
  # run in order or vectorized, the evaluator applies the updates in iteration order: a float sum is the sequential one
  np.testing.assert_array_equal(out, want)


def test_colliding_atomics_run_vectorized(monkeypatch):
  # updates of one op commute, so the loop runs as one numpy step rather than one step per iteration
  calls = []
  orig = kernel_eval.KernelEval._atomic
  monkeypatch.setitem(kernel_eval._HANDLERS, Ops.ATOMIC, lambda self, u: calls.append(u) or orig(self, u))
  out, idx, vals = data(dtypes.int64, 5000, 3)
  want = expected(Ops.ADD, dtypes.int64, out, idx, vals)
  evaluate_kernel(scatter_kernel(dtypes.int64, Ops.ADD, 5000, 3), [out, idx, vals])
  np.testing.assert_array_equal(out, want)
  assert len(calls) == 1


def test_an_atomic_read_back_in_a_loop_runs_in_order(monkeypatch):
  # out[r % 4] += out[(r + 1) % 4] reads what earlier iterations updated: a sequential loop, evaluated in order
  lr = grange(64, 0, AxisType.LOOP)
  f = UOp.param(0, dtypes.int64, 4)
  k = UOp(Ops.SINK, src=(f.index(lr % 4).atomic(Ops.ADD, f.index((lr + 1) % 4).load()).end(lr),))
  got = np.array([1, 2, 3, 4], dtype=np.int64)
  evaluate_kernel(k, [got])
  want = [1, 2, 3, 4]
  for r in range(64): want[r % 4] = scalar.run(Ops.ADD, dtypes.int64, want[r % 4], want[(r + 1) % 4])
  np.testing.assert_array_equal(got, np.array(want, dtype=np.int64))


def test_threads_may_update_one_element():
  # SPECIAL threads that conflict are an EvalError; threads that meet only through atomics of one op are not
  s = UOp(Ops.SPECIAL, IDX, (UOp.const(IDX, 256),), "gidx0")
  f, src = UOp.param(0, dtypes.int32, 4), UOp.param(1, dtypes.int32, 256)
  k = UOp(Ops.SINK, src=(f.index(s % 4).atomic(Ops.ADD, src.index(s).load()),))
  assert check(k, Stage.KERNEL) == []
  got, vals = np.zeros(4, np.int32), np.arange(256, dtype=np.int32)
  evaluate_kernel(k, [got, vals])
  np.testing.assert_array_equal(got, [sum(range(j, 256, 4)) for j in range(4)])
  plain = UOp(Ops.SINK, src=(f.index(s % 4).store(src.index(s).load()),))
  with pytest.raises(kernel_eval.EvalError, match="threads write"):
    evaluate_kernel(plain, [got, vals])


# ---- through the kernel passes ----

def test_scatter_kernel_through_the_kernel_passes():
  n, bins = 300, 6
  body = scatter_kernel(dtypes.float32, Ops.ADD, n, bins, kind=AxisType.LOOP)
  out, ix, src = UOp.buffer(dtypes.float32, bins), UOp.buffer(dtypes.int32, n), UOp.buffer(dtypes.float32, n)
  g = UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, ix, src), arg="scatter")),))
  o0, idx, vals = data(dtypes.float32, n, bins)
  inputs = {out.arg.id: o0, ix.arg.id: idx, src.arg.id: vals}
  want = expected(Ops.ADD, dtypes.float32, o0, idx, vals)
  stages = lower(g, passes=[p for p in PASSES if p.name in ("simplify", "optimize", "lower_reduce", "linearize")])
  for name, root in stages.items():  # every pass's output passed its stage's spec (lower checks); each means the same
    got = evaluate(root, {k: v.copy() for k, v in inputs.items()})[0]
    terms = np.concatenate([[o0[j]] + list(vals[idx == j]) for j in range(bins)])
    np.testing.assert_allclose(got, want, rtol=0, atol=atomic.sum_tolerance(terms, dtypes.float32), err_msg=name)
  prg = kernel_calls(stages["linearize"])[0].src[0]
  ops = [u.op for u in prg.src[1].src]
  assert Ops.ATOMIC in ops
  r = next(u for u in prg.src[1].src if u.op is Ops.RANGE)
  assert r.arg.kind is AxisType.GLOBAL  # optimize sees that the iterations meet only through atomics: they may be threads


def test_atomic_kernel_survives_the_python_round_trip():
  from tinyspec.pyread import read_graph
  from tinyspec.pyrender import render_module
  k = scatter_kernel(dtypes.float32, Ops.MAX, 10, 3)
  assert read_graph(render_module(k)) is k


def test_an_atomic_keeps_the_order_its_folded_value_carried():
  # out[0] = 5, then out[0] += (out[0] & 0) + 3: the load that ordered the update after the store folds away, so simplify
  # pins the order on the update's target (lower.ordering), as it does for a STORE; the result stays 8, never 5
  from tinyspec.lower.simplify import SIMPLIFY
  out = UOp.param(0, dtypes.int32, 1)
  zero = UOp.const(IDX, 0)
  st = out.index(zero).store(UOp.const(dtypes.int32, 5))
  v = (out.after(st).index(zero).load() & UOp.const(dtypes.int32, 0)) + UOp.const(dtypes.int32, 3)
  body = UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(st, out.index(zero).atomic(Ops.ADD, v))),))  # ordered by v's load alone
  new = lower(body, passes=[SIMPLIFY])["simplify"]
  upd = next(u for u in walk((new,)) if u.op is Ops.ATOMIC)
  assert upd.src[1].op is Ops.CONST and upd.src[0].src[0].op is Ops.AFTER and st in upd.src[0].src[0].src
  got = np.zeros(1, np.int32)
  evaluate_kernel(new, [got])
  assert got[0] == 8


def _loops_over_two_counters() -> tuple[UOp, UOp, UOp]:
  """r < 13 and d < 2, LOOP ranges, and a uint64 PARAM of two counters, out[d]."""
  return grange(13, 0, AxisType.LOOP), grange(2, 1, AxisType.LOOP), UOp.param(0, dtypes.uint64, 2)


def test_an_atomic_runs_once_per_iteration_of_the_loops_it_is_placed_in():
  # out[d] += 1 for r < 13, d < 2: the update's index does not use r, its target is placed in r (AFTER(out, r)); run
  # vectorized or in order, every one of the 13 * 2 runs adds
  r, d, out = _loops_over_two_counters()
  upd = out.after(r).index(d).atomic(Ops.ADD, UOp.const(dtypes.uint64, 1))
  k = UOp(Ops.SINK, src=(upd.end(r, d),))
  assert check(k, Stage.KERNEL) == []
  got = np.zeros(2, np.uint64)
  evaluate_kernel(k, [got])
  np.testing.assert_array_equal(got, [13, 13])
  s = UOp(Ops.SPECIAL, IDX, (UOp.const(IDX, 64),), "gidx0")
  per_thread = UOp(Ops.SINK, src=(UOp.param(0, dtypes.int32, 1).after(s).index(UOp.const(IDX, 0)).atomic(Ops.ADD, UOp.const(dtypes.int32, 2)),))
  one = np.zeros(1, np.int32)
  evaluate_kernel(per_thread, [one])
  assert one[0] == 128


def test_an_atomic_depends_on_every_range_it_runs_in():
  # without the placement the update would run once for all of r where linearize puts it: the spec rejects the form
  r, d, out = _loops_over_two_counters()
  k = UOp(Ops.SINK, src=(out.index(d).atomic(Ops.ADD, UOp.const(dtypes.uint64, 1)).end(r, d),))
  vs = assert_breaks_exactly(k, Stage.KERNEL, {"kernel.atomic_ranges"})
  assert "axis 0" in vs[0].message

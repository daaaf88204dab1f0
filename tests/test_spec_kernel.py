"""KERNEL stage: kernel bodies in the forms of docs/ir.md pass; each illegal one breaks exactly the rules named."""
from __future__ import annotations

import pytest
from test_spec_builders import KERNELS, VOID, buf, c, f32, group, i32, ic, k_acc, k_add, k_reduce, kgraph_of, rng, sink

from tinyspec import Ops, Stage, UOp, check, dtypes, smt
from tinyspec.uop import AddrSpace

pytestmark = pytest.mark.spec
K = Stage.KERNEL
I = dtypes.index


def p(slot=0, n=4, dt=f32) -> UOp: return UOp.param(slot, dt, n)


def store_loop(index_fn, n=4, bound=4, gate=None) -> UOp:
  r = rng(bound, 0)
  st = p(0, n).index(index_fn(r)).store(c(1.0), *([gate(r)] if gate else []))
  return sink(st.end(r))


LEGAL = {
  **KERNELS,
  "kernel_graph_at_kernel": lambda: kgraph_of(k_reduce()),
  "empty_kernel": lambda: sink(),
  "local_buffer": lambda: (lambda b, r: sink(p().index(r).store(b.after(b.index(r).store(c(2.0))).index(r).load()).end(r)))(
    buf(4, addrspace=AddrSpace.LOCAL), rng(4, 0)),
  "max_reduce": lambda: (lambda r0, rr: sink(p(0, 2).index(r0).store(UOp(Ops.REDUCE, f32, (p(1, 8).index(r0 * ic(4) + rr).load(), rr), Ops.MAX))
                                             .end(r0)))(rng(2, 0), rng(4, 1)),
  "loaded_index": lambda: (lambda r: sink(p().index(r).store(p(1, 8).index(p(2, 4, dtypes.int32).index(r).load().cast(I).maximum(ic(0)) % ic(8))
                                                              .load()).end(r)))(rng(4, 0)),
}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal(name):
  assert check(LEGAL[name](), K) == []


def two_stores_one_unclosed():
  r = rng(4, 0)
  st = p().index(r).store(c(1.0))
  return sink(st.end(r), p(1).index(r).store(c(2.0)))


ILLEGAL = {
  "oob_z3_refutes": (lambda: store_loop(lambda r: r * ic(2) - r + ic(1)), {"kernel.index_bounds"}),
  "oob_plain": (lambda: store_loop(lambda r: r + ic(1)), {"kernel.index_bounds"}),
  "oob_gate_too_wide": (lambda: store_loop(lambda r: r - ic(1), gate=lambda r: ic(-1) < r), {"kernel.index_bounds"}),
  "oob_negative": (lambda: store_loop(lambda r: r - ic(1)), {"kernel.index_bounds"}),
  "oob_load": (lambda: (lambda r: sink(p().index(r).store(p(1, 3).index(r).load()).end(r)))(rng(4, 0)), {"kernel.index_bounds"}),
  "movement_in_body": (lambda: (lambda r: sink(p().index(r).store(p(1).reshape((2, 2)).index(r).load()).end(r)))(rng(4, 0)),
                       {"kernel.no_movement", "kernel.index_storage"}),
  "range_not_closed": (lambda: (lambda r: sink(p().index(r).store(c(1.0))))(rng(4, 0)), {"kernel.range_closed"}),
  "range_closed_elsewhere": (two_stores_one_unclosed, {"kernel.range_closed"}),
  "end_closes_wrong_range": (lambda: (lambda r0, r1: sink(p(0, 16).index(r0 * ic(4) + r1).store(c(1.0)).end(r0)))(rng(4, 0), rng(4, 1)),
                             {"kernel.range_closed"}),
  "storage_as_value": (lambda: (lambda r: sink(p().index(r).store(p(1)).end(r)))(rng(4, 0)), {"kernel.scalar_values"}),
  "value_in_sink": (lambda: sink(p().index(ic(0)).load()), {"kernel.sink_effects"}),
  "value_in_group": (lambda: sink(group(p().index(ic(0)).store(c(1.0)), c(2.0))), {"group.effects"}),
  "global_buffer": (lambda: sink(buf(4).index(ic(0)).store(c(1.0))), {"kernel.buffer_local"}),
  "float_index": (lambda: sink(UOp(Ops.INDEX, f32, (p(), c(1.0))).store(c(1.0))), {"kernel.index_int"}),
  "store_not_through_index": (lambda: sink(p().store(c(1.0))), {"kernel.store_target"}),
  "load_not_through_index": (lambda: sink(p().index(ic(0)).store(UOp(Ops.LOAD, f32, (p(1),)))), {"kernel.load_index"}),
  "load_dtype": (lambda: sink(p().index(ic(0)).store(UOp(Ops.LOAD, i32, (p(1).index(ic(0)),)).cast(f32))), {"kernel.load_dtype"}),
  "gate_not_bool": (lambda: sink(p().index(ic(0)).store(c(1.0), ic(1))), {"kernel.gate_bool"}),
  "tensor_reduce": (lambda: sink(p().index(ic(0)).store(c(1.0).reduce(Ops.ADD, 0))), {"kernel.reduce_form"}),
  "contiguous_in_body": (lambda: sink(p().index(ic(0)).store(UOp(Ops.CONTIGUOUS, f32, (c(1.0),)))), {"kernel.op_allowed"}),
  "duplicate_axis": (lambda: (lambda r0, r1: sink(p(0, 16).index(r0 * ic(4) + r1).store(c(1.0)).end(r1, r0)))(rng(4, 0), rng(3, 0)),
                     {"kernel.range_axis_unique"}),
  "end_around_value": (lambda: (lambda r: sink(UOp(Ops.END, VOID, (p().index(r).load(), r))))(rng(4, 0)),
                       {"kernel.end_form"}),
  "after_on_alu": (lambda: sink(p().index(ic(0)).store(UOp(Ops.AFTER, f32, (c(1.0) + c(1.0), p(1).index(ic(0)).store(c(1.0)))))),
                   {"kernel.after_storage"}),
  "after_dep_value": (lambda: sink(p().after(c(1.0)).index(ic(0)).store(c(1.0))), {"kernel.after_deps"}),
  "store_dtype": (lambda: sink(p().index(ic(0)).store(c(1, i32))), {"kernel.store_dtype"}),
  "root_not_sink": (lambda: p().index(ic(0)).store(c(1.0)), {"kernel.root_sink"}),
  "float_range": (lambda: sink(p().index(ic(0)).store(c(1.0)).end(UOp(Ops.RANGE, f32, (c(4.0),), rng(4, 0).arg))),
                  {"kernel.range_bound"}),
  "alu_dtype_mismatch": (lambda: sink(p().index(ic(0)).store(UOp(Ops.ADD, f32, (c(1.0), c(1, i32))))), {"alu.dtype_match"}),
  "index_dtype": (lambda: sink(UOp(Ops.INDEX, i32, (p(), ic(0))).store(c(1, i32))), {"kernel.index_dtype"}),
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal(name):
  build, rules = ILLEGAL[name]
  vs = check(build(), K)
  assert {v.rule for v in vs} == rules, [str(v) for v in vs]
  assert all("; " in v.message for v in vs)


def test_interval_bounds_cannot_decide_but_z3_proves():
  r = rng(4, 0)
  e = r * ic(2) - r
  assert not (0 <= e.vmin and e.vmax < 4), "the interval bounds alone must not decide this one"
  assert check(store_loop(lambda r: r * ic(2) - r), K) == []


def test_z3_refutation_names_a_counterexample():
  r = rng(4, 0)
  e = r * ic(2) - r + ic(1)
  assert e.vmin < 0 <= e.vmax, "the interval bounds can neither prove nor refute this one"
  (v,) = check(store_loop(lambda r: r * ic(2) - r + ic(1)), K)
  assert "r0=3 gives index 4" in v.message and "[0, 4)" in v.message


def test_in_bounds_only_thanks_to_gate():
  gated = store_loop(lambda r: r - ic(1), bound=5, gate=lambda r: ic(0) < r)
  assert check(gated, K) == []
  ungated = store_loop(lambda r: r - ic(1), bound=5)
  assert [v.rule for v in check(ungated, K)] == ["kernel.index_bounds"]


def test_gated_load_uses_its_own_gate():
  """the same INDEX used by a gated LOAD (legal) and an ungated one (not)."""
  r = rng(5, 0)
  i = p(1, 4).index(r - ic(1))
  ok = i.load(c(0.0), ic(0) < r)
  bad = i.load()
  vs = check(sink(p(0, 5).index(r).store(ok + bad).end(r)), K)
  assert [(v.rule, v.node) for v in vs] == [("kernel.index_bounds", bad)]


def test_proof_timeout_is_a_violation(monkeypatch):
  """a nonlinear 64-bit index with a 1 ms budget: z3 gives unknown, reported as a timeout (never as legal)."""
  monkeypatch.setattr(smt, "TIMEOUT_MS", 1)
  i64 = dtypes.int64
  rs = [UOp(Ops.RANGE, i64, (UOp.const(i64, 1 << 20),), rng(1, a).arg) for a in range(4)]
  e = (rs[0] * rs[1] * rs[2] * rs[3] + rs[0] * rs[2]) % UOp.const(i64, 1000003) - (rs[1] * rs[3]) % UOp.const(i64, 999983)
  st = UOp.param(0, f32, 1000003).index(e).store(c(1.0))
  k = sink(st.end(*rs))
  (v,) = check(k, K)
  assert v.rule == "kernel.index_bounds_timeout" and "timed out after 1 ms" in v.message


def test_accumulator_form_of_ir_md():
  k = k_acc()
  assert check(k, K) == []
  # the same accumulator without the END over the reduce range leaves that range open
  acc_store = [u for u in k.toposort() if u.op is Ops.END and u.src[0].op is Ops.STORE and u.src[0].src[0].src[0].op is Ops.BUFFER][0]
  from tinyspec.rewrite import PatternMatcher, UPat, graph_rewrite
  pm = PatternMatcher([("drop_end", UPat(Ops.END, name="e"), lambda e: e.src[0] if e is acc_store else None)])
  broken = graph_rewrite(k, pm)
  assert "kernel.range_closed" in {v.rule for v in check(broken, K)}


def test_kernel_rules_apply_inside_whole_graph():
  vs = check(kgraph_of(store_loop(lambda r: r + ic(1))), K)
  assert [v.rule for v in vs] == ["kernel.index_bounds"] and vs[0].stage is K


def test_add_kernel_is_kernel_not_tensor():
  vs = check(k_add(), Stage.TENSOR)
  assert {v.rule for v in vs} >= {"tensor.no_range_ops"}

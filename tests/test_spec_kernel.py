"""KERNEL stage: kernel bodies in the forms of docs/ir.md pass; each illegal one breaks exactly the rules named."""
from __future__ import annotations

import pytest
from builders import assert_breaks_exactly, KERNELS, VOID, buf, c, f32, group, i32, ic, k_acc, k_add, k_reduce, kgraph_of, rng, sink

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


def reg() -> UOp: return UOp.buffer(f32, 1, "CPU", AddrSpace.REG)


def acc_without_init(other_store: bool) -> UOp:
  """tinygrad 0.14's max of a value folded away: a REG accumulator read after a loop that stores nothing into it (or that
  stores into another buffer)."""
  acc, r = reg(), rng(4, 0)
  body = p(1).index(r).store(c(2.0)) if other_store else group()
  return sink(p().index(ic(0)).store(acc.after(body.end(r)).index(ic(0)).load()))


ILLEGAL = {
  "local_read_before_any_store": (lambda: sink(p().index(ic(0)).store(reg().index(ic(0)).load())), {"kernel.local_read_after_write"}),
  "local_read_after_an_empty_loop": (lambda: acc_without_init(False), {"kernel.local_read_after_write"}),
  "local_read_after_a_store_elsewhere": (lambda: acc_without_init(True), {"kernel.local_read_after_write"}),
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
  assert_breaks_exactly(build(), K, rules)


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




def test_local_read_after_its_store_is_legal():
  acc = reg()
  init = acc.index(ic(0)).store(c(3.0))
  assert check(sink(p().index(ic(0)).store(acc.after(init).index(ic(0)).load())), K) == []


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


# ---- rangeify's view INDEX(x, i0, ...): legal only in a kernel under construction (checked at TENSOR), never at KERNEL ----
from fuzz.check.oracles import union_violations  # noqa: E402
from tinyspec.lower.indexing import vindex  # noqa: E402


def view_kernel(value_fn, shape=(2, 3), idx_fn=None) -> UOp:
  """A kernel graph whose one kernel stores value_fn(...) addressed by a view INDEX at its output ranges."""
  r0, r1 = rng(shape[0], 0), rng(shape[1], 1)
  idx = idx_fn(r0, r1) if idx_fn else [r0, r1]
  body = sink(p(0, 6).index(r0 * ic(shape[1]) + r1).store(vindex(value_fn(), idx)).end(r0, r1))
  return kgraph_of(body)


def in_tensor() -> UOp:
  """x: a tensor expression over a graph input (views, an elementwise op), as rangeify finds it."""
  b = buf(6, id=1601)
  return b.reshape((3, 2)).permute((1, 0)) + UOp.const(f32, 1.0).expand((2, 3))


def test_view_index_in_a_kernel_being_built_is_legal_at_the_union_only():
  g = view_kernel(in_tensor)
  kernel_rules = {v.rule for v in check(g, K)}
  assert "kernel.view_index" in kernel_rules and "kernel.no_movement" in kernel_rules and "kernel.buffer_local" in kernel_rules
  assert check(g, Stage.TENSOR) == []  # the kernel is under construction: x is checked as the tensor value it is
  assert union_violations(g, Stage.TENSOR, K) == []


def test_view_index_left_in_a_built_kernel_is_rejected():
  # a 0-d value whose whole subgraph is kernel-legal: only the leftover view INDEX itself is wrong at KERNEL
  r = rng(4, 0)
  left = sink(p(0, 4).index(r).store(vindex(p(1).index(r).load() + c(1.0), [])).end(r))
  assert [v.rule for v in check(left, K)] == ["kernel.view_index"]
  assert "kernel.view_index" in {v.rule for v in check(kgraph_of(left), Stage.PROGRAM)}
  assert "kernel.view_index" in {v.rule for v in check(kgraph_of(left), K)}


VIEW_ILLEGAL = {
  "view_index_rank": (lambda: view_kernel(in_tensor, idx_fn=lambda r0, r1: [r0]), "kernel.view_index_form"),
  "view_index_float_index": (lambda: view_kernel(in_tensor, idx_fn=lambda r0, r1: [r0, c(1.0)]), "kernel.view_index_form"),
  "view_index_out_of_axis": (lambda: view_kernel(in_tensor, idx_fn=lambda r0, r1: [r0, r1 + ic(1)]), "kernel.view_index_bounds"),
  "view_index_z3_refutes": (lambda: view_kernel(in_tensor, idx_fn=lambda r0, r1: [r0, r1 * ic(2) - r1 + ic(1)]), "kernel.view_index_bounds"),
  "view_index_of_effect": (lambda: kgraph_of(sink(p(0, 1).index(ic(0)).store(UOp(Ops.INDEX, f32, (p(1).index(ic(0)).store(c(1.0)),), "view")))),
                           "kernel.view_index_form"),
}


@pytest.mark.parametrize("name", sorted(VIEW_ILLEGAL))
def test_malformed_view_index_breaks_the_union(name):
  build, rule = VIEW_ILLEGAL[name]
  g = build()
  at_tensor = [v for v in check(g, Stage.TENSOR) if v.rule == rule]
  assert at_tensor and all(v.node.op is Ops.INDEX and v.node.arg == "view" for v in at_tensor)
  # flagged at TENSOR by its form and at KERNEL as a leftover: illegal at the union too
  assert {v.node for v in at_tensor} <= {v.node for v in union_violations(g, Stage.TENSOR, K)}


def test_view_index_bounds_need_z3_when_intervals_cannot_decide():
  g = view_kernel(in_tensor, idx_fn=lambda r0, r1: [r0, r1 * ic(2) - r1])
  assert check(g, Stage.TENSOR) == []


def test_an_illegal_tensor_value_under_a_view_index_is_reported_at_tensor():
  g = view_kernel(lambda: UOp(Ops.ADD, f32, (buf(6, id=1602).reshape((2, 3)), c(1, i32).expand((2, 3)))))
  assert "alu.dtype_match" in {v.rule for v in union_violations(g, Stage.TENSOR, K)}


def test_view_index_hides_no_params_from_the_kernel_call():
  # PARAMs under a view INDEX belong to the scope the kernel is built in, not to the kernel CALL: no binding findings
  g = view_kernel(lambda: UOp.param(5, i32, 6).reshape((2, 3)).cast(f32))
  assert not {v.rule for v in check(g, Stage.TENSOR)} & {"call.param_slot", "call.param_size", "call.param_dtype"}


def test_store_through_a_view_index_target_must_write_storage():
  r0 = rng(2, 0)
  target = vindex(c(1.0).expand((2,)), [r0])
  g = kgraph_of(sink(target.store(c(2.0)).end(r0), p(0, 2).index(r0).store(c(1.0)).end(r0)))
  assert "kernel.store_target" in {v.rule for v in check(g, Stage.TENSOR)}

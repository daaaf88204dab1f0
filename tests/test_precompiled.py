"""Precompiled calls: CALL(SINK(AFTER(PARAM_out, STORE(PARAM_out, value))...), inputs..., outputs...) at TENSOR, a nested
kernel graph of kernel CALLs over the call's PARAMs at KERNEL_GRAPH. Legal forms pass and each broken one is flagged
with its own rule id; the evaluator runs the form at every stage; the frontend builds it, callify makes it of a value
call, and the whole pipeline lowers it to C with the evaluator's numbers."""
from __future__ import annotations

import numpy as np
import pytest
from builders import assert_breaks_exactly, buf, c, call, f32, i32, k_add, sink, tup

from tinyspec import Ops, Stage, UOp, check
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.lower.base import LowerOptions, Trace
from tinyspec.lower.callify import CALLIFY
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import cpu
from tinyspec.semantics import evaluate
from tinyspec.spec.tensor import written_slots
from tinyspec.uop import body_kind, is_precompiled_call

pytestmark = pytest.mark.spec
T, G = Stage.TENSOR, Stage.KERNEL_GRAPH


def body_of(*entries: UOp) -> UOp: return sink(*entries)


def stored(p: UOp, value: UOp) -> UOp:
  """AFTER(p, STORE(p as value's shape, value)): tinygrad's spelling of a precompiled body's entry."""
  return p.after((p if value.shape == p.shape else p.reshape(value.shape)).store(value))


def gelu_sum_call(x: UOp, out: UOp) -> UOp:
  """x (12 elements, read as 3x4) -> out[i] = sum_j x*sigmoid(1.702x) over row i: tinygrad's precompiled.py body."""
  p0, p1 = UOp.param(0, f32, 12).reshape((3, 4)), UOp.param(1, f32, 3)
  one = c(1.0).reshape((1,)).expand((3, 4)).reshape((3, 4))
  k = c(-1.702 * 1.4426950408889634).reshape((1,)).expand((3, 4)).reshape((3, 4))
  v = (p0 * (one + (p0 * k).alu(Ops.EXP2)).alu(Ops.RECIP)).permute((1, 0)).reduce(Ops.ADD, 1)
  return call(body_of(stored(p1, v)), x, out, name="gelu_sum")


def gelu_sum_np(x: np.ndarray) -> np.ndarray:
  return (x * (1 / (1 + np.exp2(x * (-1.702 * 1.4426950408889634))))).sum(1)


def affine_call(x: UOp, y: UOp, o0: UOp, o1: UOp) -> UOp:
  """two inputs (slots 0, 1), two outputs (slots 2, 3): x*2 + y and x - y, stored through a GROUP."""
  p0, p1, p2, p3 = (UOp.param(k, f32, 4) for k in range(4))
  two = c(2.0).reshape((1,)).expand((4,)).reshape((4,))
  return call(body_of(UOp(Ops.GROUP, src=(p2.store(p0 * two + p1), p3.store(p0 - p1)))), x, y, o0, o1)


# ---- the form: what body_kind says, and the TENSOR spec ----
def test_body_kind_tells_the_three_sinks_apart():
  x, out = buf(12), buf(3)
  pc = gelu_sum_call(x.reshape((3, 4)), out)
  assert body_kind(pc.src[0]) == "effect" and is_precompiled_call(pc) and written_slots(pc.src[0]) == {1}
  pin, pout = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  assert body_kind(sink(pout.after(call(k_add(), pout, pin, pin)))) == "graph"
  assert body_kind(k_add()) == "kernel" and not is_precompiled_call(call(k_add(), buf(4), buf(4), buf(4)))
  # a graph-shaped body whose AFTER waits for a precompiled call is effects too (a precompiled call nested in one)
  assert body_kind(sink(pout.after(affine_call(pin, pin, pout, UOp.param(2, f32, 4))))) == "effect"


def legal_graphs() -> dict:
  x, out, a, b, o0, o1 = buf(12), buf(3), buf(4), buf(4), buf(4), buf(4)
  pc = gelu_sum_call(x.reshape((3, 4)), out)
  af = affine_call(a, UOp(Ops.CONTIGUOUS, f32, (b * b,)), o0, o1)
  # tinygrad's outer callified call: outputs and inputs interleaved (slot 0 written, slot 1 read, slot 2 written by a nested call)
  q0, q1, q2 = UOp.param(0, f32, 12), UOp.param(1, f32, 12), UOp.param(2, f32, 3)
  inner = gelu_sum_call(stored(q0.reshape((3, 4)), q1.reshape((3, 4))), q2)
  outer = call(body_of(stored(q0.reshape((3, 4)), q1.reshape((3, 4))), q2.after(inner)), buf(12), x, out)
  return {
    "one_output": sink(out.after(pc) + out.after(pc)),
    "two_outputs_group_contiguous_arg": sink(o0.after(af), o1.after(af)),
    "output_through_reshape": sink(out.after(gelu_sum_call(x.reshape((3, 4)), buf(3).reshape((3, 1)).reshape((3,))))),
    "interleaved_slots_and_nested": sink(out.after(outer)),
    "effect_entry": sink(pc),
  }


@pytest.mark.parametrize("name", sorted(legal_graphs()))
def test_legal_at_tensor(name):
  assert check(legal_graphs()[name], T) == []


def broken(name: str) -> tuple[UOp, set[str]]:
  x, out = buf(12), buf(3)
  p0, p1 = UOp.param(0, f32, 12), UOp.param(1, f32, 3)
  v = p0.reshape((3, 4)).permute((1, 0)).reduce(Ops.ADD, 1)
  cases = {
    # a value entry: the body gives back only what it stores
    "tensor.precompiled_entry": lambda: call(body_of(stored(p1, v), v + v), x, out),
    # a STORE into a BUFFER of the caller, not into a PARAM of the call
    "tensor.precompiled_store_target": lambda: call(body_of(stored(p1, v), buf(3).store(v)), x, out),
    # a computed arg: a precompiled call takes storage
    "tensor.precompiled_arg_storage": lambda: call(body_of(stored(p1, v)), x + x, out),
    # an output bound to a view that is no RESHAPE of storage: the call could not write it in place
    "tensor.precompiled_output": lambda: call(body_of(stored(p1, v)), x, buf(6).shrink(((1, 3),))),
  }
  pc = cases[name]()
  return sink(pc), {name}


@pytest.mark.parametrize("rule", ["tensor.precompiled_entry", "tensor.precompiled_store_target", "tensor.precompiled_arg_storage",
                                  "tensor.precompiled_output"])
def test_each_tensor_rule_flags_its_break(rule):
  root, rules = broken(rule)
  vs = assert_breaks_exactly(root, T, rules)
  assert all(v.stage is T for v in vs)


def test_violation_paths_point_into_the_body():
  root, _ = broken("tensor.precompiled_store_target")
  (v,) = check(root, T)
  node = root
  for i in v.path: node = node.src[i]
  assert node is v.node and node.op is Ops.STORE and node.src[0].op is Ops.BUFFER


# ---- KERNEL_GRAPH ----
def test_kernel_graph_form_is_legal_and_its_rules_fire():
  pin, pout = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  x, out, tmp = buf(4), buf(4), buf(4)
  t = tmp.after(call(k_add(), tmp, pin, pin))
  good = sink(out.after(call(sink(pout.after(call(k_add(), pout, t, pin))), x, out)))
  assert check(good, G) == []
  # the nested graph returns its scratch BUFFER instead of the output PARAM
  assert_breaks_exactly(sink(out.after(call(sink(t), x, out))), G, {"kgraph.precompiled_entry"})
  # a precompiled call still in its TENSOR form is not a kernel graph's call
  x12, o3 = buf(12), buf(3)
  pc = gelu_sum_call(x12, o3)
  vs = check(sink(o3.after(pc)), G)
  assert "kgraph.precompiled_body" in {v.rule for v in vs}
  assert [v.path for v in vs if v.rule == "kgraph.precompiled_body"] == [(0, 1)]


# ---- the evaluator ----
def test_evaluator_runs_the_tensor_form_in_place():
  xv = np.linspace(-2, 2, 12, dtype=np.float32)
  x, out = buf(12), buf(3)
  pc = gelu_sum_call(x.reshape((3, 4)), out)
  got = evaluate(sink(out.after(pc), out), {x.arg.id: xv})
  np.testing.assert_allclose(got[0], gelu_sum_np(xv.reshape(3, 4)), rtol=1e-6)
  np.testing.assert_array_equal(got[1], np.zeros(3, np.float32))  # the BUFFER read as a value is its contents as given


def test_evaluator_runs_it_at_every_stage():
  av, bv = np.arange(4, dtype=np.float32), np.full(4, 3.0, np.float32)
  a, b, o0, o1 = buf(4), buf(4), buf(4), buf(4)
  af = affine_call(a, b, o0, o1)
  root = sink(o0.after(af), o1.after(af) * o1.after(af))
  want = [av * 2 + bv, (av - bv) ** 2]
  for name, g in lower(root, callify="precompile").items():
    if name == "render": continue
    got = evaluate(g, {a.arg.id: av, b.arg.id: bv})
    for w, x in zip(want, got): np.testing.assert_allclose(np.asarray(x).reshape(-1), w, err_msg=name)


# ---- the frontend, callify and the pipeline to C ----
@function(precompile=True)
def divmod_sum(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
  return (x // y).sum(0), x % y


def test_frontend_builds_the_form_and_it_lowers_to_c():
  xv = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
  yv = np.array([1, 2, 3, 5], np.int32)
  q, r = divmod_sum(Tensor(xv), (Tensor(yv) * 1).reshape(1, 4).expand(3, 4))
  root = Tensor.sink(q, r + 1)
  (pc,) = [u for u in root.toposort() if u.op is Ops.CALL]
  n = len(pc.src) - 3  # two outputs after the inputs
  assert is_precompiled_call(pc) and written_slots(pc.src[0]) == {n, n + 1} and pc.arg == "divmod_sum"
  assert pc.src[2].op is Ops.CONTIGUOUS  # a computed value is realized before the call
  assert check(root, T) == []
  want = [np.floor_divide(xv, yv).sum(0), np.mod(xv, yv) + 1]
  ins = inputs_of(root)
  ev = evaluate(root, ins)
  for w, g in zip(want, ev): np.testing.assert_array_equal(g, w)
  for cm in ("inline", "precompile"):
    graphs = lower(root, callify=cm)
    kg = graphs["rangeify"]
    assert any(body_kind(u.src[0]) == "graph" for u in kg.toposort() if u.op is Ops.CALL), "no nested kernel graph"
    assert not any(is_precompiled_call(u) for u in kg.toposort())
  for w, g in zip(want, cpu.run(root, ins)): np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w)


def test_tracing_twice_builds_the_same_call():
  x = Tensor(np.ones((2, 3), np.float32))
  a, _ = divmod_sum(x.cast(i32), x.cast(i32))
  b, _ = divmod_sum(x.cast(i32), x.cast(i32))
  assert a.uop is b.uop


def test_callify_precompiles_a_value_call_like_the_frontend():
  @function
  def f(x: Tensor) -> Tensor: return (x * 2.0).sum(0)

  @function(precompile=True, name="f")
  def g(x: Tensor) -> Tensor: return (x * 2.0).sum(0)

  t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
  value, pre = Tensor.sink(f(t)), Tensor.sink(g(t))
  cg = CALLIFY.run(value, LowerOptions(callify="precompile"), Trace())
  # the same value call (same body, args and name) precompiled by callify and by the frontend: the same graph, node for node
  assert cg is pre
  np.testing.assert_array_equal(evaluate(cg, inputs_of(value))[0], [6, 10, 14])
  # inline mode leaves a precompiled call as it is
  assert CALLIFY.run(pre, LowerOptions(callify="inline"), Trace()) is pre


def test_value_call_in_a_tuple_is_still_legal_next_to_it():
  p0 = UOp.param(0, f32, 4)
  vc = call(tup(p0 + p0), buf(4))
  assert check(sink(vc.gettuple(0)), T) == []
  assert body_kind(vc.src[0]) == "value" and not is_precompiled_call(vc)


def test_callify_precompile_lowers_to_the_numbers_of_inline_mode():
  # a value call with two outputs, one read twice: precompile mode makes a precompiled call (legal at TENSOR), and every
  # stage of both modes, and the C backend, give the same numbers
  @function
  def f(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]: return (x * y).sum(1), x - y

  xv, yv = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 0.5, np.float32)
  s, d = f(Tensor(xv), Tensor(yv))
  root = Tensor.sink(s + s, d)
  ins = inputs_of(root)
  want = [((xv * yv).sum(1)) * 2, xv - yv]
  cg = CALLIFY.run(root, LowerOptions(callify="precompile"), Trace())
  (pc,) = [u for u in cg.toposort() if u.op is Ops.CALL]
  assert is_precompiled_call(pc) and written_slots(pc.src[0]) == {2, 3} and check(cg, T) == []
  for cm in ("inline", "precompile"):
    for name, g in lower(root, callify=cm).items():
      if name == "render": continue
      for w, x in zip(want, evaluate(g, ins)): np.testing.assert_allclose(np.asarray(x).reshape(w.shape), w, err_msg=f"{cm} {name}")
    for w, x in zip(want, cpu.run(root, ins, callify=cm)): np.testing.assert_allclose(np.asarray(x).reshape(w.shape), w, err_msg=cm)

"""callify and rangeify: parity with numpy on every program, spec conformance of every output, the index arithmetic of
each movement op, and the structure of the kernel graph (storage-only args, AFTER ordering of assigns)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import ALL_PROGRAMS, MODES

from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.callify import CALLIFY, pm_inline
from tinyspec.lower.indexing import pm_indexing
from tinyspec.lower.pipeline import PASSES, PassError, lower
from tinyspec.lower.rangeify import RANGEIFY, pm_call_args, pm_prepare
from tinyspec.lower.schedule import walk
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import GroupOp, Ops, UOp, is_precompiled_call

pytestmark = pytest.mark.spec
F32 = dtypes.float32


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, dtypes.void, xs)
def tup(*xs: UOp) -> UOp: return UOp(Ops.TUPLE, dtypes.void, xs)
def call(body: UOp, *args: UOp) -> UOp: return UOp(Ops.CALL, dtypes.void, (body, *args))
def fconst(v: float, shape: tuple = ()) -> UOp:
  c = UOp.const(F32, v)
  return c.expand(shape) if shape else c




def _compare(prog, got, label: str) -> None:
  exp = prog.expected if isinstance(prog.expected, (list, tuple)) else [prog.expected]
  got = got if isinstance(got, list) else [got]
  assert len(got) == len(exp), f"{prog.name} {label}: {len(got)} results, expected {len(exp)}"
  for i, (e, g) in enumerate(zip(exp, got)):
    if e is None: continue
    e, g = np.asarray(e).ravel(), np.asarray(g).ravel()
    assert e.shape == g.shape, f"{prog.name} {label} entry {i}: {g.shape} elements, expected {e.shape}"
    if prog.exact or e.dtype.kind in "biu": np.testing.assert_array_equal(g, e, err_msg=f"{prog.name} {label} entry {i}")
    else: np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, equal_nan=True, err_msg=f"{prog.name} {label} entry {i}")


def _no_violations(root: UOp, stage: Stage, label: str) -> None:
  vs = check(root, stage)
  assert not vs, f"{label} breaks the {stage.name} spec:\n" + "\n".join(map(str, vs[:5]))


@pytest.mark.parametrize("name,build", ALL_PROGRAMS, ids=[n for n, _ in ALL_PROGRAMS])
def test_parity_and_spec(name: str, build: Callable) -> None:
  prog = build()
  _compare(prog, evaluate(prog.root, prog.inputs), "tensor graph")
  for cm, rm in MODES:
    opts = LowerOptions(callify=cm, realize=rm)
    cg = CALLIFY.run(prog.root, opts, Trace())
    _compare(prog, evaluate(cg, prog.inputs), f"callify={cm}")
    _no_violations(cg, Stage.TENSOR, f"{prog.name} callify={cm}")
    if cm == "inline": assert not any(u.op in (Ops.TUPLE, Ops.GETTUPLE) for u in cg.toposort()), "inline left a value call"
    kg = RANGEIFY.run(cg, opts, Trace())
    _compare(prog, evaluate(kg, prog.inputs), f"rangeify callify={cm} realize={rm}")
    _no_violations(kg, Stage.KERNEL, f"{prog.name} rangeify callify={cm} realize={rm}")
    _assert_kernel_graph_form(kg)


# ---- kernel graph structure ----
def _is_storage(u: UOp) -> bool:
  while u.op is Ops.AFTER:
    if not all(d.op is Ops.CALL for d in u.src[1:]): return False
    u = u.src[0]
  return u.op in GroupOp.Storage


def _graph_calls(root: UOp) -> list[UOp]:
  """The kernel-graph CALLs under root, nested kernel graphs included, without walking into kernel bodies."""
  out = []
  for u in root.toposort(gate=lambda u: not (u.op is Ops.SINK and any(s.op in (Ops.END, Ops.STORE) for s in u.src))):
    if u.op is Ops.CALL: out.append(u)
  return out


def _assert_kernel_graph_form(kg: UOp) -> None:
  assert kg.op is Ops.SINK and all(_is_storage(e) for e in kg.src), "a root entry is not storage"
  for c in _graph_calls(kg):
    for k, a in enumerate(c.src[1:]):
      assert _is_storage(a), f"CALL arg {k} is {a.op.name}, not storage"
      base = a
      while base.op is Ops.AFTER: base = base.src[0]
      params = [u for u in walk(c.src[0]) if u.op is Ops.PARAM and u.arg.slot == k]
      assert all(p.arg.size == base.arg.size and p.dtype == base.dtype for p in params), f"PARAM {k} does not match its arg"
    if c.src[0].op is Ops.SINK and not any(s.op in (Ops.END, Ops.STORE) for s in c.src[0].src):
      continue  # a nested kernel graph: its CALLs are checked on their own
    assert c.src[0].op in (Ops.SINK, Ops.COPY)
    assert not any(u.op in GroupOp.Movement | {Ops.TUPLE, Ops.GETTUPLE} for u in c.src[0].toposort()), "a view left in a kernel"


def _kernels_by_store_of(kg: UOp, buf: UOp) -> list[UOp]:
  return [c for c in _graph_calls(kg) if (a := c.src[1]).op is Ops.AFTER and a.src[0] is buf or c.src[1] is buf]


def test_assign_is_ordered_after_every_reader_of_old_contents() -> None:
  a = UOp.buffer(F32, 4)
  old_reader = a * fconst(2.0, (4,))
  a1 = a.after(a.store(a + fconst(1.0, (4,))))
  kg = RANGEIFY.run(sink(a1, old_reader), LowerOptions(), Trace())
  writers = _kernels_by_store_of(kg, a)
  assert len(writers) == 1
  w = writers[0]
  readers = [c for c in _graph_calls(kg) if c is not w and any(s is a or s.op is Ops.AFTER and s.src[0] is a for s in c.src[2:])]
  assert readers, "the reader of the old contents is not a kernel"
  # the writer's output arg waits for the reader: AFTER(a, reader_call)
  assert w.src[1].op is Ops.AFTER and all(r in w.src[1].src[1:] for r in readers)
  out = evaluate(kg, {a.arg.id: np.arange(4, dtype=np.float32)})
  np.testing.assert_array_equal(out[1], np.arange(4) * 2)
  np.testing.assert_array_equal(out[0], np.arange(4) + 1)


def test_assign_chain_orders_writers_and_reads_latest() -> None:
  a = UOp.buffer(F32, 3)
  a1 = a.after(a.store(a + fconst(1.0, (3,))))
  a2 = a1.after(a1.store(a1 * fconst(3.0, (3,))))
  kg = RANGEIFY.run(sink(a2), LowerOptions(), Trace())
  w1, w2 = sorted(_kernels_by_store_of(kg, a), key=lambda c: len(c.toposort()))
  assert w2.src[1].op is Ops.AFTER and w1 in w2.src[1].src[1:], "the second write is not ordered after the first"
  assert kg.src[0].op is Ops.AFTER and kg.src[0].src[0] is a and w2 in kg.src[0].src[1:]
  np.testing.assert_array_equal(evaluate(kg, {a.arg.id: np.array([0, 1, 2], np.float32)})[0], [3, 6, 9])


def test_kernel_args_are_storage_only_for_views_of_inputs() -> None:
  a = UOp.buffer(F32, 6)
  v = a.reshape((2, 3)).permute((1, 0)).shrink(((1, 2), (0, 2)))
  kg = RANGEIFY.run(sink(v + v, a, a.reshape((3, 2))), LowerOptions(), Trace())
  _assert_kernel_graph_form(kg)
  assert kg.src[1] is a and kg.src[2] is a, "an exact view of an input is the input itself"
  assert len(_graph_calls(kg)) == 1
  assert not any(u.op in GroupOp.Movement for u in kg.toposort())


def test_read_args_are_bound_as_views_then_to_their_storage() -> None:
  """A kernel's read arg is first the view it reads (a RESHAPE of storage); the named pm_call_args rules bind it to the storage."""
  a = UOp.buffer(F32, 6)
  c = UOp(Ops.CONTIGUOUS, F32, (a.reshape((2, 3)) * a.reshape((2, 3)),))
  root = sink(c.permute((1, 0)) + a.reshape((3, 2)).reshape((2, 3)).permute((1, 0)))
  apps: list[tuple[str, UOp, UOp]] = []
  kg = RANGEIFY.run(root, LowerOptions(), Trace(observer=lambda r, b, af: apps.append((r.name, b, af))))
  by_rule = {n: (b, af) for n, b, af in apps if n in {r.name for r in pm_call_args.rules}}
  assert set(by_rule) == {"call_arg_view_to_storage", "call_arg_after_view"}
  # the input is read through the longest RESHAPE chain the kernel holds; the realized value as its own (2, 3) shape
  b, af = by_rule["call_arg_view_to_storage"]
  assert [x.arg for x in b.src[1:] if x.op is Ops.RESHAPE and x.src[0].op is Ops.RESHAPE] == [(2, 3)]
  assert a in af.src[1:] and not any(x.op is Ops.RESHAPE and x.src[0].op is Ops.BUFFER for x in af.src[1:])
  b, af = by_rule["call_arg_after_view"]
  (view,) = [x for x in b.src[1:] if x.op is Ops.RESHAPE]
  assert view.arg == (2, 3) and view.src[0].op is Ops.AFTER and view.src[0].src[0].arg.size == 6
  assert view.src[0] in af.src[1:]
  _assert_kernel_graph_form(kg)
  _no_violations(kg, Stage.KERNEL, "view args bound to storage")
  av = np.arange(6, dtype=np.float32)
  np.testing.assert_array_equal(evaluate(kg, {a.arg.id: av})[0].ravel(), ((av * av).reshape(2, 3).T + av.reshape(2, 3).T).ravel())


def test_lowering_a_graph_again_gives_the_same_kernel_graph() -> None:
  a = UOp.buffer(F32, 4)
  root = sink(UOp(Ops.CONTIGUOUS, F32, (a + a,)).reshape((2, 2)).permute((1, 0)))
  kg = RANGEIFY.run(root, LowerOptions(), Trace())
  assert RANGEIFY.run(root, LowerOptions(), Trace()) is kg
  fresh = {u.arg.id for u in kg.toposort() if u.op is Ops.BUFFER} - {a.arg.id}
  assert fresh and min(fresh) > a.arg.id
  # another graph gets buffers of its own
  other = RANGEIFY.run(sink(UOp(Ops.CONTIGUOUS, F32, (a * a,)).reshape((2, 2)).permute((1, 0))), LowerOptions(), Trace())
  assert not fresh & ({u.arg.id for u in other.toposort() if u.op is Ops.BUFFER} - {a.arg.id})


def test_precompile_keeps_call_as_nested_kernel_graph() -> None:
  a = UOp.buffer(F32, 4)
  p0 = UOp.param(0, F32, 4)
  cl = call(tup(p0 + p0, p0.reshape((2, 2)).reduce(Ops.ADD, 1)), a)
  opts = LowerOptions(callify="precompile")
  cg = CALLIFY.run(sink(cl.gettuple(0), cl.gettuple(1)), opts, Trace())
  # callify made the value call a precompiled call: its body stores output i into PARAM slot 1+i, read as AFTER(out_i, CALL)
  assert not any(u.op in (Ops.TUPLE, Ops.GETTUPLE) for u in cg.toposort()), "precompile left a value call"
  (pc,) = [u for u in cg.toposort() if is_precompiled_call(u)]
  assert pc.src[1] is a and [e.src[0].arg.slot for e in pc.src[0].src] == [1, 2]
  assert [e.src[0] for e in cg.src] == list(pc.src[2:]) and all(e.src[1] is pc for e in cg.src)
  assert CALLIFY.run(sink(cl.gettuple(0), cl.gettuple(1)), opts, Trace()) is cg, "precompiling again gives other buffers"
  kg = RANGEIFY.run(cg, opts, Trace())
  outer = [c for c in _graph_calls(kg) if c.src[0].op is Ops.SINK and all(s.op is Ops.AFTER for s in c.src[0].src)]
  assert len(outer) == 1
  nested = outer[0].src[0]
  # outputs are PARAMs after the one input PARAM, and each root entry reads AFTER(out_buf_i, CALL)
  assert [e.src[0].arg.slot for e in nested.src] == [1, 2] and all(e.src[0].op is Ops.PARAM for e in nested.src)
  assert outer[0].src[1] is a
  assert [e.src[0] for e in kg.src] == list(outer[0].src[2:]) and all(e.src[1] is outer[0] for e in kg.src)
  got = evaluate(kg, {a.arg.id: np.array([1, 2, 3, 4], np.float32)})
  np.testing.assert_array_equal(got[0], [2, 4, 6, 8])
  np.testing.assert_array_equal(got[1], [4, 6])


# ---- callify ----
def test_inline_substitutes_innermost_params() -> None:
  a = UOp.buffer(F32, 4)
  p0 = UOp.param(0, F32, 4)
  # the inner body's PARAM 0 is the same interned node as the outer body's PARAM 0, bound to different args
  inner = call(tup(p0 * p0), p0 + fconst(1.0, (4,)))
  outer = call(tup(inner.gettuple(0) + p0), a.reshape((2, 2)))
  out = CALLIFY.run(sink(outer.gettuple(0)), LowerOptions(), Trace())
  assert not any(u.op in (Ops.CALL, Ops.PARAM, Ops.TUPLE, Ops.GETTUPLE) for u in out.toposort())
  av = np.array([1, 2, 3, 4], np.float32)
  np.testing.assert_array_equal(evaluate(out, {a.arg.id: av})[0], (av + 1) ** 2 + av)


def test_callify_rules_are_named_and_observed() -> None:
  a = UOp.buffer(F32, 2)
  p0 = UOp.param(0, F32, 2)
  root = sink(call(tup(p0, p0 + p0), a).gettuple(1), UOp(Ops.GETTUPLE, F32, (tup(a, a),), 0))
  seen = []
  CALLIFY.run(root, LowerOptions(), Trace(observer=lambda r, b, a: seen.append(r.name)))
  assert sorted(seen) == ["gettuple_of_tuple", "inline_gettuple_of_call"]
  assert all(r.name for r in pm_inline.rules)
  # a step limit leaves the rest of the graph untouched
  part = CALLIFY.run(root, LowerOptions(), Trace(max_steps=1))
  assert sum(u.op is Ops.GETTUPLE for u in part.toposort()) == 1


def test_bad_options_are_named() -> None:
  a = UOp.buffer(F32, 2)
  with pytest.raises(ValueError, match="callify mode"): CALLIFY.run(sink(a), LowerOptions(callify="bogus"), Trace())
  with pytest.raises(ValueError, match="realize mode"): RANGEIFY.run(sink(a + a), LowerOptions(realize="bogus"), Trace())


def test_rangeify_rewrites_go_through_the_trace() -> None:
  a = UOp.buffer(F32, 6)
  names = set()
  RANGEIFY.run(sink(a.reshape((2, 3)).permute((1, 0)).pad(((0, 4), (1, 3)))), LowerOptions(), Trace(observer=lambda r, b, a: names.add(r.name)))
  assert {"index_through_reshape", "index_through_permute", "index_through_pad", "index_leaf_load", "pad_gate_into_load"} <= names
  assert names <= {r.name for r in pm_indexing.rules + pm_prepare.rules + pm_call_args.rules}


# ---- the index arithmetic of each movement op against numpy ----
@st.composite
def movement_chain(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  steps = []
  cur = shape
  for _ in range(draw(st.integers(1, 3))):
    op = draw(st.sampled_from(["reshape", "permute", "expand", "pad", "shrink", "flip"]))
    if op == "reshape":
      n = int(np.prod(cur))
      d = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
      arg = (d, n // d) if draw(st.booleans()) else (n // d, 1, d)
    elif op == "permute": arg = tuple(draw(st.permutations(range(len(cur)))))
    elif op == "expand": arg = (draw(st.integers(1, 3)),)
    elif op == "pad": arg = tuple((o, o + d + draw(st.integers(0, 2))) for d in cur for o in [draw(st.integers(0, 2))])
    elif op == "shrink": arg = tuple((o, draw(st.integers(0, d - o))) for d in cur for o in [draw(st.integers(0, d - 1))])
    else: arg = tuple(draw(st.booleans()) for _ in cur)
    steps.append((op, arg))
    cur = _np_apply(np.zeros(cur), op, arg).shape
    if 0 in cur: break
  return shape, steps


def _np_apply(x: np.ndarray, op: str, arg: tuple) -> np.ndarray:
  if op == "reshape": return x.reshape(arg)
  if op == "permute": return x.transpose(arg)
  if op == "expand": return np.broadcast_to(x, arg + x.shape)
  if op == "pad": return np.pad(x, [(o, n - o - d) for (o, n), d in zip(arg, x.shape)])
  if op == "shrink": return x[tuple(slice(o, o + n) for o, n in arg)]
  return np.flip(x, [i for i, f in enumerate(arg) if f]) if any(arg) else x


@settings(max_examples=80, deadline=None)
@given(movement_chain())
def test_movement_index_arithmetic_matches_numpy(case) -> None:
  shape, steps = case
  buf = UOp.buffer(F32, int(np.prod(shape)))
  data = np.arange(1, buf.arg.size + 1, dtype=np.float32)
  u, ref = buf.reshape(shape), data.reshape(shape)
  for op, arg in steps: u, ref = getattr(u, op)(arg), _np_apply(ref, op, arg)
  kg = RANGEIFY.run(sink(u * fconst(1.0, u.shape)), LowerOptions(), Trace())
  _no_violations(kg, Stage.KERNEL, f"movement chain {steps}")
  np.testing.assert_array_equal(evaluate(kg, {buf.arg.id: data})[0].ravel(), ref.ravel())


# ---- the pipeline ----
def test_lower_gives_every_stage_in_order_and_keeps_meaning() -> None:
  a = UOp.buffer(F32, 6)
  p0 = UOp.param(0, F32, 6)
  cl = call(tup((p0.reshape((2, 3)) * p0.reshape((2, 3))).reduce(Ops.ADD, 1)), a)
  root = sink(cl.gettuple(0), a.reshape((3, 2)).permute((1, 0)).pad(((1, 4), (0, 3))))
  av = np.arange(6, dtype=np.float32)
  exp = [(av.reshape(2, 3) ** 2).sum(0), np.pad(av.reshape(3, 2).T, ((1, 1), (0, 0)))]
  for cm in ("inline", "precompile"):
    out = lower(root, callify=cm, realize="all")
    assert list(out) == ["input", *[p.name for p in PASSES]]
    assert [p.name for p in PASSES] == ["multi", "callify", "rangeify", "simplify", "scatter", "optimize", "lower_reduce", "images", "linearize",
                                        "render"]
    for name in ("input", "callify", "rangeify"):
      got = evaluate(out[name], {a.arg.id: av})
      for e, g in zip(exp, got): np.testing.assert_allclose(np.asarray(g).ravel(), e.ravel(), err_msg=f"{cm} {name}")


def test_lower_names_the_pass_whose_output_breaks_its_spec() -> None:
  a = UOp.buffer(F32, 4)
  broken = Pass("keeps_views", Stage.TENSOR, Stage.KERNEL, lambda root, options, trace, tables: root)
  with pytest.raises(PassError, match="keeps_views"): lower(sink(a.reshape((2, 2)).permute((1, 0))), passes=[CALLIFY, broken])
  with pytest.raises(TypeError, match="bogus"): lower(sink(a), bogus=1)


def test_lower_threads_a_trace_per_pass() -> None:
  a = UOp.buffer(F32, 4)
  p0 = UOp.param(0, F32, 4)
  root = sink(call(tup(p0.flip((True,)) + p0), a).gettuple(0))
  seen: dict[str, list[str]] = {}
  def trace_for(name: str) -> Trace: return Trace(observer=lambda r, b, a: seen.setdefault(name, []).append(r.name))
  lower(root, passes=[CALLIFY, RANGEIFY], trace_for=trace_for)
  assert seen["callify"] == ["inline_gettuple_of_call"]
  assert "index_through_flip" in seen["rangeify"]
  assert set(seen["rangeify"]) <= {r.name for r in pm_indexing.rules + pm_prepare.rules + pm_call_args.rules}
  # a step limit inside rangeify leaves a kernel half indexed, which the pipeline reports against that pass
  with pytest.raises(PassError, match="rangeify"):
    lower(root, passes=[CALLIFY, RANGEIFY], trace_for=lambda name: Trace(max_steps=1) if name == "rangeify" else None)


def test_empty_sink_lowers_to_an_empty_program_on_every_backend(opencl) -> None:
  """An empty SINK is an empty program at every stage, not a kernel that stores nothing."""
  from tinyspec.runtime import run
  graphs = lower(UOp(Ops.SINK))
  assert all(not any(u.op is Ops.CALL for u in g.toposort()) for g in graphs.values())
  assert check(graphs["render"], Stage.PROGRAM) == []
  for backend in ("reference", "cpu", "opencl"):
    assert run(UOp(Ops.SINK), {}, backend=backend) == []

"""The tinygrad bridge on bound Variables: a symbolic shape (`x[:v]`, a shrink and reshape, an arange) is checked at every
stage in tinyspec's DEFINE_VAR / BIND forms, its numbers compared, and a TinyJit function called with a new binding
per call is checked step by step, each step under its own binding."""
from __future__ import annotations

import functools
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad import capture  # noqa: E402
from tinyspec.bridge.tinygrad.check import Report, check_capture  # noqa: E402
from tinyspec.bridge.tinygrad.translator import STAGES  # noqa: E402
from tinyspec.uop import Ops  # noqa: E402

pytestmark = pytest.mark.tinygrad
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tinygrad"
X = np.arange(10, dtype=np.float32) * 0.5


def holds_fully(r: Report) -> None:
  """One realize: every stage translated in full and legal, all four comparisons of numbers ran and agreed."""
  assert {s: (d, n) for s, (d, n) in r.translation.coverage().items() if d != n} == {}
  assert all(r.translation.graphs[s] for s in STAGES)
  assert {s: [str(v) for _, v in vs] for s, vs in r.violations.items() if vs} == {}
  assert r.ran == {"tensor": True, "callified": True, "kernel ASTs": True, "programs": True}, r.numbers
  assert all(x is None for x in r.numbers.values()), r.numbers


@functools.cache
def head_sum(k: int) -> Report:
  """x[:v].sum() with v = Variable("i", 1, 10) bound to k."""
  from tinygrad import Tensor, Variable
  return check_capture(capture(lambda: Tensor(X)[:Variable("i", 1, 10).bind(k)].sum()))


@pytest.mark.parametrize("k", [3, 5])
def test_a_slice_by_a_bound_variable_holds_and_gives_the_sum_of_its_binding(k):
  rep = head_sum(k)
  holds_fully(rep)
  assert rep.as_programs[0] >= 1   # the sum's kernel ran as its translated program
  for mode in ("tensor", "callified", "kernel ASTs", "programs"):
    assert float(np.asarray(rep.values[mode][0]).reshape(-1)[0]) == pytest.approx(float(X[:k].sum()))


def test_each_stage_holds_the_variable_in_tinyspecs_form():
  t = head_sum(3).translation
  tensor = t.graphs["tensor"][0][1]
  assert [u.arg for u in tensor.toposort() if u.op is Ops.SHRINK] == [((0, 3),)]   # the shape is the bound value
  call = t.graphs["callified"][0][1]
  binds = [a for a in call.src[1:] if a.op is Ops.BIND]
  assert [(b.src[0].arg.name, b.src[0].arg.min, b.src[0].arg.max, b.src[1].arg) for b in binds] == [("i", 1, 10, 3)]
  kg = t.graphs["kernel_graph"][0][1]
  reads = [c for c in kg.toposort() if c.op is Ops.CALL and any(x.op is Ops.DEFINE_VAR for x in c.src[0].toposort())]
  assert len(reads) == 1 and reads[0].src[-1].op is Ops.BIND and reads[0].src[-1].src[1].arg == 3
  kvars = {x.arg for _, g in t.graphs["kernel"] for x in g.toposort() if x.op is Ops.DEFINE_VAR}
  assert {(v.name, v.min, v.max) for v in kvars} == {("i", 1, 10)}   # tinygrad's `p3` read as the variable its CALL binds
  (prg,) = [g for _, g in t.graphs["program"]]
  (v,) = [x for x in prg.src[1].src if x.op is Ops.DEFINE_VAR]
  assert (v.arg.name, v.dtype.name) == ("i", "int32")


def test_the_symbolic_shape_example_holds_at_every_stage():
  rep = check_capture(capture(runpy.run_path(str(EXAMPLES / "symbolic_shape.py"))["program"]))
  holds_fully(rep)
  ns = runpy.run_path(str(EXAMPLES / "symbolic_shape.py"))
  want = [ns["X"][:3].sum(), ns["M"][:, :3].sum(1), (ns["X"][:3] * np.arange(3)).sum()]
  for got, w in zip(rep.values["programs"], want): np.testing.assert_allclose(np.asarray(got).reshape(np.shape(w)), w, rtol=1e-5)


def test_tinyjit_checks_each_binding_as_its_own_step():
  rep = check_capture(capture(runpy.run_path(str(EXAMPLES / "tinyjit_variables.py"))["program"]))
  for r in [*rep.steps, rep]: holds_fully(r)
  X4 = np.arange(10, dtype=np.float32) * 0.25
  bound = []
  for r in [*rep.steps, rep]:
    vals = {b.src[0].arg.name: b.src[1].arg for _, g in r.translation.graphs["kernel_graph"] for b in g.toposort() if b.op is Ops.BIND}
    if vals: bound.append((vals["i"], float(np.asarray(r.values["programs"][0]).reshape(-1)[0])))
  # the first call runs with i = 3, the second (captured by the jit) with i = 5: each step's numbers are its binding's
  assert bound == [(3, pytest.approx(X4[:3].sum())), (5, pytest.approx(X4[:3].sum() + X4[:5].sum()))]


@pytest.mark.parametrize("make, want", [
  (lambda T, v: (T(X) * v).sum(), float((X * 4).sum())),       # the variable as a value: BIND(i, 4) cast and broadcast
  (lambda T, v: T.arange(v).sum(), 6.0),                       # no device, no storage: Tensor.realize() alone skips it
])
def test_a_tensor_realize_skips_is_realized_as_numpy_realizes_it_and_holds(make, want):
  from tinygrad import Tensor, Variable
  rep = check_capture(capture(lambda: make(Tensor, Variable("i", 1, 10).bind(4))))
  holds_fully(rep)
  assert float(np.asarray(rep.capture.outputs[0]).reshape(-1)[0]) == pytest.approx(want)


def test_a_programs_if_block_is_its_stores_gate_and_the_program_runs():
  rep = check_capture(capture(runpy.run_path(str(EXAMPLES / "conv2d_backward.py"))["program"]))
  holds_fully(rep)
  t = rep.translation
  gated = [(g, prg) for (prg, g) in t.graphs["program"] if any(x.op.name == "IF" for x in prg.src[1].src)]
  assert gated, "conv2d's backward no longer makes a program with an IF block"
  for g, prg in gated:
    ifs = [x for x in prg.src[1].src if x.op.name == "IF"]
    stores = [x for x in g.src[1].src if x.op is Ops.STORE and len(x.src) == 3]
    assert len(stores) == len(ifs) and all(s.src[2].dtype.name == "bool" for s in stores)
    assert not any(x.op.name in ("IF", "ENDIF") for x in g.toposort())
  # every kernel that compiles a program ran as it (the copies compile none)
  assert rep.as_programs == (len(rep.capture.programs), len(rep.capture.kernels))


def test_a_precompiled_function_passed_a_variable_reads_it_in_its_own_scope():
  """@function(precompile=True) taking a bound Variable: its body reads it as p1 (its own arg 1), the callified body as p2;
  each resolves to the variable the call binds, at every stage (a nested kernel graph passes it on)."""
  from tinygrad import Tensor, Variable, function

  def program():
    @function(precompile=True)
    def f(x: Tensor, v) -> Tensor: return (x[:v] * 2).sum()
    return f((Tensor(X) * 1).realize(), Variable("i", 1, 10).bind(4))

  rep = check_capture(capture(program))
  for r in [*rep.steps, rep]: holds_fully(r)
  assert float(np.asarray(rep.values["programs"][0]).reshape(-1)[0]) == pytest.approx(float(X[:4].sum() * 2))
  names = {x.arg.name for _, g in rep.translation.graphs["callified"] for x in g.toposort() if x.op is Ops.DEFINE_VAR}
  assert names == {"i"}


def test_the_capture_records_the_values_tinygrad_launched_each_step_with():
  rep = check_capture(capture(runpy.run_path(str(EXAMPLES / "tinyjit_variables.py"))["program"]))
  assert [r.capture.var_vals for r in [*rep.steps, rep]] == [{}, {}, {"i": 3}, {"i": 5}]
  assert head_sum(5).capture.var_vals == {"i": 5}


def jit_stale_shape() -> Report:
  """A TinyJit of `a + 1` called with a[:, :i] for i = 1..4, each output sliced to [:3, :i] and read."""
  from tinygrad import Tensor, TinyJit, Variable
  a = np.arange(30, dtype=np.float32).reshape(3, 10)
  def program():
    jf, t = TinyJit(lambda x: (x + 1).realize()), Tensor(a).realize()
    got = [jf(t[:, :Variable("i", 1, 10).bind(i)])[:3, :i].numpy() for i in range(1, 5)]
    return Tensor(np.concatenate(got, 1)) * 2
  return check_capture(capture(program))


def test_a_tinyjit_replays_output_keeps_the_capture_calls_binding_and_the_slice_past_it_is_reported():
  # tinygrad's defect: a replay's output has the shape (3, i) with i bound to the capture call's value (2), so the
  # replay's [:3, :i] keeps more than the view has; reading it gives the right numbers only because the storage is larger
  from tinygrad import Tensor, TinyJit, Variable
  a = np.arange(30, dtype=np.float32).reshape(3, 10)
  jf, t = TinyJit(lambda x: (x + 1).realize()), Tensor(a).realize()
  sums = [jf(t[:, :Variable("i", 1, 10).bind(i)]).sum().item() for i in range(1, 5)]
  assert sums[:2] == [float((a[:, :i] + 1).sum()) for i in (1, 2)] and sums[2:] == [sums[1]] * 2   # stale from i = 3 on
  rep = jit_stale_shape()
  found = [(v.rule, str(v)) for s in rep.steps for st, vs in s.violations.items() for _, v in vs]
  # the two replays (i = 3, 4) slice their outputs past the stale binding: each reported at its tensor graph, and the
  # capture read every output of a symbolic shape (tinygrad's numpy() refuses one) as its binding's numbers
  assert [r for r, _ in found] == ["tensor.movement_arg"] * 2, found
  assert ["keeps [0, 3) of 2" in found[0][1], "keeps [0, 4) of 2" in found[1][1]] == [True, True], found
  assert not [s.capture.unread for s in rep.steps if "symbolic" in (s.capture.unread or "")]


def test_a_bound_variable_stored_as_an_int_tensor_is_cast_and_holds():
  # Tensor.full(shape, v): tinygrad's weak int variable stored into an int32 buffer, the conversion implicit
  from tinygrad import Tensor, Variable
  rep = check_capture(capture(lambda: Tensor.full((3,), Variable("x", 1, 10).bind(5)) + 1))
  holds_fully(rep)
  assert [np.asarray(v[0]).tolist() for v in rep.values.values()] == [[6, 6, 6]] * 4
  casts = [u for u in rep.translation.graphs["tensor"][0][1].toposort() if u.op is Ops.CAST]
  assert [(c.src[0].op, c.dtype.name) for c in casts] == [(Ops.BIND, "int32")]


def test_a_kernel_indexing_through_views_of_storage_folds_them_into_the_index():
  # a custom kernel's body indexes views of its PARAMs (a flatten; a transpose, flip and shrink): tinygrad's codegen folds
  # them into the index (pm_mops), and so does the translation: no movement op is left in the kernel, and the kernel
  # (as its AST and as its program) gives tinygrad's numbers
  from tinygrad import Tensor, UOp
  from tinygrad.uop.ops import KernelInfo
  a = (np.arange(24, dtype=np.float32).reshape(6, 4) - 10) / 4
  def double_t(c: UOp, x: UOp) -> UOp:
    c, xt = c.flatten(), x.permute((1, 0)).flip((0,)).shrink(((1, 3), (0, 6))).reshape(12)
    i = UOp.range(12, 0)
    return c[i].store(xt[i] * 2.0).end(i).sink(arg=KernelInfo(name="double_t"))
  rep = check_capture(capture(lambda: Tensor.custom_kernel(Tensor.empty(12), Tensor(a).contiguous().realize(), fxn=double_t)[0]))
  (_, kernel), = rep.translation.graphs["kernel"]
  assert not [u.op for u in kernel.toposort() if u.op in (Ops.RESHAPE, Ops.SHRINK, Ops.PERMUTE, Ops.FLIP)]
  assert rep.violations["kernel"] == [] and rep.violations["kernel_graph"] == []
  assert rep.ran["kernel ASTs"] and rep.ran["programs"] and rep.numbers["kernel ASTs"] is None and rep.numbers["programs"] is None
  np.testing.assert_array_equal(rep.capture.outputs[0], (a.T[::-1][1:3] * 2).reshape(12))


def test_a_precompiled_store_at_a_symbolic_offset_holds_at_every_step():
  # a precompiled function over a symbolic-length arg (tinygrad's debuf: its kernels read a max-sized PARAM through
  # SHRINK(PARAM, 0, p3)) storing it into a cache at a symbolic offset, scheduled inside a realize whose slots differ
  from tinygrad import Tensor, UOp, function
  def program():
    cache = Tensor.zeros(16).contiguous().realize()
    @function(precompile=True, allow_implicit=True)
    def store(x: Tensor, sp: UOp) -> Tensor:
      return Tensor(cache.uop.after(cache[sp:sp + x.shape[0]].uop.store(x.uop)))[:sp + x.shape[0]].sum()
    sp, nt = UOp.variable("sp", 0, 8).bind(0), UOp.variable("nt", 1, 8).bind(8)
    t = Tensor.arange(16).float().realize()
    return store(t[sp:sp + nt].clone().realize(), sp)
  rep = check_capture(capture(program))
  for r in [*rep.steps, rep]: holds_fully(r)
  assert float(rep.capture.outputs[0]) == float(np.arange(8).sum())


def test_a_variable_indexing_a_buffer_in_a_program_stays_its_int():
  # table[start_pos] in a function: the program reads the variable as its int and indexes with it, no CAST to index
  from tinygrad import Tensor, UOp, function
  def program():
    table = Tensor([10, 20, 30, 40]).contiguous().realize()
    @function(allow_implicit=True)
    def f(x: Tensor, start_pos) -> Tensor: return x + table[start_pos]
    return f(Tensor([1, 2, 3]), UOp.variable("start_pos", 0, 3).bind(2))
  rep = check_capture(capture(program))
  holds_fully(rep)
  assert np.asarray(rep.values["programs"][0]).reshape(-1).tolist() == [31, 32, 33]
  (_, prg), = rep.translation.graphs["program"]
  assert not [u for u in prg.toposort() if u.op is Ops.CAST and u.dtype.name == "index"]


def test_a_kernel_gathering_through_a_view_reads_its_index_as_a_value():
  # xf[idx[i]] with xf a flatten of storage: the index folded through the view is idx's LOAD, not its INDEX (a place);
  # the evaluator computes the gather at every stage (its bounds cannot be proven: the indices are data)
  from tinygrad import Tensor, UOp
  from tinygrad.uop.ops import KernelInfo
  a, idx = np.arange(12, dtype=np.float32).reshape(3, 4), np.array([11, 0, 5, 7], dtype=np.int32)
  def gather(c: UOp, x: UOp, ix: UOp) -> UOp:
    c, xf = c.flatten(), x.flatten()
    i = UOp.range(4, 0)
    return c[i].store(xf[ix[i]] * 2.0).end(i).sink(arg=KernelInfo(name="gather_view"))
  rep = check_capture(capture(lambda: Tensor.custom_kernel(Tensor.empty(4), Tensor(a).contiguous().realize(), Tensor(idx).realize(),
                                                           fxn=gather)[0] + 0))
  assert all(rep.ran.values()) and all(x is None for x in rep.numbers.values()), rep.numbers
  assert [np.asarray(v[0]).reshape(-1).tolist() for v in rep.values.values()] == [(a.reshape(-1)[idx] * 2).tolist()] * 4

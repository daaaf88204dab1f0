"""kernel.thread_independent: the iterations of a GLOBAL range run as parallel threads, so no element of global storage
one iteration stores may be loaded or stored by another; and optimize keeps such a range a loop."""
from __future__ import annotations

import re

import numpy as np
import pytest
from builders import buf, c, call, ic, rng, sink, f32

from tinyspec import Stage, check
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.lower.optimize import OPTIMIZE, heuristic_opts, optimize_body
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import run
from tinyspec.spec.base import Violation
from tinyspec.uop import AxisType, Ops, RangeArg, UOp

pytestmark = pytest.mark.spec

RULE = "kernel.thread_independent"


def _global(r: UOp) -> UOp:
  return r.replace(arg=RangeArg(r.arg.axis, AxisType.GLOBAL))


def _acc(n: int = 4, kind: AxisType = AxisType.LOOP) -> UOp:
  """out[0] = out[0] + a[r] for r in 0..n: the load is placed in r, so each iteration adds to what the last stored."""
  p0, p1 = UOp.param(0, f32, 1), UOp.param(1, f32, n)
  r = rng(n, 0)
  if kind is AxisType.GLOBAL: r = _global(r)
  st = p0.index(ic(0)).store(p0.after(r).index(ic(0)).load() + p1.index(r).load())
  return sink(st.end(r))


def _scale(n: int = 4, kind: AxisType = AxisType.LOOP) -> UOp:
  """out[r] = a[r] * 2"""
  p0, p1 = UOp.param(0, f32, n), UOp.param(1, f32, n)
  r = rng(n, 0)
  if kind is AxisType.GLOBAL: r = _global(r)
  return sink(p0.index(r).store(p1.index(r).load() * c(2.0)).end(r))


def _races(body: UOp) -> list[Violation]:
  return [v for v in check(body, Stage.KERNEL) if v.rule == RULE]


def _kinds(body: UOp) -> dict[int, AxisType]:
  return {u.arg.axis: u.arg.kind for u in body.toposort() if u.op is Ops.RANGE}


# ---- the rule ----

def test_accumulator_over_global_range_is_flagged() -> None:
  vs = check(_acc(kind=AxisType.GLOBAL), Stage.KERNEL)
  assert [v.rule for v in vs] == [RULE], [str(v) for v in vs]
  v = vs[0]
  assert v.node.op is Ops.STORE
  # the range, and that two iterations store the one element 0
  assert "GLOBAL axis 0" in v.message
  m = re.match(r"iteration (\d+) of GLOBAL axis 0 stores element 0 and iteration (\d+) (stores|loads) it", v.message)
  assert m is not None, v.message
  assert m.group(1) != m.group(2)


def test_accumulator_without_after_is_flagged_for_its_stores() -> None:
  """out[0] = out[0] + a[r] with the load hoisted (not placed in r): every iteration still stores element 0."""
  p0, p1 = UOp.param(0, f32, 1), UOp.param(1, f32, 4)
  r = _global(rng(4, 0))
  body = sink(p0.index(ic(0)).store(p0.index(ic(0)).load() + p1.index(r).load()).end(r))
  (v,) = _races(body)
  assert "stores element 0" in v.message


def test_elementwise_over_global_range_passes() -> None:
  assert check(_scale(kind=AxisType.GLOBAL), Stage.KERNEL) == []


def test_shifted_read_of_the_written_buffer_names_iterations_and_element() -> None:
  """out[r] = out[r+1]: iteration i+1 stores element i+1 that iteration i loads."""
  p0 = UOp.param(0, f32, 5)
  r = _global(rng(4, 0))
  vs = _races(sink(p0.index(r).store(p0.index(r + ic(1)).load()).end(r)))
  assert len(vs) == 1
  m = re.match(r"iteration (\d+) of GLOBAL axis 0 stores element (\d+) and iteration (\d+) loads it; at KERNEL", vs[0].message)
  assert m is not None, vs[0].message
  first, elem, second = map(int, m.groups())
  # whatever model z3 gives must be a real conflict: first stores out[first], second loads out[second + 1]
  assert first == elem and second + 1 == elem and 0 <= second < first < 4
  # z3's model for this query (the same across runs and hash seeds)
  assert (first, elem, second) == (1, 1, 0)


def test_even_stores_and_odd_loads_of_one_buffer_pass() -> None:
  """out[2r] = out[2r+1] + a[r]: the elements stored and loaded never meet, which z3 must prove."""
  p0, p1 = UOp.param(0, f32, 8), UOp.param(1, f32, 4)
  r = _global(rng(4, 0))
  two = ic(2)
  st = p0.index(r * two).store(p0.index(r * two + ic(1)).load() + p1.index(r).load())
  assert check(sink(st.end(r)), Stage.KERNEL) == []


def test_read_back_of_own_element_passes() -> None:
  """out[r] = out[r] * 2: each iteration touches only its own element."""
  p0 = UOp.param(0, f32, 4)
  r = _global(rng(4, 0))
  assert check(sink(p0.index(r).store(p0.index(r).load() * c(2.0)).end(r)), Stage.KERNEL) == []


def _gated_shift(gated: bool) -> UOp:
  """out[r] = out[r+2] for r in 0..4, the store gated by r < 2 or not: the gate is what keeps the stored elements
  (0, 1) apart from the loaded ones (2..5)."""
  p0 = UOp.param(0, f32, 6)
  r = _global(rng(4, 0))
  val = p0.index(r + ic(2)).load()
  st = p0.index(r).store(val, r < ic(2)) if gated else p0.index(r).store(val)
  return sink(st.end(r))


def test_gate_keeps_a_store_apart_from_other_iterations_loads() -> None:
  assert check(_gated_shift(True), Stage.KERNEL) == []
  (v,) = _races(_gated_shift(False))
  assert "loads it" in v.message


def test_accumulator_over_loop_range_is_not_flagged() -> None:
  """A LOOP range runs its iterations in order: an accumulator there is the ordinary form."""
  assert check(_acc(kind=AxisType.LOOP), Stage.KERNEL) == []


def test_accumulator_over_special_is_flagged() -> None:
  """A SPECIAL (a thread id) is a thread range too."""
  p0, p1 = UOp.param(0, f32, 1), UOp.param(1, f32, 8)
  g = UOp(Ops.SPECIAL, ic(0).dtype, (ic(8),), "gidx0")
  body = sink(p0.index(ic(0)).store(p1.index(g).load()))
  (v,) = _races(body)
  assert "SPECIAL gidx0" in v.message and "stores element 0" in v.message


# ---- optimize keeps a range whose iterations conflict a loop ----

def test_heuristic_proposes_global_but_optimize_keeps_racy_range_a_loop() -> None:
  body = _acc()
  assert ("global", 0) in heuristic_opts(body)
  for opts in (None, [("global", 0)]):
    out = optimize_body(body, opts, OPTIMIZE.tables)
    assert _kinds(out) == {0: AxisType.LOOP}, opts
    assert check(out, Stage.KERNEL) == []


def test_optimize_marks_independent_range_global() -> None:
  body = _scale()
  assert heuristic_opts(body) == [("global", 0)]
  for opts in (None, [("global", 0)]):
    out = optimize_body(body, opts, OPTIMIZE.tables)
    assert _kinds(out) == {0: AxisType.GLOBAL}, opts
    assert check(out, Stage.KERNEL) == []


# ---- end to end on OpenCL ----

def _kernel_graph(body: UOp, *args: UOp) -> UOp:
  return sink(args[0].after(call(body, *args)))


def _opencl_sources(root: UOp) -> list[str]:
  rendered = lower(root, backend="opencl")["render"]
  return [u.arg.text for k in kernel_calls(rendered) for u in k.src[0].toposort() if u.op is Ops.SOURCE]


def test_accumulator_kernel_matches_reference_on_opencl(opencl: str) -> None:
  """Run as threads the accumulator would lose updates; kept a loop, OpenCL sums like the reference evaluator."""
  n = 256
  out, a = buf(1), buf(n)
  root = _kernel_graph(_acc(n), out, a)
  inputs = {a.arg.id: np.arange(n, dtype=np.float32), out.arg.id: np.array([1.0], np.float32)}
  ref = run(root, inputs, backend="reference")
  assert float(np.asarray(ref[0]).ravel()[0]) == 1 + n * (n - 1) / 2
  for _ in range(3):
    got = run(root, {k: v.copy() for k, v in inputs.items()}, backend="opencl")
    np.testing.assert_array_equal(np.asarray(got[0]).ravel(), np.asarray(ref[0]).ravel())
  (src,) = _opencl_sources(root)
  assert "get_global_id" not in src


def test_elementwise_kernel_still_runs_as_threads_on_opencl(opencl: str) -> None:
  n = 16
  out, a = buf(n), buf(n)
  root = _kernel_graph(_scale(n), out, a)
  av = np.arange(n, dtype=np.float32)
  np.testing.assert_array_equal(np.asarray(run(root, {a.arg.id: av}, backend="opencl")[0]).ravel(), av * 2)
  (src,) = _opencl_sources(root)
  assert "get_global_id" in src


def test_sum_over_an_axis_matches_reference_on_opencl(opencl: str) -> None:
  """A reduction keeps its output axis parallel (the rule does not misfire on the lowered kernels) and OpenCL gives
  the reference's numbers."""
  av = np.random.default_rng(0).uniform(-1, 1, (6, 10)).astype(np.float32)
  t = Tensor(av)
  root = Tensor.sink(t.sum(axis=1), t.sum(axis=0))
  inputs = inputs_of(root)
  ref = run(root, inputs, backend="reference")
  got = run(root, inputs, backend="opencl")
  for r, g in zip(ref, got): np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(ref[0]).ravel(), av.sum(axis=1), rtol=1e-5, atol=1e-5)
  assert any("get_global_id" in s for s in _opencl_sources(root))


def test_docs_spec_lists_the_rule() -> None:
  from pathlib import Path
  text = (Path(__file__).resolve().parent.parent / "docs" / "spec.md").read_text()
  assert f"| `{RULE}` |" in text


# ---- the shortcut that decides common kernels without z3 ----
@pytest.mark.parametrize("make, r_at, want", [
  (lambda r0, r2: r0 * ic(4) + r2, 1, True),      # the inner range of a row-major index
  (lambda r0, r2: r0 * ic(4) + r2, 0, True),      # the outer one
  (lambda r0, r2: r0 + r2, 0, False),             # r0 = 1, r2 = 0 and r0 = 0, r2 = 1 meet
  (lambda r0, r2: r0 * ic(2) + r2, 0, False),     # 2 * 1 + 0 == 2 * 0 + 2
  (lambda r0, r2: r0 * ic(5) + r2 * ic(6), 0, True),  # steps 5, 10, 15 miss every multiple of 6
  (lambda r0, r2: r0 * ic(3) + r2 * ic(6), 0, False),  # 3 * 2 == 6 * 1
  (lambda r0, r2: r0 * ic(2) + r2 * ic(6), 0, False),  # 2 * 3 == 6 * 1
])
def test_injective_shortcut_agrees_with_z3(make, r_at, want):
  from tinyspec import smt
  from tinyspec.spec.kernel import injective_in
  r0, r2 = rng(4, 0), rng(4, 2)
  e = make(r0, r2)
  r = (r0, r2)[r_at]
  assert injective_in(e, r) is want
  assert (smt.prove_iterations_apart(r, (e, None), (e, None)).status == "proved") is want


def test_injective_shortcut_never_claims_what_z3_refutes():
  from tinyspec import smt
  from tinyspec.spec.kernel import injective_in
  rs = np.random.default_rng(0)
  shown = 0
  for _ in range(150):
    r0, r1 = rng(int(rs.integers(1, 6)), 0), rng(int(rs.integers(1, 6)), 1)
    a, b, k = (int(x) for x in rs.integers(-6, 7, size=3))
    e = r0 * ic(a) + r1 * ic(b) + ic(k)
    if injective_in(e, r0):
      shown += 1
      assert smt.prove_iterations_apart(r0, (e, None), (e, None)).status == "proved", (a, b, k)
  assert shown > 20


# ---- PROGRAM accesses asked as index arithmetic ----
def test_int32_accesses_are_lifted_to_index_only_where_nothing_wraps() -> None:
  from tinyspec.dtype import dtypes
  from tinyspec.spec.kernel import as_index
  i32 = dtypes.int32
  r = UOp.range(8, 0).replace(dtype=i32, src=(UOp.const(i32, 8),))
  e = r.alu(Ops.IDIV, UOp.const(i32, 2)) * UOp.const(i32, 12) + r.alu(Ops.MOD, UOp.const(i32, 3))
  lr, le = as_index((r, e))
  assert lr is UOp.range(8, 0) and le.dtype is dtypes.index and all(u.dtype is not i32 for u in le.toposort())
  assert (le.vmin, le.vmax) == (e.vmin, e.vmax)
  # a loaded int32 is read through a CAST: its value plus one may wrap, so nothing is lifted
  x = UOp.param(1, i32, 8).index(r).load()
  assert as_index((r, x * UOp.const(i32, 2))) is None
  lx, = as_index((x.alu(Ops.MAX, UOp.const(i32, 0)),))
  assert lx.dtype is dtypes.index and any(u.op is Ops.CAST and u.src[0] is x for u in lx.toposort())
  # a narrowing cast is lifted only where it keeps the value
  assert as_index((r.cast(dtypes.int8),)) is not None
  assert as_index(((r * UOp.const(i32, 100)).cast(dtypes.int8),)) is None


def test_lifting_undoes_linearize_so_the_program_asks_the_kernels_question() -> None:
  from tinyspec.spec.kernel import as_index
  a = Tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
  out = (a.permute(1, 0).reshape(4, 6).flip(0) + 1).contiguous()
  steps = lower(UOp(Ops.SINK, src=(out.uop,)), opts=(("global", 0),))
  def store_index(g: UOp) -> UOp:
    return next(u.src[0].src[1] for u in g.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX)
  kernel, program = store_index(steps["lower_reduce"]), store_index(steps["render"])
  assert program.dtype is not kernel.dtype and as_index((program,)) == (kernel,)
  assert [v for v in check(steps["render"], Stage.PROGRAM) if v.rule == RULE] == []

"""Per-rewrite legality: after every single rule application of a pass, the graph the pass returns is
legal at its input stage, its output stage, or their union. Checked for every step of every pass on the parity programs
and on a fixed set of generated cases, and, in detail, for the two passes whose intermediate graphs mix forms: rangeify
(kernels half built, addressing tensor values through view INDEXes) and linearize (some kernels PROGRAMs, some not yet)."""
from __future__ import annotations

import numpy as np
import pytest
from programs import ALL_PROGRAMS, MODES

from fuzz.check.blame import run_steps
from fuzz.check.oracles import Checker, Config, union_violations
from fuzz.generate.kinds import case_for
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.linearize import LINEARIZE
from tinyspec.lower.pipeline import PASSES, passes_through
from tinyspec.lower.rangeify import RANGEIFY
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec
F32 = dtypes.float32


def every_step_legal(p, root: UOp, lo: LowerOptions) -> tuple[UOp, int]:
  """Run p with every step limit k (0 .. all of its applications); assert each partial result is legal at the union."""
  out, total = run_steps(p, root, lo, None)
  assert check(out, p.stage_out) == [], f"{p.name} output"
  for k in range(total):
    part = run_steps(p, root, lo, k)[0]
    vs = union_violations(part, p.stage_in, p.stage_out)
    assert vs == [], f"{p.name} after {k} of {total} rule applications:\n" + "\n".join(map(str, vs[:3]))
  return out, total


def whole_pipeline(root: UOp, lo: LowerOptions, first: int = 0) -> dict[str, int]:
  steps = {}
  for p in PASSES[first:]:
    root, steps[p.name] = every_step_legal(p, root, lo)
  return steps


# assigns (in place, through views, needing a snapshot), value calls, an opaque kernel call, a COPY, empty values, views
CHOSEN = ("store_through_pad_view", "assign_non_pointwise", "assign_cycle_needs_snapshot", "assign_through_shrink", "call_two_outputs",
          "call_nested", "opaque_kernel_call", "copy", "scalar_and_empty", "pad_shrink", "flip_axes", "cumsum_axis0", "views_and_reduce",
          "scatter_add")
PROGS = dict(ALL_PROGRAMS)


def test_chosen_programs_exist() -> None:
  assert set(CHOSEN) <= set(PROGS)


@pytest.mark.parametrize("name", [n for n in CHOSEN if n in PROGS])
@pytest.mark.parametrize("cm,rm", MODES)
def test_every_step_of_every_pass_on_programs(name: str, cm: str, rm: str) -> None:
  prog = PROGS[name]()
  steps = whole_pipeline(prog.root, LowerOptions(callify=cm, realize=rm, opts=(("split", 0, 2), ("unroll", 1))))
  assert steps["rangeify"] > 0 and steps["linearize"] > 0


def test_generated_cases_pass_the_per_rewrite_oracle() -> None:
  """The oracle as the campaign runs it (--per-rewrite), on fixed tensor and kernel-graph cases."""
  ch = Checker(Config(per_rewrite=True, metamorphic=False, blame=False))
  cases = [case_for(7, i) for i in range(48)] + [case_for(7, i, {"kind:kernel": 1.0}) for i in range(16)]
  assert {c.kind for c in cases} == {"tensor", "kernel"}
  for c in cases:
    assert ch.check(c) == [], (c.index, c.kind, c.options)
  fired = {p for p, _ in ch.stats.fired}
  assert {"callify", "rangeify", "simplify", "linearize"} <= fired


# ---- rangeify: kernels half built, stores through padded views ----
def store_into_pad_view() -> tuple[UOp, dict, np.ndarray]:
  b = UOp.buffer(F32, 6, id=1701)
  bv = np.arange(6, dtype=np.float32)
  target = b.reshape((2, 3)).shrink(((0, 2), (1, 2))).pad(((1, 3), (0, 4)))  # b[:, 1:3] at offset (1, 0) of a 3x4 view
  val = UOp.const(F32, 7.0).expand((3, 4)) + b.reshape((3, 2)).pad(((0, 3), (1, 4)))
  root = UOp(Ops.SINK, src=(b.after(target.store(val)),))
  vv = 7.0 + np.pad(bv.reshape(3, 2), ((0, 0), (1, 1)))
  want = bv.reshape(2, 3).copy()
  want[:, 1:3] = vv[1:3, 0:2]
  return root, {1701: bv}, want.reshape(-1)


def test_rangeify_store_target_stays_an_address_at_every_step() -> None:
  root, inputs, want = store_into_pad_view()
  np.testing.assert_array_equal(evaluate(root, inputs)[0], want)
  out, total = every_step_legal(RANGEIFY, root, LowerOptions())
  np.testing.assert_array_equal(evaluate(out, inputs)[0], want)
  names = []
  run_steps(RANGEIFY, root, LowerOptions(), None, lambda r, b, a: names.append(r.name))
  assert {"store_target_through_pad", "store_target_through_view", "store_target_leaf"} <= set(names)
  # between applications some kernel still addresses tensor values through a view INDEX: legal only at the union
  k = names.index("index_leaf_load")
  part = run_steps(RANGEIFY, root, LowerOptions(), k)[0]
  assert any(u.op is Ops.INDEX and u.arg == "view" for u in part.toposort())
  assert "kernel.view_index" in {v.rule for v in check(part, Stage.KERNEL)}
  assert union_violations(part, Stage.TENSOR, Stage.KERNEL) == []


def test_rangeify_view_args_are_legal_between_call_arg_rules() -> None:
  """Kernel args are bound first as the views they read. Until pm_call_args has bound each to its storage, a graph holds
  CALLs with view args: a value at TENSOR, flagged by kgraph.call_arg_storage at KERNEL, legal at their union."""
  b = UOp.buffer(F32, 6, id=1705)
  bv = np.arange(6, dtype=np.float32)
  c = UOp(Ops.CONTIGUOUS, F32, (b.reshape((3, 2)) + b.reshape((3, 2)),))
  root = UOp(Ops.SINK, src=(c.reshape((2, 3)).permute((1, 0)) * b.reshape((2, 3)).permute((1, 0)),))
  want = ((bv + bv).reshape(2, 3) * bv.reshape(2, 3)).T.reshape(-1)  # a kernel graph gives flat storage
  out, total = every_step_legal(RANGEIFY, root, LowerOptions())
  np.testing.assert_array_equal(evaluate(out, {1705: bv})[0], want)
  names = []
  run_steps(RANGEIFY, root, LowerOptions(), None, lambda r, bf, af: names.append(r.name))
  k = min(names.index("call_arg_after_view"), names.index("call_arg_view_to_storage"))
  assert set(names[k:]) == {"call_arg_after_view", "call_arg_view_to_storage"}, "the call args are bound last, once every kernel is built"
  part = run_steps(RANGEIFY, root, LowerOptions(), k + 1)[0]  # one arg bound to its storage, others still views
  views = [a for u in part.toposort() if u.op is Ops.CALL for a in u.src[1:] if a.op is Ops.RESHAPE]
  chains = {v: [x for x in v.toposort() if x.op is Ops.RESHAPE] for v in views}
  # the realized (3, 2) value is read as its (2, 3) reshape: a chain of two views over its buffer's latest version
  assert {len(c) for c in chains.values()} == {1, 2}
  assert all(v.toposort()[0].op is Ops.BUFFER and all(x.src[0].op in (Ops.BUFFER, Ops.AFTER, Ops.RESHAPE) for x in c) for v, c in chains.items())
  at_k = check(part, Stage.KERNEL)
  assert {"kgraph.call_arg_storage", "kgraph.no_movement"} <= {v.rule for v in at_k}
  assert {v.node for v in at_k} <= {x for c in chains.values() for x in c}
  assert check(part, Stage.TENSOR) == []
  np.testing.assert_array_equal(evaluate(part, {1705: bv})[0], want)


def test_rangeify_stopped_in_prepare_returns_the_tensor_graph() -> None:
  b = UOp.buffer(F32, 4, id=1702)
  t = UOp(Ops.TUPLE, src=(b + UOp(Ops.DETACH, F32, (b,)),))
  root = UOp(Ops.SINK, src=(UOp(Ops.GETTUPLE, F32, (t,), 0), b.after(b.store(b * b))))
  for k in (0, 1):  # pm_prepare needs 2 applications (fold the GETTUPLE, drop the DETACH); the schedule takes no GETTUPLE of a TUPLE
    out = run_steps(RANGEIFY, root, LowerOptions(), k)[0]
    assert check(out, Stage.TENSOR) == [] and not any(u.op is Ops.CALL for u in out.toposort())
  every_step_legal(RANGEIFY, root, LowerOptions())


# ---- linearize: a graph of PROGRAM bodies and kernel SINKs ----
def two_kernels() -> UOp:
  a, b = UOp.buffer(F32, 8, id=1703), UOp.buffer(F32, 8, id=1704)
  g = UOp(Ops.SINK, src=((a.reshape((2, 4)) + UOp.const(F32, 1.0).expand((2, 4))).reshape((8,)), b * b))
  for p in passes_through("optimize"): g = p.run(g, LowerOptions(), Trace())
  return g


def test_linearize_builds_programs_only_from_lowered_kernels() -> None:
  g = two_kernels()
  assert check(g, Stage.KERNEL) == []
  out, total = every_step_legal(LINEARIZE, g, LowerOptions())
  calls = lambda x: [u for u in x.toposort() if u.op is Ops.CALL]
  assert len(calls(g)) == 2 and total >= 2
  mixed = None
  for k in range(total + 1):
    part = run_steps(LINEARIZE, g, LowerOptions(), k)[0]
    kinds = sorted(c.src[0].op.name for c in calls(part))
    # a kernel is a PROGRAM only when its LINEAR holds no index dtype; until then it is the kernel SINK it has become
    for c in calls(part):
      if c.src[0].op is Ops.PROGRAM: assert not any(u.dtype is dtypes.index for u in c.src[0].toposort())
      else: assert check(c.src[0], Stage.KERNEL) == []
    if kinds == ["PROGRAM", "SINK"]: mixed = part
  assert mixed is not None, "no step limit gave one kernel linearized and one not"
  # the union holds because each CALL is flagged by one stage only: a PROGRAM body at KERNEL, a kernel SINK at PROGRAM
  at_k = {v.node for v in check(mixed, Stage.KERNEL)}
  at_p = {v.node for v in check(mixed, Stage.PROGRAM)}
  assert {u.src[0].op for u in at_k} == {Ops.PROGRAM} and {u.src[0].op for u in at_p} == {Ops.SINK} and not at_k & at_p
  np.testing.assert_array_equal(evaluate(mixed, {1703: np.arange(8, dtype=np.float32)})[0], np.arange(8, dtype=np.float32) + 1)


# ---- the campaign's oracle: the intermediate graphs of a run, checked as the pass makes them ----
def _twostep_body_pass(calls: list[int]) -> Pass:
  """A KERNEL pass rewriting each kernel body on its own: NEG(x) becomes x*-1 through a RESHAPE, illegal in a kernel,
  that a second rule removes again. The pass's output is legal; the body between the two applications is not."""
  from tinyspec.lower.kernel_map import map_kernels
  from tinyspec.rewrite import PatternMatcher, UPat
  pm = PatternMatcher([
    ("neg_via_reshape", UPat(Ops.NEG, src=(UPat.var("x"),)), lambda x: UOp(Ops.RESHAPE, x.dtype, (x,), ()) * UOp.const(x.dtype, -1)),
    ("drop_reshape", UPat(Ops.RESHAPE, src=(UPat.var("x"),)), lambda x: x),
  ], "twostep_body")
  def run(root, options, trace, tables):
    calls.append(1)
    return map_kernels(root, lambda call, body: trace.rewrite(body, tables.twostep_body, body=True))
  return Pass("twostep_body", Stage.KERNEL, Stage.KERNEL, run, (pm,))


def test_an_illegal_kernel_body_between_two_applications_is_found_and_blamed() -> None:
  from fuzz.generate.case import Case
  calls: list[int] = []
  passes = [*passes_through("rangeify"), _twostep_body_pass(calls)]
  b = UOp.buffer(F32, 4, id=1711)
  case = Case(UOp(Ops.SINK, src=(b.alu(Ops.NEG),)), {1711: np.arange(4, dtype=np.float32)}, {})
  assert Checker(Config(passes=passes, metamorphic=False, gradients=False, numeric_gradients=False)).check(case) == []
  fs = Checker(Config(passes=passes, metamorphic=False, gradients=False, numeric_gradients=False, per_rewrite=True)).check(case)
  assert [f.signature for f in fs] == [("spec", "twostep_body", "neg_via_reshape")]
  assert "after rule application 1 of twostep_body" in fs[0].message and "RESHAPE" in fs[0].message


def test_per_rewrite_checking_runs_each_pass_once() -> None:
  """Every intermediate graph is built from the rewrite's own state, not by running the pass again up to it: each pass
  runs once per lowering however many rule applications it makes."""
  calls: dict[str, int] = {}
  def counted(p: Pass) -> Pass:
    def run(root, options, trace, tables):
      calls[p.name] = calls.get(p.name, 0) + 1
      return p.fn(root, options, trace, tables)
    return Pass(p.name, p.stage_in, p.stage_out, run, p.tables)
  ch = Checker(Config(passes=[counted(p) for p in PASSES], metamorphic=False, gradients=False, numeric_gradients=False, per_rewrite=True))
  for i in range(8):
    calls.clear()
    case = case_for(11, i)
    assert ch.check(case) == [], i
    assert set(calls.values()) == {1}, (i, calls)
  fired: dict[str, int] = {}
  for (p, _), n in ch.stats.fired.items(): fired[p] = fired.get(p, 0) + n
  assert fired["rangeify"] >= 8 and sum(fired.values()) >= 50, fired

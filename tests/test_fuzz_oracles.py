"""Oracles, blame and the reducer, on the reference pipeline and on small passes built here."""
from __future__ import annotations

import numpy as np
import pytest

from fuzz.check.blame import bisect, count_steps, creator, first_failing_step, local_change
from fuzz.check.oracles import Checker, Config, compare, union_violations
from fuzz.reduce.graph import node_count, reduce_case
from fuzz.generate.case import Case
from fuzz.generate.kinds import case_for
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import Ops, UOp


def test_compare_tolerances():
  assert compare(np.array([1, 2], np.int32), np.array([1, 2], np.int32)) is None
  assert "element 1" in compare(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
  assert compare(np.float32([1.0, 1e3]), np.float32([1.00001, 1e3 + 0.05])) is None
  assert compare(np.float32([1.0]), np.float32([1.01])) is not None
  assert compare(np.float64([1.0]), np.float64([1.0 + 1e-5])) is not None
  assert "dtype" in compare(np.array([1], np.int32), np.array([1], np.int64))
  assert compare(np.array([True, False]), np.array([True, True])) is not None
  assert compare([np.int8([1]), None], [np.int8([1]), np.int8([5])]) is None
  assert "2 results against 1" in compare([None, None], [None])
  assert compare(np.float32([np.nan]), np.float32([np.nan])) is None


def test_first_failing_step_bisects():
  for t in (1, 2, 7, 64):
    for k in range(1, t + 1):
      calls: list[int] = []
      def fails(n, k=k, calls=calls):
        calls.append(n)
        return n >= k
      assert first_failing_step(fails, t) == k
      assert len(calls) <= 3 + t.bit_length()
  assert first_failing_step(lambda n: False, 5) is None
  assert first_failing_step(lambda n: True, 5) == 0


# ---- a small pass with one wrong rule ----
def _fold_mul_one_wrong(x):
  return x + UOp.const(x.dtype, 1)  # x * 1 is x, not x + 1


PM = PatternMatcher([
  ("add_zero", UPat(Ops.ADD, src=[UPat.var("x"), UPat.const(dtypes.int32, 0)]), lambda x: x),
  ("mul_one", UPat(Ops.MUL, src=[UPat.var("x"), UPat.const(dtypes.int32, 1)]), _fold_mul_one_wrong),
], "toy")
TOY = Pass("toy", Stage.TENSOR, Stage.TENSOR, lambda root, options, trace, tables: trace.rewrite(root, tables.toy), (PM,))


def _toy_graph():
  b = UOp.buffer(dtypes.int32, 4, id=800)
  z, one = UOp.const(dtypes.int32, 0).expand((4,)), UOp.const(dtypes.int32, 1).expand((4,))
  return UOp(Ops.SINK, src=((b + z) * one,)), {800: np.arange(4, dtype=np.int32)}


def test_blame_finds_the_wrong_application():
  root, inputs = _toy_graph()
  # the CONST operands are expanded, so the toy rules see EXPAND nodes: use scalar constants in a 0-d graph instead
  b = UOp.buffer(dtypes.int32, 1, id=801).reshape(())
  root = UOp(Ops.SINK, src=((b + UOp.const(dtypes.int32, 0)) * UOp.const(dtypes.int32, 1),))
  inputs = {801: np.array([5], np.int32)}
  opts = LowerOptions()
  assert count_steps(TOY, root, opts) == 2
  from tinyspec.semantics import evaluate
  ref = evaluate(root, {k: v.copy() for k, v in inputs.items()})
  b1 = bisect(TOY, root, opts, lambda g: compare(ref, evaluate(g, {k: v.copy() for k, v in inputs.items()})) is not None)
  assert b1 is not None and (b1.rule, b1.step, b1.total) == ("mul_one", 2, 2)
  assert b1.location.endswith(f"test_fuzz_oracles.py:{_fold_mul_one_wrong.__code__.co_firstlineno}")
  assert b1.before.op is Ops.MUL and b1.after.op is Ops.ADD
  b2 = local_change(TOY, root, opts, inputs)
  assert b2 is not None and b2.rule == "mul_one"
  new_add = TOY.run(root, opts, Trace()).src[0]
  b3 = creator(TOY, root, opts, new_add)
  assert b3 is not None and b3.rule == "mul_one"


def test_union_of_stages():
  b = UOp.buffer(dtypes.float32, 4, id=802)
  good = UOp(Ops.SINK, src=(b + b,))
  assert union_violations(good, Stage.TENSOR, Stage.TENSOR) == []
  r = UOp.range(4, 0)
  mixed = UOp(Ops.SINK, src=(b + b, UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 4),), r.arg)))
  assert check(mixed, Stage.TENSOR) != []
  assert len(union_violations(mixed, Stage.TENSOR, Stage.TENSOR)) == len(check(mixed, Stage.TENSOR))


def test_reference_pipeline_passes_every_oracle():
  ch = Checker(Config())
  for i in range(25):
    assert ch.check(case_for(1234, i)) == [], i
  assert ch.stats.cases == 25 and sum(ch.stats.fired.values()) > 0


def test_per_rewrite_mode_on_the_kernel_passes():
  ch = Checker(Config(per_rewrite=True, metamorphic=False,
                      per_rewrite_passes=frozenset({"callify", "simplify", "optimize", "lower_reduce"})))
  for i in range(4):
    assert ch.check(case_for(99, i)) == [], i


def test_per_rewrite_mode_sees_an_intermediate_graph():
  # a rule whose result is illegal at TENSOR (a RANGE in a tensor graph) that a second rule removes again: the pass's
  # output is legal, only the graph between the two applications is not
  marker = UOp.const(dtypes.index, 4)
  pm = PatternMatcher([
    ("neg_to_range", UPat(Ops.NEG, src=(UPat.var("x"),)), lambda x: UOp(Ops.SUB, x.dtype, (x, UOp(Ops.RANGE, dtypes.index, (marker,), None)))),
    ("drop_range", UPat(Ops.SUB, src=(UPat.var("x"), UPat(Ops.RANGE))), lambda x: x.alu(Ops.MUL, UOp.const(x.dtype, -1))),
  ], "twostep")
  p = Pass("twostep", Stage.TENSOR, Stage.TENSOR, lambda root, options, trace, tables: trace.rewrite(root, tables.twostep), (pm,))
  b = UOp.buffer(dtypes.int32, 1, id=804).reshape(())
  case = Case(UOp(Ops.SINK, src=(b.alu(Ops.NEG),)), {804: np.array([3], np.int32)}, {})
  assert Checker(Config(passes=[p], metamorphic=False)).check(case) == []
  fs = Checker(Config(passes=[p], metamorphic=False, per_rewrite=True)).check(case)
  assert [f.signature for f in fs] == [("spec", "twostep", "neg_to_range")]


def test_a_broken_pass_is_a_finding_with_its_rule():
  from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, broken_pipeline
  bug = BUGS_BY_NAME["gettuple_wrong_output"]
  b = UOp.buffer(dtypes.int32, 3, id=803)
  p = UOp.param(0, dtypes.int32, 3)
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(p + p, p * p)), b))
  root = UOp(Ops.SINK, src=(call.gettuple(0),))
  case = Case(root, {803: np.array([1, 2, 3], np.int32)}, {"callify": "inline", "realize": "minimal", "opts": None})
  fs = Checker(Config(passes=broken_pipeline(bug), metamorphic=False)).check(case)
  assert [f.signature for f in fs] == [("parity", "callify", "inline_gettuple_of_call")]
  assert fs[0].blame is not None and fs[0].blame.location.startswith("fuzz/testbed/seeded_bugs.py:")
  assert Checker(Config(metamorphic=False)).check(case) == []


def test_reducer_keeps_the_failure_and_shrinks():
  # a failure that needs a NEG on float32 somewhere: the reducer must keep one and drop nearly everything else
  def fails(c: Case) -> bool:
    return any(u.op is Ops.NEG and u.dtype is dtypes.float32 for u in c.root.toposort())
  start = next(c for c in (case_for(5, i) for i in range(500)) if c.kind == "tensor" and fails(c) and node_count(c.root) >= 12)
  small = reduce_case(start, fails)
  assert fails(small) and check(small.root, Stage.TENSOR) == []
  assert node_count(small.root) <= 5 < node_count(start.root)


@pytest.mark.parametrize("seed", [0, 1])
def test_reducer_result_is_locally_minimal(seed):
  from fuzz.reduce.graph import Reducer, cost
  def fails(c: Case) -> bool: return any(u.op is Ops.REDUCE for u in c.root.toposort())
  start = next(c for c in (case_for(seed, i) for i in range(500)) if c.kind == "tensor" and fails(c))
  r = Reducer(fails)
  small = r.reduce(start)
  assert fails(small)
  # no single move of the reducer gives a smaller case that still fails
  assert not any(cost(c) < cost(small) and r.ok(c) for c in r.candidates(small))


def _misaligned_call_gradient(ctx: UOp, ret: UOp):
  """The backward call's arg gradients handed to the wrong slots (reversed) when the args share a shape."""
  from tinyspec import autograd
  good = autograd._call_grad(ctx, ret)
  return (None, *reversed(good[1:])) if all(a.shape == ret.src[1].shape for a in ret.src[1:]) else good


def test_gradient_oracle_finds_a_broken_call_gradient_and_only_then():
  """Gradients through value calls against the inlined graph: silent on the real rules, a metamorphic finding
  once the value-call gradient rule misplaces its slots, and part of every case's check."""
  from tinyspec import autograd
  cases = [c for c in (case_for(0, i) for i in range(300)) if c.kind == "tensor"]
  assert [f for c in cases if (f := Checker(Config()).gradient(c)) is not None] == []
  chk = Checker(Config(gradient_rules=autograd.pm_gradient.replace_rule("grad_value_call", fn=_misaligned_call_gradient)))
  hits = [(c, f) for c in cases if (f := chk.gradient(c)) is not None]
  # misplaced slots give wrong gradients, and where the swapped shapes then clash, an evaluation error; the numeric
  # oracle (stage autograd) speaks where the through-calls one saw nothing
  assert all(f.stage in ("gradient", "autograd") for _, f in hits)
  wrong = [(c, f) for c, f in hits if f.signature == ("metamorphic", "gradient", "through_call_vs_inlined")]
  assert wrong and wrong[0][1].signature in {f.signature for f in chk.check(wrong[0][0])}

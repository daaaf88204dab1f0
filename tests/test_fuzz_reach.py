"""What makes three kinds of pass-rule mistake die: a swapped rule wrong only at a point the spec gives a value (a zero
divisor) is refuted at a campaign's start; generated optimize actions reach reduce ranges; integer kernels hold index
arithmetic past int32. Each witness is a generated case of a fixed seed that the mutant's pipeline fails and the
reference passes. And the regression of the reference bug a reduced `index_to_int` finding showed: a TENSOR value of
dtype `index` stored by a kernel."""
from __future__ import annotations

import random

import numpy as np
import pytest

from fuzz.check.oracles import Checker, Config
from fuzz.check.changed_rules import changed_rules, prove_changed
from fuzz.generate.int_kernels import int_kernel_case
from fuzz.generate.opts import Spot, draw_opts, every_opt, kernel_spots, split_factor, tensor_spots
from fuzz.generate.kinds import case_for
from fuzz.testbed.mutants import MUTANTS_BY_NAME
from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import cpu
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp


def _findings(case, passes=None) -> list:
  return Checker(Config(passes=passes, backends=("reference",))).check(case)


def _first_killing(name: str, n: int, make) -> tuple:
  """The first of n generated cases that the mutant's pipeline fails and the reference passes: (index, finding)."""
  passes = MUTANTS_BY_NAME[name].pipeline()
  for i in range(n):
    c = make(i)
    if (fs := _findings(c, passes)) and not _findings(c): return i, fs[0]
  return None, None


# ---- a zero divisor: the prover at a campaign's start ----
def test_changed_rules_refute_a_rule_wrong_only_at_a_zero_divisor():
  m = MUTANTS_BY_NAME["idiv_self_by_zero"]
  refs = changed_rules(m.pipeline())
  assert [r.qualname for r in refs] == ["simplify/idiv_self"]
  proved = prove_changed(refs)
  [res] = proved.results
  assert res.status == "refuted", res.line()
  cx = res.counterexample
  assert cx.slots[0][1] == 0 and cx.lhs == 0 and cx.rhs == 1 and cx.confirmed == "evaluate"


def test_changed_rules_report_a_counterexample_c_defines_when_there_is_one():
  # the floor-division fold is wrong at negative operands and (as 0 // 0) nowhere else: a C-defined point is reported
  res = prove_changed(changed_rules(MUTANTS_BY_NAME["fold_divmod_floor"].pipeline())).results[0]
  assert res.status == "refuted"
  for d in res.per_dtype:
    if d.refuted is not None:
      divisors = [u.src[1].arg for u in d.refuted.before.toposort() if u.op in (Ops.IDIV, Ops.MOD) and u.src[1].op is Ops.CONST]
      assert 0 not in divisors, d.refuted.describe()


# ---- optimize actions over the ranges a case holds ----
def test_drawn_opts_split_reduce_and_loop_ranges_by_dividing_and_other_factors():
  spots = [Spot(0, 4, False), Spot(1, 6, True)]
  feats: set[str] = set()
  opts = [o for i in range(300) for o in draw_opts(random.Random(i), spots, None, feats)]
  assert ("split", 1, 2) in opts and ("split", 1, 3) in opts and ("split", 0, 2) in opts
  assert ("unroll", 0) in opts and ("unroll", 1) in opts and ("global", 0) in opts
  assert {"opt:split:divides", "opt:split:not_dividing", "opt:on_reduce", "opt:on_loop"} <= feats
  assert any(o[0] == "split" and o[1] == 1 and 6 % o[2] for o in opts)
  assert split_factor(random.Random(0), 2)[1] is False  # a bound with no proper divisor gets a factor that is refused


def test_tensor_spots_name_the_reduce_ranges_after_the_output_axes():
  x = UOp.buffer(dtypes.float32, 24).reshape((4, 6))
  spots = tensor_spots(UOp(Ops.SINK, src=(x.reduce(Ops.ADD, 1),)))
  assert Spot(1, 4, True) in spots and Spot(0, 6, False) in spots


def test_a_kernel_case_alternative_is_an_opt_that_applies():
  c = int_kernel_case(random.Random("reach:alt:3"))
  acts = every_opt(kernel_spots(c.root))
  assert acts
  c.options = {**c.options, "opts": None}
  [alt] = Checker(Config()).alternatives(c)
  assert alt["opts"][0] in acts


def test_generated_cases_kill_a_short_split_of_a_reduce_range():
  i, f = _first_killing("split_reduce_short", 200, lambda i: int_kernel_case(random.Random(f"reach:split:{i}")))
  assert i is not None, "no generated integer kernel splits a reduce range"
  assert f.signature[1:] == ("optimize", "split_reduce_ranges")


def test_campaign_cases_split_reduce_ranges():
  want = {"split_end_ranges", "split_reduce_ranges", "unroll_end", "unroll_reduce", "mark_global"}
  checker = Checker(Config(backends=("reference",)))
  for i in range(120):  # until every one has fired
    checker.check(case_for(0, i))
    fired = {r for p, r in checker.stats.fired if p == "optimize"}
    if want <= fired: break
  assert want <= fired, want - fired


# ---- index arithmetic past int32 ----
def test_generated_cases_kill_an_index_always_lowered_to_int32():
  i, f = _first_killing("index_always_int32", 100, lambda i: int_kernel_case(random.Random(f"reach:wide:{i}")))
  assert i is not None, "no generated integer kernel needs int64 index arithmetic"
  assert f.signature[1:] == ("linearize", "index_to_int")


# ---- the reference bug: index values in storage ----
@pytest.mark.parametrize("value", [UOp.const(dtypes.index, 0), UOp.const(dtypes.index, 2 ** 40).expand((3,)),
                                   UOp.variable("n", 0, 7).bind(5)])
def test_a_stored_index_value_lowers_and_runs(value):
  # linearize typed the kernel's PARAM int32 or int64 but left the kernel graph's BUFFER `index` (call.param_dtype)
  g = UOp(Ops.SINK, src=(value,))
  want = np.asarray(evaluate(g, {})[0])
  out = lower(g)["render"]
  for got in (evaluate(out, {})[0], cpu.run(out, {})[0]):
    np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want)

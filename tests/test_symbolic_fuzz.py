"""The symbolic fuzzer: the reference simplifier survives it; each deliberately unsound rule is found and blamed."""
from __future__ import annotations

import numpy as np
import pytest

from fuzz.symbolic import IDX, Leaf, SymbolicChecker, SymCase, _leaf_name, case_for, symbolic_campaign
from tinyspec.prove.templates import slot_node
from fuzz.unsound import VARIANTS
from tinyspec.uop import substitute
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec


def _at(expr: UOp, leaves: list[Leaf], assignment: dict[str, int]) -> int:
  """expr's value by the reference evaluator, its leaves replaced by the assignment's constants."""
  sub = {lf.node: UOp.const(IDX, assignment[_leaf_name(lf.node)]) for lf in leaves}
  return int(np.asarray(evaluate(substitute(expr, sub))).reshape(()))


def test_cases_are_deterministic_and_view_shaped():
  a, b = case_for(3, 7), case_for(3, 7)
  assert a.expr is b.expr
  ops = {u.op for i in range(40) for u in case_for(0, i).expr.toposort()}
  assert {Ops.IDIV, Ops.MOD, Ops.WHERE, Ops.MAX, Ops.ADD, Ops.MUL, Ops.RANGE, Ops.DETACH} <= ops


def test_reference_simplifier_has_no_findings():
  s = symbolic_campaign(seconds=60, seed=1, max_cases=150, z3_timeout_ms=200)
  assert s.cases == 150
  assert not s.findings, s.text()
  assert s.z3_queries > 0


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsound_variant_is_found_and_blamed(variant):
  s = symbolic_campaign(seconds=60, seed=0, pm=variant.matcher(), max_cases=400, z3_timeout_ms=200,
                        stop_when=lambda f: f.rule == variant.rule)
  hits = [f for f in s.findings if f.oracle == "equal" and f.rule == variant.rule]
  assert hits, s.text()
  f = hits[0]
  # the finding's assignment really separates the original expression from the simplified one
  assert _at(f.case.expr, f.case.leaves, f.assignment) != _at(f.simplified, f.case.leaves, f.assignment)


def test_bounds_oracle_flags_a_value_outside_vmin_vmax():
  # the leaf's node claims [0, 3]; the assignments reach 10: the sum above it leaves its bounds
  node = slot_node(0, IDX, 0, 3)
  case = SymCase(node + UOp.const(IDX, 1), [Leaf(node, 0, 10)])
  fs = SymbolicChecker(use_z3=False).check(case, np.random.default_rng(0))
  assert fs and fs[0].oracle == "bounds"
  assert fs[0].node.vmax == 4


def test_z3_finds_a_difference_the_random_rows_miss():
  # the off-by-one rule folds x % 1000 to x for x in [-999, 1000]: only x == 1000 tells them apart
  v = next(x for x in VARIANTS if x.name == "mod_below_divisor_off_by_one")
  node = slot_node(0, IDX, -999, 1000)
  case = SymCase(node.alu(Ops.MOD, UOp.const(IDX, 1000)), [Leaf(node, -999, 1000)])
  chk = SymbolicChecker(v.matcher(), z3_timeout_ms=2000)
  s, steps = chk.simplify(case.expr)
  assert s is node
  env = {node: np.arange(-999, 1000, 7, dtype=np.int64)}  # rows that all agree
  fs = chk.check_z3(case, s, steps, env)
  assert len(fs) == 1 and fs[0].by == "z3"
  assert fs[0].assignment == {"v0": 1000} and fs[0].rule == "mod_below_divisor"
  assert _at(case.expr, case.leaves, fs[0].assignment) == 0 and _at(s, case.leaves, fs[0].assignment) == 1000


def test_cli_fuzz_symbolic(capsys):
  from tinyspec.cli import main
  assert main(["fuzz", "--symbolic", "--seconds", "30", "--max-cases", "15"]) == 0
  assert "symbolic fuzz summary: seed 0, 15 cases" in capsys.readouterr().out

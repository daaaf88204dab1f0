"""Integer rules fuzzed where they live: integer kernel cases in the reference campaign (fuzz.generate.int_kernels), and
the rules a campaign's pipeline swapped in proven or refuted at its start (fuzz.check.changed_rules)."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.check.oracles import Checker, Config
from fuzz.check.changed_rules import changed_rules
from fuzz.corpus.refutations import counterexample_case
from fuzz.corpus.store import load_entry
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.engine.reference_target import replay_pipeline
from fuzz.engine.symbolic_target import SymbolicTarget
from fuzz.generate.int_kernels import int_kernel_case, wrap_points
from fuzz.generate.strategies import int_kernels
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.generate.case import INT_SHARE
from fuzz.generate.kinds import case_for
from fuzz.testbed.unsound import VARIANTS
from tinyspec.lower.pipeline import PASSES
from tinyspec.prove.prover import Prover, RuleRef
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check

VARIANT = {v.name: v for v in VARIANTS}


def int_cases(n: int, tag: str) -> list:
  return [int_kernel_case(random.Random(f"int-test:{tag}:{i}")) for i in range(n)]


@pytest.fixture(scope="module")
def many() -> list:
  return int_cases(200, "many")


# ---- the cases ----
def test_int_cases_are_legal_kernel_graphs_free_of_undefined_behaviour(many):
  for c in many:
    assert c.kind == "kernel" and "kind:int" in c.features
    assert check(c.root, Stage.KERNEL_GRAPH) == []
    assert kernel_unsafe_reason(c.root, c.inputs) is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_kernels())
def test_the_hypothesis_strategy_gives_legal_safe_int_cases(case):
  assert case.kind == "kernel" and check(case.root, Stage.KERNEL_GRAPH) == [] and kernel_unsafe_reason(case.root, case.inputs) is None


def test_int_cases_hold_every_width_negatives_and_wrap_points(many):
  dts = {c.root.src[0].dtype for c in many}
  assert {d.name for d in dts} == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
  signed = [c for c in many if c.root.src[0].dtype.is_signed]
  vals = {v for c in signed for a in c.inputs.values() for v in a.tolist()}
  assert any(v < 0 for v in vals)
  # the inputs of each dtype reach its wrap points: MIN, -1, 0, MAX and the width-1
  for dt in dts:
    seen = {v for c in many for a in c.inputs.values() if a.dtype == dt.np for v in a.tolist()}
    want = {dt.min, dt.max, 0, dt.bits - 1} | ({-1} if dt.is_signed else set())
    assert want <= seen, f"{dt.name}: {sorted(want - seen)} never drawn"
  assert all(dt.min in wrap_points(dt) and dt.max in wrap_points(dt) for dt in dts)


def test_int_cases_are_a_share_of_the_campaign_and_leave_the_other_cases_as_they_were():
  n = 300
  kinds = [case_for(3, i) for i in range(n)]
  ints = [i for i, c in enumerate(kinds) if "kind:int" in c.features]
  assert 0.04 * n < len(ints) < 0.2 * n, f"{len(ints)} of {n} cases are integer kernels; INT_SHARE is {INT_SHARE}"
  # switched off, every other case is the same graph (interned: the same object) with the same inputs
  for i in range(60):
    if i in ints: continue
    off = case_for(3, i, {"kind:int": 0.0})
    assert off.root is kinds[i].root and off.inputs.keys() == kinds[i].inputs.keys()
  assert all("kind:int" not in case_for(3, i, {"kind:int": 0.0}).features for i in ints[:10])
  # kernel graphs switched off switch integer kernels off too (they are kernel graphs), unless asked for by name
  assert all(case_for(3, i, {"kind:kernel": 0.0}).kind == "tensor" for i in ints[:10])
  assert all("kind:int" in case_for(3, i, {"kind:kernel": 0.0, "kind:int": INT_SHARE}).features for i in ints[:10])


def test_reference_pipeline_passes_int_cases(many):
  checker = Checker(Config(metamorphic=False))
  bad = [(i, f.sig_str, f.message[:200]) for i, c in enumerate(many) for f in checker.check(c)]
  assert bad == []
  fired = {r for p, r in checker.stats.fired if p == "simplify"}
  # the rules whose mistakes need negative operands or a wrapped sum are reached
  assert {"mod_below_divisor", "mod_constant_quotient", "idiv_split_divisible", "mod_split_divisible", "max_by_bounds"} <= fired


# ---- changed rules at the campaign's start ----
def test_the_reference_pipeline_has_no_changed_rule():
  assert changed_rules(PASSES) == []
  same_tables = [p.with_table(next(iter(p.tables.values()))) if p.tables else p for p in PASSES]
  assert changed_rules(same_tables) == []


def test_a_swapped_rule_is_the_one_changed_rule_even_in_two_passes():
  v = VARIANT["idiv_split_no_sign"]
  assert [(r.pass_name, r.name) for r in changed_rules(v.pipeline())] == [("simplify", "idiv_split_divisible")]
  # the same function swapped into simplify and optimize is one rule to prove
  both = [p.replace_rule(v.rule, v.fn) if p.name in ("simplify", "optimize") else p for p in PASSES]
  assert [r.name for r in changed_rules(both)] == ["idiv_split_divisible"]


def test_unchanged_pipeline_proves_nothing_at_start(tmp_path):
  out = io.StringIO()
  s = run_campaign(CampaignConfig(seconds=60, workers=0, corpus=str(tmp_path), max_cases=1, passes=list(PASSES)), out)
  assert "prove:" not in out.getvalue() and "prove" not in s.phase
  assert not s.findings


@pytest.mark.parametrize("name", ["mod_below_divisor_forgets_negative", "mod_split_no_sign"])
def test_a_campaign_reports_a_refuted_rule_before_its_first_case(name, tmp_path):
  v = VARIANT[name]
  out = io.StringIO()
  s = run_campaign(CampaignConfig(seconds=60, workers=0, corpus=str(tmp_path), max_cases=1, passes=v.pipeline(), stop_on_finding=True), out)
  assert s.cases == 0  # found before any case ran
  [f] = s.findings
  assert f.signature == ("prove", "simplify", v.rule) and f.case < 0
  assert "counterexample" in f.message and "fuzz/testbed/" in f.message
  assert "refuted  simplify/" in out.getvalue() and f"finding: prove/simplify/{v.rule} (at start" in out.getvalue()
  # the entry is a counterexample kernel that still fails through the campaign's pipeline, and passes the reference one
  e = load_entry(f.path)
  assert e.case.kind == "kernel"
  assert replay_pipeline(e, v.pipeline())[0] and not replay_pipeline(e)[0]


def test_the_symbolic_target_proves_its_swapped_rule_at_start(tmp_path):
  v = VARIANT["mod_constant_quotient_floor"]
  target = SymbolicTarget(pm=v.matcher())
  assert [r.name for r in target.changed_rules(None)] == [v.rule] and SymbolicTarget().changed_rules(None) == []
  s = run_campaign(CampaignConfig(seconds=60, workers=0, corpus=str(tmp_path), max_cases=1, target=target, stop_on_finding=True), io.StringIO())
  assert [f.signature for f in s.findings] == [("prove", "simplify", v.rule)]


@pytest.mark.parametrize("name", [v.name for v in VARIANTS])
def test_every_counterexample_kernel_stores_the_value_of_the_rewritten_node(name):
  # a slot whose value equals a constant of the rule (x % c at x == c) stays a load of its own in the kernel
  v = VARIANT[name]
  ref = RuleRef("simplify", "pm_simplify", v.rule_obj())
  res = Prover(samples=60, timeout_ms=500).prove(ref)
  cxs = [d.refuted for d in res.per_dtype if d.refuted is not None]
  assert cxs
  for cx in cxs:
    if cx.confirmed != "evaluate": continue  # its value is z3's only
    c = counterexample_case(ref, cx)
    stored = np.asarray(evaluate(c.root, c.copy_inputs())[0]).reshape(-1)[0]
    assert int(stored) == cx.lhs, cx.describe()


# ---- the campaign finds what needs negative operands through the new cases ----
@pytest.mark.slow
@pytest.mark.parametrize("name", ["mod_below_divisor_forgets_negative", "mod_constant_quotient_floor"])
def test_a_campaign_finds_a_sign_bug_through_int_cases(name, tmp_path):
  v = VARIANT[name]
  # int cases at 0.7 of the campaign: both bugs are found within its first 30 cases at seed 0 (at 0.5, one of them took 89)
  cfg = CampaignConfig(seconds=120, workers=0, corpus=str(tmp_path), max_cases=120, passes=v.pipeline(), prove_changed=False,
                       weights={"kind:int": 0.7}, reduce_seconds=5, stop_when=lambda r: r.signature[2] == v.rule)
  s = run_campaign(cfg, io.StringIO())
  hits = [f for f in s.findings if f.signature == ("parity", "simplify", v.rule)]
  assert hits, f"not found in {s.cases} cases: {[f.signature for f in s.findings]}"
  assert "kind:int" in case_for(cfg.seed, hits[0].case, cfg.weights).features

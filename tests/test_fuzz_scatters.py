"""The scatter kernel generator (fuzz.generate.scatters): legal, screened cases of both forms, whose lowering keeps their
meaning, reaching the scatter pass and the atomics; the campaign draws them and finds a broken scatter rule."""
from __future__ import annotations

import random

import pytest

from fuzz.check.agree import compare
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.generate.case import SCATTER_FORM_WEIGHTS
from fuzz.generate.scatters import scatter_kernel_case
from fuzz.generate.kinds import case_for
from tinyspec import Stage, check
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.semantics.graph import evaluate
from tinyspec.uop import AxisType, Ops, kernel_calls, substitute, walk

KERNEL_PASSES = [p for p in PASSES if p.name not in ("callify", "rangeify", "render")]


def _atomics(root) -> list:
  return [u for c in kernel_calls(root) for u in walk((c.src[0],)) if u.op is Ops.ATOMIC]


def test_cases_are_legal_screened_and_keep_their_meaning_through_the_passes():
  feats: set[str] = set()
  scattered = 0
  for s in range(60):
    c = scatter_kernel_case(random.Random(s))
    assert check(c.root, Stage.KERNEL_GRAPH) == [], s
    assert kernel_unsafe_reason(c.root, c.inputs) is None, s
    ref = evaluate(c.root, c.copy_inputs())
    stages = lower(c.root, passes=KERNEL_PASSES, **c.options)
    for name, r in stages.items(): assert compare(ref, evaluate(r, c.copy_inputs())) is None, (s, name)
    scattered += bool(_atomics(stages["linearize"]))
    feats |= c.features
  assert {f"scatter:{f}" for f in SCATTER_FORM_WEIGHTS} | {"scatter:atomic:ADD", "scatter:atomic:MAX", "scatter:threads", "scatter:base"} <= feats
  assert scattered >= 50  # one-hot sums over one row fold to a masked sum, not a scatter


def test_form_weights_steer_the_forms():
  only = {f.removeprefix("scatter:") for s in range(20) for f in scatter_kernel_case(random.Random(s), {"scatter:atomic": 0.0}).features
          if f in ("scatter:onehot", "scatter:atomic")}
  assert only == {"onehot"}


def test_threads_meet_on_elements():
  # the GLOBAL form runs its positions as threads that update shared rows: legal only because the updates are atomic
  for s in range(80):
    c = scatter_kernel_case(random.Random(s), {"scatter:onehot": 0.0})
    if "scatter:threads" not in c.features: continue
    body = kernel_calls(c.root)[0].src[0]
    assert any(u.op is Ops.RANGE and u.arg.kind is AxisType.GLOBAL for u in walk((body,)))
    assert check(body, Stage.KERNEL) == []
    # the same kernel with plain stores is a race the spec rejects
    plain = substitute(body, {a: a.src[0].store(a.src[1], *a.src[2:]) for a in walk((body,)) if a.op is Ops.ATOMIC})
    assert "kernel.thread_independent" in {v.rule for v in check(plain, Stage.KERNEL)}
    return
  pytest.fail("no case with threads in 80 draws")


def test_the_campaign_draws_scatter_cases():
  kinds = [case_for(0, i).features for i in range(400)]
  assert 5 <= sum("kind:scatter" in f for f in kinds) <= 60
  assert not any("kind:scatter" in case_for(0, i, {"kind:scatter": 0.0}).features for i in range(200))


# ---- the campaign on scatter cases ----
SCATTER_WEIGHTS = {"kind:scatter": 0.9}


def test_a_campaign_on_scatter_cases_finds_nothing_in_the_reference_and_finds_a_broken_scatter(tmp_path):
  import io
  from fuzz.engine.campaign import run_campaign
  from fuzz.engine.config import CampaignConfig
  from fuzz.testbed.mutants import MUTANTS_BY_NAME
  # bounded by cases, not time; the seconds are a backstop
  ref = run_campaign(CampaignConfig(seconds=600, seed=3, workers=0, corpus=str(tmp_path / "ref"), max_cases=24, weights=SCATTER_WEIGHTS,
                                    backends=("reference", "cpu"), cc="gcc"), io.StringIO())
  assert ref.cases == 24 and [f.signature for f in ref.findings] == []
  m = MUTANTS_BY_NAME["scatter_row_plus_k"]
  s = run_campaign(CampaignConfig(seconds=600, seed=3, workers=0, corpus=str(tmp_path / "m"), max_cases=24, weights=SCATTER_WEIGHTS,
                                  passes=m.pipeline(), prove_changed=False, reduce_seconds=20,
                                  stop_when=lambda r: r.signature[1:] == ("scatter", m.rule)), io.StringIO())
  assert any(f.signature[1:] == ("scatter", m.rule) for f in s.findings), [f.signature for f in s.findings]

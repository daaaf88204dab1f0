"""The sharded tensor generator (fuzz.generate.shards) and the sharded-vs-one-device oracle (fuzz.check.multi_twin):
legal cases that lower and keep their meaning, the features they reach, twins that mean what their cases mean, the
oracle finding a broken multi rule, and a campaign over sharded cases that finds nothing in the real pipeline."""
from __future__ import annotations

import io
import random

import numpy as np
from hypothesis import HealthCheck, given, settings

from fuzz.check.agree import compare
from fuzz.check.multi_twin import SHARD_DEVICES, multi_devices, one_device_twin, sharded_twin
from fuzz.check.oracles import Checker, Config
from fuzz.generate.shards import multi_case
from fuzz.generate.strategies import multi_cases
from fuzz.generate.kinds import case_for
from fuzz.testbed.mutants import MUTANTS_BY_NAME
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import lower
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp, walk

NO_KERNELS = {"kind:kernel": 0.0}  # no int, edge or scatter kernel cases either


def test_cases_are_legal_lower_and_keep_their_meaning():
  feats: set[str] = set()
  for s in range(40):
    c = multi_case(random.Random(s))
    assert check(c.root, Stage.TENSOR) == [], s
    assert multi_devices(c.root), s
    ref = evaluate(c.root, c.copy_inputs())
    stages = lower(c.root, **c.options)
    assert not any(u.op is Ops.MULTI for u in walk((stages["multi"],))), s
    assert compare(ref, evaluate(stages["render"], c.copy_inputs())) is None, s
    feats |= c.features
  assert {"kind:multi", "multi:axis", "multi:replicated", "multi:uneven", "multi:allreduce", "multi:call_per_shard",
          "multi:call_gathered", "multi:grad", "multi:matmul", "multi:gather", "multi:view_gathers", "multi:devices3"} <= feats


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_cases())
def test_the_strategy_gives_legal_sharded_cases(case):
  assert case.kind == "tensor" and "kind:multi" in case.features
  assert check(case.root, Stage.TENSOR) == []


def test_step_weights_steer_the_steps():
  steps = {f for s in range(15) for f in multi_case(random.Random(s), {"multi:view": 0.0, "multi:call": 0.0}).features
           if f.startswith("multi:step:")}
  assert steps and not steps & {"multi:step:view", "multi:step:call"}


def test_the_campaign_draws_multi_cases():
  kinds = [case_for(0, i).features for i in range(400)]
  assert 5 <= sum("kind:multi" in f for f in kinds) <= 50
  assert not any("kind:multi" in case_for(0, i, {"kind:multi": 0.0}).features for i in range(200))


# ---- the twins ----
def test_the_one_device_twin_is_single_device_and_means_the_case():
  for s in range(15):
    c = multi_case(random.Random(s))
    twin = one_device_twin(c.root)
    assert check(twin, Stage.TENSOR) == [], s
    assert not multi_devices(twin) and not any(u.op is Ops.COPY for u in twin.toposort()), s
    assert compare(evaluate(c.root, c.copy_inputs()), evaluate(twin, c.copy_inputs())) is None, s


def test_the_sharded_twin_shards_every_input_and_means_the_case():
  applied = 0
  for i in range(60):
    c = case_for(2, i, NO_KERNELS)
    if "kind:multi" in c.features or (twin := sharded_twin(c.root, i)) is None: continue
    assert multi_devices(twin) == set(SHARD_DEVICES)
    if check(twin, Stage.TENSOR): continue
    applied += 1
    assert compare(evaluate(c.root, c.copy_inputs()), evaluate(twin, c.copy_inputs())) is None, i
  assert applied >= 20


def test_no_twin_for_a_case_with_a_copy_or_an_assign():
  b = UOp.buffer(dtypes.float32, 4, id=1)
  assert sharded_twin(UOp(Ops.SINK, src=(b.copy_to("CPU:1"),))) is None
  assert sharded_twin(UOp(Ops.SINK, src=(b.after(b.store(b + b)),))) is None
  assert sharded_twin(UOp(Ops.SINK, src=(b + b,))) is not None


# ---- the oracle ----
def test_the_sharded_twin_finds_a_broken_all_reduce_in_ordinary_cases():
  ch = Checker(Config(passes=MUTANTS_BY_NAME["all_reduce_drops_last"].pipeline(), gradients=False, numeric_gradients=False))
  real = Checker(Config(gradients=False, numeric_gradients=False))
  hits = []
  for i in range(60):
    c = case_for(1, i, NO_KERNELS)
    if "kind:multi" in c.features: continue
    found = [f for f in ch.check(c) if f.signature == ("metamorphic", "multi", "multi_reduce")]
    if found:
      hits.append(found[0])
      assert real.check(c) == [], i  # the real pipeline keeps the relation on the same case
      break  # the first such case shows it; the rest of the 60 would only repeat it
  assert hits, "no ordinary case whose sharded twin reduces over a sharded axis"
  assert hits[0].blame is not None and hits[0].blame.rule == "multi_reduce" and "sharded twin" in hits[0].message
  assert ch.stats.twins["sharded_twin"] > 0


def test_a_broken_gather_is_found_on_sharded_cases():
  ch = Checker(Config(passes=MUTANTS_BY_NAME["gather_reversed"].pipeline(), gradients=False, numeric_gradients=False))
  rules: set = set()
  for s in range(40):  # until the first sharded case that shows it
    rules |= {f.signature for f in ch.check(multi_case(random.Random(s)))}
    if ("parity", "multi", "multi_copy_gather") in rules: break
  assert ("parity", "multi", "multi_copy_gather") in rules, rules


def test_the_one_device_twin_oracle_reports_a_difference():
  c = multi_case(random.Random(3))
  c.index = 0
  ch = Checker(Config(gradients=False, numeric_gradients=False))
  ref = evaluate(c.root, c.copy_inputs())
  assert ch.multi_twin(c, ref) is None and ch.stats.twins["one_device_twin"] == 1
  # a reference the twin does not reproduce: what a MULTI meaning other than its twin's would give
  wrong = [None if r is None else np.asarray(r) + np.asarray(1, np.asarray(r).dtype) for r in ref]
  f = ch.multi_twin(c, wrong)
  assert f is not None and f.signature == ("metamorphic", "multi", "one_device_twin")


def test_a_campaign_on_sharded_cases_finds_nothing_in_the_real_pipeline(tmp_path):
  from fuzz.engine.campaign import run_campaign
  from fuzz.engine.config import CampaignConfig
  # bounded by cases, not time; the seconds are a backstop
  s = run_campaign(CampaignConfig(seconds=600, seed=5, workers=0, corpus=str(tmp_path / "c"), max_cases=24, per_rewrite=False,
                                  weights={**NO_KERNELS, "kind:multi": 0.9}), io.StringIO())
  assert s.cases == 24 and [f.signature for f in s.findings] == []

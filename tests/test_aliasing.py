"""Aliasing: the generator of cases that read and write one buffer (fuzz.generate.aliasing), the mutants of storage
decisions it kills, and callify's snapshot of a value-call arg that an unordered write would race with."""
from __future__ import annotations

import random

import numpy as np
import pytest
from builders import c, call, f32, sink, tup

from fuzz.check.blame import local_change
from fuzz.check.oracles import Checker, Config, lower_options
from fuzz.generate.aliasing import aliasing_case
from fuzz.generate.safety import unsafe_reason
from fuzz.generate.case import ALIAS_FORMS, default_weights
from fuzz.generate.kinds import case_for
from fuzz.testbed.mutants import MUTANTS_BY_NAME
from tinyspec import Ops, Stage, UOp, check
from tinyspec.lower.base import LowerOptions
from tinyspec.lower.callify import CALLIFY
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.semantics import evaluate

W = default_weights()


def _checker(passes=None) -> Checker:
  return Checker(Config(passes=passes, metamorphic=False, gradients=False, numeric_gradients=False))


def _views_under_store(root: UOp) -> set[Ops]:
  out: set[Ops] = set()
  for u in root.toposort():
    if u.op is Ops.STORE:
      t = u.src[0]
      while t.op in (Ops.RESHAPE, Ops.PERMUTE, Ops.PAD, Ops.SHRINK, Ops.FLIP):
        out.add(t.op)
        t = t.src[0]
  return out


def test_aliasing_cases_are_legal_safe_and_draw_every_form() -> None:
  forms: set[str] = set()
  target_views: set[Ops] = set()
  reads_old_and_new = 0
  for s in range(120):
    case = aliasing_case(random.Random(s), W)
    assert check(case.root, Stage.TENSOR) == [], s
    assert unsafe_reason(case.root, case.inputs) is None, s
    evaluate(case.root, case.copy_inputs())
    forms |= {f.split(":")[1] for f in case.features if f.startswith("alias:")}
    target_views |= _views_under_store(case.root)
    nodes = case.root.toposort()
    bufs = [u for u in nodes if u.op is Ops.BUFFER]
    stores = [u for u in nodes if u.op is Ops.STORE]
    # the buffer itself is read (not only through AFTER) in a graph that writes it
    if stores and any(u.op is not Ops.AFTER and u.op is not Ops.STORE and b in u.src for b in bufs for u in nodes): reads_old_and_new += 1
  assert set(ALIAS_FORMS) <= forms and "call_raced" in forms
  assert {Ops.PAD, Ops.SHRINK, Ops.FLIP, Ops.PERMUTE} <= target_views
  assert reads_old_and_new > 30


def test_a_form_weight_of_zero_turns_it_off() -> None:
  w = {**W, **{f"alias:{f}": 0.0 for f in ALIAS_FORMS}, "alias:inplace": 1.0}
  feats = {f for s in range(30) for f in aliasing_case(random.Random(s), w).features if f.startswith("alias:")}
  assert feats == {"alias:inplace"}


def test_campaign_cases_include_aliasing_cases() -> None:
  feats = [case_for(0, i).features for i in range(300)]
  share = sum("kind:alias" in f for f in feats) / len(feats)
  assert 0.03 < share < 0.2
  assert all("kind:alias" not in case_for(0, i, {"kind:alias": 0.0}).features for i in range(60))


def test_aliasing_cases_pass_the_reference_pipeline() -> None:
  ch = _checker()
  for s in range(30):
    case = aliasing_case(random.Random(s), W)
    found = ch.check(case)
    assert found == [], (s, [f.describe() for f in found])


def test_no_reference_rule_application_on_aliasing_cases_changes_meaning() -> None:
  for s in range(40):
    case = aliasing_case(random.Random(s), W)
    g, lo = case.root, lower_options(case.options)
    for p in PASSES:
      b = local_change(p, g, lo, case.inputs)
      assert b is None, f"case {s}: {b.describe()}"
      g = p.run(g, lo)


# a seed of the aliasing generator whose case each storage mutant fails, blamed on the mutated rule
STORAGE_MUTANTS = {"store_through_pad_ungated": 16, "inplace_by_shape": 3, "war_edge_dropped": 9}


@pytest.mark.parametrize("name", sorted(STORAGE_MUTANTS))
def test_storage_mutants_fail_an_aliasing_case_and_are_blamed_right(name: str) -> None:
  m = MUTANTS_BY_NAME[name]
  case = aliasing_case(random.Random(STORAGE_MUTANTS[name]), W)
  assert _checker().check(case) == []
  found = _checker(m.pipeline()).check(case)
  assert found and found[0].signature == ("parity", m.where, m.rule), [f.signature for f in found]


# ---- callify: a value-call arg an unordered write would race with once precompiled ----
def _race(ordered: str) -> tuple[UOp, dict]:
  """BUFFER b (3 elements) read by a value call f(x) = x + 1 while a STORE writes b := 7; `ordered` says how the two
  relate: "none", "store_first" (the call reads b after the store) or "call_first" (the store writes the call's result)."""
  b = UOp.buffer(f32, 3, id=801)
  p = UOp.param(0, f32, 3)
  body = tup(p + c(1.0).expand((3,)))
  seven = c(7.0).expand((3,))
  if ordered == "none":
    out = call(body, b, name="f").gettuple(0)
    root = sink(b.after(b.store(seven)), out)
  elif ordered == "store_first":
    x = b.after(b.store(seven))
    root = sink(call(body, x, name="f").gettuple(0))
  else:
    out = call(body, b, name="f").gettuple(0)
    root = sink(b.after(b.store(out)))
  return root, {801: np.array([1.0, 2.0, 3.0], np.float32)}


def _callify(root: UOp) -> UOp:
  return CALLIFY.run(root, LowerOptions(callify="precompile"))


def _contiguous_args(root: UOp) -> int:
  return sum(1 for u in root.toposort() if u.op is Ops.CALL for a in u.src[1:] if a.op is Ops.CONTIGUOUS)


@pytest.mark.parametrize("ordered", ["none", "store_first", "call_first"])
def test_precompile_keeps_the_value_a_call_was_given(ordered: str) -> None:
  root, inputs = _race(ordered)
  want = evaluate(root, {k: v.copy() for k, v in inputs.items()})
  out = _callify(root)
  assert check(out, Stage.TENSOR) == []
  got = evaluate(out, {k: v.copy() for k, v in inputs.items()})
  for w, g in zip(want, got):
    np.testing.assert_array_equal(w, g)
  # only the unordered read is copied first: an ordered one reads the storage itself
  assert _contiguous_args(out) == (1 if ordered == "none" else 0)
  lowered = lower(root, callify="precompile")["render"]
  for w, g in zip(want, evaluate(lowered, {k: v.copy() for k, v in inputs.items()})):
    np.testing.assert_array_equal(np.asarray(w).reshape(-1), np.asarray(g).reshape(-1))

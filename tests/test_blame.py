"""Blame names the rule application that changed meaning: on every pass-rule mutant's witness, never on a reference
rule, through loops marked global, through stores, for crashes by the step limit and for gradient rules wrong only at
a kink. One bug group is one corpus entry, its other signatures listed under it."""
from __future__ import annotations

import io

import numpy as np
import pytest
from builders import sink
from test_mutants import GRAD_WITNESS, WITNESS

from fuzz.check.blame import crash_blame, local_change
from fuzz.check.local_eval import rewrite_changes_value
from fuzz.check.numeric_grad import as_float64, numeric_gradient_check, table_mismatch
from fuzz.check.oracles import Checker, Config, lower_options
from fuzz.corpus.store import bug_group, entry_name, same_bug
from fuzz.engine.campaign import Campaign
from fuzz.engine.config import CampaignConfig
from fuzz.engine.runner import Found
from fuzz.engine.summary import Reported
from fuzz.generate.kinds import case_for
from fuzz.testbed.mutants import MUTANTS, MUTANTS_BY_NAME, PASS_RULE
from tinyspec import Stage
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.pipeline import PASSES
from tinyspec.lower.start import start_index
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import AxisType, Ops, RangeArg, UOp

PASS_MUTANTS = [m for m in MUTANTS if m.kind == PASS_RULE]


@pytest.mark.parametrize("m", PASS_MUTANTS, ids=[m.name for m in PASS_MUTANTS])
def test_blame_names_the_mutated_rule_on_its_witness(m) -> None:
  case = WITNESS[m.name]()
  found = Checker(Config(passes=m.pipeline(), numeric_gradients=False)).check(case)
  assert found, f"{m.name}: its witness gives no finding"
  _, stage, rule = found[0].signature
  assert (stage, rule) == (m.where, m.rule), found[0].describe()


def test_no_reference_rule_application_changes_meaning() -> None:
  # local evaluation before and after every application of the reference lowering, on generated cases of every kind
  kinds = set()
  for seed, n in ((5, 40), (17, 40)):
    for i in range(n):
      c = case_for(seed, i)
      kinds.add(c.kind)
      g, lo = c.root, lower_options(c.options)
      for p in PASSES[start_index(PASSES, g, c.kind):]:
        b = local_change(p, g, lo, c.inputs)
        assert b is None, f"seed {seed} case {i}: {b.describe()}"
        g = p.run(g, lo)
  assert kinds == {"tensor", "kernel"}


def _kernel_value(r: UOp) -> UOp:
  return r.cast(dtypes.int32) + UOp.const(dtypes.int32, 1)


def test_a_loop_marked_global_keeps_its_values() -> None:
  r = UOp.range(4, 0)
  g = UOp(Ops.RANGE, dtypes.index, r.src, RangeArg(0, AxisType.GLOBAL))
  assert not rewrite_changes_value(r, g, {})
  assert not rewrite_changes_value(_kernel_value(r), _kernel_value(g), {})
  other = UOp.range(4, 1)  # another loop variable is another value
  assert rewrite_changes_value(_kernel_value(r), _kernel_value(other) * UOp.const(dtypes.int32, 2), {})


def _store_kernel(n: int, value, gate: UOp | None = None, shift: int = 0) -> UOp:
  r = UOp.range(n, 0)
  p = UOp.param(0, dtypes.int32, n + shift)
  st = p.index(r + UOp.const(dtypes.index, shift)).store(value(r), *(() if gate is None else (gate,)))
  return st.end(r)


def test_stores_are_judged_by_what_they_write() -> None:
  same = _store_kernel(4, _kernel_value)
  assert not rewrite_changes_value(same, _store_kernel(4, _kernel_value), {})
  assert rewrite_changes_value(same, _store_kernel(4, lambda r: _kernel_value(r) + UOp.const(dtypes.int32, 1)), {})
  r = UOp.range(4, 0)
  gated = _store_kernel(4, _kernel_value, r.alu(Ops.CMPLT, UOp.const(dtypes.index, 3)))
  assert rewrite_changes_value(same, gated, {}), "a store that writes fewer elements changed what it does"


def _raises_on_second(x: UOp) -> UOp | None:
  if x.arg == 2: raise ValueError("no rule for this")
  return x.replace(arg=x.arg + 10) if x.arg < 10 else None


def _count_then_raise(root: UOp, options: LowerOptions, trace: Trace, tables) -> UOp:
  out = trace.rewrite(root, tables.pm_bump)
  if any(u.op is Ops.CONST and u.arg == 13 for u in out.toposort()): raise RuntimeError("the pass cannot take a 13")
  return out


def _bump(x: UOp) -> UOp | None: return x.replace(arg=x.arg + 10) if x.arg < 10 else None


def test_a_crash_is_blamed_on_the_application_during_which_it_happened() -> None:
  root = sink(*(UOp.const(dtypes.int32, v) for v in (1, 2, 3)))
  lo = LowerOptions()
  in_rule = Pass("toy", Stage.TENSOR, Stage.TENSOR, lambda g, o, t, tb: t.rewrite(g, tb.pm_bump),
                 (PatternMatcher([("bump_or_raise", UPat(Ops.CONST, name="x"), _raises_on_second)], name="pm_bump"),))
  b = crash_blame(in_rule, root, lo, ValueError)
  assert b is not None and b.rule == "bump_or_raise"
  after = Pass("toy", Stage.TENSOR, Stage.TENSOR, _count_then_raise, (PatternMatcher([("bump", UPat(Ops.CONST, name="x"), _bump)], name="pm_bump"),))
  b = crash_blame(after, root, lo, RuntimeError)
  assert b is not None and b.rule == "bump" and b.after is not None and b.after.arg == 13, b and b.describe()
  assert crash_blame(after, sink(UOp.const(dtypes.int32, 5)), lo, RuntimeError) is None


@pytest.mark.parametrize("name", sorted(GRAD_WITNESS))
def test_a_gradient_rule_is_named_even_where_it_is_wrong_only_at_a_kink(name: str) -> None:
  node, inputs = GRAD_WITNESS[name]()
  assert numeric_gradient_check(sink(node), inputs, 0).mismatches == []  # the reference rules agree, kinks included
  got = numeric_gradient_check(sink(node), inputs, 0, MUTANTS_BY_NAME[name].rules()).mismatches
  assert got and got[0].rule == MUTANTS_BY_NAME[name].rule, [m.describe() for m in got]


def test_meaning_oracles_are_one_bug_group() -> None:
  a, b, c = ("parity", "simplify", "lt_offset"), ("prove", "simplify", "lt_offset"), ("metamorphic", "simplify", "lt_offset")
  assert bug_group(a) == bug_group(b) == bug_group(c) and same_bug(a, b)
  assert entry_name(a) == entry_name(b) == entry_name(c)
  assert entry_name(("spec", "simplify", "lt_offset")) != entry_name(a)
  assert entry_name(("parity", "simplify", "lt_scale")) != entry_name(a)


def test_a_campaign_stores_one_entry_per_bug_group_and_lists_the_others(tmp_path) -> None:
  out = io.StringIO()
  c = Campaign(CampaignConfig(corpus=str(tmp_path), seconds=1, workers=0), out)
  def found(sig, case):
    path = tmp_path / entry_name(sig)
    return Found(Reported(sig, str(path), True, case, 5, f"{'/'.join(sig)} at case {case}"), f"# entry of case {case}\n")
  c.found(found(("prove", "simplify", "lt_offset"), 7))
  c.found(found(("parity", "simplify", "lt_offset"), 3))   # the same bug, found from a lower case: its entry replaces the first
  c.found(found(("metamorphic", "simplify", "lt_offset"), 9))
  c.found(found(("parity", "simplify", "lt_scale"), 4))    # another bug
  assert len(c.findings) == 2
  first = c.findings[0]
  assert first.case == 3 and tuple(first.signature) == ("parity", "simplify", "lt_offset")
  assert sorted(first.also) == ["metamorphic/simplify/lt_offset", "prove/simplify/lt_offset"]
  assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted({entry_name(("parity", "simplify", "lt_offset")),
                                                                  entry_name(("parity", "simplify", "lt_scale"))})
  assert (tmp_path / entry_name(("parity", "simplify", "lt_offset"))).read_text() == "# entry of case 3\n"
  assert out.getvalue().count("finding: ") == 2
  np.testing.assert_equal(len({bug_group(f.signature) for f in c.findings}), 2)


@pytest.mark.parametrize("name", sorted(GRAD_WITNESS))
def test_every_node_is_held_to_the_derivative_by_hand(name: str) -> None:
  from tinyspec.autograd import pm_gradient
  node, inputs = GRAD_WITNESS[name]()
  feed = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
  twin = as_float64(node)
  rng = np.random.default_rng(0)
  assert table_mismatch(twin, feed, pm_gradient, rng) is None
  hit = table_mismatch(twin, feed, MUTANTS_BY_NAME[name].rules(), rng)
  assert hit is not None and hit[0] == MUTANTS_BY_NAME[name].rule


def test_no_reference_gradient_rule_disagrees_with_the_derivative_by_hand() -> None:
  checked = 0
  for i in range(60):
    c = case_for(5, i)
    if c.kind != "tensor": continue
    m = numeric_gradient_check(c.root, c.inputs, 0).mismatches
    assert m == [], (i, [x.describe() for x in m])
    checked += 1
  assert checked > 30


def test_the_derivative_by_hand_sees_elements_central_differences_did_not_probe() -> None:
  node, inputs = GRAD_WITNESS["grad_sin_sign"]()
  m = MUTANTS_BY_NAME["grad_sin_sign"]
  got = numeric_gradient_check(sink(node), inputs, 0, m.rules(), points=0).mismatches
  assert [x.rule for x in got] == [m.rule] and got[0].buffer == -1
  assert numeric_gradient_check(sink(node), inputs, 0, points=0).mismatches == []

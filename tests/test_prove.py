"""tinyspec prove: the real integer rules are not refuted; deliberately unsound variants are, with real counterexamples."""
from __future__ import annotations

import numpy as np
import pytest

from fuzz.prove import Prover, RuleRef, expression_rules, prove_rules
from fuzz.unsound import VARIANTS
from tinyspec.dtype import dtypes
from tinyspec.lower.simplify import SIMPLIFY_PM, cdiv
from tinyspec.rewrite import PatternMatcher, Rule, UPat
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec

FAST = dict(samples=40, timeout_ms=1000)


def _value(u: UOp):
  v = np.asarray(evaluate(u)).reshape(())
  return bool(v) if v.dtype == np.bool_ else int(v)


def test_every_simplify_rule_is_in_scope():
  names = {r.name for r in expression_rules() if r.pass_name == "simplify"}
  assert names == {r.name for r in SIMPLIFY_PM.rules}


def test_real_rules_are_never_refuted():
  results = prove_rules(expression_rules(), Prover(**FAST))
  refuted = [r.line() for r in results if r.status == "refuted"]
  assert not refuted, "\n".join(refuted)
  for r in results:
    assert r.status in ("proven", "unknown")
    if r.status == "unknown": assert r.why_unknown(), r.ref.qualname
  proven = {r.ref.name for r in results if r.status == "proven"}
  # the plain identities and the ring rules must go through at this sample size
  assert {"add_zero", "mul_zero", "sub_self", "add_const_assoc", "combine_mul_terms", "where_same", "load_gate_false"} <= proven


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsound_variant_is_refuted_with_a_real_counterexample(variant, tmp_path):
  ref = RuleRef("simplify", "simplify", variant.rule_obj())
  res = Prover(corpus=tmp_path, **FAST).prove(ref)
  assert res.status == "refuted", res.line()
  cx = res.counterexample
  # the counterexample's slot values lie within the bounds the guard saw
  for s, v in cx.slots:
    assert s.lo <= v <= s.hi
  # both sides, evaluated by the reference evaluator, differ
  before, after = _value(cx.before), _value(cx.after)
  assert before != after
  assert (before, after) == (cx.lhs, cx.rhs)
  # the broken rule itself makes that rewrite: applying it to the instance gives a different value
  assert cx.after.dtype is cx.before.dtype


def test_counterexample_corpus_entry_computes_the_rewritten_expression(tmp_path):
  from fuzz.corpus import load_entry
  v = next(x for x in VARIANTS if x.name == "mod_split_no_sign")
  res = Prover(corpus=tmp_path, **FAST).prove(RuleRef("simplify", "simplify", v.rule_obj()))
  cx = res.counterexample
  assert cx.corpus_path is not None
  entry = load_entry(cx.corpus_path)
  assert entry.signature == ("parity", "simplify", "mod_split_divisible")
  out = evaluate(entry.case.root, entry.case.inputs)[0]
  assert int(out[0]) == _value(cx.before)


def test_wrong_sign_in_a_hand_made_rule_is_refuted_for_negative_values():
  # x // c as floor division: right for x >= 0, wrong for negative x, so only the negative boxes can refute it
  pm = PatternMatcher([("floor_div_shift", UPat(Ops.IDIV, src=(UPat.var("x", dtypes.int32), UPat.cvar("c", dtypes.int32))),
                        lambda x, c: x.alu(Ops.SHR, UOp.const(x.dtype, 1)) if c.arg == 2 else None)])
  res = Prover(dts=(dtypes.int32,), samples=300, timeout_ms=1000).prove(RuleRef("test", "test", pm.rules[0]))
  assert res.status == "refuted"
  cx = res.counterexample
  x = next(v for s, v in cx.slots)
  assert x < 0 and cdiv(x, 2) != x >> 1


def test_rule_with_a_rewrite_context_is_unknown_with_a_reason():
  rule = Rule("needs_ctx", UPat(Ops.ADD, name="x"), lambda ctx, x: None)
  res = Prover(**FAST).prove(RuleRef("test", "test", rule))
  assert res.status == "unknown" and "ctx" in res.why_unknown()


def test_rule_that_never_fires_is_unknown_not_proven():
  rule = Rule("never", UPat(Ops.ADD, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: None)
  res = Prover(**FAST).prove(RuleRef("test", "test", rule))
  assert res.status == "unknown" and "never rewrote" in res.why_unknown()


def test_cli_prove_exit_codes(capsys):
  from tinyspec.cli import main
  assert main(["prove", "--rules", "simplify/add_zero", "--samples", "20", "--timeout-ms", "1000"]) == 0
  out = capsys.readouterr().out
  assert "proven   simplify/add_zero" in out and "1 rules: 1 proven" in out
  assert main(["prove", "--rules", "no_such_rule_*"]) == 2
  assert main(["prove", "--dtypes", "float32"]) == 2

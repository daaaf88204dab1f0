"""tinyspec prove: the real integer rules are not refuted; deliberately unsound variants are, with real counterexamples."""
from __future__ import annotations

import random

import numpy as np
import pytest
import z3

from tinyspec.prove.prover import Prover, RuleRef, expression_rules, prove_rules
from tinyspec.prove.templates import boxes
from fuzz.testbed.unsound import VARIANTS
from tinyspec.prove.exact import ExactForm, Unsupported, analyze
from tinyspec.dtype import dtypes
from tinyspec.uop import substitute
from tinyspec.lower.simplify import pm_simplify
from tinyspec.ops import accepts
from tinyspec.ops.scalar import cdiv
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
  assert names == {r.name for r in pm_simplify.rules}


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


def test_negated_comparison_rules_hold_for_unsigned_dtypes():
  # an unsigned -x wraps for every x > 0: -x < 0 is false where 0 < x holds, so -x < c is not -c < x there
  refs = [r for r in expression_rules() if r.name in ("lt_negated", "lt_negated_const")]
  for r in prove_rules(refs, Prover((dtypes.uint8, dtypes.uint32), **FAST)):
    assert r.status != "refuted", r.line()


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsound_variant_is_refuted_with_a_real_counterexample(variant, tmp_path):
  ref = RuleRef("simplify", "simplify", variant.rule_obj())
  res = Prover(**FAST).prove(ref)
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
  from fuzz.corpus.store import load_entry
  from fuzz.corpus.refutations import write_counterexample
  v = next(x for x in VARIANTS if x.name == "mod_split_no_sign")
  res = Prover(store=lambda ref, cx: write_counterexample(tmp_path, ref, cx), **FAST).prove(RuleRef("simplify", "simplify", v.rule_obj()))
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


# ---- the exact encodings mean what the evaluator computes ----
_INT_DTS = (dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.index)
_INT_OPS = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.MAX, Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.CAST)
# the ops with a meaning on bool, from the registry (ADD, SUB, MUL and NEG take numbers only)
_BOOL_OPS = tuple(op for op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB, Ops.NEG, Ops.WHERE,
                                Ops.CAST) if accepts(op, dtypes.bool))


def _random_expr(rng: random.Random, dt, depth: int, slots: dict) -> UOp:
  if depth == 0 or rng.random() < 0.2:
    if rng.random() < 0.35:
      if dt is dtypes.bool: return UOp.const(dt, rng.random() < 0.5)
      lo, hi = (-(2 ** 40), 2 ** 40) if dt is dtypes.index else (dt.min, dt.max)
      return UOp.const(dt, rng.choice([0, 1, -1, 2, 3, 7, 8, 63, 64, lo, hi, rng.randint(lo, hi)]))
    node = UOp(Ops.DETACH, dt, (), ("slot", len(slots)))
    slots[node] = None if dt is dtypes.bool else rng.choice([b for b in boxes(dt) if dt is not dtypes.index or max(map(abs, b)) <= 2 ** 40])
    return node
  sub = lambda d: _random_expr(rng, d, depth - 1, slots)  # noqa: E731
  if dt is dtypes.bool:
    op = rng.choice(_BOOL_OPS)
    if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
      sd = rng.choice((*_INT_DTS, dtypes.bool))
      return UOp(op, dt, (sub(sd), sub(sd)))
    if op is Ops.CAST: return UOp(op, dt, (sub(rng.choice(_INT_DTS)),))
    if op is Ops.WHERE: return UOp(op, dt, (sub(dt), sub(dt), sub(dt)))
    if op is Ops.NEG: return UOp(op, dt, (sub(dt),))
    return UOp(op, dt, (sub(dt), sub(dt)))
  op = rng.choice(_INT_OPS)
  if op is Ops.CAST: return UOp(op, dt, (sub(rng.choice((*_INT_DTS, dtypes.bool))),))
  if op is Ops.WHERE: return UOp(op, dt, (sub(dtypes.bool), sub(dt), sub(dt)))
  if op is Ops.NEG: return UOp(op, dt, (sub(dt),))
  return UOp(op, dt, (sub(dt), sub(dt)))


@pytest.mark.parametrize("kind", ["int", "bv"])
def test_exact_encodings_agree_with_the_evaluator_and_the_intervals(kind):
  # random expressions over every integer op and dtype (wrap-around, division by zero, shifts past the width, casts):
  # the encoding's value at a point is the evaluator's, and every node's value lies in the interval the width came from
  rng = random.Random(f"zexact-{kind}")
  checked = 0
  for _ in range(250):
    slots: dict = {}
    root = _random_expr(rng, rng.choice((*_INT_DTS, dtypes.bool)), 3, slots)
    an = analyze((root,), slots)
    try: f = ExactForm(an, kind, {n: f"s{n.arg[1]}" for n in slots})
    except Unsupported: continue  # bitwise ops have no Int form
    for _ in range(2):
      point = {n: (rng.random() < 0.5) if iv is None else rng.choice([iv[0], iv[1], rng.randint(*iv)]) for n, iv in slots.items()}
      solver = z3.Solver()
      solver.add(*[f(n) == (z3.BoolVal(v) if isinstance(v, bool) else f.num(v)) for n, v in point.items()])
      assert solver.check() == z3.sat
      m = solver.model()
      vals = {u: f.value(m, u) for u in (*slots, *an.order)}
      for u, v in vals.items():
        if an.iv[u] is not None: assert an.iv[u][0] <= v <= an.iv[u][1], (u.op, an.iv[u], v)
      if any(u.dtype is dtypes.index and not -(2 ** 63) <= v < 2 ** 63 for u, v in vals.items()): continue  # past the evaluator's int64
      want = _value(substitute(root, {n: UOp.const(n.dtype, v) for n, v in point.items()}))
      assert vals[root] == want, (root, point)
      checked += 1
  assert checked > 200


def test_bitwise_on_index_and_nested_division_are_proven():
  # these timed out on the unbounded-Int and 64-bit-vector encodings: the exact encodings decide them
  rules = {r.name: r for r in expression_rules()}
  for name, dts in (("xor_zero", (dtypes.index,)), ("and_self", (dtypes.index,)), ("or_self", (dtypes.index,)),
                    ("idiv_idiv", (dtypes.int32, dtypes.int64)), ("mod_divisible", (dtypes.int64,))):
    res = Prover(dts=dts, samples=120, timeout_ms=1000).prove(rules[name])
    assert res.status == "proven", res.line()


def test_parallel_run_gives_the_sequential_results():
  refs = [r for r in expression_rules() if r.name in ("add_zero", "idiv_idiv", "xor_zero")]
  refs.append(RuleRef("simplify", "simplify", VARIANTS[0].rule_obj()))
  seq = prove_rules(refs, Prover(samples=30, timeout_ms=1000))
  par = prove_rules(refs, Prover(samples=30, timeout_ms=1000), jobs=2)
  assert [r.line() for r in par] == [r.line() for r in seq]
  assert [r.status for r in par] == ["proven", "proven", "proven", "refuted"]


def _and_mask_as_mod(x: UOp, c: UOp) -> UOp | None:
  # x & (2**k - 1) as x % 2**k: right for x >= 0, wrong for negative x (two's complement keeps the low bits)
  return x.alu(Ops.MOD, UOp.const(x.dtype, c.arg + 1)) if c.arg in (1, 3, 7, 15, 255) else None


def _idiv_idiv_unguarded(x: UOp, a: UOp, b: UOp) -> UOp | None:
  # (x // a) // b as x // (a*b) without checking that a*b fits the dtype: the product wraps
  return x.alu(Ops.IDIV, UOp.const(x.dtype, a.arg * b.arg)) if a.arg > 0 and b.arg > 0 else None


@pytest.mark.parametrize("name,pat,fn,dt", [
  ("and_mask_as_mod", UPat(Ops.AND, src=(UPat.var("x"), UPat.cvar("c"))), _and_mask_as_mod, dtypes.index),
  ("idiv_idiv_unguarded", UPat(Ops.IDIV, src=(UPat(Ops.IDIV, src=(UPat.var("x"), UPat.cvar("a"))), UPat.cvar("b"))), _idiv_idiv_unguarded,
   dtypes.int32),
])
def test_unsound_bitwise_and_nested_division_rules_are_refuted(name, pat, fn, dt):
  res = Prover(dts=(dt,), samples=300, timeout_ms=1000).prove(RuleRef("test", "test", Rule(name, pat, fn)))
  assert res.status == "refuted", res.line()
  cx = res.counterexample
  before, after = _value(cx.before), _value(cx.after)
  assert before != after and (before, after) == (cx.lhs, cx.rhs)
  if name == "idiv_idiv_unguarded":  # ops read as C writes them: IDIV is C's truncating `/`, not Python's floor `//`
    assert " / " in cx.describe() and "//" not in cx.describe(), cx.describe()

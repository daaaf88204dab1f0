"""tinyspec prove --target tinygrad: tinygrad's own rules, instantiated from its UPats, proven or refuted by z3, and every
refutation run on both sides by tinygrad itself."""
from __future__ import annotations

import random

import pytest

pytest.importorskip("tinygrad")

from tinygrad.dtype import dtypes as tdt  # noqa: E402
from tinygrad.uop.ops import Ops as TOps  # noqa: E402
from tinygrad.uop.ops import UOp as TUOp  # noqa: E402
from tinygrad.uop.ops import UPat  # noqa: E402

from tinyspec.bridge.tinygrad.rules import (TgProver, TgRule, instantiate, out_of_scope, prove_rules, select, tinygrad_rules,  # noqa: E402
                                            tinygrad_value, to_tinyspec)
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.prove.prover import evaluate_scalar  # noqa: E402
from tinyspec.uop import UOp  # noqa: E402

pytestmark = pytest.mark.tinygrad

RULES = tinygrad_rules()


def _rule(qualname: str) -> TgRule:
  return next(r for r in RULES if r.qualname == qualname)


def test_tables_are_found_and_named_by_source_line():
  tables = {r.table for r in RULES}
  assert {"symbolic_simple", "symbolic", "div_and_mod_symbolic", "sym", "decomp_late"} <= tables
  assert len(RULES) > 150 and len({r.qualname for r in RULES}) == len(RULES)
  add_zero = _rule("symbolic_simple/111")
  assert add_zero.location == "tinygrad/uop/symbolic.py:111" and out_of_scope(add_zero) is None
  assert "STORE" in out_of_scope(_rule("symbolic_simple/93"))
  assert "RANGE" in out_of_scope(_rule("symbolic/290")) and "RECIPROCAL" in out_of_scope(_rule("sym/464"))
  assert select(RULES, "div_and_mod*") and all(r.table == "div_and_mod_symbolic" for r in select(RULES, "div_and_mod*"))


def test_instances_match_the_pattern_and_honour_the_template_dtype():
  rng = random.Random(0)
  r = _rule("symbolic/270")  # (x//c1)//c2
  for dt in (tdt.int32, tdt.uint32, tdt.weakint):
    inst = instantiate(r.pat, dt, rng)
    assert r.pat.match(inst.root, {}) and inst.root.dtype is dt
    assert all(v.op is TOps.PARAM and v.vmin == s.lo and v.vmax == s.hi for v, s in inst.slots)


@pytest.mark.parametrize("op", [TOps.FLOORDIV, TOps.FLOORMOD, TOps.CDIV, TOps.CMOD])
def test_division_translates_with_tinygrads_meaning(op):
  # floor and C-truncating division on every sign combination, with weak and strong constants: tinyspec's evaluator
  # of the translation gives what tinygrad's exec_alu gives
  for dt, ts in ((tdt.int32, dtypes.int32), (tdt.uint32, dtypes.uint32), (tdt.weakint, dtypes.index)):
    x = TUOp.variable("x", -20 if dt is not tdt.uint32 else 0, 20, dt, param=True)
    for c in (3, -3, 7, -1, 1):
      if dt is tdt.uint32 and c < 0: continue
      for weak in (True, False):
        e = x.alu(op, TUOp.const(c, tdt.weakint if weak else dt))
        for v in range(-20 if dt is not tdt.uint32 else 0, 21):
          ts_e = to_tinyspec(e, {x: UOp.const(ts, v)})
          assert evaluate_scalar(ts_e) == tinygrad_value(e, {x: v}), (op, dt, c, v)


def test_a_true_rule_is_proven():
  res = TgProver(samples=40).prove(_rule("symbolic_simple/111"))  # x+0, x^0, x|0 -> x
  assert res.status == "proven", res.line()
  assert all(d.fired and d.queries for d in res.per_dtype)


def _floordiv_mul(x: TUOp, c: TUOp):
  return x  # x//c*c -> x: wrong unless c divides x


def test_a_broken_rule_is_refuted_and_tinygrad_confirms():
  pat = (UPat.var("x") // UPat.cvar("c")) * UPat.cvar("c")
  rule = TgRule("test", "floordiv_mul", pat, _floordiv_mul, "tests/test_prove_tinygrad.py", False)
  res = TgProver(dts=(dtypes.int32, dtypes.uint32), samples=60).prove(rule)
  assert res.status == "refuted", res.line()
  for d in res.per_dtype:
    ref = d.refuted
    assert ref is not None and ref.kind == "defined", d.status
    # tinygrad itself computes two different values for the two sides, and tinyspec's evaluator the same two
    assert ref.confirmed and ref.tg_lhs != ref.tg_rhs
    assert (ref.ts_lhs, ref.ts_rhs) == (ref.tg_lhs, ref.tg_rhs)
  assert "confirmed: tinygrad computes different values" in res.line()


def test_the_real_tables_give_every_status():
  # one rule per status, from tinygrad's own tables (a small sample: the full run is `tinyspec prove --target tinygrad`)
  picks = {"symbolic_simple/111": "proven",                      # x+0 -> x
           "symbolic/257": "refuted",                            # vmin == vmax folding ignores uint32 wrap-around
           "decomp_simplify/85": "refuted (wraps)",              # FLOORMOD -> CMOD + fix-up: differs only past a signed overflow
           "symbolic/247": "unknown",                            # where-closure: its guard never holds on an instance
           "symbolic_simple/93": "skipped"}                      # a STORE rule
  rules = [_rule(q) for q in picks]
  results = prove_rules(rules, TgProver(dts=(dtypes.int32, dtypes.uint32), samples=60), jobs=2)
  got = {r.rule.qualname: r.status for r in results}
  assert got == picks, "\n".join(r.line() for r in results)
  refuted = next(r for r in results if r.status == "refuted")
  ref = next(d.refuted for d in refuted.per_dtype if d.refuted is not None)
  assert ref.dtype == "uint32" and ref.confirmed
  wraps = next(r for r in results if r.status == "refuted (wraps)")
  w = next(d.wraps for d in wraps.per_dtype if d.wraps is not None)
  assert w.confirmed and w.overflows  # the original overflows a signed dtype at that point


def test_cli_target_tinygrad(capsys, monkeypatch):
  from tinyspec.cli import main
  assert main(["prove", "--target", "tinygrad", "--rules", "symbolic_simple/111", "--samples", "20", "--jobs", "1"]) == 0
  out = capsys.readouterr().out
  assert "proven   symbolic_simple/111  tinygrad/uop/symbolic.py:111" in out and "1 proven" in out
  assert main(["prove", "--target", "tinygrad", "--rules", "symbolic/257", "--dtypes", "uint32", "--samples", "40", "--jobs", "1"]) == 1
  assert "refuted (defined behaviour) symbolic/257" in capsys.readouterr().out
  assert main(["prove", "--target", "tinygrad", "--rules", "no_such_rule"]) == 2
  # without the bridge (tinygrad missing or another version) the verb says so in one line
  monkeypatch.setitem(__import__("sys").modules, "tinyspec.bridge.tinygrad.rules", None)
  assert main(["prove", "--target", "tinygrad"]) == 2
  assert "tinyspec prove --target tinygrad:" in capsys.readouterr().err

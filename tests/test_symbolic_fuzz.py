"""The symbolic fuzzer: the reference simplifier survives it; each deliberately unsound rule is found, blamed, shrunk
and stored as a corpus entry that replays; as a target of the one campaign engine, `tinyspec fuzz --symbolic` keeps a
corpus, a report, workers, a resumable state and ends on SIGINT with its summary."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from builders import interrupt_after_first_status
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.corpus.store import entries, load_entry
from fuzz.engine.targets import replay
from fuzz.check.symbolic import SymbolicChecker, replay_case
from fuzz.corpus.symbolic import from_entry_case
from fuzz.engine.symbolic_target import SymbolicTarget
from fuzz.generate.symbolic import IDX, Leaf, SymCase, case_for, leaf_name, leaves_of
from fuzz.testbed.unsound import VARIANTS
from tinyspec.uop import substitute
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec
ROOT = Path(__file__).resolve().parent.parent


def _at(expr: UOp, leaves: list[Leaf], assignment: dict[str, int]) -> int:
  """expr's value by the reference evaluator, its leaves replaced by the assignment's constants."""
  sub = {lf.node: UOp.const(IDX, assignment[leaf_name(lf.node)]) for lf in leaves}
  return int(np.asarray(evaluate(substitute(expr, sub))).reshape(()))


def test_cases_are_deterministic_and_view_shaped():
  a, b = case_for(3, 7), case_for(3, 7)
  assert a.expr is b.expr
  ops = {u.op for i in range(40) for u in case_for(0, i).expr.toposort()}
  assert {Ops.IDIV, Ops.MOD, Ops.WHERE, Ops.MAX, Ops.ADD, Ops.MUL, Ops.RANGE, Ops.DEFINE_VAR} <= ops


def _campaign(tmp_path, target: SymbolicTarget, max_cases: int, workers: int = 0, **kw):
  cfg = CampaignConfig(seconds=60, seed=kw.pop("seed", 0), workers=workers, corpus=str(tmp_path), max_cases=max_cases, target=target, **kw)
  return run_campaign(cfg, io.StringIO())


def test_reference_simplifier_has_no_findings(tmp_path):
  s = _campaign(tmp_path, SymbolicTarget(z3_timeout_ms=200), 150, seed=1)
  assert s.target == "symbolic" and s.cases == 150
  assert not s.findings, s.text()
  assert s.counts["z3 queries"] > 0
  assert entries(tmp_path) == []
  assert s.rules_fired and set(s.rules_fired) <= {f"simplify/{r.name}" for r in SymbolicTarget().table().rules}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsound_variant_is_found_blamed_shrunk_and_stored(variant, tmp_path):
  sig = ("equal", "simplify", variant.rule)
  s = _campaign(tmp_path, SymbolicTarget(pm=variant.matcher(), z3_timeout_ms=200), 400, stop_when=lambda r: r.signature == sig,
                reduce_seconds=20)
  hits = [f for f in s.findings if f.signature == sig]
  assert hits, s.text()
  f = hits[0]
  assert f.new and f.nodes <= f.found_nodes
  assert f"blamed: rule '{variant.rule}' of pass simplify" in f.blame
  entry = load_entry(f.path)
  assert entry.signature == sig and entry.case.kind == "symbolic"
  case, row = from_entry_case(entry.case)
  assert row is not None, "the entry stores the failing assignment"
  # the stored assignment really separates the stored expression from what the unsound table makes of it
  simplified, _ = SymbolicChecker(variant.matcher()).simplify(case.expr)
  a = {leaf_name(k): int(v[0]) for k, v in row.items()}
  assert _at(case.expr, case.leaves, a) != _at(simplified, case.leaves, a)
  # the entry fails under the unsound table and replays clean under the real one
  assert replay_case(entry.case, entry.signature, variant.matcher())[0]
  assert replay(entry)[0] is False


def test_bounds_oracle_flags_a_value_outside_vmin_vmax():
  # the leaf's node claims [0, 3]; the assignments reach 10: the sum above it leaves its bounds
  node = UOp.variable("v0", 0, 3)
  case = SymCase(node + UOp.const(IDX, 1), [Leaf(node, 0, 10)])
  fs = SymbolicChecker(use_z3=False).check(case, np.random.default_rng(0))
  assert fs and fs[0].oracle == "bounds"
  assert fs[0].node.vmax == 4


def test_z3_finds_a_difference_the_random_rows_miss():
  # the off-by-one rule folds x % 1000 to x for x in [-999, 1000]: only x == 1000 tells them apart
  v = next(x for x in VARIANTS if x.name == "mod_below_divisor_off_by_one")
  node = UOp.variable("v0", -999, 1000)
  case = SymCase(node.alu(Ops.MOD, UOp.const(IDX, 1000)), [Leaf(node, -999, 1000)])
  chk = SymbolicChecker(v.matcher(), z3_timeout_ms=2000)
  s, steps = chk.simplify(case.expr)
  assert s is node
  env = {node: np.arange(-999, 1000, 7, dtype=np.int64)}  # rows that all agree
  fs = chk.check_z3(case, s, steps, env)
  assert len(fs) == 1 and fs[0].by == "z3"
  assert fs[0].assignment == {"v0": 1000} and fs[0].rule == "mod_below_divisor"
  assert _at(case.expr, case.leaves, fs[0].assignment) == 0 and _at(s, case.leaves, fs[0].assignment) == 1000


def test_cli_fuzz_symbolic(tmp_path, capsys):
  from tinyspec.cli import main
  assert main(["fuzz", "--symbolic", "--seconds", "30", "--max-cases", "15", "--corpus", str(tmp_path)]) == 0
  assert "symbolic fuzz summary: seed 0, 15 cases" in capsys.readouterr().out
  assert (tmp_path / ".fuzz-state-symbolic-0.json").exists() and not (tmp_path / ".fuzz-state-0.json").exists()
  assert main(["fuzz", "--symbolic", "--target", "reference", "--max-cases", "1", "--corpus", str(tmp_path)]) == 2
  assert main(["fuzz", "--target", "symbolic", "--backends", "cpu", "--max-cases", "1", "--corpus", str(tmp_path)]) == 2


def test_leaves_are_read_back_from_the_expression():
  for i in range(30):
    c = case_for(2, i)
    assert [(lf.node, lf.lo, lf.hi) for lf in leaves_of(c.expr)] == [(lf.node, lf.lo, lf.hi) for lf in c.leaves]


def test_cli_symbolic_campaign_with_corpus_report_and_workers(tmp_path, monkeypatch, capsys):
  """`tinyspec fuzz --symbolic --corpus D --report R --workers 2` with an unsound rule in the simplifier: the finding is
  a corpus entry that `tinyspec repro` replays, the report lists it, and a second run resumes past the cases done."""
  import fuzz.check.symbolic
  from tinyspec.cli import main
  variant = next(v for v in VARIANTS if v.name == "mod_below_divisor_off_by_one")
  monkeypatch.setattr(fuzz.check.symbolic, "simplify_table", variant.matcher)  # the workers fork with it
  d, r = tmp_path / "corpus", tmp_path / "report"
  argv = ["fuzz", "--symbolic", "--seconds", "60", "--max-cases", "64", "--corpus", str(d), "--report", str(r), "--workers", "2"]
  assert main(argv) == 1
  out = capsys.readouterr().out
  assert "symbolic fuzz summary: seed 0, 64 cases" in out and "finding: equal/simplify/mod_below_divisor" in out
  files = entries(d)
  assert [load_entry(p).signature for p in files] == [("equal", "simplify", "mod_below_divisor")]
  text = files[0].read_text()
  assert "KIND = 'symbolic'" in text and "blamed: rule 'mod_below_divisor' of pass simplify" in text
  # the report: the same page as the reference target's, its status, counts and the finding
  page = (r / "index.html").read_text()
  vals = dict(re.findall(r'<tr data-key="([^"]+)"><td>[^<]*</td><td class="value">([^<]*)</td></tr>', page))
  assert re.search(r'id="status">finished<', page)
  assert (vals["target"], vals["cases"], vals["findings"]) == ("symbolic", "64", "1")
  assert re.findall(r'<article class="finding"[^>]*data-signature="([^"]+)"', page) == ["equal/simplify/mod_below_divisor"]
  assert f'<code class="repro">tinyspec repro {files[0]}</code>' in page
  (src,) = re.findall(r'<img src="([^"]+)"', page)
  assert (r / src).is_file() and "mod_below_divisor" in (r / src).read_text()
  # tinyspec repro replays it: it still fails with the unsound rule, and is fixed with the real one
  assert main(["repro", str(files[0])]) == 1
  assert "still fails: equal/simplify/mod_below_divisor" in capsys.readouterr().out
  monkeypatch.undo()
  assert main(["repro", str(files[0])]) == 0
  assert "fixed: equal/simplify/mod_below_divisor no longer fails" in capsys.readouterr().out
  # the state file: a second run of the same seed resumes after the 64 cases
  state = json.loads((d / ".fuzz-state-symbolic-0.json").read_text())
  assert state["cases"] == 64 and state["target"] == "symbolic" and state["signatures"] == [["equal", "simplify", "mod_below_divisor"]]
  assert main([*argv[:5], "80", *argv[6:]]) == 0  # the real simplifier again: nothing new in cases 64..79
  assert "symbolic fuzz summary: seed 0, 16 cases" in capsys.readouterr().out


def test_symbolic_workers_do_not_change_the_cases(tmp_path):
  a = _campaign(tmp_path / "a", SymbolicTarget(z3_timeout_ms=200), 100, workers=0, seed=3)
  b = _campaign(tmp_path / "b", SymbolicTarget(z3_timeout_ms=200), 100, workers=2, seed=3)
  sa, sb = (json.loads((tmp_path / x / ".fuzz-state-symbolic-3.json").read_text()) for x in "ab")
  assert a.cases == b.cases == sa["cases"] == sb["cases"] == 100
  assert sa["epoch_results"] == sb["epoch_results"] and len(sa["epoch_results"]) == 100


def test_sigint_ends_a_symbolic_campaign_with_its_summary(tmp_path):
  p, out = interrupt_after_first_status(["fuzz", "--symbolic", "--seconds", "120", "--corpus", str(tmp_path), "--workers", "1"],
                                        "fuzz symbolic: ", ROOT)
  assert "symbolic fuzz summary: seed 0" in out and "(interrupted)" in out, (out, p.stderr.read())
  assert p.returncode == 0 and json.loads((tmp_path / ".fuzz-state-symbolic-0.json").read_text())["cases"] > 0

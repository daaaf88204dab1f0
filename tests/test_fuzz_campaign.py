"""Campaigns: reproducible, resumable, crash- and hang-proof, SIGINT ends with a summary; the CLI verbs."""
from __future__ import annotations

import io
import json
import os
import signal
import time
from pathlib import Path

import pytest

from builders import interrupt_after_first_status
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.engine.reference_target import EPOCH
from fuzz.corpus.store import entries, load_entry
from tinyspec.cli import main
from tinyspec.lower.base import Pass
from tinyspec.spec import Stage

ROOT = Path(__file__).resolve().parent.parent


def _state(d: Path, seed: int) -> dict:
  return json.loads((d / f".fuzz-state-{seed}.json").read_text())


def test_same_seed_same_campaign_and_resume(tmp_path):
  n = EPOCH + 8
  a = run_campaign(CampaignConfig(seconds=120, seed=5, workers=0, corpus=str(tmp_path / "a"), max_cases=n), io.StringIO())
  assert a.cases == n and not a.findings
  # the same seed again, in two runs: stopped inside the second epoch, then resumed
  b1 = run_campaign(CampaignConfig(seconds=120, seed=5, workers=0, corpus=str(tmp_path / "b"), max_cases=EPOCH + 3), io.StringIO())
  b2 = run_campaign(CampaignConfig(seconds=120, seed=5, workers=0, corpus=str(tmp_path / "b"), max_cases=n), io.StringIO())
  assert (b1.cases, b2.cases) == (EPOCH + 3, 5)
  sa, sb = _state(tmp_path / "a", 5), _state(tmp_path / "b", 5)
  assert sa["cases"] == sb["cases"] == n
  assert sa["coverage"] == sb["coverage"] and sa["weights"] == sb["weights"] and sa["epoch_results"] == sb["epoch_results"]
  assert sa["coverage"]  # rules fired
  # steering moved some weights after the first epoch
  from fuzz.generate.case import default_weights
  assert sa["weights"] != default_weights()


def test_summary_lists_coverage(tmp_path):
  s = run_campaign(CampaignConfig(seconds=60, seed=8, workers=0, corpus=str(tmp_path), max_cases=6), io.StringIO())
  text = s.text()
  assert f"{len(s.rules_fired)}/{s.rules_total} rules fired" in text and "rules never fired" in text
  assert len(s.rules_fired) + len(s.never_fired) == s.rules_total and s.rules_fired


def _segfault(root, options, trace, tables):
  os.kill(os.getpid(), signal.SIGSEGV)


def _hang(root, options, trace, tables):
  time.sleep(3600)


@pytest.mark.parametrize("fn, why", [(_segfault, "signal11"), (_hang, "timeout")])
def test_a_dying_or_hanging_worker_is_a_finding(tmp_path, fn, why):
  from tinyspec.lower.pipeline import PASSES
  passes = [Pass("boom", Stage.TENSOR, Stage.TENSOR, fn), *PASSES]
  out = io.StringIO()
  # no integer kernels: case 1 stays a tensor graph, which the TENSOR pass that kills the worker runs on
  s = run_campaign(CampaignConfig(seconds=60, seed=1, workers=1, corpus=str(tmp_path), max_cases=2, passes=passes, case_timeout=1.5,
                                  reduce_seconds=0.5, weights={"kind:int": 0.0}), out)
  assert s.cases == 2  # the campaign went on after the first crash
  sig = ("hang", "boom", "timeout") if why == "timeout" else ("crash", "boom", why)  # named by where it happened
  assert [f.signature for f in s.findings] == [sig]
  files = entries(tmp_path)
  assert len(files) == 1 and load_entry(files[0]).signature == sig
  assert "finding: " + "/".join(sig) in out.getvalue()


def test_sigint_ends_with_a_summary(tmp_path):
  p, out = interrupt_after_first_status(["fuzz", "--seconds", "120", "--corpus", str(tmp_path), "--workers", "1"], "fuzz: ", ROOT)
  state = tmp_path / ".fuzz-state-0.json"
  err = p.stderr.read()
  assert "fuzz summary: seed 0" in out and "(interrupted)" in out, (out, err)
  # exit 1 when the campaign found something before the signal, as always
  assert p.returncode == (1 if "findings (" in out else 0) and state.exists(), (p.returncode, out)


def test_cli_fuzz_and_repro(tmp_path, capsys):
  assert main(["fuzz", "--seconds", "30", "--max-cases", "3", "--corpus", str(tmp_path), "--workers", "0"]) == 0
  out = capsys.readouterr().out
  assert "fuzz summary: seed 0, 3 cases" in out
  # every campaign compiles what it lowers: the CPU backend with the fastest compiler present is on by default
  from tinyspec.runtime.cpu import fastest_compiler
  assert f"checked on: reference, cpu ({fastest_compiler()})" in out
  assert main(["fuzz", "--seconds", "30", "--max-cases", "1", "--corpus", str(tmp_path / "r"), "--workers", "0", "--backends", "reference"]) == 0
  assert "checked on: reference\n" in capsys.readouterr().out
  assert main(["fuzz", "--cc", "nocc", "--corpus", str(tmp_path)]) == 2
  assert "--cc nocc" in capsys.readouterr().err
  assert main(["fuzz", "--backends", "cuda", "--corpus", str(tmp_path)]) == 2
  bad = tmp_path / "bad.py"
  bad.write_text("this is not python(\n")
  assert main(["repro", str(bad)]) == 2
  assert "bad.py" in capsys.readouterr().err
  assert main(["repro", str(tmp_path / "missing.py")]) == 2


def test_cli_repro_exit_codes(tmp_path, capsys):
  import numpy as np

  from fuzz.corpus.store import write_entry
  from fuzz.generate.case import Case
  from tinyspec.dtype import dtypes
  from tinyspec.uop import Ops, UOp
  b = UOp.buffer(dtypes.float32, 4, id=600)
  illegal = Case(UOp(Ops.SINK, src=(UOp(Ops.ADD, dtypes.float32, (b, b.reshape((2, 2)))),)), {})
  p1, _ = write_entry(tmp_path, illegal, ("input", "generator", "x"))
  assert main(["repro", str(p1)]) == 1
  assert "still fails: input/generator/x" in capsys.readouterr().out
  fine = Case(UOp(Ops.SINK, src=(b + b,)), {600: np.arange(4, dtype=np.float32)}, {"callify": "inline", "realize": "minimal", "opts": None})
  p2, _ = write_entry(tmp_path, fine, ("parity", "simplify", "some_rule"))
  assert main(["repro", str(p2)]) == 0
  assert "fixed: parity/simplify/some_rule no longer fails" in capsys.readouterr().out


def test_workers_do_not_change_the_cases(tmp_path):
  n = EPOCH + 4
  run_campaign(CampaignConfig(seconds=120, seed=6, workers=0, corpus=str(tmp_path / "a"), max_cases=n), io.StringIO())
  run_campaign(CampaignConfig(seconds=120, seed=6, workers=2, corpus=str(tmp_path / "b"), max_cases=n), io.StringIO())
  sa, sb = _state(tmp_path / "a", 6), _state(tmp_path / "b", 6)
  assert sa["cases"] == sb["cases"] == n
  assert sa["coverage"] == sb["coverage"] and sa["weights"] == sb["weights"] and sa["epoch_results"] == sb["epoch_results"]

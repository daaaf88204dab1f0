"""The reference target: random TENSOR (and KERNEL_GRAPH) graphs lowered through the reference pipeline, every oracle
of fuzz.check.oracles checked, findings reduced by fuzz.reduce.graph. What `tinyspec fuzz` fuzzes by default."""
from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from fuzz.check.changed_rules import changed_rules
from fuzz.check.oracles import Checker, Config, Finding
from fuzz.corpus.store import Entry, StillFails, render_entry, same_bug
from fuzz.engine.config import ConfigError
from fuzz.engine.coverage import Coverage, steer
from fuzz.reduce.graph import node_count, reduce_case
from fuzz.reduce.isolated import reduce_crash
from fuzz.generate.case import Case, check_weights, default_weights
from fuzz.generate.kinds import case_for, kind_weights
from fuzz.report.pictures import Picture, draw_entry
from fuzz.report.writer import rule_locations

EPOCH = 32


def replay_pipeline(entry: Entry, passes: Sequence | None = None) -> tuple[bool, list]:
  """replay() of a tensor or kernel graph: every oracle of the reference pipeline (or passes)."""
  backends = tuple(b for b in entry.backends if b != "reference")
  cfg = Config(passes=passes, backends=("reference", *backends), per_rewrite=entry.per_rewrite, metamorphic=False)
  findings = Checker(cfg).check(entry.case)
  fails = any(same_bug(f.signature, entry.signature) or same_bug(f.signature[:2], entry.signature[:2]) for f in findings)
  return fails, findings


class ReferenceSession:
  """The checkers of one process: one with every oracle, one without the metamorphic ones for reducing."""

  def __init__(self, cfg: Any):
    self.cfg = cfg
    self.config = Config(passes=cfg.passes, backends=cfg.backends, per_rewrite=cfg.per_rewrite, cc=cfg.cc, kernel_timeout=cfg.case_timeout)
    self.checker = Checker(self.config)
    self.reducer_checker = Checker(replace(self.config, metamorphic=False))

  @property
  def phase(self) -> Counter: return self.checker.stats.phase

  def set_deadline(self, stop_at: float | None) -> None: self.checker.stop_at = stop_at
  def unfinished(self) -> set[int]: return set(self.checker.unfinished)

  def set_progress(self, begin: Any, at: Any) -> None:
    self.checker.begin, self.checker.at = begin, at
    self.reducer_checker.at = at
  def draw(self, seed: int, index: int, weights: dict[str, float]) -> Case: return case_for(seed, index, weights)
  def features(self, case: Case) -> frozenset[str]: return case.features
  def size(self, case: Case) -> int: return node_count(case.root)
  def counts(self) -> dict[str, int]: return {}

  def check_batch(self, cases: Sequence[Case]) -> list[tuple[list[Finding], dict[str, int]]]:
    """Every oracle on the cases (CPU kernels of the batch compiled together)."""
    all_findings = self.checker.check_batch(cases)
    fired = [{"/".join(k): v for k, v in c.items()} for c in self.checker.case_fired]
    return list(zip(all_findings, fired))

  def shrink(self, case: Case, f: Finding, seconds: float) -> tuple[Case, Finding]:
    start = replace(case, options=dict(f.options) if f.options else dict(case.options))
    if f.oracle == "input": return start, f
    rc = self.reducer_checker
    # a candidate that outlives this is a hang; a crash or a result shows long before
    rc.config.kernel_timeout = min(self.cfg.case_timeout, max(1.0, seconds / 8)) if f.oracle == "hang" else self.cfg.case_timeout
    fails = StillFails(rc.check, f)
    try:
      if not fails(start): return case, f  # flaky under its own options: keep it as found
      small = reduce_case(start, fails, max_seconds=seconds)
      fails(small)
    finally:
      rc.config.kernel_timeout = self.cfg.case_timeout
    return small, fails.last

  def shrink_crash(self, case: Case, why: str, seconds: float) -> Case:
    checker = Checker(self.config)
    timeout = min(self.cfg.case_timeout, max(1.0, seconds / 8))
    return reduce_crash(case, checker.check, why, timeout, seconds)[0]

  def entry(self, case: Case, f: Finding, signature: tuple[str, str, str]) -> tuple[str, str]:
    blame = f.blame.describe(6) if f.blame is not None else ""
    return render_entry(case, signature, message=f.message, backends=self.cfg.backends, per_rewrite=self.cfg.per_rewrite, blame=blame), blame

  def crash_entry(self, case: Case, signature: tuple[str, str, str], message: str) -> str:
    return render_entry(case, signature, message=message, backends=self.cfg.backends, per_rewrite=self.cfg.per_rewrite)


class ReferenceTarget:
  name = "reference"
  epoch = EPOCH
  kinds = ("tensor", "kernel")
  reduces_crashes = True   # a case that kills or hangs a worker is reduced (in child processes)
  pipeline_options = True  # --backends, --per-rewrite, --per-pass

  @classmethod
  def from_args(cls, args: argparse.Namespace) -> ReferenceTarget: return cls()

  def session(self, cfg: Any) -> ReferenceSession: return ReferenceSession(cfg)
  def rules(self, cfg: Any) -> list[str]: return Checker(Config(passes=cfg.passes)).all_rules()

  def rule_locations(self, cfg: Any) -> dict[str, tuple[str, str, str]]: return rule_locations(cfg.passes)

  def initial_weights(self, cfg: Any) -> dict[str, float]:
    """The generator's defaults under the weights asked for, each of which must be a weight a generator reads (a
    misspelt name would otherwise steer nothing, silently)."""
    try: asked = check_weights(cfg.weights or {}, kind_weights())
    except ValueError as e: raise ConfigError(f"--weights: {e}") from None
    return {**default_weights(), **asked}

  def steer(self, weights: dict[str, float], coverage: Coverage, epoch: list[tuple[frozenset, dict]]) -> dict[str, float]:
    return steer(weights, coverage, epoch)

  def batch_size(self, cfg: Any) -> int:
    """With CPU parity, kernels of a batch share one compiler run; without, one case keeps jobs short."""
    return cfg.batch if "cpu" in cfg.backends else 1

  def describe(self, cfg: Any) -> tuple[tuple[str, ...], str]:
    return tuple(cfg.backends), "spec checked after every rule application" if cfg.per_rewrite else "spec checked after every pass"

  def replay(self, entry: Entry, passes: Sequence | None = None) -> tuple[bool, list]: return replay_pipeline(entry, passes)

  def draw(self, entry: Entry, out: str | Path, passes: Sequence | None = None, message: str = "") -> Picture:
    return draw_entry(entry, out, passes, message=message)

  def changed_rules(self, cfg: Any) -> list:
    """The prover's rules of cfg.passes that the reference pipeline does not hold as they are ([] for the reference)."""
    return [] if cfg.passes is None else changed_rules(cfg.passes)

"""What a fuzz campaign fuzzes: the Target protocol, and the Session of checking machinery a target makes in a process.

The campaign engine (fuzz.engine.campaign) owns everything that is the same for every target: case numbering and epochs,
worker processes with deadlines, the state file and resuming, SIGINT, status lines, the HTML report, the summary.
A target owns what a case is and what is wrong with one: it wires its generator (fuzz.generate), its checker
(fuzz.check), its reducer (fuzz.reduce) and its corpus entries (fuzz.corpus) into a Session. In the engine's phases,
in order:

  resume    the state file of (target, seed) gives the next case, coverage and weights      (engine)
  prove     the rules the target's pipeline swapped in, proven before the first case        Target.changed_rules
  generate  case i of seed s is drawn from (s, i) and the epoch's weights                  Session.draw
  check     every oracle of the target runs on the case; rules fired count as coverage      Session.check_batch
  store     a finding's entry is written to the corpus as found, before it is reported       Session.entry (engine writes)
  shrink    a finding with a signature the corpus lacks is reduced while it still fails,     Session.shrink
            and its entry replaced by the reduced one
  steer     at the end of an epoch, the weights of the next one                             Target.steer
  report    status lines, the HTML report, the summary                                      (engine)

The corpus is the database: the engine reads which signatures it holds and never runs a case to do so; replaying
an entry (`tinyspec repro`, `pytest -m spec`) goes to the target that stores entries of its KIND (Target.replay).
The targets by name are a table (fuzz.engine.targets.TARGETS): a new target is one row there.
"""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any, Protocol, Sequence

# the target of a campaign that names none: its state file, status line and summary carry no target name (as the
# files of campaigns made before there were other targets)
DEFAULT_TARGET = "reference"


class FindingLike(Protocol):
  """What the engine reads of a target's finding."""
  signature: tuple[str, str, str]       # (oracle, stage, rule): one corpus file per signature
  message: str


class Session(Protocol):
  """A target's checking machinery in one process: a worker's, or the campaign's own for a case that killed a worker.
  phase: seconds spent by phase (generate, check phases, reduce), added to by every method."""
  phase: Counter

  def draw(self, seed: int, index: int, weights: dict[str, float]) -> Any:
    """Case `index` of `seed`: the same arguments give the same case in any process."""
  def features(self, case: Any) -> frozenset[str]:
    """The generator choices the case used (what steering boosts)."""
  def size(self, case: Any) -> int:
    """The case's size in nodes, as findings report it."""
  def check_batch(self, cases: Sequence[Any]) -> list[tuple[list[FindingLike], dict[str, int]]]:
    """(findings, {rule: times it fired}) of every case."""
  def shrink(self, case: Any, finding: FindingLike, seconds: float) -> tuple[Any, FindingLike]:
    """A smaller case that still fails the same way, and its finding (the case as found when it does not replay),
    within `seconds`."""
  def shrink_crash(self, case: Any, why: str, seconds: float) -> Any:
    """A smaller case that still kills or hangs its process the same way (why: signalN, exitN or timeout)."""
  def entry(self, case: Any, finding: FindingLike, signature: tuple[str, str, str]) -> tuple[str, str]:
    """The text of the finding's corpus entry under signature (the one it was found with), and the blame text it
    carries. The campaign writes it: a session never writes the corpus."""
  def crash_entry(self, case: Any, signature: tuple[str, str, str], message: str) -> str:
    """The text of the entry of a case that killed or hung a worker (or whose check or reduction raised)."""
  def counts(self) -> dict[str, int]:
    """Target-specific running totals for the summary (e.g. z3 queries); {} when there are none."""


class Target(Protocol):
  """One thing a campaign can fuzz. It is built in the campaign process and reaches local workers by fork, so it may
  hold what cannot be pickled; on a Dask cluster (--scheduler) it is pickled, with cloudpickle, and one that cannot be
  is refused there."""
  name: str                              # --target NAME; also the state file's and the summary's name
  epoch: int                             # cases per epoch: weights change, and the state is saved, between epochs
  kinds: tuple[str, ...]                 # the corpus KINDs its entries have (what `replay` is asked for)
  reduces_crashes: bool                  # whether Session.shrink_crash reduces (else a crash is stored as found)
  pipeline_options: bool                 # whether --backends, --per-rewrite and --per-pass apply (its cases run through the
                                         # lowering pipeline, by default on the cpu backend too)

  @classmethod
  def from_args(cls, args: argparse.Namespace) -> Target:
    """The target `tinyspec fuzz` arguments ask for (its own options, such as --depth); ConfigError (fuzz.engine.config)
    naming what cannot be used."""
  def session(self, cfg: Any) -> Session: ...
  def rules(self, cfg: Any) -> list[str]:
    """Every rule coverage counts, as "pass/rule"."""
  def rule_locations(self, cfg: Any) -> dict[str, tuple[str, str, str]]:
    """"pass/rule" -> (pass, rule, file:line), for the report."""
  def initial_weights(self, cfg: Any) -> dict[str, float]: ...
  def steer(self, weights: dict[str, float], coverage: Any, epoch: list[tuple[frozenset, dict]]) -> dict[str, float]: ...
  def batch_size(self, cfg: Any) -> int:
    """Cases per worker job."""
  def describe(self, cfg: Any) -> tuple[tuple[str, ...], str]:
    """(what the cases run on, what is checked), for the report's summary."""
  def replay(self, entry: Any, passes: Sequence | None = None) -> tuple[bool, list]:
    """(still fails, findings) of a corpus entry of one of its kinds."""
  def draw(self, entry: Any, out: str | Path, passes: Sequence | None = None, message: str = "") -> Any:
    """The picture of a corpus entry of one of its kinds (fuzz.report.pictures.Picture), drawn to out."""
  def changed_rules(self, cfg: Any) -> list:
    """The rules of what it fuzzes that differ from the reference lowering's and that the rule prover handles
    (tinyspec.prove.prover.RuleRef each; fuzz.check.changed_rules): proven at the campaign's start. [] for none."""

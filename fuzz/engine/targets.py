"""What a fuzz campaign fuzzes: the Target protocol, the findings and summary every target's campaign shares, and the
targets by name (`tinyspec fuzz --target NAME`).

The campaign engine (fuzz.engine.campaign) owns everything that is the same for every target: case numbering and epochs,
worker processes with deadlines, the state file and resuming, SIGINT, status lines, the HTML report, the summary.
A target owns what a case is and what is wrong with one. In the engine's phases, in order:

  resume    the state file of (target, seed) gives the next case, coverage and weights      (engine)
  generate  case i of seed s is drawn from (s, i) and the epoch's weights                  Session.draw
  check     every oracle of the target runs on the case; rules fired count as coverage      Session.check_batch
  store     a finding's entry is written to the corpus as found, before it is reported       Session.entry (engine writes)
  shrink    a finding with a signature the corpus lacks is reduced while it still fails,     Session.shrink
            and its entry replaced by the reduced one
  steer     at the end of an epoch, the weights of the next one                             Target.steer
  report    status lines, the HTML report, the summary                                      (engine)

The corpus is the database: the engine reads which signatures it holds and never runs a case to do so; replaying
an entry (`tinyspec repro`, `pytest -m spec`) goes to the target that stores entries of its KIND (Target.replay).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

TARGET_NAMES = ("reference", "symbolic", "tinygrad")


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
    (tinyspec.prove.prover.RuleRef each; fuzz.engine.changed_rules): proven at the campaign's start. [] for none."""


@dataclass
class Reported:
  """A finding as the campaign reports it: where it is stored and how small it got."""
  signature: tuple[str, str, str]
  path: str
  new: bool
  case: int
  nodes: int
  message: str
  blame: str = ""
  found_nodes: int = 0                  # the size of the case as generated, before reduction
  also: list[str] = field(default_factory=list)  # the other signatures its bug group was found with (one entry holds the group)


@dataclass
class Summary:
  """The end of a campaign of any target."""
  seed: int
  cases: int
  seconds: float
  findings: list[Reported] = field(default_factory=list)
  rules_total: int = 0
  rules_fired: list[str] = field(default_factory=list)
  never_fired: list[str] = field(default_factory=list)
  phase: dict[str, float] = field(default_factory=dict)
  interrupted: bool = False
  target: str = "reference"
  counts: dict[str, int] = field(default_factory=dict)  # the target's own totals (Session.counts), over every run
  checked: str = ""     # what each case ran on, in words ("reference, cpu (tcc)")

  def text(self) -> str:
    rate = self.cases / self.seconds if self.seconds > 0 else 0.0
    title = "fuzz summary" if self.target == "reference" else f"{self.target} fuzz summary"
    counts = "".join(f", {v} {k}" for k, v in self.counts.items())
    lines = [f"{title}: seed {self.seed}, {self.cases} cases in {self.seconds:.1f}s ({rate:.1f}/s){counts}"
             + (" (interrupted)" if self.interrupted else ""),
             *([f"checked on: {self.checked}"] if self.checked else []),
             f"rule coverage: {len(self.rules_fired)}/{self.rules_total} rules fired"]
    if self.phase:
      tot = sum(self.phase.values()) or 1.0
      lines.append("time by phase: " + ", ".join(f"{k} {v:.1f}s ({100 * v / tot:.0f}%)" for k, v in sorted(self.phase.items(), key=lambda x: -x[1])))
    if self.never_fired:
      lines.append(f"rules never fired ({len(self.never_fired)}):")
      lines.extend(f"  {r}" for r in self.never_fired)
    if self.findings:
      lines.append(f"findings ({len(self.findings)}):")
      for f in self.findings:
        lines.append(f"  {'/'.join(f.signature)}: {f.path} ({f.nodes} nodes{', new' if f.new else ', known'})")
        lines.extend(f"    also found as {o}" for o in f.also)  # the same bug group: one entry
    else:
      lines.append("findings: none")
    return "\n".join(lines)


def get_target(target: str | Target | None, **options: Any) -> Target:
  """A target by name (options go to its constructor), or the target itself; None is the reference pipeline."""
  if target is None: target = "reference"
  if not isinstance(target, str): return target
  if target == "reference":
    from fuzz.engine.reference_target import ReferenceTarget
    return ReferenceTarget(**options)
  if target == "symbolic":
    from fuzz.engine.symbolic import SymbolicTarget
    return SymbolicTarget(**options)
  if target == "tinygrad":
    from fuzz.engine.tinygrad_target import TinygradTarget
    return TinygradTarget(**options)
  raise ValueError(f"unknown fuzz target {target!r}; choose from {', '.join(TARGET_NAMES)}")


def target_for_kind(kind: str) -> Target:
  """The target whose corpus entries have this KIND (tensor and kernel: the reference pipeline)."""
  for name in TARGET_NAMES:
    t = get_target(name)
    if kind in t.kinds: return t
  raise ValueError(f"no fuzz target stores corpus entries of kind {kind!r}")


def replay(entry: Any, passes: Sequence | None = None) -> tuple[bool, list]:
  """(still fails, findings) of a corpus entry: every oracle of the target that stores entries of its KIND, on its case
  (the reference pipeline, or passes, for tensor and kernel graphs). It still fails when a finding has its signature, or
  the same oracle and stage (a renamed rule is still the same failure)."""
  return target_for_kind(entry.case.kind).replay(entry, passes)

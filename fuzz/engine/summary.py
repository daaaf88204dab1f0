"""A campaign's findings as it reports them, and its summary: the same for every target."""
from __future__ import annotations

from dataclasses import dataclass, field

from fuzz.engine.protocol import DEFAULT_TARGET


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
  target: str = DEFAULT_TARGET
  counts: dict[str, int] = field(default_factory=dict)  # the target's own totals (Session.counts), over every run
  checked: str = ""     # what each case ran on, in words ("reference, cpu (tcc)")

  def text(self) -> str:
    rate = self.cases / self.seconds if self.seconds > 0 else 0.0
    title = "fuzz summary" if self.target == DEFAULT_TARGET else f"{self.target} fuzz summary"
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

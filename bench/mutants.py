"""Mutation testing of the fuzzer: one campaign per mutant of fuzz.testbed.mutants, and how many it kills.

For each mutant a campaign (fuzz.engine.campaign.run_campaign, the default configuration of `tinyspec fuzz` with the
mutant in it, one core: workers=0) runs up to --seconds and stops at the first kill. A finding kills the mutant when
the reference pipeline passes its stored case (fuzz.engine.targets.replay). Per mutant: killed or not, the time to
the first kill, whether blame is right (the signature names the mutant's pass and rule; for a renderer mutant the
render pass or the method; for a gradient mutant the gradient rule), and the size of the stored entry (nodes).
Totals: kill rate, median time to kill, blame accuracy over the killed, median reduced size.

    PYTHONPATH=. python bench/mutants.py                       # every mutant, 60 s each, --backends reference,cpu
    PYTHONPATH=. python bench/mutants.py --only flip_off_by_one --seconds 20 --backends reference,cpu

A pass-rule or renderer mutant reaches the campaign as its pipeline (CampaignConfig.passes); a gradient-rule mutant
as the rule table of the gradient oracle (fuzz.check.oracles.Config.gradient_rules), through a target that is the
reference target with that table. An OpenCL-only renderer mutant (a method of OpenCLRenderer alone) is invisible to a
campaign that runs no OpenCL kernel, so its campaign runs --backends with opencl added (noted "opencl added" in its
row): what a user whose compiler has an OpenCL renderer runs. Figures are printed and written to bench/mutants.txt (--out).
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from fuzz.check.oracles import Checker
from fuzz.corpus.store import load_entry
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.engine.reference_target import ReferenceSession, ReferenceTarget
from fuzz.engine.summary import Reported
from fuzz.engine.targets import replay
from fuzz.reduce.graph import node_count
from fuzz.testbed.mutants import GRADIENT_RULE, MUTANTS, MUTANTS_BY_NAME, PASS_RULE, RENDERER, Mutant
from tinyspec.runtime.cpu import fastest_compiler


@dataclass
class Result:
  name: str
  kind: str
  killed: bool
  seconds: float | None       # time to the first kill
  blame_ok: bool | None       # None when not killed
  nodes: int | None           # node count of the killing entry as stored (reduced)
  signature: str
  cases: int
  note: str = ""


class _Clock(io.StringIO):
  """The campaign's output, with the time each finding was reported (the campaign prints it as found)."""

  def __init__(self) -> None:
    super().__init__()
    self.t0 = time.monotonic()
    self.found_at: dict[str, float] = {}

  def write(self, s: str) -> int:
    for line in s.splitlines():
      if line.startswith("finding: "): self.found_at.setdefault(line.split()[1], time.monotonic() - self.t0)
    return super().write(s)


class _GradientRulesSession(ReferenceSession):
  """The reference target's session with the gradient oracle given another rule table."""

  def __init__(self, cfg: Any, rules: Any):
    super().__init__(cfg)
    self.config = replace(self.config, gradient_rules=rules)
    self.checker = Checker(self.config)
    self.reducer_checker = Checker(replace(self.config, metamorphic=False))


class GradientRulesTarget(ReferenceTarget):
  """The reference target whose gradient oracle rewrites with `rules` (a gradient-rule mutant's table)."""

  def __init__(self, rules: Any):
    self.gradient_rules = rules

  def session(self, cfg: Any) -> ReferenceSession: return _GradientRulesSession(cfg, self.gradient_rules)


def blame_right(m: Mutant, signature: Sequence[str]) -> bool:
  """Whether a killing finding's signature (oracle, stage, rule) names the mutant's place."""
  _, stage, rule = signature
  if m.kind == PASS_RULE: return stage == m.where and rule == m.rule
  if m.kind == RENDERER: return stage == "render" or m.method in rule
  return m.rule in rule  # a gradient finding names the rule it blames (its stage is the oracle's)


class _Kills:
  """stop_when of a mutant's campaign: a finding kills when the reference pipeline passes its stored case."""

  def __init__(self) -> None:
    self.seen: dict[str, bool] = {}
    self.first: Reported | None = None

  def __call__(self, r: Reported) -> bool:
    if r.path not in self.seen:
      try: self.seen[r.path] = replay(load_entry(r.path))[0] is False
      except Exception: self.seen[r.path] = False  # an entry that cannot be replayed shows nothing about the mutant
      if self.seen[r.path] and self.first is None: self.first = r
    return self.seen[r.path]


def reached(m: Mutant, fired: Sequence[str]) -> str:
  """Whether a surviving pass-rule mutant's rule ever rewrote a node in the campaign (it returned a new node): a rule
  that never fired was never reached by a case it applies to. One that fired may still never have taken the branch
  that holds the mistake (most broken functions agree with the real one on most inputs)."""
  if m.kind != PASS_RULE: return ""
  return f"{m.where}/{m.rule} fired" if f"{m.where}/{m.rule}" in set(fired) else f"{m.where}/{m.rule} never fired"


def campaign_config(m: Mutant, seconds: float, seed: int, backends: tuple[str, ...], corpus: str, max_cases: int | None,
                    stop_when: Any, cc: str | None = None) -> CampaignConfig:
  """The default campaign (what `tinyspec fuzz` runs) on one core, with the mutant in it; cc None: the fastest compiler."""
  cc = (cc or fastest_compiler()) if "cpu" in backends else None  # as tinyspec fuzz picks it
  cfg = CampaignConfig(seconds=seconds, seed=seed, workers=0, corpus=corpus, backends=backends, max_cases=max_cases, resume=False,
                       stop_when=stop_when, cc=cc)
  if m.kind == GRADIENT_RULE: return replace(cfg, target=GradientRulesTarget(m.rules()))
  return replace(cfg, passes=m.pipeline())


def opencl_only(m: Mutant) -> bool:
  """Whether m changes only the OpenCL renderer: only a campaign that runs OpenCL kernels can see it."""
  return m.kind == RENDERER and m.rule.split(".")[0] == "OpenCLRenderer"


def backends_for(m: Mutant, backends: tuple[str, ...]) -> tuple[str, ...]:
  """The backends m's campaign runs: backends, with opencl added for an OpenCL-only renderer mutant (as a user who
  ships an OpenCL renderer fuzzes with `--backends reference,cpu,opencl`)."""
  return (*backends, "opencl") if opencl_only(m) and "opencl" not in backends else backends


def run_mutant(m: Mutant | str, seconds: float = 60.0, seed: int = 0, backends: tuple[str, ...] = ("reference", "cpu"),
               max_cases: int | None = None, cc: str | None = None) -> Result:
  """One campaign against mutant m, stopped at its first kill (backends_for m: OpenCL added for an OpenCL-only one)."""
  if isinstance(m, str): m = MUTANTS_BY_NAME[m]
  added = backends_for(m, backends) != backends
  backends = backends_for(m, backends)
  kills, out = _Kills(), _Clock()
  with tempfile.TemporaryDirectory(prefix=f"mutant-{m.name}-") as d:
    s = run_campaign(campaign_config(m, seconds, seed, backends, d, max_cases, kills, cc), out)
    r = kills.first
    if r is None:
      sigs = sorted({"/".join(f.signature) for f in s.findings})
      note = "; ".join(x for x in ("opencl added" if added else "", f"{len(sigs)} finding(s), none the reference passes" if sigs else "",
                                   reached(m, s.rules_fired)) if x)
      return Result(m.name, m.kind, False, None, None, None, ", ".join(sigs[:3]) or "-", s.cases, note)
    sig = "/".join(r.signature)
    nodes = node_count(load_entry(r.path).case.root)
  return Result(m.name, m.kind, True, out.found_at.get(sig), blame_right(m, r.signature), nodes, sig, s.cases, "opencl added" if added else "")


def totals(results: list[Result]) -> dict[str, Any]:
  killed = [r for r in results if r.killed]
  times = [r.seconds for r in killed if r.seconds is not None]
  return {"mutants": len(results), "killed": len(killed), "kill_rate": len(killed) / len(results) if results else 0.0,
          "median_seconds": statistics.median(times) if times else None,
          "blame_ok": sum(1 for r in killed if r.blame_ok), "blame_accuracy": sum(1 for r in killed if r.blame_ok) / len(killed) if killed else 0.0,
          "median_nodes": statistics.median([r.nodes for r in killed if r.nodes is not None]) if killed else None}


def table(results: list[Result]) -> str:
  rows = [f"{'mutant':32} {'kind':13} {'killed':6} {'s':>6} {'blame':5} {'nodes':>5} {'cases':>5}  signature / note"]
  for r in results:
    t = f"{r.seconds:6.1f}" if r.seconds is not None else "     -"
    b = "-" if r.blame_ok is None else "yes" if r.blame_ok else "no"
    n = f"{r.nodes:5d}" if r.nodes is not None else "    -"
    rows.append(f"{r.name:32} {r.kind:13} {'yes' if r.killed else 'no':6} {t} {b:5} {n} {r.cases:5d}  {r.signature}"
                + (f"  ({r.note})" if r.note else ""))
  return "\n".join(rows)


def summary_lines(results: list[Result]) -> list[str]:
  t = totals(results)
  med_s = f"{t['median_seconds']:.1f} s" if t["median_seconds"] is not None else "-"
  med_n = f"{t['median_nodes']:g}" if t["median_nodes"] is not None else "-"
  return [f"killed {t['killed']} of {t['mutants']} ({100 * t['kill_rate']:.0f}%); median time to kill {med_s}; "
          f"blame right for {t['blame_ok']} of {t['killed']} killed ({100 * t['blame_accuracy']:.0f}%); median reduced size {med_n} nodes"]


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--seconds", type=float, default=60.0, help="budget of each mutant's campaign (default 60)")
  ap.add_argument("--only", nargs="+", metavar="NAME", help="these mutants only (names of fuzz.testbed.mutants)")
  ap.add_argument("--kind", choices=[PASS_RULE, RENDERER, GRADIENT_RULE], help="mutants of this kind only")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--backends", default="reference,cpu",
                  help="comma-separated, as `tinyspec fuzz --backends` (default reference,cpu, as tinyspec fuzz)")
  ap.add_argument("--cc", choices=["tcc", "clang", "gcc"], help="C compiler of the cpu backend, as `tinyspec fuzz --cc` (default: the fastest)")
  ap.add_argument("--out", default=str(Path(__file__).with_suffix(".txt")), help="where the figures are written ('-': nowhere)")
  ap.add_argument("--append", action="store_true", help="add this run to --out instead of replacing it")
  args = ap.parse_args(argv)
  names = args.only or [m.name for m in MUTANTS]
  if bad := [n for n in names if n not in MUTANTS_BY_NAME]:
    ap.error(f"no mutant {bad[0]!r}; known: {', '.join(MUTANTS_BY_NAME)}")
  ms = [MUTANTS_BY_NAME[n] for n in names if args.kind is None or MUTANTS_BY_NAME[n].kind == args.kind]
  backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
  cmd = "PYTHONPATH=. python bench/mutants.py " + " ".join(argv if argv is not None else sys.argv[1:])
  results = []
  t0 = time.monotonic()
  for m in ms:
    r = run_mutant(m, args.seconds, args.seed, backends, cc=args.cc)
    results.append(r)
    print(table([r]).splitlines()[1], flush=True)
  head = f"backends {','.join(backends)} (cc {args.cc or fastest_compiler()}), {args.seconds:g} s per mutant, seed {args.seed}, workers 0 (one core)"
  if any(backends_for(m, backends) != backends for m in ms): head += "; OpenCL-only renderer mutants with opencl added"
  text = "\n".join([f"$ {cmd.strip()}", f"{head}; {time.monotonic() - t0:.0f} s in all", table(results), *summary_lines(results), ""])
  print("\n" + text)
  if args.out != "-":
    out = Path(args.out)
    prev = out.read_text() + "\n" if args.append and out.exists() else ""
    out.write_text(prev + text)
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""The symbolic target (`tinyspec fuzz --target symbolic`, or `--symbolic`): the integer simplifier alone, on random view
index expressions (fuzz.generate.symbolic), checked equal and within bounds (fuzz.check.symbolic), findings shrunk by
fuzz.reduce.symbolic and stored as corpus entries of KIND "symbolic" (fuzz.corpus.symbolic): graph() is the
expression, inputs() the failing assignment. Replaying one (`tinyspec repro`, `pytest -m spec`) simplifies the
expression with today's rules and checks it at that assignment, then as a fresh case.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

from fuzz.check import symbolic as check
from fuzz.check.changed_rules import changed_table_rules
from fuzz.check.symbolic import SymbolicChecker, SymFinding, replay_case, rows_rng
from fuzz.corpus.store import StillFails, render_entry
from fuzz.corpus.symbolic import KIND, entry_case
from fuzz.engine.config import ConfigError
from fuzz.generate.symbolic import SymCase, case_for
from fuzz.reduce.symbolic import shrink_expr
from fuzz.report.pictures import Picture
from tinyspec import viz
from tinyspec.rewrite import PatternMatcher


class SymbolicSession:
  """A symbolic checker in one process (fuzz.engine.protocol.Session)."""

  def __init__(self, target: SymbolicTarget, cfg: Any):
    self.target, self.cfg = target, cfg
    self.checker = SymbolicChecker(target.pm, target.z3_timeout_ms, use_z3=target.use_z3)
    self.phase: Counter = Counter()
    self.begin: Any = lambda k: None

  def set_progress(self, begin: Any, at: Any) -> None: self.begin = begin

  def draw(self, seed: int, index: int, weights: dict[str, float]) -> SymCase: return case_for(seed, index, self.target.depth)
  def features(self, case: SymCase) -> frozenset[str]: return frozenset(f"op:{u.op.name}" for u in case.expr.toposort())
  def size(self, case: SymCase) -> int: return len(case.expr.toposort())
  def counts(self) -> dict[str, int]: return {"z3 queries": self.checker.z3_queries, "z3 unknown": self.checker.z3_unknown}

  def check(self, case: SymCase) -> list[SymFinding]: return self.checker.check(case, rows_rng(case.seed, case.index))

  def check_batch(self, cases: Sequence[SymCase]) -> list[tuple[list[SymFinding], dict[str, int]]]:
    out = []
    for k, case in enumerate(cases):
      self.begin(k)
      t = time.perf_counter()
      fs = self.check(case)
      self.phase["check"] += time.perf_counter() - t
      out.append((fs, {f"simplify/{k}": n for k, n in self.checker.fired.items()}))
    return out

  def shrink(self, case: SymCase, f: SymFinding, seconds: float) -> tuple[SymCase, SymFinding]:
    fails = StillFails(self.check, f)
    small = shrink_expr(case, fails, seconds)
    if small is case: return case, f
    fails(small)
    return small, fails.last

  def shrink_crash(self, case: SymCase, why: str, seconds: float) -> SymCase: return case  # a crash is stored as found

  def entry(self, case: SymCase, f: SymFinding, signature: tuple[str, str, str]) -> tuple[str, str]:
    blame = f.blame_text()
    return render_entry(entry_case(case, f.assignment), signature, message=f.message, blame=blame), blame

  def crash_entry(self, case: SymCase, signature: tuple[str, str, str], message: str) -> str:
    return render_entry(entry_case(case), signature, message=message)


@dataclass
class SymbolicTarget:
  """The integer simplifier (pm: its rule table, default the simplify pass's) on random view index expressions."""
  pm: PatternMatcher | None = None
  depth: int = 4
  z3_timeout_ms: int = 300
  use_z3: bool = True
  name: str = "symbolic"
  epoch: int = 256          # no weights to steer: an epoch only spaces out the state file's saves
  batch: int = 8            # cases per worker job: a case takes milliseconds
  kinds: tuple[str, ...] = (KIND,)
  reduces_crashes: bool = False
  pipeline_options: ClassVar[bool] = False

  @classmethod
  def from_args(cls, args: argparse.Namespace) -> SymbolicTarget:
    depth, z3_timeout_ms = getattr(args, "depth", 4), getattr(args, "z3_timeout_ms", 300)
    if depth < 1: raise ConfigError("--depth must be at least 1")
    return cls(depth=depth, z3_timeout_ms=z3_timeout_ms)

  def table(self) -> PatternMatcher: return check.simplify_table() if self.pm is None else self.pm
  def session(self, cfg: Any) -> SymbolicSession: return SymbolicSession(self, cfg)
  def rules(self, cfg: Any) -> list[str]: return list(self.rule_locations(cfg))

  def rule_locations(self, cfg: Any) -> dict[str, tuple[str, str, str]]:
    out: dict[str, tuple[str, str, str]] = {}
    for r in self.table().rules: out.setdefault(f"simplify/{r.name}", ("simplify", r.name, r.location))
    return out

  def initial_weights(self, cfg: Any) -> dict[str, float]: return {}
  def steer(self, weights: dict[str, float], coverage: Any, epoch: list) -> dict[str, float]: return weights
  def batch_size(self, cfg: Any) -> int: return self.batch

  def describe(self, cfg: Any) -> tuple[tuple[str, ...], str]:
    return (("numpy", "z3") if self.use_z3 else ("numpy",),
            f"index expressions of depth {self.depth} simplified, checked equal and within bounds")

  def replay(self, entry: Any, passes: Sequence | None = None) -> tuple[bool, list]:
    return replay_case(entry.case, entry.signature, self.pm)

  def draw(self, entry: Any, out: str | Path, passes: Sequence | None = None, message: str = "") -> Picture:
    """The blamed rule application before and after, else the expression."""
    signature = tuple(entry.signature)
    fails, findings = replay_case(entry.case, signature, self.pm)
    f = next((f for f in findings if f.signature == signature), findings[0] if findings else None)
    if f is not None and f.before is not None and f.after is not None:
      viz.save(viz.draw_rewrite(f.before, f.after, f"simplify/{f.rule}", f.location), out)
      return Picture(Path(out), "rewrite", f"rule application {f.step} of {f.total} in simplify ({f.rule}): the matched node and what replaced it",
                     signature, fails, f.rule, "simplify", f.location, f.step, f.total)  # type: ignore[arg-type]
    why = "no rule application is to blame" if f is not None else "the entry no longer fails"
    msg = f.message if f is not None else message
    viz.render(entry.case.root, out, title=f"{'/'.join(signature)}: {msg.splitlines()[0] if msg else ''}")
    return Picture(Path(out), "graph", f"{why}: the expression, with nothing to highlight", signature, fails)  # type: ignore[arg-type]

  def changed_rules(self, cfg: Any) -> list:
    """The prover's rules of pm that the simplify pass's own table does not hold as they are ([] for that table)."""
    if self.pm is None: return []
    return changed_table_rules(self.pm, check.simplify_table(), "simplify")

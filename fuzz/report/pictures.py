"""The picture of a corpus entry: its blamed rule application drawn before and after, or else its graph with the
failure marked on it. Used by `tinyspec repro --viz` and by the campaign report.

With a blamed application, both sides are the whole graph of the pass right before and right after that application
(rerun with a step limit), the rewritten node highlighted in each; when the rewritten nodes cannot be found in those
graphs, the matched node and its replacement are drawn on their own. Without one (a crash in a runtime, a failure no
rule is to blame for, an entry that no longer fails) the graph is drawn with the violations of the failing pass, or
the output whose values differ, outlined in red.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from fuzz.check.blame import Blame, run_steps
from fuzz.corpus.store import Entry, same_bug
from fuzz.check.oracles import Checker, Config, Finding, lower_options
from tinyspec import viz
from tinyspec.lower.base import Pass
from tinyspec.lower.start import start_index
from tinyspec.spec import check
from tinyspec.uop import Ops, UOp

NOT_REPLAYED = ("worker", "campaign")  # stages of findings whose replay could kill the process drawing them


@dataclass
class Mark:
  """A failure marked on a drawn node, in the form tinyspec.viz highlights (like a spec Violation)."""
  node: UOp
  path: tuple[int, ...]
  rule: str
  message: str


@dataclass
class Picture:
  """What was drawn for an entry. kind: "rewrite" (the blamed application, before and after), "violation" (the graph
  with the failure marked) or "graph" (the graph with nothing to mark); note says which, in one line."""
  path: Path
  kind: str
  note: str
  signature: tuple[str, str, str]
  fails: bool | None = None        # whether the replay still fails (None: not replayed)
  rule: str = ""                   # the blamed rule, its pass and location, when there is one
  pass_name: str = ""
  location: str = ""
  step: int = 0
  total: int = 0


def passes_of(passes: Sequence[Pass] | None) -> list[Pass]:
  return Config(passes=passes).pipeline()


def replay_findings(entry: Entry, passes: Sequence[Pass] | None = None) -> list[Finding]:
  """The findings of the entry's case on the reference evaluator only: enough to find the blamed application of a
  pass, and no generated code runs in this process."""
  return Checker(Config(passes=passes, backends=("reference",), per_rewrite=entry.per_rewrite, metamorphic=False)).check(entry.case)


def matching(findings: Sequence[Finding], signature: Sequence[str]) -> Finding | None:
  """The finding that is the entry's failure: the same signature, else the same oracle and stage, else the first."""
  for f in findings:
    if same_bug(f.signature, signature): return f
  for f in findings:
    if same_bug(f.signature[:2], signature[:2]): return f
  return findings[0] if findings else None


def lower_until(entry: Entry, passes: list[Pass], options: dict[str, Any], name: str) -> tuple[UOp, UOp | None, Pass | None]:
  """(graph into pass `name`, graph out of it or None when it raised, the pass); the input graph and None for a name
  that is not a pass of the pipeline."""
  lo = lower_options(options)
  g = entry.case.root
  for p in passes[start_index(passes, entry.case.root, entry.case.kind):]:
    try: out = run_steps(p, g, lo, None)[0]
    except Exception:
      return g, None, (p if p.name == name else None)
    if p.name == name: return g, out, p
    g = out
  return entry.case.root, None, None


def _output_mark(root: UOp, message: str, rule: str) -> list[Mark]:
  """The SINK entry a parity message names ("output i: ..."), as a mark."""
  m = re.search(r"\boutput (\d+):", message)
  if m is None or root.op is not Ops.SINK: return []
  i = int(m.group(1))
  if i >= len(root.src): return []
  return [Mark(root.src[i], (i,), rule, message)]


def _title(signature: Sequence[str], message: str) -> str:
  first = message.splitlines()[0] if message else ""
  return f"{'/'.join(signature)}: {first}" if first else "/".join(signature)


def draw_entry(entry: Entry, out: str | os.PathLike, passes: Sequence[Pass] | None = None, findings: Sequence[Finding] | None = None,
               message: str = "") -> Picture:
  """Draw the entry's failure to out (svg, png, pdf or dot). findings: those of a replay already made (else the entry
  is replayed here on the reference evaluator, unless its case killed a worker); message: the failure as recorded,
  used when the replay does not show it."""
  if entry.case.kind not in ("tensor", "kernel"):
    raise ValueError(f"{entry.case.kind} entries are drawn by the fuzz target that stores them (its Target.draw), not here")
  sig = entry.signature
  pl = passes_of(passes)
  replayed = findings is not None or sig[1] not in NOT_REPLAYED
  if findings is None: findings = replay_findings(entry, passes) if replayed else []
  f = matching(findings, sig)
  fails = None if not replayed else any(same_bug(g.signature, sig) or same_bug(g.signature[:2], sig[:2]) for g in findings)
  msg = f.message if f is not None else message
  b = f.blame if f is not None else None
  if b is not None and b.before is not None and b.after is not None:
    return _draw_rewrite(entry, out, pl, f, b, fails)
  pic = Picture(Path(out), "graph", "", tuple(sig), fails)
  if b is not None: pic.rule, pic.pass_name, pic.location, pic.step, pic.total = b.rule, b.pass_name, b.location, b.step, b.total
  root, marks, drawn = entry.case.root, [], "the graph"
  stage = f.stage if f is not None else sig[1]
  oracle = f.oracle if f is not None else sig[0]
  pass_name = stage.split("@", 1)[1] if stage.startswith("evaluate@") else stage
  if f is not None and any(p.name == pass_name for p in pl):
    gin, gout, p = lower_until(entry, pl, (f.options if f is not None and f.options else entry.case.options), pass_name)
    if p is not None and gout is not None:
      root, drawn = gout, f"the graph after {pass_name}"
      if oracle == "spec": marks = list(check(gout, p.stage_out))
      elif oracle in ("parity", "metamorphic"): marks = _output_mark(gout, msg, oracle)
    elif p is not None: root, drawn = gin, f"the graph into {pass_name}"  # the pass raised on it
  elif f is not None or not replayed:
    marks = _output_mark(root, msg, oracle)
  why = ("no rule application is to blame" if f is not None else
         "not replayed here: its case killed or hung a worker" if not replayed else "the entry no longer fails")
  if marks:
    pic.kind = "violation"
    pic.note = f"{why}: {drawn} with {len(marks)} {'violation' if oracle == 'spec' else 'differing output'}(s) highlighted"
  else:
    pic.note = f"{why}: {drawn}, with nothing to highlight"
  viz.render(root, out, marks, title=_title(sig, msg))
  return pic


def _draw_rewrite(entry: Entry, out: str | os.PathLike, passes: list[Pass], f: Finding, b: Blame, fails: bool | None) -> Picture:
  pic = Picture(Path(out), "rewrite", "", tuple(entry.signature), fails, b.rule, b.pass_name, b.location, b.step, b.total)
  where = f"{b.pass_name}/{b.rule}"
  g = None
  try:
    gin, _, p = lower_until(entry, passes, f.options or entry.case.options, b.pass_name)
    if p is not None:
      lo = lower_options(f.options or entry.case.options)
      before_g, after_g = run_steps(p, gin, lo, b.step - 1)[0], run_steps(p, gin, lo, b.step)[0]
      if b.before in before_g.toposort() and b.after in after_g.toposort():
        g = viz.draw_rewrite(before_g, after_g, where, b.location, before_node=b.before, after_node=b.after)
        pic.note = f"rule application {b.step} of {b.total} in {b.pass_name} ({b.rule}): the whole graph before and after it"
  except Exception:
    g = None  # the whole-graph context is a bonus: the application itself is drawn below
  if g is None:
    g = viz.draw_rewrite(b.before, b.after, where, b.location)
    pic.note = f"rule application {b.step} of {b.total} in {b.pass_name} ({b.rule}): the matched node and what replaced it"
  viz.save(g, out)
  return pic

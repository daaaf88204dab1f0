"""Blame: the first rule application of a pass that breaks the spec or the meaning of a graph.

A pass is run with a step limit (Trace.max_steps): after k rule applications no rule applies any more and the pass
returns the partially rewritten graph. A predicate on that graph (does it break the spec? does it evaluate to other
values?) is false at k = 0 and true once the pass is done; bisecting over k finds an application k where it turns
true. The observer of the k-th run gives the rule, its source location and the node before and after.
"""
from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable

from fuzz.check.local_eval import kernel_entries, rewrite_changes_value
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.rewrite import PatternMatcher, Rule
from tinyspec.uop import UOp, print_graph


@dataclass
class Blame:
  """Rule application number `step` (1-based) of `total` in the pass: `rule` at `location` turned `before` into `after`."""
  pass_name: str
  rule: str
  location: str
  step: int
  total: int
  before: UOp | None = None
  after: UOp | None = None

  def describe(self, limit: int = 12) -> str:
    lines = [f"blamed: rule {self.rule!r} of pass {self.pass_name} at {self.location}, application {self.step} of {self.total}"]
    if self.before is not None and self.after is not None:
      lines.append("  before:")
      lines.extend("    " + ln for ln in print_graph(self.before, limit).splitlines())
      lines.append("  after:")
      lines.extend("    " + ln for ln in print_graph(self.after, limit).splitlines())
    return "\n".join(lines)


class CtxTrace(Trace):
  """A Trace that remembers the ctx of the rewrite in progress, so an observer can read it, and, for a kernel-level
  pass, the contents of the kernel's args at its entry: `entries` maps each kernel body of the pass's input to them (one
  dict PARAM slot -> flat array per call of the body), and a rewrite's result inherits its root's (a pass rewrites a
  body several times over)."""
  ctx: Any = None
  entries: dict[UOp, list[dict[int, Any]]] | None = None
  slots: list[dict[int, Any]] | None = None

  def rewrite(self, root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True, body: bool = False) -> UOp:
    saved = self.ctx, self.slots
    self.ctx = ctx
    self.slots = self.entries.get(root) if self.entries is not None else None
    try:
      out = super().rewrite(root, pm, ctx, bottom_up, body)
      if self.entries is not None and self.slots is not None: self.entries.setdefault(out, self.slots)
      return out
    finally: self.ctx, self.slots = saved


def run_steps(p: Pass, root: UOp, options: LowerOptions, max_steps: int | None,
              observer: Callable[[Rule, UOp, UOp], None] | None = None, trace: Trace | None = None) -> tuple[UOp, int]:
  """The pass's result after at most max_steps rule applications, and how many it made."""
  if trace is None: trace = Trace(observer=observer, max_steps=max_steps)
  out = p.run(root, options, trace)
  return out, trace.steps


def count_steps(p: Pass, root: UOp, options: LowerOptions) -> int:
  return run_steps(p, root, options, None)[1]


def application(p: Pass, root: UOp, options: LowerOptions, k: int) -> tuple[Rule, UOp, UOp] | None:
  """The k-th rule application (1-based) of the pass on root: (rule, before, after)."""
  seen: list[tuple[Rule, UOp, UOp]] = []
  def obs(rule: Rule, before: UOp, after: UOp) -> None:
    if len(seen) < k: seen.append((rule, before, after))
  try: run_steps(p, root, options, k, obs)
  except Exception:
    pass  # a pass that raises after its k-th application (a crash being blamed) has still made it
  return seen[k - 1] if len(seen) >= k else None


def first_failing_step(fails: Callable[[int], bool], total: int) -> int | None:
  """The smallest k in [1, total] found by bisection with fails(k - 1) false and fails(k) true; None when fails(total)
  is false. fails(0) true means the pass breaks things outside any rule application: 0."""
  if not fails(total): return None
  if fails(0): return 0
  lo, hi = 0, total  # fails(lo) is false, fails(hi) is true
  while hi - lo > 1:
    mid = (lo + hi) // 2
    if fails(mid): hi = mid
    else: lo = mid
  return hi


def bisect(p: Pass, root: UOp, options: LowerOptions, broken: Callable[[UOp], bool], total: int | None = None) -> Blame | None:
  """Blame the first application after which `broken(partial graph)` holds. None when the full pass is not broken."""
  if total is None: total = count_steps(p, root, options)
  cache: dict[int, bool] = {}
  def fails(k: int) -> bool:
    if k not in cache:
      try: cache[k] = bool(broken(run_steps(p, root, options, k)[0]))
      except Exception:
        cache[k] = False  # a partial graph the predicate cannot judge counts as not (yet) broken
    return cache[k]
  k = first_failing_step(fails, total)
  if k is None: return None
  return blame_at(p, root, options, k, total)


def blame_at(p: Pass, root: UOp, options: LowerOptions, k: int, total: int) -> Blame:
  if k == 0: return Blame(p.name, "<outside rules>", p.location, 0, total)
  app = application(p, root, options, k)
  if app is None: return Blame(p.name, "<outside rules>", p.location, k, total)
  rule, before, after = app
  return Blame(p.name, rule.name, rule.location, k, total, before, after)


def creator_on_path(p: Pass, root: UOp, out: UOp, options: LowerOptions, path: tuple[int, ...]) -> Blame | None:
  """The creator of the deepest new node on the path from out's root to a violation (the node itself may be old:
  a rule put it where it does not belong)."""
  chain = [out]
  for i in path:
    if i >= len(chain[-1].src): break
    chain.append(chain[-1].src[i])
  existing = set(root.toposort())
  for n in reversed(chain):
    if n not in existing and (b := creator(p, root, options, n)) is not None: return b
  return None


def creator(p: Pass, root: UOp, options: LowerOptions, node: UOp) -> Blame | None:
  """The first rule application whose result holds `node` (which did not exist in the graph before it)."""
  existing = set(root.toposort())
  if node in existing: return None
  apps: list[tuple[Rule, UOp, UOp]] = []
  def obs(rule: Rule, before: UOp, after: UOp) -> None: apps.append((rule, before, after))
  _, total = run_steps(p, root, options, None, obs)
  for i, (rule, before, after) in enumerate(apps):
    if node is after or node in after.toposort(gate=lambda u: u not in existing):
      return Blame(p.name, rule.name, rule.location, i + 1, total, before, after)
  return None


def local_change(p: Pass, root: UOp, options: LowerOptions, inputs: dict, error: float | None = None) -> Blame | None:
  """The first rule application whose `before` and `after` nodes, each evaluated on its own, differ: a rewrite must
  keep the meaning of the node it replaces (fuzz.check.local_eval; applications it cannot judge are skipped). error:
  the relative error bound of the values, for the float tolerance (fuzz.check.agree; None: unknown)."""
  apps: list[tuple[Rule, UOp, UOp, Any, Any]] = []
  trace = CtxTrace()
  trace.entries = kernel_entries(root, inputs)
  def obs(rule: Rule, before: UOp, after: UOp) -> None: apps.append((rule, before, after, trace.ctx, trace.slots))
  trace.observer = obs
  _, total = run_steps(p, root, options, None, trace=trace)
  tensors: dict = {}
  for i, (rule, before, after, ctx, slots) in enumerate(apps):
    if rewrite_changes_value(before, after, inputs, ctx, slots, tensors, error):
      return Blame(p.name, rule.name, rule.location, i + 1, total, before, after)
  return None


def crash_blame(p: Pass, root: UOp, options: LowerOptions, exc: type[BaseException]) -> Blame | None:
  """The rule application during which pass p raises exc on root. The step limit finds it: with a limit of m
  applications the pass raises and with m - 1 it does not. The rule then is the one whose function is on the traceback
  (it raised while being applied, the m-th attempt); else the m-th application, the last one before the pass's own code
  raised on what it made. None when the pass does not raise exc (a crash that does not come back)."""
  made: list[int] = []
  def count(rule: Rule, before: UOp, after: UOp) -> None: made.append(1)
  tbs: dict[int, TracebackType | None] = {}
  def fails(k: int | None) -> bool:
    try: run_steps(p, root, options, k, count if k is None else None)
    except exc as e:
      tbs[-1 if k is None else k] = e.__traceback__
      return True
    except Exception: return False
    return False
  if not fails(None): return None
  n = len(made) + 1  # a limit past every application the pass made before raising behaves as no limit
  m = first_failing_step(lambda k: k in tbs or fails(k), n)
  if m is None: m = n
  total = len(made)
  if (rule := crash_rule(p, tbs.get(m, tbs[-1]))) is not None:
    r = next(x for x in p.rules() if x.name == rule)
    return Blame(p.name, rule, r.location, m, total)
  return blame_at(p, root, options, m, total) if m <= total else Blame(p.name, "<outside rules>", p.location, m, total)


def crash_rule(p: Pass, tb: TracebackType | None) -> str | None:
  """The rule whose function is on the traceback of an exception raised inside pass p, innermost first."""
  codes = {}
  for r in p.rules():
    if (c := getattr(r.fn, "__code__", None)) is not None: codes[c] = r.name
  found = None
  while tb is not None:
    if tb.tb_frame.f_code in codes: found = codes[tb.tb_frame.f_code]
    tb = tb.tb_next
  return found


def crash_site(tb: TracebackType | None) -> str:
  """Where an exception was raised, as a signature can name it: the innermost frame outside Python's own library and
  installed packages (tinyspec's, the fuzzer's, a pass or rule given to it), `file.py:function`."""
  libs = tuple(os.path.normpath(p) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
  site = last = ""
  while tb is not None:
    code = tb.tb_frame.f_code
    name = f"{os.path.basename(code.co_filename)}:{code.co_name}"
    last = name
    if not os.path.normpath(code.co_filename).startswith(libs): site = name
    tb = tb.tb_next
  return site or last or "?"



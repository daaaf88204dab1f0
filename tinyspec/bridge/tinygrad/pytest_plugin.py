"""The pytest plugin's work (switched on by `pytest --tinyspec=check|eval`; the entry point is pytest_tinyspec.py):
record every graph tinygrad makes in each test (`recording()`, one Capture per schedule), translate each schedule,
check every translated graph against its stage's spec and, in eval mode, compare tinyspec's evaluator with tinygrad's
numbers of what was realized.

Per test: a report section "tinyspec" (or, with --tinyspec-fail, a failure of a test that passed) naming each
violation (rule id, stage, graph, path, sentence), the untranslated ops and any mismatch. Per session: a summary
(tests, schedules, graphs and nodes per stage, % translated, untranslated ops, violations by rule id, numbers) in the
terminal and, with --tinyspec-json PATH, as JSON.

tinyspec's own failure never fails a test: an exception while translating, checking or evaluating is counted as a
tinyspec error, with its name, and the test's outcome is tinygrad's. The hooks are restored after every phase of every
test, passed or failed. Cost: the check of a schedule is memoized by the structure of its graphs (tinygrad's UOp.key),
so a schedule a test suite makes again is checked once; tinygrad's own caches stay on (a schedule or program it takes
from them is not made again, so not captured again: it was checked when made). PARALLEL=0 while a test runs, so that
compiles happen in this process, where the hooks are.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest
from tinygrad.helpers import Context

from tinyspec.bridge.tinygrad.capture import Capture
from tinyspec.bridge.tinygrad.check import MODES, Report, compare_numbers, spec_violations
from tinyspec.bridge.tinygrad.recording import recording
from tinyspec.bridge.tinygrad.translate import translate
from tinyspec.bridge.tinygrad.translator import STAGES
from tinyspec.fileio import atomic_write
from tinyspec.semantics import kernel

TOO_BIG = "not evaluated (too big)"
JSON_EVERY = 60.0   # seconds between writes of the JSON while the session runs


@dataclass
class Found:
  """What one schedule (or one test, or the session: they add up) showed."""
  schedules: int = 0
  graphs: Counter = field(default_factory=Counter)        # stage -> graphs captured
  nodes: Counter = field(default_factory=Counter)         # stage -> nodes
  translated: Counter = field(default_factory=Counter)    # stage -> nodes translated
  untranslated: Counter = field(default_factory=Counter)  # "OP at stage" -> nodes that did not translate
  why: dict[str, str] = field(default_factory=dict)        # "OP at stage" -> the reason the first such node gave
  violations: list[dict] = field(default_factory=list)    # rule, stage, graph, path, message
  numbers: Counter = field(default_factory=Counter)       # "compared" / "mismatch" / TOO_BIG / ... per comparison
  mismatches: list[str] = field(default_factory=list)
  errors: Counter = field(default_factory=Counter)        # "ExceptionName: where" -> count

  def add(self, o: Found) -> None:
    self.schedules += o.schedules
    for a in ("graphs", "nodes", "translated", "untranslated", "numbers", "errors"): getattr(self, a).update(getattr(o, a))
    self.violations += o.violations
    self.mismatches += o.mismatches
    for k, w in o.why.items(): self.why.setdefault(k, w)

  @property
  def made(self) -> bool:
    """Whether tinygrad made any graph here."""
    return bool(self.schedules or sum(self.graphs.values()))

  @property
  def percent(self) -> float:
    total = sum(self.nodes.values())
    return 100.0 * sum(self.translated.values()) / total if total else 100.0

  def by_rule(self) -> Counter: return Counter(v["rule"] for v in self.violations)

  def summary(self) -> dict:
    return {"schedules": self.schedules, "graphs": dict(self.graphs), "nodes": dict(self.nodes), "translated": dict(self.translated),
            "percent_translated": round(self.percent, 3), "untranslated": dict(self.untranslated.most_common()),
            "untranslated_why": {k: self.why.get(k) for k, _ in self.untranslated.most_common()},
            "violations_by_rule": dict(self.by_rule().most_common()), "numbers": dict(self.numbers), "tinyspec_errors": dict(self.errors)}


def capture_key(cap: Capture) -> bytes:
  """The structure of every graph of a schedule (tinygrad's UOp.key: equal keys, equal graphs): a schedule made again
  (the same test parametrized, a model's step rerun) is checked once. Not the UOps themselves: holding them would keep
  their device buffers alive for the whole session."""
  h = hashlib.sha256()
  roots = [cap.tensor] + [c for _, c, _ in cap.callified] + [g for kg in cap.kernel_graphs for g in kg] + [p for _, p in cap.programs]
  for r in roots: h.update(b"-" if r is None else r.key)
  return h.digest()


def checked(cap: Capture) -> tuple[Found, Report]:
  """Translate one schedule and check every translated graph: its coverage, untranslated ops and violations."""
  t = translate(cap, strict=False)
  rep = Report(cap, t, violations=spec_violations(t))
  f = Found(schedules=int(cap.tensor is not None))   # a Capture of programs alone is no schedule of its own
  for stage, (done, total) in t.coverage().items():
    f.graphs[stage] += len(t.graphs[stage])
    f.nodes[stage] += total
    f.translated[stage] += done
  for stage in STAGES:
    for u, why in t.failed.get(stage, {}).items():
      f.untranslated[key := f"{u.op.name} at {stage}"] += 1
      f.why.setdefault(key, " ".join(why.split())[:200])   # one line: a reason may quote a tinygrad UOp's repr
    for i, v in rep.violations[stage]:
      f.violations.append({"rule": v.rule, "stage": stage, "graph": i, "path": list(v.path), "message": v.message})
  return f, rep


def largest(t: Any) -> int:
  """The most elements any node of the translated tensor-stage graphs holds (what the graph evaluator materializes)."""
  n = 0
  for stage in ("tensor", "callified"):
    for _, g in t.graphs[stage]:
      if g is None: continue
      for u in g.toposort():
        try: shp = u.shape
        except ValueError: continue
        if shp is not None:
          size = 1
          for d in shp: size *= d
          n = max(n, size)
  return n


@contextlib.contextmanager
def iteration_bound(n: int) -> Iterator[None]:
  """The evaluator's loop-nest limit lowered to n for the block (its own refusal, an EvalError, then counts as too big)."""
  saved, kernel.MAX_ITERATIONS = kernel.MAX_ITERATIONS, min(n, kernel.MAX_ITERATIONS)
  try: yield
  finally: kernel.MAX_ITERATIONS = saved


def evaluated(rep: Report, max_iterations: int) -> Found:
  """eval mode: compare tinyspec's evaluation of each stage with tinygrad's numbers of the schedule's outputs."""
  f = Found()
  cap = rep.capture
  if cap.tensor is None or len(cap.outputs) != len(cap.tensor.src):
    f.numbers["not evaluated (no numbers of tinygrad's: no realize, or an output left a view)"] += 1
    return f
  if largest(rep.translation) > max_iterations:
    f.numbers[TOO_BIG] += 1
    return f
  with iteration_bound(max_iterations): compare_numbers(rep)
  for mode in MODES:
    res = rep.numbers.get(mode)
    if not rep.ran.get(mode): f.numbers[f"{mode}: not run"] += 1
    elif mode in rep.errors and "past the evaluator's limit" in str(rep.errors[mode]): f.numbers[f"{mode}: {TOO_BIG}"] += 1
    elif mode in rep.errors: f.numbers[f"{mode}: evaluator failed ({type(rep.errors[mode]).__name__})"] += 1
    elif res is None: f.numbers[f"{mode}: matches"] += 1
    else:
      f.numbers[f"{mode}: MISMATCH"] += 1
      f.mismatches.append(f"{mode}: {res}")
  return f


class Plugin:
  """Registered by pytest_tinyspec when --tinyspec is check or eval."""
  def __init__(self, mode: str, fail: bool = False, json_path: str | None = None, max_iterations: int = 1 << 20):
    self.mode, self.fail, self.json_path, self.max_iterations = mode, fail, json_path, max_iterations
    self.tests = 0
    self.per_test: dict[str, Found] = {}
    self.memo: dict[bytes, Found] = {}
    self.memo_hits = 0
    self.started = self.written = time.monotonic()

  # ---- recording each phase of a test ----
  def _phase(self, item: pytest.Item) -> Iterator[None]:
    """Record one phase (setup, call, teardown) of a test; each schedule is checked as soon as it is complete, so the
    recording holds none of the test's graphs (nor the buffers they name) past the realize that made them."""
    found = self.per_test.setdefault(item.nodeid, Found())
    def take(cap: Capture) -> None:
      try: found.add(self._one(cap))
      except Exception as e: self._error(item, e, "check")   # tinyspec's failure is never the test's
    cm = contextlib.ExitStack()
    try:
      cm.enter_context(Context(PARALLEL=0))
      cm.enter_context(recording(inputs=self.mode == "eval", outputs=self.mode == "eval", on_capture=take))
    except Exception as e:   # the hooks could not be installed: undo what was, run the test as it is, count the error
      try: cm.close()
      except Exception: pass
      self._error(item, e, "recording")
      yield
      return
    try: yield
    finally:
      try: cm.close()
      except Exception as e: self._error(item, e, "recording")

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]: yield from self._phase(item)

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
    yield from self._phase(item)
    found = self.per_test[item.nodeid]
    if found.made or found.errors: item.add_report_section("call", "tinyspec", self.describe(found))

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
    yield from self._phase(item)
    self.tests += 1
    if self.json_path is not None and time.monotonic() - self.written > JSON_EVERY: self.write_json(complete=False)

  def _error(self, item: pytest.Item, e: BaseException, where: str) -> None:
    found = self.per_test.setdefault(item.nodeid, Found())
    found.errors[f"{type(e).__name__} ({where}): {str(e)[:200]}"] += 1

  def _one(self, cap: Capture) -> Found:
    try: key = capture_key(cap) if self.mode == "check" else None
    except Exception: key = None   # a graph too deep for tinygrad's recursive key: checked, not memoized
    if key is not None and (hit := self.memo.get(key)) is not None:
      self.memo_hits += 1
      return hit
    try:
      f, rep = checked(cap)
      if self.mode == "eval": f.add(evaluated(rep, self.max_iterations))
    except Exception as e:
      f = Found(schedules=int(cap.tensor is not None))
      f.errors[f"{type(e).__name__}: {str(e)[:200]}"] += 1
    if key is not None: self.memo[key] = f
    return f

  # ---- reporting ----
  @staticmethod
  def describe(f: Found) -> str:
    lines = [f"{f.schedules} schedule(s), {sum(f.graphs.values())} graph(s), {sum(f.nodes.values())} nodes, {f.percent:.2f}% translated, "
             f"{len(f.violations)} violation(s)"]
    lines += [f"violation {v['rule']} at {v['stage']} #{v['graph']} path {tuple(v['path'])}: {v['message']}" for v in f.violations]
    lines += [f"untranslated {what}: {n} node(s) ({f.why.get(what)})" for what, n in f.untranslated.most_common()]
    lines += [f"numbers, {m}" for m in f.mismatches]
    lines += [f"tinyspec error (not the test's): {what} x{n}" for what, n in f.errors.items()]
    return "\n".join(lines)

  @pytest.hookimpl(hookwrapper=True)
  def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if call.when != "call" or not self.fail or not rep.passed: return
    f = self.per_test.get(item.nodeid)
    if f is None or not (f.violations or f.mismatches): return
    rep.outcome = "failed"
    rep.longrepr = "tinyspec: the graphs tinygrad made in this test break tinyspec's spec\n" + self.describe(f)

  def session(self) -> dict:
    total = Found()
    for f in self.per_test.values(): total.add(f)
    return {"mode": self.mode, "tests": self.tests, "tests_with_graphs": sum(1 for f in self.per_test.values() if f.made),
            "tests_with_violations": sum(1 for f in self.per_test.values() if f.violations),
            "schedules_checked_once_more": self.memo_hits, "seconds": round(time.monotonic() - self.started, 1),
            **total.summary()}

  def pytest_terminal_summary(self, terminalreporter: Any) -> None:
    s = self.session()
    tr = terminalreporter
    tr.write_sep("=", f"tinyspec ({self.mode})")
    tr.write_line(f"tests: {s['tests']} run, {s['tests_with_graphs']} made tinygrad graphs, {s['tests_with_violations']} with violations; "
                  f"{s['schedules']} schedules ({s['schedules_checked_once_more']} seen before, checked once)")
    for stage in STAGES:
      n, done = s["nodes"].get(stage, 0), s["translated"].get(stage, 0)
      tr.write_line(f"  {stage:>13}: {s['graphs'].get(stage, 0):6d} graphs, {n:8d} nodes, {100.0 * done / n if n else 100.0:6.2f}% translated")
    tr.write_line(f"  all stages: {s['percent_translated']:.2f}% of {sum(s['nodes'].values())} nodes translated")
    for what, n in s["untranslated"].items(): tr.write_line(f"  untranslated {what}: {n} node(s) ({s['untranslated_why'][what]})")
    for rule, n in s["violations_by_rule"].items(): tr.write_line(f"  violation {rule}: {n}")
    for what, n in sorted(s["numbers"].items()): tr.write_line(f"  numbers, {what}: {n}")
    for what, n in s["tinyspec_errors"].items(): tr.write_line(f"  tinyspec error: {what}: {n}")

  def pytest_sessionfinish(self, session: pytest.Session) -> None:
    if self.json_path is not None: self.write_json(complete=True)

  def write_json(self, complete: bool) -> None:
    """The session so far (complete False: written while the session runs, so a run stopped from outside leaves it)."""
    self.written = time.monotonic()
    tests = {nodeid: {"schedules": f.schedules, "graphs": sum(f.graphs.values()), "nodes": sum(f.nodes.values()),
                      "percent_translated": round(f.percent, 3), "violations": f.violations, "untranslated": dict(f.untranslated),
                      "mismatches": f.mismatches, "tinyspec_errors": dict(f.errors)}
             for nodeid, f in self.per_test.items() if f.made or f.errors}
    atomic_write(self.json_path, json.dumps({"session": {**self.session(), "complete": complete}, "tests": tests}, indent=1, default=str) + "\n")

"""Running cases: a batch of case numbers drawn, checked, its findings rendered as corpus entries and reduced; in the
campaign process (--workers 0), in a worker process, or on a Dask worker (fuzz.engine.dask_runner).

A runner never writes the corpus: it sends what it found to the campaign, which owns the corpus and the state file
(fuzz.engine.campaign). For a batch it sends, in order:

  ("checked", results, found)   every case's coverage, and every finding's corpus entry as found (unreduced), so a
                                finding is stored before anything else can go wrong with it
  ("reduced", signature, found, seconds)  one per new finding, once reduced: the entry to replace the unreduced one
                                of signature (or, when reducing raised, a finding of that failure, and the unreduced
                                entry stays), and the time the reduction took (the campaign's "reduce" phase)

A finding is new unless its entry existed when the campaign started, or the campaign stored it from a case with a
lower number (`best`): so the entry kept for a signature is the one of its lowest case, however many workers run.
A failure of the runner itself is a finding of its own, stored with the case it happened on: a batch whose check
raises is checked again case by case, a case whose check raises is a ("crash", "check", Type@site) finding, a
reduction that raises a ("crash", "reduce", Type@site) one (the finding keeps its unreduced entry).

The runner tells the campaign where it is through a Progress slot in shared memory (the case, since when, how long
that step may take, where in it: a pass, "evaluate", "cpu kernels", "reduce"): the campaign kills a worker whose
step outlives its time and names the hang by it.
"""
from __future__ import annotations

import ctypes
import faulthandler
import signal
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

from fuzz.check.blame import crash_site
from fuzz.corpus.store import bug_group, entry_name, entry_path, placeholder_entry
from fuzz.engine.protocol import FindingLike
from fuzz.engine.summary import Reported
from fuzz.engine.targets import get_target
from tinyspec.runtime.host import COMPILE_TIMEOUT

IDLE = -2        # Progress.index when the runner is between batches
BATCH = -1       # Progress.index during a step of the whole batch (the CPU compile)
GRACE = 3.0      # seconds past a step's deadline before its runner is killed (it may be reporting a kernel's hang itself)
TICK = 0.25      # seconds between looks at the runners' deadlines


class Progress(ctypes.Structure):
  """Where a runner is, in memory its campaign reads."""
  _fields_ = [("index", ctypes.c_int64), ("since", ctypes.c_double), ("limit", ctypes.c_double), ("reducing", ctypes.c_int32),
              ("where", ctypes.c_char * 96)]

  def step(self, index: int, limit: float, reducing: bool = False, where: str = "") -> None:
    self.where = where.encode()[:95]
    self.limit, self.reducing = float(limit), int(reducing)
    self.since = time.monotonic()
    self.index = index

  def overdue(self, now: float, grace: float) -> bool:
    """Whether the step in progress has outlived its limit by more than grace seconds (never between batches)."""
    return self.index != IDLE and now - self.since > self.limit + grace

  def at(self, where: str) -> None:
    self.where = where.encode("utf-8", "replace")[:95]

  @property
  def place(self) -> str: return self.where.decode("utf-8", "replace") or "check"


@dataclass
class Found:
  """A finding as a runner sends it: its corpus entry's text and what the campaign reports."""
  reported: Reported
  text: str


def _site() -> str:
  return crash_site(sys.exc_info()[2])


class CaseRunner:
  """Draws, checks, renders and reduces cases of the campaign's target, in the process it is made in."""

  def __init__(self, cfg: Any, existing: frozenset[str] = frozenset(), progress: Progress | None = None):
    self.cfg = cfg
    self.target = get_target(cfg.target)
    self.session = self.target.session(cfg)
    self.existing = existing          # entry names in the corpus when the campaign started
    self.progress = progress if progress is not None else Progress()
    self.indices: Sequence[int] = ()
    if hasattr(self.session, "set_progress"): self.session.set_progress(self._begin, self.progress.at)

  def _begin(self, k: int) -> None:
    """The session starts a step of case k of the batch (-1: of the whole batch, e.g. running its kernels)."""
    t = self.cfg.case_timeout
    if 0 <= k < len(self.indices): self.progress.step(self.indices[k], t, where="check")
    else: self.progress.step(BATCH, COMPILE_TIMEOUT + t * len(self.indices), where="kernels")

  def run(self, index: int, weights: dict[str, float]) -> dict[str, Any]:
    return self.run_batch([index], weights)[0]

  def run_batch(self, indices: Sequence[int], weights: dict[str, float], emit: Callable[[tuple], None] | None = None,
                best: dict[tuple[str, str, str], int] | None = None, stop_at: float | None = None) -> list[dict[str, Any]]:
    """Check the cases, emit what was found, reduce each new finding (within the time left before stop_at)."""
    emit = emit or (lambda msg: None)
    best = best or {}
    s, p, timeout = self.session, self.progress, self.cfg.case_timeout
    phase_before, counts_before = Counter(s.phase), Counter(s.counts())
    t = time.perf_counter()
    cases = []
    for i in indices:
      p.step(i, timeout, where="generate")
      cases.append(s.draw(self.cfg.seed, i, weights))
    s.phase["generate"] += time.perf_counter() - t
    self.indices = indices
    if hasattr(s, "set_deadline"): s.set_deadline(stop_at)
    p.step(indices[0] if len(indices) == 1 else BATCH, timeout * len(indices), where="check")
    checked = self._check(cases, indices)
    self.indices = indices
    # cases the campaign's time ran out for are not done: they run again on resume
    skip = {indices[k] for k in s.unfinished()} if hasattr(s, "unfinished") else set()
    phase, counts = dict(s.phase - phase_before), {k: v - counts_before.get(k, 0) for k, v in s.counts().items()}
    # times and counts are per batch: the first case carries them
    results = [{"index": i, "features": sorted(s.features(case)), "fired": fired, "phase": phase if k == 0 else {},
                "counts": counts if k == 0 else {}}
               for k, (i, case, (_, fired)) in enumerate(zip(indices, cases, checked)) if i not in skip]
    todo, found, first = [], [], set()
    for i, case, (findings, _) in zip(indices, cases, checked):
      if i in skip: continue
      for f in findings:
        sig, group = tuple(f.signature), bug_group(f.signature)
        new = entry_name(sig) not in self.existing and best.get(group, i + 1) > i and group not in first  # type: ignore[arg-type]
        first.add(group)
        fd = self._found(case, i, f, new)
        found.append(fd)
        if new: todo.append((i, case, f, fd))
    emit(("checked", results, found))
    for i, case, f, fd in todo:
      left = (stop_at - time.monotonic()) if stop_at is not None else float("inf")
      budget = min(self.cfg.reduce_seconds, left - 1.0)
      if budget < 1.0: continue  # the campaign's time is up: the finding stays as found
      p.step(i, budget + timeout, reducing=True, where="reduce")
      t = time.perf_counter()
      reduced = self._reduce(case, i, f, fd, budget)
      emit(("reduced", tuple(f.signature), reduced, time.perf_counter() - t))
    p.step(IDLE, 0.0)
    return [{**r, "found": [fd for fd in found if fd.reported.case == r["index"]]} for r in results]

  def _check(self, cases: list, indices: Sequence[int]) -> list[tuple[list, dict]]:
    """check_batch of the session; when it raises, each case alone, and a case that raises is a finding of its own."""
    try: return self.session.check_batch(cases)
    except Exception:
      if len(cases) == 1: return [([self._crash("check", cases[0])], {})]
    out = []
    for i, c in zip(indices, cases):
      self.indices = [i]
      self.progress.step(i, self.cfg.case_timeout, where="check")
      try: out.append(self.session.check_batch([c])[0])
      except Exception: out.append(([self._crash("check", c)], {}))
    return out

  def _crash(self, where: str, case: Any) -> FindingLike:
    e = sys.exc_info()[1]
    site = _site()
    return _RunnerFinding(("crash", where, f"{type(e).__name__}@{site}"), f"{where} raised {type(e).__name__} at {site}: {str(e)[:300]}")

  def _found(self, case: Any, index: int, f: FindingLike, new: bool) -> Found:
    size = self.session.size(case)
    sig = tuple(f.signature)
    rep = Reported(sig, str(entry_path(self.cfg.corpus, sig)), new, index, size, f.message, found_nodes=size)  # type: ignore[arg-type]
    if not new: return Found(rep, "")
    try: text, rep.blame = self.session.entry(case, f, sig)
    except Exception as e:  # the case cannot be written as it is: an entry that says how to make it again
      text = placeholder_entry(sig, f"{f.message}\nthe case could not be written ({type(e).__name__}: {str(e)[:200]}): it is case "
                               f"{index} of seed {self.cfg.seed}", self.cfg.seed, index)
    return Found(rep, text)

  def _reduce(self, case: Any, index: int, f: FindingLike, found: Found, budget: float) -> Found:
    """The reduced entry of a finding; when reducing raises, the unreduced one and a finding of the failure."""
    s = self.session
    t = time.perf_counter()
    try:
      small, final = s.shrink(case, f, budget)
      text, blame = s.entry(small, final, tuple(f.signature))
    except Exception:
      s.phase["reduce"] += time.perf_counter() - t
      bad = self._crash("reduce", case)
      rep = Reported(bad.signature, str(entry_path(self.cfg.corpus, bad.signature)), True, index, found.reported.nodes, bad.message)
      try: text = s.crash_entry(case, bad.signature, bad.message)
      except Exception: text = placeholder_entry(bad.signature, bad.message, self.cfg.seed, index)
      return Found(rep, text)
    s.phase["reduce"] += time.perf_counter() - t
    rep = Reported(found.reported.signature, found.reported.path, True, index, s.size(small), final.message, blame, found.reported.found_nodes)
    return Found(rep, text)


@dataclass
class _RunnerFinding:
  signature: tuple[str, str, str]
  message: str


# ---- a worker process ----
def worker_main(cfg: Any, conn: Any, progress: Progress, existing: frozenset[str]) -> None:
  """A worker: batches from conn, messages back, until None or EOF (its campaign ended or died)."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # the campaign handles ^C and ends its workers
  faulthandler.disable()  # a segfault is the campaign's finding, not a traceback dump
  runner = CaseRunner(cfg, existing, progress)
  progress.step(IDLE, 0.0)
  while True:
    try: msg = conn.recv()
    except (EOFError, OSError): return
    if msg is None: return
    indices, weights, best, stop_at = msg
    runner.run_batch(indices, weights, conn.send, best, stop_at)
    conn.send(("done",))


def as_dict(fd: Found) -> dict[str, Any]:
  return {"reported": asdict(fd.reported), "text": fd.text}

"""The campaign engine: number cases, run them on a target in worker processes, store and report findings.

One engine for every target (fuzz.engine.targets: the reference pipeline, the symbolic simplifier; `--target NAME`). Cases
are numbered; case i of seed s is drawn by the target from (s, i) and the weights of its epoch (target.epoch cases),
which depend only on the coverage of earlier epochs, so the same seed and code give the same cases. The state file
in the corpus directory (target, seed, next case, the current epoch, coverage, weights, findings) is rewritten
atomically after every epoch and on exit, so a restarted campaign resumes where it stopped. Cases run in worker
processes with a deadline: a worker that dies (a segfault in generated code) or hangs is a finding, and a new worker
takes over. A finding is reduced and written to the corpus by the worker before the campaign reports it, so a
SIGKILL at any moment loses nothing already reported.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from fuzz.corpus.store import entry_path
from fuzz.engine.coverage import Coverage
from fuzz.engine.reference_target import EPOCH
from fuzz.engine.targets import FindingLike, Reported, Summary, Target, get_target
from tinyspec.fileio import atomic_write

__all__ = ["EPOCH", "CampaignConfig", "Campaign", "CaseRunner", "Reported", "Summary", "Target", "run_campaign"]


@dataclass
class CampaignConfig:
  seconds: float = 60.0
  seed: int = 0
  workers: int = 1                      # 0: run cases in this process (no crash or hang protection)
  corpus: str = "corpus"
  backends: tuple[str, ...] = ("reference",)
  per_rewrite: bool = False
  max_cases: int | None = None          # stop after this many cases (in total, resumed ones included)
  case_timeout: float = 30.0            # seconds a case may take before its worker is a hang finding
  reduce_seconds: float = 60.0          # budget of one reduction
  passes: Sequence | None = None        # None: the reference pipeline
  resume: bool = True
  status_every: float = 10.0            # seconds between plain status lines when not on a terminal
  stop_on_finding: bool = False
  batch: int = 16                       # cases per job when CPU kernels are compiled together
  cc: str | None = None                 # C compiler of the cpu backend (None: the runtime's default)
  stop_when: Callable[[Reported], bool] | None = None  # stop once a finding satisfies this
  weights: dict[str, float] | None = None  # generator weights to start from (fuzz.generate.strategies.default_weights names)
  report: str | None = None             # a directory for the HTML report (fuzz.report.writer), kept up to date as the campaign runs
  target: str | Target = "reference"    # what is fuzzed: a name of fuzz.engine.targets.TARGET_NAMES, or a Target


def state_name(target: Target, seed: int) -> str:
  """The state file of a campaign: one per target and seed in a corpus directory."""
  return f".fuzz-state-{seed}.json" if target.name == "reference" else f".fuzz-state-{target.name}-{seed}.json"


# ---- one batch of cases (in a worker or in-process) ----
class CaseRunner:
  """Draws, checks, shrinks and stores cases of the campaign's target, in the process it is made in."""

  def __init__(self, cfg: CampaignConfig):
    self.cfg = cfg
    self.target = get_target(cfg.target)
    self.session = self.target.session(cfg)

  def run(self, index: int, weights: dict[str, float]) -> dict[str, Any]:
    return self.run_batch([index], weights)[0]

  def run_batch(self, indices: Sequence[int], weights: dict[str, float]) -> list[dict[str, Any]]:
    """Generate and check cases; store each finding."""
    s = self.session
    phase_before, counts_before = Counter(s.phase), Counter(s.counts())
    t = time.perf_counter()
    cases = [s.draw(self.cfg.seed, i, weights) for i in indices]
    s.phase["generate"] += time.perf_counter() - t
    checked = s.check_batch(cases)
    reported = [[self.store(case, f) for f in findings] for case, (findings, _) in zip(cases, checked)]
    phase, counts = dict(s.phase - phase_before), {k: v - counts_before.get(k, 0) for k, v in s.counts().items()}
    # times and counts are per batch: the first case carries them
    return [{"index": i, "features": sorted(s.features(case)), "fired": fired, "phase": phase if k == 0 else {},
             "counts": counts if k == 0 else {}, "reported": rep}
            for k, (i, case, (_, fired), rep) in enumerate(zip(indices, cases, checked, reported))]

  def store(self, case: Any, f: FindingLike) -> Reported:
    """A finding of a signature the corpus has is known (reported, not shrunk); else it is shrunk and stored."""
    s, index = self.session, getattr(case, "index", None) or 0
    path = entry_path(self.cfg.corpus, f.signature)
    if path.exists(): return Reported(f.signature, str(path), False, index, s.size(case), f.message)
    t = time.perf_counter()
    small, final = s.shrink(case, f)
    s.phase["reduce"] += time.perf_counter() - t
    path, new, blame = s.store(small, final, f.signature)
    return Reported(f.signature, str(path), new, index, s.size(small), final.message, blame, s.size(case))


# ---- workers ----
def _worker_main(cfg: CampaignConfig, conn) -> None:
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # the campaign handles ^C and ends its workers
  import faulthandler
  faulthandler.disable()  # a segfault in generated code is reported as a finding, not as a traceback dump
  runner = CaseRunner(cfg)
  while True:
    try: msg = conn.recv()
    except EOFError: return
    if msg is None: return
    indices, weights = msg
    try: res = runner.run_batch(indices, weights)
    except Exception as e:
      res = [{"index": i, "error": f"{type(e).__name__}: {e}"} for i in indices]
    conn.send(res)


class _Worker:
  def __init__(self, cfg: CampaignConfig, ctx):
    self.conn, child = ctx.Pipe()
    self.proc = ctx.Process(target=_worker_main, args=(cfg, child), daemon=True)
    self.proc.start()
    child.close()
    self.job: tuple[list[int], dict] | None = None
    self.deadline = 0.0

  def send(self, indices: list[int], weights: dict, timeout: float) -> None:
    self.job = (indices, weights)
    self.deadline = time.monotonic() + timeout * len(indices)
    self.conn.send((indices, weights))

  def kill(self) -> None:
    try:
      if self.proc.is_alive(): self.proc.kill()
      self.proc.join(2)
    except Exception: pass
    self.conn.close()


# ---- the campaign ----
class Campaign:
  def __init__(self, cfg: CampaignConfig, out: TextIO | None = None):
    self.target = get_target(cfg.target)
    self.cfg = cfg = replace(cfg, target=self.target)  # the workers fork with this one target object
    self.epoch = self.target.epoch
    self.out = out or sys.stdout
    self.tty = hasattr(self.out, "isatty") and self.out.isatty()
    Path(cfg.corpus).mkdir(parents=True, exist_ok=True)
    self.state_path = Path(cfg.corpus) / state_name(self.target, cfg.seed)
    self.rules = self.target.rules(cfg)
    self.coverage = Coverage(self.rules)
    self.weights = self.target.initial_weights(cfg)
    self.counts: Counter = Counter()
    self.crash_session = None
    self.epoch_start = 0
    self.done_in_epoch: set[int] = set()
    self.epoch_results: dict[int, tuple[frozenset, dict]] = {}
    self.cases = 0
    self.phase: Counter = Counter()
    self.findings: list[Reported] = []
    self.known: set[tuple[str, str, str]] = set()
    self.prior_cases = 0
    self.suspects: list[int] = []
    self.running = set()
    self.html_report = None
    if cfg.resume: self.load_state()

  # ---- state ----
  def load_state(self) -> None:
    if not self.state_path.exists(): return
    try: s = json.loads(self.state_path.read_text())
    except (OSError, ValueError) as e:
      print(f"fuzz: ignoring unreadable state file {self.state_path}: {e}", file=sys.stderr)
      return
    if s.get("seed") != self.cfg.seed or s.get("target", "reference") != self.target.name: return
    self.epoch_start = int(s.get("epoch_start", 0))
    self.done_in_epoch = set(s.get("done_in_epoch", []))
    self.epoch_results = {int(k): (frozenset(v[0]), v[1]) for k, v in s.get("epoch_results", {}).items()}
    self.coverage.load(s.get("coverage", {}))
    self.weights = {**self.target.initial_weights(self.cfg), **s.get("weights", {})}
    self.prior_cases = int(s.get("cases", 0))
    self.known = {tuple(x) for x in s.get("signatures", [])}  # type: ignore[misc]
    self.phase.update(s.get("phase", {}))
    self.counts.update(s.get("counts", {}))

  def save_state(self) -> None:
    s = {"seed": self.cfg.seed, "epoch_start": self.epoch_start, "done_in_epoch": sorted(self.done_in_epoch),
         "epoch_results": {str(k): [sorted(v[0]), v[1]] for k, v in self.epoch_results.items()},
         "coverage": self.coverage.to_json(), "weights": self.weights, "cases": self.prior_cases + self.cases,
         "signatures": sorted(list(s) for s in self.known), "phase": dict(self.phase)}
    if self.target.name != "reference": s.update(target=self.target.name, counts=dict(self.counts))
    atomic_write(self.state_path, json.dumps(s, indent=1, sort_keys=True))

  # ---- case numbering ----
  def next_batch(self, n: int) -> list[int]:
    """Up to n case numbers to run next: a case suspected of killing a worker runs alone."""
    if self.suspects: return [self.suspects.pop(0)]
    out: list[int] = []
    for i in range(self.epoch_start, self.epoch_start + self.epoch):
      if len(out) >= n: break
      if i not in self.done_in_epoch and i not in self.running and i not in self.suspects: out.append(i)
    return out

  def finish(self, res: dict[str, Any]) -> None:
    i = res["index"]
    self.cases += 1
    if "error" in res:
      self.report(Reported(("crash", "campaign", res["error"].split(":")[0]), "-", True, i, 0, res["error"]))
    else:
      self.phase.update(res["phase"])
      self.counts.update(res.get("counts", {}))
      self.epoch_results[i] = (frozenset(res["features"]), res["fired"])
      for r in res["reported"]: self.report(r if isinstance(r, Reported) else Reported(**r))
    self.done_in_epoch.add(i)
    if len(self.done_in_epoch) >= self.epoch and not self.running:
      epoch = [self.epoch_results[k] for k in sorted(self.epoch_results)]
      self.weights = self.target.steer(self.weights, self.coverage, epoch)
      for _, fired in epoch: self.coverage.add(fired)
      self.epoch_start += self.epoch
      self.done_in_epoch, self.epoch_results = set(), {}
      self.save_state()
      self.report_due = True

  def report(self, r: Reported) -> None:
    if r.signature in self.known and not r.new: return
    self.known.add(r.signature)
    self.findings.append(r)
    self.clear_status()
    print(f"finding: {'/'.join(r.signature)} (case {r.case}, {r.nodes} nodes) -> {r.path}\n  {r.message.splitlines()[0] if r.message else ''}",
          file=self.out, flush=True)

  # ---- status ----
  def status_text(self, elapsed: float) -> str:
    fired = len(set(self.coverage.fired) | {k for _, f in self.epoch_results.values() for k in f})
    rate = self.cases / elapsed if elapsed > 0 else 0.0
    name = "fuzz" if self.target.name == "reference" else f"fuzz {self.target.name}"
    return (f"{name}: {elapsed:6.0f}s  {self.prior_cases + self.cases} cases ({rate:.1f}/s)  "
            f"rules {fired}/{len(self.rules)}  findings {len(self.findings)}")

  def clear_status(self) -> None:
    if self.tty: print("\r\033[K", end="", file=self.out)

  def status(self, elapsed: float, force: bool = False) -> None:
    if self.tty: print("\r\033[K" + self.status_text(elapsed), end="", file=self.out, flush=True)
    elif force or elapsed - self.last_status >= self.cfg.status_every:
      print(self.status_text(elapsed), file=self.out, flush=True)
      self.last_status = elapsed
    self.keep_report(elapsed)

  def keep_report(self, elapsed: float, status: str = "running", force: bool = False) -> None:
    """Rewrite the --report page after every status interval, every finished epoch, and (force) at the start and end."""
    if self.html_report is None: return
    if force or self.report_due or elapsed - self.last_report >= self.cfg.status_every:
      self.html_report.update(self, elapsed, status)
      self.last_report, self.report_due = elapsed, False

  # ---- run ----
  def run(self) -> Summary:
    cfg = self.cfg
    self.running: set[int] = set()
    self.last_status = 0.0
    self.last_report, self.report_due = 0.0, False
    if cfg.report:
      from fuzz.report.writer import for_campaign
      self.html_report = for_campaign(self)
    self.keep_report(0.0, force=True)
    t0 = time.monotonic()
    interrupted = False
    def time_left() -> bool:
      if cfg.max_cases is not None and self.prior_cases + self.cases + len(self.running) >= cfg.max_cases: return False
      if cfg.stop_on_finding and self.findings: return False
      if cfg.stop_when is not None and any(cfg.stop_when(f) for f in self.findings): return False
      return time.monotonic() - t0 < cfg.seconds
    try:
      if cfg.workers <= 0: self._run_inline(time_left, t0)
      else: self._run_workers(time_left, t0)
    except KeyboardInterrupt:
      interrupted = True
    elapsed = time.monotonic() - t0
    self.save_state()
    self.clear_status()
    self.keep_report(elapsed, "interrupted" if interrupted else "finished", force=True)
    cov = set(self.coverage.fired) | {k for _, f in self.epoch_results.values() for k in f}
    return Summary(cfg.seed, self.cases, elapsed, self.findings, len(self.rules), sorted(cov),
                   [r for r in self.rules if r not in cov], dict(self.phase), interrupted, self.target.name, dict(self.counts))

  def _run_inline(self, time_left, t0: float) -> None:
    runner = CaseRunner(self.cfg)
    while time_left():
      batch = self.next_batch(self.batch_size())
      self.running.update(batch)
      try: results = runner.run_batch(batch, self.weights)
      except Exception as e: results = [{"index": i, "error": f"{type(e).__name__}: {e}"} for i in batch]
      for res in results:
        self.running.discard(res["index"])
        self.finish(res)
      self.status(time.monotonic() - t0)

  def batch_size(self) -> int:
    """Cases per job (the target's choice), no more than the case budget has left."""
    n = self.target.batch_size(self.cfg)
    if self.cfg.max_cases is not None: n = min(n, max(1, self.cfg.max_cases - self.prior_cases - self.cases - len(self.running)))
    return max(1, n)

  def _run_workers(self, time_left, t0: float) -> None:
    cfg = self.cfg
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    workers = [_Worker(cfg, ctx) for _ in range(cfg.workers)]
    try:
      while True:
        for w in workers:
          if w.job is None and time_left() and (batch := self.next_batch(self.batch_size())):
            self.running.update(batch)
            w.send(batch, self.weights, cfg.case_timeout + 2 * cfg.reduce_seconds)
        busy = [w for w in workers if w.job is not None]
        if not busy: break
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.5)
        now = time.monotonic()
        for k, w in enumerate(list(workers)):
          if w.job is None: continue
          results = None
          if w.conn in ready:
            try: results = w.conn.recv()
            except (EOFError, OSError): results = None
          if results is not None:
            w.job = None
            for res in results:
              self.running.discard(res["index"])
              self.finish(res)
            continue
          dead = not w.proc.is_alive() or w.proc.sentinel in ready
          if dead or now > w.deadline:
            indices, weights = w.job
            w.kill()
            code = w.proc.exitcode
            why = "timeout" if not dead else (f"signal{-code}" if code is not None and code < 0 else f"exit{code}")
            for i in indices: self.running.discard(i)
            if len(indices) > 1: self.suspects.extend(indices)  # which one? each runs alone next
            else: self.finish(self.worker_crash(indices[0], weights, why))
            workers[k] = _Worker(cfg, ctx)
        self.status(now - t0)
    finally:
      for w in workers:
        try: w.conn.send(None)
        except Exception: pass
        w.kill()

  def worker_crash(self, index: int, weights: dict, why: str) -> dict[str, Any]:
    """A worker died or hung on a case: reduce it (each candidate checked in a child process that must end the same
    way, within the reduce budget) and store it."""
    if self.crash_session is None: self.crash_session = self.target.session(self.cfg)
    s = self.crash_session
    sig = ("crash", "worker", why)
    case = s.draw(self.cfg.seed, index, weights)
    msg = f"the worker running case {index} {'hung' if why == 'timeout' else 'died'} ({why})"
    small = case
    if not entry_path(self.cfg.corpus, sig).exists():
      t = time.perf_counter()
      small = s.shrink_crash(case, why)
      self.phase["reduce"] += time.perf_counter() - t
    path, new = s.store_crash(small, sig, msg)
    return {"index": index, "features": sorted(s.features(case)), "fired": {}, "phase": {},
            "reported": [Reported(sig, str(path), new, index, s.size(small), msg, found_nodes=s.size(case))]}


def run_campaign(cfg: CampaignConfig, out: TextIO | None = None) -> Summary:
  """Run a campaign to its time or case budget; SIGINT ends it early with the summary."""
  return Campaign(cfg, out).run()

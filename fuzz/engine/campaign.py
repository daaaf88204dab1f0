"""The campaign engine: number cases, run them on a target in worker processes, store and report findings.

One engine for every target (fuzz.engine.targets: the reference pipeline, the symbolic simplifier, tinygrad; `--target NAME`). Cases
are numbered; case i of seed s is drawn by the target from (s, i) and the weights of its epoch (target.epoch cases),
which depend only on the coverage of earlier epochs, so the same seed and code give the same cases. The state file
in the corpus directory (target, seed, next case, the current epoch, coverage, weights, findings) is rewritten
atomically after every epoch and on exit, so a restarted campaign resumes where it stopped.

The campaign owns its corpus directory (fuzz.engine.corpus_dir: one campaign per directory, stale temp files removed
at the start) and is the only process that writes it: runners (fuzz.engine.runner) send each finding's entry as found,
which is written before the finding is reported, and later its reduced entry. So a SIGKILL at any moment loses no
finding already reported, and the entry kept for a signature is the one of its lowest case number.

A campaign runs as a sequence of named phases (Campaign.run): setup, proofs, cases, end, inside what it holds while it
runs (Running: the corpus lock, the signal handlers, its report, the cluster its cases run on). Its settings are
fuzz.engine.config's. Workers are forked child processes that die with the campaign (fuzz.engine.workers). There are
at most as many as the CPUs and the case budget can use. Every kernel runs in a kernel host (tinyspec.runtime.host),
a clean interpreter of its own, so a crashing kernel is a finding of its case even with --workers 0. Each step of a
case has a deadline (case_timeout; a reduction its budget): a worker past it is killed within a few seconds, the
case is a hang finding named by where it was (a pass, evaluate...), and the rest of its batch runs again. A worker
that dies is a crash finding named by the signal and where it was. Such a case is stored as found at once and reduced
in a child process while the campaign goes on. The time budget holds within a few seconds: reductions are cut to the
time left, and work still running at the end is killed (its cases run again on resume).

With --scheduler ADDRESS the batches run on a Dask cluster instead (fuzz.engine.dask_runner): they come back as the
same messages, handled here the same way; a batch of a lost worker runs again elsewhere, and one that Dask gives up
on (its workers kept dying) runs case by case, the case that still kills them being a crash finding. A step of a case
past its deadline on a worker is a hang finding as here: the worker's task comes back with it, and the worker, whose
runner never returns, is restarted.
"""
from __future__ import annotations

import json
import math
import multiprocessing as mp
import signal
import sys
import threading
import time
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, TextIO

from fuzz.check.changed_rules import BUDGET_SECONDS, RuleResult, describe, prove_changed, refutation_entry, replays_through
from fuzz.corpus.store import bug_group, entries, entry_path
from fuzz.engine.config import CampaignConfig, ConfigError, validate
from fuzz.engine.corpus_dir import CorpusLock, remove_stale_temp_files
from fuzz.engine.coverage import Coverage
from fuzz.engine.dask_runner import ClusterLost, DaskBatches, connect
from fuzz.engine.protocol import DEFAULT_TARGET, Target
from fuzz.engine.runner import GRACE, IDLE, Found
from fuzz.engine.summary import Reported, Summary
from fuzz.engine.targets import get_target
from fuzz.engine.workers import CrashReducer, LocalWorkers
from fuzz.report.writer import CampaignReport, for_campaign
from tinyspec.fileio import atomic_write
from tinyspec.runtime import procs

START_CASE = -1        # the case number of a finding made before any case ran (a rule refuted in the proofs phase)


def state_name(target: Target, seed: int) -> str:
  """The state file of a campaign: one per target and seed in a corpus directory."""
  return f".fuzz-state-{seed}.json" if target.name == DEFAULT_TARGET else f".fuzz-state-{target.name}-{seed}.json"


class StateError(ValueError):
  """A state file that is not a campaign's state; the message names the file and what is wrong."""


class _Stop(BaseException):
  """SIGTERM or SIGHUP: end as ^C does, with the summary (a BaseException, as KeyboardInterrupt: no guarded step of a
  case takes it for the case's own failure)."""


class Running:
  """What a campaign holds while it runs, taken on entering and given back on leaving however it ends: the corpus lock
  (one campaign per directory; holding it, the temp files of interrupted writes are removed), the handlers of ^C,
  SIGTERM and SIGHUP (they end the campaign with its summary), its HTML report, and, for the proofs and cases
  phases, the cluster its cases run on (cluster())."""

  SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

  def __init__(self, campaign: Campaign):
    self.campaign = campaign
    self.lock: CorpusLock | None = None
    self.handlers: dict[int, Any] = {}

  def __enter__(self) -> Running:
    c, cfg = self.campaign, self.campaign.cfg
    try: self.lock = CorpusLock(cfg.corpus).acquire()  # CorpusBusy when another campaign holds it
    except OSError as e: raise ConfigError(f"--corpus {cfg.corpus} cannot be locked: {e.strerror or e}") from None
    try:
      self._catch_signals()
      remove_stale_temp_files(cfg.corpus, cfg.report, Path(cfg.report) / "pictures" if cfg.report else None)
      c.html_report = for_campaign(c) if cfg.report else None
    except BaseException:
      self.__exit__()
      raise
    return self

  def __exit__(self, *exc: Any) -> None:
    for s, h in self.handlers.items(): signal.signal(s, h)
    self.handlers = {}
    if self.lock is not None: self.lock.release()
    self.lock = None

  def _catch_signals(self) -> None:
    """^C, SIGTERM and SIGHUP end the campaign (only the main thread may handle signals: elsewhere they are left as they are)."""
    c = self.campaign
    c.stopping = False
    if threading.current_thread() is not threading.main_thread(): return
    def stop(signum: int, frame: Any) -> None:
      # the flag outlives the exception, which Python drops when it is raised inside a weakref callback (the UOp
      # intern table's, during a collection) and a guarded step may catch: time_left() reads it, so the campaign
      # ends after the batch it is in at the latest
      c.stopping = True
      raise KeyboardInterrupt if signum == signal.SIGINT else _Stop()
    self.handlers = {s: signal.getsignal(s) for s in self.SIGNALS}
    for s in self.SIGNALS: signal.signal(s, stop)

  @contextmanager
  def cluster(self) -> Iterator[DaskBatches | LocalWorkers]:
    """Where the cases run, chosen here alone: the Dask cluster of --scheduler (reached now: a scheduler that cannot
    be reached is said before the proofs), else local worker processes or this process. Left, however the phases
    end: the crash reducers still running killed, the cluster closed."""
    c = self.campaign
    cluster: DaskBatches | LocalWorkers = DaskBatches(connect(c.cfg.scheduler), c.cfg, c.existing) if c.cfg.scheduler else LocalWorkers()
    try: yield cluster
    finally:
      for r in c.reducers: r.kill()
      c.reducers = []
      cluster.close()


# ---- the campaign ----
class Campaign:
  """A campaign's state, its handling of findings and its phases (run)."""
  stopping = False  # set by ^C, SIGTERM or SIGHUP while the campaign runs

  def __init__(self, cfg: CampaignConfig, out: TextIO | None = None):
    self.target = get_target(cfg.target)
    self.cfg = cfg = replace(cfg, target=self.target)  # the workers fork with this one target object
    self.epoch = self.target.epoch
    self.out = out or sys.stdout
    self.tty = hasattr(self.out, "isatty") and self.out.isatty()
    try: Path(cfg.corpus).mkdir(parents=True, exist_ok=True)
    except OSError as e: raise ConfigError(f"--corpus {cfg.corpus} cannot be used as a directory: {e.strerror or e}") from None
    self.state_path = Path(cfg.corpus) / state_name(self.target, cfg.seed)
    self.rules = self.target.rules(cfg)
    self.coverage = Coverage(self.rules)
    self.weights = self.target.initial_weights(cfg)
    self.counts: Counter = Counter()
    self.crash_session: Any = None
    self.epoch_start = 0
    self.done_in_epoch: set[int] = set()
    self.epoch_results: dict[int, tuple[frozenset, dict]] = {}
    self.cases = 0
    self.phase: Counter = Counter()
    self.findings: list[Reported] = []
    self.by_sig: dict[tuple[str, str, str], Reported] = {}
    self.known: set[tuple[str, str, str]] = set()
    self.best: dict[tuple[str, ...], int] = {}   # bug group -> the case its entry is from, for entries written by this run
    self.existing: frozenset[str] = frozenset()
    self.prior_cases = 0
    self.suspects: list[int] = []
    self.retry: deque[int] = deque()
    self.running: set[int] = set()
    self.reducers: list[CrashReducer] = []
    self.start_failures = 0
    self.html_report: CampaignReport | None = None
    self.stop_at = 0.0
    self.last_status = self.last_report = 0.0
    self.report_due = False
    if cfg.resume: self.load_state()

  # ---- state ----
  def load_state(self) -> None:
    """The saved state of (target, seed), when the corpus holds one; StateError when the file is not one."""
    if not self.state_path.exists(): return
    try: s = json.loads(self.state_path.read_text())
    except (OSError, ValueError) as e: raise StateError(f"state file {self.state_path} cannot be read: {e}") from None
    try: self._load(s)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
      raise StateError(f"state file {self.state_path} is not a campaign's state ({type(e).__name__}: {str(e)[:120]})") from None

  def _load(self, s: Any) -> None:
    if not isinstance(s, dict): raise TypeError(f"a JSON {type(s).__name__}, not an object")
    if s.get("seed") != self.cfg.seed or s.get("target", "reference") != self.target.name: return
    def ints(x: Any) -> list[int]:
      if not isinstance(x, list) or not all(type(i) is int for i in x): raise TypeError("a list of case numbers is not one")
      return x
    self.epoch_start = int(s.get("epoch_start", 0))
    self.done_in_epoch = set(ints(s.get("done_in_epoch", [])))
    results = s.get("epoch_results", {})
    if not isinstance(results, dict): raise TypeError("epoch_results is not an object")
    self.epoch_results = {int(k): (frozenset(v[0]), dict(v[1])) for k, v in results.items()}
    cov = s.get("coverage", {})
    if not isinstance(cov, dict): raise TypeError("coverage is not an object")
    self.coverage.load(cov)
    weights = s.get("weights", {})
    if not isinstance(weights, dict) or not all(isinstance(v, (int, float)) for v in weights.values()): raise TypeError("weights are not numbers")
    self.weights = {**self.target.initial_weights(self.cfg), **weights}
    self.prior_cases = int(s.get("cases", 0))
    sigs = s.get("signatures", [])
    if not isinstance(sigs, list) or not all(isinstance(x, list) and len(x) == 3 and all(isinstance(y, str) for y in x) for x in sigs):
      raise TypeError("signatures are not lists of three strings")
    self.known = {bug_group(x) for x in sigs}  # type: ignore[misc]
    for name in ("phase", "counts"):
      d = s.get(name, {})
      if not isinstance(d, dict) or not all(isinstance(v, (int, float)) for v in d.values()): raise TypeError(f"{name} is not numbers")
    self.phase.update(s.get("phase", {}))
    self.counts.update(s.get("counts", {}))

  def save_state(self) -> None:
    s = {"seed": self.cfg.seed, "epoch_start": self.epoch_start, "done_in_epoch": sorted(self.done_in_epoch),
         "epoch_results": {str(k): [sorted(v[0]), v[1]] for k, v in self.epoch_results.items()},
         "coverage": self.coverage.to_json(), "weights": self.weights, "cases": self.prior_cases + self.cases,
         "signatures": sorted(list(s) for s in self.known), "phase": dict(self.phase)}
    if self.target.name != DEFAULT_TARGET: s.update(target=self.target.name, counts=dict(self.counts))
    atomic_write(self.state_path, json.dumps(s, indent=1, sort_keys=True))

  # ---- case numbering ----
  def next_batch(self, n: int) -> list[int]:
    """Up to n case numbers to run next: a case suspected of killing a worker runs alone; cases of a batch that did not
    finish run again before new ones."""
    if self.suspects: return [self.suspects.pop(0)]
    out: list[int] = []
    while self.retry and len(out) < n: out.append(self.retry.popleft())
    for i in range(self.epoch_start, self.epoch_start + self.epoch):
      if len(out) >= n: break
      if i not in self.done_in_epoch and i not in self.running and i not in self.suspects and i not in out: out.append(i)
    return out

  def finish(self, res: dict[str, Any]) -> None:
    i = res["index"]
    self.running.discard(i)
    if i in self.done_in_epoch: return
    self.cases += 1
    self.phase.update(res.get("phase", {}))
    self.counts.update(res.get("counts", {}))
    self.epoch_results[i] = (frozenset(res.get("features", ())), res.get("fired", {}))
    self.done_in_epoch.add(i)
    if len(self.done_in_epoch) >= self.epoch and not self.running:
      epoch = [self.epoch_results[k] for k in sorted(self.epoch_results)]
      self.weights = self.target.steer(self.weights, self.coverage, epoch)
      for _, fired in epoch: self.coverage.add(fired)
      self.epoch_start += self.epoch
      self.done_in_epoch, self.epoch_results = set(), {}
      self.save_state()
      self.report_due = True

  # ---- findings: this process writes every entry ----
  def found(self, fd: Found) -> None:
    """A finding as found: its entry is written (unless the corpus had it when the campaign started, or holds it from a
    lower case), then it is reported."""
    r = fd.reported
    sig = bug_group(r.signature)
    if fd.text and r.new and self.best.get(sig, r.case + 1) > r.case:  # type: ignore[arg-type]
      atomic_write(r.path, fd.text)
      self.best[sig] = r.case  # type: ignore[assignment]
      self.report(r, replace_lower=True)
    else:
      self.report(r)

  def reduced(self, signature: tuple[str, str, str], fd: Found) -> None:
    """A finding's reduced entry, replacing its unreduced one (a finding of its own when reducing failed)."""
    r = fd.reported
    if bug_group(r.signature) != bug_group(signature): return self.found(fd)
    if self.best.get(bug_group(signature)) != r.case or not fd.text: return
    atomic_write(r.path, fd.text)
    if (old := self.by_sig.get(bug_group(signature))) is not None:
      old.nodes, old.message, old.blame = r.nodes, r.message, r.blame

  def report(self, r: Reported, replace_lower: bool = False) -> None:
    """A finding reported once per bug group (fuzz.corpus.store.bug_group): a later one of the group is listed under it."""
    sig = bug_group(r.signature)
    if (old := self.by_sig.get(sig)) is not None:  # reported already: a lower case's entry replaces the one reported
      other = "/".join(r.signature)
      if replace_lower and r.case < old.case:
        if tuple(old.signature) != tuple(r.signature) and "/".join(old.signature) not in old.also: old.also.append("/".join(old.signature))
        old.signature, old.case, old.nodes, old.message, old.found_nodes, old.blame = r.signature, r.case, r.nodes, r.message, r.found_nodes, r.blame
      elif tuple(r.signature) != tuple(old.signature) and other not in old.also: old.also.append(other)
      return
    if sig in self.known and not r.new: return
    self.known.add(sig)  # type: ignore[arg-type]
    self.findings.append(r)
    self.by_sig[sig] = r  # type: ignore[index]
    self.clear_status()
    where = f"case {r.case}" if r.case >= 0 else "at start"  # a refuted rule is found before any case runs
    print(f"finding: {'/'.join(r.signature)} ({where}, {r.nodes} nodes) -> {r.path}\n  {r.message.splitlines()[0] if r.message else ''}",
          file=self.out, flush=True)

  def handle(self, msg: tuple) -> None:
    """A runner's message (fuzz.engine.runner)."""
    if msg[0] == "checked":
      _, results, found = msg
      for fd in found: self.found(fd)
      for res in results: self.finish(res)
    elif msg[0] == "reduced":
      self.reduced(msg[1], msg[2])
      self.phase["reduce"] += msg[3]

  # ---- status ----
  def status_text(self, elapsed: float) -> str:
    fired = len(set(self.coverage.fired) | {k for _, f in self.epoch_results.values() for k in f})
    rate = self.cases / elapsed if elapsed > 0 else 0.0
    name = "fuzz" if self.target.name == DEFAULT_TARGET else f"fuzz {self.target.name}"
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

  # ---- run: the phases, in order ----
  def run(self) -> Summary:
    """The campaign's phases, in order, inside what it holds while it runs."""
    with Running(self) as running:
      t0 = self.setup()
      interrupted = False
      try:
        with running.cluster() as cluster:
          if self.cfg.prove_changed: self.proofs()
          cluster.run(self, t0)  # the cases
        interrupted = self.stopping
      except (KeyboardInterrupt, _Stop):
        interrupted = True
      except ClusterLost as e:  # the campaign ends as on ^C: its state saved, its summary printed
        self.clear_status()
        print(f"fuzz: {e}", file=sys.stderr, flush=True)
        interrupted = True
      elapsed = self.end(t0, interrupted)
    return self.summary(elapsed, interrupted)

  def setup(self) -> float:
    """The corpus's entries as the campaign starts (what is not new), the report's first page; the start time."""
    self.existing = frozenset(p.name for p in entries(self.cfg.corpus))
    self.running = set()
    self.last_status = 0.0
    self.last_report, self.report_due = 0.0, False
    self.keep_report(0.0, force=True)
    t0 = time.monotonic()
    self.stop_at = t0 + self.cfg.seconds
    return t0

  def proofs(self) -> None:
    """The rules the target's pipeline swapped in, proven before any case runs: a refuted one is a finding at once."""
    changed = getattr(self.target, "changed_rules", None)  # a target of another author's may not have one: nothing to prove
    refs = changed(self.cfg) if changed is not None else []
    if not refs: return
    t = time.perf_counter()
    proved = prove_changed(refs, min(BUDGET_SECONDS, self.cfg.seconds / 4))
    self.clear_status()
    describe(proved, self.out)
    # a target that stores kernel entries runs the counterexample kernels through its pipeline, to keep one that fails there
    replays = replays_through(self.cfg.passes) if "kernel" in self.target.kinds and any(r.status == "refuted" for r in proved.results) else None
    for res in proved.results:
      if res.status == "refuted": self.found(self.refuted(res, replays))
    self.phase["prove"] += time.perf_counter() - t

  def refuted(self, res: RuleResult, replays: Any) -> Found:
    """A refuted rule as a finding made before any case ran."""
    ref = refutation_entry(res, replays)
    path = entry_path(self.cfg.corpus, ref.signature)
    return Found(Reported(ref.signature, str(path), path.name not in self.existing, START_CASE, ref.nodes, ref.message, found_nodes=ref.nodes),
                 ref.text)

  def end(self, t0: float, interrupted: bool) -> float:
    """The state saved, the report's last page; the seconds the campaign ran."""
    elapsed = time.monotonic() - t0
    self.save_state()
    self.clear_status()
    self.keep_report(elapsed, "interrupted" if interrupted else "finished", force=True)
    return elapsed

  def summary(self, elapsed: float, interrupted: bool) -> Summary:
    cfg = self.cfg
    cov = set(self.coverage.fired) | {k for _, f in self.epoch_results.values() for k in f}
    backends = self.target.describe(cfg)[0]
    checked = ", ".join(f"cpu ({cfg.cc or 'the runtime default compiler'})" if b == "cpu" else b for b in backends)
    return Summary(cfg.seed, self.cases, elapsed, self.findings, len(self.rules), sorted(cov),
                   [r for r in self.rules if r not in cov], dict(self.phase), interrupted, self.target.name, dict(self.counts), checked)

  # ---- budget ----
  def time_left(self) -> bool:
    cfg = self.cfg
    if self.stopping: return False  # ^C, SIGTERM or SIGHUP
    if cfg.max_cases is not None and self.prior_cases + self.cases + len(self.running) >= cfg.max_cases: return False
    if cfg.stop_on_finding and self.findings: return False
    if cfg.stop_when is not None and any(cfg.stop_when(f) for f in self.findings): return False
    return time.monotonic() < self.stop_at

  def batch_size(self) -> int:
    """Cases per job (the target's choice), no more than the case budget has left."""
    n = self.target.batch_size(self.cfg)
    if self.cfg.max_cases is not None: n = min(n, max(1, self.cfg.max_cases - self.prior_cases - self.cases - len(self.running)))
    return max(1, n)

  def worker_count(self) -> int:
    """--workers, at most the CPUs this process may use and the jobs the case budget has left; said when it is fewer."""
    asked = self.cfg.workers
    if asked <= 0: return 0
    n, why = min(asked, procs.cpu_count()), "the CPUs this process may use"
    if self.cfg.max_cases is not None:
      jobs = math.ceil(max(0, self.cfg.max_cases - self.prior_cases) / self.target.batch_size(self.cfg))
      if jobs < n: n, why = max(1, jobs), "the jobs the case budget leaves"
    if n < asked: print(f"fuzz: {n} worker(s), not {asked}: no more than {why}", file=sys.stderr, flush=True)
    return n

  def lost_batch(self, batch: list[int], weights: dict, checked: bool, index: int, reducing: bool, where: str, why: str) -> None:
    """A batch whose runner died or hung (why "timeout") at a step of case index (IDLE: before it started, BATCH: a
    step of the whole batch), in a reduction or not, at where; checked when its cases' results had come back."""
    if checked:  # the cases are done; a reduction died: the finding keeps its unreduced entry, and this is a finding too
      if reducing: self.worker_crash(index, weights, why, "reduce", count=False)
      return
    for i in batch: self.running.discard(i)
    if index == IDLE:  # it died before it started the batch: run it again, unless workers keep dying at the start
      self.start_failures += 1
      if self.start_failures > 3: raise RuntimeError(f"fuzz workers die as they start ({why}); run with --workers 0 to see why")
      self.retry.extendleft(reversed(batch))
      return
    rest = [i for i in batch if i != index]
    if index not in batch:  # a step of the whole batch (the CPU compile): which case? each runs alone next
      if len(batch) == 1: self.worker_crash(batch[0], weights, why, where)
      else: self.suspects.extend(batch)
      return
    self.retry.extendleft(reversed(rest))  # the rest of the batch runs again, first
    self.worker_crash(index, weights, why, where)

  def worker_crash(self, index: int, weights: dict, why: str, where: str, count: bool = True) -> None:
    """A case that killed or hung its worker: stored as found at once, reduced in a child process (when the target
    reduces crashes) while the campaign goes on."""
    if self.crash_session is None: self.crash_session = self.target.session(self.cfg)
    s = self.crash_session
    sig = ("hang", where, "timeout") if why == "timeout" else ("crash", where, why)
    case = s.draw(self.cfg.seed, index, weights)
    step = "reducing its finding" if where == "reduce" else f"in {where}"
    msg = (f"the worker running case {index} hung {step} (killed after {self.cfg.case_timeout:g} s)" if why == "timeout"
           else f"the worker running case {index} died {step} ({why})")
    path = entry_path(self.cfg.corpus, sig)
    r = Reported(sig, str(path), path.name not in self.existing, index, s.size(case), msg, found_nodes=s.size(case))
    self.found(Found(r, s.crash_entry(case, sig, msg) if r.new else ""))
    if count: self.finish({"index": index, "features": sorted(s.features(case)), "fired": {}})
    seconds = min(self.cfg.reduce_seconds, self.stop_at - time.monotonic() - GRACE)
    if r.new and self.best.get(bug_group(sig)) == index and self.target.reduces_crashes and seconds >= 1.0 and where != "reduce":
      self.reducers.append(CrashReducer(mp.get_context("fork"), self.cfg, r, why, seconds))

  def collect_reducers(self) -> None:
    """The crash reducers that are done (or past their deadline): the reduced entry of each written when its finding still holds it."""
    now, keep = time.monotonic(), []
    for red in self.reducers:
      got = None
      try:
        if red.conn.poll(): got = red.conn.recv()
      except (EOFError, OSError): got = False
      if got is None and red.proc.is_alive() and now < red.deadline:
        keep.append(red)
        continue
      red.kill()
      r = red.reported
      if got and self.best.get(bug_group(r.signature)) == r.case:
        nodes, text = got
        atomic_write(r.path, text)
        if (old := self.by_sig.get(bug_group(r.signature))) is not None: old.nodes = nodes
    self.reducers = keep


def run_campaign(cfg: CampaignConfig, out: TextIO | None = None) -> Summary:
  """Run a campaign to its time or case budget; SIGINT (or SIGTERM) ends it early with the summary."""
  validate(cfg)
  return Campaign(cfg, out).run()

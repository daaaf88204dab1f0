"""The campaign engine: number cases, run them on a target in worker processes, store and report findings.

One engine for every target (fuzz.engine.targets: the reference pipeline, the symbolic simplifier; `--target NAME`). Cases
are numbered; case i of seed s is drawn by the target from (s, i) and the weights of its epoch (target.epoch cases),
which depend only on the coverage of earlier epochs, so the same seed and code give the same cases. The state file
in the corpus directory (target, seed, next case, the current epoch, coverage, weights, findings) is rewritten
atomically after every epoch and on exit, so a restarted campaign resumes where it stopped.

The campaign owns its corpus directory (fuzz.engine.corpus_dir: one campaign per directory, stale temp files removed
at the start) and is the only process that writes it: runners (fuzz.engine.runner) send each finding's entry as found,
which is written before the finding is reported, and later its reduced entry. So a SIGKILL at any moment loses no
finding already reported, and the entry kept for a signature is the one of its lowest case number.

Workers are forked child processes that die with the campaign (tinyspec.runtime.procs: parent-death signal, their
own process group, which the campaign kills on every way out; no copy of the campaign's pipe ends or lock). There are
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
import time
from collections import Counter, deque
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from fuzz.corpus.store import bug_group, entries, entry_path
from fuzz.engine.corpus_dir import CorpusLock, remove_stale_temp_files
from fuzz.engine.coverage import Coverage
from fuzz.engine.reference_target import EPOCH
from fuzz.engine.runner import BATCH, IDLE, CaseRunner, Found, Progress, worker_main
from fuzz.engine.targets import Reported, Summary, Target, get_target
from tinyspec.fileio import atomic_write
from tinyspec.runtime import procs

__all__ = ["EPOCH", "CampaignConfig", "Campaign", "CaseRunner", "ConfigError", "Reported", "StateError", "Summary", "Target", "run_campaign",
           "validate"]

GRACE = 3.0   # seconds past a deadline before a worker is killed (it may be reporting a kernel's hang itself)
TICK = 0.25   # seconds between looks at the workers' deadlines


@dataclass
class CampaignConfig:
  seconds: float = 60.0
  seed: int = 0
  workers: int = 1                      # 0: run cases in this process (kernels still run in a child; no Python-hang guard)
  corpus: str = "corpus"
  backends: tuple[str, ...] = ("reference",)
  per_rewrite: bool = True  # the spec after every rule application (False: after every pass)
  max_cases: int | None = None          # stop after this many cases (in total, resumed ones included)
  case_timeout: float = 30.0            # seconds a step of a case (its check, its kernels) may take before it is a hang
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
  prove_changed: bool = True            # prove the rules the pipeline swapped in before the first case (fuzz.engine.changed_rules)
  scheduler: str | None = None          # a Dask scheduler's address: the cases run on its cluster (fuzz.engine.dask_runner), not here


class ConfigError(ValueError):
  """A campaign setting that cannot be used; the message names it."""


def validate(cfg: CampaignConfig) -> None:
  """ConfigError naming the first limit of cfg that is not a usable number."""
  def number(name: str, v: Any, positive: bool) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (positive and v == 0):
      raise ConfigError(f"{name} must be a finite number {'above' if positive else 'of at least'} 0, not {v!r}")
  number("--seconds", cfg.seconds, True)
  number("--case-timeout", cfg.case_timeout, True)
  number("reduce_seconds", cfg.reduce_seconds, False)
  for name, v, low in (("--workers", cfg.workers, 0), ("--seed", cfg.seed, 0), ("batch", cfg.batch, 1)):
    if isinstance(v, bool) or not isinstance(v, int) or v < low: raise ConfigError(f"{name} must be a whole number of at least {low}, not {v!r}")
  if cfg.max_cases is not None and (isinstance(cfg.max_cases, bool) or not isinstance(cfg.max_cases, int) or cfg.max_cases < 0):
    raise ConfigError(f"--max-cases must be a whole number of at least 0, not {cfg.max_cases!r}")
  if cfg.scheduler is not None and (not isinstance(cfg.scheduler, str) or not cfg.scheduler.strip()):
    raise ConfigError(f"--scheduler must be a Dask scheduler's address (tcp://HOST:8786), not {cfg.scheduler!r}")


def state_name(target: Target, seed: int) -> str:
  """The state file of a campaign: one per target and seed in a corpus directory."""
  return f".fuzz-state-{seed}.json" if target.name == "reference" else f".fuzz-state-{target.name}-{seed}.json"


class StateError(ValueError):
  """A state file that is not a campaign's state; the message names the file and what is wrong."""


# ---- processes of the campaign ----
class _Worker:
  """A worker process, its pipe, its progress slot and the batch it runs."""

  def __init__(self, cfg: CampaignConfig, ctx: Any, existing: frozenset[str]):
    self.progress = ctx.RawValue(Progress)
    self.progress.step(IDLE, 0.0)
    self.conn, child = ctx.Pipe()
    procs.parent_only(self.conn)  # later workers close their copies of it
    self.proc = procs.start(ctx, worker_main, (cfg, child, self.progress, existing), name="fuzz-worker")
    child.close()
    self.batch: list[int] | None = None
    self.weights: dict = {}
    self.checked = False

  def send(self, batch: list[int], weights: dict, best: dict, stop_at: float) -> None:
    self.batch, self.weights, self.checked = batch, weights, False
    self.progress.step(batch[0] if len(batch) == 1 else BATCH, 1e9, where="start")  # the worker sets the real limit
    self.conn.send((batch, weights, best, stop_at))

  def overdue(self, now: float) -> bool:
    return self.progress.overdue(now, GRACE)

  def kill(self) -> str:
    """Kill it and everything it started; how it ended (signalN, exitN)."""
    procs.forget(self.conn)
    try: self.conn.close()
    except OSError: pass
    return procs.how_it_ended(procs.kill_tree(self.proc))


def _reducer_main(cfg: CampaignConfig, path: str, signature: tuple[str, str, str], why: str, message: str, seconds: float, conn: Any) -> None:
  """A crash reducer: the unreduced entry read back (as data), reduced in children of its own, its text sent back."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  from fuzz.corpus.store import load_entry
  session = get_target(cfg.target).session(cfg)
  small = session.shrink_crash(load_entry(path).case, why, seconds)
  conn.send((session.size(small), session.crash_entry(small, signature, message)))


class _Reducer:
  def __init__(self, ctx: Any, cfg: CampaignConfig, r: Reported, why: str, seconds: float):
    self.reported, self.deadline = r, time.monotonic() + seconds + GRACE
    self.conn, child = ctx.Pipe()
    procs.parent_only(self.conn)
    self.proc = procs.start(ctx, _reducer_main, (cfg, r.path, r.signature, why, r.message, seconds, child), name="fuzz-reducer")
    child.close()

  def kill(self) -> None:
    procs.forget(self.conn)
    try: self.conn.close()
    except OSError: pass
    procs.kill_tree(self.proc)


class _Stop(BaseException):
  """SIGTERM or SIGHUP: end as ^C does, with the summary (a BaseException, as KeyboardInterrupt: no guarded step of a
  case takes it for the case's own failure)."""


# ---- the campaign ----
class Campaign:
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
    self.reducers: list[_Reducer] = []
    self.start_failures = 0
    self.html_report = None
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
    if self.target.name != "reference": s.update(target=self.target.name, counts=dict(self.counts))
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
    try: lock = CorpusLock(cfg.corpus).acquire()  # CorpusBusy when another campaign holds it
    except OSError as e: raise ConfigError(f"--corpus {cfg.corpus} cannot be locked: {e.strerror or e}") from None
    import threading
    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)} if main else {}
    self.stopping = False
    def stop(signum: int, frame: Any) -> None:
      # the flag outlives the exception, which Python drops when it is raised inside a weakref callback (the UOp
      # intern table's, during a collection) and a guarded step may catch: time_left() reads it, so the campaign
      # ends after the batch it is in at the latest
      self.stopping = True
      raise KeyboardInterrupt if signum == signal.SIGINT else _Stop()
    for s in old: signal.signal(s, stop)
    try:
      remove_stale_temp_files(cfg.corpus, cfg.report, Path(cfg.report) / "pictures" if cfg.report else None)
      self.existing = frozenset(p.name for p in entries(cfg.corpus))
      self.running = set()
      self.last_status = 0.0
      self.last_report, self.report_due = 0.0, False
      if cfg.report:
        from fuzz.report.writer import for_campaign
        self.html_report = for_campaign(self)
      self.keep_report(0.0, force=True)
      t0 = time.monotonic()
      self.stop_at = t0 + cfg.seconds
      interrupted = False
      cluster = None
      try:
        cluster = self._open_cluster()  # before the proofs: a scheduler that cannot be reached is said at once
        if cfg.prove_changed: self.prove_changed_rules()
        self._run_cases(t0, cluster)
        interrupted = self.stopping
      except (KeyboardInterrupt, _Stop):
        interrupted = True
      finally:
        for r in self.reducers: r.kill()
        self.reducers = []
        if cluster is not None: cluster.close()
      elapsed = time.monotonic() - t0
      self.save_state()
      self.clear_status()
      self.keep_report(elapsed, "interrupted" if interrupted else "finished", force=True)
    finally:
      for s, h in old.items(): signal.signal(s, h)
      lock.release()
    cov = set(self.coverage.fired) | {k for _, f in self.epoch_results.values() for k in f}
    backends = self.target.describe(cfg)[0]
    checked = ", ".join(f"cpu ({cfg.cc or 'the runtime default compiler'})" if b == "cpu" else b for b in backends)
    return Summary(cfg.seed, self.cases, elapsed, self.findings, len(self.rules), sorted(cov),
                   [r for r in self.rules if r not in cov], dict(self.phase), interrupted, self.target.name, dict(self.counts), checked)

  def prove_changed_rules(self) -> None:
    """The rules the target's pipeline swapped in, proven before any case runs: a refuted one is a finding at once."""
    from fuzz.engine.changed_rules import BUDGET_SECONDS, describe, prove_changed, refutation_found, replays_through
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
      if res.status == "refuted": self.found(refutation_found(res, self.cfg.corpus, self.existing, replays))
    self.phase["prove"] += time.perf_counter() - t

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

  def _open_cluster(self) -> Any:
    """The batches of a Dask cluster (fuzz.engine.dask_runner.DaskBatches) with --scheduler, else None."""
    if not self.cfg.scheduler: return None
    from fuzz.engine.dask_runner import DaskBatches, connect
    return DaskBatches(connect(self.cfg.scheduler), self.cfg, self.existing)

  def _run_cases(self, t0: float, cluster: Any) -> None:
    """Where the cases run, chosen here alone: on the Dask cluster, in worker processes, or in this process."""
    if cluster is not None: return self._run_dask(t0, cluster)
    n = self.worker_count()
    if n <= 0: self._run_inline(t0)
    else: self._run_workers(t0, n)

  def _run_inline(self, t0: float) -> None:
    runner = CaseRunner(self.cfg, self.existing)
    # a target whose own code runs kernels in the checking process (tinygrad) checks each case in a child instead
    if hasattr(runner.session, "isolate"): runner.session.isolate()
    try:
      while self.time_left():
        batch = self.next_batch(self.batch_size())
        if not batch: break
        self.running.update(batch)
        runner.run_batch(batch, self.weights, self.handle, dict(self.best), self.stop_at)
        self.running.difference_update(batch)
        self.status(time.monotonic() - t0)
    finally:
      if hasattr(runner.session, "close"): runner.session.close()

  def _run_workers(self, t0: float, n: int) -> None:
    cfg = self.cfg
    ctx = mp.get_context("fork")  # a worker keeps the target as this process holds it (a changed rule table)
    workers: list[_Worker] = []
    try:
      workers = [_Worker(cfg, ctx, self.existing) for _ in range(n)]
      while True:
        for w in workers:
          if w.batch is None and self.time_left() and (batch := self.next_batch(self.batch_size())):
            self.running.update(batch)
            w.send(batch, self.weights, dict(self.best), self.stop_at)
        busy = [w for w in workers if w.batch is not None]
        self._collect_reducers()
        now = time.monotonic()
        if not busy and not (self.reducers and now < self.stop_at): break
        if now > self.stop_at + GRACE:  # the time is up: what still runs is killed; its cases run again on resume
          for w in busy: self._abandon(w)
          break
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy] + [r.conn for r in self.reducers], timeout=TICK)
        now = time.monotonic()
        for k, w in enumerate(workers):
          if w.batch is None: continue
          if w.conn in ready and self._receive(w): continue
          dead = not w.proc.is_alive()
          if dead or w.overdue(now):
            self._lost(w, "timeout" if not dead else None)
            workers[k] = _Worker(cfg, ctx, self.existing)
        self.status(now - t0)
    finally:
      for w in workers:
        try: w.conn.send(None)
        except Exception: pass
      for w in workers: w.kill()

  def _run_dask(self, t0: float, cluster: Any) -> None:
    """Batches on the cluster, as many in flight as it has room for; their messages handled as a local worker's."""
    from fuzz.engine.dask_runner import ClusterLost
    try:
      while True:
        self._submit(cluster)
        self._collect_reducers()
        now = time.monotonic()
        if not cluster.pending and not (self.reducers and now < self.stop_at): break
        if now > self.stop_at + GRACE: break  # the time is up: what still runs is dropped; its cases run again on resume
        for b, msgs in cluster.finished(TICK):
          if msgs is None: self._given_up(b.indices, b.weights, b.alone)
          for msg in msgs or ():
            if msg[0] == "hung":  # a step outlived its deadline on the worker (fuzz.engine.dask_runner: the worker is restarted)
              _, index, reducing, where = msg
              checked = any(m[0] == "checked" for m in msgs)
              self.lost_batch(b.indices, b.weights, checked, index, reducing, where, "timeout")
            else: self.handle(msg)
          self.running.difference_update(b.indices)  # cases the batch left unfinished (its time ran out) are not done
        self.status(time.monotonic() - t0)
    except ClusterLost as e:  # the campaign ends as on ^C: its state saved, its summary printed
      self.clear_status()
      print(f"fuzz: {e}", file=sys.stderr, flush=True)
      raise _Stop() from None
    finally:
      for b in cluster.cancel(): self.running.difference_update(b.indices)

  def _submit(self, cluster: Any) -> None:
    """New batches while the cluster has room. A case suspected of killing workers runs alone on the whole cluster:
    Dask gives up every batch on a worker that died, those only queued there too, so only a case run alone is known to
    be the one."""
    while self.time_left():
      alone = bool(self.suspects)
      if not cluster.free(alone): return
      if not (batch := self.next_batch(self.batch_size())): return
      self.running.update(batch)
      cluster.submit(batch, self.weights, dict(self.best), self.stop_at, alone)

  def _given_up(self, batch: list[int], weights: dict, alone: bool) -> None:
    """A batch Dask gave up on, the workers running it having died again and again: each of its cases runs alone
    next, and a case run alone that still kills them is a crash finding."""
    if alone: self.worker_crash(batch[0], weights, "killed-worker", "check")
    else: self.suspects.extend(batch)

  def _receive(self, w: _Worker) -> bool:
    """Handle what the worker sent; False when its pipe broke (it died)."""
    try:
      while w.conn.poll():
        msg = w.conn.recv()
        if msg[0] == "done":
          w.batch = None
          return True
        if msg[0] == "checked": w.checked = True
        self.handle(msg)
    except (EOFError, OSError):
      return False
    return True

  def _abandon(self, w: _Worker) -> None:
    w.kill()
    if w.batch and not w.checked:
      for i in w.batch: self.running.discard(i)
    w.batch = None

  def _lost(self, w: _Worker, why: str | None) -> None:
    """A worker died (why None: how it ended decides) or outlived its step's deadline (why "timeout")."""
    p = w.progress
    index, reducing, where = int(p.index), bool(p.reducing), p.place
    batch, weights, checked = w.batch or [], w.weights, w.checked
    end = w.kill()
    w.batch = None
    self.lost_batch(batch, weights, checked, index, reducing, where, why or end)

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
      self.reducers.append(_Reducer(mp.get_context("fork"), self.cfg, r, why, seconds))

  def _collect_reducers(self) -> None:
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

"""A fuzz campaign: generate cases, check every oracle, minimize and store findings, report coverage.

Cases are numbered; case i of seed s is generated from (s, i) and the weights of its epoch (EPOCH cases), which
depend only on the coverage of earlier epochs, so the same seed and code give the same cases. The state file in the
corpus directory (seed, next case, the current epoch, coverage, weights, findings) is rewritten atomically after
every epoch and on exit, so a restarted campaign resumes where it stopped. Cases run in worker processes with a
deadline: a worker that dies (a segfault in generated code) or hangs is a finding, and a new worker takes over.
A finding is reduced and written to the corpus by the worker before the campaign reports it, so a SIGKILL at any
moment loses nothing already reported.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from tinyspec.fileio import atomic_write
from fuzz.corpus import entry_path, same_bug, write_entry
from fuzz.coverage import Coverage, steer
from fuzz.oracles import Checker, Config, Finding
from fuzz.reduce import node_count, reduce_case
from fuzz.reduce_isolated import reduce_crash
from fuzz.strategies import Case, case_for, default_weights

EPOCH = 32


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
  weights: dict[str, float] | None = None  # generator weights to start from (fuzz.strategies.default_weights names)
  report: str | None = None             # a directory for the HTML report (fuzz.report), kept up to date as the campaign runs


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


@dataclass
class Summary:
  seed: int
  cases: int
  seconds: float
  findings: list[Reported] = field(default_factory=list)
  rules_total: int = 0
  rules_fired: list[str] = field(default_factory=list)
  never_fired: list[str] = field(default_factory=list)
  phase: dict[str, float] = field(default_factory=dict)
  interrupted: bool = False

  def text(self) -> str:
    rate = self.cases / self.seconds if self.seconds > 0 else 0.0
    lines = [f"fuzz summary: seed {self.seed}, {self.cases} cases in {self.seconds:.1f}s ({rate:.1f}/s)"
             + (" (interrupted)" if self.interrupted else ""),
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
    else:
      lines.append("findings: none")
    return "\n".join(lines)


# ---- one case (in a worker or in-process) ----
class CaseRunner:
  def __init__(self, cfg: CampaignConfig):
    self.cfg = cfg
    config = Config(passes=cfg.passes, backends=cfg.backends, per_rewrite=cfg.per_rewrite, cc=cfg.cc)
    self.checker = Checker(config)
    self.reducer_checker = Checker(replace(config, metamorphic=False))

  def run(self, index: int, weights: dict[str, float]) -> dict[str, Any]:
    return self.run_batch([index], weights)[0]

  def run_batch(self, indices: Sequence[int], weights: dict[str, float]) -> list[dict[str, Any]]:
    """Generate and check cases (CPU kernels of the batch compiled together); store each finding."""
    st = self.checker.stats
    phase_before = Counter(st.phase)
    t = time.perf_counter()
    cases = [case_for(self.cfg.seed, i, weights) for i in indices]
    st.phase["generate"] += time.perf_counter() - t
    all_findings = self.checker.check_batch(cases)
    fired = [{"/".join(k): v for k, v in c.items()} for c in self.checker.case_fired]
    reported = [[self.store(case, f) for f in findings] for case, findings in zip(cases, all_findings)]
    phase = dict(st.phase - phase_before)
    # times are per batch: the first case carries them
    return [{"index": case.index, "features": sorted(case.features), "fired": fired[k], "phase": phase if k == 0 else {},
             "reported": rep} for k, (case, rep) in enumerate(zip(cases, reported))]

  def store(self, case: Case, f: Finding) -> Reported:
    path = entry_path(self.cfg.corpus, f.signature)
    if path.exists(): return Reported(f.signature, str(path), False, case.index or 0, node_count(case.root), f.message)
    t = time.perf_counter()
    small, final = self.reduce(case, f)
    self.checker.stats.phase["reduce"] += time.perf_counter() - t
    blame = final.blame.describe(6) if final.blame is not None else ""
    path, new = write_entry(self.cfg.corpus, small, f.signature, message=final.message, backends=self.cfg.backends,
                            per_rewrite=self.cfg.per_rewrite, blame=blame)
    return Reported(f.signature, str(path), new, case.index or 0, node_count(small.root), final.message, blame, node_count(case.root))

  def reduce(self, case: Case, f: Finding) -> tuple[Case, Finding]:
    start = replace(case, options=dict(f.options) if f.options else dict(case.options))
    if f.oracle == "input": return start, f
    last: dict[str, Finding] = {}
    def fails(c: Case) -> bool:
      for g in self.reducer_checker.check(c):
        if same_bug(g.signature, f.signature):
          last["f"] = g
          return True
      return False
    if not fails(start): return case, f  # flaky under its own options: keep it as found
    small = reduce_case(start, fails, max_seconds=self.cfg.reduce_seconds)
    fails(small)
    return small, last.get("f", f)


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
    self.cfg = cfg
    self.out = out or sys.stdout
    self.tty = hasattr(self.out, "isatty") and self.out.isatty()
    Path(cfg.corpus).mkdir(parents=True, exist_ok=True)
    self.state_path = Path(cfg.corpus) / f".fuzz-state-{cfg.seed}.json"
    self.rules = Checker(Config(passes=cfg.passes)).all_rules()
    self.coverage = Coverage(self.rules)
    self.weights = {**default_weights(), **(cfg.weights or {})}
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
    if s.get("seed") != self.cfg.seed: return
    self.epoch_start = int(s.get("epoch_start", 0))
    self.done_in_epoch = set(s.get("done_in_epoch", []))
    self.epoch_results = {int(k): (frozenset(v[0]), v[1]) for k, v in s.get("epoch_results", {}).items()}
    self.coverage.load(s.get("coverage", {}))
    self.weights = {**default_weights(), **(self.cfg.weights or {}), **s.get("weights", {})}
    self.prior_cases = int(s.get("cases", 0))
    self.known = {tuple(x) for x in s.get("signatures", [])}  # type: ignore[misc]
    self.phase.update(s.get("phase", {}))

  def save_state(self) -> None:
    s = {"seed": self.cfg.seed, "epoch_start": self.epoch_start, "done_in_epoch": sorted(self.done_in_epoch),
         "epoch_results": {str(k): [sorted(v[0]), v[1]] for k, v in self.epoch_results.items()},
         "coverage": self.coverage.to_json(), "weights": self.weights, "cases": self.prior_cases + self.cases,
         "signatures": sorted(list(s) for s in self.known), "phase": dict(self.phase)}
    atomic_write(self.state_path, json.dumps(s, indent=1, sort_keys=True))

  # ---- case numbering ----
  def next_batch(self, n: int) -> list[int]:
    """Up to n case numbers to run next: a case suspected of killing a worker runs alone."""
    if self.suspects: return [self.suspects.pop(0)]
    out: list[int] = []
    for i in range(self.epoch_start, self.epoch_start + EPOCH):
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
      self.epoch_results[i] = (frozenset(res["features"]), res["fired"])
      for r in res["reported"]: self.report(r if isinstance(r, Reported) else Reported(**r))
    self.done_in_epoch.add(i)
    if len(self.done_in_epoch) >= EPOCH and not self.running:
      epoch = [self.epoch_results[k] for k in sorted(self.epoch_results)]
      self.weights = steer(self.weights, self.coverage, epoch)
      for _, fired in epoch: self.coverage.add(fired)
      self.epoch_start += EPOCH
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
    return (f"fuzz: {elapsed:6.0f}s  {self.prior_cases + self.cases} cases ({rate:.1f}/s)  "
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
      from fuzz.report import for_campaign
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
                   [r for r in self.rules if r not in cov], dict(self.phase), interrupted)

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
    """Cases per job: with CPU parity, kernels of a batch share one compiler run; without, one case keeps jobs short."""
    n = self.cfg.batch if "cpu" in self.cfg.backends else 1
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
    sig = ("crash", "worker", why)
    case = case_for(self.cfg.seed, index, weights)
    msg = f"the worker running case {index} {'hung' if why == 'timeout' else 'died'} ({why})"
    small = case
    if not entry_path(self.cfg.corpus, sig).exists():
      t = time.perf_counter()
      small = self.reduce_crash(case, why)
      self.phase["reduce"] += time.perf_counter() - t
    path, new = write_entry(self.cfg.corpus, small, sig, message=msg, backends=self.cfg.backends, per_rewrite=self.cfg.per_rewrite)
    return {"index": index, "features": sorted(case.features), "fired": {}, "phase": {},
            "reported": [Reported(sig, str(path), new, index, node_count(small.root), msg, found_nodes=node_count(case.root))]}

  def reduce_crash(self, case: Case, why: str) -> Case:
    cfg = self.cfg
    checker = Checker(Config(passes=cfg.passes, backends=cfg.backends, per_rewrite=cfg.per_rewrite, cc=cfg.cc))
    # a candidate that outlives this is a hang; a crash shows long before
    timeout = min(cfg.case_timeout, max(1.0, cfg.reduce_seconds / 8))
    return reduce_crash(case, checker.check, why, timeout, cfg.reduce_seconds)[0]


def run_campaign(cfg: CampaignConfig, out: TextIO | None = None) -> Summary:
  """Run a campaign to its time or case budget; SIGINT ends it early with the summary."""
  return Campaign(cfg, out).run()

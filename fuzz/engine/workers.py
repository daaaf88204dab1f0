"""The campaign's cases on this machine: in forked worker processes that it watches (or in its own process with
--workers 0), and the child processes that reduce a case that killed or hung a worker.

Workers are forked child processes that die with the campaign (tinyspec.runtime.procs: parent-death signal, their
own process group, which the campaign kills on every way out; no copy of the campaign's pipe ends or lock). Each runs
batches of case numbers with a CaseRunner (fuzz.engine.runner) and sends back its messages; where it is (the case, the
step, its deadline) is in a Progress slot in shared memory. A worker past its step's deadline, or one that died, is
killed and replaced, and the campaign is told which case of which batch it was on (Campaign.lost_batch).
"""
from __future__ import annotations

import multiprocessing as mp
import signal
import time
from multiprocessing.connection import wait
from typing import Any

from fuzz.corpus.store import load_entry
from fuzz.engine.runner import BATCH, GRACE, IDLE, TICK, CaseRunner, Progress, worker_main
from fuzz.engine.summary import Reported
from fuzz.engine.targets import get_target
from tinyspec.runtime import procs


class Worker:
  """A worker process, its pipe, its progress slot and the batch it runs."""

  def __init__(self, cfg: Any, ctx: Any, existing: frozenset[str]):
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


def _reducer_main(cfg: Any, path: str, signature: tuple[str, str, str], why: str, message: str, seconds: float, conn: Any) -> None:
  """A crash reducer: the unreduced entry read back (as data), reduced in children of its own, its text sent back."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  session = get_target(cfg.target).session(cfg)
  small = session.shrink_crash(load_entry(path).case, why, seconds)
  conn.send((session.size(small), session.crash_entry(small, signature, message)))


class CrashReducer:
  """A child process reducing the case of a crash finding (r, stored as found), sending back (nodes, entry text)."""

  def __init__(self, ctx: Any, cfg: Any, r: Reported, why: str, seconds: float):
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


class LocalWorkers:
  """The cases on this machine: in worker processes (as many as Campaign.worker_count allows), or in the campaign's
  own process when that is none. campaign: the fuzz.engine.campaign.Campaign whose cases run."""

  def run(self, campaign: Any, t0: float) -> None:
    n = campaign.worker_count()
    if n <= 0: self._inline(campaign, t0)
    else: self._workers(campaign, t0, n)

  def close(self) -> None: pass  # the workers end with the cases phase

  def _inline(self, campaign: Any, t0: float) -> None:
    runner = CaseRunner(campaign.cfg, campaign.existing)
    # a target whose own code runs kernels in the checking process (tinygrad) checks each case in a child instead
    if hasattr(runner.session, "isolate"): runner.session.isolate()
    try:
      while campaign.time_left():
        batch = campaign.next_batch(campaign.batch_size())
        if not batch: break
        campaign.running.update(batch)
        runner.run_batch(batch, campaign.weights, campaign.handle, dict(campaign.best), campaign.stop_at)
        campaign.running.difference_update(batch)
        campaign.status(time.monotonic() - t0)
    finally:
      if hasattr(runner.session, "close"): runner.session.close()

  def _workers(self, campaign: Any, t0: float, n: int) -> None:
    cfg = campaign.cfg
    ctx = mp.get_context("fork")  # a worker keeps the target as this process holds it (a changed rule table)
    workers: list[Worker] = []
    try:
      workers = [Worker(cfg, ctx, campaign.existing) for _ in range(n)]
      while True:
        for w in workers:
          if w.batch is None and campaign.time_left() and (batch := campaign.next_batch(campaign.batch_size())):
            campaign.running.update(batch)
            w.send(batch, campaign.weights, dict(campaign.best), campaign.stop_at)
        busy = [w for w in workers if w.batch is not None]
        campaign.collect_reducers()
        now = time.monotonic()
        if not busy and not (campaign.reducers and now < campaign.stop_at): break
        if now > campaign.stop_at + GRACE:  # the time is up: what still runs is killed; its cases run again on resume
          for w in busy: self._abandon(campaign, w)
          break
        ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy] + [r.conn for r in campaign.reducers], timeout=TICK)
        now = time.monotonic()
        for k, w in enumerate(workers):
          if w.batch is None: continue
          if w.conn in ready and self._receive(campaign, w): continue
          dead = not w.proc.is_alive()
          if dead or w.overdue(now):
            self._lost(campaign, w, "timeout" if not dead else None)
            workers[k] = Worker(cfg, ctx, campaign.existing)
        campaign.status(now - t0)
    finally:
      for w in workers:
        try: w.conn.send(None)
        except Exception: pass
      for w in workers: w.kill()

  def _receive(self, campaign: Any, w: Worker) -> bool:
    """Handle what the worker sent; False when its pipe broke (it died)."""
    try:
      while w.conn.poll():
        msg = w.conn.recv()
        if msg[0] == "done":
          w.batch = None
          return True
        if msg[0] == "checked": w.checked = True
        campaign.handle(msg)
    except (EOFError, OSError):
      return False
    return True

  def _abandon(self, campaign: Any, w: Worker) -> None:
    w.kill()
    if w.batch and not w.checked:
      for i in w.batch: campaign.running.discard(i)
    w.batch = None

  def _lost(self, campaign: Any, w: Worker, why: str | None) -> None:
    """A worker died (why None: how it ended decides) or outlived its step's deadline (why "timeout")."""
    p = w.progress
    index, reducing, where = int(p.index), bool(p.reducing), p.place
    batch, weights, checked = w.batch or [], w.weights, w.checked
    end = w.kill()
    w.batch = None
    campaign.lost_batch(batch, weights, checked, index, reducing, where, why or end)

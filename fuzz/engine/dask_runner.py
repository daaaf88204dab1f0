"""Running a campaign's batches on a Dask `distributed` cluster (`tinyspec fuzz --scheduler ADDRESS`).

Past one machine a campaign runs on an existing distributed engine rather than a protocol of its own: Dask's scheduler
places the batches, notices a worker that is lost, and runs that worker's tasks again elsewhere (after
`distributed.scheduler.allowed-failures` losses of one task it gives up with KilledWorker). The campaign process
stays the one owner of the corpus, the state file, coverage and the report (fuzz.engine.campaign): a task is one batch
of case numbers, run on the worker by the same CaseRunner.run_batch as a local worker runs it, and it returns the
messages that runner sends ("checked", "reduced"; fuzz.engine.runner) for the campaign to handle as it handles a local
worker's. A task never writes anything, so a batch run twice stores nothing twice: the campaign keeps the entry of a
signature's lowest case as always. Case i is drawn from the seed and i alone, so the cases are those of a local run.

A worker runs one batch at a time (its kernels run in the process's one kernel host), and it checks that it runs the
same code as the campaign: the same seed gives the same cases only with the same code. The task watches its batch as
the campaign watches a local worker: the batch runs in a thread of its own, and a step of a case that outlives its
deadline (Progress, fuzz.engine.runner) ends the task at once with what the batch sent so far and a ("hung", case,
reducing, where) message, which the campaign handles as a local worker's hang. The thread cannot be stopped, so the
process refuses any further batch (Dask's Reschedule) and the campaign has the worker restarted by its nanny.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import pickle
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import fuzz
import tinyspec
from fuzz.engine.config import ConfigError
from fuzz.engine.runner import GRACE, TICK, CaseRunner

CONNECT_SECONDS = 10.0   # how long the campaign tries to reach the scheduler before it says it cannot
# what a call to the scheduler raises once the connection is gone: a broken comm, or the client's cancelling every
# future (concurrent.futures' CancelledError from wait, asyncio's, which is no Exception, from a result)
_GONE = (OSError, concurrent.futures.CancelledError, asyncio.CancelledError)
THREADS_EVERY = 2.0     # seconds between asking the scheduler how many worker threads it has
START_HINT = ("start one with `dask scheduler` (port 8786) and workers with `dask worker tcp://HOST:8786`, each with this project "
              "installed (README: Campaigns on a Dask cluster)")


class CodeMismatch(RuntimeError):
  """A worker whose copy of the project differs from the campaign's."""


class ClusterLost(Exception):
  """The campaign's connection to the scheduler is gone: it ends as on ^C, its state saved, to be resumed."""


def code_fingerprint() -> str:
  """A hash of the project's Python sources (tinyspec, fuzz) as this process imports them."""
  h = hashlib.sha256()
  for pkg in (tinyspec, fuzz):
    root = Path(pkg.__file__).parent
    for p in sorted(root.rglob("*.py")):
      h.update(str(p.relative_to(root.parent)).encode() + b"\0" + p.read_bytes() + b"\0")
  return h.hexdigest()[:16]


# ---- on a worker ----
_LOCK = threading.Lock()               # one batch at a time per worker process
_RUNNER: dict[str, Any] = {}           # campaign token -> its CaseRunner, kept between that campaign's batches
_FINGERPRINT: list[str] = []
_HUNG: list[str] = []                  # set once a batch of this process hung: its runner's thread never returns


def run_batch_task(token: str, fingerprint: str, cfg_bytes: bytes, existing: frozenset[str], indices: Sequence[int],
                   weights: dict[str, float], best: dict, stop_wall: float) -> list[tuple]:
  """A batch on a Dask worker: the runner's messages, in the order a local worker sends them; the last one
  ("hung", case, reducing, where, worker address) when a step outlived its deadline."""
  from distributed import Reschedule
  if _HUNG: raise Reschedule()  # this process waits for its restart: the batch goes to another worker
  with _LOCK:
    if _HUNG: raise Reschedule()
    if not _FINGERPRINT: _FINGERPRINT.append(code_fingerprint())
    if _FINGERPRINT[0] != fingerprint:
      raise CodeMismatch(f"the worker on {socket.gethostname()} runs other code than the campaign (sources {_FINGERPRINT[0]}, "
                         f"campaign {fingerprint}): install the same checkout on every worker")
    runner = _runner(token, cfg_bytes, existing)
    # stop_at is on this machine's monotonic clock; the campaign sends it as wall time (clocks agree to NTP's precision)
    stop_at = time.monotonic() + (stop_wall - time.time())
    return _watched(runner, list(indices), weights, best, stop_at)


def _watched(runner: Any, indices: list[int], weights: dict[str, float], best: dict, stop_at: float) -> list[tuple]:
  """runner.run_batch in a thread of its own, watched here: its messages, or those sent until a step outlived its
  deadline and a "hung" message."""
  out: list[tuple] = []
  failed: list[BaseException] = []

  def work() -> None:
    try: runner.run_batch(indices, weights, out.append, best, stop_at)
    except BaseException as e: failed.append(e)  # re-raised in the task, as the runner raised it

  t = threading.Thread(target=work, name="tinyspec-batch", daemon=True)
  t.start()
  p = runner.progress
  while t.is_alive():
    t.join(TICK)
    if t.is_alive() and p.overdue(time.monotonic(), GRACE):
      from distributed import get_worker
      _HUNG.append(get_worker().address)
      return [*list(out), ("hung", int(p.index), bool(p.reducing), p.place, _HUNG[0])]
  if failed: raise failed[0]
  return out


def _runner(token: str, cfg_bytes: bytes, existing: frozenset[str]) -> CaseRunner:
  """The campaign's runner in this process, made on its first batch; a runner of an earlier campaign is closed."""
  if (runner := _RUNNER.get(token)) is not None: return runner
  for old in _RUNNER.values():
    if hasattr(old.session, "close"): old.session.close()
  _RUNNER.clear()
  _RUNNER[token] = runner = CaseRunner(pickle.loads(cfg_bytes), existing)
  return runner


# ---- in the campaign ----
@dataclass
class Batch:
  """A batch submitted: its cases, the weights it was drawn with, its future, and whether it runs alone."""
  indices: list[int]
  weights: dict[str, float]
  future: Any
  alone: bool = False


def connect(address: str, timeout: float | None = None) -> Any:
  """A distributed.Client of the scheduler at address; ConfigError when distributed is missing or the scheduler
  cannot be reached."""
  try: from distributed import Client
  except ImportError:
    raise ConfigError("--scheduler needs Dask's distributed package: pip install -e '.[dask]' (the dask extra)") from None
  try: return Client(address, timeout=timeout or CONNECT_SECONDS, set_as_default=False)
  except (OSError, ValueError, TypeError) as e:
    raise ConfigError(f"--scheduler {address}: no Dask scheduler reachable there ({str(e).splitlines()[0][:200]}); {START_HINT}") from None


class DaskBatches:
  """The campaign's batches in flight on a cluster: submitted, and collected as they finish."""

  def __init__(self, client: Any, cfg: Any, existing: frozenset[str]):
    self.client = client
    self.address = cfg.scheduler
    self.said_no_workers = False
    self.threads, self.threads_at = 0, -1e9
    self.token = uuid.uuid4().hex
    self.fingerprint = code_fingerprint()
    # what a worker needs of the configuration: the stop condition and the report are the campaign's
    # cloudpickle (distributed's own): a pass defined in a script travels by value
    import cloudpickle
    try: self.cfg_bytes = cloudpickle.dumps(replace(cfg, stop_when=None, report=None, scheduler=None))
    except Exception as e:  # a target or pass holding what cannot be pickled runs in local workers only (they fork)
      raise ConfigError(f"--scheduler: the campaign's target cannot be sent to workers ({type(e).__name__}: {str(e)[:200]}); "
                        "run it with --workers N") from None
    self.existing = existing
    self.pending: list[Batch] = []
    self.submitted = 0

  def run(self, campaign: Any, t0: float) -> None:
    """The campaign's batches on the cluster, as many in flight as it has room for; their messages handled as a local
    worker's. campaign: the fuzz.engine.campaign.Campaign whose cases run. ClusterLost when the scheduler is gone."""
    try:
      while True:
        self._submit_more(campaign)
        campaign.collect_reducers()
        now = time.monotonic()
        if not self.pending and not (campaign.reducers and now < campaign.stop_at): break
        if now > campaign.stop_at + GRACE: break  # the time is up: what still runs is dropped; its cases run again on resume
        for b, msgs in self.finished(TICK):
          if msgs is None: self._given_up(campaign, b)
          for msg in msgs or ():
            if msg[0] == "hung":  # a step outlived its deadline on the worker (the worker is restarted)
              _, index, reducing, where = msg
              checked = any(m[0] == "checked" for m in msgs)
              campaign.lost_batch(b.indices, b.weights, checked, index, reducing, where, "timeout")
            else: campaign.handle(msg)
          campaign.running.difference_update(b.indices)  # cases the batch left unfinished (its time ran out) are not done
        campaign.status(time.monotonic() - t0)
    finally:
      for b in self.cancel(): campaign.running.difference_update(b.indices)

  def _submit_more(self, campaign: Any) -> None:
    """New batches while the cluster has room. A case suspected of killing workers runs alone on the whole cluster:
    Dask gives up every batch on a worker that died, those only queued there too, so only a case run alone is known to
    be the one."""
    while campaign.time_left():
      alone = bool(campaign.suspects)
      if not self.free(alone): return
      if not (batch := campaign.next_batch(campaign.batch_size())): return
      campaign.running.update(batch)
      self.submit(batch, campaign.weights, dict(campaign.best), campaign.stop_at, alone)

  def _given_up(self, campaign: Any, b: Batch) -> None:
    """A batch Dask gave up on, the workers running it having died again and again: each of its cases runs alone
    next, and a case run alone that still kills them is a crash finding."""
    if b.alone: campaign.worker_crash(b.indices[0], b.weights, "killed-worker", "check")
    else: campaign.suspects.extend(b.indices)

  def slots(self) -> int:
    """Batches to keep in flight: one per worker thread, and one more each so that no worker waits for the next."""
    if time.monotonic() - self.threads_at > THREADS_EVERY:  # asked now and then: workers come and go
      with self._talking(): self.threads = sum(self.client.nthreads().values())
      self.threads_at = time.monotonic()
    threads = self.threads
    if not threads and not self.said_no_workers:  # the batches wait for a worker to join
      print(f"fuzz: the scheduler at {self.address} has no workers yet; start them with `dask worker {self.address}`", file=sys.stderr,
            flush=True)
      self.said_no_workers = True
    return max(1, 2 * threads)

  def free(self, alone: bool = False) -> bool:
    """Whether a batch can be submitted now (one to run alone: when nothing else is in flight)."""
    if any(b.alone for b in self.pending): return False
    return not self.pending if alone else len(self.pending) < self.slots()

  def submit(self, indices: list[int], weights: dict[str, float], best: dict, stop_at: float, alone: bool = False) -> None:
    stop_wall = time.time() + (stop_at - time.monotonic())
    with self._talking():
      fut = self.client.submit(run_batch_task, self.token, self.fingerprint, self.cfg_bytes, self.existing, indices, weights, best, stop_wall,
                               key=f"tinyspec-batch-{self.token[:8]}-{self.submitted}", pure=False)  # a case run again gets a new key
    self.submitted += 1
    self.pending.append(Batch(indices, weights, fut, alone))

  def finished(self, timeout: float) -> Iterator[tuple[Batch, list[tuple] | None]]:
    """The batches done within timeout: (batch, its messages), or (batch, None) when Dask gave it up because the
    workers running it kept dying (KilledWorker). Any other failure of a task is the cluster's: ConfigError."""
    from distributed import KilledWorker, wait
    if not self.pending:
      time.sleep(timeout)
      return
    try:
      with self._talking(), self.client.as_current():  # wait() asks the current client, and this one is not the default
        done = wait([b.future for b in self.pending], timeout=timeout, return_when="FIRST_COMPLETED").done
    except (TimeoutError, asyncio.TimeoutError): return  # distinct classes before Python 3.11
    for b in [b for b in self.pending if b.future in done]:
      self.pending.remove(b)
      try: msgs = b.future.result()
      except KilledWorker:
        yield b, None
        continue
      except _GONE[1:] as e: raise self._lost(e) from None
      except CodeMismatch as e: raise ConfigError(f"--scheduler: {e}") from None
      except Exception as e:
        raise ConfigError(f"--scheduler: a Dask worker could not run cases {b.indices[0]}..{b.indices[-1]} ({type(e).__name__}: "
                          f"{str(e)[:300]}); every worker needs this project installed, as the campaign has it") from None
      if msgs and msgs[-1][0] == "hung":
        self._restart(msgs[-1][4])
        msgs = [*msgs[:-1], msgs[-1][:4]]
      yield b, msgs

  def _restart(self, address: str) -> None:
    """A worker whose batch hung: its nanny starts a fresh process (the hung thread cannot be stopped). A worker
    without a nanny cannot be restarted: it is closed, and the campaign goes on with the others."""
    with self._talking():
      try: self.client.restart_workers([address], raise_for_error=True)
      except Exception as e:  # no nanny (dask worker --no-nanny), or it did not come back in time
        print(f"fuzz: the Dask worker {address} hung and could not be restarted ({type(e).__name__}: {str(e)[:200]}); it is closed",
              file=sys.stderr, flush=True)
        self.client.retire_workers([address], close_workers=True)

  @contextmanager
  def _talking(self) -> Iterator[None]:
    """A call to the scheduler; ClusterLost when the connection is gone (a broken comm, or the client cancelling
    every future)."""
    try: yield
    except (TimeoutError, asyncio.TimeoutError): raise  # an OSError too, but only a wait that timed out
    except _GONE as e: raise self._lost(e) from None

  def _lost(self, e: BaseException) -> ClusterLost:
    return ClusterLost(f"--scheduler {self.address}: the connection to the scheduler was lost ({(str(e).splitlines() or [''])[0][:200]}); "
                       "the same command resumes the campaign")

  def cancel(self) -> list[Batch]:
    """Every batch still in flight, cancelled (its cases are not done)."""
    left, self.pending = self.pending, []
    if left:
      try: self.client.cancel([b.future for b in left])
      except _GONE: pass  # the scheduler is gone, and the futures with it
    return left

  def close(self) -> None:
    self.cancel()
    self.client.close()

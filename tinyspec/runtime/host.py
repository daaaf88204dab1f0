"""The kernel host: compiled kernels run in a child process, so a kernel that segfaults or never returns is reported
in one line and the process that asked survives.

The host is a fresh interpreter (`python -m tinyspec.runtime.host`), started on first use and reused until a kernel
kills it or outlives its timeout: it starts clean, with no OpenCL context, loaded object or thread of the process that
asks (a PoCL context does not survive a fork). It dies with its parent (tinyspec.runtime.procs) and leads its own
process group, so killing it takes the compiler it may be running along.

    host = KernelHost()                       # or shared(): one per process
    outcomes = host.run("cpu", [(lowered_graph, inputs), ...], compiler="gcc", timeout=30)

Each outcome is Ran(values), Raised(type, message) (the runtime raised, e.g. a CompileError), or Died(why, kernel):
the host died (why = signalN or exitN) or hung (why = "timeout") while running `kernel` (or "compile"). A graph is
sent as flat rows (tinyspec.uop.to_rows), so graphs of any depth travel; the CPU kernels of one call are compiled as
one object. After a death the host starts again for the jobs that are left.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.runtime import cpu, opencl, procs
from tinyspec.semantics import evaluate
from tinyspec.uop import Rows, UOp, from_rows, to_rows

COMPILE_TIMEOUT = 300.0  # seconds a compiler run may take before the host counts as hung (the machine may be loaded)
START_TIMEOUT = 120.0    # seconds a new host may take to start and answer


@dataclass
class Ran:
  values: Any


@dataclass
class Raised:
  type: str
  message: str


@dataclass
class Skipped:
  """Not run: the caller's deadline came first."""


@dataclass
class Died:
  why: str          # signalN, exitN or timeout
  kernel: str       # the kernel running when it happened; "compile", "evaluate" (between kernels) or "startup"
  seconds: float = 0.0

  @property
  def text(self) -> str:
    if self.why == "timeout": return f"kernel {self.kernel} did not finish within {self.seconds:.0f} s (killed)"
    sig = self.why[len("signal"):] if self.why.startswith("signal") else None
    name = signal.Signals(int(sig)).name if sig and sig.isdigit() and int(sig) in signal.valid_signals() else self.why
    return f"kernel {self.kernel} killed the process running it ({name})" if sig else f"kernel {self.kernel}: its process ended ({self.why})"


Outcome = Ran | Raised | Died | Skipped


class KernelError(RuntimeError):
  """A kernel run that did not give values: the runtime raised in the host, or the host died or hung."""
  def __init__(self, outcome: Raised | Died, backend: str):
    self.outcome, self.backend = outcome, backend
    super().__init__(outcome.text if isinstance(outcome, Died) else f"{outcome.type}: {outcome.message}")


class KernelHost:
  """A host process of this process, started on first use (and again after a death)."""

  def __init__(self):
    self.proc: subprocess.Popen | None = None
    self.conn: Connection | None = None
    self.owner = 0

  def _start(self) -> None:
    self.close()
    mine, theirs = socket.socketpair()
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the directory tinyspec is imported from
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    self.proc = subprocess.Popen([sys.executable, "-m", "tinyspec.runtime.host", str(theirs.fileno()), str(os.getpid())],
                                 pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, process_group=0)
    theirs.close()
    self.conn = procs.parent_only(Connection(mine.detach()))
    self.owner = os.getpid()

  def _alive(self) -> bool:
    return self.proc is not None and self.owner == os.getpid() and self.proc.poll() is None

  def close(self) -> None:
    """End the host (it is started again when next needed)."""
    if self.owner != os.getpid():  # a copy inherited by fork: the host is the parent's
      self.proc = self.conn = None
      return
    if self.conn is not None:
      try: self.conn.send(None)
      except OSError: pass
      procs.forget(self.conn)
      self.conn.close()
    if self.proc is not None:
      try: self.proc.wait(1)
      except subprocess.TimeoutExpired: pass
      self._kill()
    self.proc = self.conn = None

  def _kill(self) -> str:
    p = self.proc
    if p is None: return "unknown"
    for kill in (lambda: os.killpg(p.pid, signal.SIGKILL), lambda: p.kill()):
      try: kill()
      except OSError: pass
    try: p.wait(10)
    except subprocess.TimeoutExpired: pass
    return procs.how_it_ended(p.returncode)

  def _ask(self, msg: Any, timeout: float) -> Any:
    if not self._alive(): self._start()
    assert self.conn is not None
    self.conn.send(msg)
    if not self.conn.poll(timeout): raise TimeoutError
    return self.conn.recv()

  def available(self, backend: str) -> tuple[bool, str]:
    """(True, what runs it) when the backend can run kernels in the host, else (False, why not), in one line."""
    try: return self._ask(("available", backend), START_TIMEOUT)
    except (TimeoutError, EOFError, OSError) as e:
      self._kill()
      return False, f"the kernel host did not answer ({type(e).__name__})"

  def run(self, backend: str, jobs: Sequence[tuple[UOp, dict[int, np.ndarray] | None]], compiler: str | None = None,
          timeout: float = 30.0, deadline: float | None = None) -> list[Outcome]:
    """The outcome of running each lowered graph (with its inputs) on backend, every kernel in the host. timeout: the
    seconds one job may run (compiling has COMPILE_TIMEOUT); deadline (time.monotonic()): jobs not done by then are
    Skipped (the host is killed if it is running one)."""
    rows = [(to_rows(g), {k: np.asarray(v) for k, v in (inp or {}).items()}) for g, inp in jobs]
    return self._run(backend, rows, compiler, timeout, deadline)

  def _run(self, backend: str, jobs: list[tuple[Rows, dict]], compiler: str | None, timeout: float, deadline: float | None) -> list[Outcome]:
    out: list[Outcome] = []
    end = float("inf") if deadline is None else deadline
    while len(out) < len(jobs):
      if time.monotonic() >= end: return out + [Skipped()] * (len(jobs) - len(out))
      todo = jobs[len(out):]
      try:
        if not self._alive(): self._start()
        assert self.conn is not None
        self.conn.send(("run", backend, compiler, todo))
      except OSError:
        self._kill()
        self._start()
        continue
      where, limit, since = "startup", START_TIMEOUT, time.monotonic()
      while True:
        left = min(since + limit, end) - time.monotonic()
        try: ready = self.conn.poll(max(0.0, left))
        except OSError: ready = True
        if not ready and time.monotonic() >= end and since + limit > end:  # the caller's time is up first
          self._kill()
          return out + [Skipped()] * (len(jobs) - len(out))
        if not ready:  # a hang: kill it; the jobs after this one start again in a new host
          self._kill()
          out.append(Died("timeout", where, limit))
          if where == "compile" and len(todo) > 1:  # which kernel's compile? each job compiles alone
            out.pop()
            for j in todo: out.extend(self._run(backend, [j], compiler, timeout, deadline))
          break
        try: msg = self.conn.recv()
        except (EOFError, OSError):  # it died: how, and running what
          why = self._kill()
          out.append(Died(why, where, time.monotonic() - since))
          break
        kind = msg[0]
        if kind == "compile": where, limit, since = "compile", COMPILE_TIMEOUT, time.monotonic()
        elif kind == "start": where, limit, since = "evaluate", timeout, time.monotonic()
        elif kind == "kernel": where = msg[1]
        elif kind == "result": out.append(Ran(msg[1]))
        elif kind == "error": out.append(Raised(msg[1], msg[2]))
        elif kind == "done": break  # every job answered, in order
    return out


_shared: list[KernelHost] = []


def shared() -> KernelHost:
  """The kernel host of this process (a process forked from one that had a host gets its own)."""
  if not _shared or _shared[0].owner not in (0, os.getpid()):
    _shared[:] = [KernelHost()]
  return _shared[0]


def run_graph(backend: str, lowered: UOp, inputs: dict[int, np.ndarray] | None = None, compiler: str | None = None,
              timeout: float = 30.0) -> Any:
  """evaluate(lowered, inputs) with every kernel run on backend in the shared host; KernelError when it raised, died
  or hung."""
  res = shared().run(backend, [(lowered, inputs)], compiler, timeout)[0]
  if isinstance(res, Ran): return res.values
  raise KernelError(res, backend)


# ---- the host process ----
class _Announcing:
  """A kernel runner that tells the parent which kernel is about to run, so a crash inside it names the kernel."""

  def __init__(self, conn: Connection, runner: Any):
    self.conn, self.runner = conn, runner

  def __call__(self, call: UOp, args: list[np.ndarray]) -> None:
    prg = call.src[0] if call.src else None
    name = getattr(prg, "arg", None) if prg is not None else None
    if prg is not None and len(prg.src) > 2 and hasattr(prg.src[2].arg, "name"): name = prg.src[2].arg.name
    self.conn.send(("kernel", str(name)[:80] if name else "kernel"))
    self.runner(call, args)

  def __getattr__(self, name: str) -> Any: return getattr(self.runner, name)


def _run_jobs(conn: Connection, backend: str, compiler: str | None, jobs: list[tuple[Rows, dict]]) -> None:
  graphs = []
  for rows, _ in jobs:
    try: graphs.append(from_rows(rows))
    except Exception as e: graphs.append(e)
  fns: dict = {}
  if backend == "cpu":
    prgs: list[UOp] = []
    for g in graphs:
      if isinstance(g, UOp):
        try: prgs += [p for p in cpu.c_programs(g) if p not in prgs]
        except Exception: pass
    if prgs:
      conn.send(("compile",))
      try: fns = cpu.compile_programs(prgs, compiler)
      except Exception: fns = {}  # one bad kernel spoils the batch: each job then compiles its own, so the error is its own
  if backend == "opencl": _build_opencl(conn, graphs)
  for g, (_, inputs) in zip(graphs, jobs):
    conn.send(("start",))
    try:
      if isinstance(g, Exception): raise g
      if backend == "cpu":
        if any(p not in fns for p in cpu.c_programs(g)):
          conn.send(("compile",))
          fns.update(cpu.build(g, compiler))
          conn.send(("start",))
        vals = evaluate(g, inputs, kernel_runner=_Announcing(conn, cpu.make_runner(fns, compiler)))
      elif backend == "opencl":
        runner = opencl.OpenCLRunner.for_graph(g)
        try: vals = evaluate(g, inputs, kernel_runner=_Announcing(conn, runner))
        finally: runner.close()
      else:
        raise ValueError(f"the kernel host runs cpu or opencl kernels, not {backend!r}")
      conn.send(("result", vals))
    except Exception as e:
      conn.send(("error", type(e).__name__, str(e)[:4000]))
  conn.send(("done",))


def _build_opencl(conn: Connection, graphs: list) -> None:
  """Every OpenCL kernel of the jobs built as one program per device, in the context the kernel runs in (a bad one
  spoils its device's program: each of those then builds alone, its error its own)."""
  by_device: dict[str, list[tuple[str, str]]] = {}
  for g in graphs:
    if not isinstance(g, UOp): continue
    try: found = [(opencl.kernel_device(c), opencl.kernel_of(c)[:2]) for c in kernel_calls(g)]
    except Exception: continue
    for device, kernel in found: by_device.setdefault(device, []).append(kernel)
  if sum(map(len, by_device.values())) < 2: return
  conn.send(("compile",))
  for device, kernels in by_device.items():
    try: opencl.build_many(kernels, device)
    except Exception: pass  # no device, or a kernel it cannot take: the jobs report it themselves


def _available(backend: str) -> tuple[bool, str]:
  if backend == "opencl":
    return opencl.available()
  if backend == "cpu":
    found = cpu.available_compilers()
    return (True, ", ".join(found)) if found else (False, "no C compiler found (gcc, clang or tcc)")
  return False, f"unknown backend {backend!r}"


def main(fd: int, parent: int) -> None:
  procs.die_with_parent(parent)
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends the host
  faulthandler.disable()  # a kernel's segfault is the parent's finding, not a traceback here
  conn = Connection(fd)
  while True:
    try: msg = conn.recv()
    except (EOFError, OSError): return
    if msg is None: return
    if msg[0] == "available": conn.send(_available(msg[1]))
    elif msg[0] == "run": _run_jobs(conn, *msg[1:])


if __name__ == "__main__":
  main(int(sys.argv[1]), int(sys.argv[2]))

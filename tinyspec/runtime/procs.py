"""Child processes that die with their parent and leave nothing behind.

Generated code runs in child processes (kernels, fuzz workers, crash reducers), so a segfault or a hang is a finding
and not the end of the tool. Such a child must never outlive what started it, even when that is killed with SIGKILL:

  - it asks the kernel for SIGKILL when its parent dies (Linux prctl PR_SET_PDEATHSIG), and exits at once when the
    parent is already gone by then;
  - it closes its copies of what only the parent may hold (the parent's ends of pipes, the corpus lock): with the
    parent's end of its own pipe open in the child, the child would never see EOF;
  - it leads a process group of its own, so its parent kills it with everything it started (killpg) on every exit path.

`start(ctx, fn, args)` starts fn(*args) in such a child (ctx: a multiprocessing context; fork keeps what cannot be
pickled, spawn starts from a clean interpreter). Objects registered with `parent_only` are closed in every child.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from typing import Any, Callable

PR_SET_PDEATHSIG = 1
_parent_only: dict[int, Any] = {}  # id -> an object with close() that children must not keep


def parent_only(obj: Any) -> Any:
  """Register obj (a Connection, a file): a child started by `start` closes its copy first thing."""
  _parent_only[id(obj)] = obj
  return obj


def forget(obj: Any) -> None:
  """obj is closed in this process: children need not close it."""
  _parent_only.pop(id(obj), None)


def die_with_parent(parent: int) -> None:
  """SIGKILL this process when its parent dies (Linux); exit now when the parent (pid `parent`) is already gone."""
  if sys.platform.startswith("linux"):
    try:
      libc = ctypes.CDLL(None, use_errno=True)
      libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
      pass
  if os.getppid() != parent: os._exit(1)  # the parent died before prctl: nothing will signal us


def close_inherited() -> None:
  """Close this child's copies of what its parent registered with parent_only."""
  for obj in list(_parent_only.values()):
    try: obj.close()
    except Exception: pass
  _parent_only.clear()


def child_main(parent: int, fn: Callable[..., Any], args: tuple) -> None:
  """The first thing a child runs: die with the parent, own process group, close the parent's ends; then fn(*args)."""
  die_with_parent(parent)
  try: os.setpgid(0, 0)
  except OSError: pass
  close_inherited()
  # multiprocessing refuses children to a daemonic process; this one may start its own (a crash reducer runs each
  # candidate in one), which `start` makes daemonic in turn and the parent-death signal ends with it
  multiprocessing.current_process().daemon = False
  fn(*args)


def start(ctx: Any, fn: Callable[..., Any], args: tuple = (), name: str | None = None) -> Any:
  """A started multiprocessing.Process of ctx running fn(*args) as a child that dies with this process."""
  p = ctx.Process(target=child_main, args=(os.getpid(), fn, args), name=name, daemon=True)
  p.start()
  return p


def kill_tree(proc: Any, timeout: float = 5.0) -> int | None:
  """SIGKILL proc and its process group (everything it started), reap it; its exit code (None if it cannot be reaped)."""
  pid = getattr(proc, "pid", None)
  if pid is not None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
      try: kill()
      except (ProcessLookupError, PermissionError, OSError): pass
  try: proc.join(timeout)
  except Exception: pass
  return getattr(proc, "exitcode", None)


def cpu_count() -> int:
  """The CPUs this process may run on."""
  try: return max(1, len(os.sched_getaffinity(0)))
  except (AttributeError, OSError): return max(1, os.cpu_count() or 1)


def how_it_ended(exitcode: int | None) -> str:
  """A child's end in the words findings use: signalN, exitN."""
  if exitcode is None: return "unknown"
  return f"signal{-exitcode}" if exitcode < 0 else f"exit{exitcode}"

"""Load a graph from a Python file the user passes (an example, a FILE of the CLI) that defines `graph()`.

Such a file is executed: it is the user's program. What it does wrong is an InputError naming the file: an exception,
`sys.exit()` (tinyspec's exit code stays tinyspec's), or running longer than the load time limit (a `graph()` that
never returns; $TINYSPEC_LOAD_TIMEOUT seconds, 300 by default). Corpus entries are never loaded this way: they are
data (tinyspec.pyread).
"""
from __future__ import annotations

import contextlib
import os
import runpy
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from tinyspec.uop import UOp

LOAD_TIMEOUT = float(os.environ.get("TINYSPEC_LOAD_TIMEOUT") or 300.0)


class InputError(Exception):
  """A FILE that cannot be read as a graph; the message names the file and what was wrong."""


class _OutOfTime(BaseException):
  """Raised in the main thread when loading a file outlives its time (a BaseException: the file's own `except Exception`
  does not swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
  """Raise _OutOfTime in the body after `seconds` (main thread only; elsewhere no limit)."""
  if threading.current_thread() is not threading.main_thread() or seconds <= 0:
    yield
    return
  def ring(signum, frame): raise _OutOfTime()
  old = signal.signal(signal.SIGALRM, ring)
  signal.setitimer(signal.ITIMER_REAL, seconds)
  try: yield
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def run_user_code(path: str | Path, what: str, fn: Callable[[], Any]) -> Any:
  """fn(), with what the file does wrong turned into an InputError naming the file and `what` it was doing."""
  try:
    with time_limit(LOAD_TIMEOUT): return fn()
  except _OutOfTime: raise InputError(f"{path}: {what} did not finish within {LOAD_TIMEOUT:g} s ($TINYSPEC_LOAD_TIMEOUT)") from None
  except SystemExit as e: raise InputError(f"{path}: {what} called sys.exit({e.code!r})") from None
  except KeyboardInterrupt: raise
  except Exception as e: raise InputError(f"{path}: {what} raised {type(e).__name__}: {str(e)[:300]}") from None


def load_module(path: str | Path) -> dict[str, Any]:
  """The namespace of the file at path, executed once."""
  p = Path(path)
  if not p.is_file(): raise InputError(f"{p}: no such file")
  return run_user_code(p, "executing it", lambda: runpy.run_path(str(p)))


def load_graph(path: str | Path) -> UOp:
  """The UOp returned by the file's `graph()`."""
  return graph_of(load_module(path), path)


def graph_of(ns: dict[str, Any], path: str | Path) -> UOp:
  """The UOp returned by `graph()` of the namespace of the file at path (load_module's result)."""
  fn = ns.get("graph")
  if not callable(fn): raise InputError(f"{path}: defines no graph() function")
  root = run_user_code(path, "graph()", fn)
  if not isinstance(root, UOp): raise InputError(f"{path}: graph() returned {type(root).__name__}, not a UOp")
  return root

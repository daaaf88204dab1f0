"""Reducing crash and hang findings: every candidate runs in a child process with a timeout.

A worker that died (a segfault in generated code) or hung is a finding whose signature is how the process ended
(`signal11`, `timeout`, `exit3`). A candidate keeps it when a forked child checking the candidate ends the same way;
the reducing process itself never runs the candidate, so it survives every crash and the campaign goes on. The whole
reduction keeps to a time budget: a child is killed at the candidate timeout or when the budget runs out.
"""
from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import signal
import time
from typing import Callable

from fuzz.reduce.graph import Reducer
from fuzz.generate.case import Case
from tinyspec.runtime import procs
from tinyspec.spec import Stage


def _child(fn: Callable[[Case], object], case: Case) -> None:
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  faulthandler.disable()  # a crash is the expected outcome here, not a traceback to print
  try:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
  except OSError:
    pass
  try: fn(case)
  except BaseException:
    pass  # an exception is a finding of its own, not a dead worker
  os._exit(0)


def run_isolated(fn: Callable[[Case], object], case: Case, timeout: float) -> str:
  """How a forked child running fn(case) ended: `ok`, `timeout`, `signalN` or `exitN` (the campaign's words)."""
  p = procs.start(mp.get_context("fork"), _child, (fn, case))  # dies with this process; its kernel host with it
  p.join(max(0.0, timeout))
  if p.is_alive():
    procs.kill_tree(p)
    return "timeout"
  procs.kill_tree(p)  # what it started (a kernel host) goes with it
  return "ok" if p.exitcode == 0 else procs.how_it_ended(p.exitcode)


class IsolatedCrash:
  """fails(case) for a reducer: a child running check(case) ends as `why` (a timeout counts when it outlives
  `timeout`). Children never outlive the deadline."""

  def __init__(self, check: Callable[[Case], object], why: str, timeout: float, deadline: float):
    self.check, self.why, self.timeout, self.deadline = check, why, timeout, deadline
    self.runs = 0

  def __call__(self, case: Case) -> bool:
    left = self.deadline - time.monotonic()
    if left <= 0: return False
    t = min(self.timeout, left)
    if self.why == "timeout" and t < self.timeout: return False  # too little time left to tell a hang from a slow case
    self.runs += 1
    return run_isolated(self.check, case, t) == self.why


def reduce_crash(case: Case, check: Callable[[Case], object], why: str, timeout: float, max_seconds: float,
                 stage: Stage | None = None) -> tuple[Case, int]:
  """(the smallest case found whose check still ends its process as `why`, the children run). The case itself when
  it does not reproduce within the budget."""
  fails = IsolatedCrash(check, why, timeout, time.monotonic() + max_seconds)
  if not fails(case): return case, fails.runs
  st = stage or (Stage.TENSOR if case.kind == "tensor" else Stage.KERNEL_GRAPH)
  small = Reducer(fails, st, max_seconds=max_seconds).reduce(case)
  return small, fails.runs

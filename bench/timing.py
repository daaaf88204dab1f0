"""The timer the bench scripts share: the best of several runs, so a run slowed by other jobs on the machine
does not count."""
from __future__ import annotations

import time
from typing import Callable


def best(fn: Callable[[], object], repeat: int) -> float:
  """The shortest wall time of `repeat` calls of fn, in seconds."""
  ts = []
  for _ in range(repeat):
    t = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - t)
  return min(ts)

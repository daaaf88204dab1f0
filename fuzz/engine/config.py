"""A campaign's settings and their validation: what `tinyspec fuzz` and the API set, checked once before it starts."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from fuzz.engine.protocol import DEFAULT_TARGET, Target
from fuzz.engine.summary import Reported


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
  weights: dict[str, float] | None = None  # generator weights to start from (fuzz.generate.case.default_weights names)
  report: str | None = None             # a directory for the HTML report (fuzz.report.writer), kept up to date as the campaign runs
  target: str | Target = DEFAULT_TARGET  # what is fuzzed: a name of fuzz.engine.targets.TARGETS, or a Target
  prove_changed: bool = True            # prove the rules the pipeline swapped in before the first case (fuzz.check.changed_rules)
  scheduler: str | None = None          # a Dask scheduler's address: the cases run on its cluster (fuzz.engine.dask_runner), not here


class ConfigError(ValueError):
  """A campaign setting that cannot be used; the message names it."""


def _number(name: str, v: Any, positive: bool) -> None:
  if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (positive and v == 0):
    raise ConfigError(f"{name} must be a finite number {'above' if positive else 'of at least'} 0, not {v!r}")


def validate(cfg: CampaignConfig) -> None:
  """ConfigError naming the first limit of cfg that is not a usable number."""
  _number("--seconds", cfg.seconds, True)
  _number("--case-timeout", cfg.case_timeout, True)
  _number("reduce_seconds", cfg.reduce_seconds, False)
  for name, v, low in (("--workers", cfg.workers, 0), ("--seed", cfg.seed, 0), ("batch", cfg.batch, 1)):
    if isinstance(v, bool) or not isinstance(v, int) or v < low: raise ConfigError(f"{name} must be a whole number of at least {low}, not {v!r}")
  if cfg.max_cases is not None and (isinstance(cfg.max_cases, bool) or not isinstance(cfg.max_cases, int) or cfg.max_cases < 0):
    raise ConfigError(f"--max-cases must be a whole number of at least 0, not {cfg.max_cases!r}")
  if cfg.scheduler is not None and (not isinstance(cfg.scheduler, str) or not cfg.scheduler.strip()):
    raise ConfigError(f"--scheduler must be a Dask scheduler's address (tcp://HOST:8786), not {cfg.scheduler!r}")

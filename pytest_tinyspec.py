"""The pytest entry point of tinyspec's plugin (registered as `pytest11`): `pytest --tinyspec=check` holds every graph
tinygrad makes in each test to tinyspec's spec, `--tinyspec=eval` compares tinyspec's numbers with tinygrad's too.

This module imports nothing but pytest: pytest loads every installed plugin on every run, and switched off (the default)
this one must cost nothing and change nothing. Switched on, it registers tinyspec.bridge.tinygrad.pytest_plugin.
"""
from __future__ import annotations

import pytest

MODES = ("off", "check", "eval")
DEFAULT_MAX_ITERATIONS = 1 << 20


def pytest_addoption(parser: pytest.Parser) -> None:
  g = parser.getgroup("tinyspec", "tinyspec: check every graph tinygrad makes against tinyspec's spec")
  g.addoption("--tinyspec", choices=MODES, default="off",
              help="check: translate and spec-check every graph tinygrad makes in each test; eval: also compare tinyspec's "
                   "evaluator with tinygrad's numbers; off (default): do nothing")
  g.addoption("--tinyspec-fail", action="store_true", default=False,
              help="fail a test that passed when tinyspec finds a violation (or, with eval, a mismatch) in its graphs; "
                   "default: a report section per test and the session summary")
  g.addoption("--tinyspec-json", metavar="PATH", default=None, help="write the session's summary and per-test findings as JSON")
  g.addoption("--tinyspec-max-iterations", type=int, default=DEFAULT_MAX_ITERATIONS, metavar="N",
              help=f"eval: graphs whose evaluation would run a loop nest or make a tensor of more than N iterations or "
                   f"elements are not evaluated, counted as too big (default {DEFAULT_MAX_ITERATIONS})")


def pytest_configure(config: pytest.Config) -> None:
  mode = config.getoption("tinyspec")
  if mode == "off": return
  from tinyspec.bridge.tinygrad.pytest_plugin import Plugin
  config.pluginmanager.register(Plugin(mode=mode, fail=config.getoption("tinyspec_fail"), json_path=config.getoption("tinyspec_json"),
                                       max_iterations=config.getoption("tinyspec_max_iterations")), "tinyspec-tinygrad")

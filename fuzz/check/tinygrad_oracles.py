"""The oracles of `tinyspec fuzz --target tinygrad`: one program (its source, fuzz.generate.tinygrad_programs) run through
tinygrad 0.14 and through tinyspec, every difference a finding with a signature (oracle, stage, rule):

  ("spec", "tinygrad-<stage>", rule id)           a captured stage, translated, breaks tinyspec's spec
  ("parity", "tinygrad-after-<mode>", dtype)      tinyspec's evaluator on the translated callified graph, kernel graph with
                                                  kernel ASTs, kernel graph with programs (the modes) against tinygrad's
                                                  numbers: one finding, for the latest mode that differs (the bug is in
                                                  what tinygrad does after it)
  ("parity", "tinygrad-vs-tinyspec", dtype)       the program through tinyspec's frontend and reference evaluator against
                                                  tinygrad's numbers
  ("parity", "cpu-vs-python", dtype)              tinygrad on DEV=CPU against tinygrad on DEV=PYTHON (its emulator)
  ("error", "tinygrad-<device>", exception)       tinygrad raised on a program tinyspec runs

A parity finding of a program that overflows a signed integer (fuzz.check.exact_ints) has the oracle
"parity-signed-overflow" instead: tinygrad leaves signed overflow undefined, so that difference is kept apart from the
real bugs. What is not a finding is counted: nodes that do not translate, programs tinyspec's frontend rejects,
outputs whose dtype the two APIs choose differently.
"""
from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from fuzz.check.exact_ints import overflows_signed
from fuzz.check.oracles import compare
from fuzz.generate.tinygrad_programs import run_program

MODES = ("callified", "kernel ASTs", "programs")  # tinyspec.bridge.tinygrad.check's evaluations, in pipeline order


@dataclass
class TgFinding:
  oracle: str
  stage: str
  rule: str
  message: str
  blame = None            # no rewrite to blame: the finding is about tinygrad as a whole

  @property
  def signature(self) -> tuple[str, str, str]: return (self.oracle, self.stage, self.rule)

  def describe(self) -> str: return f"{'/'.join(self.signature)}: {self.message}"


def tinyspec_namespace() -> dict[str, Any]:
  from tinyspec.dtype import dtypes
  from tinyspec.frontend import Tensor, function
  return {"Tensor": Tensor, "dtypes": dtypes, "function": function}


def tinygrad_namespace() -> dict[str, Any]:
  import tinygrad
  return {"Tensor": tinygrad.Tensor, "dtypes": tinygrad.dtypes, "function": tinygrad.function}


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
  """Send file descriptor 2 to /dev/null: tinygrad's CPU backend runs clang, whose warnings would fill the status lines."""
  saved = os.dup(2)
  try:
    with open(os.devnull, "w") as null: os.dup2(null.fileno(), 2)
    yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)


def tinyspec_outputs(src: str) -> list[np.ndarray]:
  """The program through tinyspec's frontend, every output evaluated by the reference evaluator in one graph."""
  from tinyspec.frontend import inputs_of
  from tinyspec.semantics import evaluate
  ns = tinyspec_namespace()
  outs = run_program(src, ns)
  root = ns["Tensor"].sink(*outs)
  return [np.asarray(v) for v in evaluate(root, inputs_of(root))]


def tinygrad_outputs(src: str, device: str) -> list[np.ndarray]:
  """The program through tinygrad on device, realized (no capture)."""
  from tinygrad.helpers import Context
  with Context(DEV=device):
    return [np.asarray(t.numpy()) for t in run_program(src, tinygrad_namespace())]


def devices() -> tuple[str, str | None]:
  """(the device captured, the device it is compared with): CPU against PYTHON where clang exists, else PYTHON alone."""
  from tinyspec.bridge.tinygrad.capture import default_device
  main = default_device()
  return main, ("PYTHON" if main != "PYTHON" else None)


class TinygradChecker:
  """Every oracle on one program's source. counts: what is tallied, not reported (summed over every check)."""

  def __init__(self) -> None:
    self.counts: Counter = Counter()
    self.fired: Counter = Counter()      # per check: "tinygrad/<stage>:<rule>" for every spec rule a violation named

  def check(self, src: str) -> list[TgFinding]:
    from tinyspec.bridge.tinygrad.capture import capture
    from tinyspec.bridge.tinygrad.check import check_capture
    self.fired = Counter()
    found: dict[tuple, TgFinding] = {}
    def add(f: TgFinding) -> None: found.setdefault(f.signature, f)
    try: ts = tinyspec_outputs(src)
    except Exception:
      self.counts["rejected by tinyspec's frontend"] += 1
      ts = None
    main, other = devices()
    try: signed = overflows_signed(src)
    except Exception: signed = False
    parity = "parity-signed-overflow" if signed else "parity"
    if signed: self.counts["programs with signed overflow"] += 1
    try:
      with quiet_stderr(): rep = check_capture(capture(lambda: run_program(src, tinygrad_namespace()), device=main))
    except Exception as e:
      if ts is not None: add(TgFinding("error", f"tinygrad-{main}", type(e).__name__, f"tinygrad raised {type(e).__name__}: {e}"))
      else: self.counts["rejected by both"] += 1
      return list(found.values())
    want = rep.capture.outputs
    self._translation(rep)
    for stage, vs in rep.violations.items():
      for _, v in vs:
        add(TgFinding("spec", f"tinygrad-{stage}", v.rule, str(v)))
    if (f := self._stage_parity(rep, parity)) is not None: add(f)
    if ts is not None: self._compare(add, parity, "tinygrad-vs-tinyspec", ts, want, ("tinyspec", main))
    if other is not None:
      try:
        with quiet_stderr(): py = tinygrad_outputs(src, other)
      except Exception as e:
        add(TgFinding("error", f"tinygrad-{other}", type(e).__name__, f"tinygrad on {other} raised {type(e).__name__}: {e}"))
      else: self._compare(add, parity, f"{main.lower()}-vs-{other.lower()}", py, want, (other, main))
    return list(found.values())

  @staticmethod
  def _stage_parity(rep: Any, oracle: str) -> TgFinding | None:
    """One finding for the latest stage whose meaning (tinyspec's evaluator on it, translated) differs from tinygrad's
    numbers: every stage up to it still meant the right thing, so what broke the numbers came after it."""
    bad = [m for m in MODES if rep.ran.get(m) and rep.numbers.get(m) is not None]
    if not bad: return None
    mode, want = bad[-1], rep.capture.outputs
    i = rep.differs.get(mode)
    dt = want[i].dtype.name if i is not None and i < len(want) else "evaluator-error"
    agree = [m for m in MODES if rep.ran.get(m) and rep.numbers.get(m) is None]
    return TgFinding(oracle, f"tinygrad-after-{mode.replace(' ', '-')}", dt,
                     f"tinyspec's evaluator on tinygrad's {mode}: {rep.numbers[mode]}"
                     + (f" (the {', '.join(agree)} agree with tinygrad's numbers)" if agree else ""))

  def _translation(self, rep: Any) -> None:
    for stage, (done, total) in rep.translation.coverage().items():
      self.counts["nodes"] += total
      self.counts["untranslated nodes"] += total - done
      if total: self.fired[f"tinygrad/{stage}"] += 1
    for vs in rep.violations.values():
      for _, v in vs: self.fired[f"spec/{v.rule}"] += 1

  def _compare(self, add: Any, oracle: str, stage: str, got: list[np.ndarray], want: list[np.ndarray], names: tuple[str, str]) -> None:
    """One finding for the first output that differs (outputs whose dtypes the two sides choose differently are counted)."""
    for i, (g, w) in enumerate(zip(got, want)):
      if g.dtype != w.dtype or g.shape != w.shape:
        self.counts[f"outputs of another dtype or shape ({stage})"] += 1
        continue
      if (msg := compare(g, w)) is not None:
        add(TgFinding(oracle, stage, w.dtype.name, f"output {i} ({w.dtype.name}{list(w.shape)}): {names[0]} against {names[1]}: {msg}"))
        return

"""The tinygrad target (`tinyspec fuzz --target tinygrad`): random programs in the intersection of tinygrad's and
tinyspec's Tensor APIs (fuzz.generate.tinygrad_programs) run through tinygrad 0.14 and through tinyspec, every oracle of
fuzz.check.tinygrad_oracles checked, findings reduced by fuzz.reduce.tinygrad_program and stored as corpus entries
of KIND "tinygrad": PROGRAM holds the program's source (which replays it through both APIs, once it is checked to be in
the generator's grammar: fuzz.generate.tinygrad_programs.check_program_source), graph() the tensor graph
tinygrad built for it, translated to tinyspec's IR, and inputs() its data.

Coverage counts the generator's ops ("generate/<op>") and the captured stages that had nodes ("tinygrad/<stage>").
tinygrad is imported only when a case runs: without the tinygrad extra the target exists, and says why it cannot run.
"""
from __future__ import annotations

import inspect
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fuzz.check.tinygrad_oracles import TgFinding, TinygradChecker, quiet_stderr, tinygrad_namespace, tinyspec_namespace
from fuzz.corpus.store import Entry, render_entry, same_bug
from fuzz.generate import tinygrad_programs as gen
from fuzz.generate.strategies import Case
from fuzz.reduce.tinygrad_program import reduce_program
from tinyspec.loadfile import InputError
from tinyspec.uop import Ops, UOp

KIND = "tinygrad"
STAGES = ("tensor", "callified", "kernel_graph", "kernel", "program")  # tinyspec.bridge.tinygrad.translate.STAGES


def unavailable() -> str | None:
  """Why tinygrad cases cannot run here (the extra is missing or another tinygrad is installed), or None."""
  from tinyspec.bridge.tinygrad.version import installed_version, version_problem
  return version_problem(installed_version())


def translated_graph(src: str) -> tuple[UOp, dict[int, np.ndarray], str]:
  """(graph, inputs, what it is) for a corpus entry: the tensor graph tinygrad built, translated; where that does not
  translate, the graph tinyspec's frontend builds for the same source."""
  try:
    from tinyspec.bridge.tinygrad.capture import capture
    from tinyspec.bridge.tinygrad.translate import translate
    with quiet_stderr(): cap = capture(lambda: gen.run_program(src, tinygrad_namespace()))
    t = translate(cap, strict=False)
    g = t.graphs["tensor"][0][1] if t.graphs["tensor"] else None
    if g is not None: return g, dict(t.inputs), "tinygrad's tensor graph, translated"
  except Exception:
    pass
  try:
    from tinyspec.frontend import inputs_of
    ns = tinyspec_namespace()
    root = ns["Tensor"].sink(*gen.run_program(src, ns))
    return root, inputs_of(root), "tinyspec's frontend graph of the program"
  except Exception:
    return UOp(Ops.SINK), {}, "no graph: neither side builds one"


def replay_source(src: str, signature: Sequence[str], where: str = "<program>") -> tuple[bool, list[TgFinding]]:
  """(still fails, findings) of a stored program: every oracle on its source. The source runs (through tinygrad and
  tinyspec's frontend) only once it is checked to be in the generator's grammar (gen.check_program_source): a stored
  program computes with tensors and does nothing else."""
  try: gen.check_program_source(src, where)
  except gen.ProgramSourceError as e: raise InputError(str(e)) from None
  if (why := unavailable()) is not None: raise RuntimeError(f"cannot replay a tinygrad entry: {why}")
  findings = TinygradChecker().check(src)
  sig = tuple(signature)
  return any(same_bug(f.signature, sig) or same_bug(f.signature[:2], sig[:2]) for f in findings), findings


class TinygradSession:
  """The checker of one process (fuzz.engine.targets.Session)."""

  def __init__(self, cfg: Any):
    self.cfg = cfg
    self.checker = TinygradChecker()
    self.phase: Counter = Counter()
    self.begin: Any = lambda k: None

  def set_progress(self, begin: Any, at: Any) -> None: self.begin = begin

  def draw(self, seed: int, index: int, weights: dict[str, float]) -> gen.Program:
    t = time.perf_counter()
    p = gen.program_for(seed, index)
    self.phase["generate"] += time.perf_counter() - t
    return p

  def features(self, case: gen.Program) -> frozenset[str]: return gen.features(case)
  def size(self, case: gen.Program) -> int: return case.size()
  def counts(self) -> dict[str, int]: return dict(self.checker.counts)

  def check_batch(self, cases: Sequence[gen.Program]) -> list[tuple[list[TgFinding], dict[str, int]]]:
    out = []
    for k, p in enumerate(cases):
      self.begin(k)
      t = time.perf_counter()
      fs = self.checker.check(gen.source(p))
      self.phase["check"] += time.perf_counter() - t
      fired = Counter(f"generate/{op}" for op in p.ops())
      fired.update({k: v for k, v in self.checker.fired.items() if k.startswith("tinygrad/")})
      out.append((fs, dict(fired)))
    return out

  def shrink(self, case: gen.Program, f: TgFinding, seconds: float) -> tuple[gen.Program, TgFinding]:
    last: dict[str, TgFinding] = {}
    def fails(p: gen.Program) -> bool:
      for g in self.checker.check(gen.source(p)):
        if same_bug(g.signature, f.signature):
          last["f"] = g
          return True
      return False
    t = time.perf_counter()
    small = reduce_program(case, fails, seconds)
    if small is not case: fails(small)
    self.phase["reduce"] += time.perf_counter() - t
    return small, last.get("f", f)

  def shrink_crash(self, case: gen.Program, why: str, seconds: float) -> gen.Program: return case  # a crash is stored as found

  def _render(self, case: gen.Program, signature: tuple[str, str, str], message: str) -> str:
    src = gen.source(case)
    root, inputs, what = translated_graph(src)
    return render_entry(Case(root, inputs, {}, KIND, case.seed, case.index), signature, message=f"{message}\ngraph(): {what}", extra={"PROGRAM": src})

  def entry(self, case: gen.Program, f: TgFinding, signature: tuple[str, str, str]) -> tuple[str, str]:
    return self._render(case, signature, f.message), ""

  def crash_entry(self, case: gen.Program, signature: tuple[str, str, str], message: str) -> str:
    return self._render(case, signature, message)


class TinygradTarget:
  name = "tinygrad"
  epoch = 64                # no weights to steer: an epoch only spaces out the state file's saves
  kinds = (KIND,)
  reduces_crashes = False

  def session(self, cfg: Any) -> TinygradSession:
    if (why := unavailable()) is not None: raise RuntimeError(f"tinyspec fuzz --target tinygrad: {why}")
    return TinygradSession(cfg)

  def rules(self, cfg: Any) -> list[str]: return list(self.rule_locations(cfg))

  def rule_locations(self, cfg: Any) -> dict[str, tuple[str, str, str]]:
    where = f"{Path(inspect.getsourcefile(gen) or 'tinygrad_programs.py').name}:{inspect.getsourcelines(gen.program_for)[1]}"
    out = {f"generate/{op}": ("generate", op, where) for op in gen.OPS}
    out.update({f"tinygrad/{s}": ("tinygrad", s, "tinyspec/bridge/tinygrad/translate.py") for s in STAGES})
    return out

  def initial_weights(self, cfg: Any) -> dict[str, float]: return {}
  def steer(self, weights: dict[str, float], coverage: Any, epoch: list) -> dict[str, float]: return weights
  def batch_size(self, cfg: Any) -> int: return 1

  def describe(self, cfg: Any) -> tuple[tuple[str, ...], str]:
    return (("tinygrad CPU", "tinygrad PYTHON", "reference"),
            "random Tensor programs through tinygrad 0.14 (every stage captured, translated, spec-checked, evaluated) and tinyspec")

  def replay(self, entry: Entry, passes: Sequence | None = None) -> tuple[bool, list]:
    src = entry.meta.get("PROGRAM")
    if not isinstance(src, str): raise ValueError(f"{entry.path}: a tinygrad entry defines PROGRAM, the program's source")
    return replay_source(src, entry.signature, f"{entry.path}: PROGRAM")

  def draw(self, entry: Entry, out: str | Path, passes: Sequence | None = None, message: str = "") -> Any:
    """The entry's graph (tinygrad's tensor graph, translated), with the finding as its title."""
    from fuzz.report.pictures import Picture
    from tinyspec import viz
    title = f"{'/'.join(entry.signature)}: {message.splitlines()[0] if message else 'tinygrad program'}"
    viz.render(entry.case.root, out, title=title)
    return Picture(Path(out), "graph", "tinygrad's tensor graph of the program, translated: the finding is about tinygrad as a whole",
                   tuple(entry.signature))  # type: ignore[arg-type]

"""The tinygrad target (`tinyspec fuzz --target tinygrad`): random programs in the intersection of tinygrad's and
tinyspec's Tensor APIs (fuzz.generate.tinygrad_programs) run through tinygrad and through tinyspec, every oracle of
fuzz.check.tinygrad_oracles checked, findings reduced by fuzz.reduce.tinygrad_program and stored as corpus entries
of KIND "tinygrad": FOUND_ON names the tinygrad it was found on (found_on), PROGRAM holds the program's source (which
replays it through both APIs, once it is checked to be in the generator's grammar:
fuzz.generate.tinygrad_programs.check_program_source), graph() the tensor graph tinygrad built for it, translated to
tinyspec's IR, and inputs() its data.

Coverage counts the generator's ops ("generate/<op>") and the captured stages that had nodes ("tinygrad/<stage>").
tinygrad is imported only when a case runs: without the tinygrad extra the target exists, and says why it cannot run.
"""
from __future__ import annotations

import argparse
import ctypes
import faulthandler
import inspect
import multiprocessing as mp
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fuzz.check.blame import crash_site
from fuzz.check.tinygrad_oracles import TgFinding, TinygradChecker, quiet_stderr, tinygrad_namespace, tinyspec_namespace
from fuzz.corpus.store import Entry, StillFails, render_entry, same_bug
from fuzz.engine.config import ConfigError
from fuzz.generate import tinygrad_programs as gen
from fuzz.generate.case import Case
from fuzz.reduce.tinygrad_program import reduce_program
from fuzz.report.pictures import Picture
from tinyspec import viz
from tinyspec.frontend import inputs_of
from tinyspec.loadfile import InputError
from tinyspec.runtime import procs
from tinyspec.uop import Ops, UOp, from_rows, to_rows

KIND = "tinygrad"
STAGES = ("tensor", "callified", "kernel_graph", "kernel", "program")  # tinyspec.bridge.tinygrad.translate.STAGES


def unavailable() -> str | None:
  """Why tinygrad cases cannot run here (no tinygrad can be imported), or None. A tinygrad the bridge is not tested on
  runs (with one warning line)."""
  from tinyspec.bridge.tinygrad.compat import missing  # the bridge is the tinygrad extra: its package needs tinygrad to import
  return missing()


def found_on() -> str:
  """The tinygrad a finding is found on, as its corpus entry records it (FOUND_ON): tinyspec.bridge.tinygrad.compat's
  identity of the imported tinygrad (0.14.0, a9069c17, or "unknown (number, path)")."""
  from tinyspec.bridge.tinygrad.compat import identity  # the tinygrad extra, as in unavailable()
  return identity()


def translated_graph(src: str) -> tuple[UOp, dict[int, np.ndarray], str]:
  """(graph, inputs, what it is) for a corpus entry: the tensor graph tinygrad built, translated; where that does not
  translate, the graph tinyspec's frontend builds for the same source. Runs the program through tinygrad in this
  process: a campaign calls translated_graph_apart."""
  try:
    from tinyspec.bridge.tinygrad.capture import capture  # the tinygrad extra, as in unavailable()
    from tinyspec.bridge.tinygrad.translate import translate
    with quiet_stderr(): cap = capture(lambda: gen.run_program(src, tinygrad_namespace()))
    t = translate(cap, strict=False)
    g = t.graphs["tensor"][0][1] if t.graphs["tensor"] else None
    if g is not None: return g, dict(t.inputs), "tinygrad's tensor graph, translated"
  except Exception:
    pass
  return frontend_graph(src)


def frontend_graph(src: str, why: str = "") -> tuple[UOp, dict[int, np.ndarray], str]:
  """(graph, inputs, what it is): the graph tinyspec's frontend builds for the program (no kernel runs)."""
  try:
    ns = tinyspec_namespace()
    root = ns["Tensor"].sink(*gen.run_program(src, ns))
    return root, inputs_of(root), "tinyspec's frontend graph of the program" + why
  except Exception:
    return UOp(Ops.SINK), {}, "no graph: neither side builds one" + why


def _graph_child(graph_of: Any, src: str, conn: Any) -> None:
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  faulthandler.disable()
  root, inputs, what = graph_of(src)
  conn.send((to_rows(root), inputs, what))


def translated_graph_apart(src: str, timeout: float, graph_of: Any = translated_graph) -> tuple[UOp, dict[int, np.ndarray], str]:
  """graph_of(src) (translated_graph) in a child process: a program whose run kills tinygrad's process or does not
  end within timeout seconds (the very program of a crash or hang finding) gives tinyspec's frontend graph, and
  this process goes on."""
  ctx = mp.get_context("fork")
  conn, child = ctx.Pipe(duplex=False)
  procs.parent_only(conn)
  proc = procs.start(ctx, _graph_child, (graph_of, src, child), name="tinygrad-graph")
  child.close()
  got = None
  try:
    if conn.poll(timeout): got = conn.recv()
  except (EOFError, OSError):
    pass
  finally:
    procs.forget(conn)
    conn.close()
    end = procs.kill_tree(proc)
  if got is None:
    how = "did not finish" if end == -signal.SIGKILL else f"ended ({procs.how_it_ended(end)})"
    return frontend_graph(src, f" (tinygrad's run of it {how})")
  rows, inputs, what = got
  return from_rows(rows), inputs, what


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


def _checker_host(make_checker: Any, where: Any, conn: Any) -> None:
  """A child that checks programs: each source from conn, its findings, fired rules and counts sent back (the counts
  since the last answer), until EOF; where it is kept in `where`."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  faulthandler.disable()  # a segfault is a finding of the case, not a traceback dump
  checker = make_checker()
  def at(w: str) -> None: where.value = w.encode("utf-8", "replace")[:95]
  checker.at = at
  while True:
    try: src = conn.recv()
    except (EOFError, OSError): return
    before = Counter(checker.counts)
    try: fs = checker.check(src)
    except Exception as e:  # as the runner names a check that raises: Type@site
      site = crash_site(e.__traceback__)
      fs = [TgFinding("crash", "check", f"{type(e).__name__}@{site}", f"check raised {type(e).__name__} at {site}: {str(e)[:300]}")]
    at("")
    conn.send((fs, dict(checker.fired), dict(checker.counts - before)))


class TinygradSession:
  """The checker of one process (fuzz.engine.protocol.Session).

  tinygrad runs its kernels in the process that realizes a tensor. In a worker that is the worker, which the campaign
  watches; when the campaign's own process runs cases (--workers 0), `isolate` makes each case's check run in a child
  process with the case's deadline, so a kernel that kills its process or never returns is a ("crash", where,
  signalN) or ("hang", where, "timeout") finding of its case, where being the step it was in (tinygrad-CPU,
  tinyspec-evaluate, ...), and the campaign goes on. The child is reused from case to case (tinygrad's caches stay
  warm) until it dies or hangs, and dies with the campaign (tinyspec.runtime.procs)."""

  def __init__(self, cfg: Any):
    self.cfg = cfg
    self.make_checker: Any = TinygradChecker
    self.checker = self.make_checker()
    self.phase: Counter = Counter()
    self.begin: Any = lambda k: None
    self.isolated = False
    self.host: tuple[Any, Any, Any] | None = None

  def set_progress(self, begin: Any, at: Any) -> None:
    self.begin = begin
    self.checker.at = at

  def isolate(self) -> None: self.isolated = True

  def _host(self) -> tuple[Any, Any, Any]:
    """The child checking this session's programs (started on first use and again after a death or a hang)."""
    if self.host is None:
      ctx = mp.get_context("fork")  # the child keeps this process's imports; tinygrad holds no device state a fork breaks
      where = ctx.RawArray(ctypes.c_char, 96)
      conn, child = ctx.Pipe()
      procs.parent_only(conn)
      proc = procs.start(ctx, _checker_host, (self.make_checker, where, child), name="tinygrad-checker")
      child.close()
      self.host = (proc, conn, where)
    return self.host

  def close(self) -> int | None:
    """End the checking child, and whatever it started."""
    if self.host is not None:
      proc, conn, _ = self.host
      self.host = None
      procs.forget(conn)
      conn.close()
      return procs.kill_tree(proc)
    return None

  def _check(self, src: str) -> list[TgFinding]:
    if not self.isolated: return self.checker.check(src)
    proc, conn, where = self._host()
    timeout = float(self.cfg.case_timeout)
    got, hung, code = None, False, None
    try:
      conn.send(src)
      if conn.poll(timeout): got = conn.recv()
      else: hung = True
    except (EOFError, OSError):  # it died: how, once it is reaped
      proc.join(5)
      code = proc.exitcode
    except BaseException:  # ^C: the child and whatever it started go
      self.close()
      raise
    step = where.value.decode("utf-8", "replace") or "check"
    if got is not None:
      fs, fired, counts = got
      self.checker.fired = Counter(fired)
      self.checker.counts.update(counts)
      return fs
    end = procs.how_it_ended(code if code is not None else self.close())
    self.close()
    self.checker.fired = Counter()
    if not hung: return [TgFinding("crash", step, end, f"the process checking the program died in {step} ({end})")]
    return [TgFinding("hang", step, "timeout", f"the program's check did not finish in {step} within {timeout:g} s (killed)")]

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
      fs = self._check(gen.source(p))
      self.phase["check"] += time.perf_counter() - t
      fired = Counter(f"generate/{op}" for op in p.ops())
      fired.update({k: v for k, v in self.checker.fired.items() if k.startswith("tinygrad/")})
      out.append((fs, dict(fired)))
    return out

  def shrink(self, case: gen.Program, f: TgFinding, seconds: float) -> tuple[gen.Program, TgFinding]:
    fails = StillFails(lambda p: self._check(gen.source(p)), f)
    t = time.perf_counter()
    small = reduce_program(case, fails, seconds)
    if small is not case: fails(small)
    self.phase["reduce"] += time.perf_counter() - t
    return small, fails.last

  def shrink_crash(self, case: gen.Program, why: str, seconds: float) -> gen.Program: return case  # a crash is stored as found

  def _render(self, case: gen.Program, signature: tuple[str, str, str], message: str) -> str:
    src = gen.source(case)
    root, inputs, what = translated_graph_apart(src, float(self.cfg.case_timeout))
    return render_entry(Case(root, inputs, {}, KIND, case.seed, case.index), signature, message=f"{message}\ngraph(): {what}",
                        extra={"PROGRAM": src, "FOUND_ON": found_on()})

  def entry(self, case: gen.Program, f: TgFinding, signature: tuple[str, str, str]) -> tuple[str, str]:
    return self._render(case, signature, f.message), ""

  def crash_entry(self, case: gen.Program, signature: tuple[str, str, str], message: str) -> str:
    return self._render(case, signature, message)


class TinygradTarget:
  name = "tinygrad"
  epoch = 64                # no weights to steer: an epoch only spaces out the state file's saves
  kinds = (KIND,)
  reduces_crashes = False
  pipeline_options = False

  @classmethod
  def from_args(cls, args: argparse.Namespace) -> TinygradTarget:
    if (why := unavailable()) is not None: raise ConfigError(f"--target tinygrad: {why}")
    return cls()

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
    which = "tinygrad" if unavailable() else f"tinygrad {found_on()}"
    return (("tinygrad CPU", "tinygrad PYTHON", "reference"),
            f"random Tensor programs through {which} (every stage captured, translated, spec-checked, evaluated) and tinyspec")

  def replay(self, entry: Entry, passes: Sequence | None = None) -> tuple[bool, list]:
    src = entry.meta.get("PROGRAM")
    if not isinstance(src, str): raise ValueError(f"{entry.path}: a tinygrad entry defines PROGRAM, the program's source")
    return replay_source(src, entry.signature, f"{entry.path}: PROGRAM")

  def draw(self, entry: Entry, out: str | Path, passes: Sequence | None = None, message: str = "") -> Picture:
    """The entry's graph (tinygrad's tensor graph, translated), with the finding as its title."""
    title = f"{'/'.join(entry.signature)}: {message.splitlines()[0] if message else 'tinygrad program'}"
    viz.render(entry.case.root, out, title=title)
    return Picture(Path(out), "graph", "tinygrad's tensor graph of the program, translated: the finding is about tinygrad as a whole",
                   tuple(entry.signature))  # type: ignore[arg-type]

  def changed_rules(self, cfg: Any) -> list:
    """None: tinygrad's own rules are `tinyspec prove --target tinygrad`'s, not a swapped-in table's."""
    return []

"""The oracles of `tinyspec fuzz --target tinygrad`: one program (its source, fuzz.generate.tinygrad_programs) run through
tinygrad 0.14 and through tinyspec, at most one finding per kind of difference, each with a signature (oracle, stage,
rule).

The program has one meaning at every point of a chain, each computed independently:

  tinyspec    the program through tinyspec's own frontend and reference evaluator
  tensor      tinyspec's evaluator on tinygrad's tensor graph of it, translated
  callified   ... on tinygrad's callified graph (tinyspec.bridge.tinygrad.check's MODES)
  kernel ASTs ... on tinygrad's kernel graph, its kernels as their ASTs
  programs    ... on the same kernel graph, its kernels as their linearized programs
  CPU         tinygrad's own numbers on the captured device (DEV=CPU, NOOPT=1)

Where two neighbours of the chain differ, what lies between them changed the meaning (LINKS names it). A parity finding
is blamed on the first such link: ("parity", "tinygrad-<link>", the dtype the difference arose in: the output's, or the
narrowest small float its value passed through, arose_in), e.g. "tinygrad-render" when
tinyspec's evaluation of tinygrad's own programs agrees with every stage before it and the compiled C gives other
numbers, "tinygrad-frontend" when the two Tensor APIs build graphs that mean different things. A stage that did not
translate is passed over (the link spans it: "tinygrad-callify+schedule"). tinygrad on DEV=PYTHON (its emulator, default
opts) is compared with the last stage both devices share, the kernel ASTs: ("parity", "tinygrad-PYTHON", dtype) when it
differs from them and from the CPU (when it agrees with the CPU, the CPU finding already names the bug).

Other findings:
  ("spec", "tinygrad-<stage>", rule id)         a captured stage, translated, breaks tinyspec's spec
  ("error", "tinygrad-<device>", exception)     tinygrad raised on a program tinyspec's frontend runs
  ("error", "tinyspec-evaluate", exception)     tinyspec's evaluator raised on a translated stage

Two policies of tinygrad's are kept apart from the real bugs, by running the program on exact integers
(fuzz.check.exact_ints): a parity finding of a program that overflows a signed integer has the oracle
"parity-signed-overflow" (tinygrad leaves signed overflow undefined), and one where the implementation gives what a
literal its tensor's dtype cannot hold means under tinygrad's reading (the literal keeps its own value: uint8 `x // -1`
is -x), while tinyspec's reading (the literal converted to the dtype, 255) gives another answer, has the oracle
"parity-literal-policy". Their third part is the policy ("undefined", "weak-literal"), not the dtype.
What is not a finding is counted: nodes that do not translate, programs tinyspec's frontend rejects,
outputs whose dtype or shape the two APIs choose differently.
"""
from __future__ import annotations

import contextlib
import os
import types
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from fuzz.check.agree import compare
from fuzz.check.exact_ints import Run, run_exact
from fuzz.generate.tinygrad_programs import run_program
from tinyspec.dtype import DType, dtypes, significand_bits
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.semantics import evaluate

# what tinygrad does between one point of the chain and the next (the point it leads to is the key)
LINKS = {"tensor": "frontend", "callified": "callify", "kernel ASTs": "schedule", "programs": "codegen", "device": "render"}
SHARED = "kernel ASTs"  # the last point of the chain the PYTHON device shares with the captured one
# the last captured stage (tinyspec.bridge.tinygrad.translate.STAGES, in order) each link makes: a spec violation at or
# before it leaves that link's output undefined, so a difference of numbers there is the violation's consequence
STAGE_ORDER = ("tensor", "callified", "kernel_graph", "kernel", "program")
LINK_MAKES = {"frontend": "tensor", "callify": "callified", "schedule": "kernel", "codegen": "program", "render": None}


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
  return {"Tensor": Tensor, "dtypes": dtypes, "function": function}


def tinygrad_namespace() -> dict[str, Any]:
  """tinygrad's Tensor, function and dtypes; dtypes also under tinyspec's name where tinygrad's differs (its fp8e4m3 is
  tinyspec's float8_e4m3fn, as the bridge's dtype table says), so a program names every dtype one way for both APIs."""
  import tinygrad
  tg = _tinygrad_dtypes()
  names = {**tg, **{name: tg[attr] for name, attr in tinygrad_dtype_aliases().items()}}
  return {"Tensor": tinygrad.Tensor, "dtypes": types.SimpleNamespace(**names), "function": tinygrad.function}


def _tinygrad_dtypes() -> dict[str, Any]:
  import tinygrad
  return {n: d for n in dir(tinygrad.dtypes) if type(d := getattr(tinygrad.dtypes, n)).__name__ == "DType"}


def tinygrad_dtype_aliases() -> dict[str, str]:
  """{tinyspec's name: tinygrad's attribute name} for each dtype tinygrad names otherwise (float8_e4m3fn: fp8e4m3), by
  the bridge's dtype table."""
  from tinyspec.bridge.tinygrad.dtype_names import DTYPES
  tg = _tinygrad_dtypes()
  out: dict[str, str] = {}
  for attr, d in tg.items():
    if d.name in DTYPES and DTYPES[d.name].name not in tg: out.setdefault(DTYPES[d.name].name, attr)
  return out


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


def _same(a: np.ndarray | None, b: np.ndarray | None) -> str | None:
  """None when two meanings of one output agree (either missing counts as agreeing), else what differs."""
  if a is None or b is None: return None
  return compare(np.asarray(a).astype(b.dtype).reshape(b.shape), b)


@dataclass
class Point:
  """One point of the chain for one output: its name (a key of LINKS, or "tinyspec"), the value there (None: none) and
  how messages call it."""
  name: str
  value: np.ndarray | None
  label: str = ""

  def __post_init__(self) -> None: self.label = self.label or self.name


def shared_point(chain: list[Point]) -> Point:
  """The last point up to SHARED that has a value (the captured device's numbers when none has)."""
  k = next(j for j, p in enumerate(chain) if p.name == SHARED)
  return next((p for p in reversed(chain[:k + 1]) if p.value is not None), chain[-1])


def first_break(chain: list[Point]) -> tuple[int, int, str] | None:
  """(index of the last point that still agrees, index of the first that differs, what differs) for the first pair of
  neighbouring points with values that disagree; points without a value are passed over."""
  have = [k for k, p in enumerate(chain) if p.value is not None]
  for a, b in zip(have, have[1:]):
    if (msg := _same(chain[a].value, chain[b].value)) is not None: return a, b, msg
  return None


def downstream(link: str, illegal: int | None) -> bool:
  """Whether a finding blamed on link (one name, or several joined by "+") lies after the first stage a spec violation
  was found at (its index in STAGE_ORDER, None: no violation): the output of the link's last part is already undefined."""
  if illegal is None: return False
  made = LINK_MAKES[link.split("+")[-1]]
  return (len(STAGE_ORDER) if made is None else STAGE_ORDER.index(made)) >= illegal


def link_name(chain: list[Point], a: int, b: int) -> str:
  """What lies between points a and b: the links of every point after a up to b ("callify+schedule" over a gap)."""
  return "+".join(LINKS[p.name] for p in chain[a + 1:b + 1])


SIGNED_OVERFLOW = "parity-signed-overflow"
LITERAL_POLICY = "parity-literal-policy"
POLICY_RULE = {SIGNED_OVERFLOW: "undefined", LITERAL_POLICY: "weak-literal"}


def parity_rule(oracle: str, out: np.ndarray, through: Iterable[DType] = ()) -> str:
  """The third part of a parity signature: the dtype the difference arose in (`arose_in` of the differing output's dtype
  and the dtypes its value passed through); for a policy difference (a program that overflows a signed int, a literal
  its dtype cannot hold) the policy's name whatever the dtype: one policy, not one bug per dtype."""
  return POLICY_RULE.get(oracle) or arose_in(out.dtype.name, through)


def arose_in(out: str, through: Iterable[DType]) -> str:
  """The dtype a difference at an output of dtype `out` is keyed on: the narrowest small float (float16, bfloat16, fp8)
  its value passed through (fewest bits, then fewest significand bits, then by name), else `out` itself. A small float is where
  tinygrad computes in a dtype other than the one asked for (its CPU backend adds `__fp16` halves in float and rounds
  fp8 only to half), so a difference through one most likely arose there, and keyed by the output's float32 it would
  share a signature, hence a corpus entry, with an unrelated float32 bug and be hidden behind it."""
  small = [d for d in through if d.is_small_float]
  return min(small, key=lambda d: (d.itemsize, significand_bits(d), d.name)).name if small else out


def passed_through(u: Any) -> frozenset[DType]:
  """The tinyspec dtypes of every node of a tinygrad graph u (an output's uop in the tensor graph: what its value passed
  through), by the bridge's dtype table; weak and unnamed dtypes are left out."""
  from tinyspec.bridge.tinygrad.dtype_names import DTYPES
  return frozenset(DTYPES[x.dtype.name] for x in u.toposort() if getattr(x.dtype, "name", None) in DTYPES)


@dataclass
class ExactRuns:
  """The program on exact integers under both readings of its literals (fuzz.check.exact_ints)."""
  converted: Run      # tinyspec's reading: a literal is converted to its tensor's dtype
  weak: Run           # tinygrad's reading: a literal keeps its value, the result wraps

  @property
  def overflowed(self) -> bool: return self.converted.overflowed or self.weak.overflowed

  def weak_literal(self, i: int, got: np.ndarray) -> bool:
    """Whether output i is where the two readings differ and got is what tinygrad's reading gives."""
    if i >= len(self.weak.outputs) or i >= len(self.converted.outputs): return False
    w, c = self.weak.outputs[i], self.converted.outputs[i]
    if w.dtype != got.dtype or w.shape != got.shape: return False
    return _same(c, w) is not None and _same(got, w) is None


def exact_runs(src: str) -> ExactRuns | None:
  try: return ExactRuns(run_exact(src), run_exact(src, exact_literals=True))
  except Exception: return None


class TinygradChecker:
  """Every oracle on one program's source. counts: what is tallied, not reported (summed over every check)."""

  def __init__(self) -> None:
    self.counts: Counter = Counter()
    self.fired: Counter = Counter()      # per check: "tinygrad/<stage>:<rule>" for every spec rule a violation named
    self.at: Callable[[str], None] = lambda where: None  # told where a check is: a crash or hang there is named by it

  def check(self, src: str) -> list[TgFinding]:
    from tinyspec.bridge.tinygrad.capture import capture
    from tinyspec.bridge.tinygrad.check import check_capture
    self.fired = Counter()
    found: dict[tuple, TgFinding] = {}
    def add(f: TgFinding) -> None: found.setdefault(f.signature, f)
    self.at("tinyspec-frontend")
    try: ts: list[np.ndarray] | None = tinyspec_outputs(src)
    except Exception:
      self.counts["rejected by tinyspec's frontend"] += 1
      ts = None
    main, other = devices()
    self.at("exact-ints")
    exact = exact_runs(src)
    signed = exact is not None and exact.overflowed
    if signed: self.counts["programs with signed overflow"] += 1
    def oracle_for(i: int, got: np.ndarray) -> str:
      """How a difference at output i, where an implementation gives got, is reported."""
      if signed: return SIGNED_OVERFLOW
      return LITERAL_POLICY if exact is not None and exact.weak_literal(i, got) else "parity"
    try:
      self.at(f"tinygrad-{main}")
      with quiet_stderr(): cap = capture(lambda: run_program(src, tinygrad_namespace()), device=main)
      self.at("tinyspec-evaluate")
      with quiet_stderr(): rep = check_capture(cap)
    except Exception as e:
      if ts is not None: add(TgFinding("error", f"tinygrad-{main}", type(e).__name__, f"tinygrad raised {type(e).__name__}: {e}"))
      else: self.counts["rejected by both"] += 1
      return list(found.values())
    self._translation(rep)
    # a translation rule that raised on a node of a generated program (counted there as untranslatable): the bridge's bug
    for op, stage, e in rep.translation.rule_errors:
      add(TgFinding("error", f"tinyspec-translate-{stage}", f"{type(e).__name__}@{op}", f"the bridge's rule for {op} at {stage} raised "
                    f"{type(e).__name__}: {e}"))
    # a rule broken at one stage usually stays broken at the later ones, which are made from it: report the first
    shown: set[str] = set()
    for stage in STAGE_ORDER:
      for _, v in rep.violations.get(stage, []):
        if v.rule not in shown: add(TgFinding("spec", f"tinygrad-{stage}", v.rule, str(v)))
      shown |= {v.rule for _, v in rep.violations.get(stage, [])}
    for mode, e in rep.errors.items():
      add(TgFinding("error", "tinyspec-evaluate", type(e).__name__, f"tinyspec's evaluator on tinygrad's {mode}: {type(e).__name__}: {e}"))
    illegal = min((STAGE_ORDER.index(st) for st, vs in rep.violations.items() if vs), default=None)
    chains = self._chains(rep, ts, main)
    through = [passed_through(u) for u in rep.capture.tensor.src]
    if (f := self._chain_finding(chains, oracle_for, through)) is not None:
      if downstream(f.stage.removeprefix("tinygrad-"), illegal): self.counts["parity differences after a spec violation"] += 1
      else: add(f)
    if other is not None:
      self.at(f"tinygrad-{other}")
      try:
        with quiet_stderr(): py = tinygrad_outputs(src, other)
      except Exception as e:
        add(TgFinding("error", f"tinygrad-{other}", type(e).__name__, f"tinygrad on {other} raised {type(e).__name__}: {e}"))
      else:
        if (f := self._device_finding(chains, py, oracle_for, other, through)) is not None:
          if downstream("schedule", illegal): self.counts["parity differences after a spec violation"] += 1
          else: add(f)
    return list(found.values())

  def _chains(self, rep: Any, ts: list[np.ndarray] | None, device: str) -> list[list[Point]]:
    """Per output of tinygrad's: the chain of its meanings (tinyspec's frontend first, tinygrad's numbers last)."""
    from tinyspec.bridge.tinygrad.check import MODES
    want = rep.capture.outputs
    out = []
    for i, w in enumerate(want):
      t = None if ts is None or i >= len(ts) else ts[i]
      if t is not None and (t.dtype != w.dtype or t.shape != w.shape):
        self.counts["outputs of another dtype or shape (tinyspec's frontend)"] += 1
        t = None
      chain = [Point("tinyspec", t)]
      for m in MODES:
        vals = rep.values.get(m)
        chain.append(Point(m, None if vals is None or i >= len(vals) or vals[i] is None else np.asarray(vals[i])))
      chain.append(Point("device", w, f"tinygrad on {device}"))
      out.append(chain)
    return out

  @staticmethod
  def _chain_finding(chains: list[list[Point]], oracle_for: Callable[[int, np.ndarray], str],
                     through: Sequence[Iterable[DType]] = ()) -> TgFinding | None:
    """One finding for the output whose meaning changes earliest along the chain, blamed on that link. through: per
    output, the dtypes its value passed through (parity_rule)."""
    breaks = [(b, i, a, msg) for i, ch in enumerate(chains) if (fb := first_break(ch)) is not None for a, b, msg in [fb]]
    if not breaks: return None
    b, i, a, msg = min(breaks)
    ch, w = chains[i], chains[i][-1].value
    oracle = oracle_for(i, w)
    link = link_name(ch, a, b)
    agree = [p.label for p in ch[:a + 1] if p.value is not None]
    return TgFinding(oracle, f"tinygrad-{link}", parity_rule(oracle, w, through[i] if i < len(through) else ()),
                     f"output {i} ({w.dtype.name}{list(w.shape)}) changes meaning in tinygrad's {link}: {ch[a].label} against "
                     f"{ch[b].label}: {msg}" + (f" ({', '.join(agree)} agree)" if len(agree) > 1 else ""))

  @staticmethod
  def _device_finding(chains: list[list[Point]], got: list[np.ndarray], oracle_for: Callable[[int, np.ndarray], str],
                      device: str, through: Sequence[Iterable[DType]] = ()) -> TgFinding | None:
    """The other device against the last stage both devices share, for the first output where it differs from that
    stage and from the captured device's numbers."""
    for i, (ch, g) in enumerate(zip(chains, got)):
      w = ch[-1].value
      if g.dtype != w.dtype or g.shape != w.shape: continue
      shared = shared_point(ch)
      if (msg := _same(g, shared.value)) is not None and _same(g, w) is not None:
        oracle = oracle_for(i, g)
        return TgFinding(oracle, f"tinygrad-{device}", parity_rule(oracle, w, through[i] if i < len(through) else ()),
                         f"output {i} ({w.dtype.name}{list(w.shape)}): tinygrad on {device} against tinyspec's evaluation of "
                         f"tinygrad's {shared.name}: {msg}")
    return None

  def _translation(self, rep: Any) -> None:
    for stage, (done, total) in rep.translation.coverage().items():
      self.counts["nodes"] += total
      self.counts["untranslated nodes"] += total - done
      if total: self.fired[f"tinygrad/{stage}"] += 1
    for vs in rep.violations.values():
      for _, v in vs: self.fired[f"spec/{v.rule}"] += 1


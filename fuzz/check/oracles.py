"""Oracles: what a fuzz case must satisfy, and the Findings when it does not.

1. spec: the graph after every pass is legal at the pass's output stage; in per-rewrite mode every intermediate
   graph (after each single rule application) is legal at the input stage, the output stage, or their union (no
   node is flagged by both).
2. parity: evaluate before and after every pass agree, and the CPU and OpenCL results equal the reference
   evaluation of the input graph, compared by fuzz.check.agree (exact for ints and bools; floats within per-dtype
   tolerances, NaN equal to NaN, an infinity only to itself).
3. metamorphic: other lowering choices (precompiled instead of inlined value calls, realizing everything, other
   optimize actions) give the same results; a tensor case gives what its twin on the other side of "sharded against one
   device" gives (fuzz.check.multi_twin: a case with MULTIs against its one-device twin, an ordinary case against its
   inputs sharded over two devices); and for graphs with value calls, gradients taken through the calls equal
   gradients of the inlined graph (fuzz.check.gradient_oracle.call_gradient_mismatches).
   gradient: the gradient rules against central differences of the case's float64 twin, for tensor cases whose float
   values read float buffers (fuzz.check.numeric_grad): a finding ("gradient", "autograd", the blamed rule).
4. crash: an exception in a pass, the evaluator or a runtime, or a signal that kills a kernel (kernels run in the
   kernel host, tinyspec.runtime.host: the signature names the signal and the kernel); a kernel that outlives its
   timeout is a `hang` finding of the backend, named by the kernel.

The list of passes is a parameter, so a pipeline with one rule changed can be checked the same way.
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from fuzz.check.agree import compare, output_errors
from fuzz.check.backend_blame import LANG, narrow
from fuzz.check.blame import Blame, bisect, blame_at, crash_blame, crash_rule, crash_site, creator_on_path, local_change, run_steps
from fuzz.check.gradient_oracle import call_gradient_mismatches
from fuzz.check.multi_twin import multi_devices, one_device_twin, sharded_twin
from fuzz.check.numeric_grad import numeric_gradient_mismatches
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.generate.opts import every_opt, kernel_spots
from fuzz.generate.case import Case
from tinyspec.lower import pipeline as lower_pipeline
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.multi import MultiError
from tinyspec.lower.start import start_index
from tinyspec.rewrite import PatternMatcher
from tinyspec.runtime.host import Died, Raised, Skipped, shared
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, Violation, check
from tinyspec.spec.engine import check_body
from tinyspec.uop import UOp, is_value_call

UNSAFE = object()   # the reference of a kernel case fuzz.generate.kernel_safety rejects: it is checked no further


@dataclass
class Finding:
  """A failed oracle. The signature (oracle, stage, rule) identifies the bug: stage is a pass name, a backend or
  `input`; rule is the blamed rewrite rule, or the exception type of a crash, or the spec rule id."""
  oracle: str
  stage: str
  rule: str
  message: str
  blame: Blame | None = None
  options: dict[str, Any] = field(default_factory=dict)
  also: list[Finding] = field(default_factory=list)  # findings made while finding this one (blaming it raised)

  @property
  def signature(self) -> tuple[str, str, str]: return (self.oracle, self.stage, self.rule)

  @property
  def sig_str(self) -> str: return "/".join(self.signature)

  def describe(self) -> str:
    out = f"{self.sig_str}: {self.message}"
    if self.blame is not None: out += "\n" + self.blame.describe()
    return out


@dataclass
class Config:
  """What to check. passes None: the reference pipeline."""
  passes: Sequence[Pass] | None = None
  backends: tuple[str, ...] = ("reference",)
  per_rewrite: bool = False
  metamorphic: bool = True
  gradients: bool = True           # gradients through value calls == gradients of the inlined graph
  numeric_gradients: bool = True   # gradients == central differences in float64 (fuzz.check.numeric_grad)
  gradient_rules: PatternMatcher | None = None  # the gradient rule table both gradient oracles use (None: autograd's pm_gradient)
  blame: bool = True
  per_rewrite_passes: frozenset[str] | None = None  # the passes checked per rewrite (None: all)
  cc: str | None = None            # C compiler of the cpu backend (None: the runtime's default)
  kernel_timeout: float = 30.0     # seconds the kernels of one case may run in the kernel host before they count as a hang

  def pipeline(self) -> list[Pass]:
    return list(lower_pipeline.PASSES if self.passes is None else self.passes)


class Stats:
  """Time per phase and rule firings, summed over cases."""
  def __init__(self):
    self.phase: Counter = Counter()
    self.fired: Counter = Counter()
    self.twins: Counter = Counter()  # the sharded-vs-one-device relation (multi_twin): cases it applied to, and not
    self.cases = 0


class _Timer:
  def __init__(self, stats: Stats, phase: str): self.stats, self.phase = stats, phase
  def __enter__(self): self.t = time.perf_counter()
  def __exit__(self, *a): self.stats.phase[self.phase] += time.perf_counter() - self.t


class _Intermediates:
  """A pass's on_graph hook (tinyspec.lower.base.Trace) that checks the spec of every graph the pass's rewrites hold,
  after every rule application: each must be legal at the pass's input stage, its output stage, or their union (a node
  flagged by both). `first` is the first that is not, (k, violations). Verdicts are cached on the interned nodes, so
  each check only decides the nodes the application created."""

  def __init__(self, p: Pass, stats: Stats):
    self.a, self.b, self.stats = p.stage_in, p.stage_out, stats
    self.first: tuple[int, list[Violation]] | None = None
    self.legal_at = p.stage_out  # the stage the last graph was legal at: tried first, as the next graph is most often legal there too

  def __call__(self, k: int, current: Callable[[], UOp], body: bool) -> None:
    if self.first is not None: return
    with _Timer(self.stats, "spec"):
      check_at = check_body if body else check
      g = current()
      if not check_at(g, self.legal_at): return
      other = self.a if self.legal_at is self.b else self.b
      if not check_at(g, other):
        self.legal_at = other
        return
      if vs := union_violations(g, self.a, self.b, check_at): self.first = (k, vs)


def union_violations(root: UOp, a: Stage, b: Stage, check_at: Callable[[UOp, Stage], list[Violation]] = check) -> list[Violation]:
  """Violations of a graph that is legal neither at a, nor at b, nor at their union (a node flagged by both).
  check_at: check, or check_body for one CALL body checked on its own."""
  vb = check_at(root, b)
  if a is b or not vb: return vb
  flagged = {id(v.node) for v in check_at(root, a)}
  return [v for v in vb if id(v.node) in flagged]


def lower_options(opts: dict[str, Any], backend: str = "c") -> LowerOptions:
  kw = {k: v for k, v in opts.items() if k in ("callify", "realize", "opts", "int_dtype", "images")}
  return LowerOptions(**kw, backend=backend)


def _evaluate(root: UOp, inputs: dict[int, np.ndarray], runner: Any = None) -> Any:
  return evaluate(root, {k: v.copy() for k, v in inputs.items()}, kernel_runner=runner)


# ---- the checks ----
class Checker:
  """Runs every oracle on cases; collects coverage and phase times in `stats`."""

  def __init__(self, config: Config | None = None):
    self.config = config or Config()
    self.passes = self.config.pipeline()
    self.stats = Stats()
    self.rule_keys = {(p.name, r.name) for p in self.passes for r in p.rules()}
    self.lowered: dict[tuple[int, str], Any] = {}
    self.opencl_ok: bool | None = None
    # told which case of a batch starts a step (-1: a step of the whole batch) and where a case is (a pass, evaluate,
    # a backend's kernels): a worker shows both to the campaign, which times each step and names a hang or a crash
    # that kills the worker by where it was
    self.begin: Any = lambda k: None
    self.at: Any = lambda where: None
    self.stop_at: float | None = None  # time.monotonic() past which no case starts (its kernels skipped): unfinished
    self.unfinished: set[int] = set()

  def all_rules(self) -> list[str]:
    return sorted(f"{p}/{r}" for p, r in self.rule_keys)

  def check(self, case: Case) -> list[Finding]:
    """Every oracle on one case; at most one finding per chain (later passes of a broken graph say nothing new)."""
    return self.check_batch([case])[0]

  def check_batch(self, cases: Sequence[Case]) -> list[list[Finding]]:
    """Every oracle on each case. The CPU kernels of all cases are compiled together, in one compiler run.
    Afterwards `case_fired[i]` holds the rule firings of case i."""
    self.case_fired: list[Counter] = [Counter() for _ in cases]
    staged = []
    self.unfinished: set[int] = set()
    for i, c in enumerate(cases):
      if self.stop_at is not None and time.monotonic() >= self.stop_at:  # the campaign's time is up: not checked
        self.unfinished.add(i)
        staged.append(([], None, UNSAFE))
        continue
      self.begin(i)
      before = Counter(self.stats.fired)
      staged.append(self._reference(c))
      self.case_fired[i] += self.stats.fired - before
    cfg = self.config
    # every kernel runs in the kernel host (tinyspec.runtime.host): a kernel that crashes or hangs is a finding of its
    # case, and this process goes on. The CPU kernels of the batch are compiled together, in one compiler run.
    ran: dict[tuple[int, str], Any] = {}
    self.begin(-1)
    for b in cfg.backends:
      if b == "reference": continue
      if b not in ("cpu", "opencl"): raise ValueError(f"unknown backend {b!r}; one of reference, cpu, opencl")
      todo = [i for i, (fs, final, ref) in enumerate(staged) if not fs and final is not None and ref is not UNSAFE]
      if b == "opencl": todo = [i for i in todo if self._opencl_lowered(cases[i], staged[i][2], i) is not None]
      for i, outcome in zip(todo, self._on_host(b, [(self.lowered[(i, b)] if b == "opencl" else staged[i][1], cases[i]) for i in todo])):
        if isinstance(outcome, Skipped): self.unfinished.add(i)
        ran[(i, b)] = outcome
    out = []
    for i, (case, (findings, _, ref)) in enumerate(zip(cases, staged)):
      if i in self.unfinished:
        out.append([])
        continue
      if findings or ref is UNSAFE:
        out.append(findings)
        continue
      self.begin(i)
      before = Counter(self.stats.fired)
      for b in cfg.backends:
        if b == "reference": continue
        lowering = self.lowered.pop((i, "opencl-finding"), None) if b == "opencl" else None
        if (f := self.backend_finding(case, b, ran.get((i, b)), ref, lowering)) is not None:
          findings.append(f)
      if cfg.metamorphic and not findings:
        self.at("metamorphic")
        for alt in self.alternatives(case):
          _, f = self.chain(case, alt, ref, "metamorphic", full=False)
          if f is not None:
            findings.append(f)
            break
        if not findings and (f := self.multi_twin(case, ref)) is not None: findings.append(f)
      # on even when the lowering alternatives are off (reducing, replaying): a gradient finding has no other oracle
      if (cfg.gradients or cfg.numeric_gradients) and not findings:
        self.at("gradient")
        if (f := self.gradient(case)) is not None: findings.append(f)
      self.case_fired[i] += self.stats.fired - before
      out.append(findings)
    self.lowered.clear()
    return [fs + [a for f in fs for a in f.also] for fs in out]

  def _opencl_lowered(self, case: Case, ref: Any, i: int) -> UOp | None:
    """The case lowered for OpenCL (kept in self.lowered), or None when there is no OpenCL or the lowering is a finding."""
    if self.opencl_ok is None: self.opencl_ok = shared().available("opencl")[0]
    if not self.opencl_ok: return None
    g, f = self.chain(case, case.options, ref, "parity", full=False, backend="opencl")
    if f is not None:
      self.lowered[(i, "opencl-finding")] = f
      return None
    self.lowered[(i, "opencl")] = g
    return g

  def _on_host(self, backend: str, jobs: list[tuple[UOp, Case]]) -> list[Any]:
    """The host's outcome (tinyspec.runtime.host) of each (lowered graph, case) on backend."""
    if not jobs: return []
    self.at(f"{backend} kernels")
    with _Timer(self.stats, "run"):
      return shared().run(backend, [(g, c.inputs) for g, c in jobs], self.config.cc, self.config.kernel_timeout, self.stop_at)

  def _reference(self, case: Case) -> tuple[list[Finding], UOp | None, Any]:
    """The input check, the reference evaluation and the pass-by-pass chain: (findings, lowered graph, reference)."""
    self.stats.cases += 1
    st = self.stats
    with _Timer(st, "spec"):
      vs = check(case.root, Stage.TENSOR if case.kind == "tensor" else Stage.KERNEL_GRAPH)
    if vs:
      return [Finding("input", "generator", vs[0].rule, f"the generated graph is not legal: {vs[0]}", options=case.options)], None, None
    if case.kind != "tensor" and kernel_unsafe_reason(case.root, case.inputs) is not None:
      # undefined behaviour or float rounding (a reducer move can bring either in): no result of it is a finding
      return [], None, UNSAFE
    self.at("evaluate")
    try:
      with _Timer(st, "evaluate"): ref = _evaluate(case.root, case.inputs)
    except Exception as e:
      msg = f"evaluating the input graph raised {type(e).__name__}: {e}"
      return [Finding("crash", "evaluate", type(e).__name__, msg, options=case.options)], None, None
    final, f = self.chain(case, case.options, ref, "parity", full=True)
    return ([f] if f is not None else []), final, ref

  def gradient(self, case: Case) -> Finding | None:
    """The gradient oracles on a tensor case: through its value calls against its inlined graph, then the rules against
    central differences (fuzz.check.numeric_grad). The first finding."""
    if case.kind != "tensor": return None
    cfg = self.config
    if cfg.gradients and any(is_value_call(u) for u in case.root.toposort()):
      try:
        with _Timer(self.stats, "gradient"):
          bad = call_gradient_mismatches(case.root, case.copy_inputs(), seed=case.index or 0, rules=cfg.gradient_rules)
      except Exception as e:
        return Finding("crash", "gradient", type(e).__name__, f"gradients of the graph raised {type(e).__name__}: {e}", options=case.options)
      if bad: return Finding("metamorphic", "gradient", "through_call_vs_inlined", "; ".join(bad[:3]), options=case.options)
    return self.numeric_gradient(case) if cfg.numeric_gradients else None

  def numeric_gradient(self, case: Case) -> Finding | None:
    """The gradient rules against central differences: a finding ("gradient", "autograd", the rule blamed, or "-")."""
    try:
      # differences of edge values (inf, NaN, near the float64 max) overflow by design and are judged by isfinite: no
      # RuntimeWarning per case in an overnight run's log
      with _Timer(self.stats, "numeric gradient"), np.errstate(all="ignore"):
        bad = numeric_gradient_mismatches(case.root, case.copy_inputs(), seed=case.index or 0, rules=self.config.gradient_rules)
    except Exception as e:
      return Finding("crash", "autograd", type(e).__name__, f"numeric gradients of the graph raised {type(e).__name__}: {e}", options=case.options)
    if not bad: return None
    return Finding("gradient", "autograd", bad[0].rule or "-", "; ".join(m.describe() for m in bad[:3]), options=case.options)

  def alternatives(self, case: Case) -> list[dict[str, Any]]:
    """Other lowering choices that must give the same results: one per case, chosen by the case number."""
    o = case.options
    if case.kind != "tensor":
      # an action that applies to a range the kernels hold (a reduce range's split too), picked by the case number
      acts = every_opt(kernel_spots(case.root))
      alt = acts[(case.index or 0) % len(acts)] if acts else ("split", 0, 2)
      return [{**o, "opts": None if o.get("opts") else (alt,)}]
    alts = [{**o, "callify": "precompile" if o.get("callify") == "inline" else "inline"},
            {**o, "realize": "all" if o.get("realize") == "minimal" else "minimal"},
            {**o, "opts": None if o.get("opts") else (("unroll", 0),)},
            {**o, "images": not o.get("images")}]
    return [alts[(case.index or 0) % len(alts)]]

  def multi_twin(self, case: Case, ref: Any) -> Finding | None:
    """The sharded-vs-one-device relation (fuzz.check.multi_twin) on a tensor case: its twin on the other side, lowered
    once and evaluated on the reference, gives the case's results. A difference is blamed as the lowering's parity is:
    ("metamorphic", "multi", rule) of the multi pass's rule application that first changed the twin's results,
    ("metamorphic", "multi", the twin's name) when none did; one another pass made is counted, not reported. The cases
    it applies to, and not, are counted in stats.twins."""
    if case.kind != "tensor": return None
    self.at("multi twin")
    if multi_devices(case.root):
      name, twin = "one_device_twin", one_device_twin(case.root)
    else:
      name, twin = "sharded_twin", sharded_twin(case.root, case.index or 0)
      if twin is None:
        self.stats.twins["sharded_twin:not_applicable"] += 1
        return None
    if (why := self._twin_refused(twin)) is not None:
      self.stats.twins[f"{name}:{why}"] += 1
      return None
    self.stats.twins[name] += 1
    with _Timer(self.stats, "multi twin"):
      _, f = self.chain(Case(twin, case.inputs, case.options, "tensor", case.seed, case.index, case.features), case.options, ref, "metamorphic",
                        full=False)
    if f is None: return None
    f.message = f"the case's {name.replace('_', ' ')}: {f.message}"
    unblamed = f.oracle == "metamorphic" and (f.stage == "pipeline" or f.rule in ("-", "<outside rules>"))
    if f.stage != "multi" and not unblamed:
      # another pass's bug, which the twin reached: the graph that shows it is the twin, which neither the reducer nor a
      # replay (both without the metamorphic oracles) checks, so it is counted here and left to that pass's own oracles
      self.stats.twins[f"{name}:elsewhere:{f.sig_str}"] += 1
      return None
    # blamed on a rule of the multi pass, the difference is that rule's, as any metamorphic one is (a parity finding of
    # the same bug is the same entry); unblamed, it is the relation's
    if unblamed: return Finding("metamorphic", "multi", name, f.message, f.blame, f.options, f.also)
    return f

  def _twin_refused(self, twin: UOp) -> str | None:
    """Why the relation does not apply to a twin (illegal at TENSOR, or a MultiError of the multi pass), or None."""
    if check(twin, Stage.TENSOR): return "illegal"
    multi = next((p for p in self.passes if p.name == "multi"), None)
    if multi is None: return None
    try: multi.run(twin, lower_options({}))
    except MultiError: return "multi_error"
    except Exception: return None  # a crash of the pass: the chain finds it, blamed
    return None

  def chain(self, case: Case, opts: dict[str, Any], ref: Any, label: str, full: bool, backend: str = "c") -> tuple[UOp | None, Finding | None]:
    """Lower case.root pass by pass with `opts`. full: check spec and parity after each pass; else only the final
    result, and on a difference go back pass by pass to find where it appeared."""
    st, cfg = self.stats, self.config
    lo = lower_options(opts, backend)
    g, prev = case.root, ref
    errs = output_errors(case.root)  # the roundings the case's results went through: their tolerances (fuzz.check.agree)
    outs: list[tuple[Pass, UOp, UOp]] = []
    for p in self.passes[start_index(self.passes, case.root, case.kind):]:
      self.at(p.name)
      def obs(rule, before, after, _p=p.name): st.fired[(_p, rule.name)] += 1
      watch = _Intermediates(p, st) if full and cfg.per_rewrite and (cfg.per_rewrite_passes is None or p.name in cfg.per_rewrite_passes) else None
      trace = Trace(observer=obs, on_graph=watch)
      try:
        with _Timer(st, "lower"): out, steps = run_steps(p, g, lo, None, trace=trace)
      except Exception as e:
        return None, self._crash_finding(p, g, lo, e, opts)
      with _Timer(st, "spec"): vs = check(out, p.stage_out)
      if vs: return None, self._spec_finding(p, g, out, lo, vs, opts, case.inputs)
      if watch is not None and watch.first is not None: return None, self._per_rewrite(p, g, lo, steps, opts, *watch.first)
      # prev is always the evaluation of g on these inputs (the first, ref, is case.root's): a pass that changed nothing
      # gives back g itself (nodes are interned), whose values prev already holds, so it is not evaluated again (over a third of
      # the passes of a case, often the images, scatter and lower_reduce passes)
      if full and out is not g:
        try:
          with _Timer(st, "evaluate"): vals = _evaluate(out, case.inputs)
        except Exception as e:
          return None, Finding("crash", f"evaluate@{p.name}", type(e).__name__, f"evaluating the graph after {p.name} raised {type(e).__name__}: {e}",
                               options=opts)
        if (msg := compare(prev, vals, errs)) is not None: return None, self._parity_finding(p, g, lo, prev, case, msg, opts, label)
        prev = vals
      outs.append((p, g, out))
      g = out
    if not full:
      try:
        with _Timer(st, "evaluate"): vals = _evaluate(g, case.inputs)
      except Exception as e:
        msg = f"evaluating the lowered graph raised {type(e).__name__}: {e}"
        return None, Finding("crash", "evaluate@final", type(e).__name__, msg, options=opts)
      if (msg := compare(ref, vals, errs)) is not None:
        prev = ref
        for p, gin, gout in outs:
          try: v = _evaluate(gout, case.inputs)
          except Exception: v = None
          if v is None or compare(prev, v, errs) is not None: return None, self._parity_finding(p, gin, lo, prev, case, msg, opts, label)
          prev = v
        return None, Finding(label, "pipeline", "-", f"with {opts}: {msg}", options=opts)
    return g, None

  def _blame(self, find: Any, opts: dict) -> tuple[Blame | None, list[Finding]]:
    """find()'s blame, and a finding of its own when blaming raised: the failure is still stored, unblamed."""
    self.at("blame")
    try: return find(), []
    except Exception as e:
      site = crash_site(sys.exc_info()[2])
      return None, [Finding("crash", "blame", f"{type(e).__name__}@{site}", f"blaming the finding raised {type(e).__name__} at {site}: "
                            f"{str(e)[:300]}", options=opts)]

  def _crash_finding(self, p: Pass, g: UOp, lo: LowerOptions, e: Exception, opts: dict) -> Finding:
    """Pass p raised e on g: blamed on the rule application during which it did (fuzz.check.blame.crash_blame)."""
    rule = crash_rule(p, e.__traceback__) or type(e).__name__
    b: Blame | None = None
    also: list[Finding] = []
    if self.config.blame:
      b, also = self._blame(lambda: crash_blame(p, g, lo, type(e)), opts)
      if b is not None and b.rule != "<outside rules>": rule = b.rule
    return Finding("crash", p.name, rule, f"pass {p.name} raised {type(e).__name__}: {e}", b, opts, also)

  def _spec_finding(self, p: Pass, g: UOp, out: UOp, lo: LowerOptions, vs: list[Violation], opts: dict, inputs: dict) -> Finding:
    b: Blame | None = None
    also: list[Finding] = []
    if self.config.blame:
      def find() -> Blame | None:
        b = local_change(p, g, lo, inputs)
        if b is None: b = creator_on_path(p, g, out, lo, vs[0].path)
        if b is None: b = bisect(p, g, lo, lambda x: bool(union_violations(x, p.stage_in, p.stage_out)))
        return b
      b, also = self._blame(find, opts)
    rule = b.rule if b is not None else f"spec:{vs[0].rule}"
    return Finding("spec", p.name, rule, f"after {p.name}: {vs[0]}", b, opts, also)

  def _per_rewrite(self, p: Pass, g: UOp, lo: LowerOptions, steps: int, opts: dict, k: int, vs: list[Violation]) -> Finding:
    """The finding of an intermediate graph of p, after k rule applications, that broke the spec (see _Intermediates)."""
    b, also = self._blame(lambda: blame_at(p, g, lo, k, steps), opts)
    where = "before any rule application" if k == 0 else f"after rule application {k}"
    return Finding("spec", p.name, b.rule if b is not None else f"spec:{vs[0].rule}", f"{where} of {p.name}: {vs[0]}", b, opts, also)

  def _parity_finding(self, p: Pass, g: UOp, lo: LowerOptions, prev: Any, case: Case, msg: str, opts: dict, label: str) -> Finding:
    b: Blame | None = None
    also: list[Finding] = []
    if self.config.blame:
      errs = output_errors(case.root)
      def find() -> Blame | None:
        b = local_change(p, g, lo, case.inputs, max(errs, default=None))
        if b is None: b = bisect(p, g, lo, lambda x: compare(prev, _evaluate(x, case.inputs), errs) is not None)
        return b
      b, also = self._blame(find, opts)
    rule = b.rule if b is not None else "-"
    return Finding(label, p.name, rule, f"{p.name} changed the results: {msg}", b, opts, also)

  def backend_finding(self, case: Case, name: str, outcome: Any, ref: Any, lowering: Finding | None = None) -> Finding | None:
    """What is wrong with a runtime's outcome (tinyspec.runtime.host) on the lowered graph, against the reference
    evaluation of the input graph: a crash (the runtime raised, or a signal killed its kernel), a hang, a difference."""
    if isinstance(outcome, Skipped): return None
    if lowering is not None: return lowering
    if outcome is None: return None
    if isinstance(outcome, Raised):
      return Finding("crash", name, outcome.type, f"the {name} runtime raised {outcome.type}: {outcome.message[:400]}", options=case.options)
    if isinstance(outcome, Died):
      if outcome.why == "timeout": return Finding("hang", name, outcome.kernel, f"the {name} {outcome.text}", options=case.options)
      return Finding("crash", name, f"{outcome.why}@{outcome.kernel}", f"the {name} {outcome.text}", options=case.options)
    if (msg := compare(ref, outcome.values, output_errors(case.root))) is not None:
      # narrowed to the kernel, the rendered construct and the renderer method (fuzz.check.backend_blame)
      lo = lower_options(case.options, LANG[name])
      try: n = narrow(self.passes, name, case.root, case.kind, case.inputs, lo, self.config.cc, self.config.kernel_timeout)
      except Exception: n = None  # narrowing that fails leaves the finding as the backend's
      if n is not None: return Finding("parity", "render", n.rule, f"{name} against the reference: {msg}; {n.message()}", options=case.options)
      return Finding("parity", name, "-", f"{name} against the reference: {msg}", options=case.options)
    return None


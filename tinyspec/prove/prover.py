"""The rule prover behind `tinyspec prove`: every integer and boolean rewrite rule of the lowering, proven sound by z3.

For each rule and each dtype (int32 and int64 with wrap-around, `index` unbounded), the rule's pattern is built into
many concrete instances (tinyspec.prove.templates) whose leaves are symbolic slots with chosen bounds, and the rule's own
function is run on each. Where it rewrites, both sides are translated to z3 with the evaluator's meaning (C's
truncating IDIV and MOD, wrap-around, the evaluator's values at division by zero). Instances that give the same
rewrite up to the slots' bounds are one query: is there a value of the slots, inside the bounds of one of the
instances (what the rule's guard read through vmin and vmax), where the two sides differ?

A query has up to three equivalent encodings, tried the likeliest-fast first (`encodings`): the native one of
tinyspec.prove.evalsem (bit vectors of the dtype's width, index as z3 Int, loads from arrays), and, for expressions over slots
alone, the exact-integer ones of tinyspec.prove.exact (Ints with explicit wraps, or bit vectors wide enough that nothing
wraps). Each is first simplified by z3 (most rewrites of a sound rule simplify to the same term), then solved
with the timeout; a query no encoding decides is asked again with the retry timeout.

`index` is an unbounded integer (docs/spec.md). Its bitwise ops and shifts, which the spec defines through the
evaluator's int64, are proven as two's complement of the exact value: the int64 result wherever the values fit in
int64, and the same value lowered programs compute in int32 or int64 where those hold them (INDEX_MODEL, printed by
`tinyspec prove`).

No query is written per rule: a new rule is proven by the same code. A rule is
  proven  when every rewrite it made is unsat under its precondition (and it made at least one),
  refuted when one is sat: the model is a counterexample, checked again with tinyspec.semantics.evaluate,
  unknown when a query stayed undecided after the retry, the rule never fired on its instances, or its pattern
          cannot be built (the reason is given). Unknown is never counted as proven.
Constants a rule reads are drawn from representative values and values next to the leaves' bounds, so "proven"
means: for every slot value within the bounds, for the constants and bounds configurations tried.
With jobs > 1 (`prove_rules`) the (rule, dtype) pairs run in forked worker processes; the results are the same.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, TextIO

import numpy as np
import z3

from tinyspec.prove.templates import Instance, NoInstance, Slot, instantiate
from tinyspec.prove.exact import Analysis, ExactForm, Unsupported, analyze
from tinyspec.prove.evalsem import VALUE_OPS, EvalTranslator, defined, differ, model_int
from tinyspec.dtype import DType, dtypes
from tinyspec.lower.ordering import ORDER_TABLES
from tinyspec.lower.pipeline import PASSES
from tinyspec.ops.spelling import INFIX
from tinyspec.rewrite import Rule
from tinyspec.semantics import evaluate
from tinyspec.uop import AxisType, Ops, UOp, substitute


DEFAULT_DTYPES = (dtypes.int32, dtypes.int64, dtypes.index)
INDEX_MODEL = ("index is an unbounded integer; its AND, OR, XOR and shifts act on the two's complement of the exact value "
               "(the int64 result wherever the values fit in int64), shift counts taken modulo 64")
GATE_OPS = frozenset({Ops.LOAD, Ops.STORE})


@dataclass(frozen=True)
class RuleRef:
  """A rule and where it lives: the pass and the rule table."""
  pass_name: str
  table: str
  rule: Rule

  @property
  def name(self) -> str: return self.rule.name
  @property
  def qualname(self) -> str: return f"{self.pass_name}/{self.rule.name}"


def in_scope(ref: RuleRef) -> bool:
  """A rule that rewrites integer or boolean expressions: every rule of simplify, and any rule of another pass whose
  pattern's root is an ALU op or a CAST, or that matches any node of an integer dtype. The tables that move order onto
  a store's target (lower.ordering) rewrite no value: there is nothing for z3 to prove."""
  if ref.table in ORDER_TABLES: return False
  if ref.pass_name == "simplify": return True
  pat = ref.rule.pat
  if pat.op is None: return pat.dtype is not None and all(d.kind in "iuxb" for d in pat.dtype)
  return bool(pat.op & VALUE_OPS)


def expression_rules(passes: Sequence | None = None) -> list[RuleRef]:
  """The rules in scope, from every pass's tables, each once (a table reused by another pass is the first pass's)."""
  if passes is None: passes = PASSES
  seen: set[tuple[str, int]] = set()
  out: list[RuleRef] = []
  for p in passes:
    for pm in p.tables.values():
      for r in pm.rules:
        key = (r.name, id(r.fn))
        if key in seen: continue
        seen.add(key)
        ref = RuleRef(p.name, pm.name or "-", r)
        if in_scope(ref): out.append(ref)
  return out


# ---- results ----
@dataclass
class Counterexample:
  dtype: DType
  before: UOp                       # the rewritten node, slots replaced by the counterexample's constants
  after: UOp                        # what the rule made of it
  slots: list[tuple[Slot, int | bool]]
  lhs: int | bool | None            # the values of the two sides
  rhs: int | bool | None
  confirmed: str                    # how the difference was checked: "evaluate" or "z3 model"
  corpus_path: str | None = None
  over_slots: UOp | None = None     # the rewritten node over its slots (canonical_slot): a slot whose value equals a
                                    # constant of the rule stays apart from it

  def describe(self) -> str:
    vals = ", ".join(f"s{s.k}={v} (in [{s.lo}, {s.hi}])" if s.dtype.kind != "b" else f"s{s.k}={v}" for s, v in self.slots) or "no variables"
    return (f"{self.dtype.name}: {vals}: {_expr(self.before)} = {self.lhs} but the rewrite {_expr(self.after)} = {self.rhs}"
            f" (checked by {self.confirmed})")


@dataclass
class DtypeResult:
  dtype: DType
  instances: int = 0
  fired: int = 0
  queries: int = 0
  unknown: int = 0
  refuted: Counterexample | None = None
  reasons: Counter = field(default_factory=Counter)
  seconds: float = 0.0

  @property
  def status(self) -> str:
    if self.refuted is not None: return "refuted"
    if self.unknown or self.fired == 0: return "unknown"
    return "proven"


@dataclass
class RuleResult:
  ref: RuleRef
  per_dtype: list[DtypeResult] = field(default_factory=list)
  reason: str = ""
  seconds: float = 0.0

  @property
  def status(self) -> str:
    if self.reason: return "unknown"
    if any(d.status == "refuted" for d in self.per_dtype): return "refuted"
    if not all(d.fired for d in self.per_dtype): return "unknown"
    if any(d.unknown for d in self.per_dtype): return "unknown"
    return "proven"

  @property
  def counterexample(self) -> Counterexample | None:
    return next((d.refuted for d in self.per_dtype if d.refuted is not None), None)

  def why_unknown(self) -> str:
    if self.reason: return self.reason
    if not any(d.fired for d in self.per_dtype):
      top = Counter()
      for d in self.per_dtype: top.update(d.reasons)
      n = sum(d.instances for d in self.per_dtype)
      detail = "; ".join(f"{k} x{v}" for k, v in top.most_common(2))
      return f"the rule never rewrote any of {n} instances of its pattern" + (f" ({detail})" if detail else "")
    if none := [d.dtype.name for d in self.per_dtype if not d.fired]:
      return f"the rule never rewrote an instance of its pattern at {', '.join(none)}, so nothing is proven there"
    t = [f"{d.dtype.name}: {d.unknown}/{d.queries}" for d in self.per_dtype if d.unknown]
    return f"z3 gave no answer within the timeout on {', '.join(t)} queries"

  def line(self) -> str:
    st = self.status
    counts = ", ".join(f"{d.dtype.name} {d.fired}/{d.queries}" for d in self.per_dtype)
    head = f"{st:8} {self.ref.qualname}"
    if st == "proven": return f"{head}  [rewrites/queries: {counts}]  {self.ref.rule.location}"
    if st == "refuted":
      cx = self.counterexample
      assert cx is not None
      where = f"\n         written to {cx.corpus_path}" if cx.corpus_path else ""
      return f"{head}  {self.ref.rule.location}\n         counterexample {cx.describe()}{where}"
    return f"{head}  {self.ref.rule.location}\n         reason: {self.why_unknown()}"


def _expr(u: UOp, depth: int = 6) -> str:
  """A short infix rendering of an integer expression, each op spelled as C spells it (IDIV is `/`, truncating)."""
  if depth == 0: return "..."
  if u.op is Ops.CONST: return repr(u.arg)
  if u.op is Ops.DETACH and isinstance(u.arg, tuple) and u.arg[:1] == ("slot",): return f"s{u.arg[1]}"
  if u.op is Ops.DEFINE_VAR: return u.arg.name
  if u.op in INFIX and len(u.src) == 2: return f"({_expr(u.src[0], depth - 1)} {INFIX[u.op]} {_expr(u.src[1], depth - 1)})"
  inner = ", ".join(_expr(s, depth - 1) for s in u.src)
  return f"{u.op.name}{'.' + u.dtype.name if u.op is Ops.CAST else ''}({inner})"


# ---- proving ----
def canonical_slot(s: Slot) -> UOp:
  return UOp(Ops.DETACH, s.dtype, (), ("slot", s.k))


def _leaks(u: UOp) -> bool:
  # a slot's inner RANGE outside its DETACH: the rule looked inside a leaf, so the slot is not one variable any more
  return any(x.op is Ops.RANGE and isinstance(x.arg.axis, int) and x.arg.axis >= 1000 and x.arg.kind is AxisType.LOOP for x in u.toposort())


@dataclass
class _Group:
  lhs: UOp
  rhs: UOp
  slots: list[Slot]
  boxes: dict[tuple, Instance] = field(default_factory=dict)


class Prover:
  def __init__(self, dts: Sequence[DType] = DEFAULT_DTYPES, samples: int = 300, timeout_ms: int = 1000, seed: int = 0,
               store: Callable[[RuleRef, Counterexample], str | None] | None = None, undefined: str = "c", retry_ms: int = 0):
    """store(ref, counterexample) keeps a refutation (tinyspec prove passes the corpus writer) and gives where, or None."""
    if undefined not in ("c", "evaluator"): raise ValueError(f"undefined must be 'c' or 'evaluator', not {undefined!r}")
    self.dts, self.samples, self.timeout_ms, self.seed, self.store = tuple(dts), samples, timeout_ms, seed, store
    self.retry_ms = retry_ms  # a second, longer attempt at queries no encoding decided within timeout_ms (0: none)
    self.stats: Counter = Counter()  # (encoding, z3 answer) -> how often
    # c: a rule may do anything where the node it rewrites divides by zero (C leaves it undefined; generators avoid it)
    # evaluator: it must keep the evaluator's values there too (a IDIV 0 == 0, a MOD 0 == a)
    self.undefined = undefined

  def prove(self, ref: RuleRef) -> RuleResult:
    t0 = time.perf_counter()
    res = self.finish(ref, [self.prove_dtype(ref, dt) for dt in self.dts] if self.per_dtype(ref) else [])
    res.seconds = time.perf_counter() - t0
    return res

  def per_dtype(self, ref: RuleRef) -> bool:
    """Whether the rule is proven dtype by dtype (a rule that reads its pass's context is not proven at all)."""
    return not ref.rule.takes_ctx

  def finish(self, ref: RuleRef, per_dtype: list[DtypeResult]) -> RuleResult:
    """The rule's result from its per-dtype results; a counterexample is stored (self.store) here."""
    res = RuleResult(ref, per_dtype, seconds=sum(d.seconds for d in per_dtype))
    if ref.rule.takes_ctx:
      res.reason = "the rule reads a rewrite context (ctx) its pass builds for a whole kernel; it cannot run on a pattern instance alone"
    elif (cx := res.counterexample) is not None and self.store is not None: cx.corpus_path = self.store(ref, cx)
    return res

  def instances(self, ref: RuleRef, dt: DType, dr: DtypeResult) -> dict[tuple[UOp, UOp], _Group]:
    rng = random.Random(f"tinyspec-prove:{self.seed}:{ref.qualname}:{dt.name}")
    groups: dict[tuple[UOp, UOp], _Group] = {}
    pats = (ref.rule.pat, *ref.rule.examples)  # the rule's own pattern, and the narrower ones it names as examples
    for i in range(self.samples):
      dr.instances += 1
      try: inst = instantiate(pats[i % len(pats)], dt, rng)
      except NoInstance as e:
        dr.reasons[f"pattern not built: {e}"] += 1
        continue
      try: new = ref.rule.apply(inst.root, None)
      except Exception as e:  # a rule that crashes on a legal node is reported, not hidden
        dr.reasons[f"the rule raised {type(e).__name__}: {e}"] += 1
        continue
      if new is None:
        dr.reasons["guard did not hold"] += 1
        continue
      sub = {s.node: canonical_slot(s) for s in inst.slots}
      lhs, rhs = substitute(inst.root, sub), substitute(new, sub)
      if _leaks(rhs):
        dr.reasons["the rewrite looked inside a leaf"] += 1
        continue
      dr.fired += 1
      g = groups.setdefault((lhs, rhs), _Group(lhs, rhs, inst.slots))
      g.boxes.setdefault(tuple((s.lo, s.hi) for s in inst.slots), inst)
    return groups

  def prove_dtype(self, ref: RuleRef, dt: DType) -> DtypeResult:
    t0 = time.perf_counter()
    dr = DtypeResult(dt)
    for g in self.instances(ref, dt, dr).values():
      dr.queries += 1
      verdict = self.query(g, dt)
      if verdict == "unknown": dr.unknown += 1
      elif isinstance(verdict, Counterexample):
        dr.refuted = verdict
        break
    dr.seconds = time.perf_counter() - t0
    return dr

  def query(self, g: _Group, dt: DType) -> str | Counterexample:
    """unsat in one encoding proves the group; sat gives a counterexample. Each encoding is first simplified (most
    rewrites of a sound rule simplify to the same term), then solved with the timeout; when none decides, they are
    asked once more with the retry timeout, and undecided then is unknown."""
    tried: list[Encoding] = []
    for f in encodings(g, self.undefined):
      if z3.is_false(z3.simplify(z3.And(*f.assertions), som=True)):
        self.stats[f.name, "simplified"] += 1
        return "proven"
      tried.append(f)
      if (r := self.solve(f, g, dt, self.timeout_ms)) is not None: return r
    for f in tried if self.retry_ms > self.timeout_ms else ():
      if (r := self.solve(f, g, dt, self.retry_ms)) is not None: return r
    return "unknown"

  def query_pair(self, lhs: UOp, rhs: UOp, slots: list[Slot], boxes: dict[tuple, Instance], dt: DType) -> str | Counterexample:
    """One query for a rewrite made outside tinyspec's tables (a bridged compiler's rule): lhs and rhs are over the
    canonical slots (canonical_slot) of `slots`; boxes maps each instance's slot bounds ((lo, hi) per slot) to it.
    "proven", "unknown", or a Counterexample."""
    return self.query(_Group(lhs, rhs, list(slots), dict(boxes)), dt)

  def solve(self, f: Encoding, g: _Group, dt: DType, timeout_ms: int) -> str | Counterexample | None:
    solver = z3.Solver()
    solver.set(timeout=timeout_ms)
    solver.add(*f.assertions)
    r = solver.check()
    self.stats[f.name, str(r)] += 1
    if r == z3.unsat: return "proven"
    if r == z3.sat: return f.counterexample(g, dt, self.preferred_model(solver, f))
    return None

  def preferred_model(self, solver: z3.Solver, f: Encoding) -> z3.ModelRef:
    """The model of a sat query, at a point C defines when there is one. With undefined="evaluator" the rewrite must
    keep the evaluator's values at C's undefined points too (a IDIV 0 == 0), but a counterexample there is one no
    generated case reaches (they avoid those points): when the rule is also wrong elsewhere, that point is the one
    to report, and a rule wrong only at a zero divisor keeps the model it has."""
    m = solver.model()
    if self.undefined != "evaluator" or f.c_defined is None or not z3.is_false(m.eval(f.c_defined, model_completion=True)): return m
    solver.push()
    solver.add(f.c_defined)
    better = solver.model() if solver.check() == z3.sat else None
    solver.pop()
    return better or m


# ---- encodings of one query ----
@dataclass
class Encoding:
  """One z3 question equivalent to "can the two sides differ within the bounds": its assertions and how to read a
  model back."""
  name: str
  assertions: list
  slot_value: Callable[[z3.ModelRef, Slot], int | bool | None]
  side_value: Callable[[z3.ModelRef, UOp], int | bool | None]
  c_defined: z3.BoolRef | None = None  # where the rewritten node's value is defined in C (None: everywhere)

  def counterexample(self, g: _Group, dt: DType, m: z3.ModelRef) -> Counterexample:
    vals = {s.k: self.slot_value(m, s) for s in g.slots}
    inst = next((i for box, i in g.boxes.items() if all(s.dtype.kind == "b" or lo <= vals[s.k] <= hi for s, (lo, hi) in zip(g.slots, box))),
                next(iter(g.boxes.values())))
    return concretize(g, inst, vals, dt, lambda u: self.side_value(m, u))


def _boxes_pre(g: _Group, within: Callable[[Slot, int, int], z3.BoolRef]) -> z3.BoolRef:
  if not g.slots: return z3.BoolVal(True)
  return z3.Or(*[z3.And(*[within(s, lo, hi) for s, (lo, hi) in zip(g.slots, box)]) for box in g.boxes])


def native_encoding(g: _Group, undefined: str) -> Encoding | None:
  """tinyspec.prove.evalsem's encoding: fixed widths as bit vectors of their width, index as z3 Int, loads from z3 arrays."""
  t = EvalTranslator()
  vs = {}
  for s in g.slots:
    node = canonical_slot(s)
    v = z3.Const(f"s{s.k}", t.sort(s.dtype))
    t.memo[node], t.vars[node], vs[s.k] = v, v, v
  diff = differ(t, g.lhs, g.rhs)
  if diff is None: return None
  def within(s: Slot, lo: int, hi: int) -> z3.BoolRef:
    v = vs[s.k]
    if s.dtype.kind == "b": return z3.BoolVal(True)
    if z3.is_bv(v):
      lt = (lambda a, b: a <= b) if s.dtype.kind == "i" else z3.ULE
      return z3.And(lt(z3.BitVecVal(lo, s.dtype.bits), v), lt(v, z3.BitVecVal(hi, s.dtype.bits)))
    return z3.And(v >= lo, v <= hi)
  asserts = [_boxes_pre(g, within), *t.constraints, diff]
  c_defined = defined(t, g.lhs) if g.lhs.op is not Ops.STORE else None
  if undefined == "c" and c_defined is not None: asserts.append(c_defined)
  def side(m: z3.ModelRef, u: UOp) -> int | bool | None: return None if u.op is Ops.STORE else model_int(m, t(u), u.dtype)
  return Encoding("native", asserts, lambda m, s: model_int(m, vs[s.k], s.dtype), side, c_defined)


def exact_encoding(g: _Group, an: Analysis, kind: str, undefined: str) -> Encoding | None:
  """tinyspec.prove.exact's encoding of the group: exact Ints or wide-enough bit vectors (None where it has no such form)."""
  nodes = {canonical_slot(s): s for s in g.slots}
  try: f = ExactForm(an, kind, {n: f"s{s.k}" for n, s in nodes.items()})
  except Unsupported: return None
  asserts = [_boxes_pre(g, lambda s, lo, hi: f.within(canonical_slot(s), lo, hi)), f(g.lhs) != f(g.rhs)]
  c_defined = f.defined(g.lhs)
  if undefined == "c": asserts.append(c_defined)
  return Encoding(kind, asserts, lambda m, s: f.value(m, canonical_slot(s)), lambda m, u: f.value(m, u), c_defined)


def encodings(g: _Group, undefined: str) -> Iterator[Encoding]:
  """The encodings of a query (at most two), the likeliest to be fast first, each built only when asked for. Exact
  Ints decide division by constants without a divider circuit; bit vectors decide bitwise ops and products of
  variables; the native encoding covers the rest (loads, stores, floats) and fixed-width products."""
  dt = g.lhs.dtype
  try:
    if g.lhs.dtype is not g.rhs.dtype or g.lhs.op is Ops.STORE: raise Unsupported("not one value")
    # a slot's range is the hull of its bounds over every instance of the group
    hull = {s.k: (min(b[i][0] for b in g.boxes), max(b[i][1] for b in g.boxes)) for i, s in enumerate(g.slots)}
    an: Analysis | None = analyze((g.lhs, g.rhs), {canonical_slot(s): (None if s.dtype.kind == "b" else hull[s.k]) for s in g.slots})
  except Unsupported: an = None
  if an is None: order = ["native"]
  elif dt is dtypes.index or not isinstance(dt, DType) or dt.kind not in "iu":
    order = ["bv"] if an.bitwise() else (["bv", "int"] if an.nonlinear() else ["int", "bv"])
    order.append("native")
  else: order = ["native", *(["bv"] if an.width < dt.bits else [])] if an.bitwise() or an.nonlinear() else ["int", "native"]
  n = 0
  for name in order:
    e = native_encoding(g, undefined) if name == "native" or an is None else exact_encoding(g, an, name, undefined)
    if e is None: continue
    yield e
    if (n := n + 1) == 2: return


def concretize(g: _Group, inst: Instance, vals: dict, dt: DType, side: Callable[[UOp], int | bool | None]) -> Counterexample:
  """The counterexample as two constant expressions, their values by the evaluator where it can compute them."""
  consts = {canonical_slot(s): UOp.const(s.dtype, vals[s.k]) for s in inst.slots}
  before, after = substitute(g.lhs, consts), substitute(g.rhs, consts)
  slots = [(s, vals[s.k]) for s in inst.slots]
  if before.op is Ops.STORE or any(u.op in GATE_OPS for u in before.toposort()):
    return Counterexample(dt, before, after, slots, side(g.lhs), side(g.rhs), "z3 model", over_slots=g.lhs)
  try: lv, rv = evaluate_scalar(before), evaluate_scalar(after)
  except Exception as e:  # index values past int64: the evaluator stores index as int64
    return Counterexample(dt, before, after, slots, side(g.lhs), side(g.rhs), f"z3 model (the evaluator cannot run it: {type(e).__name__})",
                          over_slots=g.lhs)
  return Counterexample(dt, before, after, slots, lv, rv, "evaluate" if lv != rv else "z3 model (the evaluator gives equal values)", over_slots=g.lhs)


def evaluate_scalar(u: UOp) -> int | bool:
  """The value of a constant expression by tinyspec.semantics.evaluate."""
  v = np.asarray(evaluate(u)).reshape(())
  return bool(v) if v.dtype == np.bool_ else int(v)


# ---- the whole rule set ----
class RuleProver(Protocol):
  """What prove_rules drives: tinyspec's Prover and the tinygrad bridge's prover both are one."""
  dts: tuple[DType, ...]
  stats: Counter
  def prove(self, rule: Any) -> Any: ...
  def prove_dtype(self, rule: Any, dt: DType) -> Any: ...
  def finish(self, rule: Any, per_dtype: list) -> Any: ...
  def per_dtype(self, rule: Any) -> bool: ...


_WORK: tuple[list, RuleProver] | None = None  # what forked workers prove: set before the pool starts


def _prove_task(task: tuple[int, int]) -> tuple[Any, Counter]:
  assert _WORK is not None
  rules, prover = _WORK
  before = Counter(prover.stats)
  return prover.prove_dtype(rules[task[0]], prover.dts[task[1]]), prover.stats - before


def default_jobs() -> int:
  try: return len(os.sched_getaffinity(0))
  except AttributeError: return os.cpu_count() or 1


def prove_rules(rules: Iterable, prover: RuleProver, out: TextIO | None = None, jobs: int = 1) -> list:
  """Every rule's result, in order, each line printed to out as soon as the rule is done. With jobs > 1 the (rule,
  dtype) pairs of the rules proven per dtype are proven by that many worker processes (forked, so rules need not pickle)."""
  global _WORK
  rules = list(rules)
  results: list = []
  def done(r) -> None:
    results.append(r)
    if out is not None: print(r.line(), file=out, flush=True)
  if jobs <= 1 or len(rules) * len(prover.dts) <= 1 or "fork" not in mp.get_all_start_methods():
    for rule in rules: done(prover.prove(rule))
    return results
  split = [prover.per_dtype(rule) for rule in rules]
  tasks = [(i, j) for i in range(len(rules)) if split[i] for j in range(len(prover.dts))]
  _WORK = (rules, prover)
  try:
    with mp.get_context("fork").Pool(min(jobs, len(tasks) or 1)) as pool:
      it = pool.imap(_prove_task, tasks, chunksize=1)  # in task order: a rule's dtypes arrive together, rules in order
      for rule, whole in zip(rules, split):
        per: list = []
        for _ in (prover.dts if whole else ()):
          dr, stats = next(it)
          per.append(dr)
          prover.stats.update(stats)
        done(prover.finish(rule, per))
  finally: _WORK = None
  return results


def summary(results: Sequence[RuleResult]) -> str:
  c = Counter(r.status for r in results)
  return f"{len(results)} rules: {c['proven']} proven, {c['refuted']} refuted, {c['unknown']} unknown"


def encoding_stats(stats: Counter) -> str:
  """How the queries were decided, e.g. "int: 12439 simplified, 1806 unsat; native: 9 unsat"."""
  by: dict[str, list[str]] = {}
  for (enc, answer), n in sorted(stats.items(), key=lambda kv: (kv[0][0], -kv[1])): by.setdefault(enc, []).append(f"{n} {answer}")
  return "; ".join(f"{enc}: {', '.join(v)}" for enc, v in by.items()) or "none"

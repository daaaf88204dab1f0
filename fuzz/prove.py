"""The rule prover behind `tinyspec prove`: every integer and boolean rewrite rule of the lowering, proven sound by z3.

For each rule and each dtype (int32 and int64 with wrap-around, `index` unbounded), the rule's pattern is built into
many concrete instances (fuzz.templates) whose leaves are symbolic slots with chosen bounds, and the rule's own
function is run on each. Where it rewrites, both sides are translated to z3 with the evaluator's meaning
(fuzz.zsem: C's truncating IDIV and MOD, wrap-around, the evaluator's values at division by zero). Instances that
give the same rewrite up to the slots' bounds are one query: is there a value of the slots, inside the bounds of one
of the instances (what the rule's guard read through vmin and vmax), where the two sides differ?

No query is written per rule: a new rule is proven by the same code. A rule is
  proven  when every rewrite it made is unsat under its precondition (and it made at least one),
  refuted when one is sat: the model is a counterexample, checked again with tinyspec.semantics.evaluate,
  unknown when a query timed out, the rule never fired on its instances, or its pattern cannot be built (the reason
          is given). Unknown is never counted as proven.
Constants a rule reads are drawn from representative values and values next to the leaves' bounds, so "proven"
means: for every slot value within the bounds, for the constants and bounds configurations tried.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import z3

from fuzz.templates import Instance, NoInstance, Slot, instantiate
from fuzz.zsem import VALUE_OPS, EvalTranslator, defined, differ, model_int
from tinyspec.dtype import DType, dtypes
from tinyspec.lower.kernel_map import substitute
from tinyspec.rewrite import Rule, _takes_ctx
from tinyspec.uop import AxisType, Ops, UOp

DEFAULT_DTYPES = (dtypes.int32, dtypes.int64, dtypes.index)
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


def _root_ops(rule: Rule) -> frozenset:
  return frozenset(Ops) if rule.pat.op is None else rule.pat.op


def in_scope(ref: RuleRef) -> bool:
  """A rule that rewrites integer or boolean expressions: every rule of simplify, and any rule of another pass whose
  pattern's root is an ALU op or a CAST, or that matches any node of an integer dtype."""
  if ref.pass_name == "simplify": return True
  pat = ref.rule.pat
  if pat.op is None: return pat.dtype is not None and all(d.kind in "iuxb" for d in pat.dtype)
  return bool(pat.op & VALUE_OPS)


def expression_rules(passes: Sequence | None = None) -> list[RuleRef]:
  """The rules in scope, from every pass's matchers, each once (a table reused by another pass is the first pass's)."""
  if passes is None:
    from tinyspec.lower.pipeline import PASSES
    passes = PASSES
  seen: set[tuple[str, int]] = set()
  out: list[RuleRef] = []
  for p in passes:
    for pm in p.matchers:
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
  """A short infix rendering of an integer expression."""
  names = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.IDIV: "//", Ops.MOD: "%", Ops.CMPLT: "<", Ops.CMPNE: "!=", Ops.CMPEQ: "==",
           Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>"}
  if depth == 0: return "..."
  if u.op is Ops.CONST: return repr(u.arg)
  if u.op is Ops.DETACH and isinstance(u.arg, tuple) and u.arg[:1] == ("slot",): return f"s{u.arg[1]}"
  if u.op in names and len(u.src) == 2: return f"({_expr(u.src[0], depth - 1)} {names[u.op]} {_expr(u.src[1], depth - 1)})"
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
  def __init__(self, dts: Sequence[DType] = DEFAULT_DTYPES, samples: int = 300, timeout_ms: int = 2000, seed: int = 0,
               corpus: str | Path | None = None, undefined: str = "c"):
    if undefined not in ("c", "evaluator"): raise ValueError(f"undefined must be 'c' or 'evaluator', not {undefined!r}")
    self.dts, self.samples, self.timeout_ms, self.seed, self.corpus = tuple(dts), samples, timeout_ms, seed, corpus
    # c: a rule may do anything where the node it rewrites divides by zero (C leaves it undefined; generators avoid it)
    # evaluator: it must keep the evaluator's values there too (a IDIV 0 == 0, a MOD 0 == a)
    self.undefined = undefined

  def prove(self, ref: RuleRef) -> RuleResult:
    t0 = time.perf_counter()
    res = RuleResult(ref)
    if _takes_ctx(ref.rule.fn):
      res.reason = "the rule reads a rewrite context (ctx) its pass builds for a whole kernel; it cannot run on a pattern instance alone"
    else:
      for dt in self.dts: res.per_dtype.append(self.prove_dtype(ref, dt))
      if (cx := res.counterexample) is not None and self.corpus is not None: cx.corpus_path = write_counterexample(self.corpus, ref, cx)
    res.seconds = time.perf_counter() - t0
    return res

  def instances(self, ref: RuleRef, dt: DType, dr: DtypeResult) -> dict[tuple[UOp, UOp], _Group]:
    rng = random.Random(f"tinyspec-prove:{self.seed}:{ref.qualname}:{dt.name}")
    groups: dict[tuple[UOp, UOp], _Group] = {}
    for _ in range(self.samples):
      dr.instances += 1
      try: inst = instantiate(ref.rule.pat, dt, rng)
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
    dr = DtypeResult(dt)
    for g in self.instances(ref, dt, dr).values():
      dr.queries += 1
      verdict = self.query(g, dt)
      if verdict == "unknown": dr.unknown += 1
      elif isinstance(verdict, Counterexample):
        dr.refuted = verdict
        break
    return dr

  def query(self, g: _Group, dt: DType) -> str | Counterexample:
    t = EvalTranslator()
    vs = {}
    for s in g.slots:
      node = canonical_slot(s)
      v = z3.Const(f"s{s.k}", t.sort(s.dtype))
      t.memo[node], t.vars[node], vs[s.k] = v, v, v
    diff = differ(t, g.lhs, g.rhs)
    if diff is None: return "unknown"
    def within(s: Slot, lo: int, hi: int) -> z3.BoolRef:
      v = vs[s.k]
      if s.dtype.kind == "b": return z3.BoolVal(True)
      if z3.is_bv(v):
        lt = (lambda a, b: a <= b) if s.dtype.kind == "i" else z3.ULE
        return z3.And(lt(z3.BitVecVal(lo, s.dtype.bits), v), lt(v, z3.BitVecVal(hi, s.dtype.bits)))
      return z3.And(v >= lo, v <= hi)
    pre = z3.Or(*[z3.And(*[within(s, lo, hi) for s, (lo, hi) in zip(g.slots, box)]) for box in g.boxes]) if g.slots else z3.BoolVal(True)
    solver = z3.Solver()
    solver.set(timeout=self.timeout_ms)
    solver.add(pre, *t.constraints, diff)
    if self.undefined == "c" and g.lhs.op is not Ops.STORE: solver.add(defined(t, g.lhs))
    r = solver.check()
    if r == z3.unsat: return "proven"
    if r == z3.unknown: return "unknown"
    m = solver.model()
    vals = {s.k: model_int(m, vs[s.k], s.dtype) for s in g.slots}
    inst = next((i for box, i in g.boxes.items() if all(s.dtype.kind == "b" or lo <= vals[s.k] <= hi for s, (lo, hi) in zip(g.slots, box))),
                next(iter(g.boxes.values())))
    return concretize(g, inst, vals, dt, t, m)


def concretize(g: _Group, inst: Instance, vals: dict, dt: DType, t: EvalTranslator, m: z3.ModelRef) -> Counterexample:
  """The counterexample as two constant expressions, their values by the evaluator where it can compute them."""
  consts = {canonical_slot(s): UOp.const(s.dtype, vals[s.k]) for s in inst.slots}
  before, after = substitute(g.lhs, consts), substitute(g.rhs, consts)
  slots = [(s, vals[s.k]) for s in inst.slots]
  if before.op is Ops.STORE or any(u.op in GATE_OPS for u in before.toposort()):
    lv = model_int(m, t(g.lhs), g.lhs.dtype) if g.lhs.op is not Ops.STORE else None
    rv = model_int(m, t(g.rhs), g.rhs.dtype) if g.rhs.op is not Ops.STORE else None
    return Counterexample(dt, before, after, slots, lv, rv, "z3 model")
  try: lv, rv = evaluate_scalar(before), evaluate_scalar(after)
  except Exception as e:  # index values past int64: the evaluator stores index as int64
    lv, rv = model_int(m, t(g.lhs), g.lhs.dtype), model_int(m, t(g.rhs), g.rhs.dtype)
    return Counterexample(dt, before, after, slots, lv, rv, f"z3 model (the evaluator cannot run it: {type(e).__name__})")
  return Counterexample(dt, before, after, slots, lv, rv, "evaluate" if lv != rv else "z3 model (the evaluator gives equal values)")


def evaluate_scalar(u: UOp) -> int | bool:
  """The value of a constant expression by tinyspec.semantics.evaluate."""
  from tinyspec.semantics import evaluate
  v = np.asarray(evaluate(u)).reshape(())
  return bool(v) if v.dtype == np.bool_ else int(v)


# ---- corpus ----
def _storage_dtype(dt: DType) -> DType: return dtypes.int64 if dt is dtypes.index else dt


def counterexample_case(ref: RuleRef, cx: Counterexample):
  """A one-kernel KERNEL_GRAPH that loads the slot values, clamps each to its bounds (so the guard sees the same
  vmin and vmax) and stores the rewritten expression: lowering it through the rule changes the stored value."""
  from fuzz.strategies import Case
  params, bufs, inputs, consts = [], [], {}, {}
  out_dt = _storage_dtype(cx.before.dtype)
  params.append(UOp.param(0, out_dt, 1))
  bufs.append(UOp.buffer(out_dt, 1, id=1))
  zero = UOp.const(dtypes.index, 0)
  for i, (s, v) in enumerate(cx.slots):
    sdt = _storage_dtype(s.dtype)
    p = UOp.param(i + 1, sdt, 1)
    params.append(p)
    bufs.append(UOp.buffer(sdt, 1, id=i + 2))
    inputs[i + 2] = np.array([v], dtype=sdt.np)
    x = p.index(zero).load()
    if s.dtype is dtypes.index: x = x.cast(dtypes.index)
    if s.dtype.kind != "b":
      c = lambda n, d=s.dtype: UOp.const(d, n)
      x = x.maximum(c(s.lo)).alu(Ops.NEG).maximum(c(-s.hi)).alu(Ops.NEG) if (s.lo, s.hi) != (s.dtype.min, s.dtype.max) else x
    consts[UOp.const(s.dtype, v)] = x
  expr = substitute(cx.before, consts)
  if expr.dtype is dtypes.index: expr = expr.cast(dtypes.int64)
  ksink = UOp(Ops.SINK, src=(params[0].index(zero).store(expr),))
  call = UOp(Ops.CALL, src=(ksink, *bufs), arg="k")
  root = UOp(Ops.SINK, src=(bufs[0].after(call),))
  return Case(root, inputs, {"callify": "inline", "realize": "minimal", "opts": None}, "kernel")


def write_counterexample(corpus: str | Path, ref: RuleRef, cx: Counterexample) -> str | None:
  """Store a value counterexample as a corpus entry (signature parity/<pass>/<rule>); None for effects and loads."""
  from fuzz.corpus import write_entry
  if cx.before.op is Ops.STORE or any(u.op in GATE_OPS for u in cx.before.toposort()): return None
  try: case = counterexample_case(ref, cx)
  except Exception: return None  # the counterexample is still printed; only its kernel form failed to build
  msg = f"{ref.qualname} ({ref.rule.location}) is unsound, found by tinyspec prove:\n{cx.describe()}"
  path, _ = write_entry(corpus, case, ("parity", ref.pass_name, ref.rule.name), message=msg)
  return str(path)


# ---- the whole rule set ----
def prove_rules(refs: Iterable[RuleRef], prover: Prover, out=None) -> list[RuleResult]:
  results = []
  for ref in refs:
    r = prover.prove(ref)
    results.append(r)
    if out is not None: print(r.line(), file=out, flush=True)
  return results


def summary(results: Sequence[RuleResult]) -> str:
  c = Counter(r.status for r in results)
  return f"{len(results)} rules: {c['proven']} proven, {c['refuted']} refuted, {c['unknown']} unknown"

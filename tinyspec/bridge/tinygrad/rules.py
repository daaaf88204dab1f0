"""tinygrad's own integer rewrite rules, proven with tinyspec's z3 machinery: `tinyspec prove --target tinygrad`.

For each rule of tinygrad's symbolic tables (symbolic_simple, commutative, symbolic, div_and_mod_symbolic, sym) and
of its integer decompositions (the codegen's FLOORDIV/FLOORMOD lowering and late rewrites: shifts, magic-number
division, MULACC), the rule's UPat is built into concrete tinygrad UOps: its op sets, dtype sets, src tuples (a
commutative list in a random order), named vars (bound once, reused), const patterns (their arg) and `cvar`s (sample
values, near the wrap points and the leaves' bounds; weak `weakint` consts as tinygrad writes them, or strong ones).
A free var is a tinygrad variable (an ALU PARAM with bounds, what the rule's guard reads through vmin and vmax) or a
small expression over such variables. The rule runs through tinygrad's own PatternMatcher on that node; where it
rewrites, both sides are translated to tinyspec UOps (`to_tinyspec`: CDIV/CMOD are IDIV/MOD, FLOORDIV/FLOORMOD their
floor forms, MULACC a*b+c, weak consts committed at their consumer's dtype, as tinygrad's emission does) and
tinyspec.prove's Prover asks z3 whether they can differ for variable values within the bounds: int32, uint32 and int64
with wrap-around, weakint as tinyspec's unbounded `index`. Division by zero and MIN / -1 are excluded (undefined in C).

tinygrad's policy: signed overflow is undefined (it renders C without -fwrapv), so its rules may assume no signed
wrap; a weak int is a mathematical value that its consumer's dtype holds. A refutation is therefore asked again with
`strictly_defined(before)` as a precondition (tinyspec.prove.overflow: no signed ADD/SUB/MUL/NEG/SHL of the original
overflows, no index value leaves int64, every weak value committed to a fixed width fits it):
  refuted (defined behaviour)        the sides differ at an input where the original computes all that exactly (an
                                     unsigned wrap is defined, so uint32 differences are here): a wrong answer;
  refuted (wraps: signed overflow only)  they differ only where the original overflows (or commits a weak value to a
                                     dtype it does not fit): a policy difference with tinyspec's wrap-around, not a
                                     bug under tinygrad's own rules.
A rewrite that makes the result overflow where the original did not is a wrong answer (the first kind).
Every counterexample is run on both sides by tinygrad itself (`tinygrad_value`: tinygrad's exec_alu node by node,
each result truncated to its dtype, weak operands committed to the consumer's dtype) and by tinyspec's evaluator.
"""
from __future__ import annotations

import fnmatch
import inspect
import os
import platform
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from tinygrad.codegen.decomp.op import get_late_rewrite_patterns, get_simplifying_rewrite_patterns
from tinygrad.dtype import Invalid
from tinygrad.dtype import dtypes as tdt
from tinygrad.helpers import Target
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.uop.ops import Ops as TOps
from tinygrad.uop.ops import PatternMatcher, UPat
from tinygrad.uop.ops import UOp as TUOp
from tinygrad.uop.symbolic import commutative, div_and_mod_symbolic, sym, symbolic, symbolic_simple

from tinyspec.bridge.tinygrad import compat
from tinyspec.bridge.tinygrad.rule_terms import (INT_OPS, TG_DTYPE, TS_DTYPE, NoInstance, TgInstance, Unsupported, instantiate, render,
                                                 tinygrad_fold, tinygrad_value, to_tinyspec)
from tinyspec.dtype import DType, dtypes
from tinyspec.prove.cli import resolve_args
from tinyspec.prove.overflow import overflows_at, shift_counts_defined, strictly_defined
from tinyspec.prove.prover import Counterexample, DtypeResult, Prover, canonical_slot, default_jobs, encoding_stats, evaluate_scalar
from tinyspec.prove.prover import prove_rules as prove_all
from tinyspec.prove.templates import Instance, Slot
from tinyspec.uop import Ops, UOp, substitute

DEFAULT_DTYPES = (dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.index)
WRAPS = "refuted (wraps: signed overflow only)"  # ... or a weak int committed to a dtype it does not fit: tinygrad's policy

# ---- the rules ----
@dataclass(frozen=True)
class TgRule:
  """One (UPat, function) of a tinygrad table, named by the first table that holds it and its source line."""
  table: str
  name: str
  pat: UPat
  fn: Callable
  location: str
  needs_ctx: bool

  @property
  def qualname(self) -> str: return f"{self.table}/{self.name}"


def _renderer():
  """The ctx of the decomposition rules that read one (fast division asks which dtypes it may widen to): tinygrad's C
  renderer for the CPU device of this machine."""
  arch = {"amd64": "x86_64", "aarch64": "arm64"}.get(m := platform.machine().lower(), m)
  return ClangRenderer(Target(device="CPU", renderer="CLANG", arch=f"{arch},native"))


def tables() -> list[tuple[str, PatternMatcher]]:
  """tinygrad's integer rule tables, in the order a rule is attributed to the first that holds it. The decomposition
  tables are the ones the codegen builds for a C renderer (every op available, fast division on)."""
  ops = tuple(sorted(TOps, key=lambda o: o.value))
  return [("symbolic_simple", symbolic_simple), ("commutative", commutative), ("div_and_mod_symbolic", div_and_mod_symbolic),
          ("symbolic", symbolic), ("sym", sym), ("decomp_simplify", get_simplifying_rewrite_patterns(ops)),
          ("decomp_late", get_late_rewrite_patterns(ops, False))]


def _location(pat: UPat) -> tuple[str, int]:
  file, line = pat.location
  return compat.source_location(file), line


def tinygrad_rules() -> list[TgRule]:
  seen: set[tuple[int, int]] = set()
  out: list[TgRule] = []
  for tname, pm in tables():
    names: Counter = Counter()
    for pat, fn in pm.patterns:
      key = (id(pat), id(getattr(fn, "__code__", fn)))
      if key in seen: continue
      seen.add(key)
      file, line = _location(pat)
      names[line] += 1
      name = str(line) if names[line] == 1 else f"{line}.{names[line]}"
      try: needs_ctx = "ctx" in inspect.signature(fn).parameters
      except (TypeError, ValueError): needs_ctx = False
      out.append(TgRule(tname, name, pat, fn, f"{file}:{line}", needs_ctx))
  # later duplicates of a name (the same line reached twice) get their number in table order
  return out


def _walk(pat: UPat, into_any: bool = True):
  """Every sub-pattern of pat (into_any False: not the alternatives of an `any`, of which one is enough)."""
  stack, seen = [pat], set()
  while stack:
    p = stack.pop()
    if id(p) in seen: continue
    seen.add(id(p))
    yield p
    if p.is_any and not into_any: continue
    src = p._in_src if not p.is_any else p.src[0]
    if isinstance(src, UPat): stack.append(src)
    elif src is not None: stack.extend(src)


def out_of_scope(r: TgRule) -> str | None:
  """Why the rule has nothing to prove about integers (None: it is in scope)."""
  p = r.pat
  root_ops = set(p.op or ())
  if not root_ops & INT_OPS - {TOps.CONST}:
    return f"root op(s) {', '.join(sorted(o.name for o in root_ops))} have no integer value meaning (memory, graph, float or vector forms)"
  if p.match_dtype is not None and not any(d in TG_DTYPE for d in p.match_dtype):
    return f"matches only {', '.join(sorted(d.name for d in p.match_dtype))}: no integer dtype"
  if any(q.arg is Invalid for q in _walk(p)): return "matches tinygrad's Invalid (a gate's poison value), which has no integer value"
  for q in _walk(p, into_any=False):
    if q.op is not None and not set(q.op) & INT_OPS:
      return f"its pattern needs {', '.join(sorted(o.name for o in q.op))} inside, which has no integer value meaning (a float, loop or vector form)"
  return None


# ---- results ----
@dataclass
class Refutation:
  dtype: str
  kind: str                      # "defined" or "wraps"
  describe: str                  # the variables' values and bounds
  values: dict[str, int | bool]  # slot name -> value
  tinygrad_before: str           # the tinygrad expression, with the values substituted
  tinygrad_after: str
  tg_lhs: Any                    # tinygrad's values of the two sides
  tg_rhs: Any
  ts_lhs: Any                    # tinyspec's
  ts_rhs: Any
  overflows: list[str]           # the signed overflows of the original at this point
  tg_fold_lhs: Any = None        # what tinygrad's simplifier folds each side to
  tg_fold_rhs: Any = None
  wide_consts: list[str] = field(default_factory=list)  # constants the rewrite builds outside their dtype's range

  @property
  def confirmed(self) -> bool: return self.tg_lhs != self.tg_rhs

  def lines(self) -> list[str]:
    out = [f"counterexample {self.dtype}: {self.describe}",
           f"tinygrad before: {self.tinygrad_before} = {self.tg_lhs}",
           f"tinygrad after:  {self.tinygrad_after} = {self.tg_rhs}"
           f"  ({'confirmed: tinygrad computes different values' if self.confirmed else 'NOT reproduced by tinygrad'})",
           f"tinyspec evaluator: before = {self.ts_lhs}, after = {self.ts_rhs}"]
    if self.tg_fold_lhs is not None or self.tg_fold_rhs is not None:
      out.append(f"tinygrad's simplifier folds the two sides to {self.tg_fold_lhs} and {self.tg_fold_rhs}")
    if self.overflows: out.append(f"signed overflow in the original: {'; '.join(self.overflows)}")
    if self.wide_consts:
      out.append(f"note: the rewrite builds {'; '.join(self.wide_consts)} (tinygrad's folding keeps it unwrapped; a program literal is "
                 "CAST(dtype, CONST): its Python backend wraps it into the dtype, as the values above do, while its C renderer prints "
                 "int32 and int64 literals unwrapped)")
    return out


@dataclass
class TgDtypeResult(DtypeResult):
  """A DtypeResult of a tinygrad rule: it may not apply to the dtype at all, and a difference only where a fixed-width
  value wraps is told apart from one of defined behaviour."""
  refuted: Refutation | None = None  # type: ignore[assignment]
  applicable: bool = True
  wraps: Refutation | None = None

  @property
  def status(self) -> str:
    if not self.applicable: return "n/a"
    if self.refuted is None and self.wraps is not None: return "wraps"
    return super().status


@dataclass
class TgRuleResult:
  rule: TgRule
  per_dtype: list[TgDtypeResult] = field(default_factory=list)
  skipped: str | None = None
  seconds: float = 0.0

  @property
  def status(self) -> str:
    if self.skipped: return "skipped"
    st = [d.status for d in self.per_dtype if d.status != "n/a"]
    if not st: return "skipped"
    if "refuted" in st: return "refuted"
    if "wraps" in st: return "refuted (wraps)"
    if "unknown" in st: return "unknown"
    return "proven"

  def why(self) -> str:
    if self.skipped: return self.skipped
    if all(d.status == "n/a" for d in self.per_dtype): return "its root pattern matches none of the dtypes proven here"
    parts = []
    for d in self.per_dtype:
      if d.status != "unknown": continue
      if d.fired == 0:
        top = "; ".join(f"{k} x{v}" for k, v in d.reasons.most_common(2))
        parts.append(f"{d.dtype.name}: never rewrote any of {d.instances} instances" + (f" ({top})" if top else ""))
      else: parts.append(f"{d.dtype.name}: z3 gave no answer on {d.unknown}/{d.queries} queries")
    return "; ".join(parts)

  def line(self) -> str:
    st = self.status
    label = {"refuted": "refuted (defined behaviour)", "refuted (wraps)": WRAPS}.get(st, st)
    head = f"{label:8} {self.rule.qualname}  {self.rule.location}"
    counts = ", ".join(f"{d.dtype.name} {d.status}" + (f" {d.fired}/{d.queries}" if d.status not in ("n/a",) else "") for d in self.per_dtype)
    if st == "proven": return f"{head}  [{counts}]"
    if st == "skipped": return f"{head}\n         why: {self.why()}"
    if st == "unknown": return f"{head}  [{counts}]\n         reason: {self.why()}"
    out = [f"{head}  [{counts}]"]
    for d in self.per_dtype:
      ref = d.refuted if st == "refuted" else d.wraps
      if ref is None: continue
      out += [f"         {x}" for x in ref.lines()]
      break
    return "\n".join(out)


# ---- proving ----
@dataclass
class _Pair:
  lhs: UOp
  rhs: UOp
  slots: list[Slot]
  boxes: dict[tuple, Instance] = field(default_factory=dict)
  instances: dict[tuple, TgInstance] = field(default_factory=dict)   # per box: the tinygrad instance proven there
  after: dict[tuple, TUOp] = field(default_factory=dict)


class TgProver:
  def __init__(self, dts: Sequence[DType] = DEFAULT_DTYPES, samples: int = 200, timeout_ms: int = 1000, seed: int = 0, retry_ms: int = 0):
    self.dts, self.samples, self.seed = tuple(dts), samples, seed
    self.prover = Prover(self.dts, samples, timeout_ms, seed, None, "c", retry_ms)
    self._ctx = None

  @property
  def ctx(self):
    if self._ctx is None: self._ctx = _renderer()
    return self._ctx

  @property
  def stats(self) -> Counter: return self.prover.stats  # how z3 answered, by encoding

  def per_dtype(self, r: TgRule) -> bool: return out_of_scope(r) is None

  def prove(self, r: TgRule) -> TgRuleResult:
    return self.finish(r, [self.prove_dtype(r, dt) for dt in self.dts] if self.per_dtype(r) else [])

  def finish(self, r: TgRule, per: list[TgDtypeResult]) -> TgRuleResult:
    if (why := out_of_scope(r)) is not None: return TgRuleResult(r, skipped=why)
    return TgRuleResult(r, per, seconds=sum(d.seconds for d in per))

  def applicable(self, r: TgRule, dt) -> bool:
    md = r.pat.match_dtype
    return md is None or dt in md or tdt.bool in md

  def pairs(self, r: TgRule, dt, dr: TgDtypeResult) -> dict[tuple[UOp, UOp], _Pair]:
    rng = random.Random(f"tinyspec-prove-tinygrad:{self.seed}:{r.qualname}:{dt.name}")
    pm = PatternMatcher([(r.pat, r.fn)], compiled=False)
    groups: dict[tuple[UOp, UOp], _Pair] = {}
    for _ in range(self.samples):
      dr.instances += 1
      try: inst = instantiate(r.pat, dt, rng)
      except NoInstance as e:
        dr.reasons[f"pattern not built: {e}"] += 1
        continue
      except Exception as e:
        dr.reasons[f"pattern not built: {type(e).__name__}: {e}"] += 1
        continue
      try: new = pm.rewrite(inst.root, self.ctx if r.needs_ctx else None)
      except Exception as e:
        dr.reasons[f"the rule raised {type(e).__name__}: {str(e)[:80]}"] += 1
        continue
      if new is None:
        dr.reasons["guard did not hold"] += 1
        continue
      leaves = {v: s.node for v, s in inst.slots}
      try:
        lhs, rhs = to_tinyspec(inst.root, leaves), to_tinyspec(new, leaves)
      except Unsupported as e:
        dr.reasons[f"no tinyspec form: {e}"] += 1
        continue
      except Exception as e:
        dr.reasons[f"translation failed: {type(e).__name__}: {e}"] += 1
        continue
      if rhs.dtype is not lhs.dtype:
        if lhs.dtype.kind == "b" or rhs.dtype.kind == "b":
          dr.reasons[f"the rewrite changed the dtype {lhs.dtype.name} -> {rhs.dtype.name}"] += 1
          continue
        rhs = rhs.cast(lhs.dtype)  # a weak result, committed where the node it replaces was used
      if any(x.op in (TOps.PARAM, TOps.BUFFER) and x not in leaves for x in new.toposort()):
        dr.reasons["the rewrite made a new variable"] += 1
        continue
      dr.fired += 1
      slots = [s for _, s in inst.slots]
      g = groups.setdefault((lhs, rhs), _Pair(lhs, rhs, slots))
      box = tuple((s.lo, s.hi) for s in slots)
      if box not in g.boxes:
        g.boxes[box] = Instance(lhs, slots)
        g.instances[box], g.after[box] = inst, new
    return groups

  def prove_dtype(self, r: TgRule, ts_dt: DType) -> TgDtypeResult:
    dt = TS_DTYPE[ts_dt]
    dr = TgDtypeResult(ts_dt)
    t0 = time.perf_counter()
    if not self.applicable(r, dt):
      dr.applicable = False
      return dr
    for g in self.pairs(r, dt, dr).values():
      dr.queries += 1
      # C leaves a shift by a count outside the width undefined (tinygrad's Python values and tinyspec's differ there)
      shifts = shift_counts_defined(g.lhs)
      verdict = self.query_under(shifts, g, ts_dt)
      if verdict == "unknown": dr.unknown += 1
      if not isinstance(verdict, Counterexample): continue
      ok = strictly_defined(g.lhs)
      if ok is None:  # nothing in the original can overflow: every difference is on a defined input
        dr.refuted = self.refutation(g, verdict, ts_dt, "defined")
        break
      strict = self.query_under(ok if shifts is None else ok.alu(Ops.AND, shifts), g, ts_dt)
      if isinstance(strict, Counterexample):
        dr.refuted = self.refutation(g, strict, ts_dt, "defined")
        break
      if strict == "unknown": dr.unknown += 1
      if dr.wraps is None: dr.wraps = self.refutation(g, verdict, ts_dt, "wraps")
    dr.seconds = time.perf_counter() - t0
    return dr

  def query_under(self, pre: UOp | None, g: _Pair, ts_dt: DType) -> str | Counterexample:
    """Can the two sides differ where the bool expression pre holds (None: anywhere)?"""
    lhs, rhs = g.lhs, g.rhs
    if pre is not None:
      zero = UOp.const(g.lhs.dtype, 0)
      lhs, rhs = pre.alu(Ops.WHERE, lhs, zero), pre.alu(Ops.WHERE, rhs, zero)
    try: return self.prover.query_pair(lhs, rhs, g.slots, g.boxes, ts_dt)
    except (ValueError, OverflowError, MemoryError, RecursionError):  # values too large to encode (a shift by a huge count)
      return "unknown"

  def refutation(self, g: _Pair, cx: Counterexample, ts_dt: DType, kind: str) -> Refutation:
    vals = {s.k: v for s, v in cx.slots}
    box = tuple((s.lo, s.hi) for s, _ in cx.slots)
    if box not in g.instances: box = next(iter(g.instances))
    inst, after = g.instances[box], g.after[box]
    consts = {canonical_slot(s): UOp.const(s.dtype, vals[s.k]) for s in g.slots}
    before_c, after_c = substitute(g.lhs, consts), substitute(g.rhs, consts)
    try: ts_l, ts_r = evaluate_scalar(before_c), evaluate_scalar(after_c)
    except Exception: ts_l, ts_r = cx.lhs, cx.rhs
    env = {v: (bool(vals[s.k]) if s.dtype.kind == "b" else vals[s.k]) for v, s in inst.slots}
    try: tg_l, tg_r = tinygrad_value(inst.root, env), tinygrad_value(after, env)
    except Exception as e: tg_l = tg_r = f"tinygrad could not evaluate it: {type(e).__name__}: {e}"
    where = ", ".join(f"s{s.k}={v}" + ("" if s.dtype.kind == "b" else f" (in [{s.lo}, {s.hi}])") for s, v in cx.slots) or "no variables"
    return Refutation(ts_dt.name, kind, where, {f"s{s.k}": v for s, v in cx.slots}, render(inst.root, env), render(after, env),
                      tg_l, tg_r, ts_l, ts_r, overflows_at(before_c), tinygrad_fold(inst.root, env), tinygrad_fold(after, env),
                      wide_constants(after, inst.root))


def wide_constants(after: TUOp, before: TUOp) -> list[str]:
  """The constant subexpressions of a fixed-width int dtype that the rewrite made (not in before) whose exact value,
  as tinygrad's folding computes it, lies outside the dtype."""
  old = set(before.toposort())
  out = []
  for u in after.toposort():
    if u in old or u.dtype not in TG_DTYPE or TG_DTYPE[u.dtype].kind not in "iu": continue
    if any(x.op in (TOps.PARAM, TOps.BUFFER) for x in u.toposort()): continue
    try: v = u.arg if u.op is TOps.CONST else u.simplify().arg
    except Exception: continue
    dt = TG_DTYPE[u.dtype]
    if isinstance(v, int) and not dt.min <= v <= dt.max: out.append(f"{render(u)} = {v}, outside {dt.name}")
  return out[:2]


# ---- the whole table set ----
def prove_rules(rules: Sequence[TgRule], p: TgProver, out=None, jobs: int = 1) -> list[TgRuleResult]:
  """Every rule's result in order, each printed to out when done; jobs > 1 proves (rule, dtype) pairs in forked workers."""
  return prove_all(rules, p, out, jobs)


def summary(results: Sequence[TgRuleResult], dts: Sequence[DType]) -> list[str]:
  c = Counter(r.status for r in results)
  lines = [f"{len(results)} tinygrad rules: {c['proven']} proven, {c['refuted']} refuted (defined behaviour), {c['refuted (wraps)']} refuted "
           f"(wraps: signed overflow only), {c['unknown']} unknown, {c['skipped']} skipped"]
  for k, dt in enumerate(dts):
    d = Counter(r.per_dtype[k].status for r in results if r.per_dtype)
    inst = sum(r.per_dtype[k].fired > 0 for r in results if r.per_dtype)
    lines.append(f"  {dt.name:7} instantiated (rewrote at least once) {inst}: {d['proven']} proven, {d['refuted']} refuted (defined behaviour), "
                 f"{d['wraps']} refuted (wraps), {d['unknown']} unknown, {d['n/a']} not applicable")
  return lines


def select(rules: Sequence[TgRule], glob: str | None) -> list[TgRule]:
  if not glob: return list(rules)
  return [r for r in rules if any(fnmatch.fnmatch(x, glob) for x in (r.qualname, r.name, r.table, r.location, os.path.basename(r.location)))]


def prove_main(args) -> int:
  """`tinyspec prove --target tinygrad`: one line per rule, a summary per dtype; exit 1 when a rule is refuted."""
  if (err := resolve_args(args)) is not None:
    print(f"tinyspec prove: {err}", file=sys.stderr)
    return 2
  rules = select(tinygrad_rules(), args.rules)
  if not rules:
    print(f"tinyspec prove: no tinygrad rule matches {args.rules!r}", file=sys.stderr)
    return 2
  dts = args.dtypes or DEFAULT_DTYPES
  if bad := [d.name for d in dts if d not in TS_DTYPE]:
    print(f"tinyspec prove: {', '.join(bad)} has no tinygrad dtype", file=sys.stderr)
    return 2
  jobs = default_jobs() if args.jobs is None else args.jobs
  p = TgProver(dts, args.samples, args.timeout_ms, args.seed, args.retry_timeout_ms)
  n_scope = sum(out_of_scope(r) is None for r in rules)
  print(f"proving {n_scope} of {len(rules)} rules of tinygrad {compat.identity()} ({', '.join(t for t, _ in tables())}) for "
        f"{', '.join(d.name for d in dts)} (weakint as index; {args.samples} instances each, z3 timeout {args.timeout_ms} ms, {jobs} job"
        f"{'s' if jobs != 1 else ''})", flush=True)
  print("policy: signed overflow is undefined in tinygrad; a refutation only at a signed overflow is reported as 'wraps'", flush=True)
  t0 = time.perf_counter()
  results = prove_rules(rules, p, sys.stdout, jobs)
  for line in summary(results, dts): print(line)
  print(f"in {time.perf_counter() - t0:.1f} s; z3 answers by encoding: {encoding_stats(p.prover.stats)}")
  return 1 if any(r.status.startswith("refuted") for r in results) else 0


__all__ = ["TgRule", "TgProver", "tinygrad_rules", "tables", "instantiate", "to_tinyspec", "tinygrad_value", "prove_rules", "prove_main"]

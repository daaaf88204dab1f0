"""The symbolic fuzzer: random index expressions of the kind rangeify makes from views, simplified, checked equal.

A case is an `index` expression over RANGEs and bounded variables (DEFINE_VARs, whose bounds may be negative): flat
offsets (sums of ranges times strides plus an offset), unflattened by nested IDIV and MOD, clamped
with MAX, gated with WHERE of comparisons (PAD), combined again. The simplify rules rewrite it (graph_rewrite with
a PatternMatcher, so a changed rule table can be tried), and two oracles hold:
  equal:  the simplified expression has the original's value at every assignment of the leaves;
  bounds: every subexpression (of both) takes only values inside its [vmin, vmax].
Both are checked on many assignments at once (numpy, the evaluator's elementwise meaning): every assignment when
there are at most N_EXHAUSTIVE of them (then that check is a proof), random ones otherwise, and what survives those
goes to z3 with a small timeout, as bit vectors wide enough that nothing wraps first (tinyspec.prove.exact), as integers after
(tinyspec.prove.evalsem).
A difference is blamed on the first rule application whose result differs from the node it replaced at the
failing assignment.

SymbolicTarget is this fuzzer as a target of the campaign engine (fuzz.engine.campaign; `tinyspec fuzz --target symbolic`,
or `--symbolic`): workers, resuming, the report, and the corpus. A finding is shrunk (subexpressions replaced by one
of their operands or a constant while the same rule still breaks) and stored as a corpus entry of KIND "symbolic":
graph() is the expression, inputs() the failing assignment {leaf number: value}. Replaying it (`tinyspec repro`,
`pytest -m spec`) simplifies the expression with today's rules and checks it at that assignment, then as a fresh case.
"""
from __future__ import annotations

import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import z3

from tinyspec.prove.exact import ExactForm, Unsupported, analyze
from tinyspec.prove.evalsem import EvalTranslator, defined, model_int
from tinyspec.dtype import dtypes
from tinyspec.rewrite import PatternMatcher, Rule, graph_rewrite
from tinyspec.semantics.alu import cast as np_cast
from tinyspec.semantics.alu import elementwise
from tinyspec.uop import GroupOp, Ops, UOp, substitute

IDX = dtypes.index
N_RANDOM = 256  # random assignments per case, besides each leaf's two ends
# up to this many assignments in all, a case is checked at every one of them: a proof, so z3 is not asked
N_EXHAUSTIVE = 1 << 16
BV_TIMEOUT_MS = 50  # the bit-vector query's share of the z3 timeout


def c(v: int) -> UOp: return UOp.const(IDX, v)


@dataclass
class Leaf:
  node: UOp
  lo: int
  hi: int


class ExprGen:
  """Index expressions as views make them, from a Random."""

  def __init__(self, rng: random.Random, depth: int = 4):
    self.rng, self.depth = rng, depth
    self.leaves: list[Leaf] = []

  def leaf(self) -> UOp:
    r = self.rng
    if r.random() < 0.7:
      n = r.choice([1, 2, 3, 4, 5, 6, 8, 12, 16, 32])
      u = UOp.range(n, len(self.leaves))
      self.leaves.append(Leaf(u, 0, n - 1))
      return u
    lo = r.choice([-16, -8, -5, -3, -1, 0, 0, 2])
    hi = lo + r.choice([0, 1, 3, 7, 15, 20])
    u = UOp.variable(f"v{len(self.leaves)}", lo, hi)
    self.leaves.append(Leaf(u, lo, hi))
    return u

  def flat(self, depth: int) -> UOp:
    """sum of terms times strides, plus an offset"""
    r = self.rng
    out = None
    for _ in range(r.randint(1, 3)):
      t = self.expr(depth - 1) if depth > 1 and r.random() < 0.5 else self.leaf()
      k = r.choice([1, 1, 2, 3, 4, 6, 8, 16, -1, -2])
      t = t if k == 1 else t * c(k)
      out = t if out is None else out + t
    if r.random() < 0.4: out = out + c(r.choice([-7, -3, -1, 1, 2, 5, 12]))
    assert out is not None
    return out

  def expr(self, depth: int | None = None) -> UOp:
    depth = self.depth if depth is None else depth
    r = self.rng
    if depth <= 0: return self.leaf()
    kind = r.choice(["flat", "unflatten", "unflatten", "divmod", "pad", "clamp", "sum", "mul"])
    if kind == "flat": return self.flat(depth)
    if kind == "unflatten":  # (flat // stride) % dim, as a reshape of a reshape
      f = self.flat(depth)
      s, d = r.choice([1, 2, 3, 4, 6, 8, 16]), r.choice([2, 3, 4, 5, 8])
      q = f if s == 1 else f.alu(Ops.IDIV, c(s))
      return q.alu(Ops.MOD, c(d)) if r.random() < 0.8 else q
    if kind == "divmod":
      x = self.expr(depth - 1)
      return x.alu(r.choice([Ops.IDIV, Ops.MOD]), c(r.choice([1, 2, 3, 4, 5, 7, 8, 9, 16])))
    if kind == "pad":  # WHERE((o-1 < i) & (i < o+d), inner, 0)
      i = self.expr(depth - 1)
      o, d = r.randint(0, 3), r.randint(1, 8)
      valid = c(o - 1).alu(Ops.CMPLT, i).alu(Ops.AND, i.alu(Ops.CMPLT, c(o + d)))
      inner = (i + c(-o)) if r.random() < 0.5 else self.expr(depth - 1)
      return valid.where(inner, c(r.choice([0, 0, -1])))
    if kind == "clamp":
      x = self.expr(depth - 1)
      if r.random() < 0.5: return x.maximum(c(r.randint(-2, 2)))
      return x.alu(Ops.NEG).maximum(c(-r.randint(0, 12))).alu(Ops.NEG)  # min(x, b), as rangeify writes it
    if kind == "mul": return self.expr(depth - 1) * c(r.choice([0, 1, 2, 3, -1, 4]))
    return self.expr(depth - 1) + self.expr(depth - 1)


@dataclass
class SymCase:
  expr: UOp
  leaves: list[Leaf]
  seed: int | None = None
  index: int | None = None


def case_for(seed: int, index: int, depth: int = 4) -> SymCase:
  rng = random.Random(f"tinyspec-symbolic:{seed}:{index}")
  g = ExprGen(rng, depth)
  e = g.expr()
  return SymCase(e, g.leaves, seed, index)


# ---- vectorized evaluation ----
def assignments(leaves: list[Leaf], rng: np.random.Generator, n: int = N_RANDOM) -> dict[UOp, np.ndarray]:
  """n random values per leaf, plus rows where every leaf is at its low end and at its high end."""
  out = {}
  for lf in leaves:
    v = rng.integers(lf.lo, lf.hi + 1, size=n, dtype=np.int64)
    out[lf.node] = np.concatenate([v, [lf.lo, lf.hi]]).astype(np.int64)
  return out


def exhaustive(leaves: list[Leaf]) -> dict[UOp, np.ndarray]:
  """Every assignment of the leaves, one a row (the cartesian product of their ranges)."""
  axes = [np.arange(lf.lo, lf.hi + 1, dtype=np.int64) for lf in leaves]
  grids = np.meshgrid(*axes, indexing="ij") if axes else []
  return {lf.node: g.reshape(-1) for lf, g in zip(leaves, grids)}


def domain_size(leaves: list[Leaf]) -> int:
  return math.prod(max(lf.hi - lf.lo + 1, 0) for lf in leaves)


def evaluate_all(roots: list[UOp], env: dict[UOp, np.ndarray]) -> dict[UOp, np.ndarray]:
  """The value of every node under roots at every assignment (the rows of env's arrays)."""
  vals: dict[UOp, np.ndarray] = dict(env)
  n = len(next(iter(env.values()))) if env else 1
  with np.errstate(all="ignore"):
    for root in roots:
      for u in root.toposort(gate=lambda x: x not in env):
        if u in vals: continue
        if u.op is Ops.CONST: vals[u] = np.full(n, u.arg, dtype=u.dtype.np)
        elif u.op is Ops.CAST: vals[u] = np_cast(vals[u.src[0]], u.src[0].dtype, u.dtype)
        elif u.op in GroupOp.ALU: vals[u] = np.asarray(elementwise(u, [vals[s] for s in u.src]))
        else: raise ValueError(f"the symbolic fuzzer cannot evaluate {u.op.name}")
  return vals


# ---- findings ----
@dataclass
class SymFinding:
  oracle: str                      # "equal" or "bounds"
  case: SymCase
  simplified: UOp
  node: UOp                        # the expression that differs, or the subexpression out of its bounds
  assignment: dict[str, int]
  message: str
  rule: str = "-"                  # the blamed rule application (equal findings)
  by: str = "random"               # "random", "exhaustive" (every assignment was tried) or "z3"
  step: int = 0                    # the blamed application: its number (from 1) of `total`, its rule's file:line,
  total: int = 0                   # and the node it matched and the node it returned
  location: str = ""
  before: UOp | None = None
  after: UOp | None = None

  @property
  def signature(self) -> tuple[str, str, str]: return (self.oracle, "simplify", self.rule)

  def blame_text(self) -> str:
    """The blame line of a corpus header, in the form the report reads (fuzz.report.writer.BLAMED)."""
    if not self.step: return ""
    return f"blamed: rule '{self.rule}' of pass simplify at {self.location}, application {self.step} of {self.total}"

  def describe(self) -> str:
    out = f"{'/'.join(self.signature)}: {self.message}"
    return out + (f"\n  {self.blame_text()}" if self.step else "")


def leaf_number(u: UOp) -> int:
  """A leaf's number: the position it was made at (ranges and variables, named v<number>, share one numbering)."""
  if u.op is Ops.RANGE: return u.arg.axis
  return int(u.arg.name[1:])


def leaf_name(u: UOp) -> str:
  """r<axis> for a RANGE, a variable's own name (v<number> for the generator's)."""
  return f"r{u.arg.axis}" if u.op is Ops.RANGE else u.arg.name


_leaf_name = leaf_name  # the name tests and older callers use


def leaves_of(e: UOp) -> list[Leaf]:
  """The leaves of an expression, by number: its RANGEs and its bounded variables (DEFINE_VAR)."""
  out = {}
  for u in e.toposort():
    if u.op is Ops.DEFINE_VAR: out[u] = Leaf(u, u.arg.min, u.arg.max)
    elif u.op is Ops.RANGE: out[u] = Leaf(u, 0, int(u.src[0].arg) - 1)
  return sorted(out.values(), key=_leaf_order)


def _leaf_order(lf: Leaf) -> tuple[int, str]:
  # the generator's leaves by their shared numbering (RANGE axis k, variable v<k>); any other variable after, by name
  u = lf.node
  if u.op is Ops.RANGE: return (u.arg.axis, "")
  name = u.arg.name
  return (int(name[1:]), "") if name[:1] == "v" and name[1:].isdigit() else (1 << 60, name)


def _row(env: dict[UOp, np.ndarray], i: int) -> dict[UOp, np.ndarray]:
  return {k: v[i:i + 1] for k, v in env.items()}


def blame_index(steps: list[tuple[Rule, UOp, UOp]], env_row: dict[UOp, np.ndarray]) -> int | None:
  """The first rule application whose result has another value than the node it replaced, at this assignment."""
  for k, (_, before, after) in enumerate(steps):
    try: v = evaluate_all([before, after], env_row)
    except ValueError: continue  # a node the fuzzer does not evaluate: not part of the expression's value
    if before.dtype.kind in "iuxb" and not np.array_equal(v[before], v[after]): return k
  return None


def blame(steps: list[tuple[Rule, UOp, UOp]], env_row: dict[UOp, np.ndarray]) -> str:
  """The name of the blamed rule ("-" when no application changes the value)."""
  k = blame_index(steps, env_row)
  return "-" if k is None else steps[k][0].name


def simplify_table() -> PatternMatcher:
  """The integer simplifier the symbolic fuzzer checks by default: the table the simplify pass rewrites with."""
  from tinyspec.lower.simplify import SIMPLIFY
  return SIMPLIFY.tables["pm_simplify"]


class SymbolicChecker:
  def __init__(self, pm: PatternMatcher | None = None, z3_timeout_ms: int = 300, bounds: bool = True, use_z3: bool = True,
               exhaustive_max: int = N_EXHAUSTIVE):
    self.pm = simplify_table() if pm is None else pm
    self.z3_timeout_ms, self.bounds, self.use_z3, self.exhaustive_max = z3_timeout_ms, bounds, use_z3, exhaustive_max
    self.z3_queries = self.z3_unknown = 0
    self.fired: Counter = Counter()  # rule name -> applications, in the last simplify

  def simplify(self, e: UOp) -> tuple[UOp, list[tuple[Rule, UOp, UOp]]]:
    steps: list[tuple[Rule, UOp, UOp]] = []
    out = graph_rewrite(e, self.pm, observer=lambda r, b, a: steps.append((r, b, a)), max_steps=10_000)
    self.fired = Counter(r.name for r, _, _ in steps)
    return out, steps

  def equal_finding(self, case: SymCase, s: UOp, steps: list, row: dict[UOp, np.ndarray], by: str) -> SymFinding:
    """The difference at one assignment (row: one value per leaf), blamed."""
    e = case.expr
    vals = evaluate_all([e, s], row)
    a = {leaf_name(k): int(v[0]) for k, v in row.items()}
    k = blame_index(steps, row)
    f = SymFinding("equal", case, s, s, a, f"{int(vals[e][0])} before simplify, {int(vals[s][0])} after, at {a}"
                   + (" (found by z3)" if by == "z3" else ""), by=by)
    if k is not None:
      r, before, after = steps[k]
      f.rule, f.step, f.total, f.location, f.before, f.after = r.name, k + 1, len(steps), r.location, before, after
    return f

  def check_rows(self, case: SymCase, s: UOp, steps: list, env: dict[UOp, np.ndarray], by: str) -> list[SymFinding]:
    """Both oracles at every row of env."""
    e = case.expr
    vals = evaluate_all([e, s], env)
    bad = np.nonzero(vals[e] != vals[s])[0]
    if len(bad): return [self.equal_finding(case, s, steps, _row(env, int(bad[0])), by)]
    if self.bounds:
      for u, v in vals.items():
        if u.dtype is not IDX or u in env: continue
        out = np.nonzero((v < u.vmin) | (v > u.vmax))[0]
        if len(out):
          i = int(out[0])
          a = {leaf_name(k): int(x[i]) for k, x in env.items()}
          return [SymFinding("bounds", case, s, u, a, f"{u.op.name} takes {int(v[i])} outside its bounds [{u.vmin}, {u.vmax}] at {a}", by=by)]
    return []

  def check(self, case: SymCase, rng: np.random.Generator) -> list[SymFinding]:
    s, steps = self.simplify(case.expr)
    complete = domain_size(case.leaves) <= self.exhaustive_max
    env = exhaustive(case.leaves) if complete else assignments(case.leaves, rng)
    if fs := self.check_rows(case, s, steps, env, "exhaustive" if complete else "random"): return fs
    if not self.use_z3 or case.expr is s or complete: return []
    return self.check_z3(case, s, steps, env)

  def check_z3(self, case: SymCase, s: UOp, steps: list, env: dict[UOp, np.ndarray]) -> list[SymFinding]:
    self.z3_queries += 1
    e = case.expr
    # bit vectors wide enough that nothing wraps first, with a short timeout; integers decide the rest
    try:
      f = ExactForm(analyze((e, s), {lf.node: (lf.lo, lf.hi) for lf in case.leaves}), "bv", {lf.node: leaf_name(lf.node) for lf in case.leaves})
    except Unsupported: f = None
    if f is not None:
      solver = z3.Solver()
      solver.set(timeout=min(self.z3_timeout_ms, BV_TIMEOUT_MS))
      solver.add(*(f.within(lf.node, lf.lo, lf.hi) for lf in case.leaves), f.defined(e), f(e) != f(s))
      r = solver.check()
      if r == z3.unsat: return []
      if r == z3.sat:
        m = solver.model()
        row = {lf.node: np.array([f.value(m, lf.node)], dtype=np.int64) for lf in case.leaves}
        return [self.equal_finding(case, s, steps, row, "z3")]
    return self._check_z3_int(case, s, steps)

  def _check_z3_int(self, case: SymCase, s: UOp, steps: list) -> list[SymFinding]:
    t = EvalTranslator()
    leaves = {}
    for lf in case.leaves: leaves[lf.node] = t(lf.node)  # a RANGE or a DEFINE_VAR: a z3 variable within its bounds
    e = case.expr
    solver = z3.Solver()
    solver.set(timeout=self.z3_timeout_ms)
    solver.add(*t.constraints, defined(t, e), t(e) != t(s))
    r = solver.check()
    if r == z3.unknown: self.z3_unknown += 1
    if r != z3.sat: return []
    m = solver.model()
    row = {k: np.array([model_int(m, v, IDX)], dtype=np.int64) for k, v in leaves.items()}
    return [self.equal_finding(case, s, steps, row, "z3")]


# ---- shrinking ----
def _candidates(u: UOp) -> list[UOp]:
  """What a subexpression may become: one of its operands of its dtype, else a deeper subexpression of it, else a
  small constant."""
  below = [x for x in reversed(u.toposort()) if x is not u and x.dtype is u.dtype]
  out = list(dict.fromkeys([x for x in u.src if x.dtype is u.dtype] + below))
  if u.op is not Ops.CONST:
    out += [UOp.const(u.dtype, v) for v in ((False, True) if u.dtype is dtypes.bool else (0, 1))]
  return out


def shrink_expr(case: SymCase, fails: Callable[[SymCase], bool], max_seconds: float = 10.0) -> SymCase:
  """A locally minimal case that still fails: each subexpression (outermost first) replaced by an operand or a
  constant while fails() holds, until no replacement keeps it failing or the time is up."""
  t0 = time.monotonic()
  cur = case
  progress = True
  while progress and time.monotonic() - t0 < max_seconds:
    progress = False
    for u in reversed(cur.expr.toposort()):
      if u.op in (Ops.RANGE, Ops.DEFINE_VAR): continue
      for c in _candidates(u):
        e = c if u is cur.expr else substitute(cur.expr, {u: c})
        if e.dtype is not IDX: continue
        cand = SymCase(e, leaves_of(e), cur.seed, cur.index)
        if fails(cand):
          cur, progress = cand, True
          break
      if progress or time.monotonic() - t0 >= max_seconds: break
  return cur


def rows_rng(seed: int | None, index: int | None) -> np.random.Generator:
  """The random assignments of case (seed, index): the same in any process, so a campaign's cases do not depend on
  which worker ran them."""
  return np.random.default_rng(random.Random(f"tinyspec-symbolic-rows:{seed}:{index}").getrandbits(64))


# ---- corpus entries ----
KIND = "symbolic"


def entry_case(case: SymCase, assignment: dict[str, int] | None = None) -> Any:
  """The corpus form of a case (fuzz.generate.strategies.Case of KIND "symbolic"): the expression as the graph, the failing
  assignment as the inputs {leaf number: [value]}."""
  from fuzz.generate.case import Case
  assignment = assignment or {}
  inputs = {leaf_number(lf.node): np.array([assignment[leaf_name(lf.node)]], dtype=np.int64)
            for lf in case.leaves if leaf_name(lf.node) in assignment}
  return Case(case.expr, inputs, {}, KIND, case.seed, case.index)


def from_entry_case(c: Any) -> tuple[SymCase, dict[UOp, np.ndarray] | None]:
  """(the case, its stored assignment as one row per leaf, None when it stores none) of a corpus Case."""
  case = SymCase(c.root, leaves_of(c.root), c.seed, c.index)
  if not case.leaves or any(leaf_number(lf.node) not in c.inputs for lf in case.leaves): return case, None
  return case, {lf.node: np.asarray(c.inputs[leaf_number(lf.node)], dtype=np.int64).reshape(1) for lf in case.leaves}


def replay_case(c: Any, signature: Sequence[str], pm: PatternMatcher | None = None, z3_timeout_ms: int = 1000) -> tuple[bool, list[SymFinding]]:
  """(still fails, findings) of a stored case: the stored assignment first, then every oracle as on a fresh case."""
  from fuzz.corpus.store import same_bug
  case, row = from_entry_case(c)
  chk = SymbolicChecker(pm, z3_timeout_ms)
  findings: list[SymFinding] = []
  if row is not None:
    s, steps = chk.simplify(case.expr)
    findings = chk.check_rows(case, s, steps, row, "stored assignment")
  if not findings: findings = chk.check(case, rows_rng(case.seed, case.index))
  fails = any(same_bug(f.signature, signature) or same_bug(f.signature[:2], tuple(signature)[:2]) for f in findings)
  return fails, findings


def draw_case(c: Any, signature: Sequence[str], out: str | Path, pm: PatternMatcher | None = None, message: str = "") -> Any:
  """The picture of a stored case (fuzz.report.pictures.Picture): the blamed rule application before and after, else the
  expression."""
  from fuzz.report.pictures import Picture
  from tinyspec import viz
  fails, findings = replay_case(c, signature, pm)
  f = next((f for f in findings if f.signature == tuple(signature)), findings[0] if findings else None)
  if f is not None and f.before is not None and f.after is not None:
    viz.save(viz.draw_rewrite(f.before, f.after, f"simplify/{f.rule}", f.location), out)
    return Picture(Path(out), "rewrite", f"rule application {f.step} of {f.total} in simplify ({f.rule}): the matched node and what replaced it",
                   tuple(signature), fails, f.rule, "simplify", f.location, f.step, f.total)  # type: ignore[arg-type]
  why = "no rule application is to blame" if f is not None else "the entry no longer fails"
  msg = f.message if f is not None else message
  viz.render(c.root, out, title=f"{'/'.join(signature)}: {msg.splitlines()[0] if msg else ''}")
  return Picture(Path(out), "graph", f"{why}: the expression, with nothing to highlight", tuple(signature), fails)  # type: ignore[arg-type]


# ---- the campaign target ----
class SymbolicSession:
  """A symbolic checker in one process (fuzz.engine.targets.Session)."""

  def __init__(self, target: SymbolicTarget, cfg: Any):
    self.target, self.cfg = target, cfg
    self.checker = SymbolicChecker(target.pm, target.z3_timeout_ms, use_z3=target.use_z3)
    self.phase: Counter = Counter()
    self.begin: Any = lambda k: None

  def set_progress(self, begin: Any, at: Any) -> None: self.begin = begin

  def draw(self, seed: int, index: int, weights: dict[str, float]) -> SymCase: return case_for(seed, index, self.target.depth)
  def features(self, case: SymCase) -> frozenset[str]: return frozenset(f"op:{u.op.name}" for u in case.expr.toposort())
  def size(self, case: SymCase) -> int: return len(case.expr.toposort())
  def counts(self) -> dict[str, int]: return {"z3 queries": self.checker.z3_queries, "z3 unknown": self.checker.z3_unknown}

  def check(self, case: SymCase) -> list[SymFinding]: return self.checker.check(case, rows_rng(case.seed, case.index))

  def check_batch(self, cases: Sequence[SymCase]) -> list[tuple[list[SymFinding], dict[str, int]]]:
    out = []
    for k, case in enumerate(cases):
      self.begin(k)
      t = time.perf_counter()
      fs = self.check(case)
      self.phase["check"] += time.perf_counter() - t
      out.append((fs, {f"simplify/{k}": n for k, n in self.checker.fired.items()}))
    return out

  def shrink(self, case: SymCase, f: SymFinding, seconds: float) -> tuple[SymCase, SymFinding]:
    from fuzz.corpus.store import StillFails
    fails = StillFails(self.check, f)
    small = shrink_expr(case, fails, seconds)
    if small is case: return case, f
    fails(small)
    return small, fails.last

  def shrink_crash(self, case: SymCase, why: str, seconds: float) -> SymCase: return case  # a crash is stored as found

  def entry(self, case: SymCase, f: SymFinding, signature: tuple[str, str, str]) -> tuple[str, str]:
    from fuzz.corpus.store import render_entry
    blame = f.blame_text()
    return render_entry(entry_case(case, f.assignment), signature, message=f.message, blame=blame), blame

  def crash_entry(self, case: SymCase, signature: tuple[str, str, str], message: str) -> str:
    from fuzz.corpus.store import render_entry
    return render_entry(entry_case(case), signature, message=message)


@dataclass
class SymbolicTarget:
  """The integer simplifier (pm: its rule table, default the simplify pass's) on random view index expressions."""
  pm: PatternMatcher | None = None
  depth: int = 4
  z3_timeout_ms: int = 300
  use_z3: bool = True
  name: str = "symbolic"
  epoch: int = 256          # no weights to steer: an epoch only spaces out the state file's saves
  batch: int = 8            # cases per worker job: a case takes milliseconds
  kinds: tuple[str, ...] = (KIND,)
  reduces_crashes: bool = False

  def table(self) -> PatternMatcher: return simplify_table() if self.pm is None else self.pm
  def session(self, cfg: Any) -> SymbolicSession: return SymbolicSession(self, cfg)
  def rules(self, cfg: Any) -> list[str]: return list(self.rule_locations(cfg))

  def rule_locations(self, cfg: Any) -> dict[str, tuple[str, str, str]]:
    out: dict[str, tuple[str, str, str]] = {}
    for r in self.table().rules: out.setdefault(f"simplify/{r.name}", ("simplify", r.name, r.location))
    return out

  def initial_weights(self, cfg: Any) -> dict[str, float]: return {}
  def steer(self, weights: dict[str, float], coverage: Any, epoch: list) -> dict[str, float]: return weights
  def batch_size(self, cfg: Any) -> int: return self.batch

  def describe(self, cfg: Any) -> tuple[tuple[str, ...], str]:
    return (("numpy", "z3") if self.use_z3 else ("numpy",),
            f"index expressions of depth {self.depth} simplified, checked equal and within bounds")

  def replay(self, entry: Any, passes: Sequence | None = None) -> tuple[bool, list]:
    return replay_case(entry.case, entry.signature, self.pm)

  def draw(self, entry: Any, out: str | Path, passes: Sequence | None = None, message: str = "") -> Any:
    return draw_case(entry.case, entry.signature, out, self.pm, message)

  def changed_rules(self, cfg: Any) -> list:
    """The prover's rules of pm that the simplify pass's own table does not hold as they are ([] for that table)."""
    if self.pm is None: return []
    from fuzz.engine.changed_rules import changed_table_rules
    return changed_table_rules(self.pm, simplify_table(), "simplify")

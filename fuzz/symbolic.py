"""The symbolic fuzzer: random index expressions of the kind rangeify makes from views, simplified, checked equal.

A case is an `index` expression over RANGEs and bounded variables (slots: DETACH(RANGE + lo), so negative values
occur too): flat offsets (sums of ranges times strides plus an offset), unflattened by nested IDIV and MOD, clamped
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
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

import numpy as np
import z3

from tinyspec.prove.templates import SLOT_AXIS, slot_node
from tinyspec.prove.exact import ExactForm, Unsupported, analyze
from tinyspec.prove.evalsem import EvalTranslator, defined, model_int
from tinyspec.dtype import dtypes
from tinyspec.rewrite import PatternMatcher, Rule, graph_rewrite
from tinyspec.semantics.alu import cast as np_cast
from tinyspec.semantics.alu import elementwise
from tinyspec.uop import GroupOp, Ops, UOp

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
    u = slot_node(len(self.leaves), IDX, lo, hi)
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
        elif u.op is Ops.DETACH: vals[u] = vals[u.src[0]]
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

  @property
  def signature(self) -> tuple[str, str, str]: return (self.oracle, "simplify", self.rule)


def _leaf_name(u: UOp) -> str:
  if u.op is Ops.RANGE: return f"r{u.arg.axis}"
  return f"v{u.src[0].arg.axis - SLOT_AXIS if u.src[0].op is Ops.RANGE else u.src[0].src[0].arg.axis - SLOT_AXIS}"


def _row(env: dict[UOp, np.ndarray], i: int) -> dict[UOp, np.ndarray]:
  return {k: v[i:i + 1] for k, v in env.items()}


def blame(steps: list[tuple[Rule, UOp, UOp]], env_row: dict[UOp, np.ndarray]) -> str:
  """The first rule application whose result has another value than the node it replaced, at this assignment."""
  for rule, before, after in steps:
    try: v = evaluate_all([before, after], env_row)
    except ValueError: continue  # a rewrite inside a leaf (a slot's own RANGE + lo): not part of the expression's value
    if before.dtype.kind in "iuxb" and not np.array_equal(v[before], v[after]): return rule.name
  return "-"


class SymbolicChecker:
  def __init__(self, pm: PatternMatcher | None = None, z3_timeout_ms: int = 300, bounds: bool = True, use_z3: bool = True,
               exhaustive_max: int = N_EXHAUSTIVE):
    if pm is None:
      from tinyspec.lower.simplify import SIMPLIFY_PM
      pm = SIMPLIFY_PM
    self.pm, self.z3_timeout_ms, self.bounds, self.use_z3, self.exhaustive_max = pm, z3_timeout_ms, bounds, use_z3, exhaustive_max
    self.z3_queries = self.z3_unknown = 0

  def simplify(self, e: UOp) -> tuple[UOp, list[tuple[Rule, UOp, UOp]]]:
    steps: list[tuple[Rule, UOp, UOp]] = []
    out = graph_rewrite(e, self.pm, observer=lambda r, b, a: steps.append((r, b, a)), max_steps=10_000)
    return out, steps

  def check(self, case: SymCase, rng: np.random.Generator) -> list[SymFinding]:
    e = case.expr
    s, steps = self.simplify(e)
    complete = domain_size(case.leaves) <= self.exhaustive_max
    env = exhaustive(case.leaves) if complete else assignments(case.leaves, rng)
    vals = evaluate_all([e, s], env)
    bad = np.nonzero(vals[e] != vals[s])[0]
    if len(bad):
      i = int(bad[0])
      a = {_leaf_name(k): int(v[i]) for k, v in env.items()}
      return [SymFinding("equal", case, s, s, a, f"{int(vals[e][i])} before simplify, {int(vals[s][i])} after, at {a}", blame(steps, _row(env, i)),
                         by="exhaustive" if complete else "random")]
    if self.bounds:
      for u, v in vals.items():
        if u.dtype is not IDX or u in env: continue
        out = np.nonzero((v < u.vmin) | (v > u.vmax))[0]
        if len(out):
          i = int(out[0])
          a = {_leaf_name(k): int(x[i]) for k, x in env.items()}
          return [SymFinding("bounds", case, s, u, a, f"{u.op.name} takes {int(v[i])} outside its bounds [{u.vmin}, {u.vmax}] at {a}")]
    if not self.use_z3 or e is s or complete: return []
    return self.check_z3(case, s, steps, env)

  def check_z3(self, case: SymCase, s: UOp, steps: list, env: dict[UOp, np.ndarray]) -> list[SymFinding]:
    self.z3_queries += 1
    e = case.expr
    # bit vectors wide enough that nothing wraps first, with a short timeout; integers decide the rest
    try:
      f = ExactForm(analyze((e, s), {lf.node: (lf.lo, lf.hi) for lf in case.leaves}), "bv", {lf.node: _leaf_name(lf.node) for lf in case.leaves})
    except Unsupported: f = None
    if f is not None:
      solver = z3.Solver()
      solver.set(timeout=min(self.z3_timeout_ms, BV_TIMEOUT_MS))
      solver.add(*(f.within(lf.node, lf.lo, lf.hi) for lf in case.leaves), f.defined(e), f(e) != f(s))
      r = solver.check()
      if r == z3.unsat: return []
      if r == z3.sat:
        m = solver.model()
        return [self._z3_finding(case, s, steps, {lf.node: np.array([f.value(m, lf.node)], dtype=np.int64) for lf in case.leaves})]
    return self._check_z3_int(case, s, steps)

  def _z3_finding(self, case: SymCase, s: UOp, steps: list, row: dict[UOp, np.ndarray]) -> SymFinding:
    e = case.expr
    vals = evaluate_all([e, s], row)
    a = {_leaf_name(k): int(v[0]) for k, v in row.items()}
    return SymFinding("equal", case, s, s, a, f"{int(vals[e][0])} before simplify, {int(vals[s][0])} after, at {a} (found by z3)",
                      blame(steps, row), "z3")

  def _check_z3_int(self, case: SymCase, s: UOp, steps: list) -> list[SymFinding]:
    t = EvalTranslator()
    leaves = {}
    for lf in case.leaves:
      if lf.node.op is Ops.DETACH:
        v = z3.Int(_leaf_name(lf.node))
        t.memo[lf.node] = t.vars[lf.node] = v
        t.constraints += [v >= lf.lo, v <= lf.hi]
      leaves[lf.node] = t(lf.node)
    e = case.expr
    solver = z3.Solver()
    solver.set(timeout=self.z3_timeout_ms)
    solver.add(*t.constraints, defined(t, e), t(e) != t(s))
    r = solver.check()
    if r == z3.unknown: self.z3_unknown += 1
    if r != z3.sat: return []
    m = solver.model()
    row = {k: np.array([model_int(m, v, IDX)], dtype=np.int64) for k, v in leaves.items()}
    return [self._z3_finding(case, s, steps, row)]


@dataclass
class SymbolicSummary:
  seed: int
  cases: int
  seconds: float
  findings: list[SymFinding] = field(default_factory=list)
  z3_queries: int = 0
  z3_unknown: int = 0
  nodes: int = 0

  def text(self) -> str:
    rate = self.cases / self.seconds if self.seconds > 0 else 0.0
    lines = [f"symbolic fuzz summary: seed {self.seed}, {self.cases} cases in {self.seconds:.1f}s ({rate:.1f}/s), "
             f"{self.z3_queries} z3 queries ({self.z3_unknown} unknown)"]
    if not self.findings: lines.append("findings: none")
    else:
      lines.append(f"findings ({len(self.findings)}):")
      seen = set()
      for f in self.findings:
        if f.signature in seen: continue
        seen.add(f.signature)
        lines.append(f"  {'/'.join(f.signature)} (case {f.case.index}, by {f.by}): {f.message}")
    return "\n".join(lines)


def symbolic_campaign(seconds: float = 60.0, seed: int = 0, pm: PatternMatcher | None = None, max_cases: int | None = None,
                      depth: int = 4, z3_timeout_ms: int = 300, stop_when: Callable[[SymFinding], bool] | None = None,
                      use_z3: bool = True, out: TextIO | None = None) -> SymbolicSummary:
  """Run symbolic cases until the time or case budget is spent (or a finding satisfies stop_when)."""
  chk = SymbolicChecker(pm, z3_timeout_ms, use_z3=use_z3)
  rng = np.random.default_rng(seed)
  t0 = time.perf_counter()
  summ = SymbolicSummary(seed, 0, 0.0)
  i = 0
  while time.perf_counter() - t0 < seconds and (max_cases is None or i < max_cases):
    case = case_for(seed, i, depth)
    i += 1
    summ.nodes += len(case.expr.toposort())
    fs = chk.check(case, rng)
    for f in fs:
      if out is not None and f.signature not in {g.signature for g in summ.findings}:
        print(f"finding: {'/'.join(f.signature)} (case {case.index}): {f.message}", file=out, flush=True)
      summ.findings.append(f)
    if stop_when is not None and any(stop_when(f) for f in fs): break
  summ.cases, summ.seconds = i, time.perf_counter() - t0
  summ.z3_queries, summ.z3_unknown = chk.z3_queries, chk.z3_unknown
  return summ

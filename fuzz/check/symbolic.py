"""Checking a symbolic case (fuzz.generate.symbolic): its expression simplified by the integer simplifier's rules,
and two oracles.

The simplify rules rewrite it (graph_rewrite with a PatternMatcher, so a changed rule table can be tried), and two
oracles hold:
  equal:  the simplified expression has the original's value at every assignment of the leaves;
  bounds: every subexpression (of both) takes only values inside its [vmin, vmax].
Both are checked on many assignments at once (numpy, the evaluator's elementwise meaning): every assignment when
there are at most N_EXHAUSTIVE of them (then that check is a proof), random ones otherwise, and what survives those
goes to z3 with a small timeout, as bit vectors wide enough that nothing wraps first (tinyspec.prove.exact), as
integers after (tinyspec.prove.evalsem). A difference is blamed on the first rule application whose result differs
from the node it replaced at the failing assignment. Replaying a stored case (replay_case) checks it at its stored
assignment, then as a fresh case.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import z3

from fuzz.corpus.store import same_bug
from fuzz.corpus.symbolic import from_entry_case
from fuzz.generate.case import Case
from fuzz.generate.symbolic import IDX, Leaf, SymCase, leaf_name
from tinyspec.lower.simplify import SIMPLIFY
from tinyspec.prove.evalsem import EvalTranslator, defined, model_int
from tinyspec.prove.exact import ExactForm, Unsupported, analyze
from tinyspec.rewrite import PatternMatcher, Rule, graph_rewrite
from tinyspec.semantics.alu import cast as np_cast
from tinyspec.semantics.alu import elementwise
from tinyspec.uop import GroupOp, Ops, UOp

N_RANDOM = 256  # random assignments per case, besides each leaf's two ends
# up to this many assignments in all, a case is checked at every one of them: a proof, so z3 is not asked
N_EXHAUSTIVE = 1 << 16
BV_TIMEOUT_MS = 50  # the bit-vector query's share of the z3 timeout


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
  return SIMPLIFY.tables.pm_simplify


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


def rows_rng(seed: int | None, index: int | None) -> np.random.Generator:
  """The random assignments of case (seed, index): the same in any process, so a campaign's cases do not depend on
  which worker ran them."""
  return np.random.default_rng(random.Random(f"tinyspec-symbolic-rows:{seed}:{index}").getrandbits(64))


def replay_case(c: Case, signature: Sequence[str], pm: PatternMatcher | None = None, z3_timeout_ms: int = 1000) -> tuple[bool, list[SymFinding]]:
  """(still fails, findings) of a stored case: the stored assignment first, then every oracle as on a fresh case."""
  case, row = from_entry_case(c)
  chk = SymbolicChecker(pm, z3_timeout_ms)
  findings: list[SymFinding] = []
  if row is not None:
    s, steps = chk.simplify(case.expr)
    findings = chk.check_rows(case, s, steps, row, "stored assignment")
  if not findings: findings = chk.check(case, rows_rng(case.seed, case.index))
  fails = any(same_bug(f.signature, signature) or same_bug(f.signature[:2], tuple(signature)[:2]) for f in findings)
  return fails, findings

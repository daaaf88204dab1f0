"""Symbolic cases: random index expressions of the kind rangeify makes from views (`tinyspec fuzz --target symbolic`).

A case is an `index` expression over RANGEs and bounded variables (DEFINE_VARs, whose bounds may be negative): flat
offsets (sums of ranges times strides plus an offset), unflattened by nested IDIV and MOD, clamped with MAX, gated
with WHERE of comparisons (PAD), combined again. Case i of seed s is drawn from (s, i) alone. Its leaves are numbered
in the order they were made (RANGE axis k, variable v<k> share one numbering), and can be read back from the
expression (leaves_of): a stored or shrunk expression is a case again.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp

IDX = dtypes.index


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


def leaf_number(u: UOp) -> int:
  """A leaf's number: the position it was made at (ranges and variables, named v<number>, share one numbering)."""
  if u.op is Ops.RANGE: return u.arg.axis
  return int(u.arg.name[1:])


def leaf_name(u: UOp) -> str:
  """r<axis> for a RANGE, a variable's own name (v<number> for the generator's)."""
  return f"r{u.arg.axis}" if u.op is Ops.RANGE else u.arg.name


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

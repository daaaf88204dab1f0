"""The optimize actions a case is lowered with, drawn over the ranges its kernels hold.

The optimize pass takes opts that name a RANGE by its axis id: ("split", axis, factor), ("unroll", axis) and
("global", axis) (tinyspec/lower/optimize.py's docstring states their forms). An opt that names an axis no kernel has,
or a factor that does not divide the range's bound, leaves the kernel as it is: opts drawn blindly (an axis 0..2, a
factor 2..4) almost never meet a reduce range, whose axis comes after the kernel's output axes and whose bound is
small. So the actions are drawn over spots, the (axis, bound, reduce or loop) of ranges the case is known or expected
to hold: a kernel graph's own RANGEs, or for a TENSOR graph the ranges the kernels of its values get (a value of shape
s is stored over one range per axis, axes 0.. in order; a REDUCE over its first n axes also loops over those, axes
len(s) - n.. after its output's). A spot that is wrong only makes its opt one that does not apply. Every action the
pass supports is drawn on both kinds of range: splits by factors that divide the bound and by factors that do not
(also the bound itself), unrolls of loops and of reductions, globals.

Weights (features, steered by fuzz.engine.coverage like every generator choice): opt:split, opt:unroll, opt:global for
the action, opt:on_reduce and opt:on_loop for the range it names (defaults: fuzz.generate.case.OPT_WEIGHTS).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from fuzz.generate.case import OPT_WEIGHTS
from tinyspec.uop import AxisType, Ops, UOp

DIVIDING = 0.75      # the share of splits whose factor divides the bound (the others test that a split is refused)
BLIND = 0.1          # the share of actions on an axis no spot names (an opt that need not apply anywhere)
MAX_ACTIONS = 3


@dataclass(frozen=True)
class Spot:
  """A range a case's kernels are known or expected to hold."""
  axis: int
  bound: int
  reduce: bool


def kernel_spots(root: UOp) -> list[Spot]:
  """The RANGEs of the kernel bodies in a KERNEL_GRAPH (constant bounds only), each once, by axis."""
  seen = {(u.arg.axis, u.src[0].arg, u.arg.kind is AxisType.REDUCE) for u in root.toposort()
          if u.op is Ops.RANGE and u.src and u.src[0].op is Ops.CONST}
  return [Spot(*s) for s in sorted(seen)]


def tensor_spots(root: UOp) -> list[Spot]:
  """The ranges the kernels of a TENSOR graph's values are expected to get: one loop per axis of a value's shape,
  and for a REDUCE over its first n axes, those n as reduce ranges after its output's axes. Axes of size 1 are left
  out (the kernel indexes them with 0, no range)."""
  seen: set[tuple[int, int, bool]] = set()
  for u in root.toposort():
    shape = _shape(u)
    if shape is None: continue
    if u.op is Ops.REDUCE and isinstance(u.arg, tuple) and len(u.arg) == 2 and (src := _shape(u.src[0])) is not None:
      n = u.arg[1]
      seen.update((len(src) - n + j, d, True) for j, d in enumerate(src[:n]) if d > 1)
    seen.update((i, d, False) for i, d in enumerate(shape) if d > 1)
  return [Spot(*s) for s in sorted(seen)]


def _shape(u: UOp) -> tuple[int, ...] | None:
  try: s = u.shape
  except Exception: return None  # an effect, or a node whose shape the IR does not define
  return s if isinstance(s, tuple) and all(isinstance(d, int) for d in s) else None


def _pick(rng: random.Random, weights: dict[str, float], names: Sequence[str]) -> str:
  x = rng.random() * sum(weights.get(n, OPT_WEIGHTS[n]) for n in names)
  for n in names:
    x -= weights.get(n, OPT_WEIGHTS[n])
    if x <= 0: return n
  return names[-1]


def split_factor(rng: random.Random, bound: int) -> tuple[int, bool]:
  """A split factor for a range of this bound and whether it divides it (1 < f < bound and bound % f == 0)."""
  divisors = [f for f in range(2, bound) if bound % f == 0]
  if divisors and rng.random() < DIVIDING: return rng.choice(divisors), True
  others = [f for f in range(2, max(bound, 5) + 1) if f >= bound or bound % f]
  return rng.choice(others), False


def draw_opts(rng: random.Random, spots: Sequence[Spot], weights: dict[str, float] | None = None,
              features: set[str] | None = None) -> tuple[tuple, ...]:
  """1 to MAX_ACTIONS optimize actions over spots (see the module docstring), their features added to features."""
  w = weights or {}
  feats = features if features is not None else set()
  out: list[tuple] = []
  for _ in range(rng.randint(1, MAX_ACTIONS)):
    kind = _pick(rng, w, ["opt:split", "opt:unroll", "opt:global"]).split(":")[1]
    on = [s for s in spots if s.reduce == (_pick(rng, w, ["opt:on_reduce", "opt:on_loop"]) == "opt:on_reduce")] or list(spots)
    if not on or rng.random() < BLIND:
      spot = Spot(rng.randint(0, 3), rng.choice([2, 3, 4, 6, 8]), False)
      feats.add("opt:blind")
    else:
      spot = rng.choice(on)
      feats.add(f"opt:on_{'reduce' if spot.reduce else 'loop'}")
    feats.add(f"opt:{kind}")
    if kind == "split":
      f, divides = split_factor(rng, spot.bound)
      feats.add(f"opt:split:{'divides' if divides else 'not_dividing'}")
      out.append(("split", spot.axis, f))
    else: out.append((kind, spot.axis))
  return tuple(out)


def every_opt(spots: Sequence[Spot]) -> list[tuple]:
  """One action of each kind on each spot: a split by each proper divisor of its bound, an unroll, and a global of a
  loop. In a fixed order, so that a case number picks one deterministically."""
  out: list[tuple] = []
  for s in spots:
    out += [("split", s.axis, f) for f in range(2, s.bound) if s.bound % f == 0]
    out.append(("unroll", s.axis))
    if not s.reduce: out.append(("global", s.axis))
  return out


def kernel_opts(rng: random.Random, root: UOp, features: set[str] | None = None) -> tuple | None:
  """The optimize choice of a kernel-level case: the heuristic's (None) about half the time, none, or actions drawn
  over the ranges its kernels hold."""
  x = rng.random()
  if x < 0.45: return None
  if x < 0.55: return ()
  return draw_opts(rng, kernel_spots(root), None, features)

"""The draws every generator shares: a weighted pick, a Random of its own that leaves another's draws as they were, and
a tensor case's lowering choices."""
from __future__ import annotations

import random
from typing import Any

from fuzz.generate.case import IMAGE_SHARE
from fuzz.generate.opts import draw_opts, tensor_spots
from tinyspec.uop import UOp


def pick_weighted(rng: random.Random, items: list, weights: list[float]):
  """One of items, each with chance its weight over their sum (the last one when the draw passes them all)."""
  tot = sum(weights)
  x = rng.random() * tot
  for it, w in zip(items, weights):
    x -= w
    if x <= 0: return it
  return items[-1]


def side_random(rng: random.Random) -> random.Random:
  """A Random of its own, seeded from rng's state without drawing from it: choices made with it (adding variables) leave
  rng's draws, and so every case that makes none of them, as they were."""
  st = rng.getstate()
  # a tuple of ints (or Hypothesis' int state) hashes the same in every process; any other Random gives up one draw
  if isinstance(st, tuple) and len(st) > 1 and isinstance(st[1], tuple): return random.Random(hash(st[1]))
  return random.Random(hash(st) if isinstance(st, int) else rng.getrandbits(64))


def lowering_options(rng: random.Random, w: dict[str, float], features: set[str], root: UOp | None = None) -> dict[str, Any]:
  """The lowering choices of a tensor case (callify mode, realize policy, optimize actions over the ranges of root's
  kernels, fuzz.generate.opts), each weighted by its feature and added to `features`: what every generator of TENSOR
  cases gives its case."""
  def choose(prefix: str, items: list[str], default: dict[str, float] | None = None) -> str:
    it = pick_weighted(rng, items, [w.get(f"{prefix}:{i}", (default or {}).get(i, 1.0)) for i in items])
    features.add(f"{prefix}:{it}")
    return it
  opts = None
  if choose("opts", ["none", "some"]) == "some":
    # over the ranges the graph's kernels are expected to hold: blind axes and factors rarely meet a reduce range
    opts = draw_opts(rng, tensor_spots(root) if root is not None else [], w, features)
  out = {"callify": choose("callify", ["inline", "precompile"]), "realize": choose("realize", ["minimal", "all"]), "opts": opts}
  # images last, so the choices above stay the ones they were; a modest share: PoCL reads images slowly
  return {**out, "images": choose("images", ["off", "on"], IMAGE_SHARE) == "on"}

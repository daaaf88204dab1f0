"""The kinds of fuzz case, one row each, and `case_for`, which draws a campaign's case number `index` from them.

A campaign seeds one draw per case (`case_for(seed, index)`), so the same seed gives the same cases and a campaign
resumes from a case counter. Each row has a Random of its own, named by its stream and seeded by (seed, index): case_for
goes down KINDS, rolls each row's Random against the row's share (weight kind:<key>) and lets the first row whose roll
falls under it build the case from that Random. A row's roll draws from no other row's Random, so adding a row leaves
every case it does not take the case it was. The last row, the tensor cases, takes every case no row before it took.

A new kind of case is one row: its key (its weight is kind:<key>), its default share, its stream and its generator.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable

from fuzz.generate.aliasing import aliasing_case
from fuzz.generate.case import (ALIAS_SHARE, COMPOSE_SHARE, EDGE_SHARE, INT_SHARE, KERNEL_SHARE, MULTI_SHARE, RMW_SHARE, SCATTER_SHARE,
                                Case, default_weights)
from fuzz.generate.compositions import composition_case
from fuzz.generate.edge_kernels import edge_kernel_case
from fuzz.generate.index_kernels import kernel_case
from fuzz.generate.int_kernels import int_kernel_case
from fuzz.generate.kernels import rmw_kernel_case
from fuzz.generate.scatters import scatter_kernel_case
from fuzz.generate.shards import multi_case
from fuzz.generate.tensor import TensorGen


@dataclass
class Draw:
  """What one case is drawn from: its campaign seed and number, the weights, and its Randoms by stream (each made once)."""
  seed: int
  index: int
  weights: dict[str, float]
  randoms: dict[str, random.Random] = field(default_factory=dict)

  def random(self, stream: str) -> random.Random:
    """The Random of this case's stream ("": the main one, which the kernel and tensor rows share)."""
    if stream not in self.randoms:
      self.randoms[stream] = random.Random(f"tinyspec-fuzz{'-' + stream if stream else ''}:{self.seed}:{self.index}")
    return self.randoms[stream]


@dataclass(frozen=True)
class Kind:
  """A kind of case. It takes a case when its stream's Random draws under its share: weight kind:<key>, else `default`,
  except that a kind `off_with` names is off by default when that weight is 0 (the kernel kinds, when kind:kernel is),
  at most `cap`; a share of None takes every case that reaches the row, with no draw. `generate` builds the case from the
  row's Random, after its roll, and the case's Draw."""
  key: str
  default: float | None
  generate: Callable[[random.Random, Draw], Case]
  stream: str | None = None     # the Random's stream: the key when None
  off_with: str | None = None
  cap: float = 0.95

  @property
  def weight(self) -> str: return f"kind:{self.key}"

  def share(self, weights: dict[str, float]) -> float:
    """The chance that this kind takes a case that reaches its row, under these weights."""
    assert self.default is not None
    if self.weight in weights: s = weights[self.weight]
    elif self.off_with is not None and weights.get(self.off_with, math.inf) <= 0: s = 0.0
    else: s = self.default
    return min(self.cap, s)

  def takes(self, d: Draw) -> random.Random | None:
    """The row's Random when this kind takes the case (after its roll), else None."""
    rng = d.random(self.key if self.stream is None else self.stream)
    return rng if self.default is None or rng.random() < self.share(d.weights) else None


def _kernel(rng: random.Random, d: Draw) -> Case:
  # the read-modify-write generator draws from a Random of its own: the other kernel cases stay the ones they were
  side = d.random("rmw")
  if side.random() < min(0.95, d.weights.get("kind:rmw", RMW_SHARE)): return rmw_kernel_case(side)
  return kernel_case(rng)


def _tensor(rng: random.Random, d: Draw) -> Case:
  return TensorGen(rng, d.weights, side=d.random("side")).case()


def _with_defaults(d: Draw) -> dict[str, float]: return {**default_weights(), **d.weights}


# in the order they are rolled: the first kind whose roll falls under its share takes the case
KINDS: list[Kind] = [
  # integer kernels: simplify's rules on signed and unsigned values and their wrap points
  Kind("int", INT_SHARE, lambda rng, d: int_kernel_case(rng), off_with="kind:kernel"),
  # edge kernels: the spec's defined edge points through the renderers' guards
  Kind("edge", EDGE_SHARE, lambda rng, d: edge_kernel_case(rng, d.weights), off_with="kind:kernel"),
  # scatter kernels: data-dependent indices, atomics and the one-hot sums that become them
  Kind("scatter", SCATTER_SHARE, lambda rng, d: scatter_kernel_case(rng, d.weights), off_with="kind:kernel"),
  # kernel graphs, read-modify-write or of one kernel: rolled on the main Random, which the tensor cases continue
  Kind("kernel", KERNEL_SHARE, _kernel, stream="", cap=math.inf),
  # sharded tensor cases: tensors over several devices
  Kind("multi", MULTI_SHARE, lambda rng, d: multi_case(rng, d.weights)),
  # aliasing: a buffer read and written by one kernel
  Kind("alias", ALIAS_SHARE, lambda rng, d: aliasing_case(rng, _with_defaults(d))),
  # the frontend's compositions
  Kind("compose", COMPOSE_SHARE, lambda rng, d: composition_case(rng, _with_defaults(d))),
  # tensor graphs of single ops: every case no row before took
  Kind("tensor", None, _tensor, stream=""),
]


def kind_weights() -> list[str]:
  """The weight names of the kinds that draw for their share (kind:<key>), for fuzz.generate.case.check_weights."""
  return [k.weight for k in KINDS if k.default is not None]


def case_for(seed: int, index: int, weights: dict[str, float] | None = None) -> Case:
  """Case number `index` of the campaign with this seed (the same seed, index and weights give the same case)."""
  d = Draw(seed, index, weights or {})
  for kind in KINDS:
    if (rng := kind.takes(d)) is not None:
      c = kind.generate(rng, d)
      c.seed, c.index = seed, index
      return c
  raise AssertionError("the last kind takes every case")

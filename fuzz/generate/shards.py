"""Sharded tensor cases: TENSOR graphs over two or three devices, built with the frontend (Tensor.shard, Tensor.to,
value calls), which the multi pass (tinyspec/lower/multi.py) rewrites into per-device graphs with gathers and
all-reduces.

A case shards one to three inputs along a random axis (uneven splits included) or replicates them, then applies a
random sequence of steps, each a feature `multi:<step>` with a weight of the same name:

  elementwise   a binary op with another tensor of the pool (sharded the same way, along another axis, or
                replicated), a constant or a new replicated input; or a unary op
  reduce        sum or max over the sharded axis (an all-reduce, feature multi:allreduce) or over other axes
  view          reshape, permute, expand, pad, shrink, flip: some keep the sharded axis whole and run per shard,
                the others gather (and a shrink to exactly one shard's block selects that shard)
  matmul        with a replicated weight
  to            a gather onto one device (Tensor.to), sharded again along another axis
  call          a value call (tinyspec.frontend.function) on sharded args: an elementwise body, run per shard
                (multi:call_per_shard), or a body that reduces or reshapes across the split, run on the gathered
                args (multi:call_gathered)

and now and then (feature multi:grad) the gradients of a scalar loss of the result with respect to the inputs
(tinyspec.gradient), through all of it.

Values: float32 multiples of 1/4 in [-2, 2] or int32 in [-4, 4]. The multi pass sums per shard and then across shards,
an order other than the one-device graph's: int sums wrap alike in every order, and float sums of these stay within
fuzz.check.agree's tolerances (relative to the largest magnitude of an output). The unary ops are bounded (relu,
negation, sigmoid, a clip), so no value grows past what a chain of products of small numbers gives.

    @given(fuzz.generate.strategies.multi_cases())
    def test_my_pass(case): ...
"""
from __future__ import annotations

import math
import random
from typing import Callable

import numpy as np

from fuzz.generate.case import MULTI_STEP_WEIGHTS, Case
from fuzz.generate.compositions import largest_value, numbered
from fuzz.generate.draws import lowering_options
from fuzz.generate.safety import unsafe_reason
from tinyspec.autograd import gradient
from tinyspec.dtype import DType, dtypes
from tinyspec.frontend import Tensor, data_scope, function

DEVICES = ("CPU:0", "CPU:1", "CPU:2")
THREE_DEVICES = 0.25  # the share of cases over three devices (feature multi:devices3)
MAX_ELEMENTS = 48     # elements of any value a step builds (an expand or a pad that would pass it is not taken)
MAX_NODE = 64         # elements of any node of a case: the tensor generator's bound, which keeps evaluation cheap
GRAD_SHARE = 0.3      # the share of float cases whose results include gradients (feature multi:grad)
INT_SHARE = 0.25      # the share of int32 cases (exact in every order; no gradients)
ATTEMPTS = 10         # draws before the last one is kept even when the UB screen rejects it
Layout = int | None | str  # what a pool tensor is known to be: sharded along an axis, replicated (None), or "?" unknown


class ShardGen:
  """Builds one sharded TENSOR case from a Random; `pool` holds (tensor over the case's devices, its layout)."""

  def __init__(self, rng: random.Random, weights: dict[str, float] | None = None):
    self.rng, self.w = rng, weights or {}
    self.features: set[str] = {"kind:multi"}
    self.devs = DEVICES[:3] if rng.random() < THREE_DEVICES else DEVICES[:2]
    if len(self.devs) == 3: self.features.add("multi:devices3")
    self.dt = dtypes.int32 if rng.random() < INT_SHARE else dtypes.float32
    self.features.add(f"dtype:{self.dt.name}")
    self.pool: list[tuple[Tensor, Layout]] = []
    self.inputs: list[Tensor] = []  # the single-device data tensors the inputs are shards of (the gradients' wrt)

  # ---- values ----
  def data(self, shape: tuple[int, ...], dt: DType | None = None) -> Tensor:
    dt = dt or self.dt
    n = math.prod(shape)
    vals = [self.rng.randint(-8, 8) / 4 for _ in range(n)] if dt.is_float else [self.rng.randint(-4, 4) for _ in range(n)]
    return Tensor(np.array(vals, dt.np).reshape(shape), dt)

  def shape(self) -> tuple[int, ...]:
    out: list[int] = []
    for _ in range(self.rng.choice([1, 2, 2, 3])):
      out.append(self.rng.randint(1, max(1, min(6, MAX_ELEMENTS // max(1, math.prod(out))))))
    if max(out) < len(self.devs): out[self.rng.randrange(len(out))] = len(self.devs) + self.rng.randint(0, 2)
    return tuple(out)

  def shard(self, t: Tensor, replicate: float = 0.25) -> tuple[Tensor, Layout]:
    """t over the case's devices: along a random axis long enough to give every device a block, or replicated."""
    axes = [a for a, d in enumerate(t.shape) if d >= len(self.devs)]
    if not axes or self.rng.random() < replicate:
      self.features.add("multi:replicated")
      return t.shard(self.devs), None
    a = self.rng.choice(axes)
    self.features.add("multi:axis")
    if t.shape[a] % len(self.devs): self.features.add("multi:uneven")
    return t.shard(self.devs, a), a

  def new_input(self, shape: tuple[int, ...] | None = None, replicate: float = 0.25) -> tuple[Tensor, Layout]:
    x = self.data(shape if shape is not None else self.shape())
    self.inputs.append(x)
    return self.shard(x, replicate)

  # ---- choices ----
  def pick(self, pred: Callable[[Tensor], bool] = lambda t: True) -> tuple[Tensor, Layout]:
    """A pool entry whose tensor satisfies pred, or a new input (of rank 1 or more) when none does."""
    if (p := self.pick_if(pred)) is not None: return p
    self.pool.append(self.new_input())
    return self.pool[-1]

  def pick_if(self, pred: Callable[[Tensor], bool]) -> tuple[Tensor, Layout] | None:
    cands = [p for p in self.pool if pred(p[0])]
    if not cands: return None
    return self.rng.choices(cands, [1.0 + i for i in range(len(cands))])[0]  # favour recent values: deeper graphs

  def add(self, t: Tensor, layout: Layout) -> None:
    """Keep t when no value in its graph is bigger than MAX_NODE (a matmul's product before its sum is the biggest)."""
    if t.size <= MAX_ELEMENTS and largest_value(t) <= MAX_NODE: self.pool.append((t, layout))

  # ---- steps ----
  def step_elementwise(self) -> None:
    x, lx = self.pick()
    r = self.rng.random()
    if r < 0.3:
      self.add(self.unary(x), lx)
      return
    if r < 0.5:
      self.features.add("multi:const")
      y: Tensor | float | int = self.rng.choice([0.5, 2.0, -1.0, 1.25]) if self.dt.is_float else self.rng.choice([1, 2, -3])
    elif r < 0.7:
      self.features.add("multi:replicated_operand")
      y, _ = self.new_input(x.shape, replicate=1.0)
    else:
      y, ly = self.pick_if(lambda t: t.shape == x.shape and t is not x) or self.new_input(x.shape)
      if isinstance(lx, int) and isinstance(ly, int) and lx != ly: self.features.add("multi:reshard")
    op = self.rng.choice(["add", "sub", "mul", "max", "where"])
    out = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "max": lambda: x.maximum(y),
           "where": lambda: (x > 0).where(x, y)}[op]()
    self.add(out, lx if isinstance(lx, int) or not isinstance(y, Tensor) else "?")

  def unary(self, x: Tensor) -> Tensor:
    ops = ["neg", "relu", "clip"] + (["sigmoid"] if self.dt.is_float else [])
    op = self.rng.choice(ops)
    if op == "neg": return -x
    if op == "relu": return x.relu()
    if op == "clip": return x.clip(-2, 2)
    return x.sigmoid()

  def step_reduce(self) -> None:
    x, lx = self.pick(lambda t: t.ndim >= 1)
    axes = sorted(self.rng.sample(range(x.ndim), self.rng.randint(1, x.ndim)))
    if isinstance(lx, int) and lx in axes: self.features.add("multi:allreduce")
    keep = self.rng.random() < 0.3
    out = x.sum(axes, keepdim=keep) if self.rng.random() < 0.6 else x.max(axes, keepdim=keep)
    if isinstance(lx, int) and lx not in axes: lay: Layout = lx if keep else lx - sum(a < lx for a in axes)
    else: lay = None if isinstance(lx, int) or lx is None else "?"
    self.add(out, lay)

  def step_view(self) -> None:
    x, lx = self.pick(lambda t: t.ndim >= 1)
    op = self.rng.choice(["reshape", "permute", "expand", "pad", "shrink", "flip"])
    out, lay = getattr(self, f"_{op}")(x, lx)
    if out is not None:
      self.features.add(f"multi:{op}")
      self.add(out, lay)

  def _reshape(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    n, dims = x.size, []
    while n > 1 and len(dims) < 3:
      d = self.rng.choice([k for k in range(2, n + 1) if n % k == 0]) if len(dims) < 2 else n  # the last dim takes the rest
      dims.append(d)
      n //= d
    if self.rng.random() < 0.3: dims.insert(self.rng.randint(0, len(dims)), 1)
    shp = tuple(dims) or (1,)
    return (x.reshape(shp), "?") if shp != x.shape else (None, lx)

  def _permute(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    if x.ndim < 2: return None, lx
    order = list(range(x.ndim))
    self.rng.shuffle(order)
    return x.permute(order), order.index(lx) if isinstance(lx, int) else lx

  def _expand(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    k = self.rng.randint(2, 3)
    if x.size * k > MAX_ELEMENTS or x.ndim >= 4: return None, lx
    return x.unsqueeze(0).expand(k, *x.shape), lx + 1 if isinstance(lx, int) else lx

  def _pad(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    pads = [(self.rng.randint(0, 1), self.rng.randint(0, 1)) if self.rng.random() < 0.5 else None for _ in x.shape]
    if all(p is None or p == (0, 0) for p in pads): return None, lx
    if math.prod(d + (sum(p) if p else 0) for d, p in zip(x.shape, pads)) > MAX_ELEMENTS: return None, lx
    if isinstance(lx, int) and pads[lx] not in (None, (0, 0)): self.features.add("multi:view_gathers")
    return x._pad(pads), lx if isinstance(lx, int) and pads[lx] in (None, (0, 0)) else "?"

  def _shrink(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    window = []
    for d in x.shape:
      s = self.rng.randint(1, d)
      o = self.rng.randint(0, d - s)
      window.append((o, o + s) if self.rng.random() < 0.6 else None)
    if all(w is None or w == (0, d) for w, d in zip(window, x.shape)): return None, lx
    if isinstance(lx, int) and window[lx] is not None: self.features.add("multi:view_gathers")
    return x.shrink(window), lx if isinstance(lx, int) and window[lx] is None else "?"

  def _flip(self, x: Tensor, lx: Layout) -> tuple[Tensor | None, Layout]:
    a = self.rng.randrange(x.ndim)
    if lx == a: self.features.add("multi:view_gathers")
    return x.flip(a), lx if lx != a else "?"

  def step_matmul(self) -> None:
    x, lx = self.pick(lambda t: t.ndim >= 1 and t.dtype.is_float)
    k, m = x.shape[-1], self.rng.randint(1, 4)
    if x.size * m > MAX_NODE: return  # the product before the sum over k holds x.size * m elements
    w, _ = self.new_input((k, m), replicate=1.0)
    self.features.add("multi:matmul")
    out = x @ w
    self.add(out, lx if isinstance(lx, int) and lx < x.ndim - 1 else None if lx == x.ndim - 1 else "?")

  def step_to(self) -> None:
    x, _ = self.pick()
    one = x.to(self.rng.choice(self.devs))
    self.features.add("multi:gather")
    self.add(*self.shard(one))

  def step_call(self) -> None:
    x, lx = self.pick()
    if self.rng.random() < 0.5:
      # elementwise along any split: with a second arg of x's layout (or replicated), it runs per shard
      y, ly = self.pick_if(lambda t: t.shape == x.shape and t is not x) or (x, lx)
      if y is x or ly not in (lx, None): y, ly = self.new_input(x.shape, replicate=1.0)
      if isinstance(lx, int) and ly in (lx, None): self.features.add("multi:call_per_shard")
      c = self.rng.random()
      @function
      def ew(a: Tensor, b: Tensor):
        return (a * b + 1, a.relu()) if c < 0.5 else ((a - b).maximum(a),)
      outs = ew(x, y)
      for o in (outs if isinstance(outs, tuple) else (outs,)): self.add(o, lx)
      return
    # a body that reduces over every axis, or reshapes across the split: the call runs once, on the gathered args
    if isinstance(lx, int): self.features.add("multi:call_gathered")
    flat = self.rng.random() < 0.5
    @function
    def mix(a: Tensor):
      return (a.reshape(-1).flip(0) * 2,) if flat else (a.sum(), a.max(0))
    outs = mix(x)
    for o in (outs if isinstance(outs, tuple) else (outs,)): self.add(o, None)

  # ---- the case ----
  def results(self) -> list[Tensor]:
    used = {id(s) for t, _ in self.pool for s in t.uop.src}
    leaves = [t for t, _ in self.pool if id(t.uop) not in used]
    outs = list({id(t.uop): t for t in (leaves[-2:] or [self.pool[-1][0]])}.values())
    if self.dt.is_float and self.rng.random() < min(0.95, GRAD_SHARE * self.w.get("multi:grad", 1.0)):
      loss = sum(((o * o).sum() if o.ndim else o * o) for o in outs)
      grads = [Tensor(g) for g in gradient(loss.uop, [x.uop for x in self.inputs])]
      if all(largest_value(g) <= MAX_NODE for g in grads):
        self.features.add("multi:grad")
        outs += grads
    return outs

  def case(self) -> Case:
    for _ in range(self.rng.randint(1, 3)): self.pool.append(self.new_input())
    steps = list(MULTI_STEP_WEIGHTS)
    for _ in range(self.rng.randint(1, 6)):
      kind = self.rng.choices(steps, [max(0.0, self.w.get(f"multi:{k}", v)) for k, v in MULTI_STEP_WEIGHTS.items()])[0]
      if kind == "matmul" and not self.dt.is_float: kind = "elementwise"
      self.features.add(f"multi:step:{kind}")
      getattr(self, f"step_{kind}")()
    root, inputs = numbered(Tensor.sink(*self.results()))
    return Case(root, inputs, lowering_options(self.rng, self.w, self.features, root), "tensor", features=frozenset(self.features))


def multi_case(rng: random.Random, weights: dict[str, float] | None = None) -> Case:
  """A sharded TENSOR case (kind "tensor", feature kind:multi) the UB screen accepts (fuzz.generate.safety: a comparison
  of inexact floats, which an all-reduce's other order of summation could flip, among what it refuses): a draw it
  rejects is drawn again, up to ATTEMPTS times. The frontend forgets the data of the Tensors made for it."""
  for _ in range(ATTEMPTS):
    with data_scope(): c = ShardGen(rng, weights).case()
    if unsafe_reason(c.root, c.inputs) is None: break
  return c

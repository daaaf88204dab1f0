"""Fuzz cases built with the Tensor frontend: the compositions real models use (convolutions, pooling, gathers and
scatters through index arithmetic, padding modes, windows, scans, sorting networks), where the tensor generator's
one-op steps rarely reach.

A case is one to three of these applied to small tensors of whole numbers in [-3, 3], of a signed integer or float
dtype (weighted by the dtype:<name> features), now and then cast to another at the end: every op is exact on them and
no sum of products comes near int16's range (the largest, a 3x3 convolution over 3 channels, is 27 * 9 * 9 = 2,187
before the next op clamps it); an int8 sum wraps, as the IR defines it, the same in every backend. So the campaign's
oracles compare numbers exactly and the UB screens have nothing to refuse. Each
composition is a feature `compose:<name>` with a weight, so rule-coverage steering boosts the ones that reach rare
rules like any other generator choice.
"""
from __future__ import annotations

import random
from typing import Callable

import numpy as np

from fuzz.generate.case import COMPOSITION_NAMES, Case
from fuzz.generate.draws import lowering_options
from tinyspec.dtype import DType, dtypes
from tinyspec.frontend import Tensor, data_scope, function, inputs_of
from tinyspec.uop import Ops, UOp, substitute

LO, HI = -3, 3  # input values: exact through every composition below and far from any wrap
MAX_COMPOSE_SIZE = 1024  # elements of any value in a case (a conv's window view is the biggest): evaluation stays cheap
CALL_SHARE = 0.25  # the chance that a step is traced into a value call (feature compose:call)
CAST_SHARE = 0.25  # the chance that the result is cast to another dtype (feature compose:cast)
DTYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def _ints(rng: random.Random, shape: tuple[int, ...], dt: DType = dtypes.int32) -> Tensor:
  """Small whole numbers in [LO, HI] of dtype dt (exact in every dtype the compositions use)."""
  return Tensor(np.array([rng.randint(LO, HI) for _ in range(int(np.prod(shape)))], dt.np).reshape(shape), dt)


def _index(rng: random.Random, shape: tuple[int, ...], size: int) -> Tensor:
  return Tensor(np.array([rng.randrange(size) for _ in range(int(np.prod(shape)))], np.int32).reshape(shape), dtypes.int32)


def _clamped(t: Tensor) -> Tensor:
  """t kept in [LO, HI] again, so the next composition sees inputs as small as the first did."""
  return t.clip(LO, HI)


def _bounded(t: Tensor) -> Tensor:
  """t kept in [LO, HI] by two MAX ops, max(-max(-t, -HI), LO): the frontend's clip selects with WHERE, whose interval
  the UB screen takes as the join of both sides, so behind it a max_pool2d's padding value (-inf, an int's minimum)
  still seems to reach a cast; behind MAX the screen sees [LO, HI]."""
  c = lambda v: UOp.const(t.dtype, v).expand(t.shape)  # noqa: E731
  u = t.uop
  return Tensor(u.alu(Ops.NEG).alu(Ops.MAX, c(-HI)).alu(Ops.NEG).alu(Ops.MAX, c(LO)))


# each: (rng, x of shape (N, C, H, W) int32) -> a tensor of the same rank 4 form, or a new shape the next step reshapes
def _conv(rng: random.Random, x: Tensor) -> Tensor:
  n, c, h, w = x.shape
  k, pad, dil = rng.choice([1, 2, 3]), rng.choice([0, 1, 3]), rng.choice([1, 2])
  if dil * (k - 1) + 1 > min(h, w) + 2 * pad: k, dil = 1, 1  # the kernel must fit the padded input
  groups = rng.choice([g for g in (1, c) if c % g == 0])
  oc = groups * rng.randint(1, 2)
  wt = _ints(rng, (oc, c // groups, k, k), x.dtype)
  return x.conv2d(wt, groups=groups, stride=rng.choice([1, 2, 3]), padding=pad, dilation=dil)


def _max_pool(rng: random.Random, x: Tensor) -> Tensor:
  k, dil = rng.choice([1, 2, 3]), rng.choice([1, 2])
  if dil * (k - 1) + 1 > min(x.shape[2:]): k, dil = 1, 1  # the window must fit the input
  return x.max_pool2d(kernel_size=k, stride=rng.choice([1, 2, k + 1]), dilation=dil)


def _pad(rng: random.Random, x: Tensor) -> Tensor:
  mode = rng.choice(["constant", "reflect", "replicate", "circular"])
  h, w = x.shape[2:]
  most = min(h, w) - 1 if mode == "reflect" else min(h, w) if mode == "circular" else 3
  p = [rng.randint(0, max(0, most)) for _ in range(4)]
  return x.pad(p, mode=mode, value=rng.randint(LO, HI)) if mode == "constant" else x.pad(p, mode=mode)


def _gather(rng: random.Random, x: Tensor) -> Tensor:
  dim = rng.randrange(4)
  shape = list(x.shape)
  shape[dim] = rng.randint(1, 3)
  return x.gather(dim, _index(rng, tuple(shape), x.shape[dim]))


def _scatter(rng: random.Random, x: Tensor) -> Tensor:
  dim = rng.randrange(4)
  shape = list(x.shape)
  shape[dim] = rng.randint(1, x.shape[dim])
  idx, src = _index(rng, tuple(shape), x.shape[dim]), _ints(rng, tuple(shape), x.dtype)
  reduce = rng.choice(["sum", "prod", "amax", "amin"])
  return x.scatter_reduce(dim, idx, src, reduce, include_self=rng.random() < 0.5)


def _embedding(rng: random.Random, x: Tensor) -> Tensor:
  """x as an embedding table of N*C*H rows of W: rows looked up at data indices (the forward), or the table plus an
  embedding's backward written as its one-hot sum, the gradient of sum(embedding(idx, x) * g) (the scatter pass makes it
  an atomic scatter-add; the frontend's backward is only for floats, this form is the same for every dtype)."""
  n, c, h, w = x.shape
  table = x.reshape(n * c * h, w)
  idx = _index(rng, (rng.randint(1, 6),), n * c * h)
  if rng.random() < 0.5: return idx.embedding(table).reshape(1, 1, idx.shape[0], w)
  g = _ints(rng, (idx.shape[0], w), x.dtype)
  hot = Tensor.arange(n * c * h) == idx.unsqueeze(-1)
  return x + hot.unsqueeze(-1).where(g.unsqueeze(1), 0).sum(0, dtype=x.dtype).reshape(n, c, h, w)


def _layout(rng: random.Random, x: Tensor) -> Tensor:
  pick = rng.randrange(5)
  if pick == 0: return x.cat(_ints(rng, x.shape, x.dtype), dim=rng.randrange(4))
  if pick == 1: return x.stack(_ints(rng, x.shape, x.dtype), dim=rng.randrange(5)).flatten(0, 1)
  if pick == 2: return x.roll(rng.randint(-3, 3), dims=rng.randrange(4))
  if pick == 3: return x.repeat(1, 1, rng.randint(1, 2), rng.randint(1, 2))
  return x.repeat_interleave(rng.randint(1, 2), dim=rng.randrange(4))


def _window(rng: random.Random, x: Tensor) -> Tensor:
  dim = rng.choice([2, 3])
  size = rng.randint(1, x.shape[dim])
  u = x.unfold(dim, size, rng.randint(1, 3))  # (..., windows, ..., size)
  return u.sum(-1)


def _scan(rng: random.Random, x: Tensor) -> Tensor:
  dim = rng.randrange(4)
  pick = rng.randrange(3)
  if pick == 0: return x.cumsum(dim)
  if pick == 1: return x.cummax(dim)[0]
  return x.sort(dim=dim, descending=rng.random() < 0.5)[0]


def _contract(rng: random.Random, x: Tensor) -> Tensor:
  n, c, h, w = x.shape
  if rng.random() < 0.5: return Tensor.einsum("nchw,cd->ndhw", x, _ints(rng, (c, rng.randint(1, 3)), x.dtype))
  return x @ _ints(rng, (w, rng.randint(1, 3)), x.dtype)


COMPOSITIONS: dict[str, Callable[[random.Random, Tensor], Tensor]] = dict(zip(COMPOSITION_NAMES, (
  _conv, _max_pool, _pad, _gather, _scatter, _layout, _window, _scan, _contract, _embedding)))


def largest_value(t: Tensor) -> int:
  """The elements of the biggest value in t's graph (call bodies included)."""
  return max(u.size for u in t.uop.toposort() if u.shape_ok and u.shape is not None)


def _step(rng: random.Random, name: str, x: Tensor, in_call: bool) -> Tensor:
  """One composition on x, traced inside a value call (its weights captured as extra args) when in_call."""
  if not in_call: return COMPOSITIONS[name](rng, x)
  return function(lambda t: COMPOSITIONS[name](rng, t), name=f"compose_{name}")(x)


def composition_case(rng: random.Random, weights: dict[str, float]) -> Case:
  """A TENSOR case of one to three compositions on a random tensor of shape (N, C, H, W) (see _composed); the
  frontend forgets the data of every Tensor made for it, so a campaign's millions of cases do not pile up there."""
  with data_scope(): return _composed(rng, weights)


def _composed(rng: random.Random, weights: dict[str, float]) -> Case:
  """One to three compositions, each step inside a value call now and then, with the lowering choices every tensor case
  has. No value in it holds more than MAX_COMPOSE_SIZE elements: a step that would build a bigger one ends the chain
  (the first is redrawn on a smaller input)."""
  features: set[str] = {"kind:compose"}
  shape = (rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6))
  names = list(COMPOSITIONS)
  pick = lambda: rng.choices(names, [weights.get(f"compose:{n}", 1.0) for n in names])[0]  # noqa: E731
  in_call = lambda: rng.random() < min(0.95, CALL_SHARE * weights.get("compose:call", 1.0))  # noqa: E731
  dt = rng.choices(DTYPES, [weights.get(f"dtype:{d.name}", 1.0) for d in DTYPES])[0]
  features.add(f"dtype:{dt.name}")
  x = _ints(rng, shape, dt)
  used: list[str] = []
  for _ in range(rng.randint(1, 3)):
    name, call = pick(), in_call()
    y = _step(rng, name, x, call)
    while not used and largest_value(y) > MAX_COMPOSE_SIZE:  # the first step on a smaller input: (1, 1, 1, 1) always fits
      shape = tuple(max(1, d // 2) for d in shape)
      x = _ints(rng, shape, dt)
      y = _step(rng, name, x, call)
    if used and largest_value(y) > MAX_COMPOSE_SIZE: break
    used.append(name)
    if call: features.add("compose:call")
    if y.ndim != 4 or 0 in y.shape:  # a composition that leaves nothing to compose further ends the chain
      x = y
      break
    x = _clamped(y)
  features.update(f"compose:{n}" for n in used)
  if rng.random() < min(0.95, CAST_SHARE * weights.get("compose:cast", 1.0)):  # clamped, its values fit every dtype
    x = _bounded(x).cast(rng.choice([d for d in DTYPES if d is not x.dtype]))
    features.add("compose:cast")
  root, inputs = numbered(Tensor.sink(x))
  return Case(root, inputs, lowering_options(rng, weights, features, root), "tensor", features=frozenset(features))


def numbered(root: UOp) -> tuple[UOp, dict[int, np.ndarray]]:
  """root with its BUFFERs numbered 1, 2, ... in walk order, and their inputs: the frontend numbers buffers from a
  process-wide counter, so without this the same seed and case index would give another graph on every call."""
  data = inputs_of(root)
  bufs = [u for u in root.toposort() if u.op is Ops.BUFFER]
  new = {b: UOp.buffer(b.dtype, b.arg.size, b.arg.device, b.arg.addrspace, id=i + 1) for i, b in enumerate(bufs)}
  return substitute(root, new), {new[b].arg.id: data[b.arg.id] for b in bufs if b.arg.id in data}

"""Fuzz cases built with the Tensor frontend: the compositions real models use (convolutions, pooling, gathers and
scatters through index arithmetic, padding modes, windows, scans, sorting networks), where the tensor generator's
one-op steps rarely reach.

A case is one to three of these applied to small int32 tensors with values in [-3, 3]: every op is exact on them and no
sum of products comes near int32's range (the largest, a 3x3 convolution over 3 channels, is 27 * 9 * 9 = 2,187 before
the next op), so the campaign's oracles compare numbers exactly and the UB screens have nothing to refuse. Each
composition is a feature `compose:<name>` with a weight, so rule-coverage steering boosts the ones that reach rare
rules like any other generator choice.
"""
from __future__ import annotations

import random
from typing import Callable

import numpy as np

from fuzz.generate.strategies import COMPOSITION_NAMES, Case
from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.uop import Ops, UOp, substitute

LO, HI = -3, 3  # input values: exact through every composition below and far from any wrap


def _ints(rng: random.Random, shape: tuple[int, ...]) -> Tensor:
  return Tensor(np.array([rng.randint(LO, HI) for _ in range(int(np.prod(shape)))], np.int32).reshape(shape), dtypes.int32)


def _index(rng: random.Random, shape: tuple[int, ...], size: int) -> Tensor:
  return Tensor(np.array([rng.randrange(size) for _ in range(int(np.prod(shape)))], np.int32).reshape(shape), dtypes.int32)


def _clamped(t: Tensor) -> Tensor:
  """t kept in [LO, HI] again, so the next composition sees inputs as small as the first did."""
  return t.clip(LO, HI)


# each: (rng, x of shape (N, C, H, W) int32) -> a tensor of the same rank 4 form, or a new shape the next step reshapes
def _conv(rng: random.Random, x: Tensor) -> Tensor:
  n, c, h, w = x.shape
  k, pad, dil = rng.choice([1, 2, 3]), rng.choice([0, 1, 3]), rng.choice([1, 2])
  if dil * (k - 1) + 1 > min(h, w) + 2 * pad: k, dil = 1, 1  # the kernel must fit the padded input
  groups = rng.choice([g for g in (1, c) if c % g == 0])
  oc = groups * rng.randint(1, 2)
  wt = _ints(rng, (oc, c // groups, k, k))
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
  idx, src = _index(rng, tuple(shape), x.shape[dim]), _ints(rng, tuple(shape))
  reduce = rng.choice(["sum", "prod", "amax", "amin"])
  return x.scatter_reduce(dim, idx, src, reduce, include_self=rng.random() < 0.5)


def _layout(rng: random.Random, x: Tensor) -> Tensor:
  pick = rng.randrange(5)
  if pick == 0: return x.cat(_ints(rng, x.shape), dim=rng.randrange(4))
  if pick == 1: return x.stack(_ints(rng, x.shape), dim=rng.randrange(5)).flatten(0, 1)
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
  if rng.random() < 0.5: return Tensor.einsum("nchw,cd->ndhw", x, _ints(rng, (c, rng.randint(1, 3))))
  return x @ _ints(rng, (w, rng.randint(1, 3)))


COMPOSITIONS: dict[str, Callable[[random.Random, Tensor], Tensor]] = dict(zip(COMPOSITION_NAMES, (
  _conv, _max_pool, _pad, _gather, _scatter, _layout, _window, _scan, _contract)))


def composition_case(rng: random.Random, weights: dict[str, float]) -> Case:
  """A TENSOR case of one to three compositions on a random int32 tensor of shape (N, C, H, W)."""
  x = _ints(rng, (rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6)))
  names = list(COMPOSITIONS)
  used = []
  for _ in range(rng.randint(1, 3)):
    name = rng.choices(names, [weights.get(f"compose:{n}", 1.0) for n in names])[0]
    y = COMPOSITIONS[name](rng, x)
    if y.ndim != 4 or 0 in y.shape: break  # a composition that leaves nothing to compose further ends the chain
    used.append(name)
    x = _clamped(y)
  if not used:  # the first one left an empty or other-rank tensor: that graph is still a case
    used.append(name)
    x = y
  root, inputs = _numbered(Tensor.sink(x))
  return Case(root, inputs, {}, "tensor", features=frozenset({"kind:compose", *(f"compose:{n}" for n in used)}))


def _numbered(root: UOp) -> tuple[UOp, dict[int, np.ndarray]]:
  """root with its BUFFERs numbered 1, 2, ... in walk order, and their inputs: the frontend numbers buffers from a
  process-wide counter, so without this the same seed and case index would give another graph on every call."""
  data = inputs_of(root)
  bufs = [u for u in root.toposort() if u.op is Ops.BUFFER]
  new = {b: UOp.buffer(b.dtype, b.arg.size, b.arg.device, b.arg.addrspace, id=i + 1) for i, b in enumerate(bufs)}
  return substitute(root, new), {new[b].arg.id: data[b.arg.id] for b in bufs if b.arg.id in data}

"""Scatter kernels: KERNEL_GRAPH cases whose kernels write where data points, through atomics or the one-hot sums that
become them.

Two forms (feature `scatter:<form>`, weight of the same name), each over an output of `rows` rows of `width` columns
(an embedding table's shape), a loop of `n` positions and an int32 index per position loaded from data, some of them
outside the rows:

  onehot   out[o, d] = (base[o, d] +) SUM_r WHERE(o + k == idx[r], v[r, d], 0) with r a REDUCE range: what rangeify writes
           for an embedding's backward or a scatter_reduce, and what the scatter pass turns into an atomic scatter-add
           (the compared value is o + k, cast to int32 or left `index`; now and then the WHERE is a gated LOAD, the
           simplifier's form of it)
  atomic   for r, d: ATOMIC(ADD or MAX, out[t * width + d], v[r, d], 0 <= t < rows), t = idx[r] - k: a histogram or a
           scatter-max written directly, its r loop made GLOBAL now and then (threads that meet on an element)

Values keep every order of a float sum exact: multiples of 1/4 in [-8, 8], at most MAX_ELEMENTS of them per element,
far inside float32's 24 bits; ints are drawn from the whole dtype, their sums wrap as the IR defines, the same in every
order. Built with the IR only and screened by fuzz.generate.kernel_safety.

    @given(fuzz.generate.strategies.scatters())
    def test_my_pass(case): ...
"""
from __future__ import annotations

import random

import numpy as np

from fuzz.generate.case import SCATTER_FORM_WEIGHTS, Case
from fuzz.generate.kernel_safety import first_screened
from tinyspec.dtype import DType, dtypes
from tinyspec.ops.atomic import ATOMIC_DTYPES
from tinyspec.uop import AxisType, Ops, RangeArg, UOp

MAX_ELEMENTS = 64    # elements of any buffer (the positions' values: positions * width)
MAX_ROWS = 12
MAX_WIDTH = 4
ATTEMPTS = 10        # draws before the last one is kept even when the screen rejects it (the oracles skip it then)
IDX = dtypes.index


def _values(rng: random.Random, dt: DType, n: int) -> np.ndarray:
  if dt.is_float: return np.array([rng.randint(-32, 32) / 4 for _ in range(n)], dt.np)
  edges = [dt.max, dt.min, dt.max - 1, 0, 1, -1 if dt.is_signed else 2]
  return np.array([rng.choice(edges) if rng.random() < 0.2 else rng.randint(max(dt.min, -1000), min(dt.max, 1000)) for _ in range(n)], dt.np)


class ScatterGen:
  def __init__(self, rng: random.Random, weights: dict[str, float] | None = None):
    self.rng, self.w = rng, weights or {}
    self.features: set[str] = {"kind:scatter"}
    self.dt = rng.choice(ATOMIC_DTYPES)
    self.features.add(f"dtype:{self.dt.name}")
    self.rows, self.width = rng.randint(1, MAX_ROWS), rng.randint(1, MAX_WIDTH)
    self.n = rng.randint(1, MAX_ELEMENTS // self.width)
    self.k = rng.choice([0, 0, 1, -1, 3])
    # indices around the rows: a few fall outside and land nowhere
    self.idx = np.array([rng.randint(self.k - 2, self.k + self.rows + 1) for _ in range(self.n)], np.int32)

  def _bufs(self, with_base: bool) -> tuple[list[UOp], dict[int, np.ndarray]]:
    size, dt = self.rows * self.width, self.dt
    bufs = [UOp.buffer(dt, size, id=1), UOp.buffer(dtypes.int32, self.n, id=2), UOp.buffer(dt, self.n * self.width, id=3)]
    inputs = {1: _values(self.rng, dt, size), 2: self.idx, 3: _values(self.rng, dt, self.n * self.width)}
    if with_base:
      bufs.append(UOp.buffer(dt, size, id=4))
      inputs[4] = _values(self.rng, dt, size)
    return bufs, inputs

  def onehot(self) -> tuple[UOp, dict[int, np.ndarray], list[UOp]]:
    rng, dt, w = self.rng, self.dt, self.width
    with_base = rng.random() < 0.4
    bufs, inputs = self._bufs(with_base)
    out, ix, v = (UOp.param(s, b.dtype, b.arg.size) for s, b in enumerate(bufs[:3]))
    o, d = UOp.range(self.rows, 0), UOp.range(w, 1)
    r = UOp(Ops.RANGE, IDX, (UOp.const(IDX, self.n),), RangeArg(2, AxisType.REDUCE))
    a = o + self.k if self.k else o
    x = ix.index(r).load()
    if rng.random() < 0.7: a = a.cast(dtypes.int32)
    else: x = x.cast(IDX)
    eq = UOp(Ops.CMPEQ, dtypes.bool, (a, x) if rng.random() < 0.5 else (x, a))
    vi = v.index(r * w + d)
    if rng.random() < 0.3:
      hot = vi.load(UOp.const(dt, 0), eq)
      self.features.add("scatter:gated_load")
    else: hot = eq.where(vi.load(), UOp.const(dt, 0))
    val = UOp(Ops.REDUCE, dt, (hot, r), Ops.ADD)
    if with_base:
      val = val + UOp.param(3, dt, self.rows * w).index(o * w + d).load()
      self.features.add("scatter:base")
    body = UOp(Ops.SINK, src=(out.index(o * w + d).store(val).end(o, d),))
    return body, inputs, bufs

  def atomic(self) -> tuple[UOp, dict[int, np.ndarray], list[UOp]]:
    rng, w = self.rng, self.width
    bufs, inputs = self._bufs(False)
    out, ix, v = (UOp.param(s, b.dtype, b.arg.size) for s, b in enumerate(bufs))
    kind = AxisType.GLOBAL if rng.random() < 0.3 else AxisType.LOOP
    r = UOp(Ops.RANGE, IDX, (UOp.const(IDX, self.n),), RangeArg(0, kind))
    d = UOp.range(w, 1)
    t = ix.index(r).load().cast(IDX)
    if self.k: t = t + UOp.const(IDX, -self.k)
    gate = (UOp.const(IDX, -1) < t) & (t < UOp.const(IDX, self.rows))
    op = rng.choice([Ops.ADD, Ops.ADD, Ops.MAX])
    self.features.add(f"scatter:atomic:{op.name}")
    if kind is AxisType.GLOBAL: self.features.add("scatter:threads")
    body = UOp(Ops.SINK, src=(out.index(t * w + d).atomic(op, v.index(r * w + d).load(), gate).end(r, d),))
    return body, inputs, bufs

  def case(self) -> Case:
    forms = list(SCATTER_FORM_WEIGHTS)
    ws = [max(0.0, self.w.get(f"scatter:{f}", SCATTER_FORM_WEIGHTS[f])) for f in forms]
    form = self.rng.choices(forms, ws)[0] if sum(ws) > 0 else self.rng.choice(forms)
    self.features.add(f"scatter:{form}")
    body, inputs, bufs = getattr(self, form)()
    call = UOp(Ops.CALL, src=(body, *bufs), arg="scatter")
    root = UOp(Ops.SINK, src=(bufs[0].after(call),))
    return Case(root, inputs, {"callify": "inline", "realize": "minimal", "opts": None}, "kernel", features=frozenset(self.features))


def scatter_kernel_case(rng: random.Random, weights: dict[str, float] | None = None) -> Case:
  """A scatter kernel case (kind "kernel") the UB screen accepts: a draw it rejects is drawn again."""
  return first_screened(lambda _: ScatterGen(rng, weights).case(), ATTEMPTS)

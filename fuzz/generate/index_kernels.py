"""Integer index expressions over ranges and bounded variables, and the kernel graphs of one kernel that load through
them (kind "kernel": the indexing rules' cases)."""
from __future__ import annotations

import math
import random

import numpy as np

from fuzz.generate.case import Case
from fuzz.generate.draws import side_random
from fuzz.generate.opts import kernel_opts
from fuzz.generate.values import input_values
from tinyspec.dtype import dtypes
from tinyspec.uop import AxisType, Ops, UOp


def index_expr(rng: random.Random, ranges: list[UOp], depth: int = 3, variables: list[UOp] | None = None) -> UOp:
  """A non-negative `index` expression over the ranges (and the bounded variables, when given, non-negative ones): CONST,
  RANGE, DEFINE_VAR, ADD, MUL, IDIV, MOD, MAX, WHERE of a comparison."""
  if depth == 0 or rng.random() < 0.3:
    if variables and rng.random() < 0.25: return rng.choice(variables)
    return rng.choice(ranges) if ranges and rng.random() < 0.7 else UOp.const(dtypes.index, rng.randint(0, 8))
  op = rng.choice([Ops.ADD, Ops.ADD, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.WHERE, Ops.SUB])
  sub = lambda: index_expr(rng, ranges, depth - 1, variables)  # noqa: E731
  a = sub()
  if op in (Ops.IDIV, Ops.MOD): return a.alu(op, UOp.const(dtypes.index, rng.randint(1, 9)))
  if op is Ops.MUL: return a * UOp.const(dtypes.index, rng.randint(0, 4)) if rng.random() < 0.7 else a * sub()
  b = sub()
  if op is Ops.WHERE: return (a < b).where(sub(), b)
  if op is Ops.SUB: return (a + b).alu(Ops.SUB, b) if rng.random() < 0.5 else a.maximum(b).alu(Ops.SUB, b)
  return a.alu(op, b)


def new_variables(rng: random.Random, n: int) -> list[UOp]:
  """n bounded index variables with non-negative bounds, named v0, v1, ..."""
  out = []
  for i in range(n):
    lo = rng.choice([0, 0, 1, 2])
    out.append(UOp.variable(f"v{i}", lo, lo + rng.choice([0, 1, 3, 7, 15])))
  return out


def variable_values(rng: random.Random, variables: list[UOp]) -> dict[str, int]:
  """A value in its bounds for each variable: what every call of one graph binds it to."""
  return {v.arg.name: rng.randint(v.arg.min, v.arg.max) for v in variables}


def bind_variables(call: UOp, values: dict[str, int]) -> UOp:
  """call with a BIND arg, after its other args, for every variable its body reads (name order), to its value."""
  vs = sorted({u.arg.name: u for u in call.src[0].toposort() if u.op is Ops.DEFINE_VAR}.items())
  return call.replace(src=(*call.src, *(v.bind(values[n]) for n, v in vs))) if vs else call


def in_bounds(idx: UOp, size: int) -> UOp:
  """idx wrapped into [0, size) when its bounds do not already prove it."""
  if idx.vmin >= 0 and idx.vmax < size: return idx
  if idx.vmin < 0: idx = idx.maximum(UOp.const(dtypes.index, 0))
  return idx % UOp.const(dtypes.index, size)


def kernel_case(rng: random.Random) -> Case:
  """A small KERNEL_GRAPH: one kernel that stores an expression of loads at index expressions into a new buffer."""
  inputs: dict[int, np.ndarray] = {}
  n_in = rng.randint(1, 2)
  shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 2)))
  out_size = math.prod(shape)
  dt = rng.choice([dtypes.int32, dtypes.float32, dtypes.int64])
  rs = [UOp.range(d, i) for i, d in enumerate(shape)]
  side = side_random(rng)
  variables = new_variables(side, side.randint(1, 2)) if side.random() < 0.3 else None
  flat = UOp.const(dtypes.index, 0)
  for r_, d in zip(rs, shape): flat = flat * UOp.const(dtypes.index, d) + r_
  params, bufs = [UOp.param(0, dt, out_size)], [UOp.buffer(dt, out_size, id=1)]
  val: UOp | None = None
  for k in range(n_in):
    size = rng.randint(1, 12)
    p = UOp.param(k + 1, dt, size)
    b = UOp.buffer(dt, size, id=k + 2)
    inputs[b.arg.id] = input_values(rng, dt, size) if not dt.is_float else np.array([rng.randint(-8, 8) / 4 for _ in range(size)], dtype=dt.np)
    params.append(p)
    bufs.append(b)
    ld = p.index(in_bounds(index_expr(rng, rs, variables=variables), size)).load()
    val = ld if val is None else val.alu(rng.choice([Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB]), ld)
  assert val is not None
  if rng.random() < 0.3 and len(rs) > 1:
    red = UOp.range(shape[-1], len(rs), AxisType.REDUCE)
    val = UOp(Ops.REDUCE, dt, (val.alu(Ops.ADD, params[1].index(in_bounds(index_expr(rng, [*rs, red]), params[1].arg.size)).load()), red), Ops.ADD)
  st_ = params[0].index(in_bounds(flat, out_size)).store(val)
  ksink = UOp(Ops.SINK, src=(st_.end(*rs),))
  call = bind_variables(UOp(Ops.CALL, src=(ksink, *bufs), arg="k"), variable_values(side, variables or []))
  root = UOp(Ops.SINK, src=(bufs[0].after(call),))
  feats = {"kind:kernel"} | ({"var:kernel"} if len(call.src) > len(bufs) + 1 else set())
  opts = kernel_opts(rng, root, feats)
  return Case(root, inputs, {"callify": "inline", "realize": "minimal", "opts": opts}, "kernel", features=frozenset(feats))

"""Edge kernels: KERNEL_GRAPH cases whose one kernel reaches the points the spec defines where C does not, through the
constructs a renderer must guard, mask or saturate to implement them.

Tensor graphs and the other kernel generators keep away from these points; here each output of a one-loop kernel is
one construct over loads of inputs that hold the points, drawn on purpose (feature `edge:<construct>`, weight of the
same name, so coverage steering can tune each):

  divmod    IDIV and MOD by divisors holding 0 and -1, dividends holding MIN (C: undefined; tinyspec: a // 0 == 0,
            a % 0 == a, MIN // -1 wraps)
  shift     SHL and SHR by counts past the width and negative (taken modulo the shift width)
  cast      float -> int casts of NaN, infinities and values past the target's range (0 and saturation)
  negzero   a -0.0 constant, moved uncomputed, then bitcast to an int or inverted (its sign shows: 1 / -0.0 is -inf)
  nan       MAX and comparisons of NaN and infinities (MAX propagates NaN; comparisons with NaN are false but CMPNE)
  math64    float64 SQRT, EXP2, LOG2, SIN of values float32 cannot hold (past its range, or of more precision)
  wrap      signed add, sub, mul, neg at MIN and MAX, and comparisons of the wrapped result (two's complement wraps)
  small     casts into the small floats (float16, bfloat16, fp8) of their edge values (+-max, just past it, where float16
            and bfloat16 give inf and fp8 saturates, the smallest normal and subnormal, ties to even, NaN, +-inf, -0.0),
            and out of them (to wider floats and ints), their selection by WHERE, MAX and comparisons of float16 and
            bfloat16, and bitcasts of their bits (tinyspec.dtype.round_float; fp8 only where the spec admits it)

Every case passes fuzz.generate.kernel_safety, whose notion of what is defined is the op registry's
(tinyspec.ops.scalar.left_open); built with the IR only: generating a case runs no pass.

    @given(fuzz.generate.strategies.edge_kernels())
    def test_my_renderer(case): ...
"""
from __future__ import annotations

import math
import random
from typing import Callable

import numpy as np

from fuzz.generate.case import EDGE_CONSTRUCT_WEIGHTS, Case
from fuzz.generate.draws import side_random
from fuzz.generate.int_kernels import wrap_points
from fuzz.generate.kernel_safety import first_screened
from fuzz.generate.values import edge_values, special_values
from tinyspec.dtype import DType, dtypes, finfo
from tinyspec.ops.classes import accepts
from tinyspec.ops.scalar import shift_bits
from tinyspec.uop import Ops, UOp

ATTEMPTS = 10      # draws before the last one is kept even when the screen rejects it (the oracles skip it then)
# the chance that a construct is `small` instead, decided by a Random of its own (so a case that draws none is the case it
# was before) and scaled by the weights edge:small and dtype:small (the small floats' weight in every generator)
SMALL_SHARE = 0.08
INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
SIGNED_WIDE = (dtypes.int32, dtypes.int64)
# float64 values float32 rounds away: past its range, below its denormals, or of more digits than it keeps
MATH64_VALUES = (1e300, 2.5e38 * 8, 7.3e-50, 300.5, 1000.25, -700.75, 123456789.123, -2.5e10 + 0.3, 1.0000001, 0.1, 3.0)


def float_pool(dt: DType) -> list[float]:
  """Float values where the spec's meanings change: edge and special values, and values past every int's range."""
  return [*edge_values(dt), *special_values(dt), 0.0, 1.0, -1.0, 2.5, -2.5, 127.9, -128.5, 255.5, 3e9, -3e9, 1.9e19, -9.3e18]


def small_float_pool(dt: DType) -> list[float]:
  """Values (as Python floats) at which converting into the small float dt changes meaning: +-max; just past it, by a
  quarter and by half an ulp of max (rounds back to max; the tie, which rounds to even: up to inf for float16 and
  bfloat16, whose max is odd) and far past it (inf, or max on fp8, which saturates); the smallest normal, the smallest
  subnormal and the largest subnormal; ties to even (1 + eps/2 down to 1, 1 + 3eps/2 up to 1 + 2eps, half the smallest
  subnormal down to 0, 3/2 of it up to twice it); -0.0, NaN and +-inf (NaN on the fp8 dtypes with no infinity: e4m3fn, the fnuz ones)."""
  fi = finfo(dt)
  mx, eps, sub, tiny = float(fi.max), float(fi.eps), float(fi.smallest_subnormal), float(fi.tiny)
  ulp = mx * eps / 2  # max is 2**emax * (2 - eps): its ulp is 2**emax * eps
  return [mx, -mx, mx + ulp / 4, -(mx + ulp / 2), mx + ulp / 2, 4 * mx, -4 * mx, tiny, -tiny, sub, -sub, tiny - sub,
          1 + eps / 2, 1 + 3 * eps / 2, -(1 + eps / 2), sub / 2, 3 * sub / 2, -0.0, 0.0, 1.0, math.nan, math.inf, -math.inf]


class EdgeKernelGen:
  """One KERNEL_GRAPH case of an edge kernel, drawn from a Random."""

  def __init__(self, rng: random.Random, weights: dict[str, float] | None = None):
    self.rng, self.w = rng, weights or {}
    self.n = rng.choice([4, 6, 8, 12, 16])
    self.features: set[str] = {"kind:kernel", "kind:edge"}
    self.inputs: dict[int, np.ndarray] = {}
    self.bufs: list[UOp] = []
    self.params: list[UOp] = []
    self.i = UOp.range(self.n, 0)
    self.n_outputs = rng.choice([2, 3, 4, 5])  # constructs are cheap next to the compile: several per kernel
    self.srng = random.Random(f"tinyspec-fuzz-edge-small:{side_random(rng).getrandbits(64)}")

  # ---- leaves ----
  def load(self, dt: DType, pool: list) -> UOp:
    """A load at the loop index of a new input of dt holding values of pool (each point at least once when it fits)."""
    r = self.rng
    vals = list(pool) if len(pool) <= self.n else r.sample(list(pool), self.n)
    vals += [r.choice(pool) for _ in range(self.n - len(vals))]
    r.shuffle(vals)
    b = UOp.buffer(dt, self.n, id=100 + len(self.bufs))
    with np.errstate(over="ignore"): self.inputs[b.arg.id] = np.array(vals, dtype=dt.np)
    p = UOp.param(self.n_outputs + len(self.params), dt, self.n)  # the outputs take the first slots
    self.bufs.append(b)
    self.params.append(p)
    return p.index(self.i).load()

  def int_pool(self, dt: DType) -> list[int]:
    return wrap_points(dt) if self.rng.random() < 0.7 else [v for v in (dt.min, -1, 0, 1, dt.max) if dt.min <= v <= dt.max]

  # ---- constructs ----
  def divmod(self) -> UOp:
    dt = self.rng.choice(INTS)
    divisors = [v for v in (0, 0, -1, 1, 2, -3, 7, dt.max, dt.min) if dt.min <= v <= dt.max]
    return self.load(dt, self.int_pool(dt)).alu(self.rng.choice([Ops.IDIV, Ops.MOD]), self.load(dt, divisors))

  def shift(self) -> UOp:
    r, dt = self.rng, self.rng.choice(INTS)
    bits = shift_bits(dt)
    counts = [v for v in (0, 1, dt.bits - 1, dt.bits, dt.bits + 1, bits - 1, bits, bits + 3, 2 * bits - 1, -1, -bits) if dt.min <= v <= dt.max]
    # a constant count must be in [0, the shift width) (spec rule kernel.shift_count): past the dtype's own bits for a narrow one
    const = [c for c in counts if 0 <= c < bits]
    n = UOp.const(dt, r.choice([c for c in const if c >= dt.bits] or const)) if r.random() < 0.3 else self.load(dt, counts)
    return self.load(dt, self.int_pool(dt)).alu(r.choice([Ops.SHL, Ops.SHR]), n)

  def cast(self) -> UOp:
    src = self.rng.choice((dtypes.float32, dtypes.float64))
    return self.load(src, float_pool(src)).cast(self.rng.choice(INTS))

  def negzero(self) -> UOp:
    r, dt = self.rng, self.rng.choice((dtypes.float32, dtypes.float64))
    x = self.load(dt, [1.0, -2.0, 0.5, 3.0, -0.0, 4.0])
    picked = (self.load(dtypes.int32, [0, 1, 2, 3]) < UOp.const(dtypes.int32, 2)).where(UOp.const(dt, -0.0), x)
    if r.random() < 0.5: return picked.alu(Ops.RECIP)
    return picked.bitcast(dtypes.int32 if dt is dtypes.float32 else dtypes.int64)

  def nan(self) -> UOp:
    r, dt = self.rng, self.rng.choice((dtypes.float32, dtypes.float64))
    a, b = self.load(dt, float_pool(dt)), self.load(dt, float_pool(dt))
    kind = r.choice(["max", "max", "cmp", "where"])
    if kind == "max": return a.maximum(b) if r.random() < 0.7 else a.maximum(UOp.const(dt, r.choice([math.nan, math.inf, -math.inf, -0.0])))
    cmp = a.alu(r.choice([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]), b)
    return cmp if kind == "cmp" else cmp.where(a, b)

  def math64(self) -> UOp:
    op = self.rng.choice([Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN])
    pool = [v for v in MATH64_VALUES if op is not Ops.EXP2 or v < 1100]
    return self.load(dtypes.float64, [abs(v) if op in (Ops.SQRT, Ops.LOG2) else v for v in pool]).alu(op)

  def wrap(self) -> UOp:
    r, dt = self.rng, self.rng.choice(SIGNED_WIDE)
    a = self.load(dt, [dt.max, dt.min, dt.max - 1, dt.min + 1, -1, 0, 1])
    if r.random() < 0.25: return -a
    op = r.choice([Ops.ADD, Ops.ADD, Ops.SUB, Ops.MUL])
    k = UOp.const(dt, r.choice([1, 2, -1, dt.max])) if r.random() < 0.6 else self.load(dt, [1, -1, 2, dt.max, dt.min])
    res = a.alu(op, k)
    # a + 1 < a (or a < a + 1): true (false) only where the sum wrapped, what a compiler that takes signed overflow as
    # impossible folds to a constant
    if r.random() < 0.6: return res.alu(Ops.CMPLT, a) if r.random() < 0.5 else a.alu(Ops.CMPLT, res)
    return res

  def small(self) -> UOp:
    r, dt = self.rng, self.rng.choice(dtypes.small_floats)
    self.features.update({"dtype:small", f"dtype:{dt.name}"})
    kind = r.choice(["into", "into", "round_trip", "out", "select"])
    if kind in ("into", "round_trip"):
      # a float64 source is rounded directly (never through float32): past float32's range bfloat16 meets its own max
      src = r.choice((dtypes.float32, dtypes.float64))
      x = self.load(src, small_float_pool(dt)).cast(dt)
      return x if kind == "into" else x.cast(r.choice((dtypes.float32, dtypes.float64)))
    with np.errstate(over="ignore", invalid="ignore"): vals = [float(v) for v in np.array(small_float_pool(dt), np.float64).astype(dt.np)]
    if kind == "out":
      to = r.choice((dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32, dtypes.uint8, dtypes.int64))
      return self.load(dt, vals).cast(to)
    a = self.load(dt, vals)
    if accepts(Ops.MAX, dt) and r.random() < 0.5:  # float16 and bfloat16: MAX and comparisons are exact, NaN propagating
      b = self.load(dt, vals)
      return a.maximum(b) if r.random() < 0.5 else a.alu(r.choice([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]), b)
    if r.random() < 0.4:  # the bits of a value moved uncomputed, NaN aside (its payload bits are open)
      return self.load(dt, [v for v in vals if not math.isnan(v)]).bitcast(r.choice([d for d in INTS if d.itemsize == dt.itemsize]))
    c = self.load(dtypes.int32, [0, 1, 2, 3]) < UOp.const(dtypes.int32, 2)
    return c.where(a, self.load(dt, vals) if r.random() < 0.5 else UOp.const(dt, r.choice([-0.0, 1.0, -float(finfo(dt).max)])))

  def construct(self) -> UOp:
    kinds = list(EDGE_CONSTRUCT_WEIGHTS)
    ws = [max(0.0, self.w.get(f"edge:{k}", EDGE_CONSTRUCT_WEIGHTS[k])) for k in kinds]
    kind = self.rng.choices(kinds, ws)[0] if sum(ws) > 0 else self.rng.choice(kinds)
    if self.srng.random() < SMALL_SHARE * self.w.get("edge:small", 1.0) * self.w.get("dtype:small", 1.0): kind = "small"
    self.features.add(f"edge:{kind}")
    build: Callable[[], UOp] = getattr(self, kind)
    return build()

  # ---- the case ----
  def graph(self) -> UOp:
    values = [self.construct() for _ in range(self.n_outputs)]
    outs = [UOp.buffer(v.dtype, self.n, id=k + 1) for k, v in enumerate(values)]
    stores = [UOp.param(k, v.dtype, self.n).index(self.i).store(v) for k, v in enumerate(values)]
    body = stores[0] if len(stores) == 1 else UOp(Ops.GROUP, src=tuple(stores))
    call = UOp(Ops.CALL, src=(UOp(Ops.SINK, src=(body.end(self.i),)), *outs, *self.bufs), arg="edge")
    return UOp(Ops.SINK, src=tuple(b.after(call) for b in outs))

  def case(self) -> Case:
    root = self.graph()
    return Case(root, self.inputs, {"callify": "inline", "realize": "minimal", "opts": None}, "kernel", features=frozenset(self.features))


def edge_kernel_case(rng: random.Random, weights: dict[str, float] | None = None) -> Case:
  """An edge kernel case (kind "kernel") the UB screen accepts: a draw it rejects is drawn again."""
  return first_screened(lambda _: EdgeKernelGen(rng, weights).case(), ATTEMPTS)

"""Integer kernels: KERNEL_GRAPH cases whose one kernel computes integer expressions of the forms simplify's rules
rewrite, over signed and unsigned values of every width, negative operands and values next to the wrap points.

Tensor graphs reach the integer simplifier almost only through small non-negative index math, so a rule that gets
a negative operand, a wrapped sum or a sign condition wrong is never exercised there. Here a kernel loops over one or
two ranges and stores, per element, an expression built from bounded leaves:

  - loads of input buffers (int8 ... int64, uint8 ... uint64) filled with MIN, MIN+1, -1, 0, 1, the width-1,
    2^k-1, 2^k, 2^k+1, MAX-1, MAX and small values of both signs;
  - windows of a load: (x & mask) + offset, an interval of known bounds next to a wrap point or around zero, and
    x % c (negative for signed x); ranges times constants plus negative offsets;
  - combined by (a * c + b) // c and % c (the split rules' form, both signs of a and b), division and modulo by
    constants of either sign, nested division, sums, products, max and min, WHERE of comparisons against constants
    next to the bounds, bit ops with masks, shifts by masked counts, casts between widths;
  - now and then an output element is a REDUCE (ADD, MAX, MUL) over a reduce range of its own, whose bound has
    divisors or none, so optimize's splits and unrolls of reduce ranges meet it (the case's opts are drawn over the
    ranges the kernel holds, fuzz.generate.opts);
  - and, on a second output, an `index` expression of the kind views make (strided sums with negative strides and
    offsets, unflattened by IDIV and MOD, clamped, padded with WHERE, and strides past int32 over a tiny extent),
    stored as int64: the int dtype linearize picks for `index` must hold every intermediate value.

The reference evaluator before and after each pass, and the compiled kernel, must agree on every stored element, so
a wrong fold shows as a parity difference at the pass that made it. Cases are free of undefined behaviour by
construction (divisors are nonzero constants, -1 only where the dividend cannot be MIN; shift counts are masked to the
width; ints wrap, which the IR defines), and fuzz.generate.kernel_safety screens each one; a rejected draw is drawn again.
Built with the IR and the op registry's bounds only (UOp.vmin, vmax): generating a case runs no pass.

    @given(fuzz.generate.strategies.int_kernels())
    def test_my_simplifier(case): ...
"""
from __future__ import annotations

import math
import random

import numpy as np

from fuzz.generate.case import Case
from fuzz.generate.index_kernels import in_bounds
from fuzz.generate.kernel_safety import first_screened
from fuzz.generate.opts import kernel_opts
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import AxisType, Ops, UOp

IDX = dtypes.index
ATTEMPTS = 10            # draws before the last one is kept even when the screen rejects it (the oracles skip it then)
MAX_ITERS = 32           # elements of the output: iterations of the loop nest
# value dtypes, by weight: every integer width, signed and unsigned
DTYPE_WEIGHTS: dict[DType, float] = {dtypes.int8: 1.0, dtypes.int16: 1.0, dtypes.int32: 2.0, dtypes.int64: 1.5,
                                     dtypes.uint8: 1.0, dtypes.uint16: 0.7, dtypes.uint32: 1.5, dtypes.uint64: 1.0}
MASKS = (1, 3, 7, 15, 31, 255)
WIDE_STRIDES = (2 ** 31 - 1, 2 ** 31, 3 * 2 ** 30, 2 ** 32 + 3, 10 ** 12)  # strides whose products pass int32 at once
REDUCE_SHARE = 0.25      # output elements that are a REDUCE over a reduce range of their own
REDUCE_BOUNDS = (2, 3, 4, 4, 6, 8)
EXPR_KINDS = ("split", "split", "divmod", "divmod", "quotient", "nested", "ring", "ring", "minmax", "where", "bits", "shift", "cast", "neg",
              "self")
# x op x with one node x on both sides: the identities simplify folds (x - x, x ^ x, x // x, ...); zero among x's values
SELF_OPS = (Ops.SUB, Ops.XOR, Ops.AND, Ops.OR, Ops.MAX, Ops.ADD, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.IDIV, Ops.MOD)


def _pick(rng: random.Random, weights: dict) -> object:
  x = rng.random() * sum(weights.values())
  for k, w in weights.items():
    x -= w
    if x <= 0: return k
  return list(weights)[-1]


def wrap_points(dt: DType) -> list[int]:
  """The values of dt next to where its arithmetic wraps or changes sign: MIN, MIN+1, -1, 0, 1, the width-1, 2^k-1,
  2^k, 2^k+1 (and their negatives, for signed dtypes) for the byte widths below dt's, MAX-1, MAX."""
  out = [dt.min, dt.min + 1, -1, 0, 1, 2, dt.bits - 1, dt.max - 1, dt.max]
  for k in (7, 8, 15, 16, 31, 32, 63):
    for v in (2 ** k - 1, 2 ** k, 2 ** k + 1):
      out += [v, -v]
  return sorted({v for v in out if dt.min <= v <= dt.max})


def small_values(dt: DType) -> list[int]:
  lo = max(dt.min, -9)
  return list(range(lo, min(dt.max, 9) + 1))


class IntKernelGen:
  """One KERNEL_GRAPH case of an integer kernel, drawn from a Random."""

  def __init__(self, rng: random.Random, dtype: DType | None = None):
    self.rng = rng
    self.dt: DType = dtype or _pick(rng, DTYPE_WEIGHTS)  # type: ignore[assignment]
    self.features: set[str] = {"kind:kernel", "kind:int", f"int:dtype:{self.dt.name}"}
    self.inputs: dict[int, np.ndarray] = {}
    self.bufs: list[UOp] = []
    self.params: list[UOp] = []
    self.ranges: list[UOp] = []
    self.n_outputs = 1                 # the first PARAM slots are the outputs; loads read the slots after them
    self.next_axis = 0                 # the axis id of the next reduce range (after the loops)

  # ---- leaves ----
  def const(self, dt: DType) -> UOp:
    pool = wrap_points(dt) if self.rng.random() < 0.5 else small_values(dt)
    return UOp.const(dt, self.rng.choice(pool))

  def values(self, dt: DType, n: int) -> np.ndarray:
    """Buffer contents: wrap points and small values of both signs."""
    r, edges, small = self.rng, wrap_points(dt), small_values(dt)
    return np.array([r.choice(edges) if r.random() < 0.5 else r.choice(small) for _ in range(n)], dtype=dt.np)

  def input(self, dt: DType) -> UOp:
    """A new input buffer of dt and its PARAM."""
    size = self.rng.choice([1, 2, 3, 4, 5, 8])
    b = UOp.buffer(dt, size, id=len(self.bufs) + 1)
    self.inputs[b.arg.id] = self.values(dt, size)
    self.bufs.append(b)
    p = UOp.param(len(self.params), dt, size)
    self.params.append(p)
    return p

  def load(self, dt: DType) -> UOp:
    """A load of an input of dt (a new one, sometimes) at an index over the ranges, possibly shifted below zero."""
    ins = [p for p in self.params[self.n_outputs:] if p.dtype is dt]
    p = self.rng.choice(ins) if ins and self.rng.random() < 0.7 else self.input(dt)
    return p.index(in_bounds(self.index_expr(1), p.arg.size)).load()

  def term(self, dt: DType) -> UOp:
    """A small non-negative value of known bounds, without an offset (a sum would carry it out): x & mask or a range."""
    if self.ranges and self.rng.random() < 0.4: return self.rng.choice(self.ranges).cast(dt)
    return self.load(dt) & UOp.const(dt, self.rng.choice([k for k in MASKS if k <= min(dt.max, 31)]))

  def window(self, dt: DType, kind: str | None = None) -> UOp:
    """A value of known bounds: (x & mask) + offset next to a wrap point or around zero, x % c, or a range times a
    constant plus an offset."""
    r = self.rng
    kind = kind or r.choice(["mask", "mask", "mod", "range"])
    if kind == "mod":
      self.features.add("int:leaf:mod")
      return self.load(dt).alu(Ops.MOD, UOp.const(dt, self.divisor(dt, None)))
    if kind == "range" and self.ranges:
      self.features.add("int:leaf:range")
      k = r.choice([1, 1, 2, 3, -1, -2] if dt.is_signed else [1, 1, 2, 3])
      x = r.choice(self.ranges).cast(dt)
      x = x if k == 1 else x * UOp.const(dt, k)
      return x + UOp.const(dt, self.offset(dt, 8))
    self.features.add("int:leaf:mask")
    m = r.choice([k for k in MASKS if k <= dt.max])
    return (self.load(dt) & UOp.const(dt, m)) + UOp.const(dt, self.offset(dt, m))

  def offset(self, dt: DType, span: int) -> int:
    """An offset that puts an interval [0, span] around zero, just below zero, or against MIN or MAX."""
    r = self.rng
    choices = [0, -(span // 2) - 1, -span - r.randint(1, 3), r.randint(1, 5), dt.max - span, dt.max - span + 1,
               -span - r.randint(1, 3 * span + 8), r.randint(1, 3 * span + 8)]  # away from zero: quotients of one sign
    if dt.is_signed: choices += [dt.min, dt.min + 1]
    v = r.choice(choices)
    return v if dt.min <= v <= dt.max - span else 0

  def leaf(self, dt: DType) -> UOp:
    x = self.rng.random()
    if x < 0.35: return self.window(dt)
    if x < 0.75: return self.load(dt)
    return self.const(dt)

  # ---- expressions ----
  def divisor(self, dt: DType, x: UOp | None) -> int:
    """A nonzero divisor of either sign; -1 only where x cannot be MIN (MIN // -1 is screened out)."""
    r = self.rng
    pool = [2, 3, 4, 5, 7, 8, 16] + ([-2, -3, -5, -8] if dt.is_signed else [])
    if r.random() < 0.2: pool = [v for v in wrap_points(dt) if v not in (0, 1, -1)]
    if dt.is_signed and x is not None and x.vmin > dt.min and r.random() < 0.1: return -1
    return r.choice(pool)

  def expr(self, dt: DType, depth: int) -> UOp:
    """An integer expression of dt with `depth` levels of ops above the leaves."""
    r = self.rng
    if depth <= 0 or r.random() < 0.15: return self.leaf(dt)
    kind = r.choice(EXPR_KINDS)
    self.features.add(f"int:op:{kind}")
    sub = lambda: self.expr(dt, depth - 1)  # noqa: E731
    if kind == "split":  # (a * c + b) // c or % c: the quotient splits only when a*c + b and b have one sign
      c = self.divisor(dt, None)
      # bounded terms, so that a * c + b need not wrap (the split rules hold only then), b often of both signs
      a = self.term(dt) if r.random() < 0.5 else self.window(dt) if r.random() < 0.6 else sub()
      b = self.window(dt, r.choice(["mod", "mod", None])) if r.random() < 0.7 else sub()
      k = c * r.choice([1, 1, 2, -1]) if dt.is_signed else c
      s = a * UOp.const(dt, k if dt.min <= k <= dt.max else c) + b
      return self.divmod(s, c)
    if kind == "divmod":
      x = self.window(dt) if r.random() < 0.4 else sub()
      return self.divmod(x, self.divisor(dt, x))
    if kind == "quotient": return self.one_quotient(dt)
    if kind == "nested":  # (x // a) // b, (x % c) % c, (x // a) % b
      x = sub()
      inner = self.divmod(x, self.divisor(dt, x))
      return self.divmod(inner, self.divisor(dt, inner))
    if kind == "ring":
      op = r.choice([Ops.ADD, Ops.SUB, Ops.MUL, Ops.ADD])
      b = sub() if r.random() < 0.5 else self.const(dt)
      return sub().alu(op, b)
    if kind == "minmax":
      a, b = sub(), sub() if r.random() < 0.5 else self.const(dt)
      return a.maximum(b) if r.random() < 0.5 else (a < b).where(a, b)
    if kind == "where":
      a = sub()
      cmp = a.alu(r.choice([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]), self.near_bound(a))
      return cmp.where(sub(), sub())
    if kind == "bits":
      op = r.choice([Ops.AND, Ops.OR, Ops.XOR])
      return sub().alu(op, UOp.const(dt, r.choice([k for k in MASKS if k <= dt.max])) if r.random() < 0.5 else sub())
    if kind == "shift":
      n = UOp.const(dt, r.randrange(dt.bits)) if r.random() < 0.5 else sub() & UOp.const(dt, dt.bits - 1)
      return sub().alu(r.choice([Ops.SHL, Ops.SHR]), n)
    if kind == "self": return self.same_operands(dt, sub())
    if kind == "cast":  # through another width: truncation, sign or zero extension
      other: DType = _pick(r, {d: w for d, w in DTYPE_WEIGHTS.items() if d is not dt})  # type: ignore[assignment]
      return self.expr(other, depth - 1).cast(dt)
    return -sub()

  def same_operands(self, dt: DType, x: UOp) -> UOp:
    """x op x: over x's values, zero included; a division by x takes x away from zero first (x // x at x == 0 is a
    point C leaves undefined, which the rule prover covers), by a window of one sign."""
    r = self.rng
    op = r.choice(SELF_OPS)
    self.features.add(f"int:self:{op.name}")
    if op in (Ops.IDIV, Ops.MOD):
      m = r.choice([k for k in MASKS if k <= min(dt.max, 31)])
      lo = r.choice([1, 2, dt.max - m] + ([-m - 1, dt.min + 1] if dt.is_signed else []))
      x = (self.load(dt) & UOp.const(dt, m)) + UOp.const(dt, lo)
    out = x.alu(op, x)
    return out.where(UOp.const(dt, 1), UOp.const(dt, 0)) if out.dtype is not dt else out

  def one_quotient(self, dt: DType) -> UOp:
    """x // c or x % c where x's window lies inside one interval of C's truncating quotient, q != 0 (negative for
    signed dtypes as often as not): where trunc and floor division part."""
    r = self.rng
    c = r.choice([3, 4, 5, 7, 8, 16])
    m = r.choice([k for k in MASKS if k < c])
    q = r.choice([1, 2, 3]) * (r.choice([1, -1]) if dt.is_signed else 1)
    lo = q * c if q > 0 else q * c - c + 1          # the values whose truncated quotient by c is q
    off = lo + r.randint(0, c - 1 - m)
    x = (self.load(dt) & UOp.const(dt, m)) + UOp.const(dt, off)
    return self.divmod(x, -c if dt.is_signed and r.random() < 0.3 else c)

  def divmod(self, x: UOp, c: int) -> UOp:
    return x.alu(self.rng.choice([Ops.IDIV, Ops.MOD]), UOp.const(x.dtype, c))

  def near_bound(self, a: UOp) -> UOp:
    """A constant at or next to one of a's bounds (where comparisons fold by bounds), or any constant."""
    r, dt = self.rng, a.dtype
    v = r.choice([a.vmin, a.vmax]) + r.choice([-1, 0, 1])
    return UOp.const(dt, v) if dt.min <= v <= dt.max and r.random() < 0.7 else self.const(dt)

  def value(self, dt: DType, depth: int) -> UOp:
    """An output element: an expression, or now and then a REDUCE (ADD, MAX, MUL) of one over a new reduce range
    (a new axis after the loops), whose bound has divisors and primes alike, so optimize's splits and unrolls of
    reduce ranges meet it."""
    r = self.rng
    if r.random() >= REDUCE_SHARE: return self.expr(dt, depth)
    rr = UOp.range(r.choice(REDUCE_BOUNDS), self.next_axis, AxisType.REDUCE)
    self.next_axis += 1
    op = r.choice([Ops.ADD, Ops.ADD, Ops.MAX, Ops.MUL])
    self.features.add(f"int:reduce:{op.name}")
    outer = self.ranges
    self.ranges = [*outer, rr]  # leaves inside index and cast the reduce range as they do the loops
    try: val = self.expr(dt, depth)
    finally: self.ranges = outer
    return UOp(Ops.REDUCE, dt, (val, rr), op)

  # ---- index expressions, as views make them ----
  def index_expr(self, depth: int) -> UOp:
    """An `index` expression over the ranges: strided sums with negative strides and offsets, unflattened by IDIV
    and MOD, clamped with MAX, padded with WHERE."""
    r = self.rng
    if depth <= 0 or not self.ranges: return self.flat()
    kind = r.choice(["flat", "unflatten", "unflatten", "divmod", "pad", "clamp", "sum", "wide"])
    if kind == "flat": return self.flat()
    if kind == "wide": return self.wide()
    if kind == "unflatten":
      f = self.flat()
      s, d = r.choice([1, 2, 3, 4]), r.choice([2, 3, 4, 5])
      q = f if s == 1 else f.alu(Ops.IDIV, _i(s))
      return q.alu(Ops.MOD, _i(d))
    if kind == "divmod": return self.index_expr(depth - 1).alu(r.choice([Ops.IDIV, Ops.MOD]), _i(r.choice([2, 3, 4, 5, 7, -2, -3])))
    if kind == "pad":
      i = self.index_expr(depth - 1)
      o, d = r.randint(0, 3), r.randint(1, 6)
      valid = _i(o - 1).alu(Ops.CMPLT, i).alu(Ops.AND, i.alu(Ops.CMPLT, _i(o + d)))
      return valid.where(i + _i(-o), _i(r.choice([0, -1])))
    if kind == "clamp":
      x = self.index_expr(depth - 1)
      return x.maximum(_i(r.randint(-2, 2))) if r.random() < 0.5 else x.alu(Ops.NEG).maximum(_i(-r.randint(0, 9))).alu(Ops.NEG)
    return self.index_expr(depth - 1) + self.index_expr(depth - 1)

  def wide(self) -> UOp:
    """An index past int32 over a tiny extent: a flat index times a stride of 2^31 or more (a large stride over a
    small buffer, as a view of a huge tensor makes), plus an offset, sometimes brought back by // or % of a constant
    simplify cannot fold away. Memory stays small; only the index arithmetic needs 64 bits, so the int dtype chosen
    for a kernel's `index` changes the result when it is too narrow."""
    r = self.rng
    self.features.add("int:index:wide")
    stride = r.choice(WIDE_STRIDES) * r.choice([1, -1])
    x = self.flat() * _i(stride) + _i(r.choice([0, 1, 7, -3, 2 ** 31 - 1, -(2 ** 31)]))
    pick = r.random()
    if pick < 0.3: return x
    if pick < 0.65: return x.alu(Ops.IDIV, _i(r.choice([3, 1000, 2 ** 31 - 1, 2 ** 31 + 11])))
    return x.alu(Ops.MOD, _i(r.choice([5, 2 ** 31 + 11, 2 ** 33 - 9])))

  def flat(self) -> UOp:
    r = self.rng
    if not self.ranges: return _i(r.randint(-3, 3))
    out: UOp | None = None
    for x in r.sample(self.ranges, r.randint(1, len(self.ranges))):
      k = r.choice([1, 1, 2, 3, -1, -2])
      t = x if k == 1 else x * _i(k)
      out = t if out is None else out + t
    assert out is not None
    return out + _i(r.choice([-7, -3, -1, 1, 2, 5])) if r.random() < 0.6 else out

  # ---- the case ----
  def graph(self) -> UOp:
    r = self.rng
    dims = [r.randint(1, 8)]
    if r.random() < 0.4: dims.append(r.randint(1, MAX_ITERS // dims[0]))
    self.ranges = [UOp.range(d, i) for i, d in enumerate(dims)]
    self.next_axis = len(dims)
    n = math.prod(dims)
    flat = _i(0)
    for x, d in zip(self.ranges, dims): flat = flat * _i(d) + x
    # several value outputs, one expression each (one more is cheap next to the kernel's compile), maybe an index one
    values = r.choice([1, 2, 3, 3])
    with_index = r.random() < 0.4
    outs = [self.dt] * values + ([dtypes.int64] if with_index else [])
    self.n_outputs = len(outs)
    for k, dt in enumerate(outs):
      self.bufs.append(UOp.buffer(dt, n, id=k + 1))
      self.params.append(UOp.param(k, dt, n))
    stores = [self.params[k].index(flat).store(self.value(self.dt, r.randint(1, 4))) for k in range(values)]
    if with_index:
      self.features.add("int:index_output")
      stores.append(self.params[values].index(flat).store(self.index_expr(3).cast(dtypes.int64)))
    body = stores[0] if len(stores) == 1 else UOp(Ops.GROUP, src=tuple(stores))
    call = UOp(Ops.CALL, src=(UOp(Ops.SINK, src=(body.end(*self.ranges),)), *self.bufs), arg="int")
    return UOp(Ops.SINK, src=tuple(b.after(call) for b in self.bufs[:self.n_outputs]))

  def case(self) -> Case:
    root = self.graph()
    opts = kernel_opts(self.rng, root, self.features)
    return Case(root, self.inputs, {"callify": "inline", "realize": "minimal", "opts": opts}, "kernel", features=frozenset(self.features))


def _i(v: int) -> UOp: return UOp.const(IDX, v)


def int_kernel_case(rng: random.Random, dtype: DType | None = None) -> Case:
  """An integer kernel case (kind "kernel"), free of undefined behaviour: a draw the screen rejects is drawn again."""
  return first_screened(lambda _: IntKernelGen(rng, dtype).case(), ATTEMPTS)

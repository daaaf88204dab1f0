"""Every op on every dtype its class admits, over edge values (0, +-1, min, max, NaN, +-inf, -0.0, shift widths):
the registry's scalar meaning == its numpy meaning == its z3 meaning (integers and bool) == compiled C == OpenCL,
wherever the point is defined. The scalar meaning is itself held to plain Python integer arithmetic and IEEE."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import z3
from builders import elementwise_kernel_graph

from tinyspec.dtype import DType, dtypes, finfo, round_float
from tinyspec.ops import DTYPE_CLASS, accepts, scalar, smt, vector
from tinyspec.ops.scalar import INDEX_OVERFLOW, c_undefined
from tinyspec.uop import GroupOp, Ops

pytestmark = pytest.mark.spec
VALUE_DTYPES = (dtypes.bool, *dtypes.ints, dtypes.index, *dtypes.floats)
ALU = sorted((op for op in DTYPE_CLASS if op in GroupOp.ALU), key=lambda o: o.value)


def edges(dt: DType) -> list:
  if dt.kind == "b": return [False, True]
  if dt.kind == "f":
    fi = finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 7.0, float(fi.max), -float(fi.max), float(fi.tiny), float(fi.smallest_subnormal),
            1.0 + float(fi.eps), 2.0 ** 31, -(2.0 ** 31), 2.0 ** 63, 1e30, math.inf, -math.inf, math.nan]
    return sorted({float(round_float(np.float64(v), dt)) for v in vals if not math.isnan(v)}) + [math.nan]  # the dtype's own values
  bits = 64 if dt is dtypes.index else dt.bits
  vals = {dt.min, dt.min + 1, -7, -2, -1, 0, 1, 2, 3, 7, bits - 1, bits, bits + 1, dt.max - 1, dt.max}
  return sorted(v for v in vals if dt.min <= v <= dt.max)


def arity(op: Ops) -> int: return 3 if op is Ops.WHERE else 2 if op in GroupOp.Binary else 1


def points(op: Ops, dt: DType) -> list[tuple]:
  e = edges(dt)
  if arity(op) == 1: return [(a,) for a in e]
  if arity(op) == 2: return list(itertools.product(e, e))
  return [(c, a, b) for c, (a, b) in zip(itertools.cycle([True, False, True]), itertools.product(e, e))]


def result_dtype(op: Ops, dt: DType) -> DType: return dtypes.bool if op in GroupOp.Comparison else dt


def defined(op: Ops, dt: DType, p: tuple) -> bool:
  # index is unbounded in meaning but int64 in numpy and programs: points past int64 are undefined
  return op is Ops.WHERE or op in GroupOp.Comparison or c_undefined(op, dt, *p) != INDEX_OVERFLOW


def same(dt: DType, got, want) -> bool:
  if dt.kind != "f": return got == want
  g, w = float(got), float(want)
  if math.isnan(w): return math.isnan(g)
  return g == w and math.copysign(1, g) == math.copysign(1, w)


def close(op: Ops, dt: DType, got, want) -> bool:
  """Equal, or for the math-library ops within the registry's stated ulps."""
  if same(dt, got, want): return True
  ulps = scalar.APPROXIMATE_ULPS.get(op)
  if ulps is None or dt.kind != "f": return False
  g, w = dt.np.type(got), dt.np.type(want)
  if math.isnan(g) or math.isnan(w) or math.isinf(w): return False
  return abs(float(g) - float(w)) <= ulps * float(np.spacing(np.abs(w)))


ALU_CASES = [(op, dt) for op in ALU for dt in VALUE_DTYPES if accepts(op, dt if op is not Ops.WHERE else dt)]


# ---- the scalar meaning against plain Python and IEEE ----
def _wrap(v: int, dt: DType) -> int:
  if dt.kind == "x": return v
  v &= (1 << dt.bits) - 1
  return v - (1 << dt.bits) if dt.kind == "i" and v >= 1 << (dt.bits - 1) else v


def _trunc_div(a: int, b: int) -> int: return int(a / b) if abs(a) < 2 ** 52 and abs(b) < 2 ** 52 else -(-a // b) if (a < 0) != (b < 0) else a // b


PY_INT = {
  Ops.ADD: lambda a, b, dt: _wrap(a + b, dt), Ops.SUB: lambda a, b, dt: _wrap(a - b, dt), Ops.MUL: lambda a, b, dt: _wrap(a * b, dt),
  Ops.NEG: lambda a, dt: _wrap(-a, dt), Ops.MAX: lambda a, b, dt: max(a, b),
  Ops.IDIV: lambda a, b, dt: 0 if b == 0 else _wrap(_trunc_div(a, b), dt),
  Ops.MOD: lambda a, b, dt: a if b == 0 else _wrap(a - b * _trunc_div(a, b), dt),
  Ops.AND: lambda a, b, dt: a & b, Ops.OR: lambda a, b, dt: a | b, Ops.XOR: lambda a, b, dt: a ^ b,
  # C shifts an operand narrower than int as an int: the count's width is 32 for 8- and 16-bit dtypes
  Ops.SHL: lambda a, b, dt: _wrap(a << (b % (64 if dt.kind == "x" else max(dt.bits, 32))), dt),
  Ops.SHR: lambda a, b, dt: _wrap(a >> (b % (64 if dt.kind == "x" else max(dt.bits, 32))), dt),
  Ops.CMPLT: lambda a, b, dt: a < b, Ops.CMPNE: lambda a, b, dt: a != b, Ops.CMPEQ: lambda a, b, dt: a == b,
  Ops.WHERE: lambda c, a, b, dt: a if c else b,
}


@pytest.mark.parametrize("op,dt", [(op, dt) for op, dt in ALU_CASES if dt.kind in "iux"], ids=lambda x: getattr(x, "name", x))
def test_scalar_integer_meaning_is_c_with_wrapping(op, dt):
  for p in points(op, dt):
    if not defined(op, dt, p): continue
    assert scalar.run(op, dt, *p) == PY_INT[op](*p, dt), (op, dt, p)


def test_scalar_meaning_at_the_documented_undefined_points():
  i32 = dtypes.int32
  assert scalar.run(Ops.IDIV, i32, 7, 0) == 0 and scalar.run(Ops.MOD, i32, -7, 0) == -7
  assert scalar.run(Ops.IDIV, i32, i32.min, -1) == i32.min and scalar.run(Ops.MOD, i32, i32.min, -1) == 0
  assert scalar.run(Ops.SHL, i32, 1, 33) == 2 and scalar.run(Ops.SHR, dtypes.uint8, 128, 33) == 64
  assert scalar.run(Ops.SHL, dtypes.uint8, 1, 8) == 0 and scalar.run(Ops.SHR, dtypes.int8, -128, 9) == -1  # as an int in C
  assert scalar.run(Ops.CAST, i32, math.nan, dtypes.float32) == 0
  assert scalar.run(Ops.CAST, dtypes.int8, 1e9, dtypes.float32) == 127 and scalar.run(Ops.CAST, dtypes.uint8, -3.7, dtypes.float64) == 0
  assert [c_undefined(Ops.IDIV, i32, 1, 0), c_undefined(Ops.SHL, i32, 1, 32), c_undefined(Ops.ADD, i32, i32.max, 1)] == \
    ["division by zero", "shift count 32 outside [0, 32)", "signed overflow"]
  assert c_undefined(Ops.ADD, dtypes.uint32, 2 ** 32 - 1, 1) is None  # unsigned wrap is C's own meaning


# ---- scalar == numpy == z3 ----
def _np_run(op: Ops, dt: DType, pts: list[tuple]) -> list:
  cols = list(zip(*pts))
  arrs = [np.array(c, dtype=np.bool_ if op is Ops.WHERE and i == 0 else dt.np) for i, c in enumerate(cols)]
  with np.errstate(all="ignore"): out = vector.run(op, dt, *arrs)
  return out.tolist()


def _z3_value(e: z3.ExprRef, dt: DType):
  v = z3.simplify(e)
  if z3.is_true(v) or z3.is_false(v): return z3.is_true(v)
  x = v.as_long()
  return x - (1 << dt.bits) if z3.is_bv_value(v) and dt.kind == "i" and x >= 1 << (dt.bits - 1) else x


def _z3_run(op: Ops, dt: DType, p: tuple):
  args = [smt.const(dtypes.bool if op is Ops.WHERE and i == 0 else dt, v) for i, v in enumerate(p)]
  width = smt.index_width(*((v, v) for v in p if not isinstance(v, bool))) + (63 if op is Ops.SHL else 0)
  return _z3_value(smt.term(op, dt, args, width), result_dtype(op, dt))


@pytest.mark.parametrize("op,dt", ALU_CASES, ids=lambda x: getattr(x, "name", x))
def test_scalar_numpy_and_z3_agree(op, dt):
  pts = points(op, dt)
  got_np = _np_run(op, dt, pts)
  rdt = result_dtype(op, dt)
  for p, n in zip(pts, got_np):
    if not defined(op, dt, p): continue
    want = scalar.run(op, dt, *p)
    assert close(op, rdt, n, want), (op.name, dt.name, p, n, want)
    if dt.kind in "iuxb": assert _z3_run(op, dt, p) == want, (op.name, dt.name, p)


@pytest.mark.parametrize("src", VALUE_DTYPES, ids=lambda d: d.name)
def test_casts_agree_scalar_numpy_z3(src):
  vals = edges(src)
  for dst in VALUE_DTYPES:
    with np.errstate(all="ignore"): got = vector.cast(np.array(vals, dtype=src.np), src, dst).tolist()
    for v, g in zip(vals, got):
      if scalar.cast_undefined(v, src, dst) == INDEX_OVERFLOW: continue
      want = scalar.run(Ops.CAST, dst, v, src)
      assert same(dst, g, want), (src.name, dst.name, v, g, want)
      if src.kind in "iuxb" and dst.kind in "iuxb":
        assert _z3_value(smt.cast(src, dst, smt.const(src, v)), dst) == want, (src.name, dst.name, v)
    for dst in (d for d in VALUE_DTYPES if accepts(Ops.BITCAST, src) and accepts(Ops.BITCAST, d) and d.itemsize == src.itemsize):
      got = vector.bitcast(np.array(vals, dtype=src.np), src, dst).tolist()
      assert all(same(dst, g, scalar.run(Ops.BITCAST, dst, v, src)) for v, g in zip(vals, got)), (src.name, dst.name)


def test_ops_outside_their_class_have_no_meaning():
  assert smt.term(Ops.IDIV, dtypes.float32, [z3.Real("a"), z3.Real("b")]) is None
  assert smt.term(Ops.SUB, dtypes.bool, [z3.Bool("a"), z3.Bool("b")]) is None   # SUB takes numbers; ADD on bool is OR
  assert not accepts(Ops.SHL, dtypes.float64) and not accepts(Ops.SQRT, dtypes.int32) and accepts(Ops.XOR, dtypes.bool)


# ---- compiled C and OpenCL: every admitted op of one dtype in one kernel, on edge-value pairs ----
def _backend_graph(dt: DType):
  e = edges(dt)
  pairs = list(itertools.product(e, e))
  a = np.array([p[0] for p in pairs], dtype=dt.np)
  b = np.array([p[1] for p in pairs], dtype=dt.np)
  c = np.array([i % 3 != 1 for i in range(len(pairs))])
  outs, meta = [], []
  for op in ALU:
    if not accepts(op, dt): continue
    n = arity(op)
    fn = (lambda x, y, z, op=op: x.alu(op)) if n == 1 else (lambda x, y, z, op=op: x.alu(op, y)) if n == 2 else (lambda x, y, z: z.where(x, y))
    outs.append((result_dtype(op, dt), fn))
    meta.append((op, dt, None))
  for dst in (d for d in VALUE_DTYPES if d is not dtypes.index and d is not dt):
    outs.append((dst, lambda x, y, z, dst=dst: x.cast(dst)))
    meta.append((Ops.CAST, dst, dt))
  for dst in (d for d in VALUE_DTYPES if accepts(Ops.BITCAST, dt) and accepts(Ops.BITCAST, d) and d.itemsize == dt.itemsize and d is not dt):
    outs.append((dst, lambda x, y, z, dst=dst: x.bitcast(dst)))
    meta.append((Ops.BITCAST, dst, dt))
  root, inputs = elementwise_kernel_graph([a, b, c], outs)
  return root, inputs, pairs, c.tolist(), meta


def _want(op: Ops, dt: DType, src: DType | None, p: tuple, cond: bool):
  if op in (Ops.CAST, Ops.BITCAST): return scalar.run(op, dt, p[0], src)
  if op is Ops.WHERE: return scalar.run(op, dt, cond, *p)
  return scalar.run(op, dt, *p[:arity(op)])


def _check_backend(backend: str, dt: DType) -> None:
  import tinyspec.runtime as runtime
  root, inputs, pairs, conds, meta = _backend_graph(dt)
  with np.errstate(all="ignore"): outs = runtime.run(root, inputs, backend=backend)
  bad = []
  for (op, odt, src), got in zip(meta, outs):
    rdt = result_dtype(op, odt)
    for p, cnd, g in zip(pairs, conds, np.asarray(got).tolist()):
      if op not in (Ops.CAST, Ops.BITCAST, Ops.WHERE) and not defined(op, dt, p[:arity(op)]): continue
      want = _want(op, odt, src, p, cnd)
      if not close(op, rdt, g, want): bad.append((op.name, odt.name, src.name if src else None, p, g, want))
  assert not bad, f"{backend} {dt.name}: {len(bad)} points differ from the registry's meaning, e.g. {bad[:5]}"


C_DTYPES = [d for d in VALUE_DTYPES if d is not dtypes.index]  # index never reaches a renderer (linearize lowers it)


@pytest.mark.parametrize("dt", C_DTYPES, ids=lambda d: d.name)
def test_compiled_c_gives_the_registry_meaning(dt):
  _check_backend("cpu", dt)


@pytest.mark.parametrize("dt", C_DTYPES, ids=lambda d: d.name)
def test_opencl_gives_the_registry_meaning(opencl, dt):
  _check_backend("opencl", dt)


def test_reference_evaluator_gives_the_registry_meaning():
  for dt in C_DTYPES: _check_backend("reference", dt)


def test_every_elementwise_op_has_a_registry_entry_with_every_aspect():
  from tinyspec.ops import REGISTRY
  assert set(REGISTRY) == set(GroupOp.Elementwise)
  for op, m in REGISTRY.items():
    if op in (Ops.CAST, Ops.BITCAST): continue  # conversions: scalar.cast / vector.cast / smt.cast, not per-op tables
    assert m.numpy is not None, op
    ints = accepts(op, dtypes.int32) or accepts(op, dtypes.bool)
    if ints: assert m.z3 is not None and m.interval is not None and m.scalar is not None, op
    assert m.c is not None or op in (Ops.MAX, Ops.WHERE, Ops.RECIP), op


# ---- float intervals: the real range of each float op's result ----
FLOAT_ENDS = [-1e6, -100.0, -3.5, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 7.75, 30.0, 1e6]


def _float_ranges(op: Ops) -> list[tuple[float, float]]:
  rs = [(lo, hi) for lo in FLOAT_ENDS for hi in FLOAT_ENDS if lo <= hi]
  if op in (Ops.SQRT, Ops.LOG2): return [r for r in rs if r[0] >= 0]  # their domain
  if op is Ops.EXP2: return [r for r in rs if r[1] <= 100]
  return rs


def _within(v: float, lo: float, hi: float) -> bool:
  """lo <= v <= hi, up to float64 rounding of the finite ends."""
  tol = 1e-12 * max([1.0] + [abs(x) for x in (lo, hi) if math.isfinite(x)])
  return lo - tol <= v <= hi + tol


def _inside(lo: float, hi: float, n: int, rng: np.random.Generator) -> list[float]:
  return [lo, hi, *rng.uniform(lo, hi, n)] + ([0.0] if lo <= 0 <= hi else [])


@pytest.mark.parametrize("op", sorted((op for op in DTYPE_CLASS if accepts(op, dtypes.float64) and op in GroupOp.ALU), key=lambda o: o.value),
                         ids=lambda o: o.name)
def test_float_interval_holds_the_result_of_every_operand_in_range(op):
  from tinyspec.ops.intervals import float_interval
  rng = np.random.default_rng(op.value)
  rs = _float_ranges(op)
  for k, a in enumerate(rs):
    if arity(op) == 1:
      lo, hi = float_interval(op, dtypes.float64, a)
      vals = [scalar.run(op, dtypes.float64, x) for x in _inside(*a, 6, rng)]
    else:
      b = rs[(k * 7) % len(rs)]
      if op is Ops.WHERE:
        lo, hi = float_interval(op, dtypes.float64, (False, True), a, b)
        vals = [scalar.run(op, dtypes.float64, c, x, y) for c in (False, True) for x in _inside(*a, 3, rng) for y in _inside(*b, 3, rng)]
      elif op is Ops.FDIV and a[0] <= 0 <= a[1] and b[0] <= 0 <= b[1]:   # 0 / 0 is NaN: outside FDIV's domain, as SQRT's below 0
        with pytest.raises(ValueError, match="NaN at 0 / 0"): float_interval(op, dtypes.float64, a, b)
        continue
      else:
        lo, hi = float_interval(op, dtypes.float64, a, b)
        vals = [scalar.run(op, dtypes.float64, x, y) for x in _inside(*a, 4, rng) for y in _inside(*b, 4, rng)]
    out = [v for v in vals if not _within(v, lo, hi)]
    assert out == [], (op, a, (lo, hi), out[:3])
    if op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.NEG, Ops.SQRT, Ops.EXP2, Ops.TRUNC):
      assert min(vals) == pytest.approx(lo) and max(vals) == pytest.approx(hi), (op, a)  # tight: the ends are reached


def test_float_intervals_of_unbounded_and_partial_ranges():
  from tinyspec.ops.intervals import float_interval
  f = dtypes.float32
  assert float_interval(Ops.MUL, f, (0.0, 0.0), (-math.inf, math.inf)) == (0.0, 0.0)  # 0 times any finite value
  assert float_interval(Ops.MUL, f, (0.0, 2.0), (3.0, math.inf)) == (0.0, math.inf)
  assert float_interval(Ops.RECIP, f, (-1.0, 2.0)) == (-math.inf, math.inf)  # 1 / +-0
  assert float_interval(Ops.TRUNC, f, (-math.inf, 2.5)) == (-math.inf, 2.0)
  assert float_interval(Ops.EXP2, f, (0.0, 5000.0)) == (1.0, math.inf)
  assert float_interval(Ops.LOG2, f, (0.0, 8.0)) == (-math.inf, 3.0)
  for op in (Ops.SQRT, Ops.LOG2):
    with pytest.raises(ValueError, match="NaN below 0"): float_interval(op, f, (-1.0, 4.0))
  with pytest.raises(KeyError): float_interval(Ops.IDIV, f, (1.0, 2.0), (1.0, 2.0))


@pytest.mark.parametrize("via", dtypes.floats, ids=lambda d: d.name)
def test_an_int_through_a_float_and_back_keeps_tight_bounds_and_z3_proves_them(via):
  """An integer index cast into a float (a small one included) and back is bounded by the casts of its ends, so the
  bounds proofs of tinyspec.smt can use it: the bounds equal the extremes of the cast chain over every value, and z3
  proves an index through it in bounds of exactly that many elements (and not of one fewer)."""
  from tinyspec.smt import prove_in_bounds
  from tinyspec.uop import UOp
  n = UOp.variable("n", 0, 200, dtypes.int32)
  chain = n.cast(via).cast(dtypes.int32)
  vals = [scalar.cast(scalar.cast(v, dtypes.int32, via), via, dtypes.int32) for v in range(201)]
  assert (chain.vmin, chain.vmax) == (min(vals), max(vals))
  assert prove_in_bounds(chain, max(vals) + 1).status == "proved"
  assert prove_in_bounds(chain, max(vals)).status == "violated"


@pytest.mark.parametrize("src,dst", [(s, d) for s in VALUE_DTYPES for d in VALUE_DTYPES if s is not d and (s.kind == "f" or d.kind == "f")],
                         ids=lambda d: d.name)
def test_cast_interval_holds_the_casts_of_a_range(src, dst):
  from tinyspec.ops.intervals import cast_interval
  ends = [v for v in edges(src) if not (isinstance(v, float) and math.isnan(v))]
  for lo, hi in [(a, b) for a in ends for b in ends if a <= b]:
    got = cast_interval(src, dst, (lo, hi))
    pts = [lo, hi] + ([lo + (hi - lo) * t for t in (0.1, 0.5, 0.9)] if src.kind == "f" and math.isfinite(hi - lo) else [])
    for v in pts:
      c = scalar.cast(v, src, dst)
      if math.isnan(c):  # only an fp8 dtype with no infinity (e4m3fn, the fnuz ones) makes a NaN of a number: of an infinity
        assert dst in dtypes.fp8s and math.isfinite(dst.max) and math.isinf(v), (src.name, dst.name, v)
        continue
      assert got[0] <= c <= got[1], (src.name, dst.name, (lo, hi), v, c, got)


@pytest.mark.parametrize("op", [Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR], ids=lambda o: o.name)
@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8], ids=lambda d: d.name)
def test_undefined_in_a_range_is_c_undefined_at_one_of_its_points(op, dt):
  # every range of a small dtype, against c_undefined at every point of it (wrap-around is defined: tinyspec's and every backend's)
  from tinyspec.ops.intervals import undefined_in
  from tinyspec.ops.scalar import SIGNED_OVERFLOW
  ends = sorted({dt.min, dt.min + 1, -2, -1, 0, 1, 2, 7, 8, 31, 32, 33, dt.max} & set(range(dt.min, dt.max + 1)))
  ranges = [(lo, hi) for lo in ends for hi in ends if lo <= hi]
  for a in ranges[::9]:
    for b in ranges[::2]:
      pointwise = any(c_undefined(op, dt, x, y) not in (None, SIGNED_OVERFLOW) for x in range(a[0], a[1] + 1) for y in range(b[0], b[1] + 1))
      assert (undefined_in(op, dt, a, b) is not None) == pointwise, (op.name, dt.name, a, b)
  assert undefined_in(Ops.ADD, dt, (dt.min, dt.max), (dt.min, dt.max)) is None  # wraps, as defined


@pytest.mark.parametrize("op", [Ops.ADD, Ops.MUL, Ops.MAX], ids=lambda o: o.name)
@pytest.mark.parametrize("dt", [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.float64], ids=lambda d: d.name)
def test_reduce_interval_holds_every_reduction_of_values_in_range(op, dt):
  from tinyspec.ops.intervals import reduce_interval
  rng = np.random.default_rng(3)
  ranges = [(False, False), (False, True), (True, True)] if dt.kind == "b" else \
    [(-3, -1), (-2, 5), (0, 0), (0, 3), (1, 4), (-7, 7)] + ([(dt.min, dt.max)] if dt.kind in "iu" else [(-0.5, 2.25)])
  for a in [r for r in ranges if dt.min <= r[0] and r[1] <= dt.max]:
    for n in (0, 1, 2, 3, 5):
      lo, hi = reduce_interval(op, dt, a, n)
      for _ in range(20):
        xs = rng.uniform(a[0], a[1], n) if dt.kind == "f" else rng.integers(int(a[0]), int(a[1]), n, endpoint=True)
        v = scalar.reduce_identity(op, dt)
        for x in xs: v = scalar.run(op if not (dt.kind == "b" and op is Ops.ADD) else Ops.OR, dt, v, x.item())
        assert lo <= v <= hi or _within(v, lo, hi), (op.name, dt.name, a, n, v, (lo, hi))
  if dt.kind in "iu" and op is not Ops.MAX: assert reduce_interval(op, dt, (dt.max, dt.max), 2) == (dt.min, dt.max)  # may wrap

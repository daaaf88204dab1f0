"""The kernel-level passes (simplify, optimize, lower_reduce, linearize, render) on hand-built kernels and on the
parity programs: every pass keeps the evaluated meaning, and each simplify rule is checked by brute force."""
from __future__ import annotations

import random

import numpy as np
import pytest
from builders import matmul, np_matmul, two_stage_graph

from tinyspec.dtype import DType, dtypes
from tinyspec.lower.base import LowerOptions, Trace
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.lower.linearize import LINEARIZE, LinearizeError, linearize_body
from tinyspec.lower.lower_reduce import LOWER_REDUCE
from tinyspec.lower.optimize import OPTIMIZE, validate_opts
from tinyspec.lower.render import RENDER, get_renderer
from tinyspec.lower.simplify import SIMPLIFY, pm_simplify
from tinyspec.ops.scalar import cdiv, cmod
from tinyspec.semantics import evaluate, evaluate_kernel
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp

pytestmark = pytest.mark.spec

KERNEL_PASSES = (SIMPLIFY, OPTIMIZE, LOWER_REDUCE, LINEARIZE, RENDER)


def lower_kernels(root: UOp, passes=KERNEL_PASSES, **options) -> dict[str, UOp]:
  opts = LowerOptions(**options)
  out = {"input": root}
  for p in passes: root = out[p.name] = p.run(root, opts, Trace())
  return out


@pytest.mark.parametrize("op", [Ops.ADD, Ops.MAX, Ops.MUL])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int32])
def test_matmul_through_every_pass(op, dt):
  M, K, N = 5, 7, 3
  root, A, B = matmul(M, K, N, dt, op)
  rng = np.random.default_rng(0)
  a = rng.uniform(-1, 1, M * K).astype(dt.np) if dt.is_float else rng.integers(-3, 4, M * K).astype(dt.np)
  b = rng.uniform(-1, 1, K * N).astype(dt.np) if dt.is_float else rng.integers(-3, 4, K * N).astype(dt.np)
  want = np_matmul(a.reshape(M, K), b.reshape(K, N), op).reshape(-1)
  for opts in (None, (), (("split", 2, 7),), (("unroll", 2),), (("split", 0, 5), ("global", 1))):
    stages = lower_kernels(root, opts=opts)
    for name, g in stages.items():
      got = evaluate(g, {A.arg.id: a, B.arg.id: b})[0]
      if dt.is_float: np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} opts={opts}")
      else: np.testing.assert_array_equal(got, want, err_msg=f"{name} opts={opts}")


def test_two_kernels_and_flip_reduce():
  root, X = two_stage_graph()
  x = np.linspace(-3, 3, 12).astype(np.float32)
  y = np.maximum(x * 3 - 5, 0)
  want = y[::-1] + y.max()
  for name, g in lower_kernels(root).items():
    out = evaluate(g, {X.arg.id: x})
    np.testing.assert_allclose(out[0], want, rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(out[1], y, rtol=1e-6, err_msg=name)


# ---- lower_reduce: the exact accumulator form of docs/ir.md ----
def test_lower_reduce_form():
  root, A, B = matmul(2, 3, 4)
  body = kernel_calls(lower_kernels(root, (LOWER_REDUCE,))["lower_reduce"])[0].src[0]
  nodes = body.toposort()
  assert not any(u.op is Ops.REDUCE for u in nodes)
  accs = [u for u in nodes if u.op is Ops.BUFFER]
  assert len(accs) == 1 and accs[0].arg.addrspace is AddrSpace.REG and accs[0].arg.size == 1
  acc = accs[0]
  stores = [u for u in nodes if u.op is Ops.STORE and u.src[0].src[0] is not UOp.param(0, dtypes.float32, 8)]
  init = next(s for s in stores if s.src[1].op is Ops.CONST)
  i, j, k = sorted((u for u in nodes if u.op is Ops.RANGE), key=lambda r: r.arg.axis)
  assert init.src[0].src[0] is acc.after(i, j) and init.src[1].arg == 0.0
  upd = next(u for u in nodes if u.op is Ops.END and u.src[1:] == (k,))
  st = upd.src[0]
  assert st.src[0].src[0] is acc and st.src[1].op is Ops.ADD
  running = st.src[1].src[0]
  assert running.op is Ops.LOAD and running.src[0].src[0] is acc.after(init, k)
  read = acc.after(upd).index(UOp.const(dtypes.index, 0)).load()
  assert read in nodes


def test_reduce_identities_and_nesting():
  """sum_i max_j x[i,j] and prod_j over an empty range: nested accumulators and identities."""
  dt = dtypes.int32
  X, OUT = UOp.buffer(dt, 12), UOp.buffer(dt, 2)
  px = UOp.param(1, dt, 12)
  i, j, e = UOp.range(3, 0, AxisType.REDUCE), UOp.range(4, 1, AxisType.REDUCE), UOp.range(0, 2, AxisType.REDUCE)
  inner = UOp(Ops.REDUCE, dt, (px.index(i * 4 + j).load(), j), Ops.MAX)
  outer = UOp(Ops.REDUCE, dt, (inner, i), Ops.ADD)
  empty = UOp(Ops.REDUCE, dt, (px.index(e).load(), e), Ops.MUL)
  p0 = UOp.param(0, dt, 2)
  body = UOp(Ops.SINK, src=(p0.index(UOp.const(dtypes.index, 0)).store(outer), p0.index(UOp.const(dtypes.index, 1)).store(empty)))
  root = UOp(Ops.SINK, src=(OUT.after(UOp(Ops.CALL, src=(body, OUT, X))),))
  x = np.array([5, -3, 2, 9, -8, -1, -4, -2, 0, 7, 7, -9], dtype=np.int32)
  want = [x.reshape(3, 4).max(axis=1).sum(), 1]
  for opts in (None, ()):
    for name, g in lower_kernels(root, opts=opts).items():
      np.testing.assert_array_equal(evaluate(g, {X.arg.id: x})[0], want, err_msg=f"{name} {opts}")


# ---- linearize ----
def _check_linear(prg: UOp) -> None:
  linear = prg.src[1].src
  seen: set[UOp] = set()
  open_: list[UOp] = []
  for u in linear:
    assert u.dtype is not dtypes.index, f"{u.op.name} still has dtype index"
    assert u.op is not Ops.REDUCE
    for s in u.src: assert s in seen, f"{u.op.name} comes before its source {s.op.name}"
    if u.op is Ops.RANGE: open_.append(u)
    if u.op is Ops.END:
      closing = list(u.src[1:])
      assert open_[-len(closing):] == closing, "END does not close the innermost open loops"
      del open_[-len(closing):]
    seen.add(u)
  assert not open_ and linear[-1] is prg.src[0] and linear[-1].op is Ops.SINK
  assert len(linear) == len(prg.src[0].toposort())


def test_linearize_order_nesting_and_hoisting():
  root, A, B = matmul(4, 6, 5)
  g = lower_kernels(root, KERNEL_PASSES[:4], opts=())["linearize"]
  prg = kernel_calls(g)[0].src[0]
  _check_linear(prg)
  linear = list(prg.src[1].src)
  ranges = [u for u in linear if u.op is Ops.RANGE]
  assert [r.dtype for r in ranges] == [dtypes.int32] * 3
  # i*6 depends on the outer range only: it runs before the j loop opens
  i_times_k = next(u for u in linear if u.op is Ops.MUL and ranges[0] in u.src and u.src[1].arg == 6)
  assert linear.index(ranges[0]) < linear.index(i_times_k) < linear.index(ranges[1])


def test_linearize_shared_range_gets_its_own_loop():
  """Two reductions over one RANGE node: each END runs its own loop."""
  dt = dtypes.float32
  X, OUT = UOp.buffer(dt, 6), UOp.buffer(dt, 2)
  px, p0 = UOp.param(1, dt, 6), UOp.param(0, dt, 2)
  j = UOp.range(6, 0, AxisType.REDUCE)
  v = px.index(j).load()
  s, m = UOp(Ops.REDUCE, dt, (v, j), Ops.ADD), UOp(Ops.REDUCE, dt, (v, j), Ops.MAX)
  body = UOp(Ops.SINK, src=(p0.index(UOp.const(dtypes.index, 0)).store(s), p0.index(UOp.const(dtypes.index, 1)).store(m)))
  root = UOp(Ops.SINK, src=(OUT.after(UOp(Ops.CALL, src=(body, OUT, X))),))
  x = np.array([1, -2, 3.5, 0, 2, -7], dtype=np.float32)
  g = lower_kernels(root, KERNEL_PASSES[:4], opts=())["linearize"]
  prg = kernel_calls(g)[0].src[0]
  _check_linear(prg)
  assert sum(u.op is Ops.RANGE for u in prg.src[1].src) == 2
  np.testing.assert_allclose(evaluate(g, {X.arg.id: x})[0], [x.sum(), x.max()])


def test_linearize_int64_when_bounds_need_it():
  dt = dtypes.int64
  i = UOp.range(4, 0)
  big = i * UOp.const(dtypes.index, 3_000_000_000)
  body = UOp(Ops.SINK, src=(UOp.param(0, dt, 4).index(i).store(big.cast(dt)).end(i),))
  prg = linearize_body(body, "k", LINEARIZE.tables)
  assert {u.dtype for u in prg.src[1].src if u.op is Ops.RANGE} == {dtypes.int64}
  out = np.zeros(4, np.int64)
  evaluate_kernel(prg, [out])
  np.testing.assert_array_equal(out, np.arange(4) * 3_000_000_000)
  small = linearize_body(body, "k", LINEARIZE.tables, LowerOptions(int_dtype=dtypes.int64))
  assert all(u.dtype is not dtypes.int32 for u in small.src[1].src)


def test_linearize_rejects_unclosed_range():
  i = UOp.range(4, 0)
  body = UOp(Ops.SINK, src=(UOp.param(0, dtypes.int32, 4).index(i).store(UOp.const(dtypes.int32, 1)),))
  with pytest.raises(LinearizeError, match="never closed|no END closes"):
    linearize_body(body, "k", LINEARIZE.tables)


# ---- optimize ----
def test_bad_opts_are_skipped_and_malformed_opts_rejected():
  root, A, B = matmul(4, 6, 5)
  base = lower_kernels(root, (OPTIMIZE,), opts=())["optimize"]
  for opts in ((("split", 9, 2),), (("split", 2, 4),), (("split", 2, 6),), (("unroll", 7),), (("global", 2),)):
    assert lower_kernels(root, (OPTIMIZE,), opts=opts)["optimize"] is base, opts
  for bad in ((("tile", 1, 2),), (("split", 1),), (("unroll", "a"),)):
    with pytest.raises(ValueError, match="opt"):
      validate_opts(bad)


def test_split_unroll_global_shapes():
  root, A, B = matmul(4, 6, 5)
  body = kernel_calls(lower_kernels(root, (OPTIMIZE,), opts=(("split", 2, 3), ("global", 0), ("unroll", 1)))["optimize"])[0].src[0]
  rs = {u.arg.axis: u for u in body.toposort() if u.op is Ops.RANGE}
  assert sorted(rs) == [0, 3, 4]  # axis 1 unrolled away; axis 2 split into 3 (bound 2) and 4 (bound 3)
  assert rs[0].arg.kind is AxisType.GLOBAL and (rs[3].src[0].arg, rs[4].src[0].arg) == (2, 3)
  assert sum(u.op is Ops.REDUCE for u in body.toposort()) == 5


# ---- render ----
def test_render_c_constants_and_functions():
  dt = dtypes.float32
  OUT = UOp.buffer(dt, 3)
  i = UOp.range(3, 0)
  x = i.cast(dt) * UOp.const(dt, 0.1)
  v = UOp(Ops.EXP2, dt, (x,)) + UOp.const(dt, float("inf")).alu(Ops.MAX, x)
  body = UOp(Ops.SINK, src=(UOp.param(0, dt, 3).index(i).store(v).end(i),))
  g = lower_kernels(UOp(Ops.SINK, src=(OUT.after(UOp(Ops.CALL, src=(body, OUT), arg="k")),)))["render"]
  src = kernel_calls(g)[0].src[0].src[2].arg
  assert src.lang == "c" and src.name == "k_0"
  assert "void k_0(float* restrict data0)" in src.text
  assert "exp2f(" in src.text and "INFINITY" in src.text and float(np.float32(0.1)).hex() + "f" in src.text


def test_renderer_lookup_names_known_backends():
  with pytest.raises(ValueError, match="no renderer for backend 'wasm'"):
    get_renderer("wasm")


# ---- simplify: every rule on examples, checked by brute force ----
def var(dt: DType, lo: int, hi: int, axis: int) -> UOp:
  """An integer variable taking every value in [lo, hi] (a RANGE shifted, cast to dt)."""
  r = UOp.range(hi - lo + 1, axis) + UOp.const(dtypes.index, lo)
  return r if dt is dtypes.index else r.cast(dt)


def full(dt: DType, axis: int, slot: int) -> tuple[UOp, np.ndarray]:
  """A variable with no known bounds (a LOAD), and the values it takes: every int8/uint8 value, or edge values."""
  if dt.bits == 8: vals = np.arange(dt.min, dt.max + 1)
  else:
    edge = [dt.min, dt.min + 1, -7, -3, -1, 0, 1, 2, 3, 7, 12, dt.max - 1, dt.max]
    vals = np.array(sorted({v for v in edge if dt.min <= v <= dt.max}))
  p = UOp.param(slot, dt, len(vals))
  return p.index(UOp.range(len(vals), axis)).load(), vals.astype(dt.np)


def brute_check(expr_fn, dt: DType, spec: list) -> set[str]:
  """Build expr over variables described by spec ((lo, hi) or 'full'), simplify it, and check both kernels give
  the same value at every point. Returns the names of the rules that fired."""
  vs, args, shape = [], [], []
  for ax, s in enumerate(spec):
    if s == "full":
      v, vals = full(dt, ax, 1 + len(args))
      vs.append(v); args.append(vals); shape.append(len(vals))  # noqa: E702
    else:
      vs.append(var(dt, s[0], s[1], ax)); shape.append(s[1] - s[0] + 1)  # noqa: E702
  expr = expr_fn(*vs)
  rs = sorted({u for u in expr.toposort() if u.op is Ops.RANGE}, key=lambda r: r.arg.axis)
  n = int(np.prod(shape))
  idx, stride = UOp.const(dtypes.index, 0), 1
  for r, d in reversed(list(zip(rs, shape))):
    idx = idx + r * UOp.const(dtypes.index, stride)
    stride *= d
  out_dt = expr.dtype
  body = UOp(Ops.SINK, src=(UOp.param(0, out_dt, n).index(idx).store(expr).end(*rs),))
  fired: list[str] = []
  simple = Trace(observer=lambda rule, a, b: fired.append(rule.name)).rewrite(body, pm_simplify)
  want, got = np.zeros(n, out_dt.np), np.zeros(n, out_dt.np)
  evaluate_kernel(body, [want, *args])
  evaluate_kernel(simple, [got, *args])
  np.testing.assert_array_equal(got, want, err_msg=f"{dt.name}: {fired}")
  return set(fired)


I8, I32, I64, U8, U32, IDX = dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.index
c = UOp.const
B = dtypes.bool

# (rule, dtype, expression over variables, variable specs); each example must fire its rule
RULE_EXAMPLES = [
  ("fold_const_alu", I8, lambda x: x + (c(I8, 100) + c(I8, 100)), [(-3, 3)]),
  ("fold_const_alu", I32, lambda x: x + c(I32, -7).alu(Ops.IDIV, c(I32, 2)) + c(I32, -7).alu(Ops.MOD, c(I32, 2)), [(-3, 3)]),
  ("fold_const_alu", U8, lambda x: x + c(U8, 3).alu(Ops.SUB, c(U8, 5)), [(0, 3)]),
  ("fold_const_alu", I32, lambda x: x + c(I32, -2**31).alu(Ops.IDIV, c(I32, -1)), [(0, 2)]),
  ("fold_const_alu", I8, lambda x: x + c(I8, -100).alu(Ops.SHR, c(I8, 2)) + c(I8, 7).alu(Ops.SHL, c(I8, 5)), [(0, 2)]),
  ("fold_const_cast", I8, lambda x: x + c(I32, 300).cast(I8), [(-2, 2)]),
  ("fold_cast_same_dtype", I32, lambda x: x.cast(I32), [(-2, 2)]),
  ("add_zero", I32, lambda x: x + c(I32, 0), [(-4, 4)]),
  ("sub_zero", I32, lambda x: x - c(I32, 0), [(-4, 4)]),
  ("sub_self", I8, lambda x: x - x, ["full"]),
  ("mul_one", I8, lambda x: x * c(I8, 1), ["full"]),
  ("mul_zero", I8, lambda x: x * c(I8, 0), ["full"]),
  ("idiv_one", I32, lambda x: x.alu(Ops.IDIV, c(I32, 1)), ["full"]),
  ("mod_one", I32, lambda x: x.alu(Ops.MOD, c(I32, 1)), ["full"]),
  ("max_self", I8, lambda x: x.maximum(x), ["full"]),
  ("xor_zero", U8, lambda x: x.alu(Ops.XOR, c(U8, 0)), ["full"]),
  ("and_self", I8, lambda x: x & x, ["full"]),
  ("or_self", I8, lambda x: x | x, ["full"]),
  ("and_true", I32, lambda x, y: ((x < y) & c(B, True)).cast(I32), [(-2, 2), (-2, 2)]),
  ("and_false", I32, lambda x, y: ((x < y) & c(B, False)).cast(I32), [(-2, 2), (-2, 2)]),
  ("or_true", I32, lambda x, y: ((x < y) | c(B, True)).cast(I32), [(-2, 2), (-2, 2)]),
  ("or_false", I32, lambda x, y: ((x < y) | c(B, False)).cast(I32), [(-2, 2), (-2, 2)]),
  ("xor_false", I32, lambda x, y: (x < y).alu(Ops.XOR, c(B, False)).cast(I32), [(-2, 2), (-2, 2)]),
  ("cmpne_false", I32, lambda x, y: (x < y).ne(c(B, False)).cast(I32), [(-2, 2), (-2, 2)]),
  ("cmpeq_true", I32, lambda x, y: (x < y).eq(c(B, True)).cast(I32), [(-2, 2), (-2, 2)]),
  ("cmplt_self", I32, lambda x: (x < x).cast(I32), ["full"]),
  ("cmpne_self", I32, lambda x: x.ne(x).cast(I32), ["full"]),
  ("cmpeq_self", I32, lambda x: x.eq(x).cast(I32), ["full"]),
  ("where_true", I32, lambda x, y: c(B, True).where(x, y), [(-2, 2), (0, 3)]),
  ("where_false", I32, lambda x, y: c(B, False).where(x, y), [(-2, 2), (0, 3)]),
  ("where_same", I32, lambda x, y: (x < y).where(x, x), [(-2, 2), (0, 3)]),
  ("fold_by_bounds", I32, lambda x: (x < c(I32, 10)).where(x, c(I32, 99)), [(-5, 5)]),
  ("fold_by_bounds", I32, lambda x: x.alu(Ops.IDIV, c(I32, 8)), [(-7, 7)]),
  ("fold_by_bounds", I32, lambda x: x.alu(Ops.IDIV, c(I32, -8)), [(9, 15)]),
  ("fold_by_bounds", IDX, lambda x: x.alu(Ops.IDIV, c(IDX, 5)), [(-9, -5)]),
  ("max_by_bounds", I32, lambda x, y: x.maximum(y), [(3, 6), (-4, 3)]),
  ("mod_below_divisor", I32, lambda x: x.alu(Ops.MOD, c(I32, 8)), [(-7, 7)]),
  ("mod_below_divisor", I32, lambda x: x.alu(Ops.MOD, c(I32, -5)), [(-4, 4)]),
  ("mod_constant_quotient", I32, lambda x: x.alu(Ops.MOD, c(I32, 8)), [(17, 23)]),
  ("mod_constant_quotient", I32, lambda x: x.alu(Ops.MOD, c(I32, 8)), [(-23, -17)]),
  ("mod_constant_quotient", I32, lambda x: x.alu(Ops.MOD, c(I32, -8)), [(-23, -17)]),
  ("idiv_split_divisible", I32, lambda x, y: (x * c(I32, 4) + y).alu(Ops.IDIV, c(I32, 4)), [(0, 5), (0, 9)]),
  ("idiv_split_divisible", I32, lambda x, y: (x * c(I32, 4) + y).alu(Ops.IDIV, c(I32, 4)), [(-5, 0), (-9, 0)]),
  ("idiv_split_divisible", IDX, lambda x, y, z: (x * c(IDX, 12) + y * c(IDX, 4) + z).alu(Ops.IDIV, c(IDX, 4)), [(0, 3), (0, 2), (0, 3)]),
  ("mod_split_divisible", I32, lambda x, y: (x * c(I32, 4) + y).alu(Ops.MOD, c(I32, 4)), [(0, 5), (0, 9)]),
  ("mod_split_divisible", I8, lambda x, y: (x * c(I8, 4) + y).alu(Ops.MOD, c(I8, 4)), [(-5, 0), (-9, 0)]),
  ("idiv_divisible", I32, lambda x: (x * c(I32, 6)).alu(Ops.IDIV, c(I32, 3)), [(-9, 9)]),
  ("mod_divisible", I32, lambda x: (x * c(I32, 6)).alu(Ops.MOD, c(I32, 3)), [(-9, 9)]),
  ("idiv_idiv", I32, lambda x: x.alu(Ops.IDIV, c(I32, 3)).alu(Ops.IDIV, c(I32, 4)), ["full"]),
  ("idiv_idiv", I8, lambda x: x.alu(Ops.IDIV, c(I8, 3)).alu(Ops.IDIV, c(I8, 5)), ["full"]),
  ("add_const_assoc", I8, lambda x: (x + c(I8, 100)) + c(I8, 100), ["full"]),
  ("mul_const_assoc", U8, lambda x: (x * c(U8, 20)) * c(U8, 30), ["full"]),
  ("sub_const_as_add", I8, lambda x: x - c(I8, -128), ["full"]),
  ("const_out_of_sum", I8, lambda x, y: (x + c(I8, 3)) + y, ["full", (-3, 3)]),
  ("combine_mul_terms", I8, lambda x: x * c(I8, 100) + x * c(I8, 50), ["full"]),
  ("combine_mul_and_term", I8, lambda x: x * c(I8, 3) + x, ["full"]),
  ("combine_self", I8, lambda x: x + x, ["full"]),
  # bit identities
  ("or_zero", I32, lambda x: x | c(I32, 0), ["full"]),
  ("shl_zero", I32, lambda x: x.alu(Ops.SHL, c(I32, 0)), ["full"]),
  ("shr_zero", U8, lambda x: x.alu(Ops.SHR, c(U8, 0)), ["full"]),
  ("and_zero", I8, lambda x: x & c(I8, 0), ["full"]),
  ("and_all_ones", I8, lambda x: x & c(I8, -1), ["full"]),
  ("and_all_ones", U8, lambda x: x & c(U8, 255), ["full"]),
  ("or_all_ones", I32, lambda x: x | c(I32, -1), ["full"]),
  ("and_mask_noop", I32, lambda x: x & c(I32, 15), [(0, 15)]),
  ("xor_self", I8, lambda x: x.alu(Ops.XOR, x), ["full"]),
  ("xor_twice", I8, lambda x, y: x.alu(Ops.XOR, y).alu(Ops.XOR, y), ["full", (0, 5)]),
  ("idiv_neg_one", I8, lambda x: x.alu(Ops.IDIV, c(I8, -1)), ["full"]),
  ("mod_neg_one", I8, lambda x: x.alu(Ops.MOD, c(I8, -1)), ["full"]),
  ("mod_mod_same", I8, lambda x: x.alu(Ops.MOD, c(I8, 5)).alu(Ops.MOD, c(I8, 5)), ["full"]),
  # division and modulo
  ("divmod_negative_divisor", I8, lambda x: x.alu(Ops.IDIV, c(I8, -3)), ["full"]),
  ("divmod_negative_divisor", I8, lambda x: x.alu(Ops.MOD, c(I8, -3)), ["full"]),
  ("div_of_mod", I8, lambda x: x.alu(Ops.MOD, c(I8, 12)).alu(Ops.IDIV, c(I8, 4)), ["full"]),
  ("mod_of_mod", I8, lambda x: x.alu(Ops.MOD, c(I8, 12)).alu(Ops.MOD, c(I8, 4)), ["full"]),
  ("div_of_div_sum", I32, lambda x: (x.alu(Ops.IDIV, c(I32, 2)) + c(I32, 1)).alu(Ops.IDIV, c(I32, 2)), [(0, 124)]),
  ("divmod_congruence", I32, lambda x: (c(I32, 3) + x * c(I32, 3)).alu(Ops.IDIV, c(I32, 4)), [(0, 1)]),
  ("divmod_congruence", I32, lambda x: (c(I32, 17) + x * c(I32, 13)).alu(Ops.MOD, c(I32, 18)), [(0, 3)]),
  ("divmod_gcd", I32, lambda x, y: (x * c(I32, 6) + y * c(I32, 6)).alu(Ops.IDIV, c(I32, 16)), [(0, 7), (0, 7)]),
  ("divmod_gcd", IDX, lambda x, y: (x * c(IDX, 100) + y * c(IDX, 50)).alu(Ops.MOD, c(IDX, 100)), [(0, 7), (0, 3)]),
  ("divmod_split", I32, lambda x, y: (x * c(I32, 5) + y * c(I32, 4) + c(I32, 9)).alu(Ops.IDIV, c(I32, 4)), [(0, 7), (0, 3)]),
  ("divmod_split", IDX, lambda x, y: (x * c(IDX, 9) + y + c(IDX, 3)).alu(Ops.MOD, c(IDX, 4)), [(0, 7), (0, 3)]),
  ("mod_nested_mod", I32, lambda x, y: (x.alu(Ops.MOD, c(I32, 4)) + y).alu(Ops.MOD, c(I32, 2)), [(0, 9), (0, 5)]),
  ("divmod_nest_factor", IDX, lambda x, y: (x * c(IDX, 2) + y).alu(Ops.IDIV, c(IDX, 10)), [(0, 7), (0, 1)]),
  ("divmod_negative_numerator", I32, lambda x: (x * c(I32, -4) - c(I32, 3)).alu(Ops.IDIV, c(I32, 4)), [(0, 9)]),
  ("divmod_negative_numerator", I8, lambda x: (x * c(I8, -4) - c(I8, 3)).alu(Ops.MOD, c(I8, 4)), [(0, 9)]),
  ("idiv_self", I32, lambda x: x.alu(Ops.IDIV, x), [(1, 9)]),
  ("divmod_var_factor", I32, lambda d, a, b: (d * a + b).alu(Ops.IDIV, d), [(1, 5), (0, 4), (0, 3)]),
  ("divmod_var_factor", I32, lambda d, a, b: (d * a + b).alu(Ops.MOD, d), [(1, 5), (0, 4), (0, 3)]),
  ("mod_below_var", I32, lambda x, y: x.alu(Ops.MOD, y + c(I32, 9)), [(0, 8), (0, 3)]),
  ("mod_var_constant_quotient", I32, lambda x, y: (x + c(I32, 20)).alu(Ops.MOD, y + c(I32, 8)), [(0, 3), (0, 2)]),
  # comparisons
  ("lt_offset", I32, lambda x, y: ((x + y * c(I32, 2) + c(I32, 2)) < c(I32, 3)).cast(I32), [(0, 6), (0, 2)]),
  ("lt_offset_left", I32, lambda x, y: (c(I32, 3) < (x + y * c(I32, 2) + c(I32, 2))).cast(I32), [(0, 6), (0, 2)]),
  ("lt_quotient", I32, lambda x: (x.alu(Ops.IDIV, c(I32, 4)) < c(I32, 3)).cast(I32), ["full"]),
  ("lt_quotient", I8, lambda x: (x.alu(Ops.IDIV, c(I8, 4)) < c(I8, -3)).cast(I8), ["full"]),
  ("lt_quotient_left", I8, lambda x: (c(I8, 2) < x.alu(Ops.IDIV, c(I8, 4))).cast(I8), ["full"]),
  ("lt_quotient_left", I8, lambda x: (c(I8, -2) < x.alu(Ops.IDIV, c(I8, 4))).cast(I8), ["full"]),
  ("lt_scale", I32, lambda x: ((x * c(I32, 4)) < c(I32, 13)).cast(I32), [(0, 5)]),
  ("lt_scale_left", I32, lambda x: (c(I32, 11) < (x * c(I32, 4))).cast(I32), [(0, 5)]),
  ("lt_gcd", I32, lambda x, y: ((x * c(I32, 4) + y) < c(I32, 16)).cast(I32), [(0, 7), (0, 3)]),
  ("lt_simplex", I32, lambda x, y: ((x * c(I32, 3) + y * c(I32, 4)) < c(I32, 1)).cast(I32), [(0, 3), (0, 3)]),
  ("lt_negated", I8, lambda x, y: (x.alu(Ops.NEG) < y.alu(Ops.NEG)).cast(I8), [(-5, 5), (0, 3)]),
  ("lt_negated_const", I8, lambda x: (x.alu(Ops.NEG) < c(I8, 3)).cast(I8), [(-100, 100)]),
  ("eq_offset", I8, lambda x: (x + c(I8, 3)).eq(c(I8, 5)).cast(I8), ["full"]),
  ("eq_offset", I8, lambda x: (x + c(I8, 3)).ne(c(I8, -128)).cast(I8), ["full"]),
  # WHERE and MAX
  ("where_bool_identity", I32, lambda x: (x < c(I32, 3)).where(c(B, True), c(B, False)).cast(I32), ["full"]),
  ("where_bool_not", I32, lambda x: (x < c(I32, 3)).where(c(B, False), c(B, True)).cast(I32), ["full"]),
  ("where_same_cond_then", I32, lambda x, y: (x < y).where((x < y).where(x, y * c(I32, 2)), y), [(0, 4), (0, 4)]),
  ("where_same_cond_else", I32, lambda x, y: (x < y).where(x, (x < y).where(y * c(I32, 2), y)), [(0, 4), (0, 4)]),
  ("where_merge_and", I32, lambda x, y: (x < c(I32, 3)).where((y < c(I32, 2)).where(x, y), y), [(0, 5), (0, 5)]),
  ("where_merge_or", I32, lambda x, y: (x < c(I32, 3)).where(x, (y < c(I32, 2)).where(x, y)), [(0, 5), (0, 5)]),
  ("where_not_cond", I32, lambda x, y: (x < y).ne(c(B, True)).where(x, y * c(I32, 2)), [(0, 5), (0, 5)]),
  ("not_not", I32, lambda x, y: (x < y).ne(c(B, True)).eq(c(B, False)).cast(I32), [(0, 5), (0, 5)]),
  ("where_combine_alu", I32, lambda x, y: (x < y).where(c(I32, 3), x) + (x < y).where(c(I32, 4), y), [(0, 5), (0, 5)]),
  ("where_sum_combine", I32, lambda x, y: (x + (x < y).where(c(I32, 3), x)) + (x < y).where(c(I32, 4), y), [(0, 5), (0, 5)]),
  ("where_closure", I32, lambda x, y: (x < y).where((x < y).where(x, y) + y, x), [(0, 5), (0, 5)]),
  ("max_const_assoc", I32, lambda x: x.maximum(c(I32, 10)).maximum(c(I32, 11)), [(0, 20)]),
  ("where_as_max", I32, lambda x, y: (x < y).where(y, x), [(-5, 5), (0, 5)]),
  # sums
  ("divmod_recombine", I32, lambda x: x.alu(Ops.MOD, c(I32, 4)) + x.alu(Ops.IDIV, c(I32, 4)) * c(I32, 4), ["full"]),
  ("divmod_recombine", I8, lambda x: x.alu(Ops.MOD, c(I8, 4)) + x.alu(Ops.IDIV, c(I8, 4)).alu(Ops.MOD, c(I8, 3)) * c(I8, 4), ["full"]),
  ("sum_canonical", I8, lambda x, y: (x * c(I8, 3) + y) + x, ["full", (0, 5)]),
  ("sum_canonical", I32, lambda x, y: (x - y) - (x - y * c(I32, 2)), ["full", (-3, 3)]),
]


@pytest.mark.parametrize("rule,dt,fn,spec", RULE_EXAMPLES, ids=[f"{r}-{i}" for i, (r, *_) in enumerate(RULE_EXAMPLES)])
def test_simplify_rule_example(rule, dt, fn, spec):
  assert rule in brute_check(fn, dt, spec)


def _gated_load_kernel(gate_fn):
  dt = dtypes.int32
  i = UOp.range(6, 0)
  gate = gate_fn(i)
  ld = UOp(Ops.LOAD, dt, (UOp.param(1, dt, 6).index(i), UOp.const(dt, -1), gate))
  st = UOp(Ops.STORE, src=(UOp.param(0, dt, 6).index(i), ld, gate))
  return UOp(Ops.SINK, src=(st.end(i),))


@pytest.mark.parametrize("gate_fn,rules", [
  (lambda i: i < UOp.const(dtypes.index, 6), {"load_gate_true", "store_gate_true"}),
  (lambda i: i < UOp.const(dtypes.index, 0), {"load_gate_false"}),
])
def test_gate_rules(gate_fn, rules):
  body = _gated_load_kernel(gate_fn)
  fired: list[str] = []
  simple = Trace(observer=lambda rule, a, b: fired.append(rule.name)).rewrite(body, pm_simplify)
  assert rules <= set(fired)
  x = np.arange(10, 16, dtype=np.int32)
  want, got = np.full(6, 7, np.int32), np.full(6, 7, np.int32)
  evaluate_kernel(body, [want, x])
  evaluate_kernel(simple, [got, x])
  np.testing.assert_array_equal(got, want)


def test_every_simplify_rule_has_an_example():
  named = {r.name for r in pm_simplify.rules}
  covered = {r for r, *_ in RULE_EXAMPLES} | {"load_gate_true", "load_gate_false", "store_gate_true"}
  assert named <= covered, f"rules without an example: {sorted(named - covered)}"


@pytest.mark.parametrize("dt", [I8, U8, I32, U32, I64])
def test_wrapping_split_is_not_applied(dt):
  """(x*c + y) // c must not split when x*c wraps: brute force over every int8 / edge values. (index is unbounded,
  so it has no wrapping case.)"""
  for c_ in (4, 16, 3):
    k = c(dt, c_)
    brute_check(lambda x, y, k=k: (x * k + y).alu(Ops.IDIV, k), dt, ["full", (0, 5)])
    brute_check(lambda x, y, k=k: (x * k + y).alu(Ops.MOD, k), dt, ["full", (0, 5)])
    brute_check(lambda x, k=k: (x * k).alu(Ops.IDIV, k), dt, ["full"])
  if dt.kind == "i":  # MIN // -1 wraps, so (x // -1) // 2 is not x // -2
    brute_check(lambda x: x.alu(Ops.IDIV, c(dt, -1)).alu(Ops.IDIV, c(dt, 2)), dt, ["full"])


def _random_expr(rng: random.Random, dt: DType, leaves: list[UOp], depth: int) -> UOp:
  if depth == 0 or rng.random() < 0.2:
    if rng.random() < 0.3: return UOp.const(dt, rng.choice([-9, -4, -1, 0, 1, 2, 3, 4, 8, 16] if dt.kind != "u" else [0, 1, 2, 3, 4, 8, 16]))
    return rng.choice(leaves)
  op = rng.choice([Ops.ADD, Ops.ADD, Ops.MUL, Ops.SUB, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.WHERE])
  a = _random_expr(rng, dt, leaves, depth - 1)
  if op in (Ops.IDIV, Ops.MOD):  # divisors are nonzero constants: division by zero is outside C's meaning
    return a.alu(op, UOp.const(dt, rng.choice([1, 2, 3, 4, 5, 8, -3, -4] if dt.kind != "u" else [1, 2, 3, 4, 5, 8])))
  b = _random_expr(rng, dt, leaves, depth - 1)
  if op is Ops.WHERE: return (a < b).where(b, _random_expr(rng, dt, leaves, depth - 1))
  return a.alu(op, b)


@pytest.mark.parametrize("dt", [I8, U8, I32, I64, IDX])
@pytest.mark.parametrize("seed", range(4))
def test_simplify_random_expressions(dt, seed):
  rng = random.Random(seed * 101 + dt.bits)
  for _ in range(12):
    lo = rng.randint(-12, 4) if dt.kind != "u" else rng.randint(0, 6)
    spec = [(lo, lo + rng.randint(0, 10)), "full" if dt.bits == 8 else (0, rng.randint(0, 9))]
    brute_check(lambda x, y: _random_expr(rng, dt, [x, y], 4), dt, spec)


def test_c_division_helpers():
  for a in range(-20, 21):
    for b in (-7, -3, -1, 1, 2, 5):
      assert cdiv(a, b) == int(a / b) and cdiv(a, b) * b + cmod(a, b) == a


# ---- the parity programs through the kernel passes ----
def _programs():
  import programs
  return programs


def _lowered(prog, **options) -> dict[str, UOp]:
  from tinyspec.lower.pipeline import PASSES, make_options, run_pass
  opts, out, root = make_options(**options), {}, prog.root
  # each pass's own output is what is under test here; the spec checks of every stage are tested elsewhere
  for p in PASSES: root = out[p.name] = run_pass(p, root, opts, check=False)
  return out


PROGRAM_NAMES = sorted(_programs().PROGRAMS)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_every_kernel_pass_keeps_meaning(name):
  prog = _programs().PROGRAMS[name]()
  stages = _lowered(prog)
  for st in ("simplify", "optimize", "lower_reduce", "linearize", "render"):
    _programs().check_outputs(prog, evaluate(stages[st], prog.inputs))
  for c_ in kernel_calls(stages["linearize"]): _check_linear(c_.src[0])


@pytest.mark.parametrize("name", ["gemm", "conv2d", "softmax", "layernorm", "reductions_int", "cumsum_axis0", "mlp2"])
def test_program_random_opts_keep_meaning(name):
  prog = _programs().PROGRAMS[name]()
  rng = random.Random(name)
  for _ in range(4):
    opts = tuple(rng.choice([("split", rng.randint(0, 6), rng.choice([2, 3, 4])), ("unroll", rng.randint(0, 6)), ("global", rng.randint(0, 6))])
                 for _ in range(rng.randint(1, 4)))
    stages = _lowered(prog, opts=opts)
    _programs().check_outputs(prog, evaluate(stages["linearize"], prog.inputs))


@pytest.mark.parametrize("opts", [(("split", 0, 2),), (("unroll", 0),), (("split", 0, 3), ("unroll", 2))])
def test_split_and_unroll_keep_storage_placed_in_the_loop(opts):
  # p[0] = p[0] * 3 + r in loop r: the store's storage is placed in r (AFTER(p, r)); split places it in the two new
  # ranges, unroll in none (each copy is one iteration), never in an index expression
  from tinyspec.lower.optimize import optimize_body
  from tinyspec.spec import Stage, check
  i32, z, r = dtypes.int32, UOp.const(dtypes.index, 0), UOp.range(6, 0)
  p = UOp.param(0, i32, 1)
  slot = p.after(r).index(z)
  body = UOp(Ops.SINK, src=(slot.store(slot.load() * UOp.const(i32, 3) + r.cast(i32)).end(r),))
  out = optimize_body(body, list(opts), OPTIMIZE.tables)
  assert out is not body and check(out, Stage.KERNEL) == []
  want, got = np.array([1], np.int32), np.array([1], np.int32)
  evaluate_kernel(body, [want])
  evaluate_kernel(out, [got])
  assert want.tolist() == [((((((1 * 3 + 0) * 3 + 1) * 3 + 2) * 3 + 3) * 3 + 4) * 3 + 5)] and got.tolist() == want.tolist()


def test_unrolling_an_outer_range_keeps_the_loop_order():
  # END(x, r0, r1) runs r1 inside r0: unrolling r0 must not run the r0 copies inside one r1 loop (an interchange)
  from tinyspec.lower.optimize import optimize_body
  from tinyspec.spec import Stage, check
  i32, z, r0, r1 = dtypes.int32, UOp.const(dtypes.index, 0), UOp.range(3, 0), UOp.range(4, 1)
  p = UOp.param(0, i32, 1)
  slot = p.after(r0, r1).index(z)
  body = UOp(Ops.SINK, src=(slot.store(slot.load() * UOp.const(i32, 3) + (r0 * UOp.const(dtypes.index, 4) + r1).cast(i32)).end(r0, r1),))
  want = 1
  for i in range(12): want = want * 3 + i
  for opts in ((("unroll", 0),), (("unroll", 1),), (("unroll", 0), ("unroll", 1))):
    out = optimize_body(body, list(opts), OPTIMIZE.tables)
    assert out is not body and check(out, Stage.KERNEL) == [], opts
    got = np.array([1], np.int32)
    evaluate_kernel(out, [got])
    assert got.tolist() == [want], opts

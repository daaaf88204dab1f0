"""The reference evaluator: every parity program, hand-built kernel graphs, and integer edge semantics."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from programs import PROGRAMS, check_outputs

from tinyspec.dtype import dtypes
from tinyspec.semantics import EvalError, evaluate, evaluate_kernel
from tinyspec.uop import AddrSpace, Ops, UOp

F = dtypes.float32
I = dtypes.index


def c(v, dt=I) -> UOp: return UOp.const(dt, v)
def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, src=xs)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_evaluates_to_expected(name):
  prog = PROGRAMS[name]()
  check_outputs(prog, evaluate(prog.root, prog.inputs))


# ---- integer and float edge semantics, against independent computations ----
INT_DTYPES = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]


def _binop(op: Ops, dt, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  x, y = UOp.buffer(dt, a.size), UOp.buffer(dt, b.size)
  return evaluate(x.alu(op, y), {x.arg.id: a, y.arg.id: b})


def _ints(dt, n: int, seed: int, nonzero: bool = False) -> np.ndarray:
  info = np.iinfo(dt.np)
  v = np.random.default_rng(seed).integers(info.min, info.max, size=n, dtype=dt.np, endpoint=True)
  v[:4] = [info.min, info.max, 0, 1] if info.min < 0 else [info.max, 0, 1, 2]
  return np.where(v == 0, 1, v).astype(dt.np) if nonzero else v


def _wrap(x: int, dt) -> int:
  x &= (1 << dt.bits) - 1
  return x - (1 << dt.bits) if dt.kind == "i" and x >= 1 << (dt.bits - 1) else x


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: d.name)
def test_idiv_mod_truncate_toward_zero(dt):
  a, b = _ints(dt, 200, 1), _ints(dt, 200, 2, nonzero=True)
  q, r = _binop(Ops.IDIV, dt, a, b), _binop(Ops.MOD, dt, a, b)
  for x, y, qq, rr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist()):
    exp_q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    assert qq == _wrap(exp_q, dt), (x, y, qq)
    assert rr == _wrap(x - y * exp_q, dt), (x, y, rr)


@pytest.mark.parametrize("op,fn", [(Ops.ADD, lambda x, y: x + y), (Ops.SUB, lambda x, y: x - y), (Ops.MUL, lambda x, y: x * y)])
@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: d.name)
def test_fixed_width_ints_wrap(dt, op, fn):
  a, b = _ints(dt, 100, 3), _ints(dt, 100, 4)
  out = _binop(op, dt, a, b)
  assert out.dtype == dt.np
  assert out.tolist() == [_wrap(fn(x, y), dt) for x, y in zip(a.tolist(), b.tolist())]


def test_division_by_zero_is_deterministic():
  a = np.array([7, -7, 0, -(2**31)], np.int32)
  z = np.zeros(4, np.int32)
  assert _binop(Ops.IDIV, dtypes.int32, a, z).tolist() == [0, 0, 0, 0]
  assert _binop(Ops.MOD, dtypes.int32, a, z).tolist() == a.tolist()
  m1 = np.full(4, -1, np.int32)
  assert _binop(Ops.IDIV, dtypes.int32, a, m1).tolist() == [-7, 7, 0, -(2**31)]
  assert _binop(Ops.MOD, dtypes.int32, a, m1).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: d.name)
def test_shifts_take_count_modulo_width(dt):
  a = _ints(dt, 64, 5)
  width = max(dt.bits, 32)  # C shifts an operand narrower than int as an int
  n = np.arange(64).astype(dt.np) % min(2 * width, 2 ** dt.bits if dt.kind == "u" else 2 ** (dt.bits - 1))
  shl, shr = _binop(Ops.SHL, dt, a, n), _binop(Ops.SHR, dt, a, n)
  for x, k, l, r in zip(a.tolist(), n.tolist(), shl.tolist(), shr.tolist()):
    k %= width
    assert l == _wrap(x << k, dt)
    assert r == x >> k  # Python's >> is arithmetic on negatives, as SHR is on signed dtypes


def test_cast_float_to_int_truncates_and_saturates():
  f = np.array([2.9, -2.9, 0.0, np.nan, np.inf, -np.inf, 1e20, -1e20, 127.5, -128.7], np.float32)
  x = UOp.buffer(F, f.size)
  out32 = evaluate(x.cast(dtypes.int32), {x.arg.id: f})
  assert out32.tolist() == [2, -2, 0, 0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 127, -128]
  out8 = evaluate(x.cast(dtypes.int8), {x.arg.id: f})
  assert out8.tolist() == [2, -2, 0, 0, 127, -128, 127, -128, 127, -128]
  outu = evaluate(x.cast(dtypes.uint8), {x.arg.id: f})
  assert outu.tolist() == [2, 0, 0, 0, 255, 0, 255, 0, 127, 0]
  y = UOp.buffer(F, 2)
  out64 = evaluate(y.cast(dtypes.uint64), {y.arg.id: np.array([1e30, 3.5], np.float32)})
  assert out64.tolist() == [2**64 - 1, 3]


def test_cast_between_ints_wraps_and_to_bool_is_nonzero():
  a = np.array([-1, 255, 256, -129, 70000], np.int32)
  x = UOp.buffer(dtypes.int32, 5)
  assert evaluate(x.cast(dtypes.uint8), {x.arg.id: a}).tolist() == [v & 0xFF for v in a.tolist()]
  assert evaluate(x.cast(dtypes.int16), {x.arg.id: a}).tolist() == [_wrap(v, dtypes.int16) for v in a.tolist()]
  assert evaluate(x.cast(dtypes.bool), {x.arg.id: a}).tolist() == [True] * 5
  f = UOp.buffer(F, 3)
  assert evaluate(f.cast(dtypes.bool), {f.arg.id: np.array([0.0, -0.0, np.nan], np.float32)}).tolist() == [False, False, True]


def test_bitcast_reinterprets_bits():
  vals = [1.0, -2.5, 3.0e-38]
  x = UOp.buffer(F, 3)
  out = evaluate(x.bitcast(dtypes.uint32), {x.arg.id: np.array(vals, np.float32)})
  assert out.tolist() == [struct.unpack("<I", struct.pack("<f", v))[0] for v in vals]
  with pytest.raises(EvalError, match="BITCAST"):
    evaluate(x.bitcast(dtypes.int64), {x.arg.id: np.zeros(3, np.float32)})


def test_float32_math_stays_float32():
  a = np.array([0.1, 1.7, 3.3], np.float32)
  x = UOp.buffer(F, 3)
  for op, fn in [(Ops.EXP2, np.exp2), (Ops.LOG2, np.log2), (Ops.SIN, np.sin), (Ops.SQRT, np.sqrt), (Ops.RECIP, np.reciprocal)]:
    out = evaluate(x.alu(op), {x.arg.id: a})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, fn(a))


def test_bool_ops_are_c_bool_and_bool_arithmetic_has_no_meaning():
  a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
  x, y = UOp.buffer(dtypes.bool, 4), UOp.buffer(dtypes.bool, 4)
  ins = {x.arg.id: a, y.arg.id: b}
  assert evaluate(x.alu(Ops.MAX, y), ins).tolist() == (a | b).tolist()
  assert evaluate(x.alu(Ops.XOR, y), ins).tolist() == (a ^ b).tolist()
  assert evaluate(x.alu(Ops.CMPLT, y), ins).tolist() == [False, False, True, False]
  # MUL on bool is AND (C's (bool)(a * b), tinygrad's meaning too)
  assert evaluate(x.alu(Ops.MUL, y), ins).tolist() == (a & b).tolist()
  # ADD on bool is OR (C's (bool)(a + b), as tinygrad's spec and emulator mean it)
  assert evaluate(x.alu(Ops.ADD, y), ins).tolist() == (a | b).tolist()
  # SUB takes numbers: on bool the evaluator names the node instead of guessing, as the spec rejects it
  with pytest.raises(EvalError, match="SUB on bool"): evaluate(x.alu(Ops.SUB, y), ins)


def test_reduce_tensor_form_wraps_and_has_identity():
  a = np.array([100, 100, 100, 7], np.int8)
  x = UOp.buffer(dtypes.int8, 4)
  assert int(evaluate(x.reduce(Ops.ADD, 1), {x.arg.id: a})) == _wrap(307, dtypes.int8)
  e = UOp.buffer(F, 0).reshape((0, 3))
  np.testing.assert_array_equal(evaluate(e.reduce(Ops.MAX, 1)), np.full(3, -np.inf, np.float32))
  np.testing.assert_array_equal(evaluate(e.reduce(Ops.MUL, 1)), np.ones(3, np.float32))


# ---- tensor-stage storage and calls ----
def test_buffer_reads_initial_contents_and_after_reads_stored():
  x = UOp.buffer(F, 4)
  st = x.store(x.alu(Ops.MUL, UOp.const(F, 2.0).expand((4,))))
  out = evaluate(sink(x, x.after(st), st), {x.arg.id: np.arange(4)})
  assert out[0].tolist() == [0, 1, 2, 3]
  assert out[1].tolist() == [0, 2, 4, 6]
  assert out[2] is None


def test_after_snapshots_follow_their_deps_whatever_the_sink_order():
  x, y = UOp.buffer(dtypes.int32, 3), UOp.buffer(dtypes.int32, 3)
  x1 = x.after(x.store(x.alu(Ops.ADD, y)))
  x2 = x1.after(x1.store(x1.alu(Ops.MUL, y)))
  a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
  out = evaluate(sink(x2, x1, x), {x.arg.id: a, y.arg.id: b})
  assert [o.tolist() for o in out] == [((a + b) * b).tolist(), (a + b).tolist(), a.tolist()]


def test_store_through_pad_view_skips_pad_region():
  x = UOp.buffer(F, 6)
  view = x.reshape((2, 3)).pad(((0, 2), (1, 5)))  # (2, 5): columns 0 and 4 are padding
  val = UOp.const(F, 9.0).expand((2, 5))
  out = evaluate(sink(x.after(view.store(val))), {x.arg.id: np.zeros(6)})
  assert out[0].tolist() == [9.0] * 6
  view2 = x.reshape((2, 3)).permute((1, 0)).shrink(((1, 2), (0, 2)))  # x[:, 1:3] transposed
  v2 = UOp.buffer(F, 4)
  out = evaluate(sink(x.after(view2.store(v2.reshape((2, 2))))), {x.arg.id: np.zeros(6), v2.arg.id: np.array([1, 2, 3, 4])})
  assert out[0].tolist() == [0, 1, 3, 0, 2, 4]


def test_param_belongs_to_innermost_call():
  p0 = UOp.param(0, F, 3)
  inner = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(p0.alu(Ops.MUL, p0),)), p0.alu(Ops.ADD, UOp.const(F, 1.0).expand((3,)))))
  outer = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(inner.gettuple(0).alu(Ops.SUB, p0),)), UOp.buffer(F, 3)))
  b = outer.src[1]
  out = evaluate(outer.gettuple(0), {b.arg.id: np.array([1.0, 2.0, 3.0])})
  a = np.array([1.0, 2.0, 3.0])
  assert out.tolist() == ((a + 1) ** 2 - a).tolist()


# ---- kernel stage: hand-built kernel bodies ----
def _run_kernel(body: UOp, *arrays: np.ndarray) -> list[np.ndarray]:
  args = [np.array(a).reshape(-1) for a in arrays]
  evaluate_kernel(body, args)
  return args


def test_elementwise_kernel():
  n = 10
  out, a, b = UOp.param(0, F, n), UOp.param(1, F, n), UOp.param(2, F, n)
  i = UOp.range(n, 0)
  val = a.index(i).load().alu(Ops.MUL, UOp.const(F, 2.0)).alu(Ops.ADD, b.index(i).load())
  body = sink(out.index(i).store(val).end(i))
  x, y = np.random.default_rng(0).random((2, n)).astype(np.float32)
  res = _run_kernel(body, np.zeros(n, np.float32), x, y)
  np.testing.assert_allclose(res[0], x * 2 + y, rtol=1e-6)


def test_gated_load_with_alt_and_gated_store():
  out, a = UOp.param(0, F, 6), UOp.param(1, F, 3)
  i = UOp.range(6, 0)
  inb = i < 3
  ld = UOp(Ops.LOAD, F, (a.index(i), UOp.const(F, -1.0), inb))  # a has 3 elements: the gate guards the read
  even = (i % 2).eq(0)
  body = sink(out.index(i).store(ld, even).end(i))
  res = _run_kernel(body, np.full(6, 7.0, np.float32), np.array([10.0, 11.0, 12.0], np.float32))
  assert res[0].tolist() == [10.0, 7.0, 12.0, 7.0, -1.0, 7.0]


def test_ungated_out_of_bounds_load_raises():
  out, a = UOp.param(0, F, 6), UOp.param(1, F, 3)
  i = UOp.range(6, 0)
  body = sink(out.index(i).store(a.index(i).load()).end(i))
  with pytest.raises(EvalError, match="LOAD.*out of bounds"):
    _run_kernel(body, np.zeros(6, np.float32), np.zeros(3, np.float32))


def _matmul_reduce(n: int, m: int, k: int) -> tuple[UOp, UOp, UOp, UOp, UOp]:
  out, a, b = UOp.param(0, F, n * m), UOp.param(1, F, n * k), UOp.param(2, F, k * m)
  i, j, r = UOp.range(n, 0), UOp.range(m, 1), UOp.range(k, 2, )
  prod = a.index(i * k + r).load().alu(Ops.MUL, b.index(r * m + j).load())
  return out, prod, i, j, r


def test_reduce_range_form_matmul():
  n, m, k = 5, 4, 6
  out, prod, i, j, r = _matmul_reduce(n, m, k)
  red = UOp(Ops.REDUCE, F, (prod, r), Ops.ADD)
  body = sink(out.index(i * m + j).store(red).end(i, j))
  x, y = np.random.default_rng(1).random((n, k)).astype(np.float32), np.random.default_rng(2).random((k, m)).astype(np.float32)
  res = _run_kernel(body, np.zeros(n * m, np.float32), x, y)
  np.testing.assert_allclose(res[0].reshape(n, m), x @ y, rtol=1e-5)


def test_reduce_counts_iterations_of_unused_ranges():
  out = UOp.param(0, dtypes.int32, 3)
  i, r, s = UOp.range(3, 0), UOp.range(4, 1), UOp.range(5, 2)
  one = UOp.const(dtypes.int32, 1)
  val = UOp(Ops.REDUCE, dtypes.int32, (one, r, s), Ops.ADD).alu(Ops.ADD, UOp(Ops.REDUCE, dtypes.int32, (i.cast(dtypes.int32), r), Ops.MAX))
  body = sink(out.index(i).store(val).end(i))
  assert _run_kernel(body, np.zeros(3, np.int32))[0].tolist() == [20, 21, 22]


def _reg_matmul(n: int, m: int, k: int, op: Ops = Ops.ADD, init: float = 0.0) -> UOp:
  """The accumulator form of docs/ir.md: init inside the outer loops, running load inside the reduce loop."""
  out, prod, i, j, r = _matmul_reduce(n, m, k)
  acc = UOp.buffer(F, 1, addrspace=AddrSpace.REG)
  zero = c(0)
  init_st = acc.after(i, j).index(zero).store(UOp.const(F, init))
  upd = acc.index(zero).store(acc.after(init_st, r).index(zero).load().alu(op, prod)).end(r)
  fin = out.index(i * m + j).store(acc.after(upd).index(zero).load()).end(i, j)
  return sink(fin)


def test_reg_accumulator_loop():
  n, m, k = 4, 3, 7
  x, y = np.random.default_rng(3).random((n, k)).astype(np.float32), np.random.default_rng(4).random((k, m)).astype(np.float32)
  res = _run_kernel(_reg_matmul(n, m, k), np.zeros(n * m, np.float32), x, y)
  np.testing.assert_allclose(res[0].reshape(n, m), x @ y, rtol=1e-5)
  res = _run_kernel(_reg_matmul(n, m, k, Ops.MAX, -np.inf), np.zeros(n * m, np.float32), x, y)
  np.testing.assert_allclose(res[0].reshape(n, m), (x[:, :, None] * y[None]).max(1), rtol=1e-6)


def test_reg_accumulator_of_constant_counts_iterations():
  out = UOp.param(0, dtypes.int32, 2)
  i, r = UOp.range(2, 0), UOp.range(6, 1)
  acc = UOp.buffer(dtypes.int32, 1, addrspace=AddrSpace.REG)
  init = acc.index(c(0)).store(i.cast(dtypes.int32))
  # the running load names r (docs/ir.md's form), so it runs inside the r loop, as in the generated C
  upd = acc.index(c(0)).store(acc.after(init, r).index(c(0)).load().alu(Ops.ADD, UOp.const(dtypes.int32, 3))).end(r)
  body = sink(out.index(i).store(acc.after(upd).index(c(0)).load()).end(i))
  assert _run_kernel(body, np.zeros(2, np.int32))[0].tolist() == [18, 19]


def test_zero_size_ranges_write_nothing_and_reduce_to_identity():
  out, a = UOp.param(0, F, 3), UOp.param(1, F, 0)
  i, r = UOp.range(3, 0), UOp.range(0, 1)
  red = UOp(Ops.REDUCE, F, (a.index(i * 0 + r).load(), r), Ops.MAX)
  body = sink(out.index(i).store(red).end(i), UOp.param(0, F, 3).index(r).store(UOp.const(F, 5.0)).end(r))
  assert _run_kernel(body, np.ones(3, np.float32), np.zeros(0, np.float32))[0].tolist() == [-np.inf] * 3


def test_global_accumulator_and_last_write_wins():
  n, k = 3, 4
  out, a, last = UOp.param(0, F, n), UOp.param(1, F, n * k), UOp.param(2, F, n)
  i, r = UOp.range(n, 0), UOp.range(k, 1)
  x = a.index(i * k + r).load()
  accum = out.index(i).store(out.index(i).load().alu(Ops.ADD, x)).end(i, r)
  lw = last.index(i).store(x, r < 2).end(i, r)  # gated: the last iteration that writes is r == 1
  data = np.arange(n * k, dtype=np.float32)
  res = _run_kernel(sink(accum, lw), np.full(n, 100.0, np.float32), data, np.zeros(n, np.float32))
  # the load of out[i] uses no r, so (as in the generated C) it runs once before the r loop: the last store wins
  np.testing.assert_allclose(res[0], 100 + data.reshape(n, k)[:, -1])
  assert res[2].tolist() == data.reshape(n, k)[:, 1].tolist()


def test_program_body_runs_its_linear():
  n = 4
  out, a = UOp.param(0, dtypes.int32, n), UOp.param(1, dtypes.int32, n)
  i = UOp(Ops.RANGE, dtypes.int32, (UOp.const(dtypes.int32, n),), UOp.range(n, 0).arg)
  body = sink(out.index(i).store(a.index(i).load().alu(Ops.MUL, a.index(i).load())).end(i))
  prog = UOp(Ops.PROGRAM, src=(body, UOp(Ops.LINEAR, src=tuple(body.toposort()))), arg="k")
  res = _run_kernel(prog, np.zeros(n, np.int32), np.array([1, -2, 3, 50000], np.int32))
  assert res[0].tolist() == [1, 4, 9, _wrap(50000 * 50000, dtypes.int32)]


def _copy_kernel(n: int, fn) -> UOp:
  out, src = UOp.param(0, F, n), UOp.param(1, F, n)
  i = UOp.range(n, 0)
  return sink(out.index(i).store(fn(src.index(i).load())).end(i))


def test_kernel_graph_two_kernels_ordered_by_after():
  n = 5
  a, tmp, out = UOp.buffer(F, n), UOp.buffer(F, n), UOp.buffer(F, n)
  k1 = UOp(Ops.CALL, src=(_copy_kernel(n, lambda v: v.alu(Ops.MUL, UOp.const(F, 2.0))), tmp, a), arg="double")
  k2 = UOp(Ops.CALL, src=(_copy_kernel(n, lambda v: v.alu(Ops.ADD, UOp.const(F, 1.0))), out, tmp.after(k1)), arg="inc")
  root = sink(out.after(k2), tmp.after(k1), a)
  data = np.arange(n, dtype=np.float32)
  res = evaluate(root, {a.arg.id: data})
  assert res[0].tolist() == (data * 2 + 1).tolist()
  assert res[1].tolist() == (data * 2).tolist()
  assert res[2].tolist() == data.tolist()
  seen = []

  def runner(call, args):
    seen.append(call.arg)
    evaluate_kernel(call.src[0], args)
  res2 = evaluate(root, {a.arg.id: data}, kernel_runner=runner)
  assert seen == ["double", "inc"]
  assert res2[0].tolist() == res[0].tolist()


def test_nested_kernel_graph_body_writes_output_params():
  n = 4
  pin, pout = UOp.param(0, F, n), UOp.param(1, F, n)
  kern = UOp(Ops.CALL, src=(_copy_kernel(n, lambda v: v.alu(Ops.NEG)), pout, pin))
  inner = sink(pout.after(kern))
  a, o = UOp.buffer(F, n), UOp.buffer(F, n)
  outer = UOp(Ops.CALL, src=(inner, a, o))
  res = evaluate(sink(o.after(outer)), {a.arg.id: np.arange(n)})
  assert res[0].tolist() == [-0.0, -1.0, -2.0, -3.0]


# ---- malformed graphs get clear errors ----
def test_errors_name_the_op():
  a, b = UOp.buffer(F, 3), UOp.buffer(F, 4)
  with pytest.raises(EvalError, match="ADD.*different shapes"):
    evaluate(a.alu(Ops.ADD, b))
  with pytest.raises(EvalError, match="PARAM.*outside any CALL"):
    evaluate(UOp.param(0, F, 3))
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(UOp.param(0, F, 3),)), a))
  with pytest.raises(EvalError, match="GETTUPLE.*out of range"):
    evaluate(UOp(Ops.GETTUPLE, F, (call,), 3))
  with pytest.raises(EvalError, match="PARAM.*slot 1 is not bound"):
    evaluate(UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(UOp.param(1, F, 3),)), a)).gettuple(0))
  with pytest.raises(EvalError, match="RANGE.*kernel"):
    evaluate(sink(UOp.range(4, 0)))
  with pytest.raises(EvalError, match="input for BUFFER id"):
    evaluate(a, {a.arg.id: np.zeros(5)})


def test_long_chain_does_not_recurse():
  x = UOp.buffer(dtypes.int32, 2)
  u = x
  for _ in range(20000): u = u.alu(Ops.ADD, x)
  assert evaluate(u, {x.arg.id: np.array([1, -1])}).tolist() == [20001, -20001]


def test_effect_root_runs_and_gives_none():
  x = UOp.buffer(F, 2)
  assert evaluate(x.store(UOp.const(F, 1.0).expand((2,)))) is None

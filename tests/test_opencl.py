"""The OpenCL backend: renderer, runtime, and parity with the reference evaluator and the CPU backend."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from tinyspec.dtype import DType, dtypes
from tinyspec.semantics.kernel import evaluate_kernel
from tinyspec.uop import AddrSpace, AxisType, Ops, RangeArg, UOp

pytestmark = pytest.mark.spec


def test_opencl_platform_present_in_ci() -> None:
  """CI installs PoCL, so there the OpenCL tests must run, not skip."""
  from tinyspec.runtime.opencl import available
  ok, why = available()
  if os.environ.get("CI") == "true": assert ok, f"CI=true but no OpenCL: {why}"
  elif not ok: pytest.skip(f"OpenCL unavailable: {why}")
  assert why and "\n" not in why


# ---- hand-built PROGRAMs: out_k[i] = f_k(in_0[i], in_1[i], ...) over one range ----
I32 = dtypes.int32


def _ci(v: int) -> UOp: return UOp.const(I32, v)


def _rng(n: int, axis: int = 0, kind: AxisType = AxisType.GLOBAL) -> UOp:
  return UOp(Ops.RANGE, I32, (_ci(n),), RangeArg(axis, kind))


def _program(name: str, sink: UOp, order: list[UOp]) -> UOp:
  """A kernel CALL of PROGRAM(sink, LINEAR): `order` are the ranges in nesting order; every node is placed right
  after the last range it depends on opens, and an END right after what it encloses."""
  nodes = sink.toposort()
  deps = {u: {r for r in u.toposort() if r.op is Ops.RANGE} for u in nodes}
  lin: list[UOp] = [u for u in nodes if not deps[u] and u.op not in (Ops.END, Ops.SINK)]
  for i, r in enumerate(order):
    inner = set(order[:i + 1])
    lin += [u for u in nodes if r in deps[u] and deps[u] <= inner and u.op is not Ops.END and (u is r or u.op is not Ops.RANGE)]
  closing = [u for u in nodes if u.op is Ops.END]
  # an END goes after everything it encloses, innermost first
  lin += sorted(closing, key=lambda e: -min(order.index(r) for r in e.src[1:])) + [sink]
  params = sorted((u for u in nodes if u.op is Ops.PARAM), key=lambda p: p.arg.slot)
  args = tuple(UOp.buffer(p.dtype, p.arg.size) for p in params)
  return UOp(Ops.CALL, src=(UOp(Ops.PROGRAM, src=(sink, UOp(Ops.LINEAR, src=tuple(dict.fromkeys(lin)))), arg=name), *args))


def _elementwise(name: str, ins: list[DType], outs: list[tuple[DType, object]], n: int, kind: AxisType = AxisType.GLOBAL) -> UOp:
  rng = _rng(n, 0, kind)
  loads = [UOp.param(len(outs) + k, dt, n).index(rng).load() for k, dt in enumerate(ins)]
  stores = tuple(UOp.param(k, dt, n).index(rng).store(fn(*loads)) for k, (dt, fn) in enumerate(outs))
  body = stores[0] if len(stores) == 1 else UOp(Ops.GROUP, src=stores)
  return _program(name, UOp(Ops.SINK, src=(body.end(rng),)), [rng])


def _run_opencl(call: UOp, args: list[np.ndarray]) -> list[np.ndarray]:
  from tinyspec.runtime.opencl import OpenCLRunner
  out = [a.copy() for a in args]
  r = OpenCLRunner()
  r(call, out)
  r.sync()
  return out


def _run_reference(call: UOp, args: list[np.ndarray]) -> list[np.ndarray]:
  out = [a.copy() for a in args]
  with np.errstate(all="ignore"): evaluate_kernel(call.src[0], out)
  return out


# ---- integer C semantics, computed in Python independently of the code under test ----
def _wrap(v: int, dt: DType) -> int:
  v &= (1 << dt.bits) - 1
  return v - (1 << dt.bits) if dt.kind == "i" and v >= 1 << (dt.bits - 1) else v


def _cdiv(a: int, b: int) -> int:
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


PY_INT = {
  Ops.ADD: lambda a, b, dt: _wrap(a + b, dt), Ops.SUB: lambda a, b, dt: _wrap(a - b, dt), Ops.MUL: lambda a, b, dt: _wrap(a * b, dt),
  Ops.IDIV: lambda a, b, dt: _wrap(_cdiv(a, b), dt), Ops.MOD: lambda a, b, dt: a - b * _cdiv(a, b),
  Ops.SHL: lambda a, b, dt: _wrap(a << b, dt), Ops.SHR: lambda a, b, dt: a >> b,
  Ops.MAX: lambda a, b, dt: max(a, b), Ops.CMPLT: lambda a, b, dt: a < b, Ops.AND: lambda a, b, dt: _wrap(a & b, dt),
  Ops.OR: lambda a, b, dt: _wrap(a | b, dt), Ops.XOR: lambda a, b, dt: _wrap(a ^ b, dt),
}
INT_OPS = list(PY_INT)


def _edges(dt: DType) -> list[int]:
  vals = {dt.min, dt.min + 1, -100, -7, -3, -1, 0, 1, 2, 3, 7, 100, dt.bits - 1, dt.max - 1, dt.max, 1 << (dt.bits // 2)}
  return sorted(v for v in vals if dt.min <= v <= dt.max)


def _int_kernel(dt: DType) -> tuple[UOp, list[DType], np.ndarray, np.ndarray]:
  pairs = list(itertools.product(_edges(dt), _edges(dt)))
  a = np.array([p[0] for p in pairs], dtype=dt.np)
  b = np.array([p[1] for p in pairs], dtype=dt.np)
  outs: list[tuple[DType, object]] = [(dtypes.bool if op is Ops.CMPLT else dt, lambda x, y, op=op: x.alu(op, y)) for op in INT_OPS]
  outs.append((dt, lambda x, y: -x))
  casts = [t for t in (*dtypes.ints, *dtypes.floats, dtypes.bool) if t is not dt]
  outs += [(t, lambda x, y, t=t: x.cast(t)) for t in casts]
  return _elementwise(f"ints_{dt.name}", [dt, dt], outs, len(pairs)), [o[0] for o in outs], a, b


_int_results: dict[str, tuple] = {}


def _int_case(dt: DType) -> tuple:
  """(out dtypes, a, b, opencl results, reference results) for dt's kernel, computed once per test process."""
  if dt.name not in _int_results:
    call, odts, a, b = _int_kernel(dt)
    args = [np.zeros(a.size, t.np) for t in odts] + [a, b]
    _int_results[dt.name] = (call, odts, a, b, _run_opencl(call, args), _run_reference(call, args), args)
  return _int_results[dt.name]


@pytest.mark.parametrize("dt", dtypes.ints, ids=lambda d: d.name)
def test_int_ops_match_c_semantics(opencl: str, dt: DType) -> None:
  """Wrap-around add/sub/mul/neg, truncating IDIV and MOD with negative operands, shifts within the width."""
  call, odts, a, b, got, ref, _ = _int_case(dt)
  for k, op in enumerate(INT_OPS):
    fine = [i for i, (x, y) in enumerate(zip(a.tolist(), b.tolist()))
            if (op not in (Ops.IDIV, Ops.MOD) or y != 0) and (op not in (Ops.SHL, Ops.SHR) or 0 <= y < dt.bits)]
    want = np.array([PY_INT[op](int(a[i]), int(b[i]), dt) for i in fine], dtype=odts[k].np)
    np.testing.assert_array_equal(got[k][fine], want, err_msg=f"{op.name} {dt.name}")
    np.testing.assert_array_equal(ref[k][fine], want, err_msg=f"reference {op.name} {dt.name}")
  neg = np.array([_wrap(-int(x), dt) for x in a.tolist()], dtype=dt.np)
  np.testing.assert_array_equal(got[len(INT_OPS)], neg)


@pytest.mark.parametrize("dt", dtypes.ints, ids=lambda d: d.name)
def test_int_kernel_matches_reference_everywhere(opencl: str, dt: DType) -> None:
  """At the IR's undefined points too (x/0, MIN/-1, shift counts past the width) OpenCL gives the evaluator's values,
  and every cast from dt wraps, converts or tests != 0 as the reference does."""
  call, odts, a, b, got, ref, _ = _int_case(dt)
  for k, t in enumerate(odts):
    np.testing.assert_array_equal(got[k], ref[k], err_msg=f"output {k} ({t.name}) of {dt.name}")
  # casts to a narrower type wrap; to float round to nearest (independent check through numpy)
  first_cast = len(INT_OPS) + 1
  for k, t in enumerate(odts[first_cast:], first_cast):
    if t.is_int: want = np.array([_wrap(int(x), t) for x in a.tolist()], dtype=t.np)
    elif t.is_float: want = a.astype(np.float64).astype(t.np) if dt.bits < 64 else np.array([float(int(x)) for x in a.tolist()]).astype(t.np)
    else: want = a != 0
    np.testing.assert_array_equal(got[k], want, err_msg=f"cast {dt.name} -> {t.name}")


def test_int8_uint8_wraparound(opencl: str) -> None:
  n = 4
  call = _elementwise("wrap8", [dtypes.int8, dtypes.uint8], [
    (dtypes.int8, lambda x, y: x + x), (dtypes.uint8, lambda x, y: y - UOp.const(dtypes.uint8, 200)), (dtypes.uint8, lambda x, y: y * y),
    (dtypes.int8, lambda x, y: x * UOp.const(dtypes.int8, 3))], n)
  a = np.array([100, -100, 127, -128], np.int8)
  b = np.array([0, 1, 199, 255], np.uint8)
  got = _run_opencl(call, [np.zeros(n, np.int8), np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.zeros(n, np.int8), a, b])
  np.testing.assert_array_equal(got[0], [-56, 56, -2, 0])
  np.testing.assert_array_equal(got[1], [56, 57, 255, 55])
  np.testing.assert_array_equal(got[2], [0, 1, (199 * 199) % 256, 1])
  np.testing.assert_array_equal(got[3], [44, -44, 125, -128])


def test_int32_signed_overflow_wraps(opencl: str) -> None:
  n = 3
  call = _elementwise("ovf32", [I32, I32], [(I32, lambda x, y: x + y), (I32, lambda x, y: x * y), (I32, lambda x, y: x - y)], n)
  a = np.array([2**31 - 1, 65536, -2**31], np.int32)
  b = np.array([1, 65536, 1], np.int32)
  got = _run_opencl(call, [np.zeros(n, np.int32) for _ in range(3)] + [a, b])
  np.testing.assert_array_equal(got[0], [-2**31, 131072, -2**31 + 1])
  np.testing.assert_array_equal(got[1], [2**31 - 1, 0, -2**31])
  np.testing.assert_array_equal(got[2], [2**31 - 2, 0, 2**31 - 1])


FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, -3.75, 1e30, -1e30, 3e9, -3e9, 2.0**31, -2.0**31, 2.0**63, 1e-40,
               123456.789, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("dt", dtypes.floats, ids=lambda d: d.name)
def test_float_kernel_matches_reference(opencl: str, dt: DType) -> None:
  """Float arithmetic, NaN-propagating MAX, float IDIV, and float -> int casts that saturate (NaN gives 0)."""
  pairs = list(itertools.product(FLOAT_EDGES, FLOAT_EDGES))
  a = np.array([p[0] for p in pairs]).astype(dt.np)
  b = np.array([p[1] for p in pairs]).astype(dt.np)
  exact_ops = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.IDIV, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]
  outs: list[tuple[DType, object]] = [(dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt, lambda x, y, op=op: x.alu(op, y))
                                      for op in exact_ops]
  outs += [(dt, lambda x, y, op=op: x.alu(op)) for op in (Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.TRUNC)]
  outs += [(t, lambda x, y, t=t: x.cast(t)) for t in (*dtypes.ints, *dtypes.floats, dtypes.bool) if t is not dt]
  outs += [(t, lambda x, y, t=t: x.bitcast(t)) for t in dtypes.ints if t.itemsize == dt.itemsize]
  approx = [(dt, lambda x, y, op=op: x.alu(op)) for op in (Ops.EXP2, Ops.LOG2, Ops.SIN)]
  call = _elementwise(f"floats_{dt.name}", [dt, dt], outs + approx, len(pairs))
  args = [np.zeros(a.size, t.np) for t, _ in outs + approx] + [a, b]
  got, ref = _run_opencl(call, args), _run_reference(call, args)
  for k, (t, _) in enumerate(outs):
    np.testing.assert_array_equal(got[k], ref[k], err_msg=f"output {k} ({t.name}) of {dt.name}")
  # transcendental functions: OpenCL allows a few ulp; where the argument is moderate they must be close
  mod = np.abs(a) < 1e4
  for k in range(len(outs), len(outs) + len(approx)):
    np.testing.assert_allclose(got[k][mod], ref[k][mod], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_bool_buffers_and_ops(opencl: str) -> None:
  a = np.array([False, False, True, True])
  b = np.array([False, True, False, True])
  ops = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE, Ops.CMPLT]
  outs: list[tuple[DType, object]] = [(dtypes.bool, lambda x, y, op=op: x.alu(op, y)) for op in ops]
  outs += [(dtypes.bool, lambda x, y: -x), (dtypes.int32, lambda x, y: x.cast(I32)), (dtypes.float32, lambda x, y: x.cast(dtypes.float32)),
           (dtypes.int8, lambda x, y: y.where(UOp.const(dtypes.int8, -5), UOp.const(dtypes.int8, 9)))]
  call = _elementwise("bools", [dtypes.bool, dtypes.bool], outs, 4)
  got = _run_opencl(call, [np.zeros(4, t.np) for t, _ in outs] + [a, b])
  want = [a | b, a ^ b, a & b, a | b, a & b, a | b, a ^ b, a != b, ~a & b, ~a, a.astype(np.int32), a.astype(np.float32), np.where(b, -5, 9)]
  for k, w in enumerate(want): np.testing.assert_array_equal(got[k], w, err_msg=f"output {k}")


def test_matmul_accumulator_and_global_dims(opencl: str) -> None:
  """A REG accumulator in a reduce loop under two GLOBAL ranges: a 2-d launch with one private accumulator each."""
  from tinyspec.render.opencl import launch_size, render_kernel
  m, k, n = 5, 7, 3
  f32 = dtypes.float32
  out, a, b = UOp.param(0, f32, m * n), UOp.param(1, f32, m * k), UOp.param(2, f32, k * n)
  r0, r1, r2 = _rng(m, 0), _rng(n, 1), _rng(k, 2, AxisType.REDUCE)
  acc = UOp.buffer(f32, 1, addrspace=AddrSpace.REG)
  init = acc.after(r0, r1).index(_ci(0)).store(UOp.const(f32, 0.0))
  prod = a.index(r0 * k + r2).load() * b.index(r2 * n + r1).load()
  upd = acc.index(_ci(0)).store(acc.after(init, r2).index(_ci(0)).load() + prod).end(r2)
  st = out.index(r0 * n + r1).store(acc.after(upd).index(_ci(0)).load()).end(r0, r1)
  call = _program("matmul", UOp(Ops.SINK, src=(st,)), [r0, r1, r2])
  src, _ = render_kernel(call, call.src[0])
  assert "get_global_id(0)" in src and "get_global_id(1)" in src and "for (int ridx2" in src
  assert launch_size(call.src[0].src[1]) == (m, n)
  A, B = np.random.default_rng(0).random((m, k), np.float32), np.random.default_rng(1).random((k, n), np.float32)
  got = _run_opencl(call, [np.zeros(m * n, np.float32), A.ravel(), B.ravel()])
  np.testing.assert_allclose(got[0].reshape(m, n), A @ B, rtol=1e-5)


def test_store_outside_global_range_keeps_it_a_loop(opencl: str) -> None:
  """A kernel that also stores outside its GLOBAL range cannot launch that range as work items: it stays a loop."""
  from tinyspec.render.opencl import launch_size, render_kernel
  n = 6
  out0, out1, inp = UOp.param(0, I32, n), UOp.param(1, I32, 1), UOp.param(2, I32, n)
  r = _rng(n)
  st = out0.index(r).store(inp.index(r).load() * 2).end(r)
  st1 = out1.index(_ci(0)).store(_ci(42))
  call = _program("two_stores", UOp(Ops.SINK, src=(st, st1)), [r])
  assert launch_size(call.src[0].src[1]) == (1,)
  assert "get_global_id" not in render_kernel(call, call.src[0])[0]
  got = _run_opencl(call, [np.zeros(n, np.int32), np.zeros(1, np.int32), np.arange(n, dtype=np.int32)])
  np.testing.assert_array_equal(got[0], np.arange(n) * 2)
  assert got[1][0] == 42


def test_gated_load_and_store(opencl: str) -> None:
  n = 8
  out, inp = UOp.param(0, I32, n), UOp.param(1, I32, n - 2)
  r = _rng(n)
  inside = (r < n - 2)
  # out[i] = i < n-2 ? in[i] : -1 (LOAD with alt and gate); then a gated STORE leaves odd slots untouched
  ld = inp.index(r).load(_ci(-1), inside)
  st = out.index(r).store(ld, (r % 2).eq(0)).end(r)
  call = _program("gated", UOp(Ops.SINK, src=(st,)), [r])
  got = _run_opencl(call, [np.full(n, 7, np.int32), np.arange(10, 10 + n - 2, dtype=np.int32)])
  np.testing.assert_array_equal(got[0], [10, 7, 12, 7, 14, 7, -1, 7])


def test_build_error_carries_source_and_log(opencl: str) -> None:
  from tinyspec.runtime.opencl import OpenCLBuildError, build
  src = "__kernel void broken(__global int* data0) { data0[0] = undefined_name; }\n"
  with pytest.raises(OpenCLBuildError) as e:
    build(src, "broken")
  assert e.value.source == src and "undefined_name" in e.value.log
  assert "broken" in str(e.value) and "undefined_name" in str(e.value)


def test_programs_are_built_once_per_source(opencl: str) -> None:
  from tinyspec.runtime import opencl as rt
  src = "__kernel void twice(__global int* data0) { data0[get_global_id(0)] += 1; }\n"
  k1 = rt.build(src, "twice")
  n_programs = len(rt._device["programs"])
  assert rt.build(src, "twice") is k1 and k1.function_name == "twice"
  assert len(rt._device["programs"]) == n_programs


def test_buffers_stay_on_device_across_kernels(opencl: str) -> None:
  """Two kernels on one runner: the second reads what the first wrote on the device before any copy back."""
  from tinyspec.runtime.opencl import OpenCLRunner
  n = 5
  inc = _elementwise("inc", [I32], [(I32, lambda x: x + 1)], n)
  dbl = _elementwise("dbl", [I32], [(I32, lambda x: x * 2)], n)
  x, y, z = np.arange(n, dtype=np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)
  r = OpenCLRunner()
  r(inc, [y, x])
  r(dbl, [z, y[:]])  # a new view of the same memory maps to the same device buffer
  assert not y.any()  # nothing copied back yet
  r.sync()
  np.testing.assert_array_equal(y, np.arange(n) + 1)
  np.testing.assert_array_equal(z, (np.arange(n) + 1) * 2)


def test_wrong_arg_dtype_is_a_clear_error(opencl: str) -> None:
  from tinyspec.runtime.opencl import OpenCLRunner
  call = _elementwise("neg", [I32], [(I32, lambda x: -x)], 3)
  with pytest.raises(ValueError, match="arg 1 is float32"):
    OpenCLRunner()(call, [np.zeros(3, np.int32), np.zeros(3, np.float32)])

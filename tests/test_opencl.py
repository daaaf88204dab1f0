"""The OpenCL backend: renderer, runtime, and parity with the reference evaluator and the CPU backend."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from builders import elementwise_kernel_graph

from tinyspec.dtype import DType, dtypes, finfo, round_float
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


_kernel_graph = elementwise_kernel_graph


_three: dict[tuple, tuple] = {}


def _three_way(key: tuple, build) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], tuple]:
  """(reference, cpu, opencl) outputs of the graph build() gives, computed once per test process."""
  if key not in _three:
    import tinyspec.runtime as runtime
    root, inputs, *extra = build()
    with np.errstate(all="ignore"):
      _three[key] = ([np.asarray(x) for x in runtime.run(root, inputs, backend=b)] for b in ("reference", "cpu", "opencl"))
      _three[key] = (*_three[key], tuple(extra))
  return _three[key]


def _pairs(dt: DType) -> tuple[np.ndarray, np.ndarray]:
  pairs = list(itertools.product(_edges(dt), _edges(dt)))
  return np.array([p[0] for p in pairs], dtype=dt.np), np.array([p[1] for p in pairs], dtype=dt.np)


def _int_graph(dt: DType):
  a, b = _pairs(dt)
  outs: list[tuple[DType, object]] = [(dtypes.bool if op is Ops.CMPLT else dt, lambda x, y, op=op: x.alu(op, y)) for op in INT_OPS]
  outs.append((dt, lambda x, y: -x))
  casts = [t for t in (*dtypes.ints, *dtypes.floats, dtypes.bool) if t is not dt]
  outs += [(t, lambda x, y, t=t: x.cast(t)) for t in casts]
  root, inputs = _kernel_graph([a, b], outs)
  return root, inputs, a, b, [t for t, _ in outs]


@pytest.mark.parametrize("dt", dtypes.ints, ids=lambda d: d.name)
def test_int_ops_match_c_semantics(opencl: str, dt: DType) -> None:
  """Wrap-around add/sub/mul/neg, truncating IDIV and MOD with negative operands, shifts within the width, and casts
  to every other type: reference, cpu and opencl all give what Python's integers say C gives."""
  ref, cpu, ocl, (a, b, odts) = _three_way(("int", dt.name), lambda: _int_graph(dt))
  for k, op in enumerate(INT_OPS):
    fine = [i for i, y in enumerate(b.tolist()) if (op not in (Ops.IDIV, Ops.MOD) or y != 0) and (op not in (Ops.SHL, Ops.SHR) or 0 <= y < dt.bits)]
    want = np.array([PY_INT[op](int(a[i]), int(b[i]), dt) for i in fine], dtype=odts[k].np)
    for what, got in (("opencl", ocl), ("cpu", cpu), ("reference", ref)):
      np.testing.assert_array_equal(got[k][fine], want, err_msg=f"{what}: {op.name} {dt.name}")
  neg = np.array([_wrap(-int(x), dt) for x in a.tolist()], dtype=dt.np)
  np.testing.assert_array_equal(ocl[len(INT_OPS)], neg)
  for k, t in enumerate(odts[len(INT_OPS) + 1:], len(INT_OPS) + 1):
    if t.is_int: want = np.array([_wrap(int(x), t) for x in a.tolist()], dtype=t.np)
    elif t.is_small_float: want = round_float(a.astype(np.float64), t)  # through float64; fp8 saturates (the meaning round_float states)
    elif t.is_float: want = np.array([t.np.type(int(x)) for x in a.tolist()], dtype=t.np)  # numpy rounds a Python int to nearest
    else: want = a != 0
    np.testing.assert_array_equal(ocl[k], want, err_msg=f"opencl: cast {dt.name} -> {t.name}")


@pytest.mark.parametrize("dt", dtypes.ints, ids=lambda d: d.name)
def test_int_edge_cases_agree_everywhere(opencl: str, dt: DType) -> None:
  """At the IR's undefined points too (x/0, MIN/-1, shift counts past the width) opencl and cpu give the
  evaluator's values, so no difference a fuzz campaign finds comes from undefined behaviour in either language."""
  ref, cpu, ocl, (a, b, odts) = _three_way(("int", dt.name), lambda: _int_graph(dt))
  assert len(ref) == len(cpu) == len(ocl) == len(odts)
  for k, t in enumerate(odts):
    np.testing.assert_array_equal(ocl[k], ref[k], err_msg=f"opencl vs reference: output {k} ({t.name}) of {dt.name}")
    np.testing.assert_array_equal(ocl[k], cpu[k], err_msg=f"opencl vs cpu: output {k} ({t.name}) of {dt.name}")


def test_int8_uint8_wraparound(opencl: str) -> None:
  a = np.array([100, -100, 127, -128], np.int8)
  b = np.array([0, 1, 199, 255], np.uint8)
  outs: list[tuple[DType, object]] = [
    (dtypes.int8, lambda x, y: x + x), (dtypes.uint8, lambda x, y: y - UOp.const(dtypes.uint8, 200)), (dtypes.uint8, lambda x, y: y * y),
    (dtypes.int8, lambda x, y: x * UOp.const(dtypes.int8, 3)), (dtypes.uint8, lambda x, y: x.cast(dtypes.uint8)),
    (dtypes.int8, lambda x, y: y.cast(dtypes.int8))]
  want = [[-56, 56, -2, 0], [56, 57, 255, 55], [0, 1, (199 * 199) % 256, 1], [44, -44, 125, -128], [100, 156, 127, 128], [0, 1, -57, -1]]
  for what, got in zip(("reference", "cpu", "opencl"), _three_way(("wrap8",), lambda: _kernel_graph([a, b], outs))):
    for k, w in enumerate(want): np.testing.assert_array_equal(got[k], np.array(w, dtype=outs[k][0].np), err_msg=f"{what} output {k}")


def test_int32_signed_overflow_wraps(opencl: str) -> None:
  a = np.array([2**31 - 1, 65536, -2**31, 46341], np.int32)
  b = np.array([1, 65536, 1, 46341], np.int32)
  outs: list[tuple[DType, object]] = [(I32, lambda x, y: x + y), (I32, lambda x, y: x * y), (I32, lambda x, y: x - y), (I32, lambda x, y: -x)]
  want = [[-2**31, 131072, -2**31 + 1, 92682], [2**31 - 1, 0, -2**31, 46341 * 46341 - 2**32], [2**31 - 2, 0, 2**31 - 1, 0],
          [-2**31 + 1, -65536, -2**31, -46341]]
  for what, got in zip(("reference", "cpu", "opencl"), _three_way(("ovf32",), lambda: _kernel_graph([a, b], outs))):
    for k, w in enumerate(want): np.testing.assert_array_equal(got[k], np.array(w, np.int32), err_msg=f"{what} output {k}")


FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, -3.75, 1e30, -1e30, 3e9, -3e9, 2.0**31, -2.0**31, 2.0**63, 1e-40,
               123456.789, float("inf"), float("-inf"), float("nan")]


def _float_graph(dt: DType):
  pairs = list(itertools.product(FLOAT_EDGES, FLOAT_EDGES))
  a = round_float(np.array([p[0] for p in pairs]), dt)
  b = round_float(np.array([p[1] for p in pairs]), dt)
  conversions = [(t, lambda x, y, t=t: x.cast(t)) for t in (*dtypes.ints, *dtypes.floats, dtypes.bool) if t is not dt]
  conversions += [(t, lambda x, y, t=t: x.bitcast(t)) for t in dtypes.ints if t.itemsize == dt.itemsize]
  if dt.storage_only:  # fp8: converted and selected, never computed on
    outs = [*conversions, (dt, lambda x, y: (x.cast(dtypes.float32) < y.cast(dtypes.float32)).where(x, y))]
    root, inputs = _kernel_graph([a, b], outs)
    return root, inputs, a, len(outs)
  exact_ops = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]
  outs: list[tuple[DType, object]] = [(dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt, lambda x, y, op=op: x.alu(op, y))
                                      for op in exact_ops]
  outs += [(dt, lambda x, y, op=op: x.alu(op)) for op in (Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.TRUNC)]
  tenth = UOp.const(dt, 0.1)
  outs.append((dt, lambda x, y: x * y + tenth))  # rounds twice: no fma contraction
  outs += conversions
  n_exact = len(outs)
  outs += [(dt, lambda x, y, op=op: x.alu(op)) for op in (Ops.EXP2, Ops.LOG2, Ops.SIN)]
  root, inputs = _kernel_graph([a, b], outs)
  return root, inputs, a, n_exact


@pytest.mark.parametrize("dt", dtypes.floats, ids=lambda d: d.name)
def test_float_edge_cases_agree_everywhere(opencl: str, dt: DType) -> None:
  """Float arithmetic without contraction, NaN-propagating MAX, float -> int casts that saturate (NaN
  gives 0), bitcasts: bit-exact on reference, cpu and opencl. exp2, log2 and sin may differ by a few ulp."""
  ref, cpu, ocl, (a, n_exact) = _three_way(("float", dt.name), lambda: _float_graph(dt))
  for k in range(n_exact):
    np.testing.assert_array_equal(ocl[k], ref[k], err_msg=f"opencl vs reference: output {k} of {dt.name}")
    np.testing.assert_array_equal(ocl[k], cpu[k], err_msg=f"opencl vs cpu: output {k} of {dt.name}")
  mod = np.abs(a) < 1e4
  rtol = max(1e-5, 2 * float(finfo(dt).eps))  # float32's math library rounded to a small float may land 1 ulp of it apart
  for k in range(n_exact, len(ref)):
    np.testing.assert_allclose(ocl[k][mod].astype(np.float64), ref[k][mod].astype(np.float64), rtol=rtol, atol=1e-6, equal_nan=True)


def test_bool_buffers_and_ops(opencl: str) -> None:
  a = np.array([False, False, True, True])
  b = np.array([False, True, False, True])
  ops = [Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE, Ops.CMPLT]
  outs: list[tuple[DType, object]] = [(dtypes.bool, lambda x, y, op=op: x.alu(op, y)) for op in ops]
  outs += [(dtypes.int32, lambda x, y: x.cast(I32)), (dtypes.float32, lambda x, y: x.cast(dtypes.float32)),
           (dtypes.int8, lambda x, y: y.where(UOp.const(dtypes.int8, -5), UOp.const(dtypes.int8, 9)))]
  want = [a | b, a & b, a | b, a ^ b, a != b, ~a & b, a.astype(np.int32), a.astype(np.float32),
          np.where(b, -5, 9).astype(np.int8)]
  for what, got in zip(("reference", "cpu", "opencl"), _three_way(("bool",), lambda: _kernel_graph([a, b], outs))):
    for k, w in enumerate(want): np.testing.assert_array_equal(got[k], w, err_msg=f"{what} output {k}")


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
  assert launch_size(call.src[0].src[1]) == (n, m)  # the innermost range is dimension 0
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
  n_programs = len(rt.context_of().programs)
  assert rt.build(src, "twice") is k1 and k1.function_name == "twice"
  assert len(rt.context_of().programs) == n_programs


def test_kernels_known_ahead_build_as_one_program_under_names_apart(opencl: str) -> None:
  """Two sources with one entry name (as two graphs' kernel_0) build as one program; each runs its own code."""
  from tinyspec.runtime import opencl as rt
  ctx, cl = rt.context_of(), rt._device["cl"]
  q = ctx.queue
  srcs = [f"__kernel void kernel_0(__global int* data0) {{ data0[get_global_id(0)] += {k}; }}\n" for k in (10, 20)]
  rt.build_many([(s, "kernel_0") for s in srcs])
  progs = [ctx.programs[s]["program"] for s in srcs]
  assert progs[0] is progs[1]
  for s, k in zip(srcs, (10, 20)):
    a = np.arange(4, dtype=np.int32)
    buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
    rt.build(s, "kernel_0")(q, (4,), None, buf)
    cl.enqueue_copy(q, a, buf)
    np.testing.assert_array_equal(a, np.arange(4) + k)


def test_a_bad_kernel_known_ahead_keeps_its_own_error(opencl: str) -> None:
  from tinyspec.runtime import opencl as rt
  good = "__kernel void kernel_0(__global int* data0) { data0[0] = 7; }\n"
  bad = "__kernel void kernel_0(__global int* data0) { data0[0] = not_declared; }\n"
  rt.build_many([(good, "kernel_0"), (bad, "kernel_0")])
  assert good not in rt.context_of().programs and bad not in rt.context_of().programs
  assert rt.build(good, "kernel_0").function_name == "kernel_0"
  with pytest.raises(rt.OpenCLBuildError) as e:
    rt.build(bad, "kernel_0")
  assert "not_declared" in e.value.log


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


# ---- the parity suite ----
def _programs():
  import programs
  return programs


@pytest.mark.parametrize("name", sorted(_programs().PROGRAMS))
def test_program_opencl_equals_reference_and_cpu(opencl: str, name: str) -> None:
  import tinyspec.runtime as runtime
  progs = _programs()
  prog = progs.PROGRAMS[name]()
  ocl = runtime.run(prog.root, prog.inputs, backend="opencl")
  progs.check_outputs(prog, ocl)
  for other in ("reference", "cpu"):
    want = runtime.run(prog.root, prog.inputs, backend=other)
    assert len(want) == len(ocl)
    for k, (g, w) in enumerate(zip(ocl, want)):
      g, w = np.asarray(g).reshape(-1), np.asarray(w).reshape(-1)
      assert g.dtype == w.dtype, f"{name} output {k}: opencl {g.dtype}, {other} {w.dtype}"
      if w.dtype.kind in "biu": np.testing.assert_array_equal(g, w, err_msg=f"{name} output {k}: opencl vs {other}")
      else: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"{name} output {k}: opencl vs {other}")

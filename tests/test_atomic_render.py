"""ATOMIC rendered and run: C (gcc, clang, tcc) and OpenCL against numpy's ufunc.at (tinyspec.ops.atomic), and the
CPU backend's parallel GLOBAL loops (threads that really race, private accumulators, loops that stay sequential).

The kernels are hand-built LINEARs, rendered and run directly: scatter updates with many iterations per element, so
the threads of one kernel update one element at the same time."""
from __future__ import annotations

import ctypes
import math
import os
import shutil
import threading
import time

import numpy as np
import pytest

from tinyspec.dtype import DType, dtypes
from tinyspec.ops.atomic import ATOMIC_DTYPES, ATOMIC_OPS, apply, sum_tolerance
from tinyspec.render.c import CRenderer
from tinyspec.render.cstyle import RenderError, parallel_ranges
from tinyspec.render.program import kernel_source
from tinyspec.runtime import cpu
from tinyspec.uop import AddrSpace, AxisType, Ops, RangeArg, UOp

pytestmark = pytest.mark.spec

I32 = dtypes.int32
N, BINS = 1 << 20, 8  # 131072 updates of each element
RUNS = 4  # C runs of each scatter: idle threads sleep, and one that wakes late may find the loop done (no race that run)
CCS = [pytest.param(cc, marks=pytest.mark.skipif(shutil.which(cc) is None, reason=f"{cc} is not installed")) for cc in cpu.COMPILERS]
BACKENDS = [*CCS, "opencl"]


def _ci(v: int) -> UOp: return UOp.const(I32, v)


def _rng(n: int, axis: int = 0, kind: AxisType = AxisType.GLOBAL) -> UOp: return UOp(Ops.RANGE, I32, (_ci(n),), RangeArg(axis, kind))


def _program(sink: UOp, order: list[UOp], name: str = "k") -> UOp:
  """PROGRAM(sink, LINEAR): `order` are the ranges in nesting order; every node is placed right after the last range
  it depends on opens (an effect inside the ranges its END closes, though it may depend on none), and each END after
  what it encloses, innermost first."""
  nodes = sink.toposort()
  deps = {u: {r for r in u.toposort() if r.op is Ops.RANGE} for u in nodes}
  for e in (u for u in nodes if u.op is Ops.END):
    for x in e.src[0].toposort(gate=lambda x: x.op in (Ops.GROUP, Ops.STORE, Ops.ATOMIC)):
      if x.op in (Ops.GROUP, Ops.STORE, Ops.ATOMIC): deps[x] |= set(e.src[1:])
  lin = [u for u in nodes if not deps[u] and u.op not in (Ops.END, Ops.SINK)]
  for i, r in enumerate(order):
    inner = set(order[:i + 1])
    lin += [r, *(u for u in nodes if r in deps[u] and deps[u] <= inner and u.op not in (Ops.END, Ops.RANGE, Ops.SINK))]
  lin += sorted((u for u in nodes if u.op is Ops.END), key=lambda e: -min(order.index(r) for r in e.src[1:])) + [sink]
  return UOp(Ops.PROGRAM, src=(sink, UOp(Ops.LINEAR, src=tuple(dict.fromkeys(lin)))), arg=name)


def _scatter(dt: DType, op: Ops, n: int, bins: int, gated: bool = False) -> UOp:
  """for i in GLOBAL range(n): ATOMIC(op, out[idx[i]], src[i]) (gated: only where keep[i] != 0, and the INDEX only
  where idx[i] < bins - 1, so the last element is never updated). Args: out, idx, src[, keep]."""
  out, idx, src = UOp.param(0, dt, bins), UOp.param(1, I32, n), UOp.param(2, dt, n)
  r = _rng(n)
  i = idx.index(r).load()
  if not gated: return _program(UOp(Ops.SINK, src=(out.index(i).atomic(op, src.index(r).load()).end(r),)), [r])
  keep = UOp.param(3, I32, n).index(r).load().ne(_ci(0))
  at = UOp(Ops.INDEX, dt, (out, i, i < _ci(bins - 1))).atomic(op, src.index(r).load(), keep)
  return _program(UOp(Ops.SINK, src=(at.end(r),)), [r])


def _run_c(prg: UOp, args: list[np.ndarray], compiler: str, runs: int = 1) -> list[np.ndarray]:
  """The args after the kernel ran on them; with runs > 1 it runs that many times back to back, each on fresh copies,
  and the first run whose output 0 differs from the first run's is returned (else the first): a race that shows in
  one run of a few is caught."""
  name, text = kernel_source(CRenderer(), None, prg)
  fn = getattr(cpu.load_source(text, compiler), name)
  outs = []
  for _ in range(runs):
    out = [np.ascontiguousarray(a).copy() for a in args]
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in out])
    outs.append(out)
  return next((o for o in outs if not np.array_equal(o[0], outs[0][0], equal_nan=o[0].dtype.kind == "f")), outs[0])


def _run_opencl(prg: UOp, args: list[np.ndarray]) -> list[np.ndarray]:
  from tinyspec.runtime.opencl import OpenCLRunner
  call = UOp(Ops.CALL, src=(prg, *(UOp.buffer(dtypes.from_np(a.dtype), a.size) for a in args)))
  out = [a.copy() for a in args]
  r = OpenCLRunner()
  r(call, out)
  r.sync()
  return out


def _run(backend: str, prg: UOp, args: list[np.ndarray], request: pytest.FixtureRequest, deadline: float = 60.0, runs: int = 1) -> list[np.ndarray]:
  """The args after the kernel ran on backend (C: runs times, see _run_c); fails when the kernel has not returned
  within deadline seconds (a compare-and-swap loop that never succeeds spins forever: the test fails, not hangs)."""
  if backend == "opencl": request.getfixturevalue("opencl")
  res: list = []
  def go() -> None:
    try: res.append(_run_opencl(prg, args) if backend == "opencl" else _run_c(prg, args, backend, runs))
    except BaseException as e: res.append(e)
  t = threading.Thread(target=go, daemon=True)
  t.start()
  t.join(deadline)
  assert not t.is_alive(), f"the kernel on {backend} has not returned after {deadline} s"
  if isinstance(res[0], BaseException): raise res[0]
  return res[0]


def _values(dt: DType, n: int, rng: np.random.Generator) -> np.ndarray:
  if dt.is_float: return (rng.standard_normal(n) * 100).astype(dt.np)
  return rng.integers(dt.min, dt.max, n, dtype=dt.np, endpoint=True)  # the whole range: integer ADD wraps often


def _check(dt: DType, op: Ops, got: np.ndarray, init: np.ndarray, idx: np.ndarray, vals: np.ndarray, what: str) -> None:
  """got == numpy's ufunc.at from init: exact for integers and MAX; float ADD within sum_tolerance per element, its
  terms the initial value and the values that land on it."""
  want = init.copy()
  apply(op, dt, want, (idx,), vals)
  if not dt.is_float or op is Ops.MAX:
    np.testing.assert_array_equal(got, want, err_msg=what)
    return
  for e in range(init.size):
    terms = np.concatenate([init[e:e + 1], vals[idx == e]])
    tol = sum_tolerance(terms, dt)
    exact = math.fsum(terms.astype(np.float64))
    assert abs(float(got[e]) - exact) <= tol, f"{what}: element {e} is {got[e]}, exact sum {exact}, tolerance {tol}"


# ---- every backend, op and dtype against numpy ----
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ATOMIC_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("dt", ATOMIC_DTYPES, ids=lambda d: d.name)
def test_scatter_matches_numpy(backend: str, op: Ops, dt: DType, request: pytest.FixtureRequest) -> None:
  rng = np.random.default_rng(2 * ATOMIC_DTYPES.index(dt) + ATOMIC_OPS.index(op))
  init, idx, vals = _values(dt, BINS, rng), rng.integers(0, BINS, N).astype(np.int32), _values(dt, N, rng)
  got = _run(backend, _scatter(dt, op, N, BINS), [init, idx, vals], request, runs=RUNS)
  _check(dt, op, got[0], init, idx, vals, f"{backend} {op.name} {dt.name}")
  np.testing.assert_array_equal(got[2], vals)  # the values are only read


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,dt", [(Ops.ADD, dtypes.int32), (Ops.MAX, dtypes.int64), (Ops.ADD, dtypes.float64), (Ops.MAX, dtypes.float32)],
                         ids=lambda x: getattr(x, "name", ""))
def test_gated_scatter(backend: str, op: Ops, dt: DType, request: pytest.FixtureRequest) -> None:
  """Both gates hold back the update: the ATOMIC's own (keep[i]) and its INDEX's (idx[i] < BINS - 1)."""
  rng = np.random.default_rng(7)
  init, idx, vals = _values(dt, BINS, rng), rng.integers(0, BINS, N).astype(np.int32), _values(dt, N, rng)
  keep = rng.integers(0, 2, N).astype(np.int32)
  got = _run(backend, _scatter(dt, op, N, BINS, gated=True), [init, idx, vals, keep], request, runs=RUNS)
  on = (keep != 0) & (idx < BINS - 1)
  _check(dt, op, got[0], init, idx[on], vals[on], f"{backend} gated {op.name} {dt.name}")
  assert got[0][BINS - 1] == init[BINS - 1] or (np.isnan(got[0][BINS - 1]) and np.isnan(init[BINS - 1]))


# ---- edge values ----
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [d for d in ATOMIC_DTYPES if not d.is_float], ids=lambda d: d.name)
def test_integer_add_wraps(backend: str, dt: DType, request: pytest.FixtureRequest) -> None:
  """MAX + 1 is MIN, and many updates of one element past the end of the range wrap as two's complement."""
  n = 4096
  init = np.array([dt.max, dt.min, dt.max, 0], dt.np)
  idx = np.arange(n, dtype=np.int32) % 4
  # per element: +1, -1 (MAX on unsigned: the same bits), MAX and MIN, each n // 4 times
  vals = np.array([1, dt.max if dt.kind == "u" else -1, dt.max, dt.min], dt.np)[idx]
  got = _run(backend, _scatter(dt, Ops.ADD, n, 4), [init, idx, vals], request)
  _check(dt, Ops.ADD, got[0], init, idx, vals, f"{backend} {dt.name} wrap")
  assert got[0][0] == dt.np.type(dt.min) + dt.np.type(n // 4 - 1)  # the first +1 wrapped MAX to MIN


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_max_propagates_nan(backend: str, dt: DType, request: pytest.FixtureRequest) -> None:
  """A NaN landing on an element makes it NaN for good, and a NaN element stays NaN whatever lands on it: the swap
  compares bits, so it ends although NaN != NaN (a value compare would spin forever here)."""
  n, nan = 4096, np.nan
  init = np.array([0.0, nan, -np.inf, 1.0], dt.np)
  idx = np.arange(n, dtype=np.int32) % 4
  vals = np.linspace(-5, 5, n).astype(dt.np)
  vals[n // 2] = nan  # lands on element 0
  vals[idx == 3] = np.inf
  got = _run(backend, _scatter(dt, Ops.MAX, n, 4), [init, idx, vals], request, deadline=30.0)
  assert np.isnan(got[0][0]) and np.isnan(got[0][1]), got[0]
  assert got[0][2] == vals[idx == 2].max() and got[0][3] == np.inf
  _check(dt, Ops.MAX, got[0], init, idx, vals, f"{backend} {dt.name} NaN")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_signed_zeros_are_distinct_bits(backend: str, dt: DType, request: pytest.FixtureRequest) -> None:
  """One update per element: MAX(-0.0, 0.0) is 0.0 and MAX(0.0, -0.0) is -0.0 (numpy's maximum), -0.0 + 0.0 is 0.0,
  -0.0 + -0.0 is -0.0. -0.0 == 0.0 as values, so an update that compared values would leave the wrong zero."""
  init = np.array([-0.0, 0.0, -0.0, 0.0], dt.np)
  idx = np.arange(4, dtype=np.int32)
  for op, vals in ((Ops.MAX, [0.0, -0.0, -0.0, 0.0]), (Ops.ADD, [0.0, -0.0, -0.0, 0.0])):
    v = np.array(vals, dt.np)
    got = _run(backend, _scatter(dt, op, 4, 4), [init, idx, v], request)[0]
    want = init.copy()
    apply(op, dt, want, (idx,), v)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{backend} {op.name}: {got} for {want}")


def test_float_max_with_signed_zeros_may_end_with_either_zero() -> None:
  """Why the scatter tests hold MAX exact only away from zeros: maximum returns its second operand on a tie, so which
  zero an element ends with depends on the order its updates come in (numpy's order is one of them)."""
  for first, second in ((-0.0, 0.0), (0.0, -0.0)):
    a = np.array([-np.inf])
    apply(Ops.MAX, dtypes.float64, a, (np.array([0, 0]),), np.array([first, second]))
    assert a[0] == 0 and np.signbit(a[0]) == np.signbit(second)


# ---- the prelude and the errors ----
def test_stdatomic_only_in_kernels_that_update_atomically() -> None:
  out, inp = UOp.param(0, I32, 16), UOp.param(1, I32, 16)
  r = _rng(16)
  plain = kernel_source(CRenderer(), None, _program(UOp(Ops.SINK, src=(out.index(r).store(inp.index(r).load()).end(r),)), [r]))[1]
  assert "stdatomic" not in plain and "ts_atomic" not in plain
  atomic = kernel_source(CRenderer(), None, _scatter(I32, Ops.ADD, 16, 4))[1]
  assert "#include <stdatomic.h>" in atomic and atomic.count("#define TS_HELPER_TS_ATOMIC32\n") == 1


@pytest.mark.parametrize("op,dt,words", [(Ops.MUL, I32, "MUL"), (Ops.ADD, dtypes.int8, "int8"), (Ops.MAX, dtypes.bool, "bool"),
                                         (Ops.ADD, dtypes.float16, "float16 elements is not defined"),
                                         (Ops.MAX, dtypes.bfloat16, "bfloat16 elements is not defined")],
                         ids=["mul", "int8", "bool", "float16", "bfloat16"])
def test_atomic_the_renderers_cannot_express_is_an_error(op: Ops, dt: DType, words: str) -> None:
  from tinyspec.render.opencl import OpenCLRenderer
  out, src = UOp.param(0, dt, 4), UOp.param(1, dt, 16)
  r = _rng(16)
  prg = _program(UOp(Ops.SINK, src=(out.index(r % 4).atomic(op, src.index(r).load()).end(r),)), [r])
  for renderer in (CRenderer(), OpenCLRenderer()):
    with pytest.raises(RenderError, match=words): kernel_source(renderer, None, prg)


# ---- parallel GLOBAL loops on the CPU ----
def _racy_count(n: int, atomic: bool) -> UOp:
  """for i in GLOBAL range(n): out[0] += 1 (a plain load and store, or an ATOMIC), and trace[i] = the value stored:
  the trace store may alias out[0] (no restrict), so the compiler keeps the load and store of out[0] in the loop."""
  out, trace = UOp.param(0, I32, 1), UOp.param(1, I32, n)
  r = _rng(n)
  if atomic: body = out.index(_ci(0)).atomic(Ops.ADD, _ci(1))
  else:
    v = out.index(_ci(0)).load() + _ci(1)
    body = UOp(Ops.GROUP, src=(out.index(_ci(0)).store(v), trace.index(r).store(v)))
  return _program(UOp(Ops.SINK, src=(body.end(r),)), [r])


def test_the_outermost_global_loop_runs_as_threads() -> None:
  text = kernel_source(CRenderer(), None, _racy_count(1 << 20, atomic=False))[1]
  assert "#pragma omp parallel for\n  for (int32_t ridx0 = 0; ridx0 < 1048576; ridx0++) {" in text
  if shutil.which("gcc"): assert "-fopenmp" in cpu.compile_flags("gcc")
  assert cpu.compile_flags("tcc") == cpu.COMPILERS["tcc"]  # tcc has no OpenMP: its loops run in one thread


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: threads take turns and a racy update is never lost")
def test_threads_really_race() -> None:
  """A plain read-modify-write of one element from every iteration loses updates when threads run it at once (within
  a few runs: a thread that wakes late may find the other done); the same count as an ATOMIC never loses one."""
  n = 1 << 20
  if not cpu.openmp_flags("gcc"): pytest.skip("gcc cannot link OpenMP here")
  racy = _racy_count(n, atomic=False)
  start, runs = time.monotonic(), 0
  while runs < 200 or time.monotonic() - start < 10:  # a loaded machine runs the threads in turns: lost updates are rarer
    count = int(_run_c(racy, [np.zeros(1, np.int32), np.zeros(n, np.int32)], "gcc")[0][0])
    runs += 1
    assert 0 < count <= n
    if count < n: break
  else: pytest.fail(f"no update was lost in {runs} runs: the GLOBAL loop does not seem to run as threads")
  for _ in range(20):
    assert _run_c(_racy_count(n, atomic=True), [np.zeros(1, np.int32), np.zeros(n, np.int32)], "gcc")[0][0] == n


def test_small_loops_and_nested_global_ranges_run_in_one_thread() -> None:
  """A loop with little work is not worth waking threads; a GLOBAL range inside another runs in its thread."""
  assert "#pragma omp" not in kernel_source(CRenderer(), None, _scatter(I32, Ops.ADD, 64, 4))[1]
  out = UOp.param(0, I32, 1 << 20)
  r0, r1 = _rng(1 << 10, 0), _rng(1 << 10, 1)
  prg = _program(UOp(Ops.SINK, src=(out.index(r0 * (1 << 10) + r1).store(r1).end(r0, r1),)), [r0, r1])
  assert kernel_source(CRenderer(), None, prg)[1].count("#pragma omp parallel for") == 1
  assert list(parallel_ranges(list(prg.src[1].src), 1 << 17)) == [r0]


def test_a_buffer_read_after_the_loop_keeps_it_sequential() -> None:
  """Each thread updates its own copy of a buffer declared before the loop: read after the loop, the copy that would
  be read is no thread's, so the loop stays a loop. Read only inside it, the buffer is firstprivate."""
  n = 1 << 18
  out, inp = UOp.param(0, dtypes.float32, 1), UOp.param(1, dtypes.float32, n)
  acc = UOp.buffer(dtypes.float32, 1, addrspace=AddrSpace.REG)
  r = _rng(n)
  upd = acc.index(_ci(0)).store(inp.index(r).load()).end(r)
  st = out.index(_ci(0)).store(acc.after(upd).index(_ci(0)).load())
  linear = [out, inp, acc, _ci(0), _ci(n), r, inp.index(r), inp.index(r).load(), acc.index(_ci(0)), upd.src[0], upd,
            acc.after(upd), acc.after(upd).index(_ci(0)), st.src[1], out.index(_ci(0)), st]
  assert parallel_ranges(linear, 0) == {}
  assert parallel_ranges(linear[:11], 0) == {r: [acc]}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_pipeline_kernels_keep_private_accumulators() -> None:
  """A matmul through the whole CPU pipeline: its REG accumulator is declared before the parallel loop, so every
  thread gets its own (firstprivate); shared, the threads would add into each other's sums."""
  from builders import matmul
  m, k, n = 96, 64, 48
  root, a, b = matmul(m, k, n)
  lowered = cpu.prepare(root)
  text = cpu.c_programs(lowered)[0].src[2].arg.text
  assert "#pragma omp parallel for firstprivate(acc0)" in text
  rng = np.random.default_rng(3)
  A, B = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  for _ in range(3):
    got = cpu.run(root, {a.arg.id: A.ravel(), b.arg.id: B.ravel()}, compiler="gcc")
    np.testing.assert_allclose(np.asarray(got[0]).reshape(m, n), A @ B, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_a_forked_child_runs_parallel_loops() -> None:
  """libgomp's thread pool does not survive a fork; the runtime frees it before one, so a forked child (a fuzz
  worker) that runs a parallel loop finishes instead of waiting for threads it does not have."""
  import multiprocessing as mp
  n = 1 << 20
  prg = _racy_count(n, atomic=True)
  assert _run_c(prg, [np.zeros(1, np.int32), np.zeros(n, np.int32)], "gcc")[0][0] == n  # the parent has a pool now
  ctx = mp.get_context("fork")
  q = ctx.Queue()
  p = ctx.Process(target=lambda: q.put(int(_run_c(prg, [np.zeros(1, np.int32), np.zeros(n, np.int32)], "gcc")[0][0])))
  p.start()
  p.join(30)
  if p.is_alive():
    p.kill()
    pytest.fail("the forked child hung in its parallel loop")
  assert p.exitcode == 0 and q.get(timeout=5) == n


# ---- OpenCL specifics ----
def test_opencl_atomic_outside_the_global_range_keeps_it_a_loop(opencl: str) -> None:
  """An ATOMIC after the GLOBAL loop writes global memory as a store does: launched as work items, every one of them
  would repeat it."""
  from tinyspec.render.opencl import launch_size
  n = 64
  out0, out1, inp = UOp.param(0, I32, n), UOp.param(1, I32, 1), UOp.param(2, I32, n)
  r = _rng(n)
  st = out0.index(r).store(inp.index(r).load()).end(r)
  prg = _program(UOp(Ops.SINK, src=(st, out1.index(_ci(0)).atomic(Ops.ADD, _ci(5)))), [r])
  assert launch_size(prg.src[1]) == (1,)
  got = _run_opencl(prg, [np.zeros(n, np.int32), np.zeros(1, np.int32), np.arange(n, dtype=np.int32)])
  assert got[1][0] == 5 and (got[0] == np.arange(n)).all()


def test_opencl_extensions_in_the_prelude() -> None:
  from tinyspec.render.opencl import OpenCLRenderer
  def text(dt: DType, op: Ops) -> str: return kernel_source(OpenCLRenderer(), None, _scatter(dt, op, 16, 4))[1]
  assert "EXTENSION" not in text(I32, Ops.MAX) and "atomic_max((volatile __global int*)" in text(I32, Ops.MAX)
  assert "cl_khr_int64_base_atomics : enable" in text(dtypes.uint64, Ops.ADD) and "atom_add((volatile __global ulong*)" in text(dtypes.int64, Ops.ADD)
  assert "cl_khr_int64_extended_atomics : enable" in text(dtypes.int64, Ops.MAX)
  f64 = text(dtypes.float64, Ops.ADD)
  assert "cl_khr_fp64 : enable" in f64 and "cl_khr_int64_base_atomics : enable" in f64 and "atom_cmpxchg" in f64


MISSING = [(dtypes.int64, Ops.MAX, "cl_khr_int64_extended_atomics"), (dtypes.uint64, Ops.ADD, "cl_khr_int64_base_atomics"),
           (dtypes.float64, Ops.MAX, "cl_khr_int64_base_atomics")]


@pytest.mark.parametrize("dt,op,ext", MISSING, ids=["int64-max", "uint64-add", "float64-max"])
def test_opencl_missing_extension_is_an_error_before_building(opencl: str, monkeypatch: pytest.MonkeyPatch, dt: DType, op: Ops, ext: str) -> None:
  from tinyspec.runtime import opencl as rt
  monkeypatch.setitem(rt._open(), "extensions", rt._open()["extensions"] - {ext})
  builds = []
  monkeypatch.setattr(rt, "build", lambda *a: builds.append(a))
  prg = _scatter(dt, op, 16, 4)
  with pytest.raises(rt.OpenCLUnsupported, match=rf"{dt.name} {op.name} atomic updates need {ext}"):
    _run_opencl(prg, [np.zeros(4, dt.np), np.zeros(16, np.int32), np.zeros(16, dt.np)])
  assert builds == []

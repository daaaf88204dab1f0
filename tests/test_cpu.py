"""The CPU backend: compiled C equals the reference evaluator, on hand-built kernels, on the integer and float edge
cases C gets wrong by default, and on every parity program; with gcc, clang and tcc wherever they are installed."""
from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest

import tinyspec.runtime as runtime
from tinyspec.dtype import DType, dtypes
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.runtime import cpu
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec

COMPILERS = [pytest.param(cc, marks=pytest.mark.skipif(shutil.which(cc) is None, reason=f"{cc} is not installed")) for cc in cpu.COMPILERS]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
  # one cache per test worker: tests about caching count compiles, and must not see other runs' objects
  monkeypatch.setenv("TINYSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "tinyspec-cache"))


def elementwise_graph(fn, dts: list[DType], n: int):
  """One kernel: out[i] = fn(in0[i], in1[i], ...). Returns (root, input BUFFERs)."""
  bufs = [UOp.buffer(dt, n) for dt in dts]
  i = UOp.range(n, 0)
  loads = [UOp.param(k + 1, dt, n).index(i).load() for k, dt in enumerate(dts)]
  val = fn(*loads)
  out = UOp.buffer(val.dtype, n)
  body = UOp(Ops.SINK, src=(UOp.param(0, val.dtype, n).index(i).store(val).end(i),))
  return UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, *bufs), arg="ew")),)), bufs


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
  assert got.dtype == want.dtype, what
  if want.dtype.kind == "f": np.testing.assert_allclose(got, want, rtol=2e-7 if want.dtype == np.float32 else 1e-15, atol=0, equal_nan=True, err_msg=what)
  else: np.testing.assert_array_equal(got, want, err_msg=what)


def cpu_vs_reference(root: UOp, inputs: dict, compiler: str = "gcc", what: str = "") -> list:
  want = evaluate(root, inputs)
  got = cpu.run(root, inputs, compiler=compiler)
  for k, (g, w) in enumerate(zip(got, want)): same(np.asarray(g), np.asarray(w), f"{what} output {k}")
  return got


def edge_values(dt: DType) -> np.ndarray:
  if dt.is_float: return np.array([0.0, -0.0, 1.0, -1.5, 2.5, 1e30, -3e9, 3e9, np.inf, -np.inf, np.nan, 7.25], dtype=dt.np)
  vals = {dt.min, dt.min + 1, -9, -7, -3, -2, -1, 0, 1, 2, 3, 5, 7, 8, 31, 32, 33, 63, 64, 65, dt.max - 1, dt.max}
  return np.array(sorted(v for v in vals if dt.min <= v <= dt.max), dtype=dt.np)


def pairs(dt: DType) -> tuple[np.ndarray, np.ndarray]:
  v = edge_values(dt)
  a, b = zip(*itertools.product(v, v))
  return np.array(a, dtype=dt.np), np.array(b, dtype=dt.np)


INT_DTYPES = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]
INT_BINARY = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: d.name)
def test_integer_edge_cases(dt, compiler):
  """Wrap-around, negative IDIV/MOD, division by zero, MIN / -1, shifts past the width: all as evaluate says."""
  a, b = pairs(dt)
  fns = [(op.name, (lambda op: lambda x, y: x.alu(op, y))(op)) for op in INT_BINARY] + [("NEG", lambda x, y: -x)]
  for name, fn in fns:
    root, (A, B) = elementwise_graph(fn, [dt, dt], a.size)
    cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"{dt.name} {name}")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_casts(compiler):
  """Every cast between bool, ints and floats, float -> int with NaN, inf and out-of-range values included."""
  all_dts = [dtypes.bool, *INT_DTYPES, dtypes.float32, dtypes.float64]
  for src in all_dts:
    v = edge_values(src) if not src.is_bool else np.array([False, True])
    for dst in all_dts:
      if dst is src: continue
      root, (A,) = elementwise_graph(lambda x, dst=dst: x.cast(dst), [src], v.size)
      cpu_vs_reference(root, {A.arg.id: v}, compiler, f"cast {src.name} -> {dst.name}")


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_ops(dt, compiler):
  a, b = pairs(dt)
  fns = {op.name: (lambda op: lambda x, y: x.alu(op, y))(op) for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)}
  fns["WHERE"] = lambda x, y: (x < y).where(x, y)
  fns["RECIP"] = lambda x, y: UOp(Ops.RECIP, dt, (x,))
  fns["NEG"] = lambda x, y: -x
  for op in (Ops.SQRT, Ops.LOG2, Ops.TRUNC): fns[op.name] = (lambda op: lambda x, y: UOp(op, dt, (x,)))(op)
  for name, fn in fns.items():
    root, (A, B) = elementwise_graph(fn, [dt, dt], a.size)
    cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"{dt.name} {name}")
  # transcendental functions: libm and numpy may differ in the last place
  x = np.linspace(-20, 20, 97).astype(dt.np)
  for op in (Ops.EXP2, Ops.SIN):
    root, (A,) = elementwise_graph(lambda v, op=op: UOp(op, dt, (v,)), [dt], x.size)
    np.testing.assert_allclose(cpu.run(root, {A.arg.id: x}, compiler=compiler)[0], evaluate(root, {A.arg.id: x})[0], rtol=4e-7, atol=1e-7)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_bitcasts_and_bool_arithmetic(compiler):
  f = edge_values(dtypes.float32)
  for dst in (dtypes.int32, dtypes.uint32):
    root, (A,) = elementwise_graph(lambda x, dst=dst: x.bitcast(dst), [dtypes.float32], f.size)
    cpu_vs_reference(root, {A.arg.id: f}, compiler, f"bitcast float32 -> {dst.name}")
  i = edge_values(dtypes.int64)
  root, (A,) = elementwise_graph(lambda x: x.bitcast(dtypes.float64), [dtypes.int64], i.size)
  cpu_vs_reference(root, {A.arg.id: i}, compiler, "bitcast int64 -> float64")
  a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
  for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE):
    root, (A, B) = elementwise_graph(lambda x, y, op=op: x.alu(op, y), [dtypes.bool, dtypes.bool], 4)
    cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"bool {op.name}")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_hand_built_kernels(compiler):
  from test_kernel_passes import matmul, np_matmul, two_stage_graph
  root, X = two_stage_graph()
  x = np.linspace(-3, 3, 12).astype(np.float32)
  y = np.maximum(x * 3 - 5, 0)
  out = cpu_vs_reference(root, {X.arg.id: x}, compiler, "two stages")
  np.testing.assert_allclose(out[0], y[::-1] + y.max(), rtol=1e-6)
  for op in (Ops.ADD, Ops.MAX, Ops.MUL):
    root, A, B = matmul(6, 5, 4, dtypes.int32, op)
    a, b = np.arange(-15, 15, dtype=np.int32), np.arange(20, dtype=np.int32) - 7
    for opts in (None, (), (("split", 2, 5), ("unroll", 1))):
      got = cpu.run(root, {A.arg.id: a, B.arg.id: b}, compiler=compiler, opts=opts)[0]
      np.testing.assert_array_equal(got, np_matmul(a.reshape(6, 5), b.reshape(5, 4), op).reshape(-1), err_msg=f"{op} {opts}")


def _programs():
  import programs
  return programs


PROGRAM_NAMES = sorted(_programs().PROGRAMS)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_cpu_equals_reference(name):
  prog = _programs().PROGRAMS[name]()
  outs = cpu.run(prog.root, prog.inputs)
  _programs().check_outputs(prog, outs)
  want = evaluate(prog.root, prog.inputs)
  for g, w in zip(outs, want):
    if w is not None and np.asarray(w).dtype.kind in "biu": np.testing.assert_array_equal(np.asarray(g).reshape(-1), np.asarray(w).reshape(-1))


@pytest.mark.parametrize("compiler", [c for c in COMPILERS if c.values[0] != "gcc"])
@pytest.mark.parametrize("name", ["gemm", "idiv_mod_negative", "int8_wrap", "uint8_wrap", "casts_float", "shifts", "softmax", "conv2d"])
def test_program_other_compilers(name, compiler):
  prog = _programs().PROGRAMS[name]()
  _programs().check_outputs(prog, cpu.run(prog.root, prog.inputs, compiler=compiler))


# ---- compiling and caching ----
def test_one_compile_per_graph_and_caches():
  from test_kernel_passes import two_stage_graph
  root, X = two_stage_graph(n=13)
  g = cpu.prepare(root)
  assert len(kernel_calls(g)) == 2
  cpu.clear_memory_cache()
  before = cpu.CompileStats(**vars(cpu.STATS))
  cpu.build(g)
  assert (cpu.STATS.compiled - before.compiled, cpu.STATS.disk_hits - before.disk_hits) == (1, 0)  # both kernels, one object
  cpu.build(g)
  assert cpu.STATS.memory_hits - before.memory_hits == 1 and cpu.STATS.compiled - before.compiled == 1
  cpu.clear_memory_cache()
  x = np.arange(13, dtype=np.float32)
  out = cpu.run(g, {X.arg.id: x})
  assert cpu.STATS.disk_hits - before.disk_hits == 1 and cpu.STATS.compiled - before.compiled == 1
  y = np.maximum(x * 3 - 5, 0)
  np.testing.assert_allclose(out[0], y[::-1] + y.max())


def test_compile_error_carries_source():
  bad = "void broken(float* data0) { data0[0] = undefined_name; }\n"
  with pytest.raises(cpu.CompileError) as e:
    cpu.compile_source(bad, "gcc")
  assert "undefined_name" in str(e.value) and e.value.source == bad and e.value.compiler == "gcc"


def test_unknown_compiler_is_named():
  with pytest.raises(cpu.CompilerUnavailable, match="unknown C compiler 'icc'"):
    cpu.compile_source("int x;", "icc")


def test_runtime_dispatch():
  from test_kernel_passes import two_stage_graph
  root, X = two_stage_graph()
  x = np.linspace(-1, 1, 12).astype(np.float32)
  ref = runtime.run(root, {X.arg.id: x}, backend="reference")
  got = runtime.run(root, {X.arg.id: x}, backend="cpu")
  for g, r in zip(got, ref): np.testing.assert_allclose(g, r, rtol=1e-6)
  with pytest.raises(ValueError, match="unknown backend 'tpu'"):
    runtime.run(root, {}, backend="tpu")

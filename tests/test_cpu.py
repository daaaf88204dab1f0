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


def elementwise_graph(fns, dts: list[DType], n: int):
  """One kernel per fn, all in one graph (so one compile): out_k[i] = fn_k(in0[i], in1[i], ...).
  fns is one function or a list. Returns (root, input BUFFERs)."""
  bufs = [UOp.buffer(dt, n) for dt in dts]
  outs = []
  for fn in fns if isinstance(fns, list) else [fns]:
    i = UOp.range(n, 0)
    val = fn(*[UOp.param(k + 1, dt, n).index(i).load() for k, dt in enumerate(dts)])
    out = UOp.buffer(val.dtype, n)
    body = UOp(Ops.SINK, src=(UOp.param(0, val.dtype, n).index(i).store(val).end(i),))
    outs.append(out.after(UOp(Ops.CALL, src=(body, out, *bufs), arg="ew")))
  return UOp(Ops.SINK, src=tuple(outs)), bufs


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
  assert got.dtype == want.dtype, what
  if want.dtype.kind == "f":
    np.testing.assert_allclose(got, want, rtol=2e-7 if want.dtype == np.float32 else 1e-15, atol=0, equal_nan=True, err_msg=what)
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
  fns = [lambda x, y, op=op: x.alu(op, y) for op in INT_BINARY] + [lambda x, y: -x]
  root, (A, B) = elementwise_graph(fns, [dt, dt], a.size)
  cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"{dt.name} {[*INT_BINARY, 'NEG']}")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_casts(compiler):
  """Every cast between bool, ints and floats, float -> int with NaN, inf and out-of-range values included."""
  all_dts = [dtypes.bool, *INT_DTYPES, dtypes.float32, dtypes.float64]
  for src in all_dts:
    v = edge_values(src) if not src.is_bool else np.array([False, True])
    dsts = [d for d in all_dts if d is not src]
    root, (A,) = elementwise_graph([lambda x, dst=dst: x.cast(dst) for dst in dsts], [src], v.size)
    cpu_vs_reference(root, {A.arg.id: v}, compiler, f"cast {src.name} -> {[d.name for d in dsts]}")


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_ops(dt, compiler):
  a, b = pairs(dt)
  fns = {op.name: lambda x, y, op=op: x.alu(op, y) for op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)}
  fns["WHERE"] = lambda x, y: (x < y).where(x, y)
  fns["RECIP"] = lambda x, y: UOp(Ops.RECIP, dt, (x,))
  fns["NEG"] = lambda x, y: -x
  for op in (Ops.SQRT, Ops.LOG2, Ops.TRUNC): fns[op.name] = lambda x, y, op=op: UOp(op, dt, (x,))
  root, (A, B) = elementwise_graph(list(fns.values()), [dt, dt], a.size)
  cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"{dt.name} {list(fns)}")
  # transcendental functions: libm and numpy may differ in the last place
  x = np.linspace(-20, 20, 97).astype(dt.np)
  root, (A,) = elementwise_graph([lambda v, op=op: UOp(op, dt, (v,)) for op in (Ops.EXP2, Ops.SIN)], [dt], x.size)
  for got, want in zip(cpu.run(root, {A.arg.id: x}, compiler=compiler), evaluate(root, {A.arg.id: x})):
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=1e-7)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_bitcasts_and_bool_ops(compiler):
  f = edge_values(dtypes.float32)
  root, (A,) = elementwise_graph([lambda x, dst=dst: x.bitcast(dst) for dst in (dtypes.int32, dtypes.uint32)], [dtypes.float32], f.size)
  cpu_vs_reference(root, {A.arg.id: f}, compiler, "bitcast float32 -> int32, uint32")
  i = edge_values(dtypes.int64)
  root, (A,) = elementwise_graph(lambda x: x.bitcast(dtypes.float64), [dtypes.int64], i.size)
  cpu_vs_reference(root, {A.arg.id: i}, compiler, "bitcast int64 -> float64")
  a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
  ops = (Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
  root, (A, B) = elementwise_graph([lambda x, y, op=op: x.alu(op, y) for op in ops], [dtypes.bool, dtypes.bool], 4)
  out = cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, compiler, f"bool {ops}")
  # C's (bool)(a op b), computed here independently of the evaluator
  want = [a | b, a & b, a | b, a ^ b, ~a & b, a != b, a == b]
  for k, w in enumerate(want): np.testing.assert_array_equal(out[k], w, err_msg=f"bool op {k}")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_hand_built_kernels(compiler):
  from builders import matmul, np_matmul, two_stage_graph
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


def test_a_kernel_graph_is_verified_after_every_pass_it_runs_through():
  # a kernel-level graph skips callify and rangeify but not the spec check after each pass that follows
  from builders import f32, kgraph_of, rng, sink
  from tinyspec.lower.pipeline import PassError
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(5, 0)  # five iterations over four elements
  g = kgraph_of(sink(p0.index(r).store(p1.index(r).load()).end(r)))
  with pytest.raises(PassError, match="pass simplify: output breaks the KERNEL spec"): cpu.prepare(g)


# ---- compiling and caching ----
def test_one_compile_per_graph_and_caches():
  from builders import two_stage_graph
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
  from builders import two_stage_graph
  root, X = two_stage_graph()
  x = np.linspace(-1, 1, 12).astype(np.float32)
  ref = runtime.run(root, {X.arg.id: x}, backend="reference")
  got = runtime.run(root, {X.arg.id: x}, backend="cpu")
  for g, r in zip(got, ref): np.testing.assert_allclose(g, r, rtol=1e-6)
  with pytest.raises(ValueError, match="unknown backend 'tpu'"):
    runtime.run(root, {}, backend="tpu")


# ---- the CLI verbs built on the lowering and the runtimes ----
def _write_example(tmp_path):
  f = tmp_path / "example.py"
  f.write_text(
    "import numpy as np\n"
    "from tinyspec.frontend import Tensor, inputs_of\n"
    "_root = Tensor.sink(Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).sum(axis=1) * 2)\n"
    "def graph(): return _root\n"
    "def inputs(): return inputs_of(_root)\n")
  return f


def test_cli_lower_prints_stages_and_c_source(tmp_path, capsys):
  from tinyspec.cli import main
  assert main(["lower", str(_write_example(tmp_path))]) == 0
  out = capsys.readouterr().out
  for name in ("input", "multi", "callify", "rangeify", "simplify", "scatter", "optimize", "lower_reduce", "images", "linearize", "render"):
    assert f"{name}:" in out
  assert "2 kernel(s)" in next(ln for ln in out.splitlines() if "render:" in ln)  # the sum, then the product
  assert "void kernel_0(float* restrict data0, float* restrict data1)" in out and "void kernel_1(" in out


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_cli_run_prints_outputs(tmp_path, capsys, backend):
  from tinyspec.cli import main
  assert main(["run", str(_write_example(tmp_path)), "--backend", backend]) == 0
  out = capsys.readouterr().out
  assert "output 0: float32 (2,)" in out and "[ 6. 24.]" in out


def test_cli_run_rejects_unknown_backend(tmp_path, capsys):
  from tinyspec.cli import main
  assert main(["run", str(_write_example(tmp_path)), "--backend", "tpu"]) == 2
  err = capsys.readouterr().err
  assert "--backend: invalid choice: 'tpu'" in err and err.count("\n") == 1, err


def test_unsigned_wrapping_mode_of_the_base_renderer(monkeypatch):
  """A C-like language without -fwrapv (OpenCL) computes signed arithmetic in the unsigned twin: same results."""
  from tinyspec.render import cstyle
  from tinyspec.render.c import CRenderer

  class UnsignedC(CRenderer):
    wrap_via_unsigned = True
  monkeypatch.setitem(cstyle.RENDERERS, "c", UnsignedC)
  for dt in (dtypes.int8, dtypes.int32, dtypes.int64):
    a, b = pairs(dt)
    root, (A, B) = elementwise_graph([lambda x, y, op=op: x.alu(op, y) for op in (Ops.ADD, Ops.SUB, Ops.MUL)] + [lambda x, y: -x], [dt, dt], a.size)
    text = kernel_calls(cpu.prepare(root))[0].src[0].src[2].arg.text
    assert f"({'uint64_t' if dt.bits > 32 else 'uint32_t'})(" in text
    cpu_vs_reference(root, {A.arg.id: a, B.arg.id: b}, "gcc", f"unsigned-wrap {dt.name}")


def test_fastest_compiler_prefers_tcc_then_clang_then_gcc():
  from tinyspec.runtime.cpu import available_compilers, fastest_compiler
  found = available_compilers()
  want = "tcc" if "tcc" in found else "clang" if "clang" in found else "gcc" if "gcc" in found else None
  assert fastest_compiler() == want

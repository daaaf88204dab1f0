"""The small float conversion helpers (tinyspec.render.smallfloat) compiled with every C compiler present and with
OpenCL, against numpy's meaning: widening every bit pattern of each format, and narrowing float32 and float64 inputs
at every rounding boundary and tie, denormals, +-max and past it, +-inf, NaN and large integers. Bit-exact; a NaN
compares as any NaN.

numpy's meaning: float16 / bfloat16 are `x.astype(dt)` (rounded once from x), fp8 clip finite values to +-max first
(tinygrad's float_to_fp8 saturates); ml_dtypes rounds from the float64 itself, never through float32."""
from __future__ import annotations

import shutil

import ml_dtypes
import numpy as np
import pytest

from tinyspec.render import smallfloat
from tinyspec.runtime import cpu

NP = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
      "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2), "float8_e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
      "float8_e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz)}
NAMES = list(NP)
UINT = {1: np.uint8, 2: np.uint16}


# ---- the meaning and the inputs ----
def expected(x: np.ndarray, name: str) -> np.ndarray:
  """The bits numpy's meaning gives x (float32 or float64) in format name."""
  dt = NP[name]
  if name.startswith("float8"):
    m = float(ml_dtypes.finfo(dt).max)
    with np.errstate(invalid="ignore"): x = np.where(np.isfinite(x), np.clip(x, -m, m), x).astype(x.dtype)
  with np.errstate(over="ignore"): return x.astype(dt).view(UINT[dt.itemsize])


def all_bits(name: str) -> np.ndarray:
  return np.arange(1 << (8 * NP[name].itemsize), dtype=np.int64).astype(UINT[NP[name].itemsize])


def neighbours(x: np.ndarray, k: int) -> np.ndarray:
  """x and its k nearest values of x's dtype on each side."""
  out, lo, hi = [x], x, x
  for _ in range(k):
    with np.errstate(over="ignore"): lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
    out += [lo, hi]
  return np.concatenate(out)


def boundaries(name: str) -> np.ndarray:
  """float64: every finite value of the format, each midpoint between neighbours (the ties, where rounding turns), and
  the midpoint past +-max (where overflow starts), both signs."""
  with np.errstate(invalid="ignore", over="ignore"):
    v = np.unique(all_bits(name).view(NP[name]).astype(np.float64))
  v = v[np.isfinite(v)]
  top = v[-1] + (v[-1] - v[-2]) / 2
  return np.concatenate([v, (v[1:] + v[:-1]) / 2, [top, -top, 2 * v[-1], -2 * v[-1]]])


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 1e30, -1e30, 3.4028234663852886e38, 1e300, -1e300, 2.0 ** -149, 2.0 ** -126,
           2.0 ** -1074, 2.0 ** 24 + 1, 2.0 ** 24 + 3, 2.0 ** 31, 2.0 ** 53 - 1, -(2.0 ** 53) + 1, 2.0 ** 63, 16777217.0, 65520.0, 65519.99]


def inputs32(name: str) -> np.ndarray:
  """float32 inputs: the boundaries (all exact in float32) with 2 float32 neighbours each side, float32 denormals."""
  with np.errstate(over="ignore"): b = boundaries(name).astype(np.float32)  # bfloat16's overflow edge is past float32's max
  denorm = np.arange(1, 2000, dtype=np.uint32).view(np.float32)
  with np.errstate(over="ignore"): special = np.array(SPECIAL, np.float32)  # 1e300 is inf in float32
  return np.concatenate([neighbours(b, 2), denorm, -denorm, neighbours(special, 1)])


def inputs64(name: str) -> np.ndarray:
  """float64 inputs: the boundaries with 2 float64 neighbours each side (a double 1 ulp off a tie is a tie once
  rounded to float32: only a single rounding gets it right), the float32 inputs, specials and their neighbours."""
  return np.concatenate([neighbours(boundaries(name), 2), inputs32(name).astype(np.float64), neighbours(np.array(SPECIAL), 1)])


def assert_bits(got: np.ndarray, want: np.ndarray, name: str, x: np.ndarray, what: str) -> None:
  """got == want bit for bit, except that where want is a NaN of the format got must be one too."""
  dt = NP[name]
  with np.errstate(invalid="ignore"):
    nan = np.isnan(want.view(dt).astype(np.float32))
    got_nan = np.isnan(got.view(dt).astype(np.float32))
  bad = np.flatnonzero(np.where(nan, ~got_nan, got != want))
  if bad.size:
    rows = [f"{x[i]!r} ({x[i].hex() if x.dtype == np.float64 else float(x[i]).hex()}): got {got[i]:#x} want {want[i]:#x}" for i in bad[:8]]
    pytest.fail(f"{what} {name}: {bad.size} of {x.size} wrong\n" + "\n".join(rows))


def assert_f32(got: np.ndarray, want: np.ndarray, x: np.ndarray, what: str) -> None:
  """float32 arrays equal bit for bit, NaN as any NaN."""
  nan = np.isnan(want)
  bad = np.flatnonzero(np.where(nan, ~np.isnan(got), got.view(np.uint32) != want.view(np.uint32)))
  if bad.size: pytest.fail(f"{what}: {bad.size} of {x.size} wrong\n" + "\n".join(f"{x[i]!r}: got {got[i]!r} want {want[i]!r}" for i in bad[:8]))


# ---- C ----
def c_source(bits_only: bool) -> str:
  tests = []
  for n in NAMES:
    u = f"uint{8 * NP[n].itemsize}_t"
    tests += [
      f"void t_widen_{n}(const {u}* in, float* out, int k) {{ for (int i = 0; i < k; i++) {{ ts_{n} s; memcpy(&s, &in[i], sizeof(s)); "
      f"out[i] = ts_{n}_widen(s); }} }}",
      f"void t_narrowf_{n}(const float* in, {u}* out, int k) {{ for (int i = 0; i < k; i++) {{ ts_{n} s = ts_{n}_narrowf(in[i]); "
      "memcpy(&out[i], &s, sizeof(s)); } }",
      f"void t_narrow_{n}(const double* in, {u}* out, int k) {{ for (int i = 0; i < k; i++) {{ ts_{n} s = ts_{n}_narrow(in[i]); "
      "memcpy(&out[i], &s, sizeof(s)); } }",
      f"void t_roundtrip_{n}(const {u}* in, {u}* out, int k) {{ for (int i = 0; i < k; i++) {{ ts_{n} s; memcpy(&s, &in[i], sizeof(s)); "
      f"s = ts_{n}_narrowf(ts_{n}_widen(s)); memcpy(&out[i], &s, sizeof(s)); }} }}",
      f"void t_round_{n}(const float* in, float* out, int k) {{ for (int i = 0; i < k; i++) out[i] = ts_{n}_round(in[i]); }}",
      f"int t_native_{n}(void) {{ return sizeof(ts_{n}) == {NP[n].itemsize} && (ts_{n})0.5f != 0; }}"]
  head = "#define TS_SMALLFLOAT_BITS\n" if bits_only else ""
  return head + "#include <stdint.h>\n#include <string.h>\n" + smallfloat.source(NAMES, "c", double=True) + "\n".join(tests) + "\n"


_libs: dict[tuple[str, bool], object] = {}


def c_lib(cc: str, bits_only: bool):
  if (cc, bits_only) not in _libs: _libs[(cc, bits_only)] = cpu.load_source(c_source(bits_only), cc)
  return _libs[(cc, bits_only)]


def c_run(lib, fn: str, x: np.ndarray, out_dtype) -> np.ndarray:
  x = np.ascontiguousarray(x)
  out = np.zeros(x.size, out_dtype)
  getattr(lib, fn)(x.ctypes.data_as(cpu.ctypes.c_void_p), out.ctypes.data_as(cpu.ctypes.c_void_p), cpu.ctypes.c_int(x.size))
  return out


def c_cases():
  """(compiler, bits_only) pairs; tcc has no native types, so its two texts would compile to the same helpers."""
  def missing(cc: str): return pytest.mark.skipif(shutil.which(cc) is None, reason=f"{cc} is not installed")
  return [pytest.param(cc, bits, id=f"{cc}-{'bits' if bits else 'native'}", marks=missing(cc))
          for cc in cpu.COMPILERS for bits in (False, True) if not (bits and cc == "tcc")]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cc,bits_only", c_cases())
def test_c_widen_every_pattern(cc: str, bits_only: bool, name: str) -> None:
  b = all_bits(name)
  with np.errstate(invalid="ignore"): want = b.view(NP[name]).astype(np.float32)
  assert_f32(c_run(c_lib(cc, bits_only), f"t_widen_{name}", b, np.float32), want, b, f"{cc} widen {name}")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cc,bits_only", c_cases())
def test_c_widen_then_narrow_is_every_pattern_itself(cc: str, bits_only: bool, name: str) -> None:
  """Bit for bit, NaNs too (their sign and payload: a BITCAST of a loaded NaN sees its bits). A native conversion may
  quiet a signalling NaN, so there only the other patterns are held to it."""
  b = all_bits(name)
  got = c_run(c_lib(cc, bits_only), f"t_roundtrip_{name}", b, b.dtype)
  native = bool(getattr(c_lib(cc, bits_only), f"t_native_{name}")())
  with np.errstate(invalid="ignore"): keep = ~np.isnan(b.view(NP[name]).astype(np.float32)) if native else np.ones(b.size, bool)
  bad = np.flatnonzero((got != b) & keep)
  assert bad.size == 0, f"{cc} {name}: {bad.size} patterns change, e.g. {[hex(b[i]) + ' -> ' + hex(got[i]) for i in bad[:6]]}"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cc,bits_only", c_cases())
def test_c_narrow(cc: str, bits_only: bool, name: str) -> None:
  lib, u = c_lib(cc, bits_only), UINT[NP[name].itemsize]
  x32, x64 = inputs32(name), inputs64(name)
  assert_bits(c_run(lib, f"t_narrowf_{name}", x32, u), expected(x32, name), name, x32, f"{cc} narrowf")
  assert_bits(c_run(lib, f"t_narrow_{name}", x64, u), expected(x64, name), name, x64, f"{cc} narrow")
  with np.errstate(invalid="ignore"): want = expected(x32, name).view(NP[name]).astype(np.float32)
  assert_f32(c_run(lib, f"t_round_{name}", x32, np.float32), want, x32, f"{cc} round {name}")


def test_native_types_where_the_compiler_has_them() -> None:
  """gcc (12 and later) on x86-64 converts _Float16, so float16 storage is native there; tcc has no native small
  float; TS_SMALLFLOAT_BITS makes every compiler use the generic routines; fp8 is never native. (sizeof and
  (ts_X)0.5f: a native type holds 0.5, the bits integer type truncates it to 0.) clang has _Float16 from version 15."""
  import platform
  for cc in cpu.available_compilers():
    native = bool(c_lib(cc, False).t_native_float16())
    if cc == "tcc" or (cc == "gcc" and platform.machine() == "x86_64"): assert native == (cc == "gcc"), f"{cc}: float16 native is {native}"
    assert not c_lib(cc, True).t_native_float16() and not c_lib(cc, True).t_native_bfloat16()
    for n in NAMES[2:]: assert not getattr(c_lib(cc, False), f"t_native_{n}")()


# ---- OpenCL ----
def cl_source() -> str:
  tests = []
  for n in NAMES:
    u = "uchar" if NP[n].itemsize == 1 else "ushort"
    tests += [
      f"__kernel void t_widen_{n}(__global const {u}* in, __global float* out) {{ size_t i = get_global_id(0); out[i] = ts_{n}_widen(in[i]); }}",
      f"__kernel void t_narrowf_{n}(__global const float* in, __global {u}* out) {{ size_t i = get_global_id(0); out[i] = ts_{n}_narrowf(in[i]); }}",
      f"__kernel void t_narrow_{n}(__global const double* in, __global {u}* out) {{ size_t i = get_global_id(0); out[i] = ts_{n}_narrow(in[i]); }}",
      f"__kernel void t_round_{n}(__global const float* in, __global float* out) {{ size_t i = get_global_id(0); out[i] = ts_{n}_round(in[i]); }}"]
  # float16 storage in OpenCL: half, accessed with the core vload_half / vstore_half_rte
  tests += ["__kernel void t_vload(__global const half* in, __global float* out) { size_t i = get_global_id(0); out[i] = vload_half(i, in); }",
            "__kernel void t_vstore(__global const float* in, __global half* out) { size_t i = get_global_id(0); vstore_half_rte(in[i], i, out); }"]
  return "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + smallfloat.source(NAMES, "opencl", double=True) + "\n".join(tests) + "\n"


def cl_run(fn: str, x: np.ndarray, out_dtype) -> np.ndarray:
  from tinyspec.runtime import opencl
  cl, ctx = opencl._require()["cl"], opencl.context_of()
  kern = opencl.build(cl_source(), fn)
  x = np.ascontiguousarray(x)
  out = np.zeros(x.size, out_dtype)
  mf = cl.mem_flags
  a = cl.Buffer(ctx.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
  b = cl.Buffer(ctx.context, mf.WRITE_ONLY, size=out.nbytes)
  kern(ctx.queue, (x.size,), None, a, b)
  cl.enqueue_copy(ctx.queue, out, b)
  ctx.queue.finish()
  return out


@pytest.mark.parametrize("name", NAMES)
def test_opencl_widen_every_pattern(opencl: str, name: str) -> None:
  b = all_bits(name)
  with np.errstate(invalid="ignore"): want = b.view(NP[name]).astype(np.float32)
  assert_f32(cl_run(f"t_widen_{name}", b, np.float32), want, b, f"opencl widen {name}")
  if name == "float16": assert_f32(cl_run("t_vload", b, np.float32), want, b, "opencl vload_half")


@pytest.mark.parametrize("name", NAMES)
def test_opencl_narrow(opencl: str, name: str) -> None:
  u = UINT[NP[name].itemsize]
  x32, x64 = inputs32(name), inputs64(name)
  assert_bits(cl_run(f"t_narrowf_{name}", x32, u), expected(x32, name), name, x32, "opencl narrowf")
  assert_bits(cl_run(f"t_narrow_{name}", x64, u), expected(x64, name), name, x64, "opencl narrow")
  with np.errstate(invalid="ignore"): want = expected(x32, name).view(NP[name]).astype(np.float32)
  assert_f32(cl_run(f"t_round_{name}", x32, np.float32), want, x32, f"opencl round {name}")
  if name == "float16": assert_bits(cl_run("t_vstore", x32, u), expected(x32, name), name, x32, "opencl vstore_half_rte")


# ---- the inputs reach what they are meant to ----
@pytest.mark.parametrize("name", NAMES)
def test_inputs_hit_every_tie_both_ways(name: str) -> None:
  """The float64 inputs hold every tie exactly and a value just above and below it (so a rounding that breaks ties
  the wrong way, or rounds through float32, gives a wrong answer somewhere), and overflow's edge."""
  x, ties = inputs64(name), boundaries(name)
  assert np.isin(ties, x).all()
  assert np.isin(np.nextafter(ties, np.inf), x).all() and np.isin(np.nextafter(ties, -np.inf), x).all()
  with np.errstate(over="ignore"): through32 = expected(x.astype(np.float32), name)
  assert (through32 != expected(x, name)).sum() > 100  # rounding through float32 would fail these


def test_helpers_refuse_unknown_formats() -> None:
  with pytest.raises(KeyError, match="small float format"): smallfloat.helpers("float32", "c")
  with pytest.raises(KeyError, match="language"): smallfloat.helpers("float16", "metal")


# ---- kernels: the renderers' loads, stores, casts, bitcasts and arithmetic on small floats ----
def _dt(name: str):
  from tinyspec.dtype import dtypes
  return getattr(dtypes, name)


BACKENDS = [pytest.param(("cpu", cc), id=cc, marks=pytest.mark.skipif(shutil.which(cc) is None, reason=f"{cc} is not installed"))
            for cc in cpu.COMPILERS] + [pytest.param(("opencl", None), id="opencl")]


def run_kernel(backend: tuple[str, str | None], ins: list[np.ndarray], outs: list) -> list[np.ndarray]:
  """out_k = f_k(ins...) elementwise, rendered and run on backend (("cpu", compiler) or ("opencl", None))."""
  from builders import elementwise_kernel_graph

  import tinyspec.runtime as runtime
  if backend[0] == "opencl":
    from tinyspec.runtime.opencl import available
    ok, why = available()
    if not ok: pytest.skip(f"OpenCL unavailable: {why}")
  root, inputs = elementwise_kernel_graph(ins, outs)
  opts = {"compiler": backend[1]} if backend[1] else {}
  return [np.asarray(o) for o in runtime.run(root, inputs, backend=backend[0], **opts)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_kernel_moves_and_converts_every_pattern(backend, name: str) -> None:
  """Every bit pattern loaded and stored (bit for bit, a NaN's too, except where a native float16 conversion changes a
  NaN's payload), bitcast to the unsigned int of its size, and cast to float32, float64 and int32."""
  from tinyspec.dtype import dtypes
  dt, u = _dt(name), UINT[NP[name].itemsize]
  b = all_bits(name)
  x = b.view(NP[name])
  udt = dtypes.from_np(u)
  got = run_kernel(backend, [x], [(dt, lambda v: v), (udt, lambda v: v.bitcast(udt)), (dtypes.float32, lambda v: v.cast(dtypes.float32)),
                                  (dtypes.float64, lambda v: v.cast(dtypes.float64)), (dtypes.int32, lambda v: v.cast(dtypes.int32))])
  with np.errstate(invalid="ignore"):
    f32 = x.astype(np.float32)
    nan = np.isnan(f32)
    i32 = np.where(nan, 0, np.clip(np.trunc(np.nan_to_num(f32.astype(np.float64))), -2 ** 31, 2 ** 31 - 1)).astype(np.int32)
  # a native conversion (gcc's _Float16) may set a NaN's quiet bit; PoCL's vload_half / vstore_half_rte give every NaN
  # one pattern. A NaN stays a NaN, which is all the meaning says of it
  native = name == "float16" if backend[0] == "opencl" else bool(getattr(c_lib(backend[1], False), f"t_native_{name}")())
  quiet = nan & native
  for what, g in (("copy", got[0].view(u)), ("bitcast", got[1])):
    bad = np.flatnonzero((g != b) & ~quiet)
    assert bad.size == 0, f"{what} {name}: {bad.size} patterns differ, e.g. {[(hex(b[i]), hex(g[i])) for i in bad[:6]]}"
    assert np.isnan(g.view(NP[name])[nan].astype(np.float32)).all()
  assert_f32(got[2], f32, b, f"cast {name} -> float32")
  assert_f32(got[3].astype(np.float32), f32, b, f"cast {name} -> float64")
  assert (got[3][~nan] == f32[~nan].astype(np.float64)).all()
  assert (got[4] == i32).all(), f"cast {name} -> int32"


INTS = np.array([0, 1, -1, 7, 2 ** 11 + 1, 2 ** 12 + 2, 2049, 4097, 65519, 65520, 65535, 65536, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 25 + 2 ** 17 + 1,
                 2 ** 31 - 1, -(2 ** 31), 448, 449, 464, 465, 57344, 61439, 61440, 16777217, -16777217, 123456789], np.int64)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_kernel_casts_into_small_floats_round_once(backend, name: str) -> None:
  """CAST float64 / float32 / int32 / int64 -> the small float: rounded once from the exact source (a double 1 ulp
  off a tie, an int past 2**24), saturating or overflowing as the format says."""
  dt, u = _dt(name), UINT[NP[name].itemsize]
  x64 = inputs64(name)
  with np.errstate(over="ignore"): x32 = x64.astype(np.float32)
  i64 = np.resize(np.concatenate([INTS, -INTS, INTS * 2 ** 20 + 1, [2 ** 53 + 1, 2 ** 62 + 2 ** 40 + 1, -(2 ** 63)]]), x64.size)
  i32 = np.resize(np.concatenate([INTS, -INTS]), x64.size).astype(np.int32)
  got = run_kernel(backend, [x64, x32, i32, i64], [(dt, lambda a, b, c, d: a.cast(dt)), (dt, lambda a, b, c, d: b.cast(dt)),
                                                   (dt, lambda a, b, c, d: c.cast(dt)), (dt, lambda a, b, c, d: d.cast(dt))])
  assert_bits(got[0].view(u), expected(x64, name), name, x64, "cast float64 ->")
  assert_bits(got[1].view(u), expected(x32, name), name, x32, "cast float32 ->")
  f = i32.astype(np.float64)
  assert_bits(got[2].view(u), expected(f, name), name, f, "cast int32 ->")
  f = i64.astype(np.float64)  # an int64 past 2**53 goes through float64 (the meaning round_float states)
  assert_bits(got[3].view(u), expected(f, name), name, f, "cast int64 ->")


ARITH = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_kernel_arithmetic_is_correctly_rounded(backend, name: str) -> None:
  """+ - * / sqrt on float16 and bfloat16: the correctly rounded result (computed exactly in float64, rounded once),
  which the float32-then-round of the renderers must equal; across the whole range, denormals and overflow included."""
  from tinyspec.uop import Ops
  dt = _dt(name)
  rng = np.random.default_rng(7)
  with np.errstate(invalid="ignore"):
    v = all_bits(name).view(NP[name])
    v = v[~np.isnan(v.astype(np.float32))]
  a, b = rng.choice(v, 40000), rng.choice(v, 40000)
  outs = [(dt, lambda x, y, op=getattr(Ops, k): x.alu(op, y)) for k in ARITH] + [(dt, lambda x, y: x * y.alu(Ops.RECIP)),
                                                                                  (dt, lambda x, y: x.alu(Ops.SQRT))]
  got = run_kernel(backend, [a, b], outs)
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  with np.errstate(all="ignore"):
    want = [f(a64, b64) for f in ARITH.values()]
    want += [(a64 * np.float64(b.astype(np.float64) ** -1).astype(NP[name]).astype(np.float64)), np.sqrt(a64)]
  for k, (g, w) in enumerate(zip(got, want)):
    wb = expected(w, name)
    assert_bits(g.view(UINT[2]), wb, name, w, f"op {k} on")


@pytest.mark.parametrize("name", NAMES)
def test_atomics_on_small_floats_are_refused(name: str) -> None:
  from tinyspec.ops.atomic import atomic_error
  from tinyspec.uop import Ops
  for op in (Ops.ADD, Ops.MAX): assert "not defined" in atomic_error(op, _dt(name))


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_kernel_host_passes_and_returns_small_float_arrays(backend: str) -> None:
  """The kernel host (a child process) takes and gives arrays of every small float dtype, bits intact."""
  from builders import elementwise_kernel_graph

  from tinyspec.dtype import dtypes
  from tinyspec.runtime import host
  from tinyspec.runtime.cpu import prepare
  if backend == "opencl":
    from tinyspec.runtime.opencl import available
    if not available()[0]: pytest.skip("OpenCL unavailable")
  ins = [(np.arange(200) * 331 % (1 << 8 * NP[n].itemsize)).astype(UINT[NP[n].itemsize]).view(NP[n]) for n in NAMES]  # spread patterns
  outs = [(getattr(dtypes, n), lambda *xs, k=k: xs[k]) for k, n in enumerate(NAMES)]
  outs += [(dtypes.float16, lambda *xs: xs[1].cast(dtypes.float32).cast(dtypes.float16))]
  root, inputs = elementwise_kernel_graph(ins, outs)
  got = host.run_graph(backend, prepare(root, backend="c" if backend == "cpu" else "opencl"), inputs)
  for n, x, g in zip(NAMES, ins, got):
    assert np.asarray(g).dtype == NP[n]
    with np.errstate(invalid="ignore"): assert_f32(np.asarray(g).astype(np.float32), x.astype(np.float32), x, f"host {n}")
  with np.errstate(invalid="ignore", over="ignore"): want = ins[1].astype(np.float32).astype(np.float16)
  assert_bits(np.asarray(got[-1]).view(np.uint16), want.view(np.uint16), "float16", ins[1], "host bfloat16 -> float16")


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_graphs_of_small_floats_match_the_evaluator(backend, name: str) -> None:
  """Whole graphs through the pipeline: a matmul, a prod and a max that accumulate in the small float itself (its
  accumulator a float the kernel declares, rounded after every combine), a sum, fp8 round trips; bit for bit the
  reference evaluator's."""
  from tinyspec.dtype import dtypes
  from tinyspec.frontend import Tensor, inputs_of
  from tinyspec.semantics import evaluate
  rng = np.random.default_rng(1)
  a = (rng.standard_normal((6, 21)) * 4).astype(NP[name])
  b = (rng.standard_normal((21, 5)) * 4).astype(NP[name])
  x, y = Tensor(a), Tensor(b)
  outs = [x @ y, (x * 0.75 + 1).prod(axis=1), (x * 3 - 1).max(axis=0), x.sum(axis=1), x.cast(dtypes.float8_e4m3fn).cast(dtypes.float32),
          (x * 1000).cast(dtypes.float8_e5m2).cast(_dt(name))]
  for k, o in enumerate(outs):
    root = Tensor.sink(o)
    want = np.asarray(evaluate(root, inputs_of(root))[0])
    got = np.asarray(run_graph(backend, root)[0])
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.float64), want.astype(np.float64), equal_nan=True), (k, got, want)


def run_graph(backend: tuple[str, str | None], root):
  import tinyspec.runtime as runtime
  from tinyspec.frontend import inputs_of
  if backend[0] == "opencl":
    from tinyspec.runtime.opencl import available
    if not available()[0]: pytest.skip("OpenCL unavailable")
  return runtime.run(root, inputs_of(root), backend=backend[0], **({"compiler": backend[1]} if backend[1] else {}))

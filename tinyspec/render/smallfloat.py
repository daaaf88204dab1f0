"""C and OpenCL C source of the small float conversions: float16, bfloat16, float8_e4m3fn, float8_e5m2,
float8_e4m3fnuz and float8_e5m2fnuz.

A kernel holds a small float value as the float it widens to (exactly); only storage is in the small format. The
helpers of a format `X` (all `static inline`, named after the dtype):

  ts_X                  the storage type: the native `_Float16` / `__bf16` where the C compiler converts them, else the
                        bits (uint16_t / uint8_t; OpenCL: ushort / uchar)
  ts_X_widen(s)         storage -> float, exact
  ts_X_narrowf(f)       float -> storage, rounded once to nearest even
  ts_X_narrow(d)        double -> storage, rounded once to nearest even from the double (never through float)
  ts_X_round(f)         float -> float: f rounded to X and widened back (what follows every arithmetic op on X)

Narrowing keeps denormals (no flush to zero). Past the largest finite value float16 and bfloat16 give +-inf;
float8_e4m3fn saturates finite values to +-448 and gives NaN for +-inf and NaN (it has no infinity); float8_e5m2
saturates finite values to +-57344 and keeps +-inf and NaN; float8_e4m3fnuz and float8_e5m2fnuz saturate finite values
to +-240 and +-57344, give their one NaN (0x80) for +-inf and every NaN, and give zero (0x00) for -0.0 and for a
negative value that rounds to zero (they have no negative zero). These are numpy's `x.astype(dt.np)` (fp8: after
clipping finite values to +-max), the meaning tinyspec.dtype.round_float states.

Without a native type the conversions are two generic integer routines parameterized by the format (exponent and
mantissa widths, exponent bias, where its NaNs are, and the bits of its largest finite value, of what overflow,
infinity and NaN give):
ts_sf_narrow rounds an IEEE binary value given by its bits (a float's or a double's) to the format, ts_sf_widen
builds the float32 bits of a format's value. A NaN keeps its sign and the top of its payload both ways, so a stored
NaN widened and narrowed again has its own bits (a BITCAST of it sees them); a fnuz format has one NaN, which widens
to float32's negative quiet NaN (as ml_dtypes widens it) and back to itself. They use no floating point arithmetic, so a device that flushes
denormal arithmetic still converts denormals exactly. One text per language: C99 (gcc, clang, tcc), in which the
preprocessor picks the native types per compiler, and OpenCL C 1.2, where float16 storage is `half` accessed with
vload_half / vstore_half_rte (core OpenCL 1.2, no cl_khr_fp16 needed) and the value helpers work on its ushort bits.
`#define TS_SMALLFLOAT_BITS` before the helpers makes C use the generic routines on every compiler (tests do).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tinyspec.dtype import DType, dtypes, finfo, round_float


# where a format's NaNs are (the nan_form argument of the C routines): IEEE's all-ones exponent, which with a zero
# mantissa is an infinity; only exponent and mantissa all ones, no infinity (float8_e4m3fn); the one NaN with the
# negative zero's bits, no infinity and no negative zero (the fnuz formats)
NAN_IEEE, NAN_ALL_ONES, NAN_FNUZ = 0, 1, 2


@dataclass(frozen=True)
class Format:
  """A small float format: exponent and mantissa widths, exponent bias, where its NaNs are (nan_form, one of the NAN_
  constants), and (without sign) the bits of its largest finite value and of what a finite overflow, an infinity and a
  NaN narrow to (a fnuz format's NaN has only the sign bit, so it narrows NaNs and infinities itself)."""
  name: str
  ebits: int
  mbits: int
  bias: int
  max_bits: int
  overflow_bits: int
  inf_bits: int
  nan_bits: int
  nan_form: int = NAN_IEEE

  @property
  def bits(self) -> int: return 1 + self.ebits + self.mbits


def _raw_bits(v: float, dt: DType) -> int:
  """The bits of v converted into dt as tinyspec.dtype.round_float converts it."""
  return int(round_float(np.float64(v), dt).view(np.dtype(f"uint{dt.bits}")).item())


def _bits(v: float, dt: DType) -> int:
  """The bits, sign cleared, of v converted into dt."""
  return _raw_bits(v, dt) & ((1 << (dt.bits - 1)) - 1)


def _nan_form(dt: DType) -> int:
  """Where dt's NaNs are, read from round_float: a NaN with the sign bit alone is fnuz's; an infinity that becomes a
  NaN has all-ones NaNs; else IEEE's."""
  if _raw_bits(math.nan, dt) == 1 << (dt.bits - 1): return NAN_FNUZ
  return NAN_ALL_ONES if np.isnan(round_float(np.float64(math.inf), dt)) else NAN_IEEE


def _format(dt: DType) -> Format:
  """dt's format, read from its finfo (the bias from its smallest normal exponent) and from round_float itself (what
  its largest finite value, a finite overflow, an infinity and a NaN become), so the helpers saturate where the one
  meaning of conversion does."""
  fi = finfo(dt)
  return Format(dt.name, int(fi.nexp), int(fi.nmant), 1 - int(fi.minexp), _bits(float(fi.max), dt), _bits(1e300, dt), _bits(math.inf, dt),
                _bits(math.nan, dt), nan_form=_nan_form(dt))


FORMATS: dict[str, Format] = {dt.name: _format(dt) for dt in dtypes.small_floats}

# the compiler predefines that say a native type converts (tcc defines neither); __bf16 without __BFLT16_MAX__
# (gcc 12) is a storage-only type that cannot be converted
NATIVE: dict[str, tuple[str, str]] = {"float16": ("_Float16", "__FLT16_MAX__"), "bfloat16": ("__bf16", "__BFLT16_MAX__")}

# the integer types of each language, by width, and the bit moves between floats and unsigned integers
_TYPES = {
  "c": {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"},
  "opencl": {8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"},
}
_BITS = {
  "c": """static inline uint32_t ts_sf_bits_f32(float x) { uint32_t b; memcpy(&b, &x, sizeof(b)); return b; }
static inline float ts_sf_f32_of(uint32_t b) { float x; memcpy(&x, &b, sizeof(x)); return x; }""",
  "opencl": """static inline uint ts_sf_bits_f32(float x) { return as_uint(x); }
static inline float ts_sf_f32_of(uint b) { return as_float(b); }""",
}
_BITS_F64 = {
  "c": "static inline uint64_t ts_sf_bits_f64(double x) { uint64_t b; memcpy(&b, &x, sizeof(b)); return b; }",
  "opencl": "static inline ulong ts_sf_bits_f64(double x) { return as_ulong(x); }",
}

# b: the bits of an IEEE binary value with sE exponent and sM mantissa bits (a float's or a double's). Its magnitude
# is sig * 2^(u - sM); the format's quantum at that magnitude is 2^(tu - M), tu the exponent clamped to the format's
# smallest normal one, so the result's bits are sig / 2^(sh) rounded to nearest even, plus the exponent field's
# offset: a carry out of the mantissa steps the exponent, and the largest subnormal rounds up to the smallest normal
_NARROW = """static inline {u32} ts_sf_narrow({u64} b, int sE, int sM, int E, int M, int bias, int nan_form, {u32} max_bits,
                                   {u32} overflow_bits, {u32} inf_bits, {u32} nan_bits) {{
  {u32} neg = ({u32})(b >> (sE + sM)) & 1u, out;
  {u64} one = 1, mag = b & ((one << (sE + sM)) - 1), m = mag & ((one << sM) - 1);
  int e = (int)(mag >> sM);
  if (e == (1 << sE) - 1 && nan_form == {fnuz}) return 1u << (E + M);  /* fnuz: every NaN and infinity is its one NaN */
  if (e == (1 << sE) - 1) {{  /* a NaN keeps the top of its payload (what widening put there), else is the format's NaN */
    {u64} p = m >> (sM - M);
    out = !m ? inf_bits : p ? (inf_bits | ({u32})p) : nan_bits;
  }}
  else {{
    {u64} sig = e ? (m | (one << sM)) : m;
    int u = (e ? e : 1) - ((1 << (sE - 1)) - 1);
    int tu = u > 1 - bias ? u : 1 - bias;
    int sh = tu - u + sM - M;  /* >= sM - M > 0; past 63 every bit of sig is below half the quantum */
    if (sh > 63) sh = 63;
    {u64} q = sig >> sh, r = sig & ((one << sh) - 1), hq = one << (sh - 1);
    if (r > hq || (r == hq && (q & 1))) q++;
    q += ({u64})(tu + bias - 1) << M;
    out = q > max_bits ? overflow_bits : ({u32})q;
  }}
  if (!out && nan_form == {fnuz}) return 0u;  /* fnuz has no negative zero (its bits are the NaN) */
  return out | (neg << (E + M));
}}"""

# the float32 bits of a format's value (every small float is a float32 value). A subnormal is normalized, except in
# formats with float32's exponent range (bfloat16), whose subnormals are float32 subnormals with the same field. In a
# fnuz format the all-ones exponent is a number and the negative zero's bits are the NaN
_WIDEN = """static inline {u32} ts_sf_widen({u32} b, int E, int M, int bias, int nan_form) {{
  {u32} s = ((b >> (E + M)) & 1u) << 31, mmask = (1u << M) - 1, m = b & mmask;
  int e = (int)(b >> M) & ((1 << E) - 1);
  if (nan_form == {fnuz}) {{ if (b == 1u << (E + M)) return s | 0x7fc00000u; }}
  else if (e == (1 << E) - 1 && (nan_form == {ieee} || m == mmask)) return s | 0x7f800000u | (nan_form == {ieee} ? m << (23 - M) : 0x400000u);
  if (e == 0) {{
    if (m == 0) return s;
    e = 128 - bias;
    while (e > 1 && !(m >> M)) {{ m <<= 1; e--; }}
    if (!(m >> M)) return s | m << (23 - M);
    m &= mmask;
    return s | ({u32})e << 23 | m << (23 - M);
  }}
  return s | ({u32})(e - bias + 127) << 23 | m << (23 - M);
}}"""


def _narrow_call(f: Format, src: str, lang: str) -> str:
  """The generic narrowing of a float (src "f32") or double ("f64") argument x into f's bits."""
  se, sm = (8, 23) if src == "f32" else (11, 52)
  return (f"({_TYPES[lang][f.bits]})ts_sf_narrow(ts_sf_bits_{src}(x), {se}, {sm}, {f.ebits}, {f.mbits}, {f.bias}, {f.nan_form}, "
          f"{f.max_bits:#x}u, {f.overflow_bits:#x}u, {f.inf_bits:#x}u, {f.nan_bits:#x}u)")


def _bits_helpers(f: Format, lang: str) -> str:
  """The storage type and conversions of f on its bits (the generic routines)."""
  t = _TYPES[lang][f.bits]
  return "\n".join([
    f"typedef {t} ts_{f.name};",
    f"static inline float ts_{f.name}_widen(ts_{f.name} x) {{ return ts_sf_f32_of(ts_sf_widen(x, {f.ebits}, {f.mbits}, {f.bias}, {f.nan_form})); }}",
    f"static inline ts_{f.name} ts_{f.name}_narrowf(float x) {{ return {_narrow_call(f, 'f32', lang)}; }}"])


def _native_helpers(name: str) -> str:
  native = NATIVE[name][0]
  return "\n".join([
    f"typedef {native} ts_{name};",
    f"static inline float ts_{name}_widen(ts_{name} x) {{ return (float)x; }}",
    f"static inline ts_{name} ts_{name}_narrowf(float x) {{ return (ts_{name})x; }}"])


def value_helpers(name: str, lang: str) -> str:
  """The storage type, widen, narrowf and round of one format (needs the generic routines: helpers() orders them)."""
  f = FORMATS[name]
  body = _bits_helpers(f, lang)
  if lang == "c" and name in NATIVE:
    body = f"#if !defined(TS_SMALLFLOAT_BITS) && defined({NATIVE[name][1]}) && !defined(__TINYC__)\n{_native_helpers(name)}\n#else\n{body}\n#endif"
  return body + f"\nstatic inline float ts_{name}_round(float x) {{ return ts_{name}_widen(ts_{name}_narrowf(x)); }}"


def narrow_double(name: str, lang: str) -> str:
  """ts_X_narrow(double): rounded once from the double. Native only for _Float16 (gcc rounds it from the double in
  one step, tests/test_smallfloat_render.py checks); __bf16 from a double always takes the generic routine, since a
  compiler may round it through float (twice)."""
  f = FORMATS[name]
  generic = f"static inline ts_{name} ts_{name}_narrow(double x) {{ return {_narrow_call(f, 'f64', lang)}; }}"
  if lang != "c" or name != "float16": return generic
  native = f"static inline ts_{name} ts_{name}_narrow(double x) {{ return (ts_{name})x; }}"
  return f"#if !defined(TS_SMALLFLOAT_BITS) && defined({NATIVE[name][1]}) && !defined(__TINYC__)\n{native}\n#else\n{generic}\n#endif"


def helpers(name: str, lang: str, double: bool = False) -> dict[str, str]:
  """The helpers of format `name` in lang ("c" or "opencl"), as helper id -> source text, in dependency order (every
  text after those it calls). double: also ts_X_narrow(double) (in OpenCL only when the kernel has cl_khr_fp64 on).
  Helpers of several formats merge by id: the generic routines are shared."""
  if name not in FORMATS: raise KeyError(f"{name!r} is not a small float format ({', '.join(FORMATS)})")
  if lang not in _TYPES: raise KeyError(f"no small float helpers for language {lang!r}")
  t = _TYPES[lang]
  forms = {"fnuz": NAN_FNUZ, "ieee": NAN_IEEE}
  out = {"ts_sf_bits": _BITS[lang], "ts_sf_narrow": _NARROW.format(u32=t[32], u64=t[64], **forms), "ts_sf_widen": _WIDEN.format(u32=t[32], **forms)}
  if double: out["ts_sf_bits_f64"] = _BITS_F64[lang]
  out[f"ts_{name}"] = value_helpers(name, lang)
  if double: out[f"ts_{name}_narrow"] = narrow_double(name, lang)
  return out


def source(names: list[str], lang: str, double: bool = False) -> str:
  """The helpers of every format in names as one text (the renderers merge helpers() into a kernel's instead)."""
  merged: dict[str, str] = {}
  for n in names: merged.update(helpers(n, lang, double))
  return "\n".join(merged.values()) + "\n"

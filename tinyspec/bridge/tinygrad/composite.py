"""Rules that spell one tinygrad op with several tinyspec ops: THREEFRY (tinygrad's counter-based random bits), POW,
STACK used as a value, BITCAST between item sizes, and a float unary op of an integer source. Each spelling computes
what tinygrad computes, op for op (tinygrad.codegen.decomp.op.threefry2x32, tinygrad.codegen.decomp.transcendental.xpow),
so its numbers are tinygrad's bit for bit; tests/test_bridge_random.py compares them with tinygrad's own."""
from __future__ import annotations

import math
from typing import Any

from tinyspec.bridge.tinygrad.arithmetic import broadcast
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import GroupOp, Ops, UOp


class Spell:
  """Builds tinyspec nodes of one shape (a tensor stage's node shape; () inside a kernel), constants broadcast to it."""
  def __init__(self, tr: Translator, u: Any):
    self.translator, self.shape = tr, (() if tr.kernel else tr.shape(u))

  def fit(self, x: UOp) -> UOp: return broadcast(self.translator, x, self.shape)

  def c(self, dt: DType, v: Any) -> UOp: return self.fit(UOp.const(dt, v))

  def op(self, op: Ops, *srcs: UOp, dt: DType | None = None) -> UOp:
    out = dtypes.bool if op in GroupOp.Comparison else dt if dt is not None else srcs[-1].dtype
    return UOp(op, out, tuple(srcs))

  def cast(self, x: UOp, dt: DType) -> UOp: return UOp(Ops.CAST, dt, (x,))


# ---- THREEFRY ----
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = 0x1BD11BDA


def r_threefry(tr: Translator, u: Any, want: Any) -> UOp:
  """THREEFRY(x, key) on uint64: Threefry-2x32 with 20 rounds of x's two 32-bit halves under key's, as tinygrad decomposes
  it (threefry2x32): key schedule (k1, k0 ^ k1 ^ 0x1BD11BDA, k0), rotations by SHL + SHR, the result's halves swapped back."""
  dt = tr.dtype(u, want)
  if dt is not dtypes.uint64: raise Untranslatable("THREEFRY", tr.stage, f"THREEFRY on {dt.name} (tinygrad's is on uint64)")
  s = Spell(tr, u)
  u32 = dtypes.uint32
  x, key = (s.fit(tr.value(v, dtypes.uint64)) for v in u.src)

  def halves(v: UOp) -> tuple[UOp, UOp]:
    return s.cast(v, u32), s.cast(s.op(Ops.SHR, v, s.c(dtypes.uint64, 32)), u32)

  def add(a: UOp, b: UOp) -> UOp: return s.op(Ops.ADD, a, b)

  x0, x1 = halves(x)
  k0, k1 = halves(key)
  ks = [k1, s.op(Ops.XOR, s.op(Ops.XOR, k0, k1), s.c(u32, KS_PARITY)), k0]
  xr = [add(x0, ks[2]), add(x1, ks[0])]
  for i in range(5):
    for r in ROTATIONS[i % 2]:
      a = add(xr[0], xr[1])
      rot = add(s.op(Ops.SHL, xr[1], s.c(u32, r)), s.op(Ops.SHR, xr[1], s.c(u32, 32 - r)))
      xr = [a, s.op(Ops.XOR, a, rot)]
    xr = [add(xr[0], ks[i % 3]), add(add(xr[1], ks[(i + 1) % 3]), s.c(u32, i + 1))]
  hi = s.op(Ops.SHL, s.cast(xr[1], dtypes.uint64), s.c(dtypes.uint64, 32))
  return s.op(Ops.OR, hi, s.cast(xr[0], dtypes.uint64))


# ---- POW ----
def r_pow(tr: Translator, u: Any, want: Any) -> UOp:
  """POW(b, e) on floats as tinygrad computes it (xpow): exp2(e * log2|b|); for b < 0 NaN where e is no integer (b = -inf
  aside) and negated where e is odd; 1 where e == 0."""
  dt = tr.dtype(u, want)
  if dt.kind in "iu": return int_pow(tr, u, dt)
  if dt.kind != "f": raise Untranslatable("POW", tr.stage, f"POW on {dt.name}")
  s = Spell(tr, u)
  b, e = (s.fit(tr.value(v, dt)) for v in u.src)
  zero = s.c(dt, 0.0)
  neg = s.op(Ops.CMPLT, b, zero)
  ret = s.op(Ops.EXP2, s.op(Ops.MUL, s.op(Ops.LOG2, s.op(Ops.WHERE, neg, s.op(Ops.NEG, b), b)), e))
  non_int = s.op(Ops.CMPNE, e, s.cast(s.cast(e, dtypes.int32), dt))
  abs_e = s.op(Ops.WHERE, s.op(Ops.CMPLT, e, zero), s.op(Ops.NEG, e), e)
  is_odd = s.cast(s.op(Ops.MOD, s.cast(abs_e, dtypes.int32), s.c(dtypes.int32, 2)), dtypes.bool)
  nan_unless_inf = s.op(Ops.WHERE, s.op(Ops.CMPNE, b, s.c(dt, -math.inf)), s.c(dt, math.nan), ret)
  neg_base = s.op(Ops.WHERE, non_int, nan_unless_inf, s.op(Ops.WHERE, is_odd, s.op(Ops.NEG, ret), ret))
  return s.op(Ops.WHERE, s.op(Ops.CMPEQ, e, zero), s.c(dt, 1.0), s.op(Ops.WHERE, neg, neg_base, ret))


def int_pow(tr: Translator, u: Any, dt: DType) -> UOp:
  """POW(b, e) on a fixed-width integer dtype: b ** e exactly, wrapping as MUL does (square and multiply over e's bits:
  WHERE(bit i of e, acc * p, acc), p squared each step); for e < 0 the real b ** e truncated toward zero (1 for b = 1,
  +-1 for b = -1, else 0; 0 ** e, undefined as a real, is 0). tinygrad means x ** y by this (Python's int power, and its
  constant exponents simplify to products), though its programs compute an integer power through exp2 and log2 in float32."""
  s = Spell(tr, u)
  b, e = (s.fit(tr.value(v, dt)) for v in u.src)
  one, zero = s.c(dt, 1), s.c(dt, 0)
  const_e = u.src[1].arg if u.src[1].op.name == "CONST" and isinstance(u.src[1].arg, int) else None
  bits = range(max(const_e, 0).bit_length()) if const_e is not None else range(dt.bits - (1 if dt.kind == "i" else 0))
  acc, p = one, b
  for i in bits:
    if const_e is not None: acc = s.op(Ops.MUL, acc, p) if (const_e >> i) & 1 else acc
    else:
      bit = s.op(Ops.CMPNE, s.op(Ops.AND, s.op(Ops.SHR, e, s.c(dt, i)), one), zero)
      acc = s.op(Ops.WHERE, bit, s.op(Ops.MUL, acc, p), acc)
    p = s.op(Ops.MUL, p, p)
  if dt.kind == "u" or (const_e is not None and const_e >= 0): return acc
  odd = s.op(Ops.CMPNE, s.op(Ops.AND, e, one), zero)
  minus_one = s.op(Ops.WHERE, odd, s.c(dt, -1), one)
  negative = s.op(Ops.WHERE, s.op(Ops.CMPEQ, b, one), one, s.op(Ops.WHERE, s.op(Ops.CMPEQ, b, s.c(dt, -1)), minus_one, zero))
  return s.op(Ops.WHERE, s.op(Ops.CMPLT, e, zero), negative, acc)


# ---- STACK as a value ----
def r_stack(tr: Translator, u: Any, want: Any) -> UOp:
  """STACK(x_0, ..., x_n-1) in a tensor graph: the sources side by side along a new first axis (shape (n,) + x_0's). Each
  source is placed by a PAD into its row and picked by a WHERE over a PADded mask of True, as tinyspec's `cat` writes it
  (exact for every dtype: -0.0 and NaN survive, bool needs no arithmetic)."""
  if tr.kernel: raise Untranslatable("STACK", tr.stage, "a STACK value in a kernel (a vector)")
  dt = tr.dtype(u, want)
  n, inner = len(u.src), tuple(tr.shape(u)[1:])
  if n == 0: raise Untranslatable("STACK", tr.stage, "an empty STACK")
  srcs = [tr.value(x, dt) for x in u.src]
  if any(x.dtype is not dt for x in srcs): raise Untranslatable("STACK", tr.stage, f"sources of other dtypes than {dt.name}")

  def placed(x: UOp, i: int) -> UOp:
    row = broadcast(tr, x, inner).reshape((1, *inner))
    return UOp(Ops.PAD, x.dtype, (row,), ((i, n), *((0, d) for d in inner)))

  out = placed(srcs[0], 0)
  for i, x in enumerate(srcs[1:], 1):
    mask = placed(UOp.const(dtypes.bool, True), i)
    out = UOp(Ops.WHERE, dt, (mask, placed(x, i), out))
  return out


# ---- BITCAST between item sizes ----
UNSIGNED = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def lanes(tr: Translator, shape: tuple[int, ...], values: list[int], dt: DType) -> UOp:
  """A constant of shape (..., k) whose last axis holds values (k of them), every other axis repeating it."""
  k = len(values)
  row = UOp(Ops.PAD, dt, (UOp.const(dt, values[0]).reshape((1,)),), ((0, k),))
  for j, v in enumerate(values[1:], 1):
    one = UOp(Ops.PAD, dt, (UOp.const(dt, v).reshape((1,)),), ((j, k),))
    row = UOp(Ops.ADD, dt, (row, one))   # the lanes' other entries are the PAD's zeros: exact on unsigned ints
  return broadcast(tr, row, shape)


def as_unsigned(x: UOp) -> UOp:
  u = UNSIGNED[x.dtype.itemsize]
  return x if x.dtype is u else UOp(Ops.BITCAST, u, (x,))


def from_unsigned(x: UOp, dt: DType) -> UOp: return x if x.dtype is dt else UOp(Ops.BITCAST, dt, (x,))


def r_bitcast(tr: Translator, u: Any, want: Any) -> UOp:
  """BITCAST(x) to a dtype of another item size in a tensor graph rescales the last axis (little-endian, as tinygrad's
  Tensor.bitcast): to a narrower dtype each element splits into k = size ratio lanes, lane j its bits 8 * size * j up
  (SHR, CAST to the narrow unsigned dtype); to a wider one k consecutive elements join (CAST to the wide unsigned dtype,
  SHL, a REDUCE ADD of disjoint bits). Elsewhere, and between equal sizes, BITCAST(x)."""
  dt = tr.dtype(u, want)
  x = tr.value(u.src[0])
  if x.dtype.itemsize == dt.itemsize: return UOp(Ops.BITCAST, dt, (x,))
  if tr.kernel: raise Untranslatable("BITCAST", tr.stage, f"a BITCAST from {x.dtype.name} to {dt.name} in a kernel")
  src_shape, out_shape = tuple(tr.shape(u.src[0])), tuple(tr.shape(u))
  if not src_shape: raise Untranslatable("BITCAST", tr.stage, f"a BITCAST of a scalar from {x.dtype.name} to {dt.name}")
  lead, n = src_shape[:-1], src_shape[-1]
  xs = as_unsigned(x)
  if x.dtype.itemsize > dt.itemsize:
    k, narrow = x.dtype.itemsize // dt.itemsize, UNSIGNED[dt.itemsize]
    wide = broadcast(tr, xs.reshape((*lead, n, 1)), (*lead, n, k))
    shifted = UOp(Ops.SHR, xs.dtype, (wide, lanes(tr, (*lead, n, k), [8 * dt.itemsize * j for j in range(k)], xs.dtype)))
    return from_unsigned(UOp(Ops.CAST, narrow, (shifted,)), dt).reshape(out_shape)
  k, wide_dt = dt.itemsize // x.dtype.itemsize, UNSIGNED[dt.itemsize]
  parts = UOp(Ops.CAST, wide_dt, (xs.reshape((*lead, n // k, k)),))
  shifted = UOp(Ops.SHL, wide_dt, (parts, lanes(tr, (*lead, n // k, k), [8 * x.dtype.itemsize * j for j in range(k)], wide_dt)))
  rank = len(lead) + 2
  joined = shifted.permute((rank - 1, *range(rank - 1))).reduce(Ops.ADD, 1)
  return from_unsigned(joined, dt).reshape(out_shape)


# ---- float unary ops of an integer or bool source ----
def r_float_unary(op: Ops) -> Any:
  """RECIPROCAL, SQRT, EXP2, LOG2, SIN of an integer or bool x: tinygrad gives the node the float dtype of x
  (least_upper_float: `x / y` on int tensors is x cast to float times RECIPROCAL(y)) and its programs convert x first,
  so it is op(CAST(x)); of a float x, op(x)."""
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    dt = tr.dtype(u, want)
    x = u.src[0]
    src = tr.value(x, dt)
    if src.dtype is not dt and src.dtype.kind in "biu" and dt.kind == "f": src = UOp(Ops.CAST, dt, (src,))
    return UOp(op, dt, (src,))
  return fn

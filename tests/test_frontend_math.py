"""Elementwise math and activations (tinyspec/frontend/math.py) against numpy: edge values (signed zeros, halves,
negatives, infinities, nan where the op defines it), 0-d, empty and size-1 tensors; every graph legal at TENSOR, on the
reference evaluator, then all together on the CPU backend and OpenCL."""
from __future__ import annotations

import math

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
EDGE = np.array([-3.5, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 7.0], F)
SHAPES = {"vec": None, "scalar": (), "empty": (0, 3), "one": (1, 1), "odd": (3, 5)}


def inputs(name: str) -> np.ndarray:
  if name == "vec": return EDGE
  shape = SHAPES[name]
  return rng(len(name)).uniform(-3, 3, shape).astype(F)


def f64(x: np.ndarray) -> np.ndarray: return x.astype(np.float64)
def sigmoid(x): return 1 / (1 + np.exp(-f64(x)))
def softplus(x, beta=1.0): return np.logaddexp(0, beta * f64(x)) / beta
def erf(x): return np.vectorize(math.erf, otypes=[np.float64])(f64(x))


UNARY = {
  # name: (frontend call, numpy meaning, rtol, atol)
  "sqrt": (lambda t: t.sqrt(), np.sqrt, 1e-6, 1e-7),
  "rsqrt": (lambda t: t.rsqrt(), lambda a: 1 / np.sqrt(f64(a)), 1e-6, 1e-7),
  "exp": (lambda t: t.exp(), np.exp, 1e-6, 1e-7),
  "log": (lambda t: t.log(), np.log, 1e-6, 1e-6),
  "log2": (lambda t: t.log2(), np.log2, 1e-6, 1e-6),
  "log10": (lambda t: t.log10(), np.log10, 1e-6, 1e-6),
  "exp2": (lambda t: t.exp2(), np.exp2, 1e-6, 1e-7),
  "sin": (lambda t: t.sin(), np.sin, 1e-5, 1e-6),
  "cos": (lambda t: t.cos(), np.cos, 1e-5, 1e-6),
  "tan": (lambda t: t.tan(), np.tan, 1e-5, 1e-5),
  "sinh": (lambda t: t.sinh(), np.sinh, 1e-5, 1e-5),
  "cosh": (lambda t: t.cosh(), np.cosh, 1e-5, 1e-5),
  "floor": (lambda t: t.floor(), np.floor, 0, 0),
  "ceil": (lambda t: t.ceil(), np.ceil, 0, 0),
  "round": (lambda t: t.round(), np.round, 0, 0),
  "trunc": (lambda t: t.trunc(), np.trunc, 0, 0),
  "abs": (lambda t: t.abs(), np.abs, 0, 0),
  "sign": (lambda t: t.sign(), np.sign, 0, 0),
  "square": (lambda t: t.square(), np.square, 1e-6, 0),
  "erf": (lambda t: t.erf(), erf, 0, 2e-7 * 8),
  "relu": (lambda t: t.relu(), lambda a: np.maximum(a, 0), 0, 0),
  "relu6": (lambda t: t.relu6(), lambda a: np.clip(a, 0, 6), 0, 0),
  "leaky_relu": (lambda t: t.leaky_relu(), lambda a: np.where(a < 0, 0.01 * f64(a), a), 1e-6, 0),
  "leaky_relu_0.2": (lambda t: t.leaky_relu(0.2), lambda a: np.where(a < 0, 0.2 * f64(a), a), 1e-6, 0),
  "elu": (lambda t: t.elu(), lambda a: np.where(a > 0, a, np.expm1(f64(a))), 1e-5, 1e-6),
  "elu_2": (lambda t: t.elu(2.0), lambda a: np.where(a > 0, a, 2 * np.expm1(f64(a))), 1e-5, 1e-6),
  "celu": (lambda t: t.celu(0.5), lambda a: np.maximum(a, 0) + np.minimum(0, 0.5 * np.expm1(f64(a) / 0.5)), 1e-5, 1e-6),
  "selu": (lambda t: t.selu(), lambda a: 1.0507 * np.where(a >= 0, a, 1.67326 * np.expm1(f64(a))), 1e-5, 1e-6),
  "gelu_tanh": (lambda t: t.gelu(), lambda a: 0.5 * f64(a) * (1 + np.tanh(math.sqrt(2 / math.pi) * (f64(a) + 0.044715 * f64(a) ** 3))), 1e-5, 1e-6),
  "gelu_erf": (lambda t: t.gelu(approximate="none"), lambda a: 0.5 * f64(a) * (1 + erf(f64(a) / math.sqrt(2))), 1e-5, 2e-6),
  "quick_gelu": (lambda t: t.quick_gelu(), lambda a: f64(a) * sigmoid(1.702 * f64(a)), 1e-5, 1e-6),
  "silu": (lambda t: t.silu(), lambda a: f64(a) * sigmoid(a), 1e-5, 1e-6),
  "swish": (lambda t: t.swish(), lambda a: f64(a) * sigmoid(a), 1e-5, 1e-6),
  "softplus": (lambda t: t.softplus(), softplus, 1e-5, 1e-6),
  "softplus_beta": (lambda t: t.softplus(2.0), lambda a: softplus(a, 2.0), 1e-5, 1e-6),
  "hardtanh": (lambda t: t.hardtanh(), lambda a: np.clip(a, -1, 1), 0, 0),
  "hardtanh_range": (lambda t: t.hardtanh(-0.5, 2.0), lambda a: np.clip(a, -0.5, 2.0), 0, 0),
  "hardswish": (lambda t: t.hardswish(), lambda a: f64(a) * np.clip(f64(a) + 3, 0, 6) / 6, 1e-6, 1e-7),
  "hardsigmoid": (lambda t: t.hardsigmoid(), lambda a: np.clip(f64(a) / 6 + 0.5, 0, 1), 1e-6, 1e-7),
  "mish": (lambda t: t.mish(), lambda a: f64(a) * np.tanh(softplus(a)), 1e-5, 1e-6),
  "sigmoid": (lambda t: t.sigmoid(), sigmoid, 1e-6, 1e-7),
  "logsigmoid": (lambda t: t.logsigmoid(), lambda a: -softplus(-f64(a)), 1e-5, 1e-6),
  "tanh": (lambda t: t.tanh(), np.tanh, 1e-5, 1e-6),
  "softsign": (lambda t: t.softsign(), lambda a: f64(a) / (1 + np.abs(f64(a))), 1e-6, 1e-7),
  "isnan": (lambda t: (t / t).isnan(), lambda a: np.isnan(a / a), 0, 0),
}


def unary_cases() -> list[Case]:
  out = []
  with np.errstate(all="ignore"):
    for name, (f, ref, rtol, atol) in UNARY.items():
      for shape in SHAPES:
        a = inputs(shape)
        out.append(Case(f"{name}[{shape}]", f(Tensor(a)), np.asarray(ref(a)), rtol, atol))
  return out


POW_BASE = np.array([-8.0, -2.0, -1.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0], F)
POW_SCALARS = [0, 1, 2, 3, 7, -1, -2, -3, 0.5, 1.5, 2.5, -0.5, -1.5, 3.3, -0.7, 2.0, 10]
EXP_T = np.array([3.0, 0.5, 2.0, 1.0, -1.0, 0.0, 2.5, -0.5, 0.0, 1 / 3, -2.0], F)
SPECIAL_B = np.array([0.0, np.nan, np.inf, -np.inf, -np.inf, -np.inf, np.inf, -2.0, -2.0, 0.0], F)
SPECIAL_E = np.array([0.0, 0.0, 0.0, 0.5, 3.0, 2.0, -1.0, 1e10, 3e9 + 1, -1.0], F)


def pow_cases() -> list[Case]:
  out = []
  with np.errstate(all="ignore"):
    for c in POW_SCALARS:
      want = np.power(f64(POW_BASE), c)
      # tinygrad takes the reciprocal before a negative power (1 / -0.0 is -inf) and a half-integer power is an integer
      # power times a sqrt, and sqrt(-inf) is nan
      if c < 0 and (c - 0.5) == int(c - 0.5): want[np.signbit(POW_BASE) & (POW_BASE == 0)] = np.nan
      out.append(Case(f"pow_scalar[{c}]", Tensor(POW_BASE) ** c, want, 2e-6, 1e-6))
    want = np.power(f64(POW_BASE), f64(EXP_T))
    want[4] = np.inf  # -0.0 ** -1.0: a tensor power reads |b|, so the sign of zero is lost (tinygrad's result too)
    out += [
      Case("pow_tensor", Tensor(POW_BASE) ** Tensor(EXP_T), want, 5e-6, 1e-6),
      Case("pow_special", Tensor(SPECIAL_B) ** Tensor(SPECIAL_E), np.power(f64(SPECIAL_B), f64(SPECIAL_E)), 1e-6, 0),
      Case("rpow_positive", 2 ** Tensor(EXP_T), np.power(2.0, f64(EXP_T)), 2e-6, 0),
      Case("rpow_fraction", 0.5 ** Tensor(EXP_T), np.power(0.5, f64(EXP_T)), 2e-6, 0),
      Case("rpow_negative", (-2.0) ** Tensor(EXP_T), np.power(-2.0, f64(EXP_T)), 2e-6, 0),
      Case("rpow_one", 1 ** Tensor(EXP_T), np.ones(EXP_T.shape), 0, 0),
      Case("pow_broadcast", Tensor(np.abs(POW_BASE).reshape(11, 1)) ** Tensor(np.array([0.5, 2.0, -1.0], F)),
           np.power(np.abs(f64(POW_BASE)).reshape(11, 1), [0.5, 2.0, -1.0]), 5e-6, 1e-6),
      Case("pow_int", Tensor([-3, -2, 0, 1, 5], dtypes.int32) ** 3, np.array([-27, -8, 0, 1, 125], np.int32), dtype=dtypes.int32),
      Case("pow_int8_wraps", Tensor(np.array([3, -5], np.int8)) ** 5, np.array([3 ** 5, (-5) ** 5], np.int64).astype(np.int8), dtype=dtypes.int8),
      Case("pow_int_float_exp", Tensor([4, 9]) ** 0.5, np.array([2.0, 3.0], F), dtype=dtypes.float32),
      Case("pow_int_float_integer_exp", Tensor([4, -3]) ** 2.0, np.array([16.0, 9.0], F), dtype=dtypes.float32),
      Case("pow_bool", Tensor([True, False]) ** 2, np.array([1, 0], np.int32), dtype=dtypes.int32),
      Case("pow_scalar_0d", Tensor(np.array(-2.0, F)) ** 3, np.array(-8.0)),
      Case("pow_empty", Tensor(np.zeros((0, 2), F)) ** 2.5, np.zeros((0, 2))),
    ]
  return out


A = np.array([-7.5, -7.0, -2.0, -0.0, 0.0, 1.0, 2.5, 7.0, 5.5, -3.25], F)
B = np.array([2.0, -2.0, 3.0, -1.0, 2.0, -0.0, 0.5, -2.5, 2.0, -0.75], F)
CLOSE_A = np.array([1.0, 1.0, np.nan, np.inf, -np.inf, 0.0, 1e-9], F)
CLOSE_B = np.array([1.0 + 1e-6, 1.1, np.nan, np.inf, np.inf, 1e-9, 0.0], F)
IA = np.array([-7, 7, -7, 7, 0, 9, -9, 5], np.int32)
IB = np.array([2, -2, -2, 2, 3, 4, 4, -5], np.int32)


def binary_cases() -> list[Case]:
  nz = B != 0
  with np.errstate(all="ignore"):
    return [
      Case("copysign", Tensor(A).copysign(Tensor(B)), np.copysign(A, B), 0, 0),
      Case("copysign_scalar", Tensor(A).copysign(-1.0), np.copysign(A, -1.0), 0, 0),
      Case("copysign_broadcast", Tensor(A.reshape(10, 1)).copysign(Tensor(np.array([-1.0, 0.0, -0.0], F))),
           np.copysign(A.reshape(10, 1), [-1.0, 0.0, -0.0]), 0, 0),
      Case("clip", Tensor(A).clip(-2, 3), np.clip(A, -2, 3), 0, 0),
      Case("clamp_min", Tensor(A).clamp(min_=0.5), np.maximum(A, 0.5), 0, 0),
      Case("clamp_max", Tensor(A).clamp(max_=-1), np.minimum(A, -1), 0, 0),
      Case("clip_int", Tensor(IA).clip(-3, 4), np.clip(IA, -3, 4), dtype=dtypes.int32),
      Case("clip_tensor_bounds", Tensor(A).clip(Tensor(np.full(10, -1.0, F)), Tensor(np.arange(10, dtype=F))), np.clip(A, -1.0, np.arange(10)), 0, 0),
      Case("lerp", Tensor(A).lerp(Tensor(B), 0.25), A + (B - A) * 0.25, 1e-6, 1e-6),
      Case("lerp_tensor_weight", Tensor(A).lerp(Tensor(B), Tensor(np.linspace(0, 1, 10).astype(F))),
           A + (B - A) * np.linspace(0, 1, 10), 1e-6, 1e-6),
      Case("fmod", Tensor(A[nz]).fmod(Tensor(B[nz])), np.fmod(A[nz], B[nz]), 1e-6, 1e-6),
      Case("fmod_int", Tensor(IA).fmod(Tensor(IB)), np.fmod(IA, IB), dtype=dtypes.int32),
      Case("div", Tensor(A[nz]).div(Tensor(B[nz])), A[nz] / B[nz], 1e-6, 0),
      Case("div_trunc", Tensor(A[nz]).div(Tensor(B[nz]), rounding_mode="trunc"), np.trunc(A[nz] / B[nz]), 0, 0),
      Case("div_floor", Tensor(A[nz]).div(Tensor(B[nz]), rounding_mode="floor"), np.floor(A[nz] / B[nz]), 0, 0),
      Case("div_int", Tensor(IA).div(Tensor(IB)), IA / IB, 1e-6, 0, dtype=dtypes.float32),
      Case("div_int_trunc", Tensor(IA).div(Tensor(IB), rounding_mode="trunc"), np.trunc(IA / IB).astype(np.int32), dtype=dtypes.int32),
      Case("div_int_floor", Tensor(IA).div(Tensor(IB), rounding_mode="floor"), np.floor_divide(IA, IB), dtype=dtypes.int32),
      Case("div_reverse", Tensor(B[nz]).div(3.0, reverse=True), 3.0 / B[nz], 1e-6, 0),
      Case("logaddexp", Tensor(A).logaddexp(Tensor(B)), np.logaddexp(A, B), 1e-6, 1e-6),
      Case("isclose", Tensor(CLOSE_A).isclose(Tensor(CLOSE_B)), np.isclose(CLOSE_A, CLOSE_B)),
      Case("allclose", Tensor(CLOSE_A[:2]).allclose(Tensor(CLOSE_B[:2]), rtol=0.2), np.array(True)),
      Case("allclose_not", Tensor(CLOSE_A).allclose(Tensor(CLOSE_B)), np.array(False)),
      Case("pow_method", Tensor(A).pow(Tensor(np.full(10, 2.0, F))), A.astype(np.float64) ** 2, 1e-6, 1e-6),
      Case("isclose_nan", Tensor(np.array([np.nan, 1.0], F)).isclose(Tensor(np.array([np.nan, 2.0], F)), atol=1.5, equal_nan=True),
           np.array([True, True])),
      Case("isinf", Tensor(np.array([np.inf, -np.inf, 1.0, np.nan], F)).isinf(), np.array([True, True, False, False])),
      Case("isinf_positive", Tensor(np.array([np.inf, -np.inf, 1.0], F)).isinf(detect_negative=False), np.array([True, False, False])),
      Case("isfinite", Tensor(np.array([np.inf, -np.inf, 1.0, np.nan], F)).isfinite(), np.array([False, False, True, False])),
      Case("masked_fill", Tensor(A).masked_fill(Tensor(A < 0), -9.0), np.where(A < 0, -9.0, A), 0, 0),
      Case("where_scalars", Tensor(A < 0).where(1.5, -2), np.where(A < 0, 1.5, -2.0), 0, 0, dtype=dtypes.float32),
      Case("where_int_scalars", Tensor(A < 0).where(3, 4), np.where(A < 0, 3, 4).astype(np.int32), dtype=dtypes.int32),
      Case("abs_int", Tensor(IA).abs(), np.abs(IA), dtype=dtypes.int32),
      Case("sign_int", Tensor(IA).sign(), np.sign(IA), dtype=dtypes.int32),
      Case("sign_uint", Tensor(np.array([0, 3], np.uint8)).sign(), np.array([0, 1], np.uint8), dtype=dtypes.uint8),
      Case("relu_int", Tensor(IA).relu(), np.maximum(IA, 0), dtype=dtypes.int32),
      Case("sigmoid_int", Tensor(IA).sigmoid(), sigmoid(IA), 1e-6, 1e-7, dtype=dtypes.float32),
      Case("floor_int_is_identity", Tensor(IA).floor(), IA, dtype=dtypes.int32),
      Case("round_halves", Tensor(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e8 + 0.0], F)).round(),
           np.array([0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 1e8], F), 0, 0),
      Case("sign_zero_inf", Tensor(np.array([-0.0, 0.0, np.inf, -np.inf], F)).sign(), np.array([0.0, 0.0, 1.0, -1.0]), 0, 0),
      Case("add", Tensor(A).add(Tensor(B)), A + B, 0, 0),
      Case("add_reverse", Tensor(A).add(2.0, reverse=True), 2.0 + A, 0, 0),
      Case("sub", Tensor(A).sub(Tensor(B)), A - B, 0, 0),
      Case("sub_reverse", Tensor(A).sub(1.0, reverse=True), 1.0 - A, 0, 0),
      Case("mul", Tensor(A).mul(Tensor(B)), A * B, 0, 0),
      Case("neg", Tensor(IA).neg(), -IA),
      Case("eq", Tensor(IA).eq(Tensor(IB)), IA == IB),
      Case("ne", Tensor(IA).ne(7), IA != 7),
      Case("bitwise_and", Tensor(IA).bitwise_and(Tensor(IB)), IA & IB),
      Case("bitwise_or", Tensor(IA).bitwise_or(6), IA | 6),
      Case("bitwise_xor", Tensor(IA).bitwise_xor(Tensor(IB)), IA ^ IB),
      Case("bitwise_not", Tensor(IA).bitwise_not(), ~IA),
      Case("lshift", Tensor(np.abs(IA)).lshift(2), np.abs(IA) << 2),
      Case("rshift", Tensor(np.abs(IA)).rshift(1), np.abs(IA) >> 1),
      Case("float", Tensor(IA).float(), IA.astype(F), 0, 0, dtype=dtypes.float32),
      Case("double", Tensor(IA).double(), IA.astype(np.float64), 0, 0, dtype=dtypes.float64),
      Case("int", Tensor(np.array([2.7, -2.7], F)).int(), np.array([2, -2], np.int32), dtype=dtypes.int32),
      Case("long", Tensor(IA).long(), IA.astype(np.int64), dtype=dtypes.int64),
      Case("bool", Tensor(IA).bool(), IA != 0, dtype=dtypes.bool),
      Case("float64_gelu", Tensor(f64(A)).gelu(), 0.5 * f64(A) * (1 + np.tanh(math.sqrt(2 / math.pi) * (f64(A) + 0.044715 * f64(A) ** 3))),
           1e-12, 1e-12, dtype=dtypes.float64),
    ]


CASES = cases_by_name(unary_cases() + pow_cases() + binary_cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  check_backend(list(CASES.values()), "opencl")


# ---- by hand ----
def test_pow_negative_bases_as_tinygrad_defines_them() -> None:
  # worked out by hand: odd integer powers keep the sign, even ones drop it, non-integer ones are nan; b ** 0 == 1
  b = Tensor(np.array([-2.0, -2.0, -2.0, -8.0, np.nan, -np.inf], F))
  e = Tensor(np.array([3.0, 2.0, 0.5, 1 / 3, 0.0, 3.0], F))
  got = (b ** e).numpy()
  np.testing.assert_allclose(got[:2], [-8.0, 4.0], rtol=1e-6)
  assert np.isnan(got[2]) and np.isnan(got[3]) and got[4] == 1.0 and got[5] == -np.inf


def test_pow_scalar_forms_use_the_exact_ops() -> None:
  from tinyspec.uop import Ops
  t = Tensor(np.array([1.5, 2.0], F))
  assert {u.op for u in (t ** 2).uop.toposort()} & {Ops.EXP2, Ops.LOG2} == set()  # x * x
  assert Ops.SQRT in {u.op for u in (t ** 0.5).uop.toposort()}
  assert Ops.RECIP in {u.op for u in (t ** -1).uop.toposort()}
  assert (t ** 2).numpy().tolist() == [2.25, 4.0]


def test_pow_refuses_what_tinygrad_refuses() -> None:
  with pytest.raises(TypeError, match="negative power"): Tensor([1, 2]) ** -1
  with pytest.raises(TypeError, match="float base"): Tensor([1, 2]) ** Tensor([1, 2])


def test_bad_arguments() -> None:
  with pytest.raises(ValueError, match="rounding_mode"): Tensor([1.0]).div(2.0, rounding_mode="ceil")
  with pytest.raises(ValueError, match="approximate"): Tensor([1.0]).gelu(approximate="fast")
  with pytest.raises(ValueError, match="min_ or max_"): Tensor([1.0]).clamp()


def test_sizes() -> None:
  assert Tensor(np.zeros((2, 3), np.int16)).numel() == 6 and Tensor(np.zeros((2, 3), np.int16)).element_size() == 2


def test_dtypes_follow_tinygrad() -> None:
  assert Tensor([1, 2]).sqrt().dtype is dtypes.float32
  assert Tensor(np.array([1.0], np.float64)).exp().dtype is dtypes.float64
  assert Tensor([1, -2]).abs().dtype is dtypes.int32
  assert Tensor([1.0]).copysign(-1).dtype is dtypes.float32
  assert Tensor([True, False]).sign().dtype is dtypes.bool

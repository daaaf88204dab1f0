"""The Tensor frontend's semantics users know from tinygrad 0.14 (and numpy): floor // and %, true /, dtype errors for
bitwise ops on floats, arange's dtype, axis checking and 0-d reductions. Every graph built here must be legal at TENSOR.

Expected values are literals worked out with Python's own operators (-7 // 2 == -4, 7.5 % -2.0 == -0.5) or numpy
(np.floor_divide, np.mod), never tinyspec's output."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops

INF = math.inf


def legal(t: Tensor) -> np.ndarray:
  """t's value, after asserting its graph is legal at TENSOR."""
  assert check(Tensor.sink(t), Stage.TENSOR) == []
  return t.numpy()


def assert_same_floats(got: np.ndarray, want: list[float]) -> None:
  """Equal values, NaN where NaN, and the same sign on every zero."""
  w = np.array(want, dtype=got.dtype)
  np.testing.assert_array_equal(got, w)
  assert np.signbit(got).tolist() == np.signbit(w).tolist(), f"signs of zeros differ: {got.tolist()} vs {want}"


# ---- // and % floor like Python ----
IA = [-7, 7, -7, 7, -1, 0, 5, -8, 9, -9, -6, 6]
IB = [2, -2, -2, 2, 3, 3, -5, 3, 4, 4, 3, -3]
IQ = [-4, -4, 3, 3, -1, 0, -1, -3, 2, -3, -2, -2]  # [a // b for a, b in zip(IA, IB)]
IR = [1, -1, -1, 1, 2, 0, 0, 1, 1, 3, 0, 0]       # [a % b for a, b in zip(IA, IB)]


@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64])
def test_int_floordiv_and_mod_floor_like_python(dt):
  a, b = Tensor(IA, dt), Tensor(IB, dt)
  q, r = legal(a // b), legal(a % b)
  assert q.tolist() == IQ == [x // y for x, y in zip(IA, IB)]
  assert r.tolist() == IR == [x % y for x, y in zip(IA, IB)]
  assert (a // b).dtype is dt and (a % b).dtype is dt


def test_int_floordiv_keeps_the_ir_idiv_and_mod():
  ops = {u.op for u in (Tensor(IA) // Tensor(IB)).uop.toposort()} | {u.op for u in (Tensor(IA) % Tensor(IB)).uop.toposort()}
  assert {Ops.IDIV, Ops.MOD, Ops.WHERE} <= ops


def test_int8_floordiv_at_the_edges():
  a, b = Tensor(np.array([-100, 100, -128, 127, 9], np.int8)), Tensor(np.array([7, -7, 3, -3, 2], np.int8))
  assert legal(a // b).tolist() == [-15, -15, -43, -43, 4]  # np.floor_divide on int8
  assert legal(a % b).tolist() == [5, -5, 1, -2, 1]         # np.mod on int8


def test_unsigned_floordiv_is_plain_idiv():
  a, b = Tensor(np.array([200, 255, 17], np.uint8)), Tensor(np.array([7, 16, 5], np.uint8))
  assert legal(a // b).tolist() == [28, 15, 3] and legal(a % b).tolist() == [4, 15, 2]
  assert Ops.WHERE not in {u.op for u in (a // b).uop.toposort()}


def test_python_scalars_on_either_side():
  t = Tensor([2, -2])
  assert legal(7 // t).tolist() == [3, -4] and legal(7 % t).tolist() == [1, -1]
  f = Tensor([7, -7])
  # an int tensor with a float scalar computes in float32, as tinygrad's weak float does
  assert legal(f // 2.5).tolist() == [2.0, -3.0] and legal(f % 2.5).tolist() == [2.0, 0.5]
  assert (f // 2.5).dtype is dtypes.float32
  assert_same_floats(legal(1.5 % Tensor([2.0, -2.0, 0.5])), [1.5, -0.5, 0.0])
  assert_same_floats(legal(1.5 // Tensor([2.0, -2.0, 0.5])), [0.0, -1.0, 3.0])


def test_int_division_by_zero_follows_the_ir():
  # a IDIV 0 == 0 and a MOD 0 == a in the IR; the floor correction then gives -1 for a < 0 (tinygrad 0.14 on CPU agrees)
  a, z = Tensor([-7, 7, 0]), Tensor([0, 0, 0])
  assert legal(a // z).tolist() == [-1, 0, 0]
  assert legal(a % z).tolist() == [-7, 7, 0]


FA = [7.5, -3.0, 7.5, -7.5, 0.0, -0.0, 0.0, 6.0, -6.0, 6.0, -6.0, 0.5, -0.5, 41.0, 47.0, -41.0]
FB = [2.0, 2.0, -2.0, 2.0, 2.0, 2.0, -2.0, 3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 41.0, 47.0, 41.0]
# [a // b for ...] and [a % b for ...] in Python (np.floor_divide and np.mod on float32 agree, signed zeros included)
FQ = [3.0, -2.0, -4.0, -4.0, 0.0, -0.0, -0.0, 2.0, -2.0, -2.0, 2.0, 0.0, -1.0, 1.0, 1.0, -1.0]
FR = [1.5, 1.0, -0.5, 0.5, 0.0, 0.0, -0.0, 0.0, 0.0, -0.0, -0.0, 0.5, 1.5, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_float_floordiv_and_mod_floor_like_python(dt):
  a, b = Tensor(FA, dt), Tensor(FB, dt)
  assert_same_floats(legal(a // b), FQ)
  assert_same_floats(legal(a % b), FR)
  assert (a // b).dtype is dt and (a % b).dtype is dt
  assert FQ == [x // y for x, y in zip(FA, FB)] and FR == [x % y for x, y in zip(FA, FB)]


def test_float_floordiv_uses_no_integer_only_op():
  ops = {u.op for u in (Tensor(FA) // Tensor(FB)).uop.toposort()} | {u.op for u in (Tensor(FA) % Tensor(FB)).uop.toposort()}
  assert not any(u.op in (Ops.AND, Ops.OR, Ops.XOR) and u.dtype.is_float for u in (Tensor(FA) % Tensor(FB)).uop.toposort())
  assert Ops.TRUNC in ops and not ops & {Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR}


def test_float_exact_multiple_whose_reciprocal_product_rounds_down():
  # 41 * float32(1/41) == 0.99999994, so floor(a * (1/b)) alone would give 0
  assert np.float32(41) * (np.float32(1) / np.float32(41)) < 1
  assert_same_floats(legal(Tensor([41.0, -41.0]) // Tensor([41.0, 41.0])), [1.0, -1.0])
  assert_same_floats(legal(Tensor([41.0, -41.0]) % Tensor([41.0, 41.0])), [0.0, 0.0])


def test_float_infinite_divisor_and_zero_divisor():
  a, b = Tensor([5.0, -5.0, 5.0, -5.0]), Tensor([INF, INF, -INF, -INF])
  assert_same_floats(legal(a // b), [0.0, -1.0, -1.0, 0.0])    # Python: 5.0 // inf == 0.0, -5.0 // inf == -1.0
  assert_same_floats(legal(a % b), [5.0, INF, -INF, -5.0])       # Python: -5.0 % inf == inf
  # a // 0.0 is numpy's answer (Python raises): +-inf, nan for 0/0; a % 0.0 is nan
  q = legal(Tensor([5.0, -5.0, 0.0]) // Tensor([0.0, 0.0, 0.0]))
  assert q[0] == INF and q[1] == -INF and np.isnan(q[2])
  assert np.isnan(legal(Tensor([5.0, -5.0]) % Tensor([0.0, 0.0]))).all()


def test_true_division_promotes_ints_to_float():
  t = Tensor([-7, 7]) / Tensor([2, 2])
  assert t.dtype is dtypes.float32 and legal(t).tolist() == [-3.5, 3.5]
  assert legal(Tensor([True, False]) / 2).tolist() == [0.5, 0.0]


def test_bool_floordiv_computes_in_float_as_tinygrad():
  t = Tensor([True, False]) // Tensor([True, True])
  assert t.dtype is dtypes.float32 and legal(t).tolist() == [1.0, 0.0]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_floor_graphs_agree_on_the_cpu_backend():
  assert_same_floats((Tensor(FA) // Tensor(FB)).numpy(backend="cpu"), FQ)
  assert_same_floats((Tensor(FA) % Tensor(FB)).numpy(backend="cpu"), FR)
  assert (Tensor(IA) // Tensor(IB)).numpy(backend="cpu").tolist() == IQ
  assert (Tensor(IA) % Tensor(IB)).numpy(backend="cpu").tolist() == IR


# ---- bitwise ops and shifts on floats ----
BITWISE = [("&", Ops.AND, lambda a, b: a & b), ("|", Ops.OR, lambda a, b: a | b), ("^", Ops.XOR, lambda a, b: a ^ b),
           ("<<", Ops.SHL, lambda a, b: a << b), (">>", Ops.SHR, lambda a, b: a >> b)]


@pytest.mark.parametrize("sym,op,fn", BITWISE, ids=[b[0] for b in BITWISE])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_bitwise_on_floats_raises_type_error_naming_op_and_dtype(sym, op, fn, dt):
  x = Tensor([1.0, 2.0], dt)
  for a, b in [(x, x), (x, 1), (1, x), (Tensor([1, 2], dtypes.int64), x)]:
    with pytest.raises(TypeError, match=rf"{op.name} on {dt.name}") as e:
      fn(a, b)
    assert sym in str(e.value)


def test_int_and_float_scalar_bitwise_raises():
  with pytest.raises(TypeError, match="AND on float32"):
    Tensor([1, 2]) & 1.5


def test_invert_on_float_raises_and_on_ints_and_bools_works():
  with pytest.raises(TypeError, match="~ on float32: XOR on float32"):
    ~Tensor([1.0])
  assert legal(~Tensor([0, 5, -1])).tolist() == [~0, ~5, ~-1] == [-1, -6, 0]
  assert legal(~Tensor(np.array([0, 5], np.uint8))).tolist() == [255, 250]
  assert legal(~Tensor([True, False])).tolist() == [False, True]


def test_bitwise_and_shifts_on_ints_and_bools_build_legal_graphs():
  a, b = Tensor([12, -8, 5]), Tensor([10, 3, 1])
  assert legal(a & b).tolist() == [12 & 10, -8 & 3, 5 & 1] == [8, 0, 1]
  assert legal(a | b).tolist() == [14, -5, 5] and legal(a ^ b).tolist() == [6, -5, 4]
  assert legal(a << 1).tolist() == [24, -16, 10] and legal(a >> 1).tolist() == [6, -4, 2]
  assert legal(1 << b).tolist() == [1024, 8, 2]
  assert legal(Tensor([True, False]) & Tensor([True, True])).tolist() == [True, False]
  with pytest.raises(TypeError, match="SHL on bool"):
    Tensor([True]) << Tensor([True])


def test_bool_arithmetic_as_numpy():
  a, b = Tensor([True, False, False]), Tensor([True, True, False])
  assert legal(a + b).tolist() == (np.array([True, False, False]) + np.array([True, True, False])).tolist() == [True, True, False]
  assert legal(a * b).tolist() == [True, False, False]
  assert legal(a + 1).tolist() == [2, 1, 1]
  with pytest.raises(TypeError, match="SUB on bool"):
    a - b
  with pytest.raises(TypeError, match="NEG on bool"):
    _ = -a


def test_cast_and_bitcast_refuse_dtypes_the_ops_do_not_take():
  with pytest.raises(TypeError, match="void"):
    Tensor([1.0]).cast(dtypes.void)
  with pytest.raises(TypeError, match="BITCAST"):
    Tensor([True]).bitcast(dtypes.int8)
  assert legal(Tensor([1.0]).bitcast(dtypes.int32)).tolist() == [0x3F800000]


# ---- arange ----
def test_arange_past_int32_is_int64():
  t = Tensor.arange(2**31, 2**31 + 3)
  assert t.dtype is dtypes.int64 and legal(t).tolist() == [2147483648, 2147483649, 2147483650]
  t = Tensor.arange(-2**31 - 1, -2**31 + 2)
  assert t.dtype is dtypes.int64 and legal(t).tolist() == [-2147483649, -2147483648, -2147483647]


def test_arange_that_fits_stays_int32():
  t = Tensor.arange(2**31 - 1, 2**31 - 4, -1)
  assert t.dtype is dtypes.int32 and legal(t).tolist() == [2147483647, 2147483646, 2147483645]
  assert Tensor.arange(5).dtype is dtypes.int32 and legal(Tensor.arange(5)).tolist() == [0, 1, 2, 3, 4]
  # the last value decides: 0, 2**31 - 1 fits int32 though stop = 2**31 + 5 does not
  t = Tensor.arange(0, 2**31 + 5, 2**31 - 1)
  assert t.dtype is dtypes.int32 and legal(t).tolist() == [0, 2**31 - 1]


def test_arange_dtype_holds_the_last_value_not_just_stop_minus_step():
  # values 2**31 - 2, 2**31 + 1 while stop - step = 2**31 - 1 fits int32 (tinygrad 0.14 picks int32 here and wraps)
  t = Tensor.arange(2**31 - 2, 2**31 + 2, 3)
  assert t.dtype is dtypes.int64 and legal(t).tolist() == list(range(2**31 - 2, 2**31 + 2, 3)) == [2147483646, 2147483649]


def test_arange_exact_past_two_to_the_53():
  t = Tensor.arange(2**53, 2**53 + 3)
  assert legal(t).tolist() == [9007199254740992, 9007199254740993, 9007199254740994]


def test_arange_floats_and_empty():
  t = Tensor.arange(0, 1, 0.25)
  assert t.dtype is dtypes.float32 and legal(t).tolist() == [0.0, 0.25, 0.5, 0.75]
  assert legal(Tensor.arange(5, 2)).tolist() == [] and Tensor.arange(5, 2).shape == (0,)
  assert legal(Tensor.arange(5, 2, -1)).tolist() == [5, 4, 3]


def test_arange_that_no_dtype_holds_raises():
  with pytest.raises(OverflowError, match="int8"):
    Tensor.arange(0, 300, dtype=dtypes.int8)
  with pytest.raises(OverflowError):
    Tensor.arange(2**63 - 2, 2**63 + 1)
  with pytest.raises(ValueError, match="step"):
    Tensor.arange(0, 5, 0)


# ---- axes ----
AXIS_METHODS = {
  "sum": lambda t, a: t.sum(a), "prod": lambda t, a: t.prod(a), "max": lambda t, a: t.max(a), "min": lambda t, a: t.min(a),
  "mean": lambda t, a: t.mean(a), "var": lambda t, a: t.var(a), "argmax": lambda t, a: t.argmax(a),
  "argmin": lambda t, a: t.argmin(a), "cumsum": lambda t, a: t.cumsum(a), "softmax": lambda t, a: t.softmax(a),
  "log_softmax": lambda t, a: t.log_softmax(a), "layernorm": lambda t, a: t.layernorm(a),
  "sum_keepdim": lambda t, a: t.sum(a, keepdim=True), "sum_tuple": lambda t, a: t.sum((a,)),
}


@pytest.mark.parametrize("name", sorted(AXIS_METHODS))
@pytest.mark.parametrize("shape,axis", [((3,), 1), ((3,), -2), ((2, 3), 2), ((2, 3), 5), ((2, 3), -3), ((), 1), ((), -2)])
def test_out_of_range_axis_raises_index_error(name, shape, axis):
  t = Tensor(np.arange(math.prod(shape), dtype=np.float32).reshape(shape))
  with pytest.raises(IndexError, match=f"axis {axis} is out of range"):
    AXIS_METHODS[name](t, axis)


@pytest.mark.parametrize("name", sorted(AXIS_METHODS))
def test_negative_axis_counts_from_the_end(name):
  a = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], np.float32)
  np.testing.assert_allclose(legal(AXIS_METHODS[name](Tensor(a), -1)), legal(AXIS_METHODS[name](Tensor(a), 1)))


def test_axis_results_match_numpy():
  a = np.array([[3, 1, 2], [0, 4, -1]], np.int32)
  assert legal(Tensor(a).cumsum(1)).tolist() == np.cumsum(a, 1).tolist() == [[3, 4, 6], [0, 4, 3]]
  assert legal(Tensor(a).cumsum()).tolist() == np.cumsum(a, 0).tolist() == [[3, 1, 2], [3, 5, 1]]  # tinygrad's default axis 0
  assert legal(Tensor(a).argmax(1)).tolist() == [0, 1] and legal(Tensor(a).argmin(0)).tolist() == [1, 0, 1]
  assert legal(Tensor(a).argmax()).item() == np.argmax(a) == 4 and legal(Tensor(a).argmin()).item() == np.argmin(a) == 5


@pytest.mark.parametrize("call", [lambda t: t.permute(0, 2), lambda t: t.transpose(0, 2), lambda t: t.flip(2), lambda t: t.flip(-3)])
def test_movement_axes_out_of_range_raise_index_error(call):
  with pytest.raises(IndexError, match="out of range"):
    call(Tensor(np.zeros((2, 3), np.float32)))


def test_argmax_of_an_empty_axis_raises():
  with pytest.raises(ValueError, match="empty"):
    Tensor(np.zeros((0, 3), np.float32)).argmax(0)


# ---- 0-d tensors ----
# numpy 2's ufunc reductions take axis 0 and -1 on a 0-d array and return the value (np.sum(np.array(5), axis=0) == 5),
# and so does tinygrad 0.14 (Tensor(5).sum(0) == 5); any other axis raises (numpy's AxisError is an IndexError)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "cumsum", "sum_keepdim", "sum_tuple"])
@pytest.mark.parametrize("axis", [0, -1])
def test_zero_d_reduction_over_its_one_axis_is_the_value(name, axis):
  assert np.sum(np.array(5), axis=axis) == 5 and np.max(np.array(5), axis=axis) == 5  # numpy's own answer
  out = AXIS_METHODS[name](Tensor(5), axis)
  assert out.shape == () and legal(out).item() == 5


@pytest.mark.parametrize("call", [lambda t: t.sum(), lambda t: t.sum(()), lambda t: t.prod(), lambda t: t.max(), lambda t: t.min(),
                                  lambda t: t.mean(), lambda t: t.prod(())])
def test_zero_d_reduction_over_all_or_no_axes_is_the_value(call):
  out = call(Tensor(5))
  assert out.shape == () and legal(out).item() == 5


def test_zero_d_argmax_softmax():
  assert legal(Tensor(5).argmax()).item() == 0 and legal(Tensor(5.0).argmax(0)).item() == 0
  assert legal(Tensor(5.0).softmax(0)).item() == 1.0


@pytest.mark.parametrize("name", sorted(AXIS_METHODS))
def test_zero_d_never_raises_zero_division(name):
  for axis in (0, -1, 1, -2):
    try: AXIS_METHODS[name](Tensor(5.0), axis)
    except IndexError: assert axis in (1, -2)


# ---- movement and creation args the spec would reject raise instead ----
@pytest.mark.parametrize("call", [
  lambda t: t.shrink(((0, 3), (2, 1))), lambda t: t.shrink(((0, 3), (0, 4))), lambda t: t.shrink(((-1, 1), None)),
  lambda t: t.reshape(-2, -3), lambda t: t.reshape(-1, 4), lambda t: t.expand(-2, 3, 3), lambda t: t.expand(3),
  lambda t: t.pad(((0, -3), None)), lambda t: Tensor.full((-1, 2), 1.0)])
def test_bad_movement_args_raise_value_error(call):
  with pytest.raises(ValueError):
    call(Tensor(np.zeros((2, 3), np.float32)))


def test_reshape_minus_one_of_an_empty_tensor_is_a_value_error():
  with pytest.raises(ValueError, match="cannot reshape"):
    Tensor(np.zeros((0, 3), np.float32)).reshape(-1, 0)
  assert Tensor(np.zeros((0, 3), np.float32)).reshape(-1, 3).shape == (0, 3)

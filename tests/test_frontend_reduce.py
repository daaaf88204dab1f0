"""Reductions and scans (tinyspec/frontend/reduce.py) against numpy: axes None, int, negative and tuples, keepdim,
tinygrad's result dtypes (sum of int8 is int32, of uint8 uint32, of bool int32; mean of ints float32), 0-d tensors,
empty axes and size-1 axes; on the reference evaluator, then together on the CPU backend and OpenCL."""
from __future__ import annotations

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
X = rng(1).uniform(-3, 3, (3, 5)).astype(F)
X3 = rng(2).uniform(-2, 2, (2, 3, 4)).astype(F)
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 2.0], [-5.0, -5.0, -5.0, -5.0]], F)
EMPTY = np.zeros((0, 3), F)
S = np.array(2.5, F)
I8 = np.array([[100, 100, -3], [127, 1, -128]], np.int8)
U8 = np.array([200, 100, 7], np.uint8)
BOOL = np.array([[True, False, True], [True, True, True]])


def lse(a, axis=None, keepdims=False):
  a = a.astype(np.float64)
  m = a.max(axis=axis, keepdims=True)
  out = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
  return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


def softmax(a, axis):
  e = np.exp(a.astype(np.float64) - a.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


def cummax_ref(a: np.ndarray, axis: int, lowest: bool = False) -> tuple[np.ndarray, np.ndarray]:
  """By a loop: the running max (min) and the first index where it was reached."""
  a = np.moveaxis(a, axis, -1)
  vals, idx = np.empty_like(a), np.zeros(a.shape, np.int32)
  for pos in np.ndindex(a.shape[:-1]):
    best, at = None, 0
    for j, v in enumerate(a[pos]):
      if best is None or (v < best if lowest else v > best): best, at = v, j
      vals[pos + (j,)], idx[pos + (j,)] = best, at
  return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def reduce_cases() -> list[Case]:
  out = []
  for axis in [None, 0, 1, -1, -2, (0, 1), ()]:
    for keepdim in (False, True):
      k = f"{axis}|{keepdim}"
      np_axis = axis
      out += [
        Case(f"sum[{k}]", Tensor(X).sum(axis, keepdim), X.astype(np.float64).sum(axis=np_axis, keepdims=keepdim), 1e-5, 1e-5),
        Case(f"max[{k}]", Tensor(X).max(axis, keepdim), X.max(axis=np_axis, keepdims=keepdim), 0, 0),
        Case(f"min[{k}]", Tensor(X).min(axis, keepdim), X.min(axis=np_axis, keepdims=keepdim), 0, 0),
        Case(f"prod[{k}]", Tensor(X).prod(axis, keepdim), X.astype(np.float64).prod(axis=np_axis, keepdims=keepdim), 1e-5, 1e-6),
        Case(f"mean[{k}]", Tensor(X).mean(axis, keepdim), X.astype(np.float64).mean(axis=np_axis, keepdims=keepdim), 1e-5, 1e-6),
        Case(f"any[{k}]", Tensor(X > 1).any(axis, keepdim), (X > 1).any(axis=np_axis, keepdims=keepdim)),
        Case(f"all[{k}]", Tensor(X > -2).all(axis, keepdim), (X > -2).all(axis=np_axis, keepdims=keepdim)),
      ]
      if axis != ():
        out += [
          Case(f"var[{k}]", Tensor(X).var(axis, keepdim), X.astype(np.float64).var(axis=np_axis, keepdims=keepdim, ddof=1), 1e-5, 1e-6),
          Case(f"std[{k}]", Tensor(X).std(axis, keepdim), X.astype(np.float64).std(axis=np_axis, keepdims=keepdim, ddof=1), 1e-5, 1e-6),
          Case(f"logsumexp[{k}]", Tensor(X).logsumexp(axis, keepdim), lse(X, np_axis, keepdim), 1e-5, 1e-6),
        ]
  return out


def dtype_cases() -> list[Case]:
  with np.errstate(all="ignore"):
    return [
      Case("sum_int8_is_int32", Tensor(I8).sum(1), I8.astype(np.int32).sum(1), dtype=dtypes.int32),
      Case("sum_uint8_is_uint32", Tensor(U8).sum(), np.array(307, np.uint32), dtype=dtypes.uint32),
      Case("sum_bool_is_int32", Tensor(BOOL).sum(0), np.array([2, 1, 2], np.int32), dtype=dtypes.int32),
      Case("sum_int64_stays", Tensor(np.array([2**40, 3], np.int64)).sum(), np.array(2**40 + 3, np.int64), dtype=dtypes.int64),
      Case("sum_float64_stays", Tensor(X.astype(np.float64)).sum(0), X.astype(np.float64).sum(0), 1e-12, 1e-12, dtype=dtypes.float64),
      Case("sum_dtype_override", Tensor(I8).sum(dtype=dtypes.int8), np.array(I8.sum(dtype=np.int8)), dtype=dtypes.int8),
      Case("sum_int32_wraps", Tensor(np.array([2**31 - 1, 1], np.int32)).sum(), np.array(-2**31, np.int32), dtype=dtypes.int32),
      Case("prod_int8_keeps", Tensor(I8).prod(1), I8.prod(1, dtype=np.int8), dtype=dtypes.int8),
      Case("prod_bool_is_all", Tensor(BOOL).prod(1), np.array([False, True]), dtype=dtypes.bool),
      Case("mean_int_is_float32", Tensor(I8).mean(1), I8.astype(np.float64).mean(1), 1e-6, 0, dtype=dtypes.float32),
      Case("mean_bool", Tensor(BOOL).mean(), np.array(5 / 6), 1e-6, 0, dtype=dtypes.float32),
      Case("var_int", Tensor(np.array([1, 2, 4], np.int32)).var(), np.array(7 / 3), 1e-6, 0, dtype=dtypes.float32),
      Case("mean_float64", Tensor(X.astype(np.float64)).mean(), X.astype(np.float64).mean(), 1e-12, 0, dtype=dtypes.float64),
      Case("max_int8", Tensor(I8).max(0), I8.max(0), dtype=dtypes.int8),
      Case("min_uint8", Tensor(U8).min(), U8.min(), dtype=dtypes.uint8),
      Case("min_bool", Tensor(BOOL).min(1), BOOL.min(1), dtype=dtypes.bool),
      Case("any_float", Tensor(np.array([0.0, -0.0, 0.5], F)).any(), np.array(True)),
      Case("all_float_zero", Tensor(np.array([1.0, -0.0], F)).all(), np.array(False)),
    ]


def edge_cases() -> list[Case]:
  with np.errstate(all="ignore"):
    return [
      Case("sum_empty_axis", Tensor(EMPTY).sum(0), np.zeros(3), 0, 0),
      Case("sum_empty_other_axis", Tensor(EMPTY).sum(1), np.zeros(0), 0, 0),
      Case("prod_empty", Tensor(EMPTY).prod(0), np.ones(3), 0, 0),
      Case("max_empty_is_-inf", Tensor(EMPTY).max(0), np.full(3, -np.inf), 0, 0),
      Case("any_empty", Tensor(EMPTY > 0).any(0), np.zeros(3, bool)),
      Case("all_empty", Tensor(EMPTY > 0).all(0), np.ones(3, bool)),
      Case("mean_empty_is_nan", Tensor(EMPTY).mean(0), np.full(3, np.nan), 0, 0),
      Case("sum_0d", Tensor(S).sum(), S, 0, 0),
      Case("sum_0d_axis0", Tensor(S).sum(0), S, 0, 0),
      Case("max_0d_axis-1", Tensor(S).max(-1, keepdim=True), S, 0, 0),
      Case("mean_0d", Tensor(S).mean(), S, 0, 0),
      Case("var_0d_correction0", Tensor(S).var(correction=0), np.array(0.0), 0, 0),
      Case("var_n_le_correction", Tensor(np.array([1.0, 3.0], F)).var(correction=2), np.array(np.inf), 0, 0),
      Case("var_correction0", Tensor(X).var(1, correction=0), X.astype(np.float64).var(1), 1e-5, 1e-6),
      Case("std_correction2", Tensor(X).std(1, correction=2), X.astype(np.float64).std(1, ddof=2), 1e-5, 1e-6),
      Case("var_mean", Tensor(X).var_mean(0), (X.astype(np.float64).var(0, ddof=1), X.mean(0)), 1e-5, 1e-6),
      Case("std_mean", Tensor(X).std_mean(1, keepdim=True), (X.astype(np.float64).std(1, ddof=1, keepdims=True), X.mean(1, keepdims=True)),
           1e-5, 1e-6),
      Case("sum_size1", Tensor(X[:1]).sum(0), X[0], 0, 0),
      Case("sum_3d_tuple", Tensor(X3).sum((0, 2)), X3.astype(np.float64).sum((0, 2)), 1e-5, 1e-6),
      Case("max_3d_neg", Tensor(X3).max((-1, -3), keepdim=True), X3.max((2, 0), keepdims=True), 0, 0),
      Case("logsumexp_inf", Tensor(np.array([[-np.inf, 0.0], [1000.0, 1000.0]], F)).logsumexp(1), np.array([0.0, 1000.0 + np.log(2)]), 1e-6, 0),
      Case("logsumexp_3d", Tensor(X3).logsumexp((0, 2)), lse(X3, (0, 2)), 1e-5, 1e-6),
    ]


def softmax_cases() -> list[Case]:
  out = []
  for axis in (0, 1, -1, -2):
    out += [Case(f"softmax[{axis}]", Tensor(X).softmax(axis), softmax(X, axis), 1e-5, 1e-7),
            Case(f"log_softmax[{axis}]", Tensor(X).log_softmax(axis), np.log(softmax(X, axis)), 1e-5, 1e-6),
            Case(f"softmin[{axis}]", Tensor(X).softmin(axis), softmax(-X, axis), 1e-5, 1e-7)]
  out += [Case("softmax_3d", Tensor(X3).softmax(1), softmax(X3, 1), 1e-5, 1e-7),
          Case("softmax_0d", Tensor(S).softmax(), np.array(1.0), 0, 0),
          Case("softmax_size1", Tensor(X[:, :1]).softmax(), np.ones((3, 1)), 0, 0),
          Case("softmax_large", Tensor(np.array([1000.0, 1001.0], F)).softmax(), softmax(np.array([1000.0, 1001.0]), 0), 1e-6, 0),
          Case("softmax_int", Tensor(np.array([1, 2, 3], np.int32)).softmax(), softmax(np.array([1.0, 2.0, 3.0]), 0), 1e-6, 0, dtype=dtypes.float32),
          Case("softmax_dtype", Tensor(X).softmax(dtype=dtypes.float64), softmax(X, -1), 1e-6, 0, dtype=dtypes.float64)]
  return out


def arg_cases() -> list[Case]:
  out = []
  for axis in (0, 1, -1):
    for keepdim in (False, True):
      out += [Case(f"argmax[{axis}|{keepdim}]", Tensor(TIES).argmax(axis, keepdim),
                   np.argmax(TIES, axis=axis, keepdims=keepdim).astype(np.int32), dtype=dtypes.int32),
              Case(f"argmin[{axis}|{keepdim}]", Tensor(TIES).argmin(axis, keepdim),
                   np.argmin(TIES, axis=axis, keepdims=keepdim).astype(np.int32), dtype=dtypes.int32)]
  out += [Case("argmax_flat", Tensor(TIES).argmax(), np.array(1, np.int32)),
          Case("argmin_flat", Tensor(TIES).argmin(), np.array(8, np.int32)),
          Case("argmax_int", Tensor(I8).argmax(1), np.argmax(I8, 1).astype(np.int32)),
          Case("argmin_uint", Tensor(U8).argmin(), np.array(2, np.int32)),
          Case("argmax_0d", Tensor(S).argmax(), np.array(0, np.int32))]
  return out


def scan_cases() -> list[Case]:
  out = []
  for name, a in (("2d", X), ("ties", TIES), ("3d", X3)):
    for axis in range(-a.ndim, a.ndim):
      out += [Case(f"cumsum[{name}|{axis}]", Tensor(a).cumsum(axis), np.cumsum(a.astype(np.float64), axis), 1e-5, 1e-5),
              Case(f"cumprod[{name}|{axis}]", Tensor(a).cumprod(axis), np.cumprod(a.astype(np.float64), axis), 1e-5, 1e-5),
              Case(f"cummax[{name}|{axis}]", Tensor(a).cummax(axis), cummax_ref(a, axis), 0, 0),
              Case(f"cummin[{name}|{axis}]", Tensor(a).cummin(axis), cummax_ref(a, axis, lowest=True), 0, 0),
              Case(f"logcumsumexp[{name}|{axis}]", Tensor(a).logcumsumexp(axis), np.logaddexp.accumulate(a.astype(np.float64), axis), 1e-5, 1e-5)]
  out += [
    Case("cumsum_int8_is_int32", Tensor(I8).cumsum(1), np.cumsum(I8.astype(np.int32), 1), dtype=dtypes.int32),
    Case("cumsum_bool", Tensor(BOOL).cumsum(1), np.cumsum(BOOL, 1).astype(np.int32), dtype=dtypes.int32),
    Case("cumprod_int", Tensor(np.array([2, -3, 4], np.int32)).cumprod(0), np.array([2, -6, -24], np.int32)),
    Case("cummax_int", Tensor(I8).cummax(1), cummax_ref(I8, 1)),
    Case("cummin_uint", Tensor(U8).cummin(0), cummax_ref(U8, 0, lowest=True)),
    Case("cumsum_0d", Tensor(S).cumsum(), S, 0, 0),
    Case("cumsum_empty", Tensor(EMPTY).cumsum(0), EMPTY, 0, 0),
    Case("cumprod_empty", Tensor(EMPTY).cumprod(1), EMPTY, 0, 0),
    Case("cummax_0d", Tensor(S).cummax(0), (S, np.array(0, np.int32)), 0, 0),
    Case("logcumsumexp_0d", Tensor(S).logcumsumexp(), S, 0, 0),
    Case("cumsum_size1", Tensor(X[:1]).cumsum(0), X[:1], 0, 0),
    Case("cummax_-inf", Tensor(np.array([-np.inf, -1.0, -np.inf], F)).cummax(0),
         (np.array([-np.inf, -1.0, -1.0]), np.array([0, 1, 1], np.int32)), 0, 0),
    Case("cumsum_odd_length", Tensor(np.arange(13, dtype=F)).cumsum(), np.cumsum(np.arange(13.0)), 0, 0),
  ]
  return out


CASES = cases_by_name(reduce_cases() + dtype_cases() + edge_cases() + softmax_cases() + arg_cases() + scan_cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  check_backend(list(CASES.values()), "opencl")


def test_axis_errors() -> None:
  t = Tensor(X)
  with pytest.raises(IndexError): t.sum(2)
  with pytest.raises(IndexError): t.cumsum(-3)
  with pytest.raises(ValueError, match="repeated"): t.sum((0, 0))
  with pytest.raises(ValueError, match="empty"): Tensor(EMPTY).argmax(0)


def test_logsumexp_and_softmax_detach_the_shift_as_tinygrad() -> None:
  from tinyspec.uop import Ops
  for t in (Tensor(X).logsumexp(1), Tensor(X).softmax(), Tensor(X).log_softmax()):
    assert Ops.DETACH in {u.op for u in t.uop.toposort()}


def test_softmax_of_bools_is_the_softmax_of_zeros_and_ones() -> None:
  # tinygrad 0.14 gives it (through its bool subtraction); the IR's SUB takes no bool, so the frontend computes in float32
  from tinyspec.frontend import Tensor
  x = np.array([[True, False, True], [False, False, False]])
  f = x.astype(np.float64)
  e = np.exp(f - f.max(1, keepdims=True))
  for got, want in ((Tensor(x).softmax(1), e / e.sum(1, keepdims=True)), (Tensor(x).log_softmax(1), np.log(e / e.sum(1, keepdims=True)))):
    assert got.dtype.name == "float32"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)

"""sort, argsort and topk (tinyspec/frontend/sort.py) against numpy's stable sort: ascending and descending, every
axis, ties, lengths that are not powers of two, ints, infinities, size-1 and empty axes, 0-d tensors."""
from __future__ import annotations

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
A = np.array([[3.0, 1.0, 2.0, 1.0, 5.0, -1.0, 0.0], [1.0, 1.0, 1.0, 0.0, np.inf, 2.0, -np.inf]], F)
B = rng(31).integers(-3, 4, (3, 5, 2)).astype(np.int32)
U8 = np.array([200, 3, 255, 0, 3], np.uint8)


def np_sort(a: np.ndarray, axis: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
  """numpy's stable sort; descending keeps equal values in their original order, as a stable descending sort does."""
  key = -a.astype(np.float64) if descending else a
  idx = np.argsort(key, axis=axis, kind="stable")
  return np.take_along_axis(a, idx, axis), idx.astype(np.int32)


def cases() -> list[Case]:
  out = []
  for name, a in (("float", A), ("int", B)):
    for axis in range(-a.ndim, a.ndim):
      for desc in (False, True):
        out.append(Case(f"sort[{name}|{axis}|{desc}]", Tensor(a).sort(axis, desc), np_sort(a, axis, desc), 0, 0))
  out += [
    Case("argsort", Tensor(A).argsort(), np_sort(A, -1, False)[1], dtype=dtypes.int32),
    Case("argsort_desc", Tensor(B).argsort(0, descending=True), np_sort(B, 0, True)[1]),
    Case("topk", Tensor(A).topk(3), tuple(x[:, :3] for x in np_sort(A, -1, True)), 0, 0),
    Case("topk_smallest", Tensor(B).topk(2, dim=1, largest=False), tuple(x[:, :2] for x in np_sort(B, 1, False))),
    Case("topk_all", Tensor(A[0]).topk(7), np_sort(A[0], 0, True), 0, 0),
    Case("topk_zero", Tensor(A).topk(0), (np.zeros((2, 0)), np.zeros((2, 0), np.int32)), 0, 0),
    Case("sort_size1", Tensor(A[:, :1]).sort(), (A[:, :1], np.zeros((2, 1), np.int32)), 0, 0),
    Case("sort_empty", Tensor(np.zeros((0, 3), F)).sort(0), (np.zeros((0, 3)), np.zeros((0, 3), np.int32)), 0, 0),
    Case("sort_0d", Tensor(np.array(2.0, F)).sort(), (np.array(2.0), np.array(0, np.int32)), 0, 0),
    Case("sort_pow2_length", Tensor(np.array([4.0, -2.0, 9.0, 0.5, 3.0, 3.0, -7.0, 1.0], F)).sort(),
         np_sort(np.array([4.0, -2.0, 9.0, 0.5, 3.0, 3.0, -7.0, 1.0], F), 0, False), 0, 0),
    Case("sort_uint8", Tensor(U8).sort(descending=True), np_sort(U8, 0, True)),
  ]
  return out


CASES = cases_by_name(cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  # a sorting network is many kernels, and PoCL builds each on its own: three cases, one of each kind
  check_backend([CASES[n] for n in ("sort[float|-1|False]", "argsort_desc", "topk")], "opencl")


def test_bad_arguments() -> None:
  with pytest.raises(ValueError): Tensor(A).topk(8)
  with pytest.raises(ValueError): Tensor(A).topk(2, sorted_=False)
  with pytest.raises(IndexError): Tensor(A).sort(2)

"""Indexing (tinyspec/frontend/indexing.py) against numpy: slices with any step (negative too), None, ..., ints,
integer tensors and lists (fancy indexing, adjacent and not, broadcast together, negative entries), on 0-d, empty and
size-1 tensors; gather, scatter and scatter_reduce against loops written out here; one_hot."""
from __future__ import annotations

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
A = np.arange(20, dtype=F).reshape(4, 5) - 7
B = rng(6).uniform(-3, 3, (3, 4, 5)).astype(F)
V = np.arange(9, dtype=np.int32) * 3 - 10
S = np.array(4.5, F)
EMPTY = np.zeros((0, 3), F)

BASIC = [
  (1,), (-1,), (slice(1, 3),), (slice(None, None, 2),), (slice(None, None, -1),), (slice(None, None, -2),),
  (slice(4, 0, -2),), (slice(-1, -4, -1),), (slice(1, None, 3),), (slice(3, 1),), (slice(-100, 100),), (slice(100, None),),
  (Ellipsis, 1), (None,), (slice(None), None, 1), (Ellipsis, None), (1, Ellipsis, None), (None, slice(None, None, -3), None),
  (slice(None, None, 3), slice(None, None, -2)), (-2, slice(4, None, -3)), (slice(2, 2),),
]
FANCY = [
  ([0, 2],), ([0, -1],), ([[0, 1], [3, 0]],), (slice(None), [1, 0, 4]), (slice(None), [[-1], [0]]), ([3, 3, 0], slice(1, 4)),
  ([0, 2], [1, 4]), ([[0], [3]], [1, 4, 2]), (slice(None, None, -1), [4, 0]), ([2], Ellipsis), (Ellipsis, [0, 0, 1]),
]
FANCY_3D = [
  ([0, 2], slice(None), [1, 4]), (slice(None), [0, 3], [1, 4]), ([1, 2], [0, 3]),
  (slice(None), slice(None, None, 2), [4, 0, 1]), ([[0, 1], [2, 2]], 1, slice(1, 3)),
]


def indexing_cases() -> list[Case]:
  out = [Case(f"basic{k}", Tensor(A)[k], A[k], 0, 0) for k in BASIC]
  out += [Case(f"basic_1d{k}", Tensor(V)[k[0]], V[k[0]]) for k in BASIC[:12]]
  out += [Case(f"fancy_list{k}", Tensor(A)[k], A[k], 0, 0) for k in FANCY]
  def as_tensors(k: tuple) -> tuple: return tuple(Tensor(np.array(i, np.int32)) if isinstance(i, list) else i for i in k)
  out += [Case(f"fancy_tensor{k}", Tensor(A)[as_tensors(k)], A[k], 0, 0) for k in FANCY]
  out += [Case(f"fancy_3d{k}", Tensor(B)[k], B[k], 0, 0) for k in FANCY_3D]
  out += [
    # an int is a basic index, applied first (tinygrad's rule), so it does not separate index tensors as numpy's ints do
    Case("fancy_int_is_basic", Tensor(B)[None, [2, 0], :, -1], B[:, :, -1][None, [2, 0], :], 0, 0),
    Case("fancy_int8_index", Tensor(A)[Tensor(np.array([3, -4], np.int8))], A[[3, -4]], 0, 0),
    Case("fancy_int64_index", Tensor(A)[:, Tensor(np.array([[4, 1]], np.int64))], A[:, [[4, 1]]], 0, 0),
    Case("fancy_0d_index", Tensor(A)[Tensor(np.array(2, np.int32))], A[2], 0, 0),
    Case("fancy_bool_values", Tensor(A > 0)[[0, 3]], (A > 0)[[0, 3]]),
    Case("fancy_int_values", Tensor(V)[[8, 0, -2]], V[[8, 0, -2]]),
    Case("fancy_empty_index", Tensor(A)[Tensor(np.zeros(0, np.int32))], A[np.zeros(0, int)], 0, 0),
    Case("fancy_out_of_range_is_zero", Tensor(A)[Tensor(np.array([1, 7], np.int32))], np.stack([A[1], np.zeros(5, F)]), 0, 0),
    Case("fancy_keeps_inf_apart", Tensor(np.array([np.inf, 1.0, np.nan], F))[[1]], np.array([1.0]), 0, 0),
    Case("scalar_none", Tensor(S)[None], S[None], 0, 0),
    Case("scalar_ellipsis", Tensor(S)[...], S[...], 0, 0),
    Case("scalar_none_none", Tensor(S)[None, ..., None], S[None, ..., None], 0, 0),
    Case("empty_slice", Tensor(EMPTY)[:, 1:], EMPTY[:, 1:], 0, 0),
    Case("empty_step", Tensor(EMPTY)[::-2, ::2], EMPTY[::-2, ::2], 0, 0),
    Case("size1", Tensor(A[:1])[0, ::-1], A[:1][0, ::-1], 0, 0),
    Case("step_3d", Tensor(B)[::-2, 1::2, ::-3], B[::-2, 1::2, ::-3], 0, 0),
  ]
  return out


def gather_ref(x: np.ndarray, dim: int, idx: np.ndarray) -> np.ndarray:
  x = x[tuple(slice(0, n) if d != dim % x.ndim else slice(None) for d, n in enumerate(idx.shape))]
  return np.take_along_axis(x, idx, dim)


def scatter_ref(x: np.ndarray, dim: int, idx: np.ndarray, src: np.ndarray, reduce: str | None = None, include_self: bool = True) -> np.ndarray:
  """torch's scatter / scatter_reduce, written as a loop over the index."""
  out = x.astype(np.float64).copy()
  dim %= x.ndim
  groups: dict[tuple, list[float]] = {}
  for pos in np.ndindex(idx.shape):
    tgt = pos[:dim] + (int(idx[pos]),) + pos[dim + 1:]
    groups.setdefault(tgt, []).append(float(src[pos]))
  for tgt, vals in groups.items():
    base = [out[tgt]] if include_self else []
    if reduce is None: out[tgt] = vals[-1]
    elif reduce == "sum": out[tgt] = sum(base + vals)
    elif reduce == "prod": out[tgt] = np.prod(base + vals)
    elif reduce == "mean": out[tgt] = np.mean(base + vals)
    elif reduce == "amax": out[tgt] = max(base + vals)
    elif reduce == "amin": out[tgt] = min(base + vals)
  return out


IDX = np.array([[0, 3, 3], [2, 0, 1]], np.int32)
SRC = rng(7).uniform(-2, 2, (2, 4)).astype(F)
SELF = rng(8).uniform(-2, 2, (4, 3)).astype(F)


def gather_scatter_cases() -> list[Case]:
  g_idx = np.array([[1, 0, 4], [-0, 2, 2]], np.int32)
  g0, g1 = np.array([[0, 3, 1], [2, 2, 0]], np.int32), np.array([[2], [0], [1]], np.int32)
  out = [
    Case("gather_0", Tensor(A).gather(0, Tensor(g0)), gather_ref(A, 0, g0), 0, 0),
    Case("gather_1", Tensor(A).gather(1, Tensor(g_idx)), gather_ref(A, 1, g_idx), 0, 0),
    Case("gather_-1", Tensor(A).gather(-1, Tensor(g_idx)), gather_ref(A, -1, g_idx), 0, 0),
    Case("gather_3d", Tensor(B).gather(1, Tensor(np.array([[[3, 0]], [[1, 1]]], np.int32))), gather_ref(B, 1, np.array([[[3, 0]], [[1, 1]]])), 0, 0),
    Case("gather_int", Tensor(V.reshape(3, 3)).gather(1, Tensor(g1)), gather_ref(V.reshape(3, 3), 1, g1)),
    Case("gather_bool", Tensor(A > 0).gather(1, Tensor(g_idx)), gather_ref(A > 0, 1, g_idx)),
    Case("one_hot", Tensor(np.array([0, 3, 1], np.int32)).one_hot(4), np.eye(4, dtype=np.int32)[[0, 3, 1]], dtype=dtypes.int32),
    Case("one_hot_2d", Tensor(np.array([[2], [0]], np.int32)).one_hot(3), np.eye(3, dtype=np.int32)[[[2], [0]]]),
    Case("scatter", Tensor(SELF).scatter(0, Tensor(IDX), Tensor(SRC)), scatter_ref(SELF, 0, IDX, SRC), 0, 0),
    Case("scatter_dim1", Tensor(SELF.T.copy()).scatter(1, Tensor(IDX.T.copy()), Tensor(SRC.T.copy())), scatter_ref(SELF.T, 1, IDX.T, SRC.T), 0, 0),
    Case("scatter_scalar", Tensor(SELF).scatter(0, Tensor(IDX), 9.0), scatter_ref(SELF, 0, IDX, np.full(IDX.shape, 9.0)), 0, 0),
    Case("scatter_add", Tensor(SELF).scatter(0, Tensor(IDX), 1.5, reduce="add"), scatter_ref(SELF, 0, IDX, np.full(IDX.shape, 1.5), "sum"),
         1e-6, 1e-6),
    Case("scatter_multiply", Tensor(SELF).scatter(0, Tensor(IDX), 2.0, reduce="multiply"),
         scatter_ref(SELF, 0, IDX, np.full(IDX.shape, 2.0), "prod"), 1e-6, 1e-6),
  ]
  for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
      out.append(Case(f"scatter_reduce[{reduce}|{inc}]", Tensor(SELF).scatter_reduce(0, Tensor(IDX), Tensor(SRC), reduce, include_self=inc),
                      scatter_ref(SELF, 0, IDX, SRC, reduce, inc), 1e-6, 1e-6))
  iself, isrc = np.arange(8, dtype=np.int32).reshape(4, 2), np.array([[5, -1], [7, 2]], np.int32)
  iidx = np.array([[1, 1], [1, 3]], np.int32)
  out.append(Case("scatter_reduce_int_sum", Tensor(iself).scatter_reduce(0, Tensor(iidx), Tensor(isrc), "sum"),
                  scatter_ref(iself, 0, iidx, isrc, "sum").astype(np.int32), dtype=dtypes.int32))
  out.append(Case("scatter_reduce_int_amax", Tensor(iself).scatter_reduce(0, Tensor(iidx), Tensor(isrc), "amax", include_self=False),
                  scatter_ref(iself, 0, iidx, isrc, "amax", False).astype(np.int32)))
  return out


CASES = cases_by_name(indexing_cases() + gather_scatter_cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  check_backend(list(CASES.values()), "opencl")


def test_basic_indices_build_only_views() -> None:
  from tinyspec.uop import GroupOp, Ops
  t = Tensor(A)[::-2, None, 1:4:2]
  assert {u.op for u in t.uop.toposort()} <= set(GroupOp.Movement) | {Ops.BUFFER}


@pytest.mark.parametrize("key, err", [
  ((4,), IndexError), ((-5,), IndexError), ((0, 0, 0), IndexError), ((Ellipsis, Ellipsis), IndexError), ((slice(None, None, 0),), ValueError),
  (([0.5],), IndexError), ((Tensor(np.array([1.0], F)),), IndexError), (("a",), IndexError), ((slice(0.5, 2),), TypeError),
])
def test_bad_indices(key, err) -> None:
  with pytest.raises(err): Tensor(A)[key]


def test_bad_gather_scatter() -> None:
  with pytest.raises(ValueError): Tensor(A).gather(0, Tensor(np.array([0], np.int32)))
  with pytest.raises(ValueError): Tensor(SELF).scatter_reduce(0, Tensor(IDX), Tensor(SRC), "median")
  with pytest.raises(TypeError): Tensor(SELF).scatter(0, Tensor(IDX), Tensor(SRC.astype(np.float64)))
  with pytest.raises(TypeError): Tensor(np.array([1.0], F)).one_hot(2)

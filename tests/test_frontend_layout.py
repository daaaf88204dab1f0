"""Creation and layout (tinyspec/frontend/creation.py, movement.py) against numpy: linspace, eye, *_like, tril/triu,
cat, stack, repeat, repeat_interleave, roll, unfold, diagonal, flatten/unflatten, squeeze/unsqueeze, split/chunk,
transpose of any two axes, pad in every mode, meshgrid; with empty, size-1 and 0-d tensors and negative axes."""
from __future__ import annotations

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
A = rng(3).uniform(-3, 3, (3, 5)).astype(F)
B = rng(4).uniform(-3, 3, (2, 3, 4)).astype(F)
V = np.arange(7, dtype=F) - 3
I = np.arange(12, dtype=np.int32).reshape(3, 4)
EMPTY = np.zeros((0, 4), F)
S = np.array(1.5, F)


def creation_cases() -> list[Case]:
  out = [
    Case("linspace", Tensor.linspace(-1, 2, 7), np.linspace(-1, 2, 7), 1e-6, 1e-7, dtype=dtypes.float32),
    Case("linspace_down", Tensor.linspace(5, -5, 4), np.linspace(5, -5, 4), 1e-6, 1e-6),
    Case("linspace_one", Tensor.linspace(3, 9, 1), np.array([3.0]), 0, 0),
    Case("linspace_zero", Tensor.linspace(3, 9, 0), np.zeros(0), 0, 0),
    Case("linspace_int", Tensor.linspace(0, 10, 5, dtype=dtypes.int32), np.array([0, 2, 5, 7, 10], np.int32), dtype=dtypes.int32),
    Case("eye", Tensor.eye(3), np.eye(3), 0, 0, dtype=dtypes.float32),
    Case("eye_rect", Tensor.eye(2, 4), np.eye(2, 4), 0, 0),
    Case("eye_empty", Tensor.eye(0, 3), np.eye(0, 3), 0, 0),
    Case("eye_int", Tensor.eye(3, dtype=dtypes.int32), np.eye(3, dtype=np.int32), dtype=dtypes.int32),
    Case("zeros_args", Tensor.zeros(2, 3), np.zeros((2, 3)), 0, 0),
    Case("ones_tuple", Tensor.ones((2, 1), dtype=dtypes.int8), np.ones((2, 1), np.int8), dtype=dtypes.int8),
    Case("full_list", Tensor.full([2, 2], 7), np.full((2, 2), 7, np.int32), dtype=dtypes.int32),
    Case("full_like", Tensor(A).full_like(2.5), np.full(A.shape, 2.5), 0, 0, dtype=dtypes.float32),
    Case("full_like_dtype", Tensor(A).full_like(3, dtype=dtypes.int32), np.full(A.shape, 3, np.int32), dtype=dtypes.int32),
    Case("zeros_like_int", Tensor(I).zeros_like(), np.zeros_like(I), dtype=dtypes.int32),
    Case("ones_like_0d", Tensor(S).ones_like(), np.array(1.0), 0, 0),
    Case("ones_like_empty", Tensor(EMPTY).ones_like(), np.ones((0, 4)), 0, 0),
  ]
  for d in (-2, -1, 0, 1, 3, 9):
    out += [Case(f"tril[{d}]", Tensor(A).tril(d), np.tril(A, d), 0, 0), Case(f"triu[{d}]", Tensor(A).triu(d), np.triu(A, d), 0, 0)]
  out += [Case("tril_batched", Tensor(B).tril(), np.tril(B), 0, 0), Case("triu_batched", Tensor(B).triu(1), np.triu(B, 1), 0, 0),
          Case("triu_int", Tensor(I).triu(), np.triu(I)), Case("tril_bool", Tensor(I > 4).tril(), np.tril(I > 4)),
          Case("tril_empty", Tensor(EMPTY).tril(), np.tril(EMPTY), 0, 0)]
  return out


def join_cases() -> list[Case]:
  negz = np.array([-0.0, 1.0], F)
  C = rng(5).uniform(-1, 1, (3, 2)).astype(F)
  return [
    Case("cat_0", Tensor.cat(Tensor(A), Tensor(A[:1]), dim=0), np.concatenate([A, A[:1]], 0), 0, 0),
    Case("cat_1", Tensor(A).cat(Tensor(C), Tensor(A), dim=1), np.concatenate([A, C, A], 1), 0, 0),
    Case("cat_neg", Tensor(B).cat(Tensor(B[..., :1]), dim=-1), np.concatenate([B, B[..., :1]], -1), 0, 0),
    Case("cat_empty_piece", Tensor(EMPTY).cat(Tensor(A[:, :4]), dim=0), np.concatenate([EMPTY, A[:, :4]], 0), 0, 0),
    Case("cat_single", Tensor.cat(Tensor(A)), A, 0, 0),
    Case("cat_bool", Tensor(I > 3).cat(Tensor(I < 2), dim=1), np.concatenate([I > 3, I < 2], 1)),
    Case("cat_int", Tensor(I).cat(Tensor(I), dim=0), np.concatenate([I, I], 0)),
    Case("cat_keeps_neg_zero", Tensor(negz).cat(Tensor(negz)), np.concatenate([negz, negz]), 0, 0),
    Case("stack_0", Tensor.stack(Tensor(A), Tensor(A * 2)), np.stack([A, A * 2]), 0, 0),
    Case("stack_1", Tensor(A).stack(Tensor(A), Tensor(-A), dim=1), np.stack([A, A, -A], 1), 0, 0),
    Case("stack_-1", Tensor.stack(Tensor(A), Tensor(A), dim=-1), np.stack([A, A], -1), 0, 0),
    Case("stack_0d", Tensor.stack(Tensor(S), Tensor(S * 2), Tensor(S * 3)), np.array([1.5, 3.0, 4.5]), 0, 0),
    Case("stack_empty", Tensor.stack(Tensor(EMPTY), Tensor(EMPTY), dim=1), np.stack([EMPTY, EMPTY], 1), 0, 0),
  ]


def layout_cases() -> list[Case]:
  out = [
    Case("repeat", Tensor(A).repeat(2, 1, 3), np.tile(A, (2, 1, 3)), 0, 0),
    Case("repeat_tuple", Tensor(V).repeat((2,)), np.tile(V, 2), 0, 0),
    Case("repeat_zero", Tensor(A).repeat(0, 2), np.tile(A, (0, 2)), 0, 0),
    Case("repeat_0d", Tensor(S).repeat(3), np.tile(S, 3), 0, 0),
    Case("repeat_interleave", Tensor(A).repeat_interleave(2, 1), np.repeat(A, 2, 1), 0, 0),
    Case("repeat_interleave_flat", Tensor(A).repeat_interleave(3), np.repeat(A, 3), 0, 0),
    Case("repeat_interleave_neg", Tensor(B).repeat_interleave(2, -3), np.repeat(B, 2, -3), 0, 0),
    Case("flatten", Tensor(B).flatten(), B.reshape(-1), 0, 0),
    Case("flatten_range", Tensor(B).flatten(1), B.reshape(2, 12), 0, 0),
    Case("flatten_neg", Tensor(B).flatten(0, -2), B.reshape(6, 4), 0, 0),
    Case("flatten_0d", Tensor(S).flatten(), S.reshape(1), 0, 0),
    Case("unflatten", Tensor(B).unflatten(-1, (2, 2)), B.reshape(2, 3, 2, 2), 0, 0),
    Case("unflatten_infer", Tensor(A).unflatten(1, (-1, 1)), A.reshape(3, 5, 1), 0, 0),
    Case("squeeze", Tensor(A.reshape(3, 1, 5, 1)).squeeze(), A, 0, 0),
    Case("squeeze_dim", Tensor(A.reshape(3, 1, 5, 1)).squeeze(-1), A.reshape(3, 1, 5), 0, 0),
    Case("squeeze_not_one", Tensor(A).squeeze(0), A, 0, 0),
    Case("squeeze_0d", Tensor(S).squeeze(), S, 0, 0),
    Case("unsqueeze", Tensor(A).unsqueeze(1), A[:, None], 0, 0),
    Case("unsqueeze_end", Tensor(A).unsqueeze(-1), A[..., None], 0, 0),
    Case("unsqueeze_front_neg", Tensor(A).unsqueeze(-3), A[None], 0, 0),
    Case("unsqueeze_0d", Tensor(S).unsqueeze(0), S.reshape(1), 0, 0),
    Case("view", Tensor(A).view(5, 3), A.reshape(5, 3), 0, 0),
    Case("reshape_none", Tensor(B).reshape(None, -1), B.reshape(2, 12), 0, 0),
    Case("T", Tensor(A).T, A.T, 0, 0),
    Case("T_3d_swaps_first_two", Tensor(B).T, B.swapaxes(0, 1), 0, 0),
    Case("transpose_default", Tensor(B).transpose(), B.swapaxes(1, 0), 0, 0),
    Case("diag", Tensor(V).diag(), np.diag(V), 0, 0),
    Case("pad_to", Tensor(A).pad_to(4, None), np.pad(A, ((0, 1), (0, 0))), 0, 0),
    Case("shrink_to", Tensor(B).shrink_to(None, 2, 1), B[:, :2, :1], 0, 0),
  ]
  for a, b in [(0, 2), (2, 0), (-1, -3), (1, -1), (1, 1)]:
    out.append(Case(f"transpose[{a},{b}]", Tensor(B).transpose(a, b), np.swapaxes(B, a, b), 0, 0))
  for shifts, dims in [(2, 0), (-1, 1), (7, 1), (-13, None), (3, None), ((1, -2), (0, 1)), ((1, 1), (-1, 0))]:
    out.append(Case(f"roll[{shifts}|{dims}]", Tensor(A).roll(shifts, dims), np.roll(A, shifts, dims), 0, 0))
  out.append(Case("roll_empty", Tensor(EMPTY).roll(1, 0), EMPTY, 0, 0))
  for dim, size, step in [(0, 2, 1), (1, 3, 2), (-1, 5, 1), (1, 1, 7), (1, 2, 3), (0, 3, 3)]:
    want = np.moveaxis(np.lib.stride_tricks.sliding_window_view(A, size, axis=dim), -1, -1)
    want = np.take(want, range(0, want.shape[dim], step), axis=dim)
    out.append(Case(f"unfold[{dim},{size},{step}]", Tensor(A).unfold(dim, size, step), want, 0, 0))
  for off in (-4, -1, 0, 1, 2, 6):
    out.append(Case(f"diagonal[{off}]", Tensor(A).diagonal(off), np.diagonal(A, off), 0, 0))
  for d1, d2 in [(0, 1), (1, 2), (-1, -3), (2, 0)]:
    out.append(Case(f"diagonal_3d[{d1},{d2}]", Tensor(B).diagonal(1, d1, d2), np.diagonal(B, 1, d1, d2), 0, 0))
  return out


def split_cases() -> list[Case]:
  return [
    Case("split_int", Tensor(A).split(2, 1), tuple(A[:, i:i + 2] for i in (0, 2, 4)), 0, 0),
    Case("split_sizes", Tensor(A).split([1, 0, 2], 0), (A[:1], A[1:1], A[1:3]), 0, 0),
    Case("split_neg", Tensor(B).split(3, -1), (B[..., :3], B[..., 3:]), 0, 0),
    Case("chunk", tuple(Tensor(A).chunk(2, 1)), (A[:, :3], A[:, 3:]), 0, 0),
    Case("chunk_more_than_size", tuple(Tensor(V).chunk(10)), tuple(V[i:i + 1] for i in range(7)), 0, 0),
    Case("chunk_3", tuple(Tensor(V).chunk(3)), (V[:3], V[3:6], V[6:]), 0, 0),
  ]


def pad_cases() -> list[Case]:
  out = [
    Case("pad_pairs", Tensor(A).pad(((1, 2), (0, 3))), np.pad(A, ((1, 2), (0, 3))), 0, 0),
    Case("pad_none", Tensor(A).pad((None, (2, 2))), np.pad(A, ((0, 0), (2, 2))), 0, 0),
    Case("pad_flat", Tensor(A).pad((1, 2)), np.pad(A, ((0, 0), (1, 2))), 0, 0),
    Case("pad_flat_two_axes", Tensor(A).pad((1, 2, 3, 0)), np.pad(A, ((3, 0), (1, 2))), 0, 0),
    Case("pad_value", Tensor(A).pad(((1, 1), (1, 1)), value=-7.5), np.pad(A, 1, constant_values=-7.5), 0, 0),
    Case("pad_value_int", Tensor(I).pad(((0, 1), (2, 0)), value=9), np.pad(I, ((0, 1), (2, 0)), constant_values=9)),
    Case("pad_value_inf", Tensor(A).pad(((1, 0), None), value=-np.inf), np.pad(A, ((1, 0), (0, 0)), constant_values=-np.inf), 0, 0),
    Case("pad_negative_crops", Tensor(A).pad(((-1, 2), (1, -2))), np.pad(A[1:, :3], ((0, 2), (1, 0))), 0, 0),
    Case("pad_larger_than_input", Tensor(V[:2]).pad(((5, 6),)), np.pad(V[:2], (5, 6)), 0, 0),
    Case("pad_empty", Tensor(EMPTY).pad(((1, 1), (0, 0)), value=2.0), np.pad(EMPTY, ((1, 1), (0, 0)), constant_values=2.0), 0, 0),
    Case("pad_0d", Tensor(S).pad(()), S, 0, 0),
  ]
  for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
    for p in [((1, 2), (2, 0)), ((0, 0), (4, 4)), ((2, 2), (1, 3))]:
      out.append(Case(f"pad_{mode}{p}", Tensor(A).pad(p, mode=mode), np.pad(A, p, mode=np_mode), 0, 0))
    out.append(Case(f"pad_{mode}_3d", Tensor(B).pad((1, 1, 2, 0), mode=mode), np.pad(B, ((0, 0), (2, 0), (1, 1)), mode=np_mode), 0, 0))
    # reflect and replicate pad from the whole input, then crop; circular crops first, then wraps (tinygrad's order)
    want = np.pad(A, ((0, 1), (2, 0)), mode=np_mode)[1:, :-1] if mode != "circular" else np.pad(A[1:, :4], ((0, 1), (2, 0)), mode="wrap")
    out.append(Case(f"pad_{mode}_negative", Tensor(A).pad(((-1, 1), (2, -1)), mode=mode), want, 0, 0))
  return out


def mesh_cases() -> list[Case]:
  x, y, z = np.arange(3, dtype=F), np.arange(4, dtype=F) * 10, np.arange(2, dtype=F) * 100
  return [Case("meshgrid_ij", Tensor(x).meshgrid(Tensor(y), Tensor(z)), tuple(np.meshgrid(x, y, z, indexing="ij")), 0, 0),
          Case("meshgrid_xy", Tensor(x).meshgrid(Tensor(y), indexing="xy"), tuple(np.meshgrid(x, y, indexing="xy")), 0, 0)]


CASES = cases_by_name(creation_cases() + join_cases() + layout_cases() + split_cases() + pad_cases() + mesh_cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  check_backend(list(CASES.values()), "opencl")


@pytest.mark.parametrize("call, err", [
  (lambda: Tensor(A).cat(Tensor(B)), ValueError), (lambda: Tensor.stack(Tensor(A), Tensor(A.T)), ValueError),
  (lambda: Tensor(A).pad(((3, 0), None), mode="reflect"), ValueError), (lambda: Tensor(A).pad((1,)), ValueError),
  (lambda: Tensor(A).pad(((0, 0), (6, 0)), mode="circular"), ValueError), (lambda: Tensor(A).pad((1, 1), mode="zeros"), ValueError),
  (lambda: Tensor(A).split([1, 1]), ValueError), (lambda: Tensor(A).chunk(0), ValueError), (lambda: Tensor(A).unfold(1, 6, 1), ValueError),
  (lambda: Tensor(A).unfold(1, 2, 0), ValueError), (lambda: Tensor(A).diagonal(0, 1, 1), ValueError), (lambda: Tensor(V).tril(), ValueError),
  (lambda: Tensor(A).transpose(0, 2), IndexError), (lambda: Tensor(A).unsqueeze(3), IndexError), (lambda: Tensor(A).roll((1, 2), 0), ValueError),
  (lambda: Tensor.linspace(0, 1, -1), ValueError), (lambda: Tensor.eye(-1), ValueError), (lambda: Tensor(A).repeat(2), ValueError),
])
def test_bad_arguments(call, err) -> None:
  with pytest.raises(err): call()


def test_core_storage_and_device() -> None:
  from tinyspec.uop import Ops
  t = Tensor(A)
  assert t.device == "CPU" and t.is_storage() and t[1:].is_storage() and not (t + 1).is_storage()
  c = t.copy_to("CPU:1")
  assert c.uop.op is Ops.COPY and c.device == "CPU:1" and c.shape == A.shape

"""The Tensor frontend and @function: the graphs they build and the values those graphs evaluate to."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest
from programs import PROGRAMS

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.frontend.promotion import promote
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.spec.tensor import written_slots
from tinyspec.uop import GroupOp, Ops, UOp, is_precompiled_call, storage_of

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def ops_of(t: Tensor | UOp) -> list[Ops]:
  return [u.op for u in (t.uop if isinstance(t, Tensor) else t).toposort()]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_outputs_have_expected_shapes_and_dtypes(name):
  prog = PROGRAMS[name]()
  assert prog.root.op is Ops.SINK and len(prog.root.src) == len(prog.expected)
  for u, e in zip(prog.root.src, prog.expected):
    assert u.shape == e.shape, f"{name}: shape {u.shape} != {e.shape}"
    assert u.dtype.np == e.dtype, f"{name}: dtype {u.dtype.name} != {e.dtype}"
  ids = {u.arg.id for u in prog.root.toposort() if u.op is Ops.BUFFER}
  # every BUFFER is an input with data, but the storage a precompiled call allocates for its outputs (written by it)
  outs = {storage_of(c.src[1 + k]).arg.id for c in prog.root.toposort() if is_precompiled_call(c) for k in written_slots(c.src[0])}
  assert set(prog.inputs) == ids - outs and not set(prog.inputs) & outs


@pytest.mark.spec
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_is_legal_at_tensor(name):
  assert check(PROGRAMS[name]().root, Stage.TENSOR) == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_evaluates_to_expected(path):
  ns = runpy.run_path(str(path))
  root = ns["graph"]()
  assert root is ns["graph"]() and root.op is Ops.SINK
  outs = evaluate(root, ns["inputs"]())
  for o, e in zip(outs, ns["expected"](), strict=True):
    np.testing.assert_allclose(np.asarray(o).reshape(e.shape), e, rtol=1e-5, atol=1e-6)


def test_tensor_from_data_is_reshape_of_buffer():
  a = np.arange(6, dtype=np.int16).reshape(2, 3)
  t = Tensor(a)
  assert t.uop.op is Ops.RESHAPE and t.uop.src[0].op is Ops.BUFFER
  assert t.uop.src[0].arg.size == 6 and t.dtype is dtypes.int16
  buf_id = t.uop.src[0].arg.id
  np.testing.assert_array_equal(inputs_of(t.uop)[buf_id], a.reshape(-1))
  np.testing.assert_array_equal(t.numpy(), a)
  assert Tensor([1.5, 2.0]).dtype is dtypes.float32 and Tensor([1, 2]).dtype is dtypes.int32 and Tensor([True]).dtype is dtypes.bool
  assert Tensor(np.zeros(2)).dtype is dtypes.float64


def test_two_tensors_from_equal_data_have_distinct_buffers():
  a, b = Tensor([1, 2]), Tensor([1, 2])
  assert a.uop is not b.uop


def test_scalar_becomes_const_then_expand():
  t = Tensor(np.zeros((2, 3), np.float32)) + 2.0
  c = t.uop.src[1]
  assert c.op is Ops.EXPAND and c.arg == (2, 3) and c.src[0].op is Ops.CONST and c.src[0].arg == 2.0


def test_middle_axis_broadcast_uses_prepend_expand_and_permute():
  a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 1, 3))
  b = a.expand(2, 4, 3)
  assert set(ops_of(b)) - {Ops.BUFFER} <= GroupOp.Movement
  assert Ops.PERMUTE in ops_of(b)
  for u in b.uop.toposort():
    if u.op is Ops.EXPAND: assert u.shape[len(u.arg):] == u.src[0].shape
  np.testing.assert_array_equal(b.numpy(), np.broadcast_to(a.numpy(), (2, 4, 3)))


@pytest.mark.parametrize("sa,sb", [((3,), (2, 3)), ((2, 1), (1, 4)), ((4, 1, 3), (5, 1)), ((1,), ()), ((2, 1, 1), (1, 3, 1))])
def test_broadcast_matches_numpy(sa, sb):
  rng = np.random.default_rng(0)
  a, b = rng.integers(-9, 9, sa).astype(np.int32), rng.integers(-9, 9, sb).astype(np.int32)
  np.testing.assert_array_equal((Tensor(a) * Tensor(b) - Tensor(b)).numpy(), a * b - b)


def test_incompatible_broadcast_raises():
  with pytest.raises(ValueError, match="broadcast"):
    Tensor(np.zeros(3, np.float32)) + Tensor(np.zeros(4, np.float32))


@pytest.mark.parametrize("a,b,out", [
  (dtypes.int32, dtypes.float32, dtypes.float32), (dtypes.bool, dtypes.int8, dtypes.int8), (dtypes.int8, dtypes.int32, dtypes.int32),
  (dtypes.uint8, dtypes.int8, dtypes.int16), (dtypes.uint32, dtypes.int32, dtypes.int64), (dtypes.float32, dtypes.float64, dtypes.float64),
  (dtypes.uint16, dtypes.uint64, dtypes.uint64)])
def test_promotion(a, b, out):
  assert promote(a, b) is out and promote(b, a) is out


def test_scalar_dtype_follows_tensor():
  assert (Tensor([1, 2], dtypes.int8) + 1).dtype is dtypes.int8
  assert (Tensor([1, 2], dtypes.int8) * 1.5).dtype is dtypes.float32
  assert (Tensor([1.0], dtypes.float64) + 1).dtype is dtypes.float64


def test_reduce_permutes_reduced_axes_to_front():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  s = Tensor(a).sum((0, 2), keepdim=True)
  red = [u for u in s.uop.toposort() if u.op is Ops.REDUCE][0]
  assert red.arg == (Ops.ADD, 2) and red.src[0].op is Ops.PERMUTE and red.src[0].arg == (0, 2, 1)
  np.testing.assert_array_equal(s.numpy(), a.sum((0, 2), keepdims=True))


def test_matmul_is_a_composition():
  a, b = np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)
  m = Tensor(a) @ Tensor(b)
  assert m.uop.op is Ops.REDUCE and m.uop.arg[0] is Ops.ADD and Ops.MUL in ops_of(m)
  np.testing.assert_allclose(m.numpy(), a @ b)


def test_floor_div_and_mod_floor_like_python():
  a = Tensor(np.array([-7, 7, -1], np.int32))
  assert (a // 2).numpy().tolist() == [-7 // 2, 7 // 2, -1 // 2] == [-4, 3, -1]
  assert (a % 2).numpy().tolist() == [-7 % 2, 7 % 2, -1 % 2] == [1, 1, 1]


def test_getitem():
  a = np.arange(20, dtype=np.int32).reshape(4, 5)
  t = Tensor(a)
  for key in [(2,), (slice(1, 3),), (-1, slice(None, None, -1)), (Ellipsis, 3), (slice(-3, None), slice(1, -1))]:
    np.testing.assert_array_equal(t[key].numpy(), a[key])
  np.testing.assert_array_equal(t[::2].numpy(), a[::2])  # any step, as in tinygrad (tests/test_frontend_indexing.py)
  with pytest.raises(IndexError, match="out of range"):
    t[4]


def test_pad_and_shrink_args():
  t = Tensor(np.ones((2, 3), np.float32))
  p = t.pad(((1, 0), (0, 2)))
  assert p.uop.op is Ops.PAD and p.uop.arg == ((1, 3), (0, 5))
  s = t.shrink(((0, 1), (1, 3)))
  assert s.uop.op is Ops.SHRINK and s.uop.arg == ((0, 1), (1, 2))


def test_arange_is_built_without_buffers():
  t = Tensor.arange(2, 11, 3)
  assert Ops.BUFFER not in ops_of(t)
  assert t.numpy().tolist() == [2, 5, 8]


def test_assign_chains_through_after():
  x = Tensor(np.zeros(3, np.float32))
  y = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
  base = x.uop
  x += y
  first = x.uop
  x += y
  assert first.op is Ops.AFTER and first.src[0] is base and first.src[1].op is Ops.STORE
  assert x.uop.op is Ops.AFTER and x.uop.src[0] is first
  np.testing.assert_array_equal(x.numpy(), [2.0, 4.0, 6.0])


def test_assign_to_a_computed_value_raises():
  t = Tensor(np.zeros(3, np.float32)) + 1.0
  with pytest.raises(ValueError, match="not storage"):
    t.assign(Tensor(np.ones(3, np.float32)))


def test_contiguous_and_detach_nodes():
  t = Tensor(np.ones(2, np.float32))
  assert t.contiguous().uop.op is Ops.CONTIGUOUS and t.detach().uop.op is Ops.DETACH


def test_sink_builds_root():
  a, b = Tensor([1]), Tensor([2])
  root = Tensor.sink(a, b)
  assert root.op is Ops.SINK and root.src == (a.uop, b.uop)


# ---- @function ----
@function
def _two(a: Tensor, b: Tensor):
  return a + b, a * b


def test_function_builds_value_call_with_flat_params():
  a, b = Tensor(np.ones((2, 3), np.float32)), Tensor(np.full((2, 3), 2.0, np.float32))
  s, p = _two(a, b)
  call = s.uop.src[0]
  assert s.uop.op is Ops.GETTUPLE and s.uop.arg == 0 and p.uop.arg == 1 and p.uop.src[0] is call
  assert call.op is Ops.CALL and call.src[0].op is Ops.TUPLE and call.src[1:] == (a.uop, b.uop)
  params = sorted((u.arg.slot, u.arg.size) for u in call.src[0].toposort() if u.op is Ops.PARAM)
  assert params == [(0, 6), (1, 6)]
  np.testing.assert_array_equal(s.numpy(), np.full((2, 3), 3.0))
  np.testing.assert_array_equal(p.numpy(), np.full((2, 3), 2.0))


def test_same_args_intern_to_one_call_and_different_args_do_not():
  a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
  assert _two(a, b)[0].uop is _two(a, b)[0].uop
  assert _two(a, b)[0].uop is not _two(b, a)[0].uop


def test_captured_buffer_becomes_extra_arg():
  w = Tensor(np.array([10.0, 20.0], np.float32))

  @function
  def f(x):
    return x * w

  x = Tensor(np.array([1.0, 2.0], np.float32))
  out = f(x)
  call = out.uop.src[0]
  assert len(call.src) == 3 and call.src[1] is x.uop and call.src[2] is w.uop.src[0]
  assert not any(u.op is Ops.BUFFER for u in call.src[0].toposort())
  assert {u.arg.slot for u in call.src[0].toposort() if u.op is Ops.PARAM} == {0, 1}
  np.testing.assert_array_equal(out.numpy(), [10.0, 40.0])


def test_nested_function_keeps_inner_params_in_inner_body():
  @function
  def outer(x):
    s, p = _two(x, x + 1.0)
    return s - p

  x = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
  out = outer(x)
  oc = out.uop.src[0]
  inner = [u for u in oc.src[0].toposort(lambda n: n.op is not Ops.CALL) if u.op is Ops.CALL]
  assert len(inner) == 1 and inner[0].src[0].op is Ops.TUPLE
  v = np.array([1.0, 2.0, 3.0])
  np.testing.assert_allclose(out.numpy(), (v + v + 1) - v * (v + 1))


def test_function_must_return_tensors():
  @function
  def bad(x):
    return 3

  with pytest.raises(TypeError, match="must return a Tensor"):
    bad(Tensor([1.0]))


def test_evaluate_of_frontend_graph_matches_numpy_method():
  a = np.random.default_rng(5).random((3, 4)).astype(np.float32)
  t = Tensor(a).softmax(0)
  root = Tensor.sink(t)
  np.testing.assert_allclose(evaluate(root, inputs_of(root))[0], t.numpy(), rtol=0, atol=0)
  np.testing.assert_allclose(t.numpy(), np.exp(a) / np.exp(a).sum(0), rtol=1e-5)


# ---- Python ints in data: converted exactly, never through a float64 or int64 intermediate ----

U64_MAX, I64_MIN, I64_MAX = 2**64 - 1, -2**63, 2**63 - 1


@pytest.mark.parametrize("values, dt", [([U64_MAX, 5], dtypes.uint64), ([[U64_MAX], [2**63]], dtypes.uint64), ([I64_MIN, I64_MAX, 0], dtypes.int64),
                                        ([2**32 - 1, 0], dtypes.uint32), ([-2**31, 2**31 - 1], dtypes.int32), ([255, True], dtypes.uint8)])
def test_int_list_keeps_exact_values(values, dt):
  t = Tensor(values, dtype=dt)
  assert t.dtype is dt and t.tolist() == [[int(v) for v in row] if isinstance(row, list) else int(row) for row in values]
  (buf_id, data), = inputs_of(t.uop).items()
  assert data.dtype == dt.np and [int(v) for v in data] == [int(v) for v in np.ravel(np.array(values, dtype=object))]


def test_extreme_ints_evaluate_exactly():
  """The reference evaluator computes on the exact values: uint64 max - 1 and int64 min + 1 stay exact."""
  u, i = Tensor([U64_MAX, 5], dtype=dtypes.uint64), Tensor([I64_MIN, I64_MAX], dtype=dtypes.int64)
  root = Tensor.sink(u - 1, i + 1, i - 1)
  du, di_up, di_down = (np.asarray(x).tolist() for x in evaluate(root, inputs_of(root)))
  assert du == [U64_MAX - 1, 4]
  assert di_up == [I64_MIN + 1, I64_MIN]  # I64_MAX + 1 wraps, as int64 arithmetic does
  assert di_down == [I64_MAX, I64_MAX - 1]


def test_mixed_int_float_list_keeps_its_ints_exact():
  assert Tensor([U64_MAX, 2.5], dtype=dtypes.uint64).tolist() == [U64_MAX, 2]


@pytest.mark.parametrize("values, dt, bad", [([-1], dtypes.uint8, -1), ([256], dtypes.uint8, 256), ([2**64], dtypes.uint64, 2**64),
                                             ([I64_MAX + 1], dtypes.int64, I64_MAX + 1), ([0, I64_MIN - 1], dtypes.int64, I64_MIN - 1),
                                             ([2**70], dtypes.uint64, 2**70), ([2**31], None, 2**31), ([U64_MAX, 0.5], dtypes.int64, U64_MAX)])
def test_int_that_does_not_fit_the_dtype_is_a_value_error(values, dt, bad):
  """An int out of the dtype's range is refused, not wrapped (tinygrad wraps; numpy 2 refuses too). With no dtype,
  an int list is int32 whatever its values."""
  name = (dt or dtypes.int32).name
  with pytest.raises(ValueError, match=rf"Tensor data {bad} does not fit in {name} \("):
    Tensor(values, dtype=dt)


def test_default_dtypes_of_python_data_are_unchanged():
  assert Tensor([1, 2]).dtype is dtypes.int32 and Tensor([True, False]).dtype is dtypes.bool
  assert Tensor([True, 2]).dtype is dtypes.int32 and Tensor([1, 2.5]).dtype is dtypes.float32
  assert Tensor([[1], [2.0]]).dtype is dtypes.float32 and Tensor([]).dtype is dtypes.float32 and Tensor(7).dtype is dtypes.int32
  assert Tensor([1, 2.5]).tolist() == [1.0, 2.5] and Tensor([1.5, -2.7], dtype=dtypes.int32).tolist() == [1, -2]
  assert Tensor([1, 2], dtype=dtypes.float64).tolist() == [1.0, 2.0] and Tensor([2, 0], dtype=dtypes.bool).tolist() == [True, False]
  with pytest.raises(TypeError, match="cannot make a Tensor"): Tensor([None])

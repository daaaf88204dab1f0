"""Tensors over several devices: the MULTI form and its spec, its meaning in the evaluator, the multi pass (per-device
ops, gathers, all-reduces), value calls on sharded tensors and their gradients, on the reference, CPU and OpenCL backends."""
from __future__ import annotations

import numpy as np
import pytest

from tinyspec import Stage, check, gradient
from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.lower.multi import MultiError
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import run
from tinyspec.semantics import EvalError, evaluate
from tinyspec.uop import Ops, UOp, kernel_calls, storage_of, walk

D = ("CPU:0", "CPU:1")
RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 4)).astype(np.float32)  # 5 rows: an uneven split (3 + 2)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def _buf(n: int, dev: str, shape: tuple) -> UOp: return UOp.buffer(dtypes.float32, n, dev).reshape(shape)


# ---- the form ----

def test_a_sharded_multi_is_its_shards_side_by_side():
  m = UOp.multi([_buf(6, "CPU:0", (2, 3)), _buf(3, "CPU:1", (1, 3))], 0)
  assert m.shape == (3, 3) and m.device == D and check(m, Stage.TENSOR) == []


@pytest.mark.parametrize("shards,axis,says", [
  ([_buf(6, "CPU:0", (2, 3)), _buf(6, "CPU:0", (2, 3))], 0, "distinct devices"),
  ([_buf(6, "CPU:0", (2, 3)), _buf(4, "CPU:1", (1, 4))], 0, "agree off axis 0"),
  ([_buf(6, "CPU:0", (2, 3)), _buf(3, "CPU:1", (1, 3))], None, "replicas have one shape"),
  ([_buf(6, "CPU:0", (2, 3)), UOp.buffer(dtypes.int32, 6, "CPU:1").reshape((2, 3))], 0, "the MULTI's dtype"),
  ([UOp.const(dtypes.float32, 1.0).expand((2, 3)), _buf(6, "CPU:1", (2, 3))], 0, "a value on one device"),
])
def test_a_malformed_multi_is_named(shards, axis, says):
  found = check(UOp.multi(shards, axis), Stage.TENSOR)
  assert [v.rule for v in found] == ["tensor.multi_shards"] and says in found[0].message


def test_a_multi_of_multis_is_refused():
  inner = UOp.multi([_buf(6, "CPU:0", (2, 3)), _buf(6, "CPU:1", (2, 3))], None)
  found = check(UOp.multi([inner, _buf(6, "CPU:2", (2, 3))], None), Stage.TENSOR)
  assert any(v.rule == "tensor.multi_shards" for v in found)


def test_no_multi_after_tensor():
  m = UOp.multi([_buf(6, "CPU:0", (2, 3)), _buf(6, "CPU:1", (2, 3))], 0)
  assert check(UOp(Ops.SINK, dtypes.void, (m,)), Stage.KERNEL_GRAPH) != []


# ---- meaning ----

def test_the_evaluator_concatenates_shards_and_refuses_replicas_that_differ():
  x = Tensor(A)
  assert np.array_equal(evaluate(x.shard(D, 0).uop, inputs_of(x.uop)), A)
  assert np.array_equal(evaluate(x.shard(D, 1).uop, inputs_of(x.uop)), A)
  bad = UOp.multi([x.uop.copy_to("CPU:0"), (x * 2).uop.copy_to("CPU:1")], None)
  with pytest.raises(EvalError, match="replica 1 differs"): evaluate(bad, inputs_of(x.uop))


# ---- the pass ----

def _programs() -> dict:
  """name -> (function of a tensor that may be sharded, numpy of the same)."""
  return {
    "elementwise": (lambda x: (x * 2 + 1).exp(), lambda a: np.exp(a * 2 + 1)),
    "reduce_other_axis": (lambda x: x.sum(1), lambda a: a.sum(1)),
    "reduce_sharded_axis": (lambda x: x.max(0), lambda a: a.max(0)),
    "reduce_all": (lambda x: x.sum(), lambda a: a.sum()),
    "matmul": (lambda x: x @ Tensor(W).shard(D), lambda a: a @ W),
    "permute": (lambda x: x.permute(1, 0) * 3, lambda a: a.T * 3),
    "reshape_split_rows": (lambda x: x.reshape(5, 2, 2).sum(2), lambda a: a.reshape(5, 2, 2).sum(2)),
    "reshape_across": (lambda x: x.reshape(4, 5).sum(1), lambda a: a.reshape(4, 5).sum(1)),
    "pad_sharded_axis": (lambda x: x.pad(((1, 1), None)), lambda a: np.pad(a, ((1, 1), (0, 0)))),
    "shrink_other_axis": (lambda x: x[:, 1:3] + 1, lambda a: a[:, 1:3] + 1),
    "expand": (lambda x: x.unsqueeze(0).expand(2, 5, 4).sum(0), lambda a: 2 * a),
    "to_one_device": (lambda x: x.to("CPU:1").sum(0), lambda a: a.sum(0)),
    "one_block_with_the_rest": (lambda x: x[0:3] * x.sum(0) + x[3:5].sum(0), lambda a: a[0:3] * a.sum(0) + a[3:5].sum(0)),
    "softmax": (lambda x: x.softmax(0), lambda a: np.exp(a - a.max(0)) / np.exp(a - a.max(0)).sum(0)),
  }


@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("name", sorted(_programs()))
def test_a_sharded_program_lowers_to_one_device_kernels_and_gives_the_one_device_result(name, axis):
  fn, ref = _programs()[name]
  root = Tensor.sink(fn(Tensor(A).shard(D, axis)))
  assert check(root, Stage.TENSOR) == []
  stages = lower(root)
  assert not any(u.op is Ops.MULTI for u in walk((stages["multi"],)))
  for c in kernel_calls(stages["rangeify"]):
    devs = {storage_of(a).arg.device for a in c.src[1:] if a.op not in (Ops.BIND, Ops.DEFINE_VAR)}
    assert len(devs) == 1, f"kernel over {devs}"
  np.testing.assert_allclose(evaluate(root, inputs_of(root))[0], ref(A.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_sharded_programs_run_on_the_backends(backend, request):
  if backend == "opencl": request.getfixturevalue("opencl")
  progs = _programs()
  root = Tensor.sink(*(progs[n][0](Tensor(A).shard(D, 0)) for n in sorted(progs)))
  for got, n in zip(run(root, inputs_of(root), backend), sorted(progs)):
    np.testing.assert_allclose(got, progs[n][1](A.astype(np.float64)), rtol=1e-5, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("backend", ["reference", "cpu", "opencl"])
def test_three_devices_run_as_three(backend, request):
  # N simulated devices, not two: an uneven split of 5 rows (2 + 2 + 1), an all-reduce of three partials, a gather to
  # the last device; OpenCL runs a context and queue per device
  if backend == "opencl": request.getfixturevalue("opencl")
  d3 = ("CPU:0", "CPU:1", "CPU:2")
  x = Tensor(A).shard(d3, 0)
  root = Tensor.sink((x * 2).sum(0), (x.exp() - x.sum(0)).sum(1), x.to("CPU:2") + 1)
  m = lower(root)["multi"]
  # each kernel on one device: the three, and CPU, where the unsharded input is and its blocks are cut before the copies
  devs = [{storage_of(a).arg.device for a in c.src[1:]} for c in kernel_calls(lower(root)["rangeify"])]
  assert all(len(d) == 1 for d in devs) and set().union(*devs) == {*d3, "CPU"}
  partials = [(u.src[0].device, u.arg) for u in walk((m,)) if u.op is Ops.COPY and u.src[0].op is Ops.REDUCE]
  for d in d3: assert {src for src, to in partials if to == d} == set(d3) - {d}  # x.sum(0): each device gets the other two partials
  got = run(root, inputs_of(root), backend)
  np.testing.assert_allclose(got[0], (A * 2).sum(0), rtol=1e-5)
  np.testing.assert_allclose(got[1], (np.exp(A) - A.sum(0)).sum(1), rtol=1e-4)
  np.testing.assert_array_equal(got[2], A + 1)


def test_a_reduce_over_the_sharded_axis_is_an_all_reduce_with_equal_replicas():
  x = Tensor(A).shard(D, 0)
  root = Tensor.sink((x - x.sum(0)).sum(1))  # each shard subtracts the column sums: both replicas are read
  m = lower(root)["multi"]
  copies = [u for u in walk((m,)) if u.op is Ops.COPY and u.src[0].op is Ops.REDUCE and u.shape == (4,)]
  assert sorted(c.arg for c in copies) == ["CPU:0", "CPU:1"]  # each device gets the other's partial sum
  np.testing.assert_allclose(evaluate(root, inputs_of(root))[0], (A - A.sum(0)).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cast", ["half", "bfloat16"])
def test_a_small_float_sum_over_the_sharded_axis_all_reduces_its_float32_partials(cast):
  # the sum accumulates in float32 and rounds to the small float once, after the all-reduce: the sharded program gives
  # the one-device program's result bit for bit (an all-reduce of rounded partials would round twice)
  big = RNG.standard_normal((16, 32)).astype(np.float32)
  sharded, one = (getattr(t, cast)().sum(0) for t in (Tensor(big).shard(D, 0), Tensor(big)))
  m = lower(Tensor.sink(sharded))["multi"]
  assert {c.dtype for c in walk((m,)) if c.op is Ops.COPY and c.src[0].op is Ops.REDUCE} == {dtypes.float32}
  for backend in ("reference", "cpu"):
    got, want = (run(Tensor.sink(r), inputs_of(Tensor.sink(r)), backend)[0] for r in (sharded, one))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), backend


def test_devices_do_not_mix():
  with pytest.raises(ValueError, match="CPU:0 and CPU:1"): Tensor(A, device="CPU:0") + Tensor(A, device="CPU:1")
  with pytest.raises(ValueError, match="one device"): Tensor(A).shard(D, 0) + Tensor(A)
  with pytest.raises(ValueError, match="two or more distinct"): Tensor(A).shard(("CPU:0", "CPU:0"), 0)
  with pytest.raises(ValueError, match="every device needs a block"): Tensor(A[:1]).shard(D, 0)
  bad = UOp(Ops.SINK, dtypes.void, (UOp.multi([_buf(6, "CPU:0", (2, 3)), _buf(6, "CPU:1", (2, 3))], 0).alu(Ops.ADD, _buf(12, "CPU", (4, 3))),))
  with pytest.raises(MultiError, match="shard the one"): lower(bad)


def test_shards_split_as_tinygrad_does():
  x = Tensor(np.zeros((7, 2), np.float32)).shard(("A", "B", "C"), 0)
  assert [s.shape[0] for s in x.uop.src] == [3, 2, 2] and x.device == ("A", "B", "C")


# ---- value calls and gradients ----

@function
def scale_exp(x, b): return (x * b).exp(), x.sum(1)


@function
def column_sums(x): return x.sum(0)


def _calls(root: UOp) -> list[tuple[str, set]]:
  m = lower(root)["multi"]
  return [(u.arg, {a.device for a in u.src[1:]}) for u in walk((m,)) if u.op is Ops.CALL and u.src[0].op is Ops.TUPLE]


def test_an_elementwise_call_runs_per_shard_and_keeps_its_sharding():
  y, s = scale_exp(Tensor(A).shard(D, 0), Tensor(W[:, 0]).shard(D))
  assert y.device == D and s.device == D
  assert sorted(_calls(Tensor.sink(y, s)), key=str) == [("scale_exp", {"CPU:0"}), ("scale_exp", {"CPU:1"})]
  got = evaluate(Tensor.sink(y, s), inputs_of(Tensor.sink(y, s)))
  np.testing.assert_allclose(got[0], np.exp(A * W[:, 0]), rtol=1e-6)
  np.testing.assert_allclose(got[1], A.sum(1), rtol=1e-5)


def test_a_call_that_reduces_across_the_split_runs_once_on_the_gathered_args():
  z = column_sums(Tensor(A).shard(D, 0))
  assert z.device == D  # its output is replicated, so it composes with the sharded world
  assert _calls(Tensor.sink(z)) == [("column_sums", {"CPU:0"})]
  np.testing.assert_allclose(evaluate(Tensor.sink(z), inputs_of(Tensor.sink(z)))[0], A.sum(0), rtol=1e-5)


def test_a_selected_shard_combines_with_tensors_over_the_devices():
  # a SHRINK to exactly one shard's block is that shard, on its device: an op with a tensor over the devices (here
  # replicated, and sharded) copies it to each device rather than refusing it, and so does a call on it
  x = Tensor(A).shard(D, 0)  # blocks of 3 and 2 rows
  y, z = Tensor(A[3:]).shard(D), Tensor(A[3:]).shard(D, 1)
  root = Tensor.sink(x[3:] + y, x[3:] * z, column_sums(x[3:]) + y.sum(0), scale_exp(x[3:], Tensor(W[:, 0]).shard(D))[1])
  assert check(root, Stage.TENSOR) == []
  assert all(len(devs) == 1 for _, devs in _calls(root))  # each call runs on one device, its args moved there
  want = [A[3:] * 2, A[3:] * A[3:], A[3:].sum(0) * 2, A[3:].sum(1)]
  for got, w in zip(evaluate(lower(root)["render"], inputs_of(root)), want): np.testing.assert_allclose(got.reshape(w.shape), w, rtol=1e-5)


def _loss(x: Tensor, b: Tensor, shard: bool) -> Tensor:
  xs, bs = (x.shard(D, 0), b.shard(D)) if shard else (x, b)
  y, s = scale_exp(xs, bs)
  return (y * y).sum() + (s * s).sum() + column_sums(xs).sum()


def test_gradients_through_calls_on_sharded_tensors_match_central_differences():
  X, B = A.astype(np.float64), W[:, 0].astype(np.float64)
  x, b = Tensor(X), Tensor(B)
  gx, gb = gradient(_loss(x, b, True).uop, [x.uop, b.uop])
  root = Tensor.sink(Tensor(gx), Tensor(gb))
  calls = _calls(root)
  assert ("scale_exp.grad" in {n for n, _ in calls}) and all(len(d) == 1 for _, d in calls)  # backward calls, each on one device
  got = evaluate(root, inputs_of(root))

  def f(Xv: np.ndarray, Bv: np.ndarray) -> float:
    r = Tensor.sink(_loss(Tensor(Xv), Tensor(Bv), False))
    return float(evaluate(r, inputs_of(r))[0])
  h = 1e-6
  num_x = np.zeros_like(X)
  for i in np.ndindex(X.shape):
    e = np.zeros_like(X); e[i] = h
    num_x[i] = (f(X + e, B) - f(X - e, B)) / (2 * h)
  num_b = np.array([(f(X, B + h * np.eye(4)[j]) - f(X, B - h * np.eye(4)[j])) / (2 * h) for j in range(4)])
  np.testing.assert_allclose(got[0], num_x, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(got[1], num_b, rtol=1e-5, atol=1e-6)
  one = Tensor.sink(*(Tensor(g) for g in gradient(_loss(x, b, False).uop, [x.uop, b.uop])))
  for g1, g2 in zip(evaluate(one, inputs_of(one)), got): np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-12)


def test_a_precompiled_call_on_a_sharded_tensor_is_refused_by_name():
  @function(precompile=True)
  def plus_one(x): return x + 1
  with pytest.raises(MultiError, match="CALL takes a tensor over"): lower(Tensor.sink(plus_one(Tensor(A).shard(D, 0))))

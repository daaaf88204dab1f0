"""The OpenCL runtime's simulated devices: each device name has a context and queue of its own, kernels run in their
device's context, buffers live in the context of the kernel using them, and values cross devices through the host."""
from __future__ import annotations

import numpy as np
import pytest
from test_devices import A, B, two_device_graph

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.runtime.cpu import prepare
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp, storage_of, walk

pytestmark = pytest.mark.spec
F32 = dtypes.float32


def _evaluate(root: UOp, inputs: dict[int, np.ndarray]):
  """(results, lowered graph, runner) of root run on OpenCL; the runner still holds its device buffers."""
  from tinyspec.runtime.opencl import OpenCLRunner
  lowered = prepare(root, backend="opencl")
  runner = OpenCLRunner.for_graph(lowered)
  return evaluate(lowered, inputs, kernel_runner=runner), lowered, runner


def _assert_buffers_in_their_contexts(runner) -> set[str]:
  """Every device buffer the runner holds was made in the context of the device it is recorded under; those devices."""
  from tinyspec.runtime.opencl import context_of
  for device, _, buf in runner.bufs.values(): assert buf.context == context_of(device).context, device
  return {device for device, _, _ in runner.bufs.values()}


def test_each_device_name_has_its_own_context_and_programs(opencl: str) -> None:
  from tinyspec.runtime import opencl as rt
  names = ["CPU:0", "CPU:1", "GPU:3"]  # the family prefix does not matter: a name is a device
  ctxs = [rt.context_of(n) for n in names]
  assert [rt.context_of(n) for n in names] == ctxs  # made once, then kept
  assert len({c.context.int_ptr for c in ctxs}) == len(names) and len({c.queue.int_ptr for c in ctxs}) == len(names)
  assert all(c.queue.context == c.context for c in ctxs)
  src = "__kernel void per_device(__global int* data0) { data0[get_global_id(0)] = 3; }\n"
  kerns = [rt.build(src, "per_device", n) for n in names]
  assert len({id(k) for k in kerns}) == len(names)  # one program per context: a kernel of one cannot run in another
  assert [k.context for k in kerns] == [c.context for c in ctxs]
  assert all(src in c.programs for c in ctxs)


def test_a_two_device_graph_runs_its_kernels_in_two_contexts(opencl: str) -> None:
  from tinyspec.runtime.opencl import context_of
  root = two_device_graph()
  got, _, runner = _evaluate(root, inputs_of(root))
  runner.close()
  assert runner.eager  # the graph has a COPY call, whose source the evaluator reads on the host
  np.testing.assert_allclose(got[0].reshape(3), (A + B).sum(0))
  np.testing.assert_allclose(got[1].reshape(2), (B * 2).sum(1))
  assert set(runner.contexts_used) == {"CPU:0", "CPU:1"} and runner.launches == 2
  assert runner.contexts_used["CPU:0"].context != runner.contexts_used["CPU:1"].context
  assert all(ctx is context_of(n) for n, ctx in runner.contexts_used.items())


def test_buffers_of_each_device_live_in_that_devices_context(opencl: str) -> None:
  """No COPY: the runner is lazy, so the buffers are still on the devices after the run, each in its own context."""
  from tinyspec.runtime.opencl import context_of
  x, y = Tensor(A, device="CPU:0"), Tensor(B, device="CPU:1")
  root = Tensor.sink((x * 2).sum(0), (y + 1).sum(1))
  got, _, runner = _evaluate(root, inputs_of(root))
  try:
    assert not runner.eager
    assert _assert_buffers_in_their_contexts(runner) == {"CPU:0", "CPU:1"}
    assert context_of("CPU:0").context != context_of("CPU:1").context
  finally: runner.close()
  np.testing.assert_allclose(got[0].reshape(3), (A * 2).sum(0))
  np.testing.assert_allclose(got[1].reshape(2), (B + 1).sum(1))


def test_a_copy_reads_what_a_kernel_of_the_other_device_wrote(opencl: str) -> None:
  x, y = Tensor(A, device="CPU:0"), Tensor(B, device="CPU:1")
  root = Tensor.sink(x + (y * 3).copy_to("CPU:0"))
  got, lowered, runner = _evaluate(root, inputs_of(root))
  runner.close()
  # the COPY's source is written by a kernel on CPU:1: it reads what that kernel left, copied back to the host
  copy = next(u for u in walk((lowered,)) if u.op is Ops.CALL and u.src[0].op is Ops.COPY)
  src = copy.src[2]
  assert src.op is Ops.AFTER and storage_of(src).arg.device == "CPU:1" and src.src[1].src[0].op is Ops.PROGRAM
  np.testing.assert_allclose(got[0].reshape(2, 3), A + B * 3)


def test_a_graph_mixing_devices_in_one_kernel_runs_on_its_outputs_device(opencl: str) -> None:
  """The lowering makes one kernel of XOR(COPY(x, "CPU:1"), x) (as the fuzzer's copy step draws): its args are on
  CPU:1 and CPU:0, and it runs on its output's device, CPU:1."""
  from tinyspec.runtime.opencl import kernel_device
  xs = np.arange(12, dtype=np.int32).reshape(3, 4)
  x = Tensor(xs, device="CPU:0").uop  # built from UOps: the frontend refuses to combine tensors of two devices
  five = UOp.const(x.dtype, 5).expand(x.shape)
  root = UOp(Ops.SINK, dtypes.void, (x.copy_to("CPU:1").alu(Ops.XOR, x.alu(Ops.ADD, five)),))
  got, lowered, runner = _evaluate(root, inputs_of(root))
  runner.close()
  mixed = [c for c in kernel_calls(lowered) if len({a.device for a in c.src[1:]}) > 1]
  assert mixed and all(kernel_device(c) == "CPU:1" == c.src[1].device for c in mixed)
  assert "CPU:1" in runner.contexts_used
  np.testing.assert_array_equal(got[0].reshape(3, 4), xs ^ (xs + 5))


def _map_kernel(name: str, out: UOp, inp: UOp, fn) -> UOp:
  """CALL(out[i] = fn(inp[i])): PARAMs on the devices of the args they stand for."""
  n = out.size
  i = UOp.range(n, 0)
  p_out, p_in = UOp.param(0, F32, n, out.device), UOp.param(1, F32, n, inp.device)
  body = UOp(Ops.SINK, src=(p_out.index(i).store(fn(p_in.index(i).load())).end(i),))
  return UOp(Ops.CALL, src=(body, out, inp), arg=name)


def test_a_buffer_another_devices_kernel_needs_moves_through_the_host(opencl: str) -> None:
  """t is written by a kernel on CPU:0 and stays there (a lazy runner copies nothing back between kernels); the next
  kernel runs on CPU:1 and reads t: t comes back to the host and into CPU:1's context, never handed over as is."""
  from tinyspec.runtime.opencl import context_of, kernel_device
  n = 6
  xs = np.arange(n, dtype=np.float32)
  x, t, out = UOp.buffer(F32, n, "CPU:0"), UOp.buffer(F32, n, "CPU:0"), UOp.buffer(F32, n, "CPU:1")
  k1 = _map_kernel("inc", t, x, lambda v: v + UOp.const(F32, 1.0))
  k2 = _map_kernel("dbl", out, t.after(k1), lambda v: v * UOp.const(F32, 2.0))
  root = UOp(Ops.SINK, src=(out.after(k2),))
  got, lowered, runner = _evaluate(root, {x.arg.id: xs})
  try:
    assert not runner.eager
    assert [kernel_device(c) for c in kernel_calls(lowered)] == ["CPU:0", "CPU:1"]
    assert set(runner.contexts_used) == {"CPU:0", "CPU:1"}
    assert _assert_buffers_in_their_contexts(runner) == {"CPU:0", "CPU:1"}
    where = {device for device, a, _ in runner.bufs.values() if a.size == n and np.array_equal(a, xs + 1)}
    assert where == {"CPU:1"}  # t's memory: moved to the device that read it last
    assert runner.copies_out == 2  # t on its way to CPU:1, then the result
  finally: runner.close()
  np.testing.assert_allclose(got[0], (xs + 1) * 2)
  assert context_of("CPU:0").context != context_of("CPU:1").context


def test_kernels_known_ahead_build_in_their_devices_context(opencl: str) -> None:
  from tinyspec.runtime import opencl as rt
  srcs = [f"__kernel void kernel_0(__global int* data0) {{ data0[get_global_id(0)] = {k}; }}\n" for k in (31, 32)]
  rt.build_many([(s, "kernel_0") for s in srcs], "CPU:5")
  ctx = rt.context_of("CPU:5")
  assert all(s in ctx.programs for s in srcs) and not any(s in rt.context_of("CPU:6").programs for s in srcs)
  assert all(rt.build(s, "kernel_0", "CPU:5").context == ctx.context for s in srcs)

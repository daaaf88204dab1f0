"""The OpenCL runtime's simulated devices: each device name has a context and queue of its own, kernels run in their
device's context, buffers live in the context of the kernel using them, and values cross devices through the host."""
from __future__ import annotations

import numpy as np
import pytest
from test_devices import A, B, two_device_graph

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, inputs_of
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


def _map_kernel(name: str, out: UOp, inp: UOp, fn) -> UOp:
  """CALL(out[i] = fn(inp[i])): PARAMs on the devices of the args they stand for."""
  n = out.size
  i = UOp.range(n, 0)
  p_out, p_in = UOp.param(0, F32, n, out.device), UOp.param(1, F32, n, inp.device)
  body = UOp(Ops.SINK, src=(p_out.index(i).store(fn(p_in.index(i).load())).end(i),))
  return UOp(Ops.CALL, src=(body, out, inp), arg=name)


def test_a_kernel_over_two_devices_is_refused_by_name(opencl: str) -> None:
  """A kernel reading CPU:0 memory into CPU:1 breaks kgraph.one_device (the lowering never makes one); the runtime names
  it rather than hand one context's buffer to another's kernel."""
  from tinyspec.runtime.opencl import kernel_device
  x, t, out = UOp.buffer(F32, 6, "CPU:0"), UOp.buffer(F32, 6, "CPU:0"), UOp.buffer(F32, 6, "CPU:1")
  k1 = _map_kernel("inc", t, x, lambda v: v + UOp.const(F32, 1.0))
  assert kernel_device(k1) == "CPU:0"
  with pytest.raises(ValueError, match="kernel 'dbl' has storage on CPU:1 and CPU:0"):
    kernel_device(_map_kernel("dbl", out, t.after(k1), lambda v: v * UOp.const(F32, 2.0)))


def test_kernels_known_ahead_build_in_their_devices_context(opencl: str) -> None:
  from tinyspec.runtime import opencl as rt
  srcs = [f"__kernel void kernel_0(__global int* data0) {{ data0[get_global_id(0)] = {k}; }}\n" for k in (31, 32)]
  rt.build_many([(s, "kernel_0") for s in srcs], "CPU:5")
  ctx = rt.context_of("CPU:5")
  assert all(s in ctx.programs for s in srcs) and not any(s in rt.context_of("CPU:6").programs for s in srcs)
  assert all(rt.build(s, "kernel_0", "CPU:5").context == ctx.context for s in srcs)

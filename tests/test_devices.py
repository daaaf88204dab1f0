"""Devices: a graph over two simulated devices ("CPU:0", "CPU:1"), with COPY moving a value between them, lowers to
per-device kernels and a copy, and runs on the reference, CPU and OpenCL backends."""
from __future__ import annotations

import numpy as np
import pytest

from tinyspec import Stage, check
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import run
from tinyspec.uop import Ops, UOp, kernel_calls, storage_of, walk

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 0.5, np.float32)


def two_device_graph() -> UOp:
  x, y = Tensor(A, device="CPU:0"), Tensor(B, device="CPU:1")
  return Tensor.sink((x + y.copy_to("CPU:0")).sum(0), (y * 2).sum(1))


@pytest.mark.parametrize("backend", ["reference", "cpu", "opencl"])
def test_a_graph_over_two_devices_runs_per_device(backend, request):
  if backend == "opencl": request.getfixturevalue("opencl")
  root = two_device_graph()
  assert check(root, Stage.TENSOR) == []
  got = run(root, inputs_of(root), backend)
  np.testing.assert_allclose(got[0], (A + B).sum(0))
  np.testing.assert_allclose(got[1], (B * 2).sum(1))


def test_each_kernel_touches_one_device_and_a_copy_crosses():
  stages = lower(two_device_graph())
  kg = stages["rangeify"]
  devices = [{storage_of(a).arg.device for a in c.src[1:]} for c in kernel_calls(kg)]
  assert sorted(map(sorted, devices)) == [["CPU:0"], ["CPU:1"]]
  copies = [u for u in walk((kg,)) if u.op is Ops.CALL and u.src[0].op is Ops.COPY]
  assert len(copies) == 1 and copies[0].src[0].arg == "CPU:0" and storage_of(copies[0].src[2]).arg.device == "CPU:1"

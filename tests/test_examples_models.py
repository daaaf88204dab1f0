"""The model examples (examples/cnn.py: a CNN's forward and backward pass; examples/transformer.py: one transformer
block with a loss and a gradient; examples/embedding_bag.py: an embedding bag and its backward, a scatter-add through
atomics, also sharded over two devices; examples/data_parallel_mlp.py: a training step over two devices) agree with
their numpy computation on the reference evaluator, the CPU backend and OpenCL, and the
`tinyspec check` and `tinyspec run` verbs accept them."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

from tinyspec.runtime import run
from tinyspec.spec import Stage, check

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["cnn", "transformer", "embedding_bag", "data_parallel_mlp"]


def load(name: str) -> dict:
  return runpy.run_path(str(ROOT / "examples" / f"{name}.py"))


def agree(ns: dict, outs: list) -> None:
  for i, (o, e) in enumerate(zip(outs, ns["expected"](), strict=True)):
    np.testing.assert_allclose(np.asarray(o).reshape(e.shape), e, rtol=1e-4, atol=2e-6, err_msg=f"output {i}")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_model_agrees_with_numpy(name: str, backend: str) -> None:
  ns = load(name)
  root = ns["graph"]()
  assert check(root, Stage.TENSOR) == []
  agree(ns, run(root, ns["inputs"](), backend))


@pytest.mark.parametrize("name", MODELS)
def test_model_agrees_with_numpy_on_opencl(name: str, opencl) -> None:
  ns = load(name)
  agree(ns, run(ns["graph"](), ns["inputs"](), "opencl"))


@pytest.mark.parametrize("name", MODELS)
def test_cli_checks_and_runs_the_model(name: str, capsys) -> None:
  from tinyspec.cli import main
  path = str(ROOT / "examples" / f"{name}.py")
  assert main(["check", path]) == 0
  assert main(["run", path]) == 0


def test_embedding_bag_backward_scatters_with_atomics() -> None:
  # the table's gradient is no one-hot sum over the vocabulary once lowered: one kernel of ATOMIC adds, one per position
  from tinyspec.lower.pipeline import lower
  from tinyspec.uop import Ops, kernel_calls, walk
  stages = lower(load("embedding_bag")["graph"]())
  atomics = [u for c in kernel_calls(stages["render"]) for u in walk((c.src[0],)) if u.op is Ops.ATOMIC]
  assert len(atomics) == 1 and atomics[0].arg is Ops.ADD
  dense = lower(load("embedding_bag")["graph"](), scatter="dense")
  assert not any(u.op is Ops.ATOMIC for c in kernel_calls(dense["render"]) for u in walk((c.src[0],)))


BACKENDS = ["reference", "cpu", "opencl"]


def _run(backend: str, request, root, inputs) -> list:
  if backend == "opencl": request.getfixturevalue("opencl")
  return run(root, inputs, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sharded_embedding_bag_agrees_with_one_device_and_numpy(backend: str, request) -> None:
  ns = load("embedding_bag")
  root = ns["sharded_graph"]()
  assert check(root, Stage.TENSOR) == []
  got = _run(backend, request, root, ns["sharded_inputs"]())
  agree(ns, got)
  for a, b in zip(got, run(ns["graph"](), ns["inputs"](), backend)): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sharded_embedding_backward_is_one_atomic_kernel_per_device() -> None:
  from tinyspec.lower.pipeline import lower
  from tinyspec.uop import Ops, kernel_calls, storage_of, walk
  calls = kernel_calls(lower(load("embedding_bag")["sharded_graph"]())["render"])
  atomic = [c for c in calls if any(u.op is Ops.ATOMIC for u in walk((c.src[0],)))]
  assert sorted(d for c in atomic for d in {storage_of(a).arg.device for a in c.src[1:]}) == ["CPU:0", "CPU:1"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_parallel_step_agrees_with_one_device_and_its_replicas_are_equal(backend: str, request) -> None:
  ns = load("data_parallel_mlp")
  got = _run(backend, request, ns["graph"](), ns["inputs"]())
  agree(ns, got)
  for a, b in zip(got[1:5], got[5:9]): assert np.array_equal(a, b)  # the update is the same on both devices, bit for bit
  one = run(ns["one_device_graph"](), ns["one_device_inputs"](), backend)
  for a, b in zip(got, one): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_data_parallel_gradients_are_all_reduced() -> None:
  # every weight's gradient is a sum over the batch, which is split: each device gets the other's partial sum
  from tinyspec.lower.pipeline import lower
  from tinyspec.uop import Ops, walk
  m = lower(load("data_parallel_mlp")["graph"]())["multi"]
  # (the shapes sorted: a matmul's gradient may be reduced in the transposed layout)
  moved = {(u.src[0].device, u.arg, tuple(sorted(u.shape))) for u in walk((m,)) if u.op is Ops.COPY and u.src[0].op is Ops.REDUCE}
  for shape in [(5, 16), (16,), (3, 16), (3,)]:
    assert {("CPU:0", "CPU:1", shape), ("CPU:1", "CPU:0", shape)} <= moved, f"no all-reduce of a {shape} gradient"

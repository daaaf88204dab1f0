"""The model examples (examples/cnn.py: a CNN's forward and backward pass; examples/transformer.py: one transformer
block with a loss and a gradient; examples/embedding_bag.py: an embedding bag and its backward, a scatter-add through
atomics) agree with their numpy computation on the reference evaluator, the CPU backend and OpenCL, and the
`tinyspec check` and `tinyspec run` verbs accept them."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

from tinyspec.runtime import run
from tinyspec.spec import Stage, check

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["cnn", "transformer", "embedding_bag"]


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

"""The model examples (examples/cnn.py: a CNN's forward and backward pass; examples/transformer.py: one transformer
block with a loss and a gradient) agree with their numpy computation on the reference evaluator, the CPU backend and
OpenCL, and the `tinyspec check` and `tinyspec run` verbs accept them."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

from tinyspec.runtime import run
from tinyspec.spec import Stage, check

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["cnn", "transformer"]


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

"""Runtimes: run a graph on a backend and get what semantics.evaluate would give.

    run(root, inputs=None, backend="cpu", **options)

backend "reference" is semantics.evaluate itself; "cpu" compiles C (tinyspec.runtime.cpu; option `compiler`: gcc,
clang or tcc); "opencl" runs OpenCL C on PoCL (tinyspec.runtime.opencl; pyopencl is imported only when asked for). Other options
are lowering options (opts, int_dtype, callify, realize) for graphs that are not lowered yet.
"""
from __future__ import annotations

import numpy as np

from tinyspec.runtime import cpu, opencl
from tinyspec.semantics import evaluate
from tinyspec.uop import UOp

BACKENDS = ("reference", "cpu", "opencl")


def run(root: UOp, inputs: dict[int, np.ndarray] | None = None, backend: str = "cpu", **options) -> list[np.ndarray | None] | np.ndarray:
  """The outputs of root (as evaluate returns them) computed on backend."""
  if backend == "reference":
    if options: raise TypeError(f"the reference backend takes no options, got {sorted(options)}")
    return evaluate(root, inputs)
  if backend == "cpu":
    return cpu.run(root, inputs, **options)
  if backend == "opencl":
    return opencl.run(root, inputs, **options)
  raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")

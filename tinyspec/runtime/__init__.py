"""Runtimes: run a graph on a backend and get what semantics.evaluate would give.

    run(root, inputs=None, backend="cpu", **options)

backend "reference" is semantics.evaluate itself; "cpu" compiles C (tinyspec.runtime.cpu; option `compiler`: gcc,
clang or tcc); "opencl" runs OpenCL C on PoCL (tinyspec.runtime.opencl, imported only when asked for). Other options
are lowering options (opts, int_dtype, callify, realize) for graphs that are not lowered yet.
"""
from __future__ import annotations

import numpy as np

from tinyspec.uop import UOp

BACKENDS = ("reference", "cpu", "opencl")


def run(root: UOp, inputs: dict[int, np.ndarray] | None = None, backend: str = "cpu", **options) -> list[np.ndarray | None] | np.ndarray:
  """The outputs of root (as evaluate returns them) computed on backend."""
  if backend == "reference":
    from tinyspec.semantics import evaluate
    if options: raise TypeError(f"the reference backend takes no options, got {sorted(options)}")
    return evaluate(root, inputs)
  if backend == "cpu":
    from tinyspec.runtime import cpu
    return cpu.run(root, inputs, **options)
  if backend == "opencl":
    from tinyspec.runtime import opencl
    return opencl.run(root, inputs, **options)
  raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")

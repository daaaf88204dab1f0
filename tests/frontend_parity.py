"""Parity of frontend ops with numpy: a Case is a Tensor built by the op and the value numpy (or a hand computation)
gives for it. Each case is checked alone at TENSOR and on the reference evaluator; a module's cases then run together
on the CPU backend (one SINK, one lowering with the spec checked after every pass, one compile) and on OpenCL.

Expected values never come from tinyspec: they are numpy's, or literals worked out by hand."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tinyspec.frontend import Tensor, inputs_of
from tinyspec.runtime import run
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check


OPENCL_SAMPLE = 12


@dataclass
class Case:
  name: str
  out: Tensor | tuple[Tensor, ...]
  want: Any
  rtol: float = 1e-5
  atol: float = 1e-6
  dtype: Any = None  # the dtype the output must have (a tinyspec DType), when the case pins it
  backends: tuple[str, ...] = field(default=("reference", "cpu", "opencl"))

  def outs(self) -> list[Tensor]: return list(self.out) if isinstance(self.out, tuple) else [self.out]
  def wants(self) -> list[Any]: return list(self.want) if isinstance(self.out, tuple) else [self.want]


def compare(name: str, got: np.ndarray, want: Any, rtol: float, atol: float, shape: tuple[int, ...]) -> None:
  w = np.asarray(want)
  got = np.asarray(got).reshape(shape)
  assert got.shape == w.shape, f"{name}: shape {got.shape} != {w.shape}"
  if w.dtype.kind == "f" or got.dtype.kind == "f":
    np.testing.assert_allclose(got.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
  else:
    np.testing.assert_array_equal(got, w, err_msg=name)


def check_reference(case: Case) -> None:
  """The case's graph is legal at TENSOR, has the pinned dtype, and evaluates to the expected value."""
  root = Tensor.sink(*case.outs())
  assert check(root, Stage.TENSOR) == [], f"{case.name}: {check(root, Stage.TENSOR)[:3]}"
  if case.dtype is not None: assert case.outs()[0].dtype is case.dtype, f"{case.name}: dtype {case.outs()[0].dtype.name} != {case.dtype.name}"
  got = evaluate(root, inputs_of(root))
  for t, g, w in zip(case.outs(), got, case.wants()): compare(f"{case.name} (reference)", g, w, case.rtol, case.atol, t.shape)


def check_backend(cases: list[Case], backend: str) -> None:
  """All cases as one graph on backend: lowered with every pass's spec checked, compiled once, compared. PoCL builds
  each kernel on its own and slowly, so OpenCL runs an evenly spread sample of OPENCL_SAMPLE cases (the CPU runs all)."""
  cases = [c for c in cases if backend in c.backends]
  if backend == "opencl": cases = cases[::max(1, len(cases) // OPENCL_SAMPLE)]
  outs = [t for c in cases for t in c.outs()]
  root = Tensor.sink(*outs)
  got = run(root, inputs_of(root), backend)
  i = 0
  for c in cases:
    for t, w in zip(c.outs(), c.wants()):
      compare(f"{c.name} ({backend})", got[i], w, max(c.rtol, 1e-5), max(c.atol, 1e-6), t.shape)
      i += 1


def cases_by_name(cases: list[Case]) -> dict[str, Case]:
  names = [c.name for c in cases]
  dup = {n for n in names if names.count(n) > 1}
  assert not dup, f"duplicate case names {dup}"
  return {c.name: c for c in cases}


def rng(seed: int = 0) -> np.random.Generator: return np.random.default_rng(seed)


def central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
  """d f / d x by central differences, in float64."""
  x = x.astype(np.float64)
  g = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    hi, lo = x.copy(), x.copy()
    hi[i] += eps
    lo[i] -= eps
    g[i] = (f(hi) - f(lo)) / (2 * eps)
  return g

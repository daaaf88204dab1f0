"""Hypothesis strategies of fuzz cases: every generator of fuzz.generate handed a Hypothesis-controlled Random, so
Hypothesis can shrink what it draws. Use them in your own property tests:

    @given(fuzz.generate.strategies.cases())
    def test_my_pass(case): ...

A campaign draws its cases with fuzz.generate.kinds.case_for instead, from a Random seeded per case.
"""
from __future__ import annotations

import random

from hypothesis import strategies as st

from fuzz.generate.case import Case
from fuzz.generate.edge_kernels import edge_kernel_case
from fuzz.generate.index_kernels import index_expr, kernel_case
from fuzz.generate.int_kernels import int_kernel_case
from fuzz.generate.kernels import rmw_kernel_case
from fuzz.generate.scatters import scatter_kernel_case
from fuzz.generate.shards import multi_case
from fuzz.generate.tensor import TensorGen
from tinyspec.dtype import DType
from tinyspec.uop import UOp


def cases(weights: dict[str, float] | None = None, max_nodes: int = 48, max_steps: int = 7) -> st.SearchStrategy[Case]:
  """Fuzz cases (TENSOR graph, inputs, lowering choices), shrinkable by Hypothesis."""
  return st.randoms(use_true_random=False).map(lambda r: TensorGen(r, weights, max_nodes, max_steps).case())


def tensor_graphs(**kw) -> st.SearchStrategy[UOp]:
  """Graphs legal at TENSOR (SINK roots)."""
  return cases(**kw).map(lambda c: c.root)


def index_exprs(max_ranges: int = 3) -> st.SearchStrategy[tuple[UOp, list[UOp]]]:
  """(a non-negative `index` expression, the RANGEs it uses)."""
  def build(r: random.Random) -> tuple[UOp, list[UOp]]:
    rs = [UOp.range(r.randint(1, 16), i) for i in range(r.randint(1, max_ranges))]
    return index_expr(r, rs, 4), rs
  return st.randoms(use_true_random=False).map(build)


def kernel_graphs() -> st.SearchStrategy[Case]:
  """Cases whose graph is a KERNEL_GRAPH of one kernel (kind "kernel")."""
  return st.randoms(use_true_random=False).map(kernel_case)


def rmw_kernels(dtype: DType | None = None) -> st.SearchStrategy[Case]:
  """Read-modify-write kernel cases (fuzz.generate.kernels.rmw_kernel_case)."""
  return st.randoms(use_true_random=False).map(lambda r: rmw_kernel_case(r, dtype))


def int_kernels(dtype: DType | None = None) -> st.SearchStrategy[Case]:
  """Integer kernel cases (fuzz.generate.int_kernels.int_kernel_case)."""
  return st.randoms(use_true_random=False).map(lambda r: int_kernel_case(r, dtype))


def edge_kernels(weights: dict[str, float] | None = None) -> st.SearchStrategy[Case]:
  """Edge kernel cases (fuzz.generate.edge_kernels.edge_kernel_case)."""
  return st.randoms(use_true_random=False).map(lambda r: edge_kernel_case(r, weights))


def scatters(weights: dict[str, float] | None = None) -> st.SearchStrategy[Case]:
  """Scatter kernel cases (fuzz.generate.scatters.scatter_kernel_case)."""
  return st.randoms(use_true_random=False).map(lambda r: scatter_kernel_case(r, weights))


def multi_cases(weights: dict[str, float] | None = None) -> st.SearchStrategy[Case]:
  """Sharded tensor cases (fuzz.generate.shards.multi_case)."""
  return st.randoms(use_true_random=False).map(lambda r: multi_case(r, weights))

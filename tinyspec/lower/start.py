"""Where a lowering starts: the one decision of "a kernel-level graph starts after rangeify".

A TENSOR graph runs through every pass. A kernel-level graph (a KERNEL_GRAPH, or one kernel body) skips the passes
that take TENSOR graphs (callify, rangeify) and starts at the first pass that takes what rangeify makes. Every caller
that lowers a graph from the middle (the fuzz oracles and pictures, `tinyspec lower`, the CPU and OpenCL runtimes)
asks `start_index`.
"""
from __future__ import annotations

from typing import Sequence

from tinyspec.lower.base import Pass
from tinyspec.spec import Stage
from tinyspec.spec.kgraph import KGRAPH_OPS
from tinyspec.uop import Ops, UOp, is_kernel_body

LEVELS = ("tensor", "kernel")


def graph_level(root: UOp) -> str:
  """"kernel" when root is one kernel body, or a graph of kernel CALLs that holds nothing but what a KERNEL_GRAPH holds
  (SINK, AFTER, CALL, BUFFER, PARAM, COPY, the variables calls are passed) outside its kernel bodies; "tensor" otherwise. A TENSOR graph may call an
  opaque kernel too: its other ops (views, ALU, REDUCE...) make it a tensor graph all the same."""
  if is_kernel_body(root) and not (root.op is Ops.SINK and not root.src): return "kernel"
  # a BIND arg stands in a kernel graph as one node: its DEFINE_VAR and CONST are not the graph's computation
  outer = [u for u in root.toposort(gate=lambda u: not is_kernel_body(u) and u.op is not Ops.BIND) if not is_kernel_body(u)]
  has_kernel = any(u.op is Ops.CALL and u.src and is_kernel_body(u.src[0]) for u in outer)
  return "kernel" if has_kernel and all(u.op in KGRAPH_OPS for u in outer) else "tensor"


def start_index(passes: Sequence[Pass], root: UOp, kind: str | None = None) -> int:
  """The index in passes of the first pass to run on root. kind ("tensor" or "kernel") is the graph's level when its
  maker declares it (a fuzz case, a corpus entry's KIND); None: graph_level(root) decides."""
  level = graph_level(root) if kind is None else kind
  if level not in LEVELS: raise ValueError(f"unknown graph level {level!r}; expected one of {LEVELS}")
  if level == "tensor": return 0
  for i, p in enumerate(passes):
    if p.stage_in is not Stage.TENSOR: return i
  return len(passes)

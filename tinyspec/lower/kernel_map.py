"""Walking and rebuilding the kernels of a kernel graph: the plumbing every kernel-level pass shares.

A kernel body is the src[0] of a kernel CALL: a SINK of effects (STORE, END, GROUP) at the KERNEL stage or a PROGRAM
after linearize. A CALL body may also be a SINK that is itself a kernel graph (a precompiled value call); those are
walked into. A pass may also be given one kernel body on its own instead of a whole graph.
"""
from __future__ import annotations

from typing import Callable

# kernel_calls and is_kernel_call are pure IR queries and live in the IR (what generators screen with); the passes
# import them from here with the plumbing they share
from tinyspec.uop import Ops, UOp, is_kernel_body, is_kernel_call, kernel_calls

__all__ = ["is_kernel_call", "kernel_calls", "map_kernels", "max_axis"]


def _is_body_root(root: UOp) -> bool:
  # a pass given one kernel body works on it; an empty SINK root is an empty graph (no kernels), not a kernel of its own
  return is_kernel_body(root) and not (root.op is Ops.SINK and not root.src)


def _outer_nodes(root: UOp) -> list[UOp]:
  # the walk stops at kernel bodies: their insides are the passes' business, and can be large
  return root.toposort(gate=lambda u: not is_kernel_body(u))


def map_kernels(root: UOp, fn: Callable[[UOp | None, UOp], UOp]) -> UOp:
  """The graph with each kernel body replaced by fn(call, body). When root is itself a body: fn(None, root)."""
  if _is_body_root(root): return fn(None, root)
  new: dict[UOp, UOp] = {}
  for u in _outer_nodes(root):
    if is_kernel_body(u) and u is not root: continue  # replaced where its CALL is rebuilt
    if is_kernel_call(u):
      body = fn(u, u.src[0])
      src = (body, *(new[s] for s in u.src[1:]))
    else:
      src = tuple(new[s] for s in u.src)
    new[u] = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
  return new[root]


def max_axis(root: UOp) -> int:
  """The largest RANGE axis id under root, -1 when there is none."""
  return max((u.arg.axis for u in root.toposort() if u.op is Ops.RANGE), default=-1)

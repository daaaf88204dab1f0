"""The loop structure and statement order a kernel body executes in: the order of the C code generated for it.

A kernel body becomes a list of `Item`s: a node, run once each time its block runs, or a `Loop` over a RANGE whose
body is again a list of items. A PROGRAM runs its LINEAR exactly as listed (RANGE opens a loop, END closes the
innermost open loops, one per range it lists). A KERNEL-stage SINK runs in the order the reference lowering would give
it, built here by the same rules (so the evaluator needs no lowering pass, and a test holds the two orders equal):
  1. every range-form REDUCE(value, rr...) becomes lower_reduce's accumulator form (docs/ir.md), so a reduction runs as
     the sequential accumulation the generated code does;
  2. a RANGE closed by several ENDs gets a fresh copy (a loop of its own) in every END after the first, in topological
     order, as linearize does;
  3. a node runs inside the loops of the RANGEs it depends on through no END that closes them, and outside every other
     loop (loop-invariant nodes are hoisted); an END's ranges open, in order (src[1] outermost), inside the loops the
     END itself runs in; within one loop body the items keep the order of a depth-first walk from the SINK, sources
     first, a loop placed as one item after everything it uses.
"""
from __future__ import annotations

import functools

import numpy as np

from tinyspec.dtype import dtypes
from tinyspec.loop_order import LoopOrderError, one_end_per_range, schedule
from tinyspec.semantics.alu import EvalError, reduce_identity
from tinyspec.uop import AddrSpace, BufferArg, Ops, UOp, open_ranges, substitute


class Loop:
  """One loop of a kernel: `range` runs 0..bound-1, `body` runs once per iteration."""
  __slots__ = ("range", "body", "info")

  def __init__(self, rng: UOp, body: list):
    self.range, self.body = rng, body
    self.info = None  # what the memory analysis learns about the loop, computed once


Item = UOp | Loop


def from_linear(nodes: tuple[UOp, ...]) -> list[Item]:
  """A LINEAR's instructions as nested blocks: RANGE opens a loop, END closes the innermost open loops it names."""
  root: list[Item] = []
  stack: list[list[Item]] = [root]
  open_: list[UOp] = []
  for u in nodes:
    if u.op is Ops.RANGE:
      loop = Loop(u, [])
      stack[-1].append(loop)
      stack.append(loop.body)
      open_.append(u)
      continue
    if u.op is Ops.END:
      rs = list(u.src[1:])
      if rs and open_[len(open_) - len(rs):] != rs:
        raise EvalError(u, "closes RANGEs that are not the innermost open loops of the LINEAR")
      for _ in rs:
        stack.pop()
        open_.pop()
    elif u.op is Ops.REDUCE:
      raise EvalError(u, "inside a LINEAR has no execution order; lower_reduce turns it into an accumulator loop")
    stack[-1].append(u)
  if open_: raise EvalError(open_[-1], "opens a loop that no END of the LINEAR closes")
  return root


# ---- KERNEL-stage SINK ----
def _identity(red: UOp) -> UOp:
  if red.arg not in (Ops.ADD, Ops.MUL, Ops.MAX): raise EvalError(red, f"reduces with {red.arg!r}, not one of ADD, MUL, MAX")
  return UOp.const(red.dtype, np.asarray(reduce_identity(red.arg, red.dtype.np)).item())


def expand_reduces(sink: UOp) -> UOp:
  """sink with every range-form REDUCE in lower_reduce's accumulator form (a fresh REG BUFFER per REDUCE)."""
  reds = [u for u in sink.toposort() if u.op is Ops.REDUCE]
  if not reds: return sink
  new: dict[UOp, UOp] = {}
  zero = UOp.const(dtypes.index, 0)
  for n, red in enumerate(reds):
    if isinstance(red.arg, tuple): raise EvalError(red, "tensor-form REDUCE (op, n) inside a kernel body; kernels use REDUCE(value, ranges...)")
    if not red.src: raise EvalError(red, "has no value")
    for r in red.src[1:]:
      if r.op is not Ops.RANGE: raise EvalError(red, f"reduces over a {r.op.name}, not a RANGE")
    r2 = substitute(red, new) if new else red
    value, rr = r2.src[0], r2.src[1:]
    outer = sorted(open_ranges(r2), key=lambda r: r.arg.axis)
    # a negative id cannot be any real buffer's: the accumulator is private to this evaluation
    acc = UOp(Ops.BUFFER, value.dtype, (), BufferArg(-1 - n, 1, red.device or "CPU", AddrSpace.REG))
    init = (acc.after(*outer) if outer else acc).index(zero).store(_identity(red))
    running = acc.after(init, *rr).index(zero).load()
    upd = acc.index(zero).store(running.alu(red.arg, value)).end(*rr)
    new[red] = acc.after(upd).index(zero).load()
  return substitute(sink, new)


def _order(body: UOp) -> list[UOp]:
  """The nodes of a kernel SINK in the order linearize gives them (tinyspec.loop_order), as EvalError when impossible."""
  try: return schedule(one_end_per_range(body))
  except LoopOrderError as e: raise EvalError(body, str(e)) from e


@functools.lru_cache(maxsize=1024)
def kernel_items(body: UOp) -> list[Item]:
  """The items a kernel body (kernel SINK, LINEAR, or PROGRAM) runs, in order. Cached: a body is immutable and often
  run many times (every pass of a fuzz case evaluates its kernels); callers must not change the list or its loops."""
  if body.op is Ops.PROGRAM:
    if len(body.src) >= 2 and body.src[1].op is Ops.LINEAR and body.src[1].src: return kernel_items(body.src[1])
    if not body.src: raise EvalError(body, "has no kernel sink")
    return kernel_items(body.src[0])
  if body.op is Ops.LINEAR:
    if not body.src: raise EvalError(body, "is empty")
    return from_linear(body.src)
  if body.op is Ops.SINK: return from_linear(tuple(_order(expand_reduces(body))))
  raise EvalError(body, "is not a kernel body (a SINK of effects, a LINEAR or a PROGRAM)")

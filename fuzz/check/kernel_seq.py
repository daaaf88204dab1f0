"""A plain sequential interpreter of KERNEL_GRAPH cases: one scalar at a time, loops in order, no vectorization.

It shares nothing with the reference evaluator or the lowering (only the node forms of docs/ir.md), so it is a third
opinion when the evaluator and compiled C disagree. It is slow (Python per element) and meant for small kernels.

Order: kernels run in graph order. In a kernel, effects (STORE, END, GROUP entries) run in the order of the body's
topological sort, which puts every effect after those its AFTERs wait for; END(body, r0, r1...) runs body for every
(r0, r1, ...) with r0 outermost. A value (a LOAD included) is computed when the STORE that uses it runs; a
REDUCE runs its ranges in order. Ints wrap, IDIV and MOD truncate toward zero, floats round in their own dtype.
Every effect must sit in the SINK, a GROUP or an END (as fuzz.generate.kernels builds them); lower_reduce's output, whose
init and update STOREs are reached only through AFTERs, is refused.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tinyspec.dtype import DType, truncate
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.ops import scalar
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, storage_of


def _scalar(v: Any, dt: DType) -> Any:
  if dt.is_bool: return bool(v)
  if dt.is_float: return dt.np.type(v)
  return truncate(int(v), dt)


class _Kernel:
  def __init__(self, body: UOp, mem: dict[UOp, np.ndarray], var_vals: dict[str, int] | None = None):
    self.body, self.mem = body, mem
    self.pos = {u: i for i, u in enumerate(body.toposort(lambda n: n.op is not Ops.CALL))}
    self.env: dict[UOp, int] = {}
    self.var_vals = var_vals or {}  # the variables the CALL binds, by name

  def run(self, eff: UOp) -> None:
    if eff.op in (Ops.SINK, Ops.GROUP):
      for e in sorted(eff.src, key=lambda e: self.pos[e]): self.run(e)
    elif eff.op is Ops.END: self.loop(eff.src[0], list(eff.src[1:]))
    elif eff.op is Ops.STORE:
      ix = eff.src[0]
      if len(eff.src) == 3 and not self.val(eff.src[2]): return
      if len(ix.src) == 3 and not self.val(ix.src[2]): return
      arr = self.cell(ix.src[0])
      i = self.val(ix.src[1])
      if not 0 <= i < arr.size: raise IndexError(f"STORE index {i} outside {arr.size} elements")
      arr[i] = self.val(eff.src[1])
    else: raise ValueError(f"{eff.op.name} is not an effect")

  def loop(self, body: UOp, ranges: list[UOp]) -> None:
    if not ranges:
      self.run(body)
      return
    r = ranges[0]
    for i in range(int(self.val(r.src[0]))):
      self.env[r] = i
      self.loop(body, ranges[1:])
    self.env.pop(r, None)

  def cell(self, u: UOp) -> np.ndarray:
    base = storage_of(u)
    if base not in self.mem: self.mem[base] = np.zeros(base.arg.size, dtype=base.dtype.np)  # a REG buffer
    return self.mem[base]

  def val(self, u: UOp) -> Any:
    op, dt = u.op, u.dtype
    if op is Ops.CONST: return _scalar(u.arg, dt)
    if op is Ops.RANGE: return self.env[u]
    if op is Ops.DEFINE_VAR: return _scalar(self.var_vals[u.arg.name], dt)
    if op is Ops.LOAD:
      ix = u.src[0]
      gates = [g for g in ((u.src[2] if len(u.src) == 3 else None), (ix.src[2] if len(ix.src) == 3 else None)) if g is not None]
      if not all(self.val(g) for g in gates): return self.val(u.src[1]) if len(u.src) == 3 else _scalar(0, dt)
      arr, i = self.cell(ix.src[0]), self.val(ix.src[1])
      if not 0 <= i < arr.size: raise IndexError(f"LOAD index {i} outside {arr.size} elements")
      return _scalar(arr[i].item() if dt.is_int else arr[i], dt)
    if op is Ops.REDUCE: return self.reduce(u)
    s = [self.val(x) for x in u.src]
    return alu(op, dt, u.src[0].dtype if u.src else dt, s)

  def reduce(self, u: UOp) -> Any:
    acc = {Ops.ADD: 0, Ops.MUL: 1, Ops.MAX: u.dtype.min if not u.dtype.is_float else -np.inf}[u.arg]
    acc = _scalar(acc, u.dtype)
    def go(rs: list[UOp]) -> None:
      nonlocal acc
      if not rs:
        acc = alu(u.arg, u.dtype, u.dtype, [acc, self.val(u.src[0])])
        return
      for i in range(int(self.val(rs[0].src[0]))):
        self.env[rs[0]] = i
        go(rs[1:])
    go(list(u.src[1:]))
    return acc


def alu(op: Ops, dt: DType, sd: DType, s: list[Any]) -> Any:
  """One op on scalars: the op registry's scalar meaning (tinyspec.ops.scalar), so this interpreter shares the op
  meanings with everything else and nothing of the evaluator's memory model or loop order."""
  if op in (Ops.CAST, Ops.BITCAST): v = scalar.run(op, dt, s[0], sd)
  elif op is Ops.WHERE: v = scalar.run(op, dt, *s)
  else: v = scalar.run(op, sd if op in GroupOp.Comparison else dt, *s)
  return dt.np.type(v) if dt.is_float else v


def _check_contained(body: UOp) -> None:
  """Every effect is an entry of the SINK, a GROUP or an END: one reached only through an AFTER (lower_reduce's init
  and update) has no place in the loop order this interpreter follows."""
  placed = {body}
  for u in body.toposort(lambda n: n.op is not Ops.CALL):
    if u.op in (Ops.SINK, Ops.GROUP): placed.update(u.src)
    elif u.op is Ops.END and u.src: placed.add(u.src[0])
  if (loose := [u for u in body.toposort(lambda n: n.op is not Ops.CALL) if u.op in (Ops.STORE, Ops.END, Ops.GROUP) and u not in placed]):
    raise ValueError(f"a {loose[0].op.name} is reached only through an AFTER; the sequential interpreter runs SINK, GROUP and END entries")


def run_sequential(root: UOp, inputs: dict[int, np.ndarray]) -> list[np.ndarray]:
  """The contents of root's SINK entries (storage) after running every kernel of a KERNEL_GRAPH in order."""
  mem: dict[UOp, np.ndarray] = {}
  bufs = {u.arg.id: u for u in root.toposort() if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.GLOBAL}
  for i, b in bufs.items(): mem[b] = np.array(inputs[i], dtype=b.dtype.np).copy() if i in inputs else np.zeros(b.arg.size, dtype=b.dtype.np)
  for call in kernel_calls(root):
    params = {p: mem[storage_of(call.src[1 + p.arg.slot])] for p in call.src[0].toposort(lambda n: n.op is not Ops.CALL) if p.op is Ops.PARAM}
    _check_contained(call.src[0])
    var_vals = {a.src[0].arg.name: a.src[1].arg for a in call.src[1:] if a.op is Ops.BIND}
    k = _Kernel(call.src[0], dict(params), var_vals)
    k.run(call.src[0])
  return [mem[storage_of(e)].copy() for e in root.src]

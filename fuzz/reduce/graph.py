"""Delta debugging on the DAG: shrink a failing case while its failure keeps the same signature.

Moves, tried greedily from the root down, each kept only when the smaller case is still legal at its stage, still
free of undefined behaviour (fuzz.generate.safety) and still fails with the same (oracle, stage, blamed rule):
- drop a SINK entry;
- replace a node by one of its sources of the same shape and dtype;
- inline a value call read through GETTUPLE (its body element with the args substituted for the PARAMs);
- replace a node by a CONST (expanded to its shape), or by a new input BUFFER holding its evaluated value;
- shape moves (fuzz.reduce.shapes): a shorter axis of an input, an EXPAND or a PAD margin, carried consistently
  through every movement op above it; a size-1 axis dropped; a SHRINK window moved to the start;
- kernel moves (fuzz.reduce.kernel): drop a kernel's STORE/END, a range, a kernel CALL nobody needs; simpler index
  expressions, shorter ranges, smaller buffers;
- simplify a constant (0, 1, half) and the inputs (zeros, ones, small values).
Every accepted move lowers a cost (node count first, then the sizes of values, the movement args and ranks, the size
of constants and inputs). Moves come in classes, each run to its fixed point in turn, until one round over all
classes accepts nothing: the result is a case no single move improves, a local minimum (unless the test or time
budget ran out first; `Reducer.minimal` says which).
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Callable, Iterator

import numpy as np

from fuzz.reduce.kernel import kernel_moves
from fuzz.reduce.shapes import arg_weight, shape_moves
from fuzz.generate.safety import unsafe_reason
from fuzz.generate.case import Case
from tinyspec.dtype import dtypes
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops, UOp, is_value_call, substitute, walk


def outer_nodes(root: UOp) -> list[UOp]:
  """Nodes reachable without entering a call body (their values do not depend on a PARAM), sources first."""
  return walk((root,), lambda u: u.src[1:] if is_value_call(u) else u.src)


def node_count(root: UOp) -> int:
  return len(root.toposort())


def cost(case: Case) -> tuple:
  nodes = case.root.toposort()
  consts = sum(min(abs(float(u.arg)), 1e6) for u in nodes if u.op is Ops.CONST and isinstance(u.arg, (int, float)) and math.isfinite(float(u.arg)))
  ins = sum(float(np.abs(v.astype(np.float64)).sum()) for v in case.inputs.values() if v.size)
  return (len(nodes), sum(u.size for u in nodes if u.shape_ok and u.shape is not None), arg_weight(case.root), consts, ins)


def _inline(g: UOp) -> UOp | None:
  call = g.src[0]
  if not is_value_call(call): return None
  args = call.src[1:]
  body = call.src[0].src[g.arg]
  mapping: dict[UOp, UOp] = {}
  for u in outer_nodes(body):
    if u.op is Ops.PARAM and u.arg.slot < len(args):
      a = args[u.arg.slot]
      mapping[u] = a if a.shape == (u.arg.size,) else a.reshape((u.arg.size,))
  return substitute(body, mapping)


def _drop_unused_args(call: UOp) -> UOp | None:
  """The value call without the args its body never reads (later PARAM slots renumbered)."""
  body, args = call.src[0], call.src[1:]
  params = [u for u in outer_nodes(body) if u.op is Ops.PARAM]
  used = sorted({p.arg.slot for p in params})
  if len(used) == len(args): return None
  slot = {old: new for new, old in enumerate(used)}
  mapping = {p: p.replace(arg=replace(p.arg, slot=slot[p.arg.slot])) for p in params if slot[p.arg.slot] != p.arg.slot}
  return call.replace(src=(substitute(body, mapping), *(args[k] for k in used)))


def _const_values(dt) -> list:
  if dt.is_bool: return [False, True]
  if dt.is_float: return [0.0, 1.0]
  return [0, 1]


def _fingerprint(case: Case) -> tuple:
  return (case.root, tuple((k, v.dtype.str, v.tobytes()) for k, v in sorted(case.inputs.items())))


class Reducer:
  """Shrinks a case while `fails(case)` holds. `stage` is the stage candidates must be legal at."""

  def __init__(self, fails: Callable[[Case], bool], stage: Stage = Stage.TENSOR, max_tests: int = 3000, max_seconds: float = 60.0):
    self.fails, self.stage, self.max_tests, self.max_seconds = fails, stage, max_tests, max_seconds
    self.tests = 0
    self.minimal = False           # the last reduce() ended at a local minimum, not at its budget
    self.rejected: set[tuple] = set()

  def legal(self, cand: Case) -> bool:
    if check(cand.root, self.stage): return False
    return not (cand.kind == "tensor" and unsafe_reason(cand.root, cand.inputs) is not None)

  def ok(self, cand: Case) -> bool:
    if not self.legal(cand): return False
    key = _fingerprint(cand)
    if key in self.rejected: return False
    self.tests += 1
    try: res = bool(self.fails(cand))
    except Exception:
      res = False
    if not res: self.rejected.add(key)
    return res

  def move_classes(self) -> list[Callable[[Case], Iterator[Case]]]:
    return [self.structure_moves, self.shape_candidates, self.kernel_candidates, self.value_moves]

  def candidates(self, case: Case) -> Iterator[Case]:
    """Every single move from case."""
    for moves in self.move_classes(): yield from moves(case)

  def _budget_left(self) -> bool:
    return self.tests < self.max_tests and time.perf_counter() - self.t0 < self.max_seconds

  def reduce(self, case: Case) -> Case:
    best, best_cost = case, cost(case)
    self.t0 = time.perf_counter()
    self.minimal = False
    while self._budget_left():
      round_improved = False
      for moves in self.move_classes():
        improved = True
        while improved and self._budget_left():
          improved = False
          for cand in moves(best):
            if not self._budget_left(): break
            c = cost(cand)
            if c >= best_cost: continue
            if self.ok(cand):
              best, best_cost, improved, round_improved = cand, c, True, True
              break
      if not round_improved:
        self.minimal = self._budget_left()
        break
    return best

  def improvement(self, case: Case) -> Case | None:
    """A cheaper candidate of case that still fails, None when case is locally minimal (every move tried, no budget)."""
    base = cost(case)
    for cand in self.candidates(case):
      if cost(cand) < base and self.legal(cand) and self.fails(cand): return cand
    return None

  @staticmethod
  def _with_root(case: Case, r: UOp, inputs: dict | None = None) -> Case:
    r2 = r if r.op is Ops.SINK else UOp(Ops.SINK, src=(r,))
    ins = case.inputs if inputs is None else inputs
    used = {u.arg.id for u in r2.toposort() if u.op is Ops.BUFFER}
    return replace(case, root=r2, inputs={k: v for k, v in ins.items() if k in used})

  def shape_candidates(self, case: Case) -> Iterator[Case]:
    if case.kind != "tensor": return
    for r, ins in shape_moves(case.root, case.inputs): yield self._with_root(case, r, ins)

  def kernel_candidates(self, case: Case) -> Iterator[Case]:
    if case.kind == "tensor": return
    for r, ins in kernel_moves(case.root, case.inputs): yield self._with_root(case, r, ins)

  def value_moves(self, case: Case) -> Iterator[Case]:
    root = case.root
    for n in reversed(root.toposort()):
      if n.op is Ops.CONST and isinstance(n.arg, (int, float)) and not isinstance(n.arg, bool) and n.arg not in (0, 1):
        # a NaN or an infinity has no integer part: 0 and 1 are its simpler values
        halved = [] if isinstance(n.arg, float) and not math.isfinite(n.arg) else [n.arg // 2 if isinstance(n.arg, int) else float(int(n.arg))]
        for v in (0, 1, *halved):
          yield self._with_root(case, substitute(root, {n: UOp.const(n.dtype, v)}))
    for k, arr in case.inputs.items():
      for simple in (np.zeros_like(arr), np.ones_like(arr), (np.arange(arr.size) % 3).astype(arr.dtype)):
        yield replace(case, inputs={**case.inputs, k: simple})

  def structure_moves(self, case: Case) -> Iterator[Case]:
    root = case.root
    with_root = lambda r, inputs=None: self._with_root(case, r, inputs)  # noqa: E731
    if root.op is Ops.SINK and len(root.src) > 1:
      for i in range(len(root.src)):
        yield with_root(UOp(Ops.SINK, src=root.src[:i] + root.src[i + 1:]))
    nodes = list(reversed(root.toposort()))  # users before sources: big cuts first
    outer = set(outer_nodes(root))
    if root.op is Ops.SINK and case.kind == "tensor":
      # a value under a SINK entry becomes the entry: everything above it goes
      for i, e in enumerate(root.src):
        for d in reversed(outer_nodes(e)):
          if d is e or d.op in (Ops.BUFFER, Ops.CONST, Ops.CALL, Ops.TUPLE) or not d.shape_ok or d.shape is None: continue
          if d.op is Ops.RESHAPE and d.src[0].op is Ops.BUFFER: continue
          yield with_root(UOp(Ops.SINK, src=tuple(dict.fromkeys(root.src[:i] + (d,) + root.src[i + 1:]))))
    for n in nodes:
      if n.op is Ops.CALL and n.src and (dropped := _drop_unused_args(n)) is not None: yield with_root(substitute(root, {n: dropped}))
      if n.op in (Ops.SINK, Ops.TUPLE, Ops.CALL, Ops.PARAM, Ops.BUFFER): continue
      if not n.shape_ok or n.shape is None: continue
      for s in n.src:
        if s.shape_ok and s.shape == n.shape and s.dtype is n.dtype: yield with_root(substitute(root, {n: s}))
      if n.op is Ops.RESHAPE and n.src[0].op is Ops.RESHAPE:
        x = n.src[0].src[0]
        yield with_root(substitute(root, {n: x if x.shape == n.shape else x.reshape(n.arg)}))
      if n.op is Ops.GETTUPLE and (inl := _inline(n)) is not None: yield with_root(substitute(root, {n: inl}))
      if n.op is Ops.GETTUPLE and n.src[0].op is Ops.CALL and (dropped := _drop_unused_args(n.src[0])) is not None:
        yield with_root(substitute(root, {n.src[0]: dropped}))
      if n.op is Ops.CONST or (n.op is Ops.EXPAND and n.src[0].op is Ops.CONST): continue
      if n.dtype is dtypes.void or n.op in (Ops.INDEX, Ops.RANGE, Ops.SPECIAL): continue
      for v in _const_values(n.dtype):
        c = UOp.const(n.dtype, v)
        yield with_root(substitute(root, {n: c if n.shape == () else c.expand(n.shape)}))
      if case.kind == "tensor" and n in outer and n.op is not Ops.RESHAPE:
        try:
          val = np.asarray(evaluate(n, case.copy_inputs())).reshape(-1)
        except Exception:
          val = None
        if val is not None and val.size == n.size:
          bid = max([0, *case.inputs, *(u.arg.id for u in root.toposort() if u.op is Ops.BUFFER)]) + 1
          buf = UOp.buffer(n.dtype, max(1, n.size), id=bid)
          view = buf if n.shape == (n.size,) else buf.reshape(n.shape)
          yield with_root(substitute(root, {n: view}), {**case.inputs, bid: val.astype(n.dtype.np)})


def reduce_case(case: Case, fails: Callable[[Case], bool], stage: Stage | None = None, max_tests: int = 3000, max_seconds: float = 60.0) -> Case:
  """A locally minimal case for which fails() still holds (case itself when nothing smaller does)."""
  st = stage or (Stage.TENSOR if case.kind == "tensor" else Stage.KERNEL_GRAPH)
  return Reducer(fails, st, max_tests, max_seconds).reduce(case)

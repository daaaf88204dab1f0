"""The meaning of one rewritten node on its own, for blame: did this rule application change what the node means?

A rule must replace a node by one with the same value. For a tensor-level node that value is `evaluate(node)`. For a
node inside a kernel (an index expression, a load, a value being indexed during rangeify) it is a function of the
RANGEs it uses: LocalEval evaluates it on the grid of all their values. A transient view INDEX(x, i0, ...) of
rangeify is x's tensor value at the multi-index; LOAD(INDEX(PARAM k, i)) reads the tensor the kernel context binds
to PARAM k. Anything else it cannot give a value (a LOAD of storage it does not know) makes the node unjudgeable.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from fuzz.check.agree import floats_agree, scale_of
from tinyspec.uop import GroupOp, Ops, UOp, walk

MAX_GRID = 1 << 14


class Unjudgeable(Exception):
  pass


class OutOfBounds(Exception):
  pass


def free_ranges(*nodes: UOp) -> list[UOp]:
  rs: dict[UOp, None] = {}
  for n in nodes:
    for u in n.toposort(gate=lambda u: u.op is not Ops.CALL):
      if u.op is Ops.RANGE: rs[u] = None
  return sorted(rs, key=lambda r: (r.arg.axis, id(r)))


class LocalEval:
  def __init__(self, inputs: dict[int, np.ndarray], params: dict[UOp, UOp] | None = None, ranges: list[UOp] | None = None):
    self.inputs, self.params = inputs, params or {}
    self.ranges = ranges or []
    bounds = []
    for r in self.ranges:
      b = r.src[0]
      if b.op is not Ops.CONST: raise Unjudgeable("a RANGE with a symbolic bound")
      bounds.append(max(0, int(b.arg)))
    if math.prod(bounds) > MAX_GRID: raise Unjudgeable("too many range points")
    self.grid = tuple(bounds)
    self.axis = {r: i for i, r in enumerate(self.ranges)}
    self.cache: dict[UOp, np.ndarray] = {}
    self.tensors: dict[UOp, np.ndarray] = {}

  def tensor(self, x: UOp) -> np.ndarray:
    if x not in self.tensors:
      from tinyspec.semantics import evaluate
      for u in _outer(x):
        if u.op in GroupOp.RangeForm or u.op is Ops.PARAM: raise Unjudgeable("a tensor that depends on kernel nodes")
      self.tensors[x] = np.asarray(evaluate(x, {k: v.copy() for k, v in self.inputs.items()}))
    return self.tensors[x]

  def value(self, root: UOp) -> np.ndarray:
    for u in root.toposort(gate=lambda u: not (u.op is Ops.INDEX and u.arg == "view") and u.op is not Ops.CALL):
      if u not in self.cache: self.cache[u] = self._node(u)
    return self.cache[root]

  def _full(self, a: np.ndarray) -> np.ndarray:
    return np.broadcast_to(a, self.grid) if a.shape != self.grid else a

  def _node(self, u: UOp) -> np.ndarray:
    op = u.op
    if op is Ops.RANGE:
      shp = [1] * len(self.grid)
      shp[self.axis[u]] = self.grid[self.axis[u]]
      return np.arange(self.grid[self.axis[u]], dtype=np.int64).reshape(shp)
    if op is Ops.CONST: return np.array(u.arg, dtype=u.dtype.np).reshape((1,) * len(self.grid))
    if op is Ops.INDEX and u.arg == "view":
      t = self.tensor(u.src[0]).reshape(u.src[0].shape)
      idx = [np.broadcast_to(self.value(i), self.grid).astype(np.int64) for i in u.src[1:]]
      if len(idx) != t.ndim: raise Unjudgeable("a view index of the wrong rank")
      for i, d in zip(idx, t.shape):
        if i.size and (i.min() < 0 or i.max() >= d): raise OutOfBounds(f"view index outside [0, {d})")
      return t[tuple(idx)] if idx else np.broadcast_to(t, self.grid)
    if op is Ops.LOAD:
      ix = u.src[0]
      if ix.op is not Ops.INDEX or ix.src[0] not in self.params: raise Unjudgeable("a load of unknown storage")
      flat = self.tensor(self.params[ix.src[0]]).reshape(-1)
      i = self._full(self.value(ix.src[1])).astype(np.int64)
      gate = self._full(self.value(u.src[2])) if len(u.src) > 2 else np.ones(self.grid, dtype=bool)
      if np.any(gate & ((i < 0) | (i >= flat.size))): raise OutOfBounds("load outside its buffer")
      got = flat[np.where(gate, i, 0)] if flat.size else np.zeros(self.grid, flat.dtype)
      return np.where(gate, got, self._full(self.value(u.src[1]))) if len(u.src) > 2 else got
    if op in GroupOp.Elementwise:
      from tinyspec.semantics.alu import elementwise
      vals = [self.value(s) for s in u.src]
      shp = np.broadcast_shapes(*(v.shape for v in vals))
      return elementwise(u, [np.broadcast_to(v, shp) for v in vals])
    if op is Ops.REDUCE and not isinstance(u.arg, tuple):
      from tinyspec.semantics.alu import reduce_axes
      v = self._full(self.value(u.src[0]))
      axes = tuple(self.axis[r] for r in u.src[1:])
      return np.expand_dims(reduce_axes(u, u.arg, v, axes), axes)
    raise Unjudgeable(f"{op.name} has no local value")


def _outer(root: UOp) -> list[UOp]:
  """Nodes under root, not entering call bodies nor TUPLEs (a body's PARAMs are its call's args, not kernel params; a
  precompiled call's body is a SINK, not a TUPLE)."""
  return walk((root,), lambda u: () if u.op is Ops.TUPLE else u.src[1:] if u.op is Ops.CALL else u.src)


def _as_common(a: np.ndarray) -> np.ndarray:
  if a.dtype.kind == "f": return a.astype(np.float64)
  if a.dtype.kind == "b": return a.astype(np.int64)
  return a.astype(np.int64) if a.dtype.kind == "i" else a.astype(np.uint64).astype(np.int64)


def values_differ(a: np.ndarray, b: np.ndarray) -> bool:
  """Different values (by value, not by dtype: a rewrite may change an integer width)."""
  a, b = np.asarray(a), np.asarray(b)
  try: shp = np.broadcast_shapes(a.shape, b.shape)
  except ValueError: return True
  x, y = np.broadcast_to(_as_common(a), shp), np.broadcast_to(_as_common(b), shp)
  if x.dtype.kind == "f" or y.dtype.kind == "f":
    x, y = x.astype(np.float64), y.astype(np.float64)
    return not bool(np.all(floats_agree(x, y, 1e-4, 1e-4 * (1 + scale_of(x)))))
  return not bool(np.all(x == y))


def rewrite_changes_value(before: UOp, after: UOp, inputs: dict[int, np.ndarray], ctx: Any = None) -> bool:
  """Whether a rule application changed the value of the node it rewrote. False when that cannot be judged."""
  if before.dtype.name == "void" or after.dtype.name == "void": return False
  if before.op in (Ops.STORE, Ops.END, Ops.SINK, Ops.GROUP, Ops.CALL, Ops.TUPLE): return False
  kernelish = GroupOp.RangeForm | {Ops.PARAM}
  if not any(u.op in kernelish for n in (before, after) for u in _outer(n)):
    if not (before.shape_ok and after.shape_ok) or before.shape is None or after.shape is None: return False  # ill-shaped: no value
    try:
      ev0 = LocalEval(inputs)
      return values_differ(ev0.tensor(before), ev0.tensor(after))
    except Exception:
      return False
  if before.op is Ops.AFTER: return False
  params: dict[UOp, UOp] = {}
  leaves = getattr(ctx, "leaves", None)
  if isinstance(leaves, dict):
    # a PARAM may stand for several leaves (versions of one storage): the ones the rewritten node reads come first
    seen = {u.src[0] for u in before.toposort() if u.op is Ops.INDEX and u.arg == "view"}
    for leaf, p in sorted(leaves.items(), key=lambda kv: kv[0] not in seen):
      if isinstance(leaf, UOp) and leaf.tag is None: params.setdefault(p, leaf)
  try:
    ev = LocalEval(inputs, params, free_ranges(before, after))
    try: vb = ev.value(before)
    except OutOfBounds: return False
    try: va = ev.value(after)
    except OutOfBounds: return True
    return values_differ(vb, va)
  except (Unjudgeable, KeyError, ValueError, TypeError, IndexError):
    return False
  except Exception:
    return False

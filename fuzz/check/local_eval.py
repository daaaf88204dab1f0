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

from fuzz.check.agree import float_tolerance, floats_agree, scale_of
from tinyspec.dtype import dtypes, holds_floats
from tinyspec.semantics import evaluate
from tinyspec.semantics.alu import elementwise, movement, reduce_axes
from tinyspec.semantics.kernel import evaluate_kernel
from tinyspec.uop import GroupOp, Ops, UOp, walk

MAX_GRID = 1 << 14


class Unjudgeable(Exception):
  pass


class OutOfBounds(Exception):
  pass


def range_key(r: UOp) -> tuple:
  """What makes two RANGE nodes one loop variable: axis and bound. Their kind is how the loop runs (a LOOP becomes a
  GLOBAL thread range): marking a loop global keeps the values its index takes."""
  return (r.arg.axis, r.src[0])


def free_ranges(*nodes: UOp) -> list[UOp]:
  """The loop variables the nodes use, one RANGE per range_key."""
  rs: dict[tuple, UOp] = {}
  for n in nodes:
    for u in n.toposort(gate=lambda u: u.op is not Ops.CALL):
      if u.op is Ops.RANGE: rs.setdefault(range_key(u), u)
  return sorted(rs.values(), key=lambda r: (r.arg.axis, id(r)))


class LocalEval:
  """Values of kernel nodes on the grid of their loop variables. `params` binds a PARAM to the tensor-level node whose
  value its storage holds (rangeify's leaves); `slots` gives a kernel's PARAM slot k its flat contents at kernel entry
  (a LOAD of a PARAM the kernel also writes reads them too: a rewrite that keeps the meaning of a load keeps it under
  any contents); `targets` gives a tensor-level leaf the PARAM that holds its storage, so a STORE through a view of the
  leaf, before rangeify binds it, writes that PARAM's elements."""

  def __init__(self, inputs: dict[int, np.ndarray], params: dict[UOp, UOp] | None = None, ranges: list[UOp] | None = None,
               slots: dict[int, np.ndarray] | None = None, tensors: dict[UOp, np.ndarray] | None = None,
               targets: dict[UOp, UOp] | None = None):
    self.inputs, self.params, self.slots, self.targets = inputs, params or {}, slots or {}, targets or {}
    self.ranges = ranges or []
    bounds = []
    for r in self.ranges:
      b = r.src[0]
      if b.op is not Ops.CONST: raise Unjudgeable("a RANGE with a symbolic bound")
      bounds.append(max(0, int(b.arg)))
    if math.prod(bounds) > MAX_GRID: raise Unjudgeable("too many range points")
    self.grid = tuple(bounds)
    self.axis = {range_key(r): i for i, r in enumerate(self.ranges)}
    self.cache: dict[UOp, np.ndarray] = {}
    self.tensors: dict[UOp, np.ndarray] = {} if tensors is None else tensors  # shared by the evaluations of one pass run

  def tensor(self, x: UOp) -> np.ndarray:
    if x not in self.tensors:
      for u in _outer(x):
        if u.op in GroupOp.RangeForm or u.op is Ops.PARAM: raise Unjudgeable("a tensor that depends on kernel nodes")
      self.tensors[x] = np.asarray(evaluate(x, {k: v.copy() for k, v in self.inputs.items()}))
    return self.tensors[x]

  def storage(self, p: UOp) -> np.ndarray:
    """The flat contents a LOAD reads: a PARAM's bound tensor, else its slot's contents at kernel entry."""
    if p in self.params: return self.tensor(self.params[p]).reshape(-1)
    if p.op is Ops.PARAM and p.tag is None and p.arg.slot in self.slots:
      flat = self.slots[p.arg.slot].reshape(-1)
      if flat.size != p.arg.size or flat.dtype != p.dtype.np: raise Unjudgeable("a PARAM unlike the storage of its slot")
      return flat
    raise Unjudgeable("a load of unknown storage")

  def value(self, root: UOp) -> np.ndarray:
    # a view INDEX and a LOAD evaluate what they index themselves: the storage under them has no value of its own
    for u in root.toposort(gate=lambda u: not (u.op is Ops.INDEX and u.arg == "view") and u.op not in (Ops.CALL, Ops.LOAD)):
      if u not in self.cache: self.cache[u] = self._node(u)
    return self.cache[root]

  def effects(self, root: UOp) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """What the STOREs under root do, run over the grid in row-major order, sources first: per PARAM slot written, which
    elements are written and the contents after (starting from the slot's contents at entry, else zeros)."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for u in root.toposort(gate=lambda u: u.op is not Ops.CALL):
      if u.op is not Ops.STORE: continue
      base, addr, g = self.store_points(u)
      slot = base.arg.slot
      if slot not in out:
        start = self.slots.get(slot)
        contents = start.reshape(-1).copy() if start is not None and start.size == base.arg.size else np.zeros(base.arg.size, base.dtype.np)
        out[slot] = (np.zeros(base.arg.size, dtype=bool), contents)
      written, contents = out[slot]
      v = np.broadcast_to(self._full(self.value(u.src[1])), self.grid)
      contents[addr[g]] = v[g].astype(contents.dtype)
      written[addr[g]] = True
    return out

  def store_points(self, u: UOp) -> tuple[UOp, np.ndarray, np.ndarray]:
    """What one STORE does at each grid point: its storage PARAM, the flat element addressed and whether it writes."""
    base, addr, ok = self._target(u.src[0])
    g = ok & (self._full(self.value(u.src[2])).astype(bool) if len(u.src) > 2 else True)
    if np.any(g & ((addr < 0) | (addr >= base.arg.size))): raise OutOfBounds("store outside its buffer")
    return base, addr, g

  def _target(self, t: UOp) -> tuple[UOp, np.ndarray, np.ndarray]:
    """A STORE target's storage PARAM, the flat element each grid point addresses and where it addresses one (a view's
    PAD region addresses none)."""
    if t.op is not Ops.INDEX: raise Unjudgeable("a store target that is no INDEX")
    if t.arg != "view":
      if t.src[0].op is not Ops.PARAM: raise Unjudgeable("a store into unknown storage")
      return t.src[0], self._full(self.value(t.src[1])).astype(np.int64), np.ones(self.grid, dtype=bool)
    chain, base = [], t.src[0]
    while base.op in GroupOp.Movement and base not in self.targets: chain.append(base); base = base.src[0]  # noqa: E702
    shape = base.shape
    if base.op is not Ops.PARAM: base = self.targets.get(base, base)  # a leaf: its storage, in its element order
    if base.op is not Ops.PARAM or shape is None or math.prod(shape) != base.arg.size:
      raise Unjudgeable("a store through a view of unknown storage")
    amap = np.arange(base.arg.size, dtype=np.int64).reshape(shape)
    for m in reversed(chain): amap = movement(m, amap, fill=-1)
    idx = [np.broadcast_to(self.value(i), self.grid).astype(np.int64) for i in t.src[1:]]
    if len(idx) != amap.ndim: raise Unjudgeable("a view index of the wrong rank")
    for i, d in zip(idx, amap.shape):
      if i.size and (i.min() < 0 or i.max() >= d): raise OutOfBounds(f"view index outside [0, {d})")
    a = amap[tuple(idx)] if idx else np.broadcast_to(amap, self.grid)
    return base, a, a >= 0

  def _full(self, a: np.ndarray) -> np.ndarray:
    return np.broadcast_to(a, self.grid) if a.shape != self.grid else a

  def _node(self, u: UOp) -> np.ndarray:
    op = u.op
    if op is Ops.RANGE:
      shp = [1] * len(self.grid)
      ax = self.axis[range_key(u)]
      shp[ax] = self.grid[ax]
      return np.arange(self.grid[ax], dtype=np.int64).reshape(shp)
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
      if ix.op is not Ops.INDEX: raise Unjudgeable("a load of unknown storage")
      flat = self.storage(ix.src[0])
      i = self._full(self.value(ix.src[1])).astype(np.int64)
      gate = self._full(self.value(u.src[2])) if len(u.src) > 2 else np.ones(self.grid, dtype=bool)
      if np.any(gate & ((i < 0) | (i >= flat.size))): raise OutOfBounds("load outside its buffer")
      got = flat[np.where(gate, i, 0)] if flat.size else np.zeros(self.grid, flat.dtype)
      return np.where(gate, got, self._full(self.value(u.src[1]))) if len(u.src) > 2 else got
    if op in GroupOp.Elementwise:
      vals = [self.value(s) for s in u.src]
      shp = np.broadcast_shapes(*(v.shape for v in vals))
      return elementwise(u, [np.broadcast_to(v, shp) for v in vals])
    if op is Ops.REDUCE and not isinstance(u.arg, tuple):
      v = self._full(self.value(u.src[0]))
      axes = tuple(self.axis[range_key(r)] for r in u.src[1:])
      return np.expand_dims(reduce_axes(u, u.arg, v, axes), axes)
    raise Unjudgeable(f"{op.name} has no local value")


def _outer(root: UOp) -> list[UOp]:
  """Nodes under root, not entering call bodies nor TUPLEs (a body's PARAMs are its call's args, not kernel params; a
  precompiled call's body is a SINK, not a TUPLE)."""
  return walk((root,), lambda u: () if u.op is Ops.TUPLE else u.src[1:] if u.op is Ops.CALL else u.src)


def _as_common(a: np.ndarray) -> np.ndarray:
  if holds_floats(a): return a.astype(np.float64)
  if a.dtype.kind == "b": return a.astype(np.int64)
  return a.astype(np.int64) if a.dtype.kind == "i" else a.astype(np.uint64).astype(np.int64)


def values_differ(a: np.ndarray, b: np.ndarray, error: float | None = None) -> bool:
  """Different values (by value, not by dtype: a rewrite may change an integer width); floats beyond the tolerance of
  fuzz.check.agree for a value within `error` (relative) of the exact one (None: of unknown history)."""
  a, b = np.asarray(a), np.asarray(b)
  tol = float_tolerance(dtypes.from_np(a.dtype), error) if holds_floats(a) else float_tolerance(dtypes.from_np(b.dtype), error)
  try: shp = np.broadcast_shapes(a.shape, b.shape)
  except ValueError: return True
  x, y = np.broadcast_to(_as_common(a), shp), np.broadcast_to(_as_common(b), shp)
  if x.dtype.kind == "f" or y.dtype.kind == "f":
    x, y = x.astype(np.float64), y.astype(np.float64)
    return not bool(np.all(floats_agree(x, y, tol, tol * (1 + scale_of(x)))))
  return not bool(np.all(x == y))


EFFECTS = frozenset({Ops.STORE, Ops.END, Ops.GROUP, Ops.SINK})  # nodes whose meaning is what their STOREs write


def _stores_differ(ev: LocalEval, before: UOp, after: UOp, error: float | None = None) -> bool:
  """Whether a STORE rewritten into a STORE over the same loops writes, at some loop point, where the other does not,
  another element, or another value. Point by point, not by the final contents: a write that a later one overwrites is
  still seen by the kernel's loads in between, and loops that run in parallel have no later."""
  try: pb, ab, gb = ev.store_points(before)
  except OutOfBounds: return False
  try: pa, aa, ga = ev.store_points(after)
  except OutOfBounds: return True
  if pb.arg.slot != pa.arg.slot or not np.array_equal(gb, ga) or not np.array_equal(ab[gb], aa[ga]): return True
  vb, va = (ev._full(ev.value(x.src[1])) for x in (before, after))
  return values_differ(vb[gb], va[ga], error)


def _same_loops(before: UOp, after: UOp) -> bool:
  return {range_key(r) for r in free_ranges(before)} == {range_key(r) for r in free_ranges(after)}


def _effects_differ(ev: LocalEval, before: UOp, after: UOp, error: float | None = None) -> bool:
  """Whether two effect nodes write other elements or other values (a before that stores out of bounds is no meaning)."""
  if before.op is Ops.STORE and after.op is Ops.STORE and _same_loops(before, after): return _stores_differ(ev, before, after, error)
  try: eb = ev.effects(before)
  except OutOfBounds: return False
  if not eb: return False  # nothing stored, as far as can be told (an accumulator's register stores raise Unjudgeable)
  try: ea = ev.effects(after)
  except OutOfBounds: return True
  if set(eb) != set(ea): return True
  return any(not np.array_equal(eb[k][0], ea[k][0]) or values_differ(eb[k][1][eb[k][0]], ea[k][1][ea[k][0]], error) for k in eb)


def kernel_entries(root: UOp, inputs: dict[int, np.ndarray]) -> dict[UOp, list[dict[int, np.ndarray]]]:
  """Each kernel body root runs: the contents of its args when it starts, by PARAM slot, one dict per call (the reference
  evaluator runs the graph and records them). Empty when root has no kernels or cannot be evaluated."""
  seen: dict[UOp, list[dict[int, np.ndarray]]] = {}
  def runner(call: UOp, cells: list[np.ndarray]) -> None:
    body = call.src[0]
    if any(u.op is Ops.DEFINE_VAR for u in body.toposort()): raise Unjudgeable("a kernel with variables")  # runners get no var values
    seen.setdefault(body, []).append({k: c.copy() for k, c in enumerate(cells)})
    evaluate_kernel(body, cells)
  if not any(u.op is Ops.CALL for u in root.toposort()): return {}
  try: evaluate(root, {k: v.copy() for k, v in inputs.items()}, kernel_runner=runner)
  except Exception: return {}
  return seen


def _slots_of(ctx: Any, ev: LocalEval) -> list[dict[int, np.ndarray]] | None:
  """rangeify's kernel in progress: its PARAM slots' contents at entry, the values of the args the kernel is called with."""
  args = getattr(ctx, "args", None)
  if not args: return None
  try: return [{k: ev.tensor(a).reshape(-1) for k, a in enumerate(args)}]
  except Exception: return None


def rewrite_changes_value(before: UOp, after: UOp, inputs: dict[int, np.ndarray], ctx: Any = None,
                          slots: list[dict[int, np.ndarray]] | None = None, tensors: dict[UOp, np.ndarray] | None = None,
                          error: float | None = None) -> bool:
  """Whether a rule application changed the value of the node it rewrote. False when that cannot be judged. slots: the
  contents of the kernel's PARAM slots at entry, one dict per call of the kernel (changed under any of them is changed);
  tensors: values of tensor-level nodes known already (filled in); error: the relative error bound of the values
  (fuzz.check.agree: the case's largest, which bounds every value its outputs are computed from; None: unknown)."""
  effect = before.op in EFFECTS
  if effect != (after.op in EFFECTS): return False
  if not effect and (before.dtype.name == "void" or after.dtype.name == "void"): return False
  if before.op in (Ops.CALL, Ops.TUPLE): return False
  if tensors is None: tensors = {}
  kernelish = GroupOp.RangeForm | {Ops.PARAM}
  if not any(u.op in kernelish for n in (before, after) for u in _outer(n)):
    if not (before.shape_ok and after.shape_ok) or before.shape is None or after.shape is None: return False  # ill-shaped: no value
    try:
      ev0 = LocalEval(inputs, tensors=tensors)
      return values_differ(ev0.tensor(before), ev0.tensor(after), error)
    except Exception:
      return False
  if before.op is Ops.AFTER: return False
  params: dict[UOp, UOp] = {}
  targets: dict[UOp, UOp] = {}
  leaves = getattr(ctx, "leaves", None)
  if isinstance(leaves, dict):
    targets = {leaf: p for leaf, p in leaves.items() if isinstance(leaf, UOp) and p.op is Ops.PARAM}
    # a PARAM may stand for several leaves (versions of one storage): the ones the rewritten node reads come first
    seen = {u.src[0] for u in before.toposort() if u.op is Ops.INDEX and u.arg == "view"}
    for leaf, p in sorted(leaves.items(), key=lambda kv: kv[0] not in seen):
      if isinstance(leaf, UOp) and leaf.tag is None: params.setdefault(p, leaf)
  if slots is None: slots = _slots_of(ctx, LocalEval(inputs, tensors=tensors))
  return any(_changes_under(before, after, inputs, params, s, tensors, effect, targets, error) for s in (slots or [None]))


def _changes_under(before: UOp, after: UOp, inputs: dict, params: dict, slots: dict | None, tensors: dict, effect: bool,
                   targets: dict | None = None, error: float | None = None) -> bool:
  try:
    ev = LocalEval(inputs, params, free_ranges(before, after), slots, tensors, targets)
    if effect: return _effects_differ(ev, before, after, error)
    try: vb = ev.value(before)
    except OutOfBounds: return False
    try: va = ev.value(after)
    except OutOfBounds: return True
    return values_differ(vb, va, error)
  except (Unjudgeable, KeyError, ValueError, TypeError, IndexError):
    return False
  except Exception:
    return False

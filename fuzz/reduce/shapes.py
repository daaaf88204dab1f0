"""Shape moves of the reducer: shrink the sizes inside a TENSOR graph, not only its inputs.

A move changes one axis where a shape is chosen (the view of an input BUFFER, the dims of an EXPAND, the margins of a
PAD, a size-1 axis of a RESHAPE or EXPAND) and rebuilds every user, carrying the change through the args of the
movement ops above it: PERMUTE moves the axis, EXPAND shifts it, PAD keeps its margins, SHRINK keeps its window
where it still fits, RESHAPE resizes the output axis the changed input axis maps to, REDUCE ends it when the axis is
reduced. Elementwise ops need every operand changed alike; an EXPAND operand that did not change is adapted. A
change that cannot be carried (into a value call, an inconsistent operand) gives no candidate; the reducer then drops
candidates the TENSOR spec or the UB screen rejects.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterator

import numpy as np

from tinyspec.uop import GroupOp, Ops, UOp, substitute


class NoShape(Exception):
  """The change cannot be carried through some node."""


@dataclass(frozen=True)
class Change:
  """How a node's shape changed: axis `axis` resized to `dim`, or (dim None) the size-1 axis `axis` dropped."""
  axis: int
  dim: int | None = None

  def apply(self, shape: tuple[int, ...]) -> tuple[int, ...]:
    if self.dim is None: return shape[:self.axis] + shape[self.axis + 1:]
    return shape[:self.axis] + (self.dim,) + shape[self.axis + 1:]

  def moved(self, axis: int) -> Change: return Change(axis, self.dim)


@dataclass(frozen=True)
class TupleChange:
  """How the elements of a TUPLE (and so the outputs of its CALL) changed."""
  changes: tuple[Change | None, ...]


SAME_SHAPE = GroupOp.Elementwise | {Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY, Ops.STORE}


def _blocks(a: tuple[int, ...], b: tuple[int, ...]) -> list[tuple[range, range]]:
  """The axes of a and b grouped into blocks of equal products (a reshape maps each block of a onto its block of b)."""
  out: list[tuple[range, range]] = []
  i = j = 0
  while i < len(a) or j < len(b):
    i0, j0, pa, pb = i, j, 1, 1
    while not (pa == pb and (i > i0 or j > j0)):
      if (pa <= pb or j >= len(b)) and i < len(a): pa, i = pa * a[i], i + 1
      elif j < len(b): pb, j = pb * b[j], j + 1
      else: raise NoShape(f"cannot group {a} against {b}")
    out.append((range(i0, i), range(j0, j)))
  return out


def _reshape(u: UOp, x: UOp, c: Change) -> tuple[UOp, Change | None]:
  old_in, out = u.src[0].shape, u.arg
  new_in = x.shape
  if c.dim is None:  # a size-1 input axis went: the output keeps its shape
    return (x, None) if tuple(out) == new_in else (x.reshape(out), None)
  for ins, outs in _blocks(old_in, out):
    if c.axis not in ins: continue
    if not outs: raise NoShape("the axis maps to no output axis")
    d_old = old_in[c.axis]
    js = sorted(outs, key=lambda j: (out[j] != d_old, j))  # an output axis of the same length first: the axis itself
    for j in js:
      rest = math.prod(out[k] for k in outs if k != j)
      total = math.prod(old_in[k] for k in ins) // d_old * c.dim
      if rest and total % rest == 0 and total // rest >= 1:
        nd = total // rest
        new_out = out[:j] + (nd,) + out[j + 1:]
        return x.reshape(new_out), (Change(j, nd) if nd != out[j] else None)
    raise NoShape(f"cannot resize reshape {old_in} -> {out}")
  raise NoShape("axis not found")


def _movement(u: UOp, x: UOp, c: Change) -> tuple[UOp, Change | None]:
  a = u.arg
  if u.op is Ops.RESHAPE: return _reshape(u, x, c)
  if u.op is Ops.PERMUTE:
    j = a.index(c.axis)
    if c.dim is not None: return x.permute(a), c.moved(j)
    return x.permute(tuple(p - (p > c.axis) for p in a if p != c.axis)), Change(j)
  if u.op is Ops.EXPAND: return x.expand(a), c.moved(len(a) + c.axis)
  if u.op is Ops.FLIP:
    if c.dim is not None: return x.flip(a), c
    return x.flip(a[:c.axis] + a[c.axis + 1:]), c
  o, n = a[c.axis]
  d_old = u.src[0].shape[c.axis]
  if c.dim is None:
    if (o, n) != (0, 1): raise NoShape(f"{u.op.name} widens the dropped axis")
    return UOp(u.op, u.dtype, (x,), a[:c.axis] + a[c.axis + 1:]), c
  if u.op is Ops.PAD:
    n2 = n - (d_old - c.dim)
    return x.pad(a[:c.axis] + ((o, n2),) + a[c.axis + 1:]), Change(c.axis, n2)
  # SHRINK: the window stays when it still fits; slides left while it can; else it is cut to the new length
  if o + n <= c.dim: return x.shrink(a), None
  if n <= c.dim: return x.shrink(a[:c.axis] + ((c.dim - n, n),) + a[c.axis + 1:]), None
  return x.shrink(a[:c.axis] + ((0, c.dim),) + a[c.axis + 1:]), Change(c.axis, c.dim)


def _fit(s: UOp, c: Change) -> UOp:
  """An operand that did not change, adapted to the change of its neighbours: only an EXPAND along the new dims."""
  if s.op is Ops.EXPAND and c.axis < len(s.arg):
    if c.dim is None: return s.src[0] if len(s.arg) == 1 else s.src[0].expand(s.arg[:c.axis] + s.arg[c.axis + 1:])
    return s.src[0].expand(s.arg[:c.axis] + (c.dim,) + s.arg[c.axis + 1:])
  raise NoShape(f"operand {s.op.name} cannot follow the change")


def _carry(u: UOp, ns: tuple[UOp, ...], cs: list) -> tuple[UOp, Any]:
  """u rebuilt on its new sources, and how its shape changed."""
  if not any(cs): return u.replace(src=ns), None
  # a value call: outputs of its body change with it; a changed arg would need its PARAM resized, which is not done
  if u.op is Ops.TUPLE: return u.replace(src=ns), TupleChange(tuple(cs))
  if u.op is Ops.CALL:
    changed = {k for k, c in enumerate(cs[1:]) if c is not None}
    if changed and any(p.op is Ops.PARAM and p.arg.slot in changed for p in u.src[0].toposort()): raise NoShape("a change reaches a call arg")
    if cs[0] is not None and not isinstance(cs[0], TupleChange): raise NoShape("a call body changed unexpectedly")
    return u.replace(src=ns), cs[0]
  if u.op is Ops.GETTUPLE:
    if not isinstance(cs[0], TupleChange): raise NoShape("GETTUPLE of an unexpected change")
    return u.replace(src=ns), cs[0].changes[u.arg]
  if any(isinstance(c, TupleChange) for c in cs): raise NoShape(f"a call change reaches {u.op.name}")
  if u.op in GroupOp.Movement:
    return _movement(u, ns[0], cs[0])  # type: ignore[arg-type]
  if u.op is Ops.REDUCE:
    op, n = u.arg
    c = cs[0]
    assert c is not None
    if c.axis < n: return ns[0].reduce(op, n if c.dim is not None else n - 1), None
    return ns[0].reduce(op, n), c.moved(c.axis - n)
  if u.op is Ops.AFTER:
    if cs[0] is None: raise NoShape("a dependency changed, the storage did not")
    return u.replace(src=ns), cs[0]
  if u.op in SAME_SHAPE:
    shaped = [i for i, s in enumerate(u.src) if not (u.op is Ops.STORE and i == 2)]
    changes = {cs[i] for i in shaped if cs[i] is not None}
    if len(changes) != 1: raise NoShape("operands changed differently")
    c = changes.pop()
    srcs = list(ns)
    for i in shaped:
      if cs[i] is None and u.src[i].shape != (): srcs[i] = _fit(ns[i], c)
    return u.replace(src=tuple(srcs)), (None if u.op is Ops.STORE else c)
  if u.shape_ok and u.shape is None: return u.replace(src=ns), None  # SINK, GROUP: effects and values as they are
  raise NoShape(f"cannot carry a change through {u.op.name}")


def carry(root: UOp, origin: UOp, new: UOp, change: Change) -> UOp | None:
  """root with origin replaced by new (whose shape is `change` of origin's), every user rebuilt; None when it cannot be."""
  done: dict[UOp, tuple[UOp, Any]] = {origin: (new, change)}
  try:
    for u in root.toposort():
      if u in done: continue
      if all(done[s][0] is s for s in u.src):
        done[u] = (u, None)
        continue
      ns = tuple(done[s][0] for s in u.src)
      done[u] = _carry(u, ns, [done[s][1] for s in u.src])
  except (NoShape, ValueError):
    return None
  r = done[root][0]
  return r if r.shape_ok or r.op is Ops.SINK else None


def smaller_dims(d: int) -> list[int]:
  """Shorter lengths to try for an axis of length d, the shortest first."""
  return sorted({x for x in (1, 2, d // 2, d - 1) if 1 <= x < d})


def _users(root: UOp) -> dict[UOp, list[UOp]]:
  users: dict[UOp, list[UOp]] = {}
  for u in root.toposort():
    for s in u.src: users.setdefault(s, []).append(u)
  return users


def _slice_input(arr: np.ndarray, shape: tuple[int, ...], axis: int, dim: int, end: bool) -> np.ndarray:
  a = np.asarray(arr).reshape(shape)
  idx = [slice(None)] * len(shape)
  idx[axis] = slice(shape[axis] - dim, None) if end else slice(0, dim)
  return np.ascontiguousarray(a[tuple(idx)]).reshape(-1)


def shape_moves(root: UOp, inputs: dict[int, np.ndarray]) -> Iterator[tuple[UOp, dict[int, np.ndarray]]]:
  """(new root, new inputs) for every single shape move that can be carried through the graph."""
  users = _users(root)
  nodes = list(reversed(root.toposort()))
  for u in nodes:
    # an input: its view (the BUFFER itself, or its only RESHAPE) gets a shorter axis; the data is cut to match
    if u.op is Ops.BUFFER and u.arg.size > 1:
      us = users.get(u, [])
      view = us[0] if len(us) == 1 and us[0].op is Ops.RESHAPE else u
      if view is not u and any(x is not view for x in us): continue
      shp = view.shape
      for ax, d in enumerate(shp):
        for nd in smaller_dims(d):
          nshape = shp[:ax] + (nd,) + shp[ax + 1:]
          nbuf = u.replace(arg=_with_size(u.arg, math.prod(nshape)))
          nview = nbuf if view is u else nbuf.reshape(nshape)
          r = carry(root, view, nview, Change(ax, nd))
          if r is None: continue
          for end in ((False, True) if u.arg.id in inputs else (False,)):
            ins = dict(inputs)
            if u.arg.id in inputs: ins[u.arg.id] = _slice_input(inputs[u.arg.id], shp, ax, nd, end)
            yield r, ins
    elif u.op is Ops.EXPAND:
      for i, d in enumerate(u.arg):
        if d == 1:
          new = u.src[0] if len(u.arg) == 1 else u.src[0].expand(u.arg[:i] + u.arg[i + 1:])
          if (r := carry(root, u, new, Change(i))) is not None: yield r, inputs
          continue
        for nd in smaller_dims(d):
          if (r := carry(root, u, u.src[0].expand(u.arg[:i] + (nd,) + u.arg[i + 1:]), Change(i, nd))) is not None: yield r, inputs
    elif u.op is Ops.RESHAPE and 1 in u.arg:
      for i, d in enumerate(u.arg):
        if d != 1: continue
        shp = u.arg[:i] + u.arg[i + 1:]
        new = u.src[0] if shp == u.src[0].shape else u.src[0].reshape(shp)
        if (r := carry(root, u, new, Change(i))) is not None: yield r, inputs
    elif u.op is Ops.PAD:
      for i, ((o, n), d) in enumerate(zip(u.arg, u.src[0].shape)):
        for o2, n2 in dict.fromkeys([(0, n - o), (o, o + d), (max(0, o - 1), n - (o > 0)), (o, max(o + d, n - 1))]):
          if (o2, n2) == (o, n): continue
          new = u.src[0].pad(u.arg[:i] + ((o2, n2),) + u.arg[i + 1:])
          if (r := carry(root, u, new, Change(i, n2))) is not None: yield r, inputs
    elif u.op is Ops.SHRINK:
      # a window moved to the start of its axis: same shapes, smaller args
      for i, (o, n) in enumerate(u.arg):
        if o > 0: yield _swap(root, u, u.src[0].shrink(u.arg[:i] + ((0, n),) + u.arg[i + 1:])), inputs


def _with_size(arg, size: int):
  return replace(arg, size=size)


def _swap(root: UOp, old: UOp, new: UOp) -> UOp:
  return substitute(root, {old: new})


def arg_weight(root: UOp) -> int:
  """The sum of the movement args' offsets and of every rank: what shape moves lower when no size changes."""
  w = 0
  for u in root.toposort():
    if u.op in (Ops.PAD, Ops.SHRINK): w += sum(o for o, _ in u.arg)
    if u.shape_ok and u.shape is not None: w += len(u.shape)
  return w

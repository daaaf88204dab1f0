"""When a kernel loop may run vectorized: the memory dependence analysis of the kernel evaluator.

A value is an `LArr`: a numpy array over the loop axes it depends on (sorted axis keys). A loop runs
either sequentially (one pass over its body per iteration, the range a scalar) or vectorized (its range an axis,
every statement of its body run for all iterations at once, inner loops nested inside that). Running the iterations
of loop L in lockstep gives C's result when no two distinct iterations of L conflict: no element written by one is
read or written by another. Each time L is about to run, with the loops around it fixed (a sequential loop's current
iteration, a vectorized loop's iterations already shown independent), the analysis decides:
  1. every buffer some STORE in L's body writes is either private or checked. A REG/LOCAL BUFFER is private to L's
     iterations when every iteration writes all of it before any read: its first access in L's body, in execution
     order, is an ungated STORE to a one-element buffer, run once per iteration (at the top of the body, or first in
     an inner loop that runs at least once). Its copy per iteration is then invisible to the others; after L the
     buffer holds the last iteration's copy, as in C.
  2. a checked buffer is rejected at once when a STORE's index does not use L's range (every iteration writes the
     same element). Otherwise the element index and gate of every LOAD and STORE of it in L's body are computed over
     the iteration space of L and its inner loops (index arithmetic is cheap to evaluate vectorized; values loaded
     from buffers L does not write are read from memory, which L leaves unchanged). L conflicts when an element with
     a write is touched by two iterations. An index or gate that depends on a value loaded from a buffer L writes
     cannot be computed ahead: L runs sequentially.
An ATOMIC of L's body reads and writes its element; updates of one element by two iterations with the same combining
op commute (tinyspec.ops.atomic), so they are no conflict, but an element one iteration updates and another loads,
stores, or updates with another op is. Run in lockstep, a vectorized ATOMIC applies its iterations' updates in
iteration order (numpy's ufunc.at), the order a sequential run gives.
If L conflicts it runs sequentially and the question is asked again of each inner loop. So a reduction's accumulator
loop runs sequentially inside vectorized outer loops (matmul: one numpy step per reduce iteration), a loop that
reads what an earlier iteration wrote runs in order, and the worst case is fully sequential. A GPU thread index
(SPECIAL) is an axis for the whole kernel: threads run in lockstep, and threads that conflict raise EvalError, since
their order is not defined.

A loop that runs sequentially still computes some of its body ahead, for all its iterations at once (`_hoist`):
arithmetic, and loads of storage nothing in the loop writes (the memory they read cannot change while it runs). Each
iteration takes its slice, so per iteration only the statements that touch written memory run.
"""
from __future__ import annotations

import numpy as np

from tinyspec.semantics.alu import EvalError
from tinyspec.semantics.loops import Item, Loop
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, walk

MAX_HOIST = 1 << 20  # elements of one value a sequential loop computes ahead for all its iterations at most
HOISTABLE = GroupOp.Elementwise | {Ops.CONST, Ops.DEFINE_VAR, Ops.INDEX, Ops.LOAD, Ops.AFTER}
MAX_CHECK = 1 << 22  # elements of one access's index array the analysis compares at most
SMALL_LOOP = 48  # iterations x body nodes under which a loop runs in order without being analysed
HOIST_FROM = 8  # iterations from which a sequential loop computes part of its body ahead
GUARDED = (TypeError, ValueError, IndexError, AttributeError, KeyError, OverflowError)


class LArr:
  """A value in a kernel: `data` has one dimension per axis in `axes` (sorted axis keys), size 1 or the bound."""
  __slots__ = ("data", "axes")

  def __init__(self, data: np.ndarray, axes: tuple[int, ...]):
    self.data, self.axes = data, axes

  def to(self, axes: tuple[int, ...]) -> np.ndarray:
    """data laid out over `axes` (a sorted superset of self.axes), size-1 where self does not depend on an axis."""
    if axes == self.axes: return self.data
    shape, it = [], iter(self.data.shape)
    for a in axes: shape.append(next(it) if a in self.axes else 1)
    return self.data.reshape(shape)


def union_axes(*axs: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(sorted(set().union(*axs)))


class Cell:
  """Storage in a kernel. data has shape (bounds of labels..., size): one private copy per iteration of each label."""
  __slots__ = ("data", "labels", "node")

  def __init__(self, data: np.ndarray, labels: tuple[int, ...], node: UOp):
    self.data, self.labels, self.node = data, labels, node

  @property
  def size(self) -> int: return self.data.shape[-1]


class Ptr:
  """The value of INDEX: an element address of a cell, with an optional gate from the INDEX itself."""
  __slots__ = ("cell", "idx", "gate")

  def __init__(self, cell: Cell, idx: LArr, gate: LArr | None):
    self.cell, self.idx, self.gate = cell, idx, gate


class NotAhead(Exception):
  """An index or gate of a loop cannot be computed before the loop runs."""


def storage_of(u: UOp) -> UOp:
  """The storage node under AFTER / CONTIGUOUS / DETACH chains and IMAGE views (an image is its PARAM's storage)."""
  while u.op in (Ops.AFTER, Ops.CONTIGUOUS, Ops.DETACH, Ops.IMAGE) and u.src: u = u.src[0]
  return u


def value_srcs(u: UOp) -> tuple[UOp, ...]:
  """The sources a node's value is computed from: AFTER's deps only order effects."""
  return u.src[:1] if u.op is Ops.AFTER else u.src


def private_space(u: UOp) -> bool:
  return u.op is Ops.BUFFER and u.arg.addrspace in (AddrSpace.REG, AddrSpace.LOCAL)


_READS, _STORES = 0, 1


def _kind(w: bool | Ops) -> int:
  """An access's kind as a number the conflict check compares: a read, a store, or (above them) an atomic op's own."""
  return _STORES if w is True else _READS if w is False else _STORES + 1 + w.value


class LoopInfo:
  """What the analysis needs of one loop, computed once: every node of its body, its memory accesses, its loops."""
  __slots__ = ("nodes", "accesses", "loops", "declared", "touched", "uniform_write", "opaque")

  def __init__(self, loop: Loop):
    self.nodes: set[UOp] = set()
    # (LOAD, STORE or ATOMIC, its INDEX, storage node, how it writes: False reads, True stores, an ATOMIC's combining op)
    self.accesses: list[tuple[UOp, UOp, UOp, bool | Ops]] = []
    self.loops: list[Loop] = [loop]
    self.declared: set[UOp] = set()
    self.opaque = False  # an access whose storage cannot be named: the loop always runs sequentially
    stack: list[Item] = list(loop.body)
    while stack:
      it = stack.pop()
      if isinstance(it, Loop):
        self.loops.append(it)
        self.nodes.add(it.range)
        stack.extend(it.body)
        continue
      self.nodes.add(it)
      if it.op is Ops.BUFFER: self.declared.add(it)
      if it.op in GroupOp.Access:
        idx = it.src[0] if it.src else None
        if idx is None or idx.op is not Ops.INDEX or not idx.src or storage_of(idx.src[0]).op not in (Ops.PARAM, Ops.BUFFER): self.opaque = True
        else: self.accesses.append((it, idx, storage_of(idx.src[0]), it.arg if it.op is Ops.ATOMIC else it.op is Ops.STORE))
    self.touched = {b for _, _, b, _ in self.accesses} | self.declared
    # storage some STORE writes at an index that does not use the loop's range: every iteration writes one element (atomic
    # updates of one element commute, so they are left to the conflict check)
    self.uniform_write = {b for u, idx, b, w in self.accesses if w is True and (len(idx.src) < 2 or loop.range not in walk((idx.src[1],)))}


def at_iteration(v: object, key: int, i: int) -> object:
  """Iteration i of axis key of a value computed ahead (a Ptr's index and gate, a value; storage is itself)."""
  if isinstance(v, LArr):
    if key not in v.axes: return v
    pos = v.axes.index(key)
    return LArr(v.data[(slice(None),) * pos + (i,)], v.axes[:pos] + v.axes[pos + 1:])
  if isinstance(v, Ptr): return Ptr(v.cell, at_iteration(v.idx, key, i), None if v.gate is None else at_iteration(v.gate, key, i))
  return v


class LoopAnalysis:
  """The analysis half of the kernel evaluator (KernelEval in tinyspec.semantics.kernel runs what it decides). It reads
  the evaluator's state: env, bounds, keys, the `ahead` values it computes itself, and the value handlers."""

  def _hoist(self, loop: Loop, key: int, n: int) -> tuple[dict | None, list[UOp]]:
    """Values of a sequential loop's body computed for all its iterations at once before it runs: pure arithmetic,
    and loads of storage the loop does not write (the memory they read stays as it is while the loop runs). Each
    iteration then takes its slice of those that other statements use. Only the body's own statements (not those of
    inner loops), and only values of at most MAX_HOIST elements."""
    info = loop.info = loop.info or LoopInfo(loop)
    if info.opaque: return None, []
    pre: dict[UOp, object] = {loop.range: LArr(np.arange(n, dtype=loop.range.dtype.np), (key,))}
    self.ahead, self.ahead_info = pre, info
    try:
      written = {id(self._cell_of(b)) for _, _, b, w in info.accesses if w and b not in info.declared}
      for u in loop.body:
        if isinstance(u, Loop) or u.op not in HOISTABLE: continue
        if any(s in info.nodes and s not in pre for s in value_srcs(u)): continue
        if u.op is Ops.LOAD:
          b = storage_of(u.src[0].src[0]) if u.src and u.src[0].op is Ops.INDEX and u.src[0].src else None
          if b is None or b in info.declared or id(self._cell_of(b)) in written: continue
        axes = union_axes(*(v.axes for s in u.src if isinstance(v := self._get(u, s), LArr)))
        if int(np.prod(self._shape(axes))) > MAX_HOIST: continue
        pre[u] = self._eval(u)
    except (NotAhead, EvalError, *GUARDED):
      return None, []  # computed in order instead: an error then surfaces at the statement that makes it
    finally:
      self.ahead, self.ahead_info = None, None
    del pre[loop.range]
    if not pre: return None, []
    used = {s for x in info.nodes if x not in pre for s in x.src if s in pre}
    return pre, [u for u in pre if u in used]

  # ---- the analysis ----
  def _plan(self, loop: Loop, key: int, n: int) -> list[Cell] | None:
    """The cells to privatize when loop's iterations are independent (see the module doc); None when they are not."""
    info = loop.info = loop.info or LoopInfo(loop)
    if info.opaque: return None
    private: list[Cell] = []
    checked: list[UOp] = []
    for b in {b for _, _, b, w in info.accesses if w} - info.declared:
      if private_space(b) and b.arg.size == 1 and self._kills_first(loop.body, b):
        cell = self.env.get(b)
        if not isinstance(cell, Cell): return None
        private.append(cell)
      elif b in info.uniform_write: return None
      else: checked.append(b)
    return private if self._independent(info, (key,), checked) else None

  def _kills_first(self, items: list[Item], b: UOp) -> bool:
    """Whether each run of items writes all of one-element buffer b before anything reads it."""
    for it in items:
      if isinstance(it, Loop):
        info = it.info = it.info or LoopInfo(it)
        if b not in info.touched: continue
        bound = it.range.src[0] if len(it.range.src) == 1 else None
        n = self.env.get(bound) if bound is not None and bound.op is not Ops.CONST else bound
        if isinstance(n, UOp) and n.op is Ops.CONST: n = int(n.arg)
        elif isinstance(n, LArr) and not n.axes: n = int(n.data)
        else: return False
        if n <= 0: continue
        return self._kills_first(it.body, b)
      if it is b: return True
      if it.op in GroupOp.Access and it.src and it.src[0].op is Ops.INDEX and it.src[0].src and storage_of(it.src[0].src[0]) is b:
        return it.op is Ops.STORE and len(it.src) == 2 and len(it.src[0].src) == 2
    return False

  def _cell_of(self, b: UOp) -> Cell:
    if b.op is Ops.PARAM: return self._param(b)
    cell = self.env.get(b)
    if not isinstance(cell, Cell): raise NotAhead
    return cell

  def _independent(self, info: LoopInfo, iter_keys: tuple[int, ...], checked: list[UOp]) -> bool:
    """Whether no element of a checked storage node written by one iteration (over iter_keys) is touched by another.
    Storage is compared as cells: two PARAM slots given one array are one storage."""
    if not checked: return True
    # thread indices are bound once for the whole kernel, before any loop runs
    self.ahead, self.ahead_info = {u: v for u, v in self.env.items() if u.op is Ops.SPECIAL}, info
    try:
      cells = {id(self._cell_of(b)) for b in checked}
      bases = {b for _, _, b, _ in info.accesses if b not in info.declared}
      self.written = {b for b in bases if id(self._cell_of(b)) in cells} | {b for _, _, b, w in info.accesses if w}
      for lp in info.loops:  # outermost first: an inner loop's bound may be computed inside an outer one
        r = lp.range
        if r.op is Ops.SPECIAL:
          self.ahead[r] = self.env[r]
          continue
        k = self.keys.setdefault(r, len(self.keys))
        self.bounds[k] = self._bound(r, self._ahead_val(r.src[0]) if r.src else None)
        self.ahead[r] = LArr(np.arange(self.bounds[k], dtype=r.dtype.np), (k,))
      by_cell: dict[int, tuple[Cell, list]] = {}
      for u, idx, b, w in info.accesses:
        if b in info.declared or id(self._cell_of(b)) not in cells: continue
        ptr = self._ahead_val(idx)
        gate = ptr.gate
        if len(u.src) == 3: gate = self._and(self._ahead_val(u.src[2]), gate)
        by_cell.setdefault(id(ptr.cell), (ptr.cell, []))[1].append((ptr.idx, gate, w))
      return all(not self._conflict(cell, acc, iter_keys) for cell, acc in by_cell.values())
    except (NotAhead, EvalError, *GUARDED):
      return False  # run it in order: a real error then surfaces at the statement that makes it
    finally:
      self.ahead, self.ahead_info, self.written = None, None, set()

  def _ahead_val(self, u: UOp) -> object:
    """The value of u over the whole iteration space of the loop under analysis, without running its effects."""
    info, ahead = self.ahead_info, self.ahead
    for n in walk((u,), lambda x: () if x in ahead or x not in info.nodes else value_srcs(x)):
      if n in ahead or n not in info.nodes: continue
      if n.op in (Ops.STORE, Ops.ATOMIC, Ops.END, Ops.GROUP, Ops.SINK, Ops.BUFFER): raise NotAhead
      if n.op is Ops.LOAD and n.src and n.src[0].op is Ops.INDEX and n.src[0].src and storage_of(n.src[0].src[0]) in self.written: raise NotAhead
      ahead[n] = self._eval(n)
    return ahead[u] if u in ahead else self._get(u, u)

  def _conflict(self, cell: Cell, accesses: list, iter_keys: tuple[int, ...]) -> bool:
    elems, iters, writes = [], [], []
    total = cell.size
    for k in cell.labels: total *= self.bounds[k]
    for idx, gate, w in accesses:
      axes = union_axes(idx.axes, gate.axes if gate is not None else (), cell.labels, iter_keys)
      shape = self._shape(axes)
      if int(np.prod(shape)) > MAX_CHECK: return True  # too big to compare ahead: run in order, which is always right
      e = np.broadcast_to(idx.to(axes), shape).astype(np.int64)
      mask = np.broadcast_to(gate.to(axes), shape) if gate is not None else np.ones(shape, dtype=bool)
      if (((e < 0) | (e >= cell.size)) & mask).any(): return True
      mult = cell.size
      for k in reversed(cell.labels):
        e = e + self._grid(k, axes) * mult
        mult *= self.bounds[k]
      it, mult = np.zeros((1,) * len(axes), dtype=np.int64), 1
      for k in reversed(iter_keys):
        it = it + self._grid(k, axes) * mult
        mult *= self.bounds[k]
      elems.append(e[mask])
      iters.append(np.broadcast_to(it, shape)[mask])
      writes.append(np.full(elems[-1].shape, _kind(w), dtype=np.int32))
    e, i, w = np.concatenate(elems), np.concatenate(iters), np.concatenate(writes)
    lo, hi = np.full(total, np.iinfo(np.int64).max), np.full(total, -1, dtype=np.int64)
    np.minimum.at(lo, e, i)
    np.maximum.at(hi, e, i)
    # an element two iterations touch conflicts when one stores it, or when one updates it atomically and another reads it
    # or updates it with another op; atomic updates with one op commute (tinyspec.ops.atomic)
    def touched(kind: int) -> np.ndarray:
      out = np.zeros(total, dtype=bool)
      out[e[w == kind]] = True
      return out
    bad = touched(_STORES)
    if kinds := [touched(int(k)) for k in np.unique(w) if k > _STORES]:
      bad = bad | (np.logical_or.reduce(kinds) & touched(_READS)) | (np.sum(kinds, axis=0) > 1)
    return bool((bad & (lo < hi)).any())

  def _grid(self, k: int, axes: tuple[int, ...]) -> np.ndarray:
    shape = [1] * len(axes)
    shape[axes.index(k)] = self.bounds[k]
    return np.arange(self.bounds[k], dtype=np.int64).reshape(shape)


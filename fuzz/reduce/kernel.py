"""Kernel moves of the reducer: shrink KERNEL_GRAPH cases inside their kernels.

- drop a STORE / END / GROUP entry of a kernel SINK (or of a GROUP);
- drop a range: the RANGE becomes 0 and leaves the ENDs and REDUCEs that close it and the AFTERs placed in it (one
  left with no range goes);
- shorten a range (a smaller constant bound);
- replace an index expression by a simpler one: 0, or one of its own sub-expressions (the spec proves it in bounds);
- drop a kernel CALL nobody needs: an AFTER no longer waits for it (an AFTER left with no dependency is its storage);
- drop the gate of a STORE or LOAD, unwrap a GROUP of one effect; show another arg of a kernel as a SINK entry;
- drop one dependency of an AFTER inside a kernel (the kernel screen keeps only results still ordered);
- shrink a BUFFER bound to kernel args, and the PARAMs bound to it in every kernel, cutting its input to match.
LOADs become constants through the reducer's generic constant move. Candidates are checked at their stage by the
reducer, so a move may build a graph the spec rejects (an index out of bounds): it is dropped there.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

import numpy as np

from fuzz.reduce.shapes import smaller_dims
from tinyspec.dtype import dtypes
from tinyspec.uop import AddrSpace, Ops, UOp, is_opaque_call, storage_of


def rebuild(root: UOp, fn: Callable[[UOp, tuple[UOp, ...]], UOp]) -> UOp:
  """root rebuilt bottom-up: fn(node, its rebuilt sources) gives each node's replacement."""
  done: dict[UOp, UOp] = {}
  for u in root.toposort():
    ns = tuple(done[s] for s in u.src)
    done[u] = fn(u, ns)
  return done[root]


def keep(u: UOp, ns: tuple[UOp, ...]) -> UOp:
  return u if all(a is b for a, b in zip(ns, u.src)) else u.replace(src=ns)


def kernel_calls(root: UOp) -> list[UOp]:
  """CALLs whose body is not a TUPLE (kernels, programs, copies)."""
  return [u for u in root.toposort() if is_opaque_call(u)]


def drop_effects(root: UOp) -> Iterator[UOp]:
  bodies = {c.src[0] for c in kernel_calls(root)}
  for u in root.toposort():
    if (u in bodies and u.op is Ops.SINK or u.op is Ops.GROUP) and len(u.src) > 1:
      for i in range(len(u.src)):
        yield rebuild(root, lambda x, ns, u=u, i=i: UOp(x.op, x.dtype, ns[:i] + ns[i + 1:], x.arg) if x is u else keep(x, ns))
        # the effect gone for good: the AFTERs inside kernels that wait for it no longer do (else it still runs)
        if u.src[i].op in (Ops.STORE, Ops.END, Ops.GROUP) and any(a.op is Ops.AFTER and u.src[i] in a.src[1:] for a in root.toposort()):
          yield rebuild(root, lambda x, ns, u=u, i=i: _without_effect(x, ns, u, i))


def _without_effect(x: UOp, ns: tuple[UOp, ...], u: UOp, i: int) -> UOp:
  if x is u: return UOp(x.op, x.dtype, ns[:i] + ns[i + 1:], x.arg)
  if x.op is Ops.AFTER and u.src[i] in x.src[1:]:
    rest = tuple(n for s, n in zip(x.src[1:], ns[1:]) if s is not u.src[i])
    return x.replace(src=(ns[0], *rest)) if rest else ns[0]
  return keep(x, ns)


def drop_range(root: UOp, r: UOp) -> UOp:
  zero = UOp.const(dtypes.index, 0)
  def fn(u: UOp, ns: tuple[UOp, ...]) -> UOp:
    if u is r: return zero
    # an AFTER placed in the range (a read-modify-write access) loses it as the END does
    if u.op in (Ops.END, Ops.REDUCE, Ops.AFTER) and r in u.src[1:]:
      rest = tuple(n for s, n in zip(u.src[1:], ns[1:]) if s is not r)
      return u.replace(src=(ns[0], *rest)) if rest else ns[0]
    return keep(u, ns)
  return rebuild(root, fn)


def shorter_ranges(root: UOp) -> Iterator[UOp]:
  for u in root.toposort():
    if u.op is Ops.RANGE and u.src and u.src[0].op is Ops.CONST and isinstance(u.src[0].arg, int):
      for n in smaller_dims(u.src[0].arg):
        yield _swap(root, u, UOp.range(n, u.arg.axis, u.arg.kind))


def _swap(root: UOp, old: UOp, new: UOp) -> UOp:
  return rebuild(root, lambda u, ns: new if u is old else keep(u, ns))


def simpler_indices(root: UOp) -> Iterator[UOp]:
  zero = UOp.const(dtypes.index, 0)
  for u in root.toposort():
    if u.op is not Ops.INDEX or len(u.src) != 2 or u.arg is not None: continue
    idx = u.src[1]
    subs = [zero, *(s for s in reversed(idx.toposort()) if s is not idx and s.dtype is idx.dtype and s.op is not Ops.CONST)]
    for s in list(dict.fromkeys(subs))[:8]:
      if s is not idx: yield _swap(root, u, u.replace(src=(u.src[0], s)))


def drop_calls(root: UOp) -> Iterator[UOp]:
  for u in root.toposort():
    if u.op is not Ops.AFTER: continue
    for i, d in enumerate(u.src[1:], 1):
      if d.op is not Ops.CALL: continue
      rest = u.src[1:i] + u.src[i + 1:]
      yield _swap(root, u, u.replace(src=(u.src[0], *rest)) if rest else u.src[0])


def shrink_buffers(root: UOp, inputs: dict[int, np.ndarray]) -> Iterator[tuple[UOp, dict[int, np.ndarray]]]:
  calls = kernel_calls(root)
  for b in root.toposort():
    if b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.GLOBAL or b.arg.size <= 1: continue
    slots = {c: {k for k, a in enumerate(c.src[1:]) if storage_of(a) is b} for c in calls}
    slots = {c: ks for c, ks in slots.items() if ks}
    for n in smaller_dims(b.arg.size):
      nb = b.replace(arg=replace(b.arg, size=n))
      def fn(u: UOp, ns: tuple[UOp, ...], nb=nb, b=b, n=n, slots=slots) -> UOp:
        if u is b: return nb
        if u in slots:
          body = ns[0]
          params = {p: p.replace(arg=replace(p.arg, size=n)) for p in body.toposort() if p.op is Ops.PARAM and p.arg.slot in slots[u]}
          body = rebuild(body, lambda x, xs: params.get(x) or keep(x, xs))
          return u.replace(src=(body, *ns[1:]))
        return keep(u, ns)
      ins = dict(inputs)
      if b.arg.id in ins: ins[b.arg.id] = np.asarray(ins[b.arg.id]).reshape(-1)[:n].copy()
      yield rebuild(root, fn), ins


def drop_gates(root: UOp) -> Iterator[UOp]:
  """A gated STORE or LOAD (alt, gate) loses its gate; a GROUP of one effect becomes that effect."""
  for u in root.toposort():
    if u.op is Ops.STORE and len(u.src) == 3: yield _swap(root, u, u.replace(src=u.src[:2]))
    elif u.op is Ops.LOAD and len(u.src) == 3: yield _swap(root, u, u.replace(src=u.src[:1]))
    elif u.op is Ops.GROUP and len(u.src) == 1: yield _swap(root, u, u.src[0])


def retarget_outputs(root: UOp) -> Iterator[UOp]:
  """A SINK entry AFTER(buffer, calls...) shows another storage arg of those calls instead (the buffer it showed may
  then go)."""
  if root.op is not Ops.SINK: return
  for i, e in enumerate(root.src):
    if e.op is not Ops.AFTER or e.src[0].op is not Ops.BUFFER: continue
    for a in dict.fromkeys(storage_of(a) for c in e.src[1:] if c.op is Ops.CALL for a in c.src[1:]):
      if a is not e.src[0] and a.op is Ops.BUFFER: yield root.replace(src=(*root.src[:i], a.after(*e.src[1:]), *root.src[i + 1:]))


def drop_after_deps(root: UOp) -> Iterator[UOp]:
  """An AFTER inside a kernel waits for one dependency less (an AFTER left with none is its storage). The screen of
  kernel cases (fuzz.generate.kernel_safety) rejects a result whose accesses are no longer ordered."""
  inner = {u for c in kernel_calls(root) for u in c.src[0].toposort()}
  for u in root.toposort():
    if u.op is not Ops.AFTER or u not in inner: continue
    for i in range(1, len(u.src)):
      rest = u.src[1:i] + u.src[i + 1:]
      yield _swap(root, u, u.replace(src=(u.src[0], *rest)) if rest else u.src[0])


def kernel_moves(root: UOp, inputs: dict[int, np.ndarray]) -> Iterator[tuple[UOp, dict[int, np.ndarray]]]:
  """(new root, new inputs) for every single kernel move."""
  for r in drop_calls(root): yield r, inputs
  for r in drop_effects(root): yield r, inputs
  for r in drop_gates(root): yield r, inputs
  for r in retarget_outputs(root): yield r, inputs
  for r in drop_after_deps(root): yield r, inputs
  for u in root.toposort():
    if u.op is Ops.RANGE: yield drop_range(root, u), inputs
  for r in shorter_ranges(root): yield r, inputs
  for r in simpler_indices(root): yield r, inputs
  yield from shrink_buffers(root, inputs)

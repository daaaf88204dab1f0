"""The execution order of a kernel body's nodes: properly nested loops, each RANGE closed by one END.

linearize writes this order into a LINEAR, and the reference evaluator runs a kernel SINK in it, so a kernel means
what its linearized program computes. `one_end_per_range` gives every END its own RANGEs; `schedule` orders the
nodes: each node runs inside the loops of the RANGEs it depends on that no END below it closes (open_ranges), and
within a loop, nodes and inner loops keep their topological order, earliest first.
"""
from __future__ import annotations

import heapq

from tinyspec.uop import Ops, UOp, open_ranges, substitute


class LoopOrderError(ValueError):
  """A kernel whose loops cannot be nested (a RANGE never closed, or used where its loop cannot be open)."""


def one_end_per_range(body: UOp) -> UOp:
  """body where every RANGE is closed by one END: later ENDs over a shared RANGE get a fresh copy of it."""
  next_axis = max((u.arg.axis for u in body.toposort() if u.op is Ops.RANGE), default=-1) + 1
  for _ in range(10_000):
    claimed: dict[UOp, UOp] = {}
    conflict = None
    for e in (u for u in body.toposort() if u.op is Ops.END):
      for r in e.src[1:]:
        if r.op is not Ops.RANGE: raise LoopOrderError(f"END closes a {r.op.name}, not a RANGE")
        if claimed.setdefault(r, e) is not e: conflict = (e, r)
      if conflict: break
    if conflict is None: return body
    e, r = conflict
    if any(u.op is Ops.END and r in u.src[1:] for u in e.src[0].toposort()):
      raise LoopOrderError(f"RANGE axis {r.arg.axis} is closed by an END nested inside another END over it")
    fresh = UOp.range(r.src[0], next_axis, r.arg.kind)
    next_axis += 1
    body = substitute(body, {e: substitute(e, {r: fresh})})
  raise LoopOrderError("too many ENDs share RANGEs")


def schedule(body: UOp) -> list[UOp]:
  """Every node under body in an execution order with properly nested loops (see the module doc)."""
  nodes = body.toposort()
  pos = {u: i for i, u in enumerate(nodes)}
  chain: dict[UOp, tuple[UOp, ...]] = {}

  def ctx_of(rs: frozenset[UOp], what: UOp) -> tuple[UOp, ...]:
    if not rs: return ()
    for r in rs:
      if r not in chain: raise LoopOrderError(f"{what.op.name} uses RANGE axis {r.arg.axis}, which no END closes")
    inner = max(rs, key=lambda r: len(chain[r]))
    base = chain[inner]
    if not rs <= set(base):
      raise LoopOrderError(f"{what.op.name} depends on RANGEs {sorted(r.arg.axis for r in rs)} that are not nested in one another")
    return base

  for e in reversed([u for u in nodes if u.op is Ops.END]):  # users first: an END's outer loops are closed by its users
    base = ctx_of(open_ranges(e), e)
    for i, r in enumerate(e.src[1:]): chain[r] = base + e.src[1:i + 2]
  ctx = {u: (chain[u][:-1] if u.op is Ops.RANGE and u in chain else ctx_of(open_ranges(u), u)) for u in nodes}
  if any(u.op is Ops.RANGE and u not in chain for u in nodes):
    r = next(u for u in nodes if u.op is Ops.RANGE and u not in chain)
    raise LoopOrderError(f"RANGE axis {r.arg.axis} is never closed by an END")

  out: list[UOp] = []
  # (prefix, members) blocks, emitted depth-first; an explicit stack keeps deep loop nests off Python's recursion
  work: list = [((), nodes)]
  while work:
    item = work.pop()
    if isinstance(item, UOp):
      out.append(item)
      continue
    prefix, members = item
    d = len(prefix)

    def item_of(u: UOp, d=d) -> UOp | tuple:
      c = ctx[u]
      if u.op is Ops.RANGE and len(c) == d: return ("loop", u)
      return u if len(c) == d else ("loop", c[d])
    mset = set(members)
    key: dict = {}
    deps: dict = {}
    users: dict = {}
    for u in members:
      it = item_of(u)
      key[it] = min(key.get(it, pos[u]), pos[u])
      deps.setdefault(it, set())
      for s in u.src:
        if s in mset and (si := item_of(s)) != it:
          if si not in deps[it]:
            deps[it].add(si)
            users.setdefault(si, []).append(it)
    ready = [(key[it], i, it) for i, it in enumerate(key) if not deps[it]]
    order_idx = {it: i for i, it in enumerate(key)}
    heapq.heapify(ready)
    ordered = []
    while ready:
      _, _, it = heapq.heappop(ready)
      ordered.append(it)
      for v in users.get(it, ()):
        deps[v].discard(it)
        if not deps[v]: heapq.heappush(ready, (key[v], order_idx[v], v))
    if len(ordered) != len(key): raise LoopOrderError("the kernel's loops depend on one another in a cycle")
    # push in reverse so the stack pops them in order
    for it in reversed(ordered):
      if isinstance(it, UOp): work.append(it)
      else:
        r = it[1]
        inner = prefix + (r,)
        work.append((inner, [u for u in members if u is not r and ctx[u][:d + 1] == inner]))
        work.append(r)
  return out

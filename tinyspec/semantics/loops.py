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
import heapq

import numpy as np

from tinyspec.dtype import dtypes
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


def one_end_per_range(body: UOp) -> UOp:
  """body where every RANGE is closed by one END: later ENDs over a shared RANGE get a fresh copy of it."""
  next_axis = max((u.arg.axis for u in body.toposort() if u.op is Ops.RANGE), default=-1) + 1
  for _ in range(10_000):
    claimed: dict[UOp, UOp] = {}
    conflict = None
    for e in (u for u in body.toposort() if u.op is Ops.END):
      for r in e.src[1:]:
        if r.op is not Ops.RANGE: raise EvalError(e, f"closes a {r.op.name}, not a RANGE")
        if claimed.setdefault(r, e) is not e: conflict = (e, r)
      if conflict: break
    if conflict is None: return body
    e, r = conflict
    if any(u.op is Ops.END and r in u.src[1:] for u in e.src[0].toposort()):
      raise EvalError(e, f"closes RANGE axis {r.arg.axis} around an END nested inside it that closes it too")
    fresh = UOp.range(r.src[0], next_axis, r.arg.kind)
    next_axis += 1
    body = substitute(body, {e: substitute(e, {r: fresh})})
  raise EvalError(body, "has too many ENDs sharing RANGEs")


def _contexts(nodes: list[UOp], place: dict[UOp, frozenset[UOp]]) -> dict[UOp, tuple[UOp, ...]]:
  """For every node, the loops it runs in, outermost first (a RANGE's own loop not included)."""
  chain: dict[UOp, tuple[UOp, ...]] = {}

  def ctx_of(rs: frozenset[UOp], what: UOp) -> tuple[UOp, ...]:
    if not rs: return ()
    for r in rs:
      if r not in chain: raise EvalError(what, f"uses RANGE axis {r.arg.axis}, which no END closes")
    base = chain[max(rs, key=lambda r: len(chain[r]))]
    if not rs <= set(base): raise EvalError(what, f"depends on RANGEs {sorted(r.arg.axis for r in rs)} that are not nested in one another")
    return base

  for e in reversed([u for u in nodes if u.op is Ops.END]):  # users first: an END's outer loops are closed by its users
    base = ctx_of(place[e], e)
    for i, r in enumerate(e.src[1:]): chain[r] = base + e.src[1:i + 2]
  for u in nodes:
    if u.op is Ops.RANGE and u not in chain: raise EvalError(u, "is never closed by an END")
  return {u: (chain[u][:-1] if u.op is Ops.RANGE else ctx_of(place[u], u)) for u in nodes}


def schedule(body: UOp) -> list[UOp]:
  """Every node under body in execution order, RANGE opening and END closing properly nested loops."""
  nodes = body.toposort()
  pos = {u: i for i, u in enumerate(nodes)}
  ctx = _contexts(nodes, {u: open_ranges(u) for u in nodes})
  out: list[UOp] = []
  work: list = [((), nodes)]  # (loop prefix, members) blocks, emitted depth-first from an explicit stack
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
        if s in mset and (si := item_of(s)) != it and si not in deps[it]:
          deps[it].add(si)
          users.setdefault(si, []).append(it)
    order_idx = {it: i for i, it in enumerate(key)}
    ready = [(key[it], order_idx[it], it) for it in key if not deps[it]]
    heapq.heapify(ready)
    ordered = []
    while ready:
      _, _, it = heapq.heappop(ready)
      ordered.append(it)
      for v in users.get(it, ()):
        deps[v].discard(it)
        if not deps[v]: heapq.heappush(ready, (key[v], order_idx[v], v))
    if len(ordered) != len(key): raise EvalError(body, "has loops that depend on one another in a cycle")
    for it in reversed(ordered):
      if isinstance(it, UOp): work.append(it)
      else:
        r = it[1]
        inner = prefix + (r,)
        work.append((inner, [u for u in members if u is not r and ctx[u][:d + 1] == inner]))
        work.append(r)
  return out


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
  if body.op is Ops.SINK: return from_linear(tuple(schedule(one_end_per_range(expand_reduces(body)))))
  raise EvalError(body, "is not a kernel body (a SINK of effects, a LINEAR or a PROGRAM)")

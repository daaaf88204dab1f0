"""linearize (KERNEL -> PROGRAM): each kernel body becomes PROGRAM(kernel_sink, LINEAR(nodes in execution order)).

Steps per kernel:
  1. every RANGE gets exactly one END: a RANGE closed by several ENDs (two stores or two reductions over the same
     axis) is copied, with a fresh axis id, into each END after the first, which then runs its own loop;
  2. `index` becomes int32 when every index value of the kernel fits, else int64 (options.int_dtype overrides), by
     the rewrite rule index_to_int, which retypes the whole kernel SINK in one application (a kernel typed half in
     `index` and half in int32 would mix dtypes), then drop_noop_cast removes the casts that became no-ops;
  3. scheduling: a node runs inside the loops of the RANGEs it depends on (through no END that closes them) and
     outside every other loop, so loop-invariant nodes are hoisted. Loops nest as the ENDs say: an END's ranges
     open, in order, inside the loops the END itself runs in. Within one loop body nodes keep the order of a
     depth-first walk from the SINK, sources first; a loop is placed as one item, after everything it uses.
The PROGRAM is built only from a fully lowered kernel: when the step limit of a Trace stops the rewrite before that,
the kernel stays the (KERNEL-legal) kernel SINK it has become so far.
"""
from __future__ import annotations

import heapq
import re

from tinyspec.dtype import DType, dtypes
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.kernel_map import map_kernels, max_axis
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.uop import Ops, UOp, open_ranges, substitute


class LinearizeError(ValueError):
  """A kernel whose loops cannot be nested (a RANGE never closed, or used where its loop cannot be open)."""


# ---- 1. one END per RANGE ----
def one_end_per_range(body: UOp) -> UOp:
  next_axis = max_axis(body) + 1
  for _ in range(10_000):
    claimed: dict[UOp, UOp] = {}
    conflict = None
    for e in (u for u in body.toposort() if u.op is Ops.END):
      for r in e.src[1:]:
        if r.op is not Ops.RANGE: raise LinearizeError(f"END closes a {r.op.name}, not a RANGE")
        if claimed.setdefault(r, e) is not e: conflict = (e, r)
      if conflict: break
    if conflict is None: return body
    e, r = conflict
    if any(u.op is Ops.END and r in u.src[1:] for u in e.src[0].toposort()):
      raise LinearizeError(f"RANGE axis {r.arg.axis} is closed by an END nested inside another END over it")
    fresh = UOp.range(r.src[0], next_axis, r.arg.kind)
    next_axis += 1
    body = substitute(body, {e: substitute(e, {r: fresh})})
  raise LinearizeError("too many ENDs share RANGEs")


# ---- 2. index -> int32 / int64 ----
def index_dtype_for(body: UOp, override: DType | None) -> DType:
  """int32 when every `index` node's bounds fit in it, else int64; override when given."""
  if override is not None:
    if override not in (dtypes.int32, dtypes.int64): raise ValueError(f"int_dtype must be int32 or int64, not {override!r}")
    return override
  i32 = dtypes.int32
  ok = all(i32.min <= u.vmin and u.vmax <= i32.max for u in body.toposort() if u.dtype is dtypes.index)
  return i32 if ok else dtypes.int64


def index_to_int(ctx: DType, sink: UOp) -> UOp | None:
  """The kernel SINK with every `index` node retyped to ctx; None when none is left."""
  new: dict[UOp, UOp] = {}
  for u in sink.toposort():
    src = tuple(new[s] for s in u.src)
    dt = ctx if u.dtype is dtypes.index else u.dtype
    new[u] = u if dt is u.dtype and all(a is b for a, b in zip(src, u.src)) else u.replace(dtype=dt, src=src)
  return None if new[sink] is sink else new[sink]


def _noop_cast(c: UOp) -> bool: return c.op is Ops.CAST and c.dtype is c.src[0].dtype


lower_index_pm = PatternMatcher([
  ("index_to_int", UPat(Ops.SINK, name="sink"), index_to_int),
  ("drop_noop_cast", UPat(Ops.CAST, name="c", src=(UPat.var("x"),)), lambda c, x: x if _noop_cast(c) else None),
], name="lower_index")


def _lowered(body: UOp) -> bool:
  return not any(u.dtype is dtypes.index or _noop_cast(u) for u in body.toposort())


# ---- 3. scheduling ----
def schedule(body: UOp) -> list[UOp]:
  """Every node under body in an execution order with properly nested loops (see the module doc)."""
  nodes = body.toposort()
  pos = {u: i for i, u in enumerate(nodes)}
  chain: dict[UOp, tuple[UOp, ...]] = {}

  def ctx_of(rs: frozenset[UOp], what: UOp) -> tuple[UOp, ...]:
    if not rs: return ()
    for r in rs:
      if r not in chain: raise LinearizeError(f"{what.op.name} uses RANGE axis {r.arg.axis}, which no END closes")
    inner = max(rs, key=lambda r: len(chain[r]))
    base = chain[inner]
    if not rs <= set(base):
      raise LinearizeError(f"{what.op.name} depends on RANGEs {sorted(r.arg.axis for r in rs)} that are not nested in one another")
    return base

  for e in reversed([u for u in nodes if u.op is Ops.END]):  # users first: an END's outer loops are closed by its users
    base = ctx_of(open_ranges(e), e)
    for i, r in enumerate(e.src[1:]): chain[r] = base + e.src[1:i + 2]
  ctx = {u: (chain[u][:-1] if u.op is Ops.RANGE and u in chain else ctx_of(open_ranges(u), u)) for u in nodes}
  if any(u.op is Ops.RANGE and u not in chain for u in nodes):
    r = next(u for u in nodes if u.op is Ops.RANGE and u not in chain)
    raise LinearizeError(f"RANGE axis {r.arg.axis} is never closed by an END")

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
    if len(ordered) != len(key): raise LinearizeError("the kernel's loops depend on one another in a cycle")
    # push in reverse so the stack pops them in order
    for it in reversed(ordered):
      if isinstance(it, UOp): work.append(it)
      else:
        r = it[1]
        inner = prefix + (r,)
        work.append((inner, [u for u in members if u is not r and ctx[u][:d + 1] == inner]))
        work.append(r)
  return out


def _kernel_name(call: UOp | None, i: int) -> str:
  base = call.arg if call is not None and isinstance(call.arg, str) and call.arg else "kernel"
  return f"{re.sub(r'[^A-Za-z0-9_]', '_', base)}_{i}"


def linearize_body(body: UOp, name: str, options: LowerOptions | None = None, trace: Trace | None = None) -> UOp:
  """PROGRAM(sink, LINEAR(...)) for one kernel SINK; the partly lowered kernel SINK when trace's step limit stops it first."""
  if body.op is not Ops.SINK: raise LinearizeError(f"linearize takes a kernel SINK, not {body.op.name}")
  if any(u.op is Ops.REDUCE for u in body.toposort()): raise LinearizeError("kernel still holds a REDUCE; run lower_reduce first")
  body = one_end_per_range(body)
  idt = index_dtype_for(body, options.int_dtype if options else None)
  trace = trace or Trace()
  body = trace.rewrite(body, lower_index_pm, idt)
  if trace.exhausted and not _lowered(body): return body
  return UOp(Ops.PROGRAM, src=(body, UOp(Ops.LINEAR, src=tuple(schedule(body)))), arg=name)


def _run(root: UOp, options: LowerOptions, trace: Trace) -> UOp:
  count = [0]
  def one(call: UOp | None, body: UOp) -> UOp:
    if body.op is Ops.PROGRAM: return body
    count[0] += 1
    return linearize_body(body, _kernel_name(call, count[0] - 1), options, trace)
  return map_kernels(root, one)


LINEARIZE = Pass("linearize", Stage.KERNEL, Stage.PROGRAM, _run, (lower_index_pm,))

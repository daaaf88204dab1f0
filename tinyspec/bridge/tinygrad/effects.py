"""Rules of effects and their order: SINK (a kernel graph's entries, its write-after-read order made explicit), STORE,
AFTER (an assign into a tensor not yet realized, into storage over a device tuple, a wait on a view of storage, a bound
variable), GROUP, NOOP and END."""
from __future__ import annotations

from typing import Any, Callable

from tinyspec.bridge.tinygrad.arithmetic import broadcast
from tinyspec.bridge.tinygrad.bound import bound_value, is_bound
from tinyspec.bridge.tinygrad.devices import multi_count
from tinyspec.bridge.tinygrad.indexing import index_and_gate
from tinyspec.bridge.tinygrad.storage import as_wanted, storage_shards
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import define_var
from tinyspec.bridge.tinygrad.views import STORAGE_VIEWS
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp, walk


def r_sink(tr: Translator, u: Any, want: Any) -> UOp:
  if tr.stage != "kernel_graph" or tr.kernel: return UOp(Ops.SINK, dtypes.void, tuple(tr.value(s) for s in u.src))
  # a kernel graph's entry over a device tuple is one entry per device, each as launched there (tinyspec's kernel graph is
  # per device: its multi pass runs before callify)
  out = []
  for s in u.src:
    if tr.shard is not None or (n := multi_count(s)) is None: out.append(tr.value(s))
    else: out += tr.per_device(n, lambda s=s: tr.value(s))
  return reads_before_writes(UOp(Ops.SINK, dtypes.void, tuple(out)))


def reads_before_writes(sink: UOp) -> UOp:
  """tinygrad's schedule runs a kernel that reads a buffer's state before any kernel that writes over that state
  (create_schedule's write-after-read dependencies), which its kernel graph leaves unsaid: `m = (a + 1)` and
  `a.assign(a * 2)` both take `a`. tinyspec's order is AFTER alone, so the call writing arg v takes AFTER(v, readers...)
  as that arg (and its result is the AFTER of that), readers being the other calls of the graph taking that same v, as
  schedule_to_graph orders a precompiled schedule. A reader that waits on the writer itself is left alone."""
  outside_bodies = lambda x: x.src[1:] if x.op is Ops.CALL else x.src   # noqa: E731 (a kernel's body is its own)
  nodes = walk((sink,), outside_bodies)
  writes: dict[UOp, set[UOp]] = {}
  for a in nodes:
    if a.op is Ops.AFTER:
      for d in a.src[1:]:
        if d.op is Ops.CALL and a.src[0] in d.src[1:]: writes.setdefault(d, set()).add(a.src[0])
  if not writes: return sink
  readers: dict[UOp, list[UOp]] = {}
  for c in nodes:
    if c.op is Ops.CALL:
      for x in dict.fromkeys(c.src[1:]):
        if x not in writes.get(c, ()): readers.setdefault(x, []).append(c)
  waits = {(c, v): r for c, vs in writes.items() for v in vs
           if (r := [x for x in readers.get(v, []) if c not in walk((x,), outside_bodies)])}
  if not waits: return sink
  new: dict[UOp, UOp] = {}
  extra: dict[UOp, list[UOp]] = {}
  for (c, _), rs in waits.items(): extra.setdefault(c, []).extend(rs)
  def rebuilt(u: UOp) -> UOp:
    # sources first, the readers a rewritten writer waits on included (an explicit stack: a graph may be deep)
    stack, open_ = [(u, False)], set()
    while stack:
      x, ready = stack.pop()
      if x in new: continue
      if not ready:
        if x in open_: raise Untranslatable("AFTER", "kernel_graph", "ordering each write after the reads of what it overwrites makes a cycle")
        open_.add(x)
        stack.append((x, True))
        stack.extend((d, False) for d in (*outside_bodies(x), *extra.get(x, ())) if d not in new)
        continue
      if x.op is Ops.CALL:
        args = [new[a] for a in x.src[1:]]
        for k, a in enumerate(x.src[1:]):
          if (x, a) in waits: args[k] = UOp(Ops.AFTER, args[k].dtype, (new[a], *(new[r] for r in waits[x, a])))
        new[x] = UOp(Ops.CALL, x.dtype, (x.src[0], *args), x.arg)
      elif x.op is Ops.AFTER and any((d, x.src[0]) in waits for d in x.src[1:]):
        c = next(d for d in x.src[1:] if (d, x.src[0]) in waits)
        # the version it makes is of the writer's arg as the writer now takes it (after its readers)
        new[x] = UOp(Ops.AFTER, x.dtype, (new[c].src[1 + c.src[1:].index(x.src[0])], *(new[d] for d in x.src[1:])))
      else: new[x] = x if not x.src else UOp(x.op, x.dtype, tuple(new[s] for s in x.src), x.arg)
    return new[u]
  return rebuilt(sink)


def r_store(tr: Translator, u: Any, want: Any) -> UOp:
  tgt, val = u.src[0], u.src[1]
  if tr.kernel and tgt.op.name == "INDEX":
    idx, gate = index_and_gate(tr, tgt)
    extra = tuple(tr(g) for g in u.src[2:])
    if gate is not None and extra: raise Untranslatable("STORE", tr.stage, "a STORE with both a gated index and a gate")
    return UOp(Ops.STORE, dtypes.void, (idx, tr.value(val, idx.dtype), *((gate,) if gate is not None else extra)))
  t = tr(tgt)
  return UOp(Ops.STORE, dtypes.void, (t, broadcast(tr, tr.value(val, t.dtype), t.shape) if t.shape else tr.value(val, t.dtype)))


def assign_to_value(tr: Translator, u: Any) -> UOp | None:
  """AFTER(x, STORE(x, v)) at a tensor stage where x is no storage (its base, through BITCAST, AFTER and UNSHARD, is
  neither BUFFER nor PARAM: an assign into a tensor not yet realized, as an optimizer's first step assigns into a parameter
  that is still a copy of a numpy array): tinygrad's transform_to_call rewrites it to CONTIGUOUS(v) before anything
  else (replace_store_after_with_contig), so it means the value v, made a tensor of its own; None for any other AFTER."""
  if tr.kernel or tr.stage not in ("tensor", "callified") or len(u.src) != 2: return None
  st = u.src[1]
  if st.op.name != "STORE" or len(st.src) != 2: return None
  x = u
  while x.op.name in ("BITCAST", "AFTER", "UNSHARD"): x = x.src[0].base
  if x.op.name in ("BUFFER", "PARAM"): return None
  v = tr.value(st.src[1], tr.dtype(u))
  # the target's own graph (the parameter's initial value, a random init) is what tinygrad's rewrite discards, unrun
  tr.seen(st, *u.src[0].toposort())
  return UOp(Ops.CONTIGUOUS, v.dtype, (broadcast(tr, v, tr.shape(u)),))


def store_per_device(tr: Translator, u: Any) -> UOp | None:
  """AFTER(x, STORE(x, v)) at a tensor stage with x storage over a device tuple (one buffer per device): tinyspec's
  storage is on one device, so it is a STORE per device of that device's part of v, COPY(v's block j, device j) (split:
  the SHRINK of v to shard j's block; replicated: v; tinyspec's COPY of a MULTI to one of its devices is the shard
  already there), each AFTER its storage; read as a value, the MULTI of those AFTERs. None for any other AFTER."""
  if tr.kernel or tr.shard is not None or tr.stage not in ("tensor", "callified") or len(u.src) != 2: return None
  tgt, st = u.src
  if st.op.name != "STORE" or len(st.src) != 2 or st.src[0] is not tgt: return None
  if (shards := storage_shards(tr, tgt)) is None: return None
  targets, axis = shards
  v = tr.value(st.src[1], targets[0].dtype)
  v = broadcast(tr, v, tr.shape(tgt)) if v.shape else v
  out, off = [], 0
  for t in targets:
    part = v
    if axis is not None:
      part = v.shrink(tuple((off, t.shape[axis]) if i == axis else (0, d) for i, d in enumerate(v.shape)))  # (offset, size)
      off += t.shape[axis]
    if part.device != t.device: part = part.copy_to(t.device)
    out.append(UOp(Ops.AFTER, t.dtype, (t, UOp(Ops.STORE, dtypes.void, (t, part)))))
  tr.seen(st)
  return UOp.multi(out, axis)


def wait_per_device(tr: Translator, u: Any) -> UOp | None:
  """AFTER(x, deps...) at a tensor stage with x storage over a device tuple (a sharded output waiting on the precompiled
  call that writes it): the MULTI of an AFTER per device, each device's storage waiting on the same effects. None for
  any other AFTER."""
  if tr.kernel or tr.shard is not None or tr.stage not in ("tensor", "callified"): return None
  if (shards := storage_shards(tr, u.src[0])) is None: return None
  targets, axis = shards
  deps = [after_dep(tr, d) for d in u.src[1:]]
  # a kernel run once per device (launch_per_device, a GROUP of the runs): device j's storage waits on device j's run
  runs = [tr.memo.get(("launch", d)) for d in u.src[1:]]
  def waits(j: int) -> tuple[UOp, ...]:
    return tuple(e for ds, r in zip(deps, runs) for e in (ds if r is None or len(r) != len(targets) else [r[j]]))
  return UOp.multi([UOp(Ops.AFTER, t.dtype, (t, *waits(j))) for j, t in enumerate(targets)], axis)


def r_after(tr: Translator, u: Any, want: Any) -> UOp:
  if is_bound(u):   # bind()'s AFTER(var, STORE(var, CONST v)): the variable bound to v
    tr.seen(*u.toposort())
    return as_wanted(define_var(tr, u.src[0]).bind(bound_value(u)), want)
  if (v := store_per_device(tr, u)) is not None: return v
  if (v := assign_to_value(tr, u)) is not None: return v
  if (v := wait_per_device(tr, u)) is not None: return v
  base = tr(u.src[0])
  return UOp(Ops.AFTER, base.dtype, (base, *(e for d in u.src[1:] for e in after_dep(tr, d))))


def after_dep(tr: Translator, d: Any) -> list[UOp]:
  """One dependency of an AFTER, as tinyspec's effects. tinygrad also lets an AFTER wait on a value: a view of storage
  (movement ops and AFTERs down to its BUFFER or PARAM), as an assign into a slice makes
  (AFTER(buf, AFTER(SHRINK(buf), STORE(SHRINK(buf), v)))). Waiting on such a view is waiting on the effects of the AFTERs
  in it, so those are the dependencies; any other dependency is translated as it is (and checked)."""
  if tr.kernel or d.op.name != "AFTER": return [tr.value(d)]
  effects, chain, x = [], [], d
  while x.op.name == "AFTER" or x.op.name in STORAGE_VIEWS:
    chain.append(x)
    if x.op.name == "AFTER": effects.extend(x.src[1:])
    else: chain.extend(y for s in x.src[1:] for y in s.toposort())   # the shape and bound arguments of a movement op
    x = x.src[0]
  if x.op.name not in ("BUFFER", "PARAM") or not effects: return [tr.value(d)]
  tr.seen(*chain, *x.toposort())
  # once per node, and each effect once: a chain of n assigns into slices nests n such views, each reached again from
  # the ones above it
  key = ("after_dep", d, tr.shard)
  if (hit := tr.memo.get(key)) is None:
    hit = tr.memo[key] = list(dict.fromkeys(e for dep in effects for e in after_dep(tr, dep)))
  return hit


def r_effects(op: Ops) -> Callable:
  def fn(tr: Translator, u: Any, want: Any) -> UOp: return UOp(op, dtypes.void, tuple(tr(s) for s in u.src))
  return fn

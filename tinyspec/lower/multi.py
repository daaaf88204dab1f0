"""multi (TENSOR -> TENSOR): tensors over several devices become one graph per device, joined by COPYs.

A MULTI(s_0, ..., s_{n-1}) with arg axis a is one tensor split along a: shard i, on device d_i, is the i-th block (the
blocks' sizes along a are the split, docs/ir.md "Multi-device tensors"); with arg None it is one value replicated on
every d_i. The rewrite is bottom-up, so an op meets its sources already resolved, and pm_multi turns every op with a
MULTI source into a MULTI of the op on each shard:

- elementwise ops, CONTIGUOUS, DETACH (`multi_elementwise`): operand i of shard i. A replicated operand, or a device-less
  one (a constant), is cut to the shard's block (SHRINK); an operand sharded along another axis is gathered first. A
  single-device operand beside a MULTI is a device error (the spec's tensor.one_device), raised as MultiError.
  Every rule gives a value on the devices its node was on, so each graph between two rule applications is legal too.
- views (`multi_view`): a view that keeps the sharded axis whole (PERMUTE, EXPAND, PAD/SHRINK/FLIP off the axis, a
  RESHAPE that maps the axis onto one axis of the result, blocks included) runs per shard with the axis renumbered; a
  SHRINK to exactly one shard's block is that shard, replicated (copied only where read); any other view of the sharded axis
  gathers the tensor onto every device first (all-gather) and views the replicas.
- REDUCE (`multi_reduce`): over other axes, per shard; over the sharded axis, per shard and then an all-reduce: every
  device combines the partial results of all shards, copied to it, in shard order (so the replicas are bitwise equal).
- COPY of a MULTI to a device (`multi_copy`): the gather onto that device (shards concatenated there; for a replicated
  MULTI, the replica already there or replica 0's copy); a COPY to the device a value already lives on is dropped.
- value calls (`multi_call`): GETTUPLE(CALL(TUPLE(...), args), i) whose args are MULTIs over one device tuple (or
  device-less values, copied to every device) runs per shard when its body is elementwise along the sharded axes: the
  body is rewritten with each arg's reshaped PARAM standing for a MULTI of per-device PARAMs, and when that needs no
  COPY (no gather, no all-reduce) and every output comes out a MULTI over those devices, shard i is
  CALL(TUPLE(outputs' shard i), args' shard i) on device i, and the outputs keep their sharding (a backward call's
  slot k, the flat gradient of arg k, is split as arg k is). Otherwise (the body reduces or reshapes across the split,
  or an arg is a single-device value) every MULTI arg is gathered onto the first device of the first MULTI arg, the call runs once there and its
  outputs are replicated on the devices (copied), so a call on tensors over some devices gives tensors over them.
- what leaves the multi-device world (`multi_exit`): a SINK entry, a TUPLE entry and a STORE value that are MULTIs are
  gathered onto one device (a STORE's target's; otherwise the MULTI's first device), so a graph's results are arrays
  like any other. A STORE into a MULTI raises MultiError (storage is single-device).

After the pass no MULTI is left: what follows lowers per-device graphs with COPYs, which the spec's device rules check.
"""
from __future__ import annotations

import math
from typing import Sequence

from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace, nested_rewrite
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.spec.gradient import GRAD_SUFFIX
from tinyspec.uop import GroupOp, Ops, ParamArg, UOp, shard_blocks, substitute, walk


class MultiError(ValueError):
  """A graph over several devices that the multi pass cannot place: it names the op and the devices involved."""


# ---- the sharding of a MULTI ----

def devices(m: UOp) -> tuple[str, ...]: return tuple(s.device for s in m.src)


def _cut(x: UOp, axis: int, block: tuple[int, int]) -> UOp:
  """x's block along axis (a SHRINK; x itself when the block is all of it)."""
  if block == (0, x.shape[axis]): return x
  return x.shrink(tuple(block if j == axis else (0, d) for j, d in enumerate(x.shape)))


def concat(parts: Sequence[UOp], axis: int) -> UOp:
  """parts side by side along axis, exactly (each placed by a PAD and chosen by a mask, so no arithmetic touches a value,
  a -0.0 included)."""
  if len(parts) == 1: return parts[0]
  total = sum(p.shape[axis] for p in parts)
  def placed(p: UOp, off: int) -> UOp:
    return p.pad(tuple((off, total) if j == axis else (0, d) for j, d in enumerate(p.shape)))
  out, off = placed(parts[0], 0), parts[0].shape[axis]
  for p in parts[1:]:
    mask = placed(UOp.const(dtypes.bool, True).expand(p.shape), off)
    out, off = UOp(Ops.WHERE, p.dtype, (mask, placed(p, off), out)), off + p.shape[axis]
  return out


def to_device(x: UOp, device: str) -> UOp:
  """x on device: itself when it is there, its COPY otherwise."""
  return x if x.device == device else x.copy_to(device)


def gather(m: UOp, device: str) -> UOp:
  """The whole value of MULTI m on one device."""
  if m.arg is None:
    return next((s for s in m.src if s.device == device), None) or m.src[0].copy_to(device)
  return concat([to_device(s, device) for s in m.src], m.arg)


def all_gather(m: UOp) -> UOp:
  """m replicated on its devices (m itself when it is replicated already)."""
  if m.arg is None: return m
  return UOp.multi([gather(m, d) for d in devices(m)], None)


def all_reduce(op: Ops, partials: Sequence[UOp]) -> UOp:
  """partials[i] (on device i) combined with op on every device, in shard order on each: a replicated MULTI."""
  def combined(dev: str) -> UOp:
    acc = to_device(partials[0], dev)
    for p in partials[1:]: acc = acc.alu(op, to_device(p, dev))
    return acc
  return UOp.multi([combined(p.device) for p in partials], None)


def _operand(x: UOp, ref: UOp, i: int, user: UOp) -> UOp:
  """Operand x of `user` for shard i of ref's sharding."""
  devs = devices(ref)
  if x.op is Ops.MULTI:
    if devices(x) != devs: raise MultiError(f"{user.op.name} combines values on {devices(x)} and {devs}")
    if x.arg == ref.arg and shard_blocks(x) == shard_blocks(ref): return x.src[i]
    rep = all_gather(x)
    return rep.src[i] if ref.arg is None else _cut(rep.src[i], ref.arg, shard_blocks(ref)[i])
  if x.device is not None:
    raise MultiError(f"{user.op.name} combines a value on {devs} with one on {x.device}: shard the one (Tensor.shard) or gather the other "
                     "(Tensor.to) first")
  return x if ref.arg is None else _cut(x, ref.arg, shard_blocks(ref)[i])


def _reference(u: UOp) -> UOp:
  """The MULTI source whose sharding the result takes: the first sharded one, else the first replicated one."""
  ms = [s for s in u.src if s.op is Ops.MULTI]
  return next((m for m in ms if m.arg is not None), ms[0])


def _has_multi(u: UOp) -> bool: return any(s.op is Ops.MULTI for s in u.src)


# ---- the rules ----

def multi_elementwise(u: UOp) -> UOp:
  ref = _reference(u)
  return UOp.multi([u.replace(src=tuple(_operand(s, ref, i, u) for s in u.src)) for i in range(len(ref.src))], ref.arg)


def _reshape_axis(old: tuple[int, ...], new: tuple[int, ...], axis: int, blk: tuple[tuple[int, int], ...]) -> int | None:
  """The axis of `new` that holds old's axis with its blocks intact, or None: the elements before it are the same
  number, and every block, measured in elements of the axes after it, is a whole number of rows of the new axis."""
  before, inner = math.prod(old[:axis]), math.prod(old[axis + 1:])
  for k in range(len(new)):
    if math.prod(new[:k]) != before: continue
    row = math.prod(new[k + 1:])
    if row and all((o * inner) % row == 0 and (n * inner) % row == 0 for o, n in blk) and new[k] * row == old[axis] * inner: return k
  return None


def _view_per_shard(v: UOp, m: UOp) -> UOp | None:
  """v over the shards of m, when v keeps m's sharded axis whole; None when it does not."""
  a, blk = m.arg, shard_blocks(m)
  if a is None: return UOp.multi([v.replace(src=(s,)) for s in m.src], None)
  if v.op is Ops.PERMUTE: return UOp.multi([v.replace(src=(s,)) for s in m.src], v.arg.index(a))
  if v.op is Ops.EXPAND: return UOp.multi([v.replace(src=(s,)) for s in m.src], a + len(v.arg))
  if v.op is Ops.RESHAPE:
    k = _reshape_axis(m.shape, v.arg, a, blk)
    if k is None: return None
    inner, row = math.prod(m.shape[a + 1:]), math.prod(v.arg[k + 1:])
    return UOp.multi([s.reshape(v.arg[:k] + (n * inner // row,) + v.arg[k + 1:]) for s, (_, n) in zip(m.src, blk)], k)
  if v.op is Ops.FLIP:
    if v.arg[a]: return None
    return UOp.multi([v.replace(src=(s,)) for s in m.src], a)
  # PAD and SHRINK: the sharded axis untouched, every shard keeps its block
  if v.arg[a] != (0, m.shape[a]): return None
  return UOp.multi([v.replace(src=(s,), arg=tuple((0, s.shape[a]) if j == a else p for j, p in enumerate(v.arg))) for s in m.src], a)


def multi_view(v: UOp, m: UOp) -> UOp:
  if (out := _view_per_shard(v, m)) is not None: return out
  a = m.arg
  if v.op is Ops.SHRINK and v.arg[a] in shard_blocks(m):
    # exactly one shard's block: that shard, replicated (copied to a device only where something there reads it), so the
    # value stays on the MULTI's devices and every graph between two rule applications is legal
    i = shard_blocks(m).index(v.arg[a])
    block = m.src[i].shrink(tuple((0, m.src[i].shape[a]) if j == a else p for j, p in enumerate(v.arg)))
    return UOp.multi([to_device(block, d) for d in devices(m)], None)
  return _view_per_shard(v, all_gather(m))


def multi_reduce(r: UOp, m: UOp) -> UOp:
  op, n = r.arg
  parts = [s.reduce(op, n) for s in m.src]
  if m.arg is None or m.arg >= n: return UOp.multi(parts, None if m.arg is None else m.arg - n)
  return all_reduce(op, parts)


def multi_copy(c: UOp, m: UOp) -> UOp: return gather(m, c.arg)


def _exit(u: UOp, device: str | None = None) -> UOp:
  return u.replace(src=tuple(gather(s, device or s.src[0].device) if s.op is Ops.MULTI else s for s in u.src))


def multi_store(st: UOp) -> UOp:
  if st.src[0].op is Ops.MULTI: raise MultiError(f"STORE into a tensor over {devices(st.src[0])}: storage is on one device")
  return _exit(st, st.src[0].device)


# ---- value calls ----

def _param_view(u: UOp, args: Sequence[UOp]) -> bool:
  """u is RESHAPE(PARAM k) to the shape of arg k: how a body reads a whole arg (tinyspec's frontend and autograd write it
  so), the one read the split can follow."""
  return u.op is Ops.RESHAPE and u.src[0].op is Ops.PARAM and u.src[0].arg.slot < len(args) and u.arg == args[u.src[0].arg.slot].shape


def _shard_param(u: UOp, a: UOp) -> UOp:
  """The MULTI that RESHAPE(PARAM k) stands for when arg k is the MULTI a: one PARAM per device, each its shard's size."""
  p = u.src[0]
  return UOp.multi([UOp(Ops.PARAM, p.dtype, (), ParamArg(p.arg.slot, s.size, s.device, p.arg.addrspace)).reshape(s.shape) for s in a.src],
                   a.arg)


def sharded_outputs(call: UOp) -> tuple[UOp, ...] | None:
  """The outputs of the call's TUPLE rewritten by pm_multi (a nested rewrite: the pass's table) with every whole-arg
  read standing for a MULTI of per-device PARAMs, or None when the body reads a PARAM another way (so it cannot be split)."""
  body, args = call.src[0], call.src[1:]
  own = lambda u: () if _param_view(u, args) else (u.src[1:] if u.op is Ops.CALL else u.src)  # noqa: E731
  nodes = walk((body,), own)
  if any(u.op is Ops.PARAM for u in nodes): return None
  mapping = {u: _shard_param(u, args[u.src[0].arg.slot]) for u in nodes if _param_view(u, args)}
  return tuple(nested_rewrite(substitute(o, mapping, into_calls=False), pm_multi) for o in body.src)


def _per_shard_calls(call: UOp) -> tuple[list[UOp], tuple[UOp, ...]] | None:
  """The per-device calls of a value call whose args are MULTIs over one device tuple and whose body is elementwise
  along their sharded axes, with the body's outputs as MULTIs; None when it is not."""
  ms = [a for a in call.src[1:] if a.op is Ops.MULTI]
  if any(a.op is not Ops.MULTI and a.device is not None for a in call.src[1:]) or len({devices(a) for a in ms}) != 1: return None
  devs = devices(ms[0])
  # a device-less arg (a constant, a gradient seed of ones) is copied to every device, as a replicated MULTI
  call = call.replace(src=(call.src[0], *(a if a.op is Ops.MULTI else UOp.multi([a.copy_to(d) for d in devs], None) for a in call.src[1:])))
  args = call.src[1:]
  try: outs = sharded_outputs(call)
  except MultiError: return None
  if outs is None: return None
  if isinstance(call.arg, str) and call.arg.endswith(GRAD_SUFFIX):  # slot k is the flat gradient of arg k: split as arg k is
    flats = [_view_per_shard(a.reshape((a.size,)), a) for a in args[:len(outs)]]
    if any(f is None for f in flats): return None
    outs = tuple(UOp.multi([_operand(o, f, i, o) for i in range(len(devs))], f.arg) for o, f in zip(outs, flats))
  if any(o.op is not Ops.MULTI or devices(o) != devs for o in outs): return None
  # a COPY the split added is a gather or an all-reduce: the body mixes shards, so it does not run per shard
  if sum(u.op is Ops.COPY for u in walk(outs)) != sum(u.op is Ops.COPY for u in walk((call.src[0],))): return None
  calls = [call.replace(src=(UOp(Ops.TUPLE, dtypes.void, tuple(o.src[i] for o in outs)), *(a.src[i] for a in args)))
           for i in range(len(devs))]
  return calls, outs


def multi_call(g: UOp, call: UOp) -> UOp:
  if (split := _per_shard_calls(call)) is not None:
    calls, outs = split
    return UOp.multi([c.gettuple(g.arg) for c in calls], outs[g.arg].arg)
  devs = devices(next(a for a in call.src[1:] if a.op is Ops.MULTI))
  out = g.replace(src=(_exit(call, devs[0]),))
  return UOp.multi([to_device(out, d) for d in devs], None)


_MULTI_SRC = dict(pred=_has_multi)
pm_multi = PatternMatcher([
  ("multi_elementwise", UPat(GroupOp.Elementwise | {Ops.CONTIGUOUS, Ops.DETACH}, name="u", **_MULTI_SRC), multi_elementwise),
  ("multi_view", UPat(GroupOp.Movement, src=(UPat(Ops.MULTI, name="m"),), name="v"), multi_view),
  ("multi_reduce", UPat(Ops.REDUCE, src=(UPat(Ops.MULTI, name="m"),), name="r"), multi_reduce),
  ("multi_copy_gather", UPat(Ops.COPY, src=(UPat(Ops.MULTI, name="m"),), name="c"), multi_copy),
  ("multi_copy_same_device", UPat(Ops.COPY, name="c", pred=lambda c: c.src[0].device == c.arg), lambda c: c.src[0]),
  ("multi_call", UPat(Ops.GETTUPLE, src=(UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call",
                                              pred=lambda c: any(a.op is Ops.MULTI for a in c.src[1:])),), name="g"), multi_call),
  ("multi_exit", UPat((Ops.SINK, Ops.TUPLE), name="u", **_MULTI_SRC), lambda u: _exit(u)),
  ("multi_store", UPat(Ops.STORE, name="st", **_MULTI_SRC), multi_store),
], "pm_multi")


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  if not any(u.op is Ops.MULTI for u in root.toposort()): return root  # the common case: one device, nothing to do
  out = trace.rewrite(root, tables.pm_multi, bottom_up=True)
  if not trace.exhausted: _no_multi_left(out)
  return out


def _no_multi_left(root: UOp) -> None:
  """A MULTI the rules left is one no rule places (an opaque or precompiled call's arg, an AFTER's storage): name its user."""
  for u in root.toposort():
    if u.op is not Ops.MULTI and (m := next((s for s in u.src if s.op is Ops.MULTI), None)) is not None:
      raise MultiError(f"{u.op.name} takes a tensor over {devices(m)}, which it cannot run per device: gather it onto one device "
                       "(Tensor.to) first")


MULTI = Pass("multi", Stage.TENSOR, Stage.TENSOR, run, (pm_multi,))

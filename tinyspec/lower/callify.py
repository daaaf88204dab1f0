"""callify (TENSOR -> TENSOR): value calls inlined (or precompiled), GETTUPLE of a TUPLE folded.

inline (default): GETTUPLE(CALL(TUPLE(v0, ...), a0, ...), i) becomes v_i with every PARAM slot k of the body
replaced by a_k (flat: RESHAPE(a_k, (size,)) when a_k is not already of shape (size,)). The rewrite is bottom-up, so
calls nested in a body are resolved before the body is substituted into its caller: a PARAM always belongs to the
innermost body it is reached from, and substitution never enters a nested CALL's body (src[0]).

precompile: each value call becomes a precompiled call, the form tinygrad's transform_to_call gives a
`@function(precompile=True)` (docs/ir.md): GETTUPLE(CALL(TUPLE(v0, ...), a0, ..., a_{n-1}), i) becomes AFTER(out_i, P)
(RESHAPEd to v_i's shape), where
  P = CALL(SINK(AFTER(PARAM(n), STORE(PARAM(n), v0)), ...), a0, ..., a_{n-1}, out_0, ...)
stores output i into PARAM slot n+i, bound to a fresh BUFFER out_i (its id fixed per call node, so callifying the same graph
again gives the same graph) on v_i's device; an arg that is not storage is realized first (CONTIGUOUS). An output of
constants alone, which has no device, is inlined instead: computed where it is read, on the reader's device. Calls nested in a body are
precompiled first (bottom-up). rangeify lowers each precompiled body into its own kernel graph.

A value call reads its args as values: a storage arg's contents as the arg names them, whatever else writes that
storage. A precompiled call reads its args by reference when it runs, so an arg whose storage another effect writes
with no order between the two (a STORE or an effect call that is neither upstream of the arg nor downstream of the
call) would make the precompiled graph race where the value call did not. Before precompiling, such an arg is wrapped
in CONTIGUOUS (rule `snapshot_raced_arg`, top-down over the input graph, deciding on the input's own nodes): the call
then reads a realized copy, which rangeify's schedule orders before the overwrite like any other read of the old
contents.

Both modes fold GETTUPLE of a bare TUPLE; a precompiled call in the input stays as it is.
"""
from __future__ import annotations

import weakref
from typing import Sequence

from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.schedule import strip_views
from tinyspec.lower.schedule import walk as outer_nodes
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.spec.tensor import tensor_storage, written_slots
from tinyspec.uop import GroupOp, Ops, UOp, is_precompiled_call, is_value_call, next_buffer_id, substitute, walk


def flat_arg(a: UOp, size: int) -> UOp:
  """What PARAM of `size` elements stands for when bound to arg a: a itself when flat, else its flat reshape."""
  if a.size != size: raise ValueError(f"call arg of shape {a.shape} ({a.size} elements) bound to a PARAM of {size} elements")
  return a if a.shape == (size,) else a.reshape((size,))


def substitute_params(body: UOp, args: tuple[UOp, ...]) -> UOp:
  """body with each PARAM slot k it owns replaced by args[k]. Nested CALL bodies own their PARAMs and are kept."""
  mapping: dict[UOp, UOp] = {}
  for u in walk((body,), lambda u: u.src[1:] if u.op is Ops.CALL else u.src):
    if u.op is not Ops.PARAM: continue
    if u.arg.slot >= len(args): raise ValueError(f"PARAM slot {u.arg.slot} of a call body, but the call has {len(args)} args")
    mapping[u] = flat_arg(args[u.arg.slot], u.arg.size)
  return substitute(body, mapping, into_calls=False)


def inline_output(g: UOp, call: UOp) -> UOp:
  """Output g.arg of the value call, its body's value with the call's args bound to its PARAMs (GETTUPLE g inlined)."""
  body = call.src[0]
  if not 0 <= g.arg < len(body.src): raise ValueError(f"GETTUPLE index {g.arg} of a call returning {len(body.src)} values")
  return substitute_params(body.src[g.arg], call.src[1:])


def tuple_element(g: UOp, t: UOp) -> UOp:
  """Element g.arg of the TUPLE t that GETTUPLE g reads; ValueError naming the index when there is none."""
  if not 0 <= g.arg < len(t.src): raise ValueError(f"GETTUPLE index {g.arg} of a TUPLE of {len(t.src)} values")
  return t.src[g.arg]


def storage_arg(a: UOp) -> UOp:
  """a as a precompiled call takes it: a itself when it is storage, else CONTIGUOUS(a) (realized into storage)."""
  return a if tensor_storage(a) else UOp(Ops.CONTIGUOUS, a.dtype, (a,))


def precompile(call: UOp, outs: Sequence[UOp]) -> UOp:
  """The value call CALL(TUPLE(v0, ...), a0, ..., a_{n-1}) as a precompiled call whose body stores v_i into PARAM slot n+i,
  bound to the storage outs[i] (flat, of v_i's size and dtype). Slots are positions: the args keep theirs, outputs follow."""
  tup, args = call.src[0], call.src[1:]
  if len(outs) != len(tup.src): raise ValueError(f"a call returning {len(tup.src)} values given {len(outs)} output buffers")
  entries = []
  for i, (v, o) in enumerate(zip(tup.src, outs)):
    p = UOp.param(len(args) + i, v.dtype, v.size, o.arg.device, o.arg.addrspace)
    entries.append(p.after((p if v.shape == p.shape else p.reshape(v.shape)).store(v)))
  return UOp(Ops.CALL, dtypes.void, (UOp(Ops.SINK, dtypes.void, tuple(entries)), *map(storage_arg, args), *outs), call.arg)


# the ids of each value call's output BUFFERs: the same call node (interned) is precompiled into the same call every time
_OUT_IDS: weakref.WeakKeyDictionary[UOp, list[int]] = weakref.WeakKeyDictionary()


def output_buffers(call: UOp) -> list[UOp]:
  """One flat BUFFER per output of the value call, with ids fixed for that call node."""
  vals = call.src[0].src
  ids = _OUT_IDS.setdefault(call, [next_buffer_id() for _ in vals])
  return [UOp.buffer(v.dtype, v.size, v.device or "CPU", id=i) for v, i in zip(vals, ids)]


def precompiled_output(call: UOp, outs: Sequence[UOp], i: int) -> UOp:
  """Output i of a value call once precompiled into outs: AFTER(outs[i], precompiled call), in the shape of output i."""
  v = call.src[0].src[i]
  out = outs[i].after(precompile(call, outs))
  return out if v.shape == out.shape else out.reshape(v.shape)


def _precompile_call(g: UOp, call: UOp) -> UOp:
  if not 0 <= g.arg < len(call.src[0].src): raise ValueError(f"GETTUPLE index {g.arg} of a call returning {len(call.src[0].src)} values")
  # an output of constants alone (no device: it reads no arg) is inlined, so it is computed on the device of what reads
  # it; its output buffer would be on "CPU" whatever that is
  if call.src[0].src[g.arg].device is None: return inline_output(g, call)
  return precompiled_output(call, output_buffers(call), g.arg)


_VIEWS_AND_AFTER = GroupOp.Movement | {Ops.AFTER}


def _storage_key(u: UOp) -> UOp:
  """The storage a view / AFTER chain names: what a writer and a reader are compared by."""
  return strip_views(u, _VIEWS_AND_AFTER)


def _writes(u: UOp) -> list[UOp]:
  """The storage an effect of the outer graph writes: a STORE its target's, a precompiled call the args its body
  stores into, another effect call any of its args (lowering lets it write them)."""
  if u.op is Ops.STORE and u.src: return [_storage_key(u.src[0])]
  if u.op is not Ops.CALL or is_value_call(u) or not u.src: return []
  args = u.src[1:]
  slots = sorted(written_slots(u.src[0])) if is_precompiled_call(u) else range(len(args))
  return [_storage_key(args[i]) for i in slots if i < len(args) and args[i].op not in GroupOp.Variable]


class RacedArgs:
  """Of each value call of a graph (outside call bodies), the arg positions whose storage another effect writes with no
  order to the call: the writer is not upstream of the arg, and the call is not upstream of the writer."""

  def __init__(self, root: UOp):
    nodes = outer_nodes(root)
    writers: dict[UOp, list[UOp]] = {}
    for u in nodes:
      for key in _writes(u): writers.setdefault(key, []).append(u)
    self.raced: dict[UOp, tuple[int, ...]] = {}
    below: dict[UOp, set[UOp]] = {}
    def upstream(u: UOp) -> set[UOp]:
      if u not in below: below[u] = set(u.toposort())
      return below[u]
    for c in nodes:
      if not is_value_call(c): continue
      hit = tuple(k for k, a in enumerate(c.src[1:]) if tensor_storage(a) and
                  any(w not in upstream(a) and c not in upstream(w) for w in writers.get(_storage_key(a), ())))
      if hit: self.raced[c] = hit


def snapshot_raced_args(call: UOp, ctx: RacedArgs) -> UOp | None:
  """The value call with each raced arg realized first (CONTIGUOUS): a value of the contents the call was given."""
  if (hit := ctx.raced.get(call)) is None: return None
  args = tuple(UOp(Ops.CONTIGUOUS, a.dtype, (a,)) if k in hit else a for k, a in enumerate(call.src[1:]))
  return call.replace(src=(call.src[0], *args))


pm_snapshot = PatternMatcher([
  ("snapshot_raced_arg", UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call"), snapshot_raced_args),
], "pm_snapshot")

pm_fold_tuple = PatternMatcher([
  ("gettuple_of_tuple", UPat(Ops.GETTUPLE, src=(UPat(Ops.TUPLE, name="t"),), name="g"), tuple_element),
], "pm_fold_tuple")

pm_inline = PatternMatcher([
  ("inline_gettuple_of_call", UPat(Ops.GETTUPLE, src=(UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call"),), name="g"),
   inline_output),
], "pm_inline")

pm_precompile = PatternMatcher([
  ("precompile_gettuple_of_call", UPat(Ops.GETTUPLE, src=(UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call"),), name="g"),
   _precompile_call),
], "pm_precompile")


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  fold = tables.pm_fold_tuple
  if options.callify == "inline": return trace.rewrite(root, tables.pm_inline + fold, bottom_up=True)
  if options.callify == "precompile":
    # top-down, so the rule meets each call of the input as it is: RacedArgs decided on those nodes
    root = trace.rewrite(root, tables.pm_snapshot, RacedArgs(root), bottom_up=False)
    return trace.rewrite(root, tables.pm_precompile + fold, bottom_up=True)
  raise ValueError(f"unknown callify mode {options.callify!r}; expected 'inline' or 'precompile'")


CALLIFY = Pass("callify", Stage.TENSOR, Stage.TENSOR, run, (pm_inline, pm_snapshot, pm_precompile, pm_fold_tuple))

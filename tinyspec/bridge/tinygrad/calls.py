"""Rules of calls: FUNCTION (a value call), CALL of a kernel, of a precompiled body, of a precompiled function's schedule
(a LINEAR of kernel CALLs, made a nested kernel graph) and of a COPY, TUPLE and GETTUPLE. A call's body reads its
variable args by the name tinygrad gives them (`pk`, variables.py); an arg over a device tuple is one arg per device."""
from __future__ import annotations

from typing import Any

from tinyspec.bridge.tinygrad.capture import copy_call
from tinyspec.bridge.tinygrad.devices import expanded_slots, launches, multi_count, param_axis
from tinyspec.bridge.tinygrad.effects import reads_before_writes
from tinyspec.bridge.tinygrad.storage import storage_shards
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import call_scope, define_var, kernel_vars, resolved, value_of
from tinyspec.bridge.tinygrad.views import GROUP_VIEWS
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp, storage_of, walk


def r_function(tr: Translator, u: Any, want: Any) -> UOp:
  """FUNCTION(TUPLE(...), args...) with a CallInfo -> CALL(TUPLE(...), args...): a value call read by GETTUPLE."""
  body = u.src[0]
  if body.op.name != "TUPLE": raise Untranslatable("FUNCTION", tr.stage, f"a FUNCTION whose body is {body.op.name}, not TUPLE")
  # the body's PARAMs stand for this call's args
  inner = Translator(tr.translation, tr.stage, value_body=True, scope=call_scope(tr, u.src[1:]))
  split = per_device_slots(body)
  if not split: return UOp(Ops.CALL, dtypes.void, (inner(body), *(tr(a) for a in u.src[1:])), call_name(u))
  # storage the body unshards is one arg per device (each device's own, not one value), its PARAMs renumbered
  counts = [multi_count(split[k]) if k in split else None for k in range(len(u.src) - 1)]
  inner.slots, inner.split = expanded_slots(counts), set(split)
  args: list[UOp] = []
  for k, a in enumerate(u.src[1:]):
    if k not in split:
      args.append(tr(a))
      continue
    per = storage_shards(tr, a) if tr.shard is None else None
    if per is None or len(per[0]) != counts[k]:
      raise Untranslatable("FUNCTION", tr.stage, f"arg {k}, storage over {counts[k]} devices its body unshards, is {a.op.name}")
    inner.slot_shapes.update({len(args) + j: x.shape for j, x in enumerate(per[0]) if x.shape is not None})
    args += per[0]
  return UOp(Ops.CALL, dtypes.void, (inner(body), *args), call_name(u))


def per_device_slots(body: Any) -> dict[int, Any]:
  """The PARAMs of a value call's body (not a nested call's) over a device tuple with no axis that the body UNSHARDs
  (through views): storage of its own on each device (Tensor.empty(..., device=devices).uop.unshard(0), a custom
  kernel's output), not one value read whole. By slot."""
  out: dict[int, Any] = {}
  for x in walk((body,), lambda x: x.src[1:] if x.op.name in ("CALL", "FUNCTION") else x.src):
    if x.op.name != "UNSHARD": continue
    p = x.src[0]
    while p.op.name in GROUP_VIEWS: p = p.src[0]
    if p.op.name == "PARAM" and param_axis(p) is None and multi_count(p) is not None: out[p.arg.slot] = p
  return out


def r_call(tr: Translator, u: Any, want: Any) -> UOp:
  """CALL(body, args...) with a void dtype: a kernel (SINK with KernelInfo), a precompiled call (a SINK storing tensor
  values into its PARAMs: its body is translated as a tensor graph over its own PARAMs), a LINEAR of kernel CALLs (a
  precompiled call's schedule), or a COPY."""
  if u.dtype.name != "void": raise Untranslatable("CALL", tr.stage, "a value-returning CALL inside a kernel (an inline function call)")
  body = u.src[0]
  name = body.op.name
  # the variables the body reads as pk: its own variable args shadow the enclosing scope's, other names it inherits
  # (tinygrad's resolve_linear_call: an all-reduce, passed no variable, reads a symbolic buffer's size as the caller's pk)
  inner = {**tr.scope, **call_scope(tr, u.src[1:])}
  if name == "SINK" and type(body.arg).__name__ != "KernelInfo": return precompiled_call(tr, u, inner)
  if name == "SINK" and type(body.arg).__name__ == "KernelInfo" and (calls := launch_per_device(tr, u)) is not None:
    return UOp(Ops.GROUP, dtypes.void, tuple(calls))
  args = tuple(tr(a) for a in u.src[1:])
  if name == "SINK" and type(body.arg).__name__ == "KernelInfo":
    if tr.stage == "kernel_graph" and (copy := copy_call(u)) is not None:
      tr.seen(*body.toposort())   # the kernel is translated: as the COPY it means
      return r_call(tr, copy, want)
    return kernel_call(tr, body, args)
  if name == "SINK":
    return UOp(Ops.CALL, dtypes.void, (Translator(tr.translation, tr.stage, bodies=tr.bodies, scope=inner)(body), *args), call_name(u))
  if name == "LINEAR":
    if not all(c.op.name == "CALL" for c in body.src):
      raise Untranslatable("CALL", tr.stage, "a call of a LINEAR holding more than kernel CALLs")
    tr.seen(body)
    # as launched on device tr.shard when its args are over a device tuple: each device runs the schedule on its own args
    sched = Translator(tr.translation, tr.stage, bodies=tr.bodies, shard=tr.shard, scope=inner)
    return UOp(Ops.CALL, dtypes.void, (schedule_to_graph(sched, body), *args))
  if name == "COPY": return UOp(Ops.CALL, dtypes.void, (Translator(tr.translation, tr.stage)(body), *args))
  raise Untranslatable("CALL", tr.stage, f"a CALL of {name}")


def kernel_call(tr: Translator, body: Any, args: tuple[UOp, ...]) -> UOp:
  """CALL(kernel, args..., its variables' BINDs), the kernel (or its PROGRAM) as launched on device tr.shard when it is
  over a device tuple."""
  shard = tr.shard if launches(body) != (None,) else None
  args += kernel_var_args(tr, body)
  if (prg := program_of(tr, body, shard)) is not None: return UOp(Ops.CALL, dtypes.void, (prg, *args))
  return UOp(Ops.CALL, dtypes.void, (Translator(tr.translation, tr.stage, kernel=True, shard=shard, scope=tr.scope)(body), *args))


def launch_per_device(tr: Translator, u: Any) -> list[UOp] | None:
  """A kernel CALL at a tensor stage over args over a device tuple (a custom kernel on sharded tensors: storage over the
  tuple, an UNSHARD of a view of it, a precompiled body's sharded PARAM, a value body's PARAM standing for its arg whole):
  tinygrad runs the kernel once per device on that device's part (its PARAMs a shard's size), and tinyspec's kernel runs
  on one device, so it is one CALL per device, device j's parts as its args (launch_args). None when no arg is over a
  device tuple."""
  if tr.kernel or tr.shard is not None or tr.stage not in ("tensor", "callified"): return None
  if (hit := tr.memo.get(("launch", u))) is not None: return hit
  parts = [launch_args(tr, a) for a in u.src[1:]]
  counts = {len(p) for p in parts if p is not None}
  if not counts: return None
  if len(counts) != 1: raise Untranslatable("CALL", tr.stage, f"a kernel over args on {sorted(counts)} devices")
  calls = []
  for j in range(counts.pop()):
    args = tuple(p[j] if p is not None else tr(a) for p, a in zip(parts, u.src[1:]))
    with tr.on(j): calls.append(kernel_call(tr, u.src[0], args))
  tr.memo[("launch", u)] = calls
  return calls


def launch_args(tr: Translator, a: Any) -> list[UOp] | None:
  """Device j's part of a kernel arg over a device tuple, per device: its storage there (storage_shards); for a value
  body's PARAM standing for its arg whole (on the tuple's first device), shard j's block of it (ParamArg.axis; the whole
  when replicated), COPY to device j; for a value over the tuple (a MULTI), its shard j. None for an arg on one device."""
  base = a
  while base.op.name in GROUP_VIEWS: base = base.src[0]
  if not (tr.value_body and base.op.name == "PARAM" and (n := multi_count(base)) is not None and base.arg.slot not in (tr.split or ())):
    if (sh := storage_shards(tr, a)) is not None: return sh[0]
    # a value over the tuple (`Tensor.ones(16, 16).contiguous().shard(devs, axis=0)` not yet realized): its shards
    return list(x.src) if (x := tr(a)).op is Ops.MULTI else None
  x, axis, devs = tr(a), param_axis(base), base.arg.device
  out = []
  for j in range(n):
    part = x
    if axis is not None:   # tinygrad's split: blocks of ceil(d / n), the last ones shorter
      size = -(-x.shape[axis] // n)
      lo = min(size * j, x.shape[axis])
      part = x.shrink(tuple((lo, min(size, x.shape[axis] - lo)) if i == axis else (0, d) for i, d in enumerate(x.shape)))
    out.append(part if part.device == devs[j] else part.copy_to(devs[j]))
  return out


def kernel_var_args(tr: Translator, body: Any) -> tuple[UOp, ...]:
  """The variables a kernel reads, as its kernel-graph CALL's scalar args after the storage: the BIND of each to the value
  tinygrad's runtime launched the kernel with (the capture's var_vals; else the value its CALL's scope binds), else the
  DEFINE_VAR passed on."""
  out = []
  for x in kernel_vars(body):
    v = define_var(tr, x)
    val = tr.translation.launch_vars.get(v.arg.name, value_of(tr, x))
    out.append(v if val is None else v.bind(val))
  return tuple(out)


def program_of(tr: Translator, body: Any, shard: int | None) -> UOp | None:
  """The translated PROGRAM of a kernel (as launched on device shard), if any: tinygrad compiles a kernel that reads
  variables as `pk` with the variables of its CALL's scope in their place (variables.resolved)."""
  for k in dict.fromkeys((body, resolved(body, tr.scope))):
    if (prg := tr.bodies.get(k if shard is None else (k, shard))) is not None: return prg
  return None


def precompiled_call(tr: Translator, u: Any, scope: dict) -> UOp:
  """CALL(SINK(effects...), args...): a precompiled call at TENSOR (its body a tensor graph over its own PARAMs). An arg
  over a device tuple is one arg per device (its PARAMs renumbered, expanded_slots), since tinyspec's storage is on one
  device. In a kernel graph its body is the kernel graph tinygrad lowered it into (get_kernel_graph of that body: the
  all-reduce tinygrad makes a precompiled call), a nested kernel graph over the call's args; a call over every device
  of a tuple is one call, the same in each device's translation. scope: the variables the body reads as pk (call_scope)."""
  body = u.src[0]
  # at a tensor stage an arg may be a sharded view of such storage (UNSHARD of a view of it): each device's view
  shards = [storage_shards(tr, a) if tr.stage in ("tensor", "callified") and tr.shard is None else None for a in u.src[1:]]
  counts = [len(sh[0]) if sh is not None else multi_count(a) for a, sh in zip(u.src[1:], shards)]
  lowered = tr.translation.lowered.get(body) if tr.stage == "kernel_graph" else None
  multi = any(n is not None for n in counts)
  if not multi and lowered is None:
    inner = Translator(tr.translation, tr.stage, bodies=tr.bodies, scope=scope)
    return UOp(Ops.CALL, dtypes.void, (inner(body), *(tr(a) for a in u.src[1:])), call_name(u))
  if (ret := tr.shared.get(u)) is not None: return ret
  args: list[UOp] = []
  inner = Translator(tr.translation, tr.stage, bodies=tr.bodies, slots=expanded_slots(counts) if multi else None, scope=scope)
  for a, n, sh in zip(u.src[1:], counts, shards):
    if n is None: args.append(tr(a))
    else:   # a sharded arg's PARAMs have its shard's shape on each device
      per = sh[0] if sh is not None else tr.per_device(n, lambda a=a: tr(a))
      inner.slot_shapes.update({len(args) + j: x.shape for j, x in enumerate(per) if x.shape is not None})
      args += per
  if lowered is not None:
    tr.seen(*body.toposort())   # the body is translated: as tinygrad's own lowering of it
    new_body = inner(lowered)
  else:
    entries: list[UOp] = []
    for e in body.src:   # an entry over a device tuple (a MULTI of per-device AFTERs, store_per_device) is one entry per device
      x = inner.value(e)
      entries += list(x.src) if x.op is Ops.MULTI else [x]
    inner.seen(body)
    new_body = UOp(Ops.SINK, dtypes.void, tuple(entries))
  tr.shared[u] = ret = UOp(Ops.CALL, dtypes.void, (new_body, *args), call_name(u))
  return ret


def call_name(u: Any) -> str | None:
  """The function name a CallInfo carries (None for tinygrad's unnamed calls)."""
  return getattr(u.arg, "name", None)


def stored_slots(body: UOp) -> set[int]:
  """The PARAM slots a translated kernel body (or PROGRAM) stores into."""
  out = set()
  for u in body.toposort():
    if u.op is Ops.STORE and u.src[0].op is Ops.INDEX:
      b = u.src[0].src[0]
      while b.op is Ops.AFTER: b = b.src[0]
      if b.op is Ops.PARAM: out.add(b.arg.slot)
  return out


def schedule_to_graph(tr: Translator, linear: Any) -> UOp:
  """A precompiled function's schedule, LINEAR(CALL(kernel, args...)...), runs its calls in order; tinyspec's form is a
  nested kernel graph where order is AFTER. Each call takes the latest version of every arg (AFTER of the last call
  that wrote it, read after write), and a written arg also waits for the calls that read its previous version (write
  after read, reads_before_writes); the SINK holds the last version of every written PARAM (the call's outputs; a
  kernel-graph-local BUFFER is scratch, reached through the AFTERs of the calls that read it)."""
  state: dict[UOp, UOp] = {}
  for c in linear.src:
    call = tr(c)
    if call.op is not Ops.CALL: return call  # untranslatable (recorded): its placeholder
    body, args = call.src[0], call.src[1:]
    call = UOp(Ops.CALL, dtypes.void, (body, *(state.get(a, a) for a in args)), call.arg)
    for k in sorted(stored_slots(body) & set(range(len(args)))): state[args[k]] = UOp(Ops.AFTER, args[k].dtype, (call.src[1 + k], call))
  return reads_before_writes(UOp(Ops.SINK, dtypes.void, tuple(v for a, v in state.items() if storage_of(a).op is Ops.PARAM)))


def r_tuple(tr: Translator, u: Any, want: Any) -> UOp: return UOp(Ops.TUPLE, dtypes.void, tuple(tr(s) for s in u.src))


def r_gettuple(tr: Translator, u: Any, want: Any) -> UOp:
  return UOp(Ops.GETTUPLE, tr.dtype(u), (tr(u.src[0]),), u.arg)

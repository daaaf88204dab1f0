"""The translation table: every decision turning a tinygrad 0.14 op or form into its tinyspec form, one `RULES` entry
each (tinygrad op name -> Rule(tinygrad form, tinyspec form, function)). docs/tinygrad.md holds `rules_markdown()` word
for word. An op with no entry, or a form its rule refuses, is Untranslatable."""
from __future__ import annotations

import math

from typing import Any, Callable

from tinyspec.bridge.tinygrad.capture import copy_call
from tinyspec.bridge.tinygrad.composite import folded_vector_part, r_bitcast, r_float_unary, r_pow, r_stack, r_threefry, vector_length
from tinyspec.bridge.tinygrad.bound import DEVICE_NUM, bound_value, is_bound, is_variable
from tinyspec.bridge.tinygrad.variables import (call_scope, concrete, define_var, kernel_vars, resolved, value_of)
from tinyspec.bridge.tinygrad.translate import (AXIS, SAME_NAME_ALU, Rule, Tr, Untranslatable, addrspace_of, alu, broadcast,
                                               device_of, expanded_slots, index_and_gate, is_invalid, is_weak, launches, multi_count,
                                               operand_dtype, param_size)
from tinyspec.dtype import dtypes
from tinyspec.uop import BufferArg, Ops, RangeArg, SourceArg, UOp, next_buffer_id, storage_of, walk


# ---- the rules ----
def r_sink(tr: Tr, u: Any, want: Any) -> UOp:
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


def r_mselect(tr: Tr, u: Any, want: Any) -> UOp:
  """MSELECT(x, i): device i's own storage of x, storage over a device tuple (whichever device's translation reads it:
  an all-reduce copies one device's partial result to the others)."""
  if tr.kernel or not isinstance(u.arg, int): raise Untranslatable("MSELECT", tr.stage, f"MSELECT arg {u.arg!r} inside a kernel")
  with tr.on(u.arg): return tr(u.src[0])


def r_mstack(tr: Tr, u: Any, want: Any) -> UOp:
  if tr.shard is None: raise Untranslatable("MSTACK", tr.stage, "an MSTACK outside a launch on one device")
  x = u.src[tr.shard]
  with tr.on(None): return tr(x)   # device j's own storage: over one device, the same whichever launch reads it


def r_const(tr: Tr, u: Any, want: Any) -> UOp:
  if is_invalid(u): raise Untranslatable("CONST", tr.stage, "Invalid outside the gated index WHERE(cond, idx, Invalid)")
  v = u.arg
  if type(v).__name__ == "ConstFloat": v = float(v)
  if not isinstance(v, (bool, int, float)): raise Untranslatable("CONST", tr.stage, f"CONST arg {v!r} is not a scalar")
  dt = tr.dtype(u, want)
  if dt.name != "index" and dt.name.startswith(("int", "uint")) and isinstance(v, float): v = int(v)
  return UOp.const(dt, v)


def replicated_storage(tr: Tr, u: Any) -> UOp | None:
  """Storage over a device tuple read whole at a tensor stage, outside any one device's translation: tinygrad keeps a
  replicated tensor so (a sharded one is an UNSHARD of it), tinyspec's form is a replicated MULTI of the per-device
  storage; a precompiled body's PARAM standing for a sharded arg (its ParamArg has the axis) is the MULTI of the
  per-device PARAMs split along that axis. None for anything else."""
  if tr.kernel or tr.shard is not None or tr.stage not in ("tensor", "callified") or (n := multi_count(u)) is None: return None
  if tr.value_body and u.op.name == "PARAM": return None   # a value call's PARAM stands for its MULTI arg whole (device_of)
  return UOp.multi(tr.per_device(n, lambda: tr(u)), param_axis(u))


def param_axis(u: Any) -> int | None:
  """The axis a PARAM standing for a sharded call arg is split along (tinygrad's ParamArg.axis), None otherwise."""
  return getattr(u.arg, "axis", None) if u.op.name == "PARAM" else None


def r_buffer(tr: Tr, u: Any, want: Any) -> UOp:
  if is_variable(u): return as_wanted(define_var(tr, u), want)   # an unbound Variable: its value is an input of the run
  if (m := replicated_storage(tr, u)) is not None: return m
  space = addrspace_of(u.arg)
  if space is None: raise Untranslatable("BUFFER", tr.stage, f"address space {u.arg.addrspace}")
  # storage over a device tuple is one BUFFER per device: keyed by the device's number too
  key = (u, tr.shard) if isinstance(getattr(u.arg, "device", None), tuple) else u
  # kernel-local accumulators and kernel-graph-local buffers are this graph's (slots reused, fresh ids); others the program's
  made = tr.local_buffers if tr.kernel or tr.stage == "kernel_graph" else tr.t.buffers
  if key not in made:
    made[key] = UOp(Ops.BUFFER, tr.dtype(u), (), BufferArg(next_buffer_id(), param_size(tr, u), device_of(tr, u.arg), space))
  return made[key]




def r_param(tr: Tr, u: Any, want: Any) -> UOp:
  space = addrspace_of(u.arg)
  if space is None and u.arg.name == DEVICE_NUM and tr.shard is not None: return UOp.const(tr.dtype(u), tr.shard)
  if is_variable(u): return as_wanted(r_variable(tr, u), want)
  if space is None: raise Untranslatable("PARAM", tr.stage, "a scalar PARAM (a bound variable, addrspace ALU): tinyspec has no DEFINE_VAR yet")
  if (m := replicated_storage(tr, u)) is not None: return m
  slot = u.arg.slot
  if tr.slots is not None and not tr.kernel and slot in tr.slots:
    # a call's arg over a device tuple is one arg per device: every slot moves, and such an arg's is its device's
    n = multi_count(u) if tr.split is None or slot in tr.split else None
    if n is not None and tr.shard is None: raise Untranslatable("PARAM", tr.stage, f"a PARAM over {n} devices read outside one")
    slot = tr.slots[slot] + (tr.shard if n is not None else 0)
  if not tr.kernel and slot in tr.bind:
    b = tr.bind[slot]
    if not isinstance(b, tuple): return b
    if tr.shard is None: raise Untranslatable("PARAM", tr.stage, f"multi-device storage {u.arg.device} outside a launch on one device")
    return b[tr.shard]
  shape = tr.slot_shapes.get(slot) if tr.shard is not None else None
  # kernel-graph storage is flat and as allocated: of a symbolic shape, its max (tinygrad allocates prod(max_shape) and
  # its kernels' PARAMs are that size, shrunk to the shape, rangeify's debuf); a tensor graph's has the bound shape
  if shape is None and (tr.kernel or tr.stage == "kernel_graph"):
    shape = max_shape(u)
    tr.seen(*(x for s in u.src for x in s.toposort()))   # its size sources, a variable's among them, folded
  if shape is None: shape = tr.shape(u)
  size = math.prod(shape)
  p = UOp.param(slot, tr.dtype(u), size, device_of(tr, u.arg), space)
  # a shaped PARAM (a function body's) is storage with a shape: flat storage in a kernel graph, a RESHAPE of it in a tensor graph
  return p if tr.kernel or tr.stage == "kernel_graph" or shape == (size,) else p.reshape(shape)


def as_wanted(v: UOp, want: Any) -> UOp:
  """A variable (index, as DEFINE_VAR and BIND are) read where tinygrad's weak int takes a strong dtype (stored into an
  int32 buffer, `Tensor.full(shape, v)`): CAST to it, the conversion tinygrad's weak dtype leaves implicit. Wanted as an
  index it is one as it is (a program's variable is its int, which is what a program indexes with)."""
  return v if want is None or want in (v.dtype, dtypes.index) else v.cast(want)


def max_shape(u: Any) -> tuple[int, ...]:
  """A tinygrad shape with every symbolic dim at its max (tinygrad's UOp.max_shape: the shape its storage is
  allocated at)."""
  return tuple(s if isinstance(s, int) else int(s.vmax) for s in u.shape)


def r_variable(tr: Tr, u: Any) -> UOp:
  """A Variable PARAM: DEFINE_VAR in a body that reads it (the CALL that runs the body binds it); at a kernel graph's top
  level, where it is a nested call's arg (a precompiled function's schedule), the BIND its scope gives it, if any."""
  v = define_var(tr, u)
  if tr.stage != "kernel_graph" or tr.kernel or (val := value_of(tr, u)) is None: return v
  return v.bind(val)


def on_device(tr: Tr, a: Any) -> Any:
  """A symbolic int of a view's arg on device tr.shard: its DEVICE ranges bound to that number and folded (a shard's
  block, i * size), as tinygrad's own multi rewrite binds them; a itself otherwise."""
  if tr.shard is None or isinstance(a, (int, bool)) or not hasattr(a, "toposort"): return a
  rngs = [r for r in a.toposort() if r.op.name == "RANGE" and r.arg[-1].name == "DEVICE"]
  if not rngs: return a
  b = a.substitute({r: r.const_like(tr.shard) for r in rngs}).simplify()
  return b.arg if b.op.name == "CONST" else a


def r_movement(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    if (x := flat_storage(tr, u)) is not None: return x
    arg = u.marg
    if tr.shard is not None:
      arg = tuple(tuple(on_device(tr, b) for b in a) if isinstance(a, tuple) else on_device(tr, a) for a in arg)
      tr.seen(*(x for s in u.src[1:] for x in s.toposort()))  # the device ranges and arithmetic folded into the arg
    if not all(isinstance(a, (int, bool)) for a in _flat(arg)):
      arg = _nested(arg, lambda a: concrete(tr, a, u.op.name))
      # the arg tinygrad reads off the sources is simplified (new nodes): the sources' own nodes are what folded
      tr.seen(*(x for s in u.src[1:] for x in s.toposort()))
    if op is Ops.PAD or op is Ops.SHRINK: arg = tuple((int(o), int(s)) for o, s in arg)
    dt = tr.dtype(u, want)   # a weak source (a variable) takes the view's dtype
    return UOp(op, dt, (tr(u.src[0], dt),), tuple(arg))
  return fn


def _nested(x: Any, fn: Callable) -> Any:
  """fn on every leaf of a (nested) tuple arg."""
  return tuple(_nested(a, fn) for a in x) if isinstance(x, tuple) else fn(x)


def flat_storage(tr: Tr, u: Any) -> UOp | None:
  """A RESHAPE of storage among a kernel graph's args (tinygrad's all-reduce passes a copied shard so): the storage
  itself, as kernel-graph storage is flat (a kernel reads it through its own PARAM); None for any other view."""
  if u.op.name != "RESHAPE" or tr.kernel or tr.stage != "kernel_graph": return None
  base = u.src[0]
  while base.op.name == "AFTER": base = base.src[0]
  if base.op.name not in ("BUFFER", "PARAM"): return None
  tr.seen(*(x for s in u.src[1:] for x in s.toposort()))
  return tr(u.src[0])


def _flat(x: Any) -> list:
  return [b for a in x for b in (_flat(a) if isinstance(a, tuple) else [a])]


def r_alu(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    od = operand_dtype(tr, u, want)
    if op is Ops.WHERE: srcs = (tr.value(u.src[0], dtypes.bool), tr.value(u.src[1], od), tr.value(u.src[2], od))
    else: srcs = tuple(tr.value(s, od) for s in u.src)
    return alu(tr, u, op, srcs, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else tr.dtype(u, want))
  return fn


def r_floor(is_div: bool) -> Callable:
  """Python floor division and modulo from C's truncating IDIV and MOD: q, r = a IDIV b, a MOD b; where r != 0 and
  r, b differ in sign, q - 1 and r + b. Unsigned: the same as IDIV / MOD."""
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    dt = tr.dtype(u, want)
    if not (dt.name.startswith(("int", "uint")) or dt.name == "index"):
      raise Untranslatable(u.op.name, tr.stage, f"{u.op.name} on {dt.name} (tinygrad floors only integers)")
    a, b = (tr.value(s, dt) for s in u.src)
    q, r = alu(tr, u, Ops.IDIV, (a, b), dt), alu(tr, u, Ops.MOD, (a, b), dt)
    if dt.name.startswith("uint"): return q if is_div else r
    a, b = q.src
    zero, one = broadcast(tr, UOp.const(dt, 0), q.shape), broadcast(tr, UOp.const(dt, 1), q.shape)
    adj = UOp(Ops.AND, dtypes.bool, (UOp(Ops.CMPNE, dtypes.bool, (r, zero)),
                                     UOp(Ops.CMPNE, dtypes.bool, (UOp(Ops.CMPLT, dtypes.bool, (r, zero)), UOp(Ops.CMPLT, dtypes.bool, (b, zero))))))
    if is_div: return UOp(Ops.WHERE, dt, (adj, UOp(Ops.SUB, dt, (q, one)), q))
    return UOp(Ops.WHERE, dt, (adj, UOp(Ops.ADD, dt, (r, b)), r))
  return fn


def r_mulacc(tr: Tr, u: Any, want: Any) -> UOp:
  dt = tr.dtype(u, want)
  a, b, c = (tr.value(s, dt) for s in u.src)
  return alu(tr, u, Ops.ADD, (alu(tr, u, Ops.MUL, (a, b), dt), c), dt)


def r_cast(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    dt = tr.dtype(u, want)
    x = u.src[0]
    if op is Ops.CAST and x.op.name == "CONST" and is_weak(x.dtype): return tr(x, dt)  # a weak literal takes the cast's dtype
    return UOp(op, dt, (tr.value(x),))
  return fn


def r_reduce(tr: Tr, u: Any, want: Any) -> UOp:
  rop, n = u.arg
  op = {"ADD": Ops.ADD, "MAX": Ops.MAX, "MUL": Ops.MUL}.get(rop.name)
  if op is None: raise Untranslatable("REDUCE", tr.stage, f"reduce op {rop.name}")
  dt = tr.dtype(u, want)
  if tr.kernel:
    src = masked_reduce_source(tr, u.src[0], op, dt)
    return UOp(Ops.REDUCE, dt, (src if src is not None else tr.value(u.src[0], dt), *(tr(r) for r in u.src[1:])), op)
  return UOp(Ops.REDUCE, dt, (tr(u.src[0], dt),), (op, n))


def masked_reduce_source(tr: Tr, src: Any, op: Ops, dt: Any) -> UOp | None:
  """A kernel REDUCE's source WHERE(cond, x, Invalid) (a conv's or pool's backward: an iteration that maps to no element
  adds nothing): tinygrad's codegen makes every value WHERE(cond, x, Invalid) WHERE(cond, x, 0) in its final rewrite
  (pm_remove_invalid), and 0 is ADD's identity, so a sum over it is WHERE(cond, x, 0). Under MAX or MUL that 0 is no
  identity, and whether tinygrad means the iteration skipped or a 0 is not one thing: refused. None for another source."""
  if src.op.name != "WHERE" or not is_invalid(src.src[2]): return None
  if op is not Ops.ADD: raise Untranslatable("REDUCE", tr.stage, f"a {op.name} REDUCE over WHERE(cond, x, Invalid): 0 is not its identity")
  tr.seen(src, src.src[2])
  return UOp(Ops.WHERE, dt, (tr.value(src.src[0], dtypes.bool), tr.value(src.src[1], dt), UOp.const(dt, 0)))


def r_same(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    return UOp(op, tr.dtype(u, want), tuple(tr.value(s, want) for s in u.src))
  return fn


def r_copy(tr: Tr, u: Any, want: Any) -> UOp:
  if isinstance(u.arg, str): return UOp(Ops.COPY, tr.dtype(u), (tr(u.src[0]),), u.arg)
  if not (isinstance(u.arg, tuple) and all(isinstance(d, str) for d in u.arg)) or tr.kernel or tr.stage not in ("tensor", "callified"):
    raise Untranslatable("COPY", tr.stage, f"COPY to {u.arg!r} (multi-device)")
  x = tr(u.src[0])
  # a copy to a device tuple: on device j of a shard's translation its copy to device j, else each device's (replicated)
  if tr.shard is not None: return UOp(Ops.COPY, tr.dtype(u), (x,), u.arg[tr.shard])
  return UOp.multi([UOp(Ops.COPY, tr.dtype(u), (x,), d) for d in u.arg], None)


def r_unshard(tr: Tr, u: Any, want: Any) -> UOp:
  """UNSHARD(x, DEVICE range) arg (axis,) at a tensor stage: tinyspec's MULTI of x translated once per device (the
  range bound to the device's number), split along axis."""
  if tr.stage not in ("tensor", "callified") or tr.shard is not None or len(u.src) != 2 or not (isinstance(u.arg, tuple) and len(u.arg) == 1):
    raise Untranslatable("UNSHARD", tr.stage, f"UNSHARD arg {u.arg!r} outside a tensor graph's one sharded axis")
  rng = u.src[1]
  if rng.op.name != "RANGE" or rng.arg[-1].name != "DEVICE" or rng.src[0].op.name != "CONST":
    raise Untranslatable("UNSHARD", tr.stage, "an UNSHARD over no DEVICE range of a constant count")
  tr.seen(*rng.toposort())
  return UOp.multi(tr.per_device(int(rng.src[0].arg), lambda: tr.value(u.src[0], want)), u.arg[0])


def r_store(tr: Tr, u: Any, want: Any) -> UOp:
  tgt, val = u.src[0], u.src[1]
  if tr.kernel and tgt.op.name == "INDEX":
    idx, gate = index_and_gate(tr, tgt)
    extra = tuple(tr(g) for g in u.src[2:])
    if gate is not None and extra: raise Untranslatable("STORE", tr.stage, "a STORE with both a gated index and a gate")
    return UOp(Ops.STORE, dtypes.void, (idx, tr.value(val, idx.dtype), *((gate,) if gate is not None else extra)))
  t = tr(tgt)
  return UOp(Ops.STORE, dtypes.void, (t, broadcast(tr, tr.value(val, t.dtype), t.shape) if t.shape else tr.value(val, t.dtype)))


def assign_to_value(tr: Tr, u: Any) -> UOp | None:
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


def storage_shards(tr: Tr, x: Any) -> tuple[list[UOp], int | None] | None:
  """A store target over a device tuple at a tensor stage: (its per-device storage, translated on each device, and the
  axis it is split along: UNSHARD(x, DEVICE range) arg (axis,); a view of the storage itself is replicated, None), or
  None when x is not storage over a device tuple."""
  axis = None
  if x.op.name == "UNSHARD" and len(x.src) == 2 and isinstance(x.arg, tuple) and len(x.arg) == 1:
    tr.seen(x, *x.src[1].toposort())
    axis, x = x.arg[0], x.src[0]
  elif (a := param_axis(x)) is not None: axis = a   # a precompiled body's PARAM standing for a sharded arg
  base = x
  while base.op.name in GROUP_VIEWS or base.op.name == "AFTER": base = base.src[0]
  if base.op.name not in ("PARAM", "BUFFER") or (n := multi_count(base)) is None: return None
  return tr.per_device(n, lambda: tr(x)), axis


GROUP_VIEWS = ("RESHAPE", "EXPAND", "PAD", "SHRINK", "PERMUTE", "FLIP")
# what leaves storage the same storage to write through: its views, and a DETACH of it (r_detach)
STORAGE_VIEWS = (*GROUP_VIEWS, "DETACH")


def store_per_device(tr: Tr, u: Any) -> UOp | None:
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


def r_detach(tr: Tr, u: Any, want: Any) -> UOp:
  """DETACH(x) stops gradients of a value. Of storage it is that storage, which an assign through it writes
  (`t.detach()[1, 2] = 5` writes t): tinygrad's graphs hold their gradients already, so nothing else reads it."""
  base = u.src[0]
  while base.op.name in STORAGE_VIEWS or base.op.name == "AFTER": base = base.src[0]
  if base.op.name in ("BUFFER", "PARAM"): return tr(u.src[0], want)
  return UOp(Ops.DETACH, tr.dtype(u, want), (tr.value(u.src[0], want),))


def wait_per_device(tr: Tr, u: Any) -> UOp | None:
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


def r_after(tr: Tr, u: Any, want: Any) -> UOp:
  if is_bound(u):   # bind()'s AFTER(var, STORE(var, CONST v)): the variable bound to v
    tr.seen(*u.toposort())
    return as_wanted(define_var(tr, u.src[0]).bind(bound_value(u)), want)
  if (v := store_per_device(tr, u)) is not None: return v
  if (v := assign_to_value(tr, u)) is not None: return v
  if (v := wait_per_device(tr, u)) is not None: return v
  base = tr(u.src[0])
  return UOp(Ops.AFTER, base.dtype, (base, *(e for d in u.src[1:] for e in after_dep(tr, d))))


def after_dep(tr: Tr, d: Any) -> list[UOp]:
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
  def fn(tr: Tr, u: Any, want: Any) -> UOp: return UOp(op, dtypes.void, tuple(tr(s) for s in u.src))
  return fn


def r_function(tr: Tr, u: Any, want: Any) -> UOp:
  """FUNCTION(TUPLE(...), args...) with a CallInfo -> CALL(TUPLE(...), args...): a value call read by GETTUPLE."""
  body = u.src[0]
  if body.op.name != "TUPLE": raise Untranslatable("FUNCTION", tr.stage, f"a FUNCTION whose body is {body.op.name}, not TUPLE")
  inner = scoped(Tr(tr.t, tr.stage, value_body=True), call_scope(tr, u.src[1:]))  # the body's PARAMs stand for this call's args
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


def r_call(tr: Tr, u: Any, want: Any) -> UOp:
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
  if name == "SINK": return UOp(Ops.CALL, dtypes.void, (scoped(Tr(tr.t, tr.stage, bodies=tr.bodies), inner)(body), *args), call_name(u))
  if name == "LINEAR":
    if not all(c.op.name == "CALL" for c in body.src):
      raise Untranslatable("CALL", tr.stage, "a call of a LINEAR holding more than kernel CALLs")
    tr.seen(body)
    # as launched on device tr.shard when its args are over a device tuple: each device runs the schedule on its own args
    sched = scoped(Tr(tr.t, tr.stage, bodies=tr.bodies, shard=tr.shard), inner)
    return UOp(Ops.CALL, dtypes.void, (schedule_to_graph(sched, body), *args))
  if name == "COPY": return UOp(Ops.CALL, dtypes.void, (Tr(tr.t, tr.stage)(body), *args))
  raise Untranslatable("CALL", tr.stage, f"a CALL of {name}")


def kernel_call(tr: Tr, body: Any, args: tuple[UOp, ...]) -> UOp:
  """CALL(kernel, args..., its variables' BINDs), the kernel (or its PROGRAM) as launched on device tr.shard when it is
  over a device tuple."""
  shard = tr.shard if launches(body) != (None,) else None
  args += kernel_var_args(tr, body)
  if (prg := program_of(tr, body, shard)) is not None: return UOp(Ops.CALL, dtypes.void, (prg, *args))
  return UOp(Ops.CALL, dtypes.void, (scoped(Tr(tr.t, tr.stage, kernel=True, shard=shard), tr.scope)(body), *args))


def launch_per_device(tr: Tr, u: Any) -> list[UOp] | None:
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


def launch_args(tr: Tr, a: Any) -> list[UOp] | None:
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


def kernel_var_args(tr: Tr, body: Any) -> tuple[UOp, ...]:
  """The variables a kernel reads, as its kernel-graph CALL's scalar args after the storage: the BIND of each to the value
  tinygrad's runtime launched the kernel with (the capture's var_vals; else the value its CALL's scope binds), else the
  DEFINE_VAR passed on."""
  out = []
  for x in kernel_vars(body):
    v = define_var(tr, x)
    val = tr.t.launch_vars.get(v.arg.name, value_of(tr, x))
    out.append(v if val is None else v.bind(val))
  return tuple(out)


def program_of(tr: Tr, body: Any, shard: int | None) -> UOp | None:
  """The translated PROGRAM of a kernel (as launched on device shard), if any: tinygrad compiles a kernel that reads
  variables as `pk` with the variables of its CALL's scope in their place (variables.resolved)."""
  for k in dict.fromkeys((body, resolved(body, tr.scope))):
    if (prg := tr.bodies.get(k if shard is None else (k, shard))) is not None: return prg
  return None


def scoped(tr: Tr, scope: dict) -> Tr:
  """tr reading the variables of scope (a CALL's body: the names it reads its variable args as)."""
  tr.scope = scope
  return tr


def precompiled_call(tr: Tr, u: Any, scope: dict) -> UOp:
  """CALL(SINK(effects...), args...): a precompiled call at TENSOR (its body a tensor graph over its own PARAMs). An arg
  over a device tuple is one arg per device (its PARAMs renumbered, expanded_slots), since tinyspec's storage is on one
  device. In a kernel graph its body is the kernel graph tinygrad lowered it into (get_kernel_graph of that body: the
  all-reduce tinygrad makes a precompiled call), a nested kernel graph over the call's args; a call over every device
  of a tuple is one call, the same in each device's translation. scope: the variables the body reads as pk (call_scope)."""
  body = u.src[0]
  # at a tensor stage an arg may be a sharded view of such storage (UNSHARD of a view of it): each device's view
  shards = [storage_shards(tr, a) if tr.stage in ("tensor", "callified") and tr.shard is None else None for a in u.src[1:]]
  counts = [len(sh[0]) if sh is not None else multi_count(a) for a, sh in zip(u.src[1:], shards)]
  lowered = tr.t.lowered.get(body) if tr.stage == "kernel_graph" else None
  multi = any(n is not None for n in counts)
  if not multi and lowered is None:
    return UOp(Ops.CALL, dtypes.void, (scoped(Tr(tr.t, tr.stage, bodies=tr.bodies), scope)(body), *(tr(a) for a in u.src[1:])), call_name(u))
  if (ret := tr.shared.get(u)) is not None: return ret
  args: list[UOp] = []
  inner = scoped(Tr(tr.t, tr.stage, bodies=tr.bodies, slots=expanded_slots(counts) if multi else None), scope)
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


def schedule_to_graph(tr: Tr, linear: Any) -> UOp:
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


def r_tuple(tr: Tr, u: Any, want: Any) -> UOp: return UOp(Ops.TUPLE, dtypes.void, tuple(tr(s) for s in u.src))


def r_gettuple(tr: Tr, u: Any, want: Any) -> UOp:
  return UOp(Ops.GETTUPLE, tr.dtype(u), (tr(u.src[0]),), u.arg)


def r_range(tr: Tr, u: Any, want: Any) -> UOp:
  *axis, kind = u.arg
  if kind.name == "DEVICE" and tr.shard is not None:   # a launch on one device: the runtime binds the axis to its number
    tr.seen(*(x for b in u.src for x in b.toposort()))   # the device count, folded with it
    return UOp.const(dtypes.index if is_weak(u.dtype) else tr.dtype(u), tr.shard)
  k = AXIS.get(kind.name)
  if k is None: raise Untranslatable("RANGE", tr.stage, f"axis type {kind.name}")
  # a9069c17's UOp.loop: RANGE(NOOP), dtype void, a do-while loop header with no induction variable (its END carries the
  # condition); tinyspec's RANGE counts from 0 to a bound, and a void one would be an ill-formed graph, not this loop
  if u.dtype.name == "void": raise Untranslatable("RANGE", tr.stage, "a loop header with no bound (void RANGE(NOOP), UOp.loop)")
  key = tuple(axis)
  if key not in tr.axes: tr.axes[key] = axis[0] if len(axis) == 1 and axis[0] not in tr.axes.values() else len(tr.axes) + 1000
  dt = dtypes.index if is_weak(u.dtype) else tr.dtype(u)
  return UOp(Ops.RANGE, dt, (tr(u.src[0], dt),), RangeArg(tr.axes[key], k))


def r_index(tr: Tr, u: Any, want: Any) -> UOp:
  idx, gate = index_and_gate(tr, u)
  if gate is not None: raise Untranslatable("INDEX", tr.stage, "a gated INDEX whose user is neither a LOAD nor a STORE")
  return idx


def r_load(tr: Tr, u: Any, want: Any) -> UOp:
  idx, gate = index_and_gate(tr, u.src[0])
  rest = tuple(tr.value(s, idx.dtype if i == 0 else dtypes.bool) for i, s in enumerate(u.src[1:]))
  if gate is not None and not rest: rest = (UOp.const(idx.dtype, 0), gate)
  return UOp(Ops.LOAD, idx.dtype, (idx, *rest))


def r_linear(tr: Tr, u: Any, want: Any) -> UOp:
  """A program's instruction list. A weak CONST every user of which is a CAST is folded into those CASTs (each becomes a
  CONST of its target dtype, listed where the CAST was), so it is not listed itself; duplicates after folding go."""
  users: dict[Any, list] = {}
  for x in u.src:
    for s in x.src: users.setdefault(s, []).append(x)
  size_only: set = set()   # a PARAM's or BUFFER's size (and the weak CONST under its CAST): folded into their args
  for s in reversed(u.src):
    us = users.get(s, [])
    if us and all(x.op.name in ("PARAM", "BUFFER") or x in size_only or vector_length(x, s, users) for x in us): size_only.add(s)
  gate_blocks(tr, u)
  out: dict[UOp, None] = {}
  for s in u.src:
    if s.op.name in ("IF", "ENDIF"):   # their meaning is in the gates of the STOREs they enclose
      tr.seen(s)
      continue
    if s in size_only:
      tr.seen(s)
      continue
    if folded_vector_part(s, users):   # a vector load read lane by lane: each lane read is a load of its element
      tr.seen(s)
      continue
    if s.op.name == "CONST" and is_weak(s.dtype) and users.get(s) and all(x.op.name == "CAST" for x in users[s]):
      tr.seen(s)
      continue
    want = tr.dtype(users[s][0]) if s.op.name == "CONST" and is_weak(s.dtype) and users.get(s) else None
    x = tr(s, want)
    # a rule that spells one tinygrad op with several tinyspec ops (MULACC, FLOORDIV, ...) lists its inner nodes first
    for y in x.toposort(gate=lambda y: y not in out):
      if y is not x and y not in out and y.op not in (Ops.SINK,): out[y] = None
    out[x] = None
  return UOp(Ops.LINEAR, dtypes.void, tuple(out))


def gate_blocks(tr: Tr, linear: Any) -> None:
  """IF(cond, ...) ... ENDIF(IF) in a program's LINEAR: the instructions between them run only where cond holds (tinygrad's
  linearizer wraps a STORE whose gate it cannot put in its index so). tinyspec's program has no IF: each STORE in a block
  is that STORE gated by the AND of the conditions of the blocks it is in, STORE(INDEX, value, cond), set as the
  STORE's translation before anything reads it. A value in a block is computed whether or not the gate holds, which
  only a LOAD (it may read out of bounds) or another effect could tell: those are refused."""
  conds: list[Any] = []
  for s in linear.src:
    name = s.op.name
    if name == "IF": conds.append(s.src[0])
    elif name == "ENDIF":
      if not conds: raise Untranslatable("ENDIF", tr.stage, "an ENDIF with no IF open")
      conds.pop()
    elif conds and name == "STORE":
      st = tr(s)
      gate = None
      for c in conds:
        g = tr.value(c, dtypes.bool)
        gate = g if gate is None else UOp(Ops.AND, dtypes.bool, (gate, g))
      if len(st.src) > 2: gate = UOp(Ops.AND, dtypes.bool, (st.src[2], gate))
      tr.memo[(s, None, tr.shard)] = UOp(Ops.STORE, dtypes.void, (st.src[0], st.src[1], gate))
    elif conds and name in ("LOAD", "ATOMIC", "BARRIER", "CUSTOM", "CUSTOMI"):
      raise Untranslatable(name, tr.stage, f"a {name} inside an IF block (only STOREs are gated by it)")
  if conds: raise Untranslatable("IF", tr.stage, "an IF with no ENDIF")


def r_if(tr: Tr, u: Any, want: Any) -> UOp:
  raise Untranslatable(u.op.name, tr.stage, f"{u.op.name} outside a program's LINEAR")


def r_program(tr: Tr, u: Any, want: Any) -> UOp:
  """PROGRAM(sink, LINEAR, SOURCE[, BINARY]) with a ProgramInfo -> PROGRAM(sink, LINEAR, SOURCE(c)) named; BINARY dropped
  (it is the compiled SOURCE)."""
  inner = scoped(Tr(tr.t, tr.stage, kernel=True, shard=tr.shard), tr.scope)
  sink, lin = inner(u.src[0]), inner(u.src[1])
  tr.seen(*u.src[2:])
  name = u.arg.name
  src = [UOp(Ops.SOURCE, dtypes.void, (), SourceArg("c", name, s.arg)) for s in u.src[2:] if s.op.name == "SOURCE"]
  return UOp(Ops.PROGRAM, dtypes.void, (sink, lin, *src[:1]), name)


def r_special(tr: Tr, u: Any, want: Any) -> UOp:
  dt = dtypes.index if is_weak(u.dtype) else tr.dtype(u)
  return UOp(Ops.SPECIAL, dt, (tr(u.src[0], dt),), str(u.arg))


RULES: dict[str, Rule] = {
  "SINK": Rule("SINK(x...), arg None or KernelInfo", "SINK(x...); KernelInfo dropped (a kernel's name is not part of its meaning); a "
               "kernel graph's entry over a device tuple is one entry per device; in a kernel graph a call writing an arg takes it "
               "as AFTER(arg, the other calls reading that same version) (tinygrad's schedule runs reads before the write that "
               "overwrites them, create_schedule's write-after-read order, which its kernel graph leaves unsaid)", r_sink),
  "CONST": Rule("CONST, dtype weakint / weakfloat / concrete, arg value or ConstFloat",
                "CONST of the consumer's dtype when weak (weakint alone: index; weakfloat alone: float32), value unwrapped", r_const),
  "BUFFER": Rule("BUFFER(CONST size) arg ParamArg(slot, dtype, device, addrspace)",
                 "BUFFER arg BufferArg(fresh id, size, device, addrspace); kernel-graph-local and kernel-local buffers get fresh ids "
                 "per graph (tinygrad reuses their slot numbers); a Variable (a 0-d BUFFER of address space ALU with a name and vmin_vmax, "
                 "unbound) is DEFINE_VAR(name, min, max), its value an input of the run; storage over a device tuple is one BUFFER per device "
                 "(read whole "
                 "at a tensor stage outside one device's translation: the replicated MULTI of them)", r_buffer),
  "PARAM": Rule("PARAM(CONST size or STACK shape) arg ParamArg(slot, dtype, device); device a tuple for multi-device storage",
                "PARAM arg ParamArg(slot, size, device, addrspace), flat; a shaped PARAM (function body) is RESHAPE(PARAM); "
                "at the kernel graph's top level slot k is the callified CALL's arg k; at the kernel graph a PARAM of a symbolic shape is "
                "storage of its max shape's size (tinygrad allocates it so, and its kernels' PARAMs are that size, debuf); "
                "in a kernel AST or program over a device "
                "tuple, one translation per device, each PARAM on that device (as the runtime launches it), and the scalar PARAM "
                "_device_num a CONST of that device's number; a Variable (a PARAM of address space ALU with a name and vmin_vmax: pk in a "
                "callified body or a kernel, arg k of the callified CALL; the variable's own name in a program) is DEFINE_VAR of that "
                "variable (its name and bounds; index, or the program's int); in the body of a call whose args over a device tuple are one arg per "
                "device, every slot renumbered to its arg's (arg k's device j at its first slot + j), each of its arg's shard shape; read "
                "whole at a tensor stage outside one device's translation, the MULTI of its per-device PARAMs (split along "
                "ParamArg.axis, a sharded arg's, else replicated); in a value call's body (a FUNCTION's) a PARAM over a device "
                "tuple is one PARAM of the arg's whole shape on the tuple's first device (tinyspec's multi pass gives each device "
                "its own), but one the body UNSHARDs (no axis: each device's own storage, a custom kernel's output) is one PARAM per "
                "device, renumbered as above", r_param),
  **{op: Rule(f"{op}(x, shape/offset sources)" if op in ("RESHAPE", "EXPAND", "PAD", "SHRINK") else f"{op}(x) arg",
              f"{op}(x) with the sources folded into the arg ({'dims prepended' if op == 'EXPAND' else 'same convention'}); a size or "
              "offset over a bound Variable is the number it has under the graph's binding (tinyspec's shapes are concrete)"
              + ("; among a kernel graph's call args a RESHAPE of storage is that storage (kernel-graph storage is flat)" if op == "RESHAPE" else ""),
              r_movement(Ops[op])) for op in ("RESHAPE", "EXPAND", "PAD", "SHRINK", "PERMUTE", "FLIP")},
  **{op: Rule(f"{op}", f"{op}; weak sources take the op's dtype; implicit broadcast made explicit (RESHAPE, EXPAND, PERMUTE)",
              r_alu(Ops[op])) for op in SAME_NAME_ALU},
  **{op: Rule(f"{op}(x); of an integer or bool x its dtype is x's float dtype (least_upper_float)",
              f"{op}(x); of an integer or bool x {op}(CAST(x)) to that float dtype, as its programs convert x", r_float_unary(Ops[op]))
     for op in ("SQRT", "EXP2", "LOG2", "SIN")},
  "RECIPROCAL": Rule("RECIPROCAL(x); of an integer or bool x its dtype is x's float dtype (least_upper_float: x / y on ints)",
                     "RECIP(x); of an integer or bool x RECIP(CAST(x)) to that float dtype, as its programs convert x", r_float_unary(Ops.RECIP)),
  "CDIV": Rule("CDIV(a, b): C division, truncating", "IDIV(a, b)", r_alu(Ops.IDIV)),
  "CMOD": Rule("CMOD(a, b): C remainder, truncating", "MOD(a, b)", r_alu(Ops.MOD)),
  "FLOORDIV": Rule("FLOORDIV(a, b): Python //, flooring, on ints",
                   "WHERE(adj, IDIV(a,b) - 1, IDIV(a,b)), adj = MOD(a,b) != 0 AND (MOD(a,b) < 0) != (b < 0); unsigned: IDIV(a, b)", r_floor(True)),
  "FLOORMOD": Rule("FLOORMOD(a, b): Python %, flooring, on ints",
                   "WHERE(adj, MOD(a,b) + b, MOD(a,b)), adj as for FLOORDIV; unsigned: MOD(a, b)", r_floor(False)),
  "MULACC": Rule("MULACC(a, b, c)", "ADD(MUL(a, b), c)", r_mulacc),
  "FDIV": Rule("FDIV(a, b): float division (programs: x / y, softmax's normalization)", "FDIV(a, b): IEEE division, correctly rounded",
               r_alu(Ops.FDIV)),
  "POW": Rule("POW(b, e) (x ** y); on floats tinygrad lowers it with xpow",
              "as xpow computes it: WHERE(e == 0, 1, WHERE(b < 0, neg, r)), r = EXP2(LOG2(abs(b)) * e), abs(b) = WHERE(b < 0, -b, b), "
              "neg = NaN where e is no integer (b = -inf: r), -r where e is odd, else r; on ints b ** e exactly (square and multiply over "
              "e's bits with WHERE; e < 0: 1, +-1 for b = -1, else 0)", r_pow),
  "THREEFRY": Rule("THREEFRY(x, key) on uint64: counter-based random bits (Tensor.rand, randn, randint, dropout, default inits)",
                   "Threefry-2x32, 20 rounds, as tinygrad's threefry2x32 decomposes it: x and key split into uint32 halves (CAST, SHR), "
                   "key schedule (k1, k0 ^ k1 ^ 0x1BD11BDA, k0), each round ADD, rotation (SHL + SHR) and XOR; "
                   "OR(SHL(CAST(hi), 32), CAST(lo)) in uint64", r_threefry),
  "STACK": Rule("STACK(x_0, ..., x_n-1) as a value in a tensor graph (Tensor.stack, cat of equal parts, random numbers): shape (n,) + x_0's",
                "WHERE(mask_n-1, PAD(RESHAPE(x_n-1)), ... WHERE(mask_1, PAD(RESHAPE(x_1)), PAD(RESHAPE(x_0)))): x_i reshaped to (1,) + "
                "its shape and PADded into row i, mask_i a PADded True (as tinyspec's cat); as a shape/offset source it is folded", r_stack),
  "CAST": Rule("CAST(x), target in the dtype (and arg)", "CAST(x) of the node's dtype; CAST of a weak CONST folds to a CONST of the target",
               r_cast(Ops.CAST)),
  "BITCAST": Rule("BITCAST(x); in a tensor graph to a dtype of another item size, the last axis rescaled (little-endian)",
                  "BITCAST(x); between item sizes in a tensor graph: to a narrower dtype CAST(SHR(x expanded to k lanes, 8 * size * lane)) "
                  "to the narrow unsigned dtype, to a wider one REDUCE ADD over k lanes of SHL(CAST(x), 8 * size * lane); BITCASTs "
                  "to and from the unsigned dtype of each size", r_bitcast),
  "REDUCE": Rule("REDUCE(x) arg (op, n) in graphs; REDUCE(x, ranges...) arg (op, 0) in kernels",
                 "REDUCE(x) arg (op, n); in kernels REDUCE(x, ranges...) arg op; an ADD over WHERE(cond, x, Invalid) in a kernel sums "
                 "WHERE(cond, x, 0), as tinygrad's codegen gives it (pm_remove_invalid; a MAX or MUL over one is refused)", r_reduce),
  "CONTIGUOUS": Rule("CONTIGUOUS(x)", "CONTIGUOUS(x)", r_same(Ops.CONTIGUOUS)),
  "DETACH": Rule("DETACH(x)", "DETACH(x); of storage (x's base through views and AFTERs a BUFFER or PARAM) x itself",
                 r_detach),
  "COPY": Rule("COPY(x) arg device, or a device tuple", "COPY(x) arg device; at a tensor stage (the tensor graph, a precompiled body) a "
               "COPY to a device tuple is a replicated MULTI of a COPY per device (in one device's translation of an UNSHARD, the "
               "COPY to that device)", r_copy),
  "UNSHARD": Rule("UNSHARD(x, RANGE of AxisType.DEVICE) arg (axis,): x's shards side by side along axis",
                  "at a tensor stage MULTI(x on device 0, ..., x on device n-1) arg axis, x translated once per device with the "
                  "range bound to its number", r_unshard),
  "STORE": Rule("STORE(target, value); in kernels STORE(INDEX(buf, WHERE(cond, idx, Invalid)), value)",
                "STORE(target, value); a gated index gives STORE(INDEX(buf, idx), value, cond)", r_store),
  "AFTER": Rule("AFTER(x, deps...); at a tensor stage AFTER(x, STORE(x, v)) with x no storage (its base neither BUFFER "
                "nor PARAM: an assign into a tensor not yet realized), or with x storage over a device tuple (UNSHARD(storage, "
                "DEVICE range) arg (axis,) split, the storage itself replicated); a dep may be a view of storage with AFTERs in it "
                "(an assign into a slice: AFTER(buf, AFTER(SHRINK(buf), STORE(...))))",
                "AFTER(x, deps...), a dep that is a view of storage replaced by the deps of the AFTERs in it (waiting on the view "
                "is waiting on them); the assign into no storage is CONTIGUOUS(v), as tinygrad's transform_to_call rewrites it "
                "(replace_store_after_with_contig); bind()'s AFTER(var, STORE(var, CONST v)) is BIND(DEFINE_VAR, CONST v); into storage "
                "over a device tuple, per device j AFTER(x_j, STORE(x_j, "
                "COPY(v_j, device j))), v_j the SHRINK of v to shard j's block (replicated: v), the MULTI of them arg axis (a "
                "precompiled body's entry: one entry per device); any other AFTER of storage over a device tuple (a sharded "
                "output waiting on the precompiled call that writes it) is the MULTI of an AFTER per device, each on the same "
                "deps (on a kernel run once per device, device j's run)", r_after),
  "MSELECT": Rule("MSELECT(x, i): device i's own storage of x, storage over a device tuple (an all-reduce's arg)",
                  "x as translated on device i (that device's BUFFER or PARAM)", r_mselect),
  "MSTACK": Rule("MSTACK(x_0, ..., x_n-1): a kernel-graph arg over a device tuple, x_j device j's storage",
                 "x_j in the launch on device j (a kernel graph's entry over a device tuple is one entry per device, each as "
                 "launched there; a BUFFER over the tuple is one BUFFER per device)", r_mstack),
  "GROUP": Rule("GROUP(effects...)", "GROUP(effects...)", r_effects(Ops.GROUP)),
  "NOOP": Rule("NOOP(), void: an effect that does nothing (a loop body whose work was folded away)", "GROUP(): a GROUP of no effects",
               r_effects(Ops.GROUP)),
  "END": Rule("END(effect, ranges...)", "END(effect, ranges...)", r_effects(Ops.END)),
  "FUNCTION": Rule("FUNCTION(TUPLE(...), args...) arg CallInfo", "CALL(TUPLE(...), args...) arg the name: a value call; an arg over a "
                   "device tuple that its body UNSHARDs (its PARAM has no axis: storage of its own on each device) is one arg per "
                   "device", r_function),
  "CALL": Rule("CALL(body, args...) arg CallInfo, void; body a kernel SINK, a SINK of STOREs of tensor values into its PARAMs (a "
               "precompiled function once callified, and the whole callified graph), a COPY, or a LINEAR of kernel CALLs",
               "CALL(body, args...) arg the name; a SINK of STOREs into PARAMs is tinyspec's precompiled call at TENSOR, as it is (its "
               "body a tensor graph over its own PARAMs); a LINEAR of kernel CALLs (a precompiled function's schedule) becomes a nested "
               "kernel-graph SINK whose order is AFTER (each call takes the latest version of its args; a write also waits for earlier "
               "readers) and whose entries are the PARAMs it writes; at the kernel graph a kernel over two devices (host memory "
               "aside) that tinygrad's schedule makes a COPY (its pm_copy_from_store) is that COPY call, CALL(COPY(src), dst, src); a "
               "kernel's CALL is passed, after its storage, the BIND of each Variable the kernel reads (the value tinygrad's runtime "
               "passes at launch from var_vals); a body reads its own variable args as pk and any other pk as its caller does (tinygrad's "
               "resolve_linear_call: an all-reduce, passed no variable, inherits its caller's); "
               "an arg over a device tuple of a SINK-body call (storage over the tuple, or at a tensor stage an UNSHARD of a view of "
               "it) is one arg per device (its body's PARAMs renumbered); a LINEAR-body call over such args runs on each device "
               "as launched there; at a tensor stage a kernel CALL over args over a device tuple (a custom kernel on sharded tensors, "
               "which tinygrad runs once per device, its PARAMs a shard's size) is GROUP(one CALL per device), device j's parts its "
               "args (its storage there; of a value body's PARAM standing for its arg whole, shard j's block COPY to device j) and the "
               "kernel as launched there; at the kernel "
               "graph a SINK-body call (tinygrad's all-reduce, precompiled) has as body the kernel graph tinygrad lowers that body "
               "into (get_kernel_graph, captured), a nested kernel graph, one call in every device's entries",
               r_call),
  "TUPLE": Rule("TUPLE(x...)", "TUPLE(x...)", r_tuple),
  "GETTUPLE": Rule("GETTUPLE(call) arg i", "GETTUPLE(call) arg i", r_gettuple),
  "RANGE": Rule("RANGE(bound[, ordering ranges...]) arg (axis..., AxisType)",
                "RANGE(bound) arg RangeArg(axis, kind): WEAK/LOOP -> LOOP, GLOBAL, REDUCE, UPCAST/UNROLL -> UNROLL; a multi-part axis gets "
                "a fresh number; the program's ordering sources are dropped (the LINEAR order carries them); DEVICE (a value, the "
                "device's number) in a launch on one device: CONST of that number", r_range),
  "INDEX": Rule("INDEX(buf, idx), also used as a read; INDEX(buf, i0, i1, ...) on a shaped buffer; INDEX(buf) on a buffer of shape (); "
                "in programs INDEX(LOAD(SHRINK(buf, offset, n)), lane), a lane of a vector load; in kernels INDEX(view(storage), ...) "
                "through RESHAPE, SHRINK, PERMUTE, FLIP (debuf's SHRINK of a max-sized PARAM to a symbolic shape, a custom kernel's "
                "flatten)",
                "INDEX(buf, idx); used as a value: LOAD(INDEX); gated: LOAD(INDEX, 0, cond); several indices: one row-major flat index "
                "(into the storage itself when the buffer is a RESHAPE of it); none: index 0; a lane of a vector load: "
                "LOAD(INDEX(buf, offset + lane)), the vector load and its SHRINK not listed; through views: INDEX(storage, the index "
                "carried back through them as tinygrad's codegen folds them, pm_mops: a SHRINK adds its offsets, PERMUTE reorders, FLIP "
                "mirrors, RESHAPE keeps the row-major flat index)", r_index),
  "LOAD": Rule("LOAD(INDEX[, alt, gate])", "LOAD(INDEX[, alt, gate])", r_load),
  "LINEAR": Rule("LINEAR(uops...) of a program", "LINEAR(uops...); a PARAM's or BUFFER's size (and a weak CONST every user of which is a "
                 "CAST) is not listed, being folded; the inner nodes of a several-op spelling (MULACC, FLOORDIV) are listed before it", r_linear),
  "PROGRAM": Rule("PROGRAM(sink, LINEAR, SOURCE, BINARY) arg ProgramInfo", "PROGRAM(sink, LINEAR, SOURCE(c, name, text)) arg name; BINARY dropped",
                  r_program),
  "IF": Rule("IF(cond, ...) ... ENDIF(IF) in a program's LINEAR: the instructions between them run where cond holds",
              "not listed: each STORE between them is gated by cond (AND of the open IFs; AND its own gate), "
              "STORE(INDEX, value, cond); a LOAD or another effect in a block is refused", r_if),
  "ENDIF": Rule("ENDIF(IF): the end of an IF block", "not listed (see IF)", r_if),
  "SPECIAL": Rule("SPECIAL(bound) arg name (a GPU thread index; the PYTHON device's programs use them)", "SPECIAL(bound) arg name", r_special),
}
# Folded into their users' args, never translated as nodes of their own: a STACK or CONST that is a shape, offset or
# size source (of a movement op, PARAM or BUFFER). Anything else (STACK as a value, FDIV, POW, THREEFRY, WMMA, NOOP, the
# multi-device ops, vector dtypes, ...) has no rule and is Untranslatable.
FOLDED = ("STACK or CONST as a shape/offset/size source", "counted as translated: it becomes part of its user's arg")


def rules_markdown() -> str:
  """The translation table as markdown (docs/tinygrad.md holds it word for word)."""
  lines = ["| tinygrad op | tinygrad form | tinyspec form |", "|---|---|---|"]
  lines += [f"| {op} | {r.tinygrad} | {r.tinyspec} |" for op, r in RULES.items()]
  lines.append(f"| (folded) | {FOLDED[0]} | {FOLDED[1]} |")
  return "\n".join(lines)



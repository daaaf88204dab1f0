"""The translation table: every decision turning a tinygrad 0.14 op or form into its tinyspec form, one `RULES` entry
each (tinygrad op name -> Rule(tinygrad form, tinyspec form, function)). docs/tinygrad.md holds `rules_markdown()` word
for word. An op with no entry, or a form its rule refuses, is Untranslatable."""
from __future__ import annotations

from typing import Any, Callable

from tinyspec.bridge.tinygrad.capture import copy_call
from tinyspec.bridge.tinygrad.translate import (AXIS, SAME_NAME_ALU, Rule, Tr, Untranslatable, addrspace_of, alu, broadcast,
                                               device_of, index_and_gate, is_invalid, is_weak, launches, multi_count, operand_dtype,
                                               param_size)
from tinyspec.dtype import dtypes
from tinyspec.uop import BufferArg, Ops, RangeArg, SourceArg, UOp, next_buffer_id, storage_of


# ---- the rules ----
def r_sink(tr: Tr, u: Any, want: Any) -> UOp:
  if tr.stage != "kernel_graph" or tr.kernel or tr.shard is not None: return UOp(Ops.SINK, dtypes.void, tuple(tr.value(s) for s in u.src))
  # a kernel graph's entry over a device tuple is one entry per device, each as launched there (tinyspec's kernel graph is
  # per device: its multi pass runs before callify)
  out = []
  for s in u.src:
    if (n := multi_count(s)) is None: out.append(tr.value(s))
    else: out += tr.per_device(n, lambda s=s: tr.value(s))
  return UOp(Ops.SINK, dtypes.void, tuple(out))


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


def r_buffer(tr: Tr, u: Any, want: Any) -> UOp:
  space = addrspace_of(u.arg)
  if space is None: raise Untranslatable("BUFFER", tr.stage, f"address space {u.arg.addrspace}")
  # storage over a device tuple is one BUFFER per device: keyed by the device's number too
  key = (u, tr.shard) if isinstance(getattr(u.arg, "device", None), tuple) else u
  # kernel-local accumulators and kernel-graph-local buffers are this graph's (slots reused, fresh ids); others the program's
  made = tr.local_buffers if tr.kernel or tr.stage == "kernel_graph" else tr.t.buffers
  if key not in made:
    made[key] = UOp(Ops.BUFFER, tr.dtype(u), (), BufferArg(next_buffer_id(), param_size(tr, u), device_of(tr, u.arg), space))
  return made[key]


DEVICE_NUM = "_device_num"  # the scalar PARAM a program reads its device's number from (tinygrad.engine.realize.unwrap_multi binds it)


def r_param(tr: Tr, u: Any, want: Any) -> UOp:
  space = addrspace_of(u.arg)
  if space is None and u.arg.name == DEVICE_NUM and tr.shard is not None: return UOp.const(tr.dtype(u), tr.shard)
  if space is None: raise Untranslatable("PARAM", tr.stage, "a scalar PARAM (a bound variable, addrspace ALU): tinyspec has no DEFINE_VAR yet")
  slot = u.arg.slot
  if not tr.kernel and slot in tr.bind:
    b = tr.bind[slot]
    if not isinstance(b, tuple): return b
    if tr.shard is None: raise Untranslatable("PARAM", tr.stage, f"multi-device storage {u.arg.device} outside a launch on one device")
    return b[tr.shard]
  shape, size = tr.shape(u), param_size(tr, u)
  p = UOp.param(slot, tr.dtype(u), size, device_of(tr, u.arg), space)
  # a shaped PARAM (a function body's) is storage with a shape: flat storage in a kernel graph, a RESHAPE of it in a tensor graph
  return p if tr.kernel or tr.stage == "kernel_graph" or shape == (size,) else p.reshape(shape)


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
    arg = u.marg
    if tr.shard is not None:
      arg = tuple(tuple(on_device(tr, b) for b in a) if isinstance(a, tuple) else on_device(tr, a) for a in arg)
      tr.seen(*(x for s in u.src[1:] for x in s.toposort()))  # the device ranges and arithmetic folded into the arg
    if not all(isinstance(a, (int, bool)) for a in _flat(arg)): raise Untranslatable(u.op.name, tr.stage, f"symbolic arg {arg}")
    if op is Ops.PAD or op is Ops.SHRINK: arg = tuple((int(o), int(s)) for o, s in arg)
    return UOp(op, tr.dtype(u, want), (tr(u.src[0], want),), tuple(arg))
  return fn


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
  if tr.kernel: return UOp(Ops.REDUCE, dt, (tr.value(u.src[0], dt), *(tr(r) for r in u.src[1:])), op)
  return UOp(Ops.REDUCE, dt, (tr(u.src[0], dt),), (op, n))


def r_same(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp:
    return UOp(op, tr.dtype(u, want), tuple(tr.value(s, want) for s in u.src))
  return fn


def r_copy(tr: Tr, u: Any, want: Any) -> UOp:
  if isinstance(u.arg, str): return UOp(Ops.COPY, tr.dtype(u), (tr(u.src[0]),), u.arg)
  if not (isinstance(u.arg, tuple) and all(isinstance(d, str) for d in u.arg)) or tr.kernel or tr.stage != "tensor":
    raise Untranslatable("COPY", tr.stage, f"COPY to {u.arg!r} (multi-device)")
  x = tr(u.src[0])
  # a copy to a device tuple: on device j of a shard's translation its copy to device j, else each device's (replicated)
  if tr.shard is not None: return UOp(Ops.COPY, tr.dtype(u), (x,), u.arg[tr.shard])
  return UOp.multi([UOp(Ops.COPY, tr.dtype(u), (x,), d) for d in u.arg], None)


def r_unshard(tr: Tr, u: Any, want: Any) -> UOp:
  """UNSHARD(x, DEVICE range) arg (axis,) at the tensor stage: tinyspec's MULTI of x translated once per device (the
  range bound to the device's number), split along axis."""
  if tr.stage != "tensor" or tr.shard is not None or len(u.src) != 2 or not (isinstance(u.arg, tuple) and len(u.arg) == 1):
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


def r_after(tr: Tr, u: Any, want: Any) -> UOp:
  base = tr(u.src[0])
  return UOp(Ops.AFTER, base.dtype, (base, *(tr.value(d) for d in u.src[1:])))


def r_effects(op: Ops) -> Callable:
  def fn(tr: Tr, u: Any, want: Any) -> UOp: return UOp(op, dtypes.void, tuple(tr(s) for s in u.src))
  return fn


def r_function(tr: Tr, u: Any, want: Any) -> UOp:
  """FUNCTION(TUPLE(...), args...) with a CallInfo -> CALL(TUPLE(...), args...): a value call read by GETTUPLE."""
  body = u.src[0]
  if body.op.name != "TUPLE": raise Untranslatable("FUNCTION", tr.stage, f"a FUNCTION whose body is {body.op.name}, not TUPLE")
  inner = Tr(tr.t, tr.stage)  # the body's PARAMs stand for this call's args
  return UOp(Ops.CALL, dtypes.void, (inner(body), *(tr(a) for a in u.src[1:])), call_name(u))


def r_call(tr: Tr, u: Any, want: Any) -> UOp:
  """CALL(body, args...) with a void dtype: a kernel (SINK with KernelInfo), a precompiled call (a SINK storing tensor
  values into its PARAMs: its body is translated as a tensor graph over its own PARAMs), a LINEAR of kernel CALLs (a
  precompiled call's schedule), or a COPY."""
  if u.dtype.name != "void": raise Untranslatable("CALL", tr.stage, "a value-returning CALL inside a kernel (an inline function call)")
  body = u.src[0]
  args = tuple(tr(a) for a in u.src[1:])
  name = body.op.name
  if name == "SINK" and type(body.arg).__name__ == "KernelInfo":
    if tr.stage == "kernel_graph" and (copy := copy_call(u)) is not None:
      tr.seen(*body.toposort())   # the kernel is translated: as the COPY it means
      return r_call(tr, copy, want)
    shard = tr.shard if launches(body) != (None,) else None
    if (prg := tr.bodies.get(body if shard is None else (body, shard))) is not None: return UOp(Ops.CALL, dtypes.void, (prg, *args))
    return UOp(Ops.CALL, dtypes.void, (tr.t.kernel(body, tr.stage, shard), *args))
  if name == "SINK": return UOp(Ops.CALL, dtypes.void, (Tr(tr.t, tr.stage, bodies=tr.bodies)(body), *args), call_name(u))
  if name == "LINEAR":
    if not all(c.op.name == "CALL" for c in body.src):
      raise Untranslatable("CALL", tr.stage, "a call of a LINEAR holding more than kernel CALLs")
    tr.seen(body)
    return UOp(Ops.CALL, dtypes.void, (schedule_to_graph(Tr(tr.t, tr.stage, bodies=tr.bodies), body), *args))
  if name == "COPY": return UOp(Ops.CALL, dtypes.void, (Tr(tr.t, tr.stage)(body), *args))
  raise Untranslatable("CALL", tr.stage, f"a CALL of {name}")


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
  that wrote it, read after write) and a written arg also waits for the calls that read its previous version (write
  after read); the SINK holds the last version of every written PARAM (the call's outputs; a kernel-graph-local BUFFER
  is scratch, reached through the AFTERs of the calls that read it)."""
  state: dict[UOp, UOp] = {}
  readers: dict[UOp, list[UOp]] = {}
  for c in linear.src:
    call = tr(c)
    if call.op is not Ops.CALL: return call  # untranslatable (recorded): its placeholder
    body, args = call.src[0], call.src[1:]
    written = stored_slots(body)
    new_args = []
    for k, a in enumerate(args):
      cur = state.get(a, a)
      if k in written and readers.get(a): cur = UOp(Ops.AFTER, cur.dtype, (cur, *readers[a]))
      new_args.append(cur)
    call = UOp(Ops.CALL, dtypes.void, (body, *new_args), call.arg)
    for k, a in enumerate(args):
      if k in written:
        state[a], readers[a] = UOp(Ops.AFTER, a.dtype, (new_args[k], call)), []
      else: readers.setdefault(a, []).append(call)
  return UOp(Ops.SINK, dtypes.void, tuple(v for a, v in state.items() if storage_of(a).op is Ops.PARAM))


def r_tuple(tr: Tr, u: Any, want: Any) -> UOp: return UOp(Ops.TUPLE, dtypes.void, tuple(tr(s) for s in u.src))


def r_gettuple(tr: Tr, u: Any, want: Any) -> UOp:
  return UOp(Ops.GETTUPLE, tr.dtype(u), (tr(u.src[0]),), u.arg)


def r_range(tr: Tr, u: Any, want: Any) -> UOp:
  *axis, kind = u.arg
  if kind.name == "DEVICE" and tr.shard is not None:   # a launch on one device: the runtime binds the axis to its number
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
  rest = tuple(tr(s, idx.dtype if i == 0 else dtypes.bool) for i, s in enumerate(u.src[1:]))
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
    if us and all(x.op.name in ("PARAM", "BUFFER") or x in size_only for x in us): size_only.add(s)
  out: dict[UOp, None] = {}
  for s in u.src:
    if s in size_only:
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


def r_program(tr: Tr, u: Any, want: Any) -> UOp:
  """PROGRAM(sink, LINEAR, SOURCE[, BINARY]) with a ProgramInfo -> PROGRAM(sink, LINEAR, SOURCE(c)) named; BINARY dropped
  (it is the compiled SOURCE)."""
  inner = Tr(tr.t, tr.stage, kernel=True, shard=tr.shard)
  sink, lin = inner(u.src[0]), inner(u.src[1])
  tr.seen(*u.src[2:])
  name = u.arg.name
  src = [UOp(Ops.SOURCE, dtypes.void, (), SourceArg("c", name, s.arg)) for s in u.src[2:] if s.op.name == "SOURCE"]
  return UOp(Ops.PROGRAM, dtypes.void, (sink, lin, *src[:1]), name)


def r_special(tr: Tr, u: Any, want: Any) -> UOp:
  dt = dtypes.index if is_weak(u.dtype) else tr.dtype(u)
  return UOp(Ops.SPECIAL, dt, (tr(u.src[0], dt),), str(u.arg))


RULES: dict[str, Rule] = {
  "SINK": Rule("SINK(x...), arg None or KernelInfo", "SINK(x...); KernelInfo dropped (a kernel's name is not part of its meaning)", r_sink),
  "CONST": Rule("CONST, dtype weakint / weakfloat / concrete, arg value or ConstFloat",
                "CONST of the consumer's dtype when weak (weakint alone: index; weakfloat alone: float32), value unwrapped", r_const),
  "BUFFER": Rule("BUFFER(CONST size) arg ParamArg(slot, dtype, device, addrspace)",
                 "BUFFER arg BufferArg(fresh id, size, device, addrspace); kernel-graph-local and kernel-local buffers get fresh ids "
                 "per graph (tinygrad reuses their slot numbers)", r_buffer),
  "PARAM": Rule("PARAM(CONST size or STACK shape) arg ParamArg(slot, dtype, device); device a tuple for multi-device storage",
                "PARAM arg ParamArg(slot, size, device, addrspace), flat; a shaped PARAM (function body) is RESHAPE(PARAM); "
                "at the kernel graph's top level slot k is the callified CALL's arg k; in a kernel AST or program over a device "
                "tuple, one translation per device, each PARAM on that device (as the runtime launches it), and the scalar PARAM "
                "_device_num a CONST of that device's number", r_param),
  **{op: Rule(f"{op}(x, shape/offset sources)" if op in ("RESHAPE", "EXPAND", "PAD", "SHRINK") else f"{op}(x) arg",
              f"{op}(x) with the sources folded into the arg ({'dims prepended' if op == 'EXPAND' else 'same convention'})",
              r_movement(Ops[op])) for op in ("RESHAPE", "EXPAND", "PAD", "SHRINK", "PERMUTE", "FLIP")},
  **{op: Rule(f"{op}", f"{op}; weak sources take the op's dtype; implicit broadcast made explicit (RESHAPE, EXPAND, PERMUTE)",
              r_alu(Ops[op])) for op in SAME_NAME_ALU},
  "RECIPROCAL": Rule("RECIPROCAL(x)", "RECIP(x)", r_alu(Ops.RECIP)),
  "CDIV": Rule("CDIV(a, b): C division, truncating", "IDIV(a, b)", r_alu(Ops.IDIV)),
  "CMOD": Rule("CMOD(a, b): C remainder, truncating", "MOD(a, b)", r_alu(Ops.MOD)),
  "FLOORDIV": Rule("FLOORDIV(a, b): Python //, flooring, on ints",
                   "WHERE(adj, IDIV(a,b) - 1, IDIV(a,b)), adj = MOD(a,b) != 0 AND (MOD(a,b) < 0) != (b < 0); unsigned: IDIV(a, b)", r_floor(True)),
  "FLOORMOD": Rule("FLOORMOD(a, b): Python %, flooring, on ints",
                   "WHERE(adj, MOD(a,b) + b, MOD(a,b)), adj as for FLOORDIV; unsigned: MOD(a, b)", r_floor(False)),
  "MULACC": Rule("MULACC(a, b, c)", "ADD(MUL(a, b), c)", r_mulacc),
  "CAST": Rule("CAST(x), target in the dtype (and arg)", "CAST(x) of the node's dtype; CAST of a weak CONST folds to a CONST of the target",
               r_cast(Ops.CAST)),
  "BITCAST": Rule("BITCAST(x)", "BITCAST(x)", r_cast(Ops.BITCAST)),
  "REDUCE": Rule("REDUCE(x) arg (op, n) in graphs; REDUCE(x, ranges...) arg (op, 0) in kernels",
                 "REDUCE(x) arg (op, n); in kernels REDUCE(x, ranges...) arg op", r_reduce),
  "CONTIGUOUS": Rule("CONTIGUOUS(x)", "CONTIGUOUS(x)", r_same(Ops.CONTIGUOUS)),
  "DETACH": Rule("DETACH(x)", "DETACH(x)", r_same(Ops.DETACH)),
  "COPY": Rule("COPY(x) arg device, or a device tuple", "COPY(x) arg device; at the tensor stage a COPY to a device tuple is a "
               "replicated MULTI of a COPY per device (in one device's translation of an UNSHARD, the COPY to that device)", r_copy),
  "UNSHARD": Rule("UNSHARD(x, RANGE of AxisType.DEVICE) arg (axis,): x's shards side by side along axis",
                  "at the tensor stage MULTI(x on device 0, ..., x on device n-1) arg axis, x translated once per device with the "
                  "range bound to its number", r_unshard),
  "STORE": Rule("STORE(target, value); in kernels STORE(INDEX(buf, WHERE(cond, idx, Invalid)), value)",
                "STORE(target, value); a gated index gives STORE(INDEX(buf, idx), value, cond)", r_store),
  "AFTER": Rule("AFTER(x, deps...)", "AFTER(x, deps...)", r_after),
  "MSTACK": Rule("MSTACK(x_0, ..., x_n-1): a kernel-graph arg over a device tuple, x_j device j's storage",
                 "x_j in the launch on device j (a kernel graph's entry over a device tuple is one entry per device, each as "
                 "launched there; a BUFFER over the tuple is one BUFFER per device)", r_mstack),
  "GROUP": Rule("GROUP(effects...)", "GROUP(effects...)", r_effects(Ops.GROUP)),
  "NOOP": Rule("NOOP(), void: an effect that does nothing (a loop body whose work was folded away)", "GROUP(): a GROUP of no effects",
               r_effects(Ops.GROUP)),
  "END": Rule("END(effect, ranges...)", "END(effect, ranges...)", r_effects(Ops.END)),
  "FUNCTION": Rule("FUNCTION(TUPLE(...), args...) arg CallInfo", "CALL(TUPLE(...), args...) arg the name: a value call", r_function),
  "CALL": Rule("CALL(body, args...) arg CallInfo, void; body a kernel SINK, a SINK of STOREs of tensor values into its PARAMs (a "
               "precompiled function once callified, and the whole callified graph), a COPY, or a LINEAR of kernel CALLs",
               "CALL(body, args...) arg the name; a SINK of STOREs into PARAMs is tinyspec's precompiled call at TENSOR, as it is (its "
               "body a tensor graph over its own PARAMs); a LINEAR of kernel CALLs (a precompiled function's schedule) becomes a nested "
               "kernel-graph SINK whose order is AFTER (each call takes the latest version of its args; a write also waits for earlier "
               "readers) and whose entries are the PARAMs it writes; at the kernel graph a kernel over two devices (host memory "
               "aside) that tinygrad's schedule makes a COPY (its pm_copy_from_store) is that COPY call, CALL(COPY(src), dst, src)",
               r_call),
  "TUPLE": Rule("TUPLE(x...)", "TUPLE(x...)", r_tuple),
  "GETTUPLE": Rule("GETTUPLE(call) arg i", "GETTUPLE(call) arg i", r_gettuple),
  "RANGE": Rule("RANGE(bound[, ordering ranges...]) arg (axis..., AxisType)",
                "RANGE(bound) arg RangeArg(axis, kind): WEAK/LOOP -> LOOP, GLOBAL, REDUCE, UPCAST/UNROLL -> UNROLL; a multi-part axis gets "
                "a fresh number; the program's ordering sources are dropped (the LINEAR order carries them); DEVICE (a value, the "
                "device's number) in a launch on one device: CONST of that number", r_range),
  "INDEX": Rule("INDEX(buf, idx), also used as a read; INDEX(buf, i0, i1, ...) on a shaped buffer; INDEX(buf) on a buffer of shape ()",
                "INDEX(buf, idx); used as a value: LOAD(INDEX); gated: LOAD(INDEX, 0, cond); several indices: one row-major flat index "
                "(into the storage itself when the buffer is a RESHAPE of it); none: index 0", r_index),
  "LOAD": Rule("LOAD(INDEX[, alt, gate])", "LOAD(INDEX[, alt, gate])", r_load),
  "LINEAR": Rule("LINEAR(uops...) of a program", "LINEAR(uops...); a PARAM's or BUFFER's size (and a weak CONST every user of which is a "
                 "CAST) is not listed, being folded; the inner nodes of a several-op spelling (MULACC, FLOORDIV) are listed before it", r_linear),
  "PROGRAM": Rule("PROGRAM(sink, LINEAR, SOURCE, BINARY) arg ProgramInfo", "PROGRAM(sink, LINEAR, SOURCE(c, name, text)) arg name; BINARY dropped",
                  r_program),
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



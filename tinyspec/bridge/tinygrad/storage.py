"""Rules of storage: BUFFER and PARAM (flat storage, slots renumbered in a call's body over a device tuple, a symbolic
shape at its max), a Variable's BUFFER or PARAM as DEFINE_VAR (or its BIND), and a store target's per-device storage."""
from __future__ import annotations

import math
from typing import Any

from tinyspec.bridge.tinygrad.bound import DEVICE_NUM, is_variable
from tinyspec.bridge.tinygrad.devices import multi_count, param_axis
from tinyspec.bridge.tinygrad.multi import replicated_storage
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import define_var, value_of
from tinyspec.bridge.tinygrad.views import GROUP_VIEWS
from tinyspec.dtype import dtypes
from tinyspec.uop import AddrSpace, BufferArg, Ops, UOp, next_buffer_id


def param_size(tr: Translator, u: Any) -> int:
  return math.prod(tr.shape(u))


def device_of(tr: Translator, arg: Any) -> str:
  """The device of storage; multi-device storage (a device tuple) has one only in a kernel as launched on one device, or
  in a value call's body, where a PARAM over a tuple stands for the whole MULTI arg and is on its first device
  (tinyspec's form, uop.home_device: the multi pass gives each shard a PARAM of its own device)."""
  dev = getattr(arg, "device", None)
  if isinstance(dev, tuple) and tr.value_body and tr.shard is None: return dev[0]
  if isinstance(dev, tuple):
    if tr.shard is None: raise Untranslatable("PARAM", tr.stage, f"multi-device storage {dev}")
    return dev[tr.shard]
  return dev if dev else tr.translation.device


def addrspace_of(arg: Any) -> AddrSpace:
  name = getattr(getattr(arg, "addrspace", None), "name", "GLOBAL")
  return {"GLOBAL": AddrSpace.GLOBAL, "LOCAL": AddrSpace.LOCAL, "REG": AddrSpace.REG}.get(name, None)


def r_buffer(tr: Translator, u: Any, want: Any) -> UOp:
  if is_variable(u): return as_wanted(define_var(tr, u), want)   # an unbound Variable: its value is an input of the run
  if (m := replicated_storage(tr, u)) is not None: return m
  space = addrspace_of(u.arg)
  if space is None: raise Untranslatable("BUFFER", tr.stage, f"address space {u.arg.addrspace}")
  # storage over a device tuple is one BUFFER per device: keyed by the device's number too
  key = (u, tr.shard) if isinstance(getattr(u.arg, "device", None), tuple) else u
  # kernel-local accumulators and kernel-graph-local buffers are this graph's (slots reused, fresh ids); others the program's
  made = tr.local_buffers if tr.kernel or tr.stage == "kernel_graph" else tr.translation.buffers
  if key not in made:
    made[key] = UOp(Ops.BUFFER, tr.dtype(u), (), BufferArg(next_buffer_id(), param_size(tr, u), device_of(tr, u.arg), space))
  return made[key]


def r_param(tr: Translator, u: Any, want: Any) -> UOp:
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


def r_variable(tr: Translator, u: Any) -> UOp:
  """A Variable PARAM: DEFINE_VAR in a body that reads it (the CALL that runs the body binds it); at a kernel graph's top
  level, where it is a nested call's arg (a precompiled function's schedule), the BIND its scope gives it, if any."""
  v = define_var(tr, u)
  if tr.stage != "kernel_graph" or tr.kernel or (val := value_of(tr, u)) is None: return v
  return v.bind(val)


def storage_shards(tr: Translator, x: Any) -> tuple[list[UOp], int | None] | None:
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

"""Rules of values over a device tuple (tinygrad keeps them one node over the tuple, tinyspec one per device): storage
read whole at a tensor stage, MSELECT and MSTACK (one device's storage of a tuple), COPY to a device tuple, UNSHARD."""
from __future__ import annotations

from typing import Any

from tinyspec.bridge.tinygrad.devices import multi_count, param_axis
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.uop import Ops, UOp


def replicated_storage(tr: Translator, u: Any) -> UOp | None:
  """Storage over a device tuple read whole at a tensor stage, outside any one device's translation: tinygrad keeps a
  replicated tensor so (a sharded one is an UNSHARD of it), tinyspec's form is a replicated MULTI of the per-device
  storage; a precompiled body's PARAM standing for a sharded arg (its ParamArg has the axis) is the MULTI of the
  per-device PARAMs split along that axis. None for anything else."""
  if tr.kernel or tr.shard is not None or tr.stage not in ("tensor", "callified") or (n := multi_count(u)) is None: return None
  if tr.value_body and u.op.name == "PARAM": return None   # a value call's PARAM stands for its MULTI arg whole (device_of)
  return UOp.multi(tr.per_device(n, lambda: tr(u)), param_axis(u))


def r_mselect(tr: Translator, u: Any, want: Any) -> UOp:
  """MSELECT(x, i): device i's own storage of x, storage over a device tuple (whichever device's translation reads it:
  an all-reduce copies one device's partial result to the others)."""
  if tr.kernel or not isinstance(u.arg, int): raise Untranslatable("MSELECT", tr.stage, f"MSELECT arg {u.arg!r} inside a kernel")
  with tr.on(u.arg): return tr(u.src[0])


def r_mstack(tr: Translator, u: Any, want: Any) -> UOp:
  if tr.shard is None: raise Untranslatable("MSTACK", tr.stage, "an MSTACK outside a launch on one device")
  x = u.src[tr.shard]
  with tr.on(None): return tr(x)   # device j's own storage: over one device, the same whichever launch reads it


def r_copy(tr: Translator, u: Any, want: Any) -> UOp:
  if isinstance(u.arg, str): return UOp(Ops.COPY, tr.dtype(u), (tr(u.src[0]),), u.arg)
  if not (isinstance(u.arg, tuple) and all(isinstance(d, str) for d in u.arg)) or tr.kernel or tr.stage not in ("tensor", "callified"):
    raise Untranslatable("COPY", tr.stage, f"COPY to {u.arg!r} (multi-device)")
  x = tr(u.src[0])
  # a copy to a device tuple: on device j of a shard's translation its copy to device j, else each device's (replicated)
  if tr.shard is not None: return UOp(Ops.COPY, tr.dtype(u), (x,), u.arg[tr.shard])
  return UOp.multi([UOp(Ops.COPY, tr.dtype(u), (x,), d) for d in u.arg], None)


def r_unshard(tr: Translator, u: Any, want: Any) -> UOp:
  """UNSHARD(x, DEVICE range) arg (axis,) at a tensor stage: tinyspec's MULTI of x translated once per device (the
  range bound to the device's number), split along axis."""
  if tr.stage not in ("tensor", "callified") or tr.shard is not None or len(u.src) != 2 or not (isinstance(u.arg, tuple) and len(u.arg) == 1):
    raise Untranslatable("UNSHARD", tr.stage, f"UNSHARD arg {u.arg!r} outside a tensor graph's one sharded axis")
  rng = u.src[1]
  if rng.op.name != "RANGE" or rng.arg[-1].name != "DEVICE" or rng.src[0].op.name != "CONST":
    raise Untranslatable("UNSHARD", tr.stage, "an UNSHARD over no DEVICE range of a constant count")
  tr.seen(*rng.toposort())
  return UOp.multi(tr.per_device(int(rng.src[0].arg), lambda: tr.value(u.src[0], want)), u.arg[0])

"""tinygrad's numbers, read back from its storage: a BUFFER's elements (as the tinyspec dtype it translates to, so small
floats are read right), the BUFFER a realized output was written into, and a realized output's numbers, read from its
storage alone or as tinygrad's numpy() reads a view, outside any TinyJit capture under way."""
from __future__ import annotations

from typing import Any

import numpy as np
from tinygrad import Tensor
from tinygrad.engine import realize
from tinygrad.uop.ops import GroupOp, Ops

from tinyspec.bridge.tinygrad.dtype_names import DTYPES


def allocated(u: Any) -> bool:
  """Whether tinygrad has allocated the storage of BUFFER u (False when it cannot tell)."""
  try: return bool(u.buffer.is_allocated())
  except Exception: return False


def read_buffer(u: Any, per_device: bool = False) -> np.ndarray | None:
  """The contents of a BUFFER tinygrad has allocated; per_device: storage over a device tuple (a MultiBuffer) too, one
  row per device (an input's contents: each device's BUFFER is one of tinyspec's)."""
  try:
    buf = u.buffer
    if not buf.is_allocated(): return None
    if per_device and hasattr(buf, "bufs"): return np.stack([elements(b) for b in buf.bufs])
    return elements(buf)
  except Exception:
    return None


def elements(buf: Any) -> np.ndarray:
  """A tinygrad Buffer's elements, copied. tinygrad's Buffer.numpy() views bfloat16 and fp8 storage as float32 (four
  bytes an element: the wrong values, and too few), so a small float is read from its bytes as the numpy type of the
  tinyspec dtype the bridge translates it to (ml_dtypes')."""
  dt = DTYPES.get(buf.dtype.name)
  if dt is not None and dt.is_small_float: return np.frombuffer(buf.as_memoryview(), dtype=dt.np).copy()
  return np.array(buf.numpy(), copy=True)


def buffer_of(u: Any) -> Any:
  """The BUFFER a realized output was written into, or None when the output is another view of storage (tinygrad does
  not copy a movement op of realized storage: the output stays a PAD, SHRINK, ... of it, realized only when read)."""
  while u.op.name == "RESHAPE": u = u.src[0]
  return u if u.op.name == "BUFFER" else None


def view_base(u: Any) -> Any:
  """The storage under a view of it (tinygrad's movement ops and AFTERs), or u itself."""
  while u.op is Ops.AFTER or u.op in GroupOp.Movement: u = u.src[0]
  return u


def unsharded(u: Any) -> Any:
  """What a sharded tensor's UNSHARD(storage, DEVICE range) is over (its storage over the device tuple), else u."""
  return u.src[0] if u.op.name == "UNSHARD" else u


def read_stored(u: Any, shape: tuple[int, ...]) -> np.ndarray | None:
  """A realized uop's numbers (of its concrete shape, bound_shape) read from its storage alone (None when it is no
  storage, or not readable): a BUFFER through RESHAPEs; storage over a device tuple, replicated: device 0's;
  UNSHARD(RESHAPE(storage), DEVICE range) arg (axis,): the devices' blocks (each of the RESHAPE's shape) side by side
  along axis."""
  axis, inner = (u.arg[0], u.src[0]) if u.op.name == "UNSHARD" else (None, u)
  if (s := buffer_of(inner)) is None: return None
  if not isinstance(s.arg.device, tuple):
    return None if axis is not None or (d := read_buffer(s)) is None else d.reshape(shape)
  if (rows := read_buffer(s, per_device=True)) is None: return None
  if axis is None: return rows[0].reshape(shape)
  return np.concatenate([r.reshape(inner.shape) for r in rows], axis=axis).reshape(shape)


def numbers(u: Any, storage: Any, shape: tuple[int, ...]) -> np.ndarray:
  """One realized uop's numbers, of its concrete shape (bound_shape): its storage's contents, or (a view) what
  tinygrad's numpy() gives, read outside any TinyJit capture under way (a read there is refused, and must not become
  part of the captured function). A view whose shape is over bound variables is read as tinygrad's own `x[:3, :i]`
  reads it: sliced to the numbers they bind."""
  if storage is not None and (data := read_buffer(storage)) is not None: return data.reshape(shape)
  saved = list(realize.capturing)
  realize.capturing.clear()
  try:
    t = Tensor(u)
    return (t if tuple(u.shape) == shape else t[tuple(slice(0, n) for n in shape)]).numpy()
  finally: realize.capturing[:] = saved

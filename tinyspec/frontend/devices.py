"""Devices: moving a tensor to a device, and tensors over several devices (sharded along an axis, or replicated).

A tensor over devices (d_0, ..., d_{n-1}) is a MULTI (docs/ir.md "Multi-device tensors"): its `device` is that tuple,
and every op takes it as one tensor (the multi pass runs the ops per device, with the copies and all-reduces a
reduction over the sharded axis needs). Ops combine tensors on one device or one device tuple: a sharded tensor with
a replicated one over the same devices, or with constants, but never with a tensor on one device (ValueError)."""
from __future__ import annotations

from typing import Sequence

from tinyspec.frontend.attach import method
from tinyspec.frontend.tensor import Tensor, resolve_axis
from tinyspec.uop import UOp


@method
def to(self: Tensor, device: str) -> Tensor:
  """This tensor on one device: itself when it is there, its COPY otherwise; a tensor over several devices is gathered
  there (its shards concatenated, or one of its replicas)."""
  if not isinstance(device, str): raise TypeError(f"Tensor.to takes one device name, not {device!r}; Tensor.shard spreads a tensor over devices")
  return self if self.device == device else self.copy_to(device)


def shard_sizes(n: int, parts: int) -> list[int]:
  """The block sizes of an axis of n elements split over `parts` devices: as equal as can be, the first ones larger."""
  return [n // parts + (i < n % parts) for i in range(parts)]


@method
def shard(self: Tensor, devices: Sequence[str], axis: int | None = None) -> Tensor:
  """This tensor over several devices: split along axis into one block per device (shard_sizes), or replicated on every
  device (axis None)."""
  devices = tuple(devices)
  if len(devices) < 2 or len(set(devices)) != len(devices) or not all(isinstance(d, str) for d in devices):
    raise ValueError(f"shard takes two or more distinct device names, got {devices!r}")
  if isinstance(self.device, tuple): raise ValueError(f"shard of a tensor already over {self.device}: gather it first (Tensor.to)")
  if axis is None: return Tensor(UOp.multi([self.to(d).uop for d in devices], None))
  axis = resolve_axis(axis, self.ndim, scalar_ok=False)
  if (n := self.shape[axis]) < len(devices):
    raise ValueError(f"shard of axis {axis} (size {n}) over {len(devices)} devices: every device needs a block of at least one")
  parts = self.split(shard_sizes(n, len(devices)), dim=axis)
  return Tensor(UOp.multi([p.to(d).uop for p, d in zip(parts, devices)], axis))

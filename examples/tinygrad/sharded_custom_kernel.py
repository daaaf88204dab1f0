"""A custom kernel over sharded tensors (tinygrad's test_custom_kernel_precompile_multidevice): tinygrad runs the kernel
once per device on that device's shard (its PARAMs are a shard's size), writing storage of its own on each device
(`Tensor.empty(..., device=devices).uop.unshard(0)`). Called directly, inside a value call (@function) and inside a
precompiled function; its rows differ, so a shard read from the wrong block or device shows in the numbers."""
import numpy as np
from tinygrad import Tensor, UOp, function
from tinygrad.uop.ops import KernelInfo

DEVICES = ("CPU:0", "CPU:1")
A = np.arange(16, dtype=np.float32).reshape(4, 4)


def double_kernel(C: UOp, A: UOp) -> UOp:
  C, A = C.flatten(), A.flatten()
  i = UOp.range(A.numel(), 0)
  return C[i].store(A[i] * 2.0).end(i).sink(arg=KernelInfo(name="double_kernel"))


def doubled(a: Tensor) -> Tensor:
  # each device's own output storage, side by side along axis 0: the kernel writes one shard of it per device
  c = Tensor(Tensor.empty(a.shape[0] // len(DEVICES), a.shape[1], dtype=a.dtype, device=DEVICES).uop.unshard(0), device=DEVICES)
  return Tensor.custom_kernel(c, a, fxn=double_kernel)[0]


@function(allow_implicit=True)
def doubled_call(a: Tensor) -> Tensor: return doubled(a)


@function(precompile=True, allow_implicit=True)
def doubled_precompiled(a: Tensor) -> Tensor: return doubled(a)


def program():
  a = Tensor(A).shard(DEVICES, axis=0).realize()
  # tinygrad's realize leaves a precompiled function's output that is its implicit storage a GETTUPLE (numpy() recomputes
  # it), so it is read through an op of its own
  return doubled(a), doubled_call(a) - 1.0, doubled_precompiled(a) + 1.0

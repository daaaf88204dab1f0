"""Calls over sharded tensors. Value calls: an elementwise body over two tensors split along different axes and a
replicated one, a body that reduces across the split, one over a single sharded arg (tinygrad's PARAMs carry the device
tuple; each stands for its arg whole). Precompiled functions: one over a sharded arg reducing along the other axis, one
over a replicated arg, one with two outputs, and beside them a reduce across the split (tinygrad's all-reduce)."""
import numpy as np
from tinygrad import Tensor, function

DEVICES = ("CPU:0", "CPU:1")
rng = np.random.default_rng(5)
A, B = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
R = rng.standard_normal(6).astype(np.float32)


@function(precompile=True)
def gelu_rows(x: Tensor) -> Tensor:
  return (x * (x * 1.702).sigmoid()).sum(1)


@function(precompile=True)
def exp_and_max(x: Tensor) -> tuple[Tensor, Tensor]:
  return x.exp2(), x.max(1)


def program():
  a = Tensor(A).shard(DEVICES, axis=0).realize()
  b = Tensor(B).shard(DEVICES, axis=1).realize()
  r = Tensor(R).shard(DEVICES).realize()
  fused = Tensor.call(a, b, r, fxn=a.as_param(0) * b.as_param(1) + r.as_param(2))
  summed = Tensor.call(a, b, fxn=(a.as_param(0) * b.as_param(1)).sum(0))
  exp = Tensor.call(a, fxn=a.as_param(0).exp2())
  e, m = exp_and_max(a)
  return fused, summed, exp, gelu_rows(a) + 1.0, gelu_rows(r.reshape(2, 3)), e, m, (a * r).sum(0)

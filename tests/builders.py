"""Graph builders shared by several test modules."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp


def elementwise_kernel_graph(ins: list[np.ndarray], outs: list[tuple[DType, Callable[..., UOp]]]) -> tuple[UOp, dict[int, np.ndarray]]:
  """A kernel graph of one kernel: out_k[i] = f_k(in_0[i], in_1[i], ...), every output a root entry, and its inputs.
  The backends lower it through the kernel passes themselves (simplify, optimize, lower_reduce, linearize, render)."""
  n = ins[0].size
  bufs = [UOp.buffer(dtypes.from_np(x.dtype), n) for x in ins]
  i = UOp.range(n, 0)
  loads = [UOp.param(len(outs) + k, b.dtype, n).index(i).load() for k, b in enumerate(bufs)]
  stores = tuple(UOp.param(k, dt, n).index(i).store(fn(*loads)) for k, (dt, fn) in enumerate(outs))
  body = UOp(Ops.SINK, src=((stores[0] if len(stores) == 1 else UOp(Ops.GROUP, src=stores)).end(i),))
  out_bufs = [UOp.buffer(dt, n) for dt, _ in outs]
  call = UOp(Ops.CALL, src=(body, *out_bufs, *bufs), arg="elementwise")
  return UOp(Ops.SINK, src=tuple(o.after(call) for o in out_bufs)), {b.arg.id: x for b, x in zip(bufs, ins)}

"""A data-parallel training step of a two-layer MLP over two devices: the batch is sharded ("CPU:0" gets the first half
of the rows, "CPU:1" the second), the weights are replicated, every device computes the forward and backward pass of
its half, the weight gradients are all-reduced (each device adds the other's partial sums, copied to it), and every
device applies the same SGD update to its replica.

The outputs are [loss, w1 and b1 and w2 and b2 updated on CPU:0, the same four on CPU:1]; the two replicas are equal
bit for bit (every device sums the partials in the same order). `one_device_graph()` is the same step on one device
and `expected()` the step in numpy (float64).

    tinyspec check examples/data_parallel_mlp.py
    tinyspec lower examples/data_parallel_mlp.py     # the multi pass: per-device kernels, the copies of the all-reduce
    tinyspec run examples/data_parallel_mlp.py --backend cpu
"""
from functools import cache

import numpy as np

from tinyspec import gradient
from tinyspec.frontend import Tensor, inputs_of

DEVICES = ("CPU:0", "CPU:1")
LR = 0.1
rng = np.random.default_rng(0)
X, Y = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
PARAMS = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in [(5, 16), (16,), (16, 3), (3,)]]  # w1, b1, w2, b2


def step(x: Tensor, y: Tensor, params: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
  """The loss of one step and the updated parameters: the program, whatever devices its tensors are on."""
  w1, b1, w2, b2 = params
  loss = ((((x @ w1 + b1).relu() @ w2 + b2) - y) ** 2).mean()
  return loss, [p - LR * Tensor(g) for p, g in zip(params, gradient(loss.uop, [p.uop for p in params]))]


@cache
def graph():
  x, y = Tensor(X).shard(DEVICES, 0), Tensor(Y).shard(DEVICES, 0)
  loss, new = step(x, y, [Tensor(p).shard(DEVICES) for p in PARAMS])
  return Tensor.sink(loss, *(p.to(DEVICES[0]) for p in new), *(p.to(DEVICES[1]) for p in new))


@cache
def one_device_graph():
  loss, new = step(Tensor(X), Tensor(Y), [Tensor(p) for p in PARAMS])
  return Tensor.sink(loss, *new)


def inputs():
  return inputs_of(graph())


def one_device_inputs():
  return inputs_of(one_device_graph())


def numpy_step(x: np.ndarray, y: np.ndarray, params: list[np.ndarray]) -> list[np.ndarray]:
  """[loss, w1, b1, w2, b2 updated]: the step in numpy, float64."""
  x, y = x.astype(np.float64), y.astype(np.float64)
  w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
  pre = x @ w1 + b1
  h = np.maximum(pre, 0)
  err = h @ w2 + b2 - y
  d_out = 2 * err / err.size
  d_pre = (d_out @ w2.T) * (pre > 0)
  grads = (x.T @ d_pre, d_pre.sum(0), h.T @ d_out, d_out.sum(0))
  return [np.array((err ** 2).mean())] + [p - LR * g for p, g in zip((w1, b1, w2, b2), grads)]


def expected():
  loss, *new = numpy_step(X, Y, PARAMS)
  return [loss] + [p.astype(np.float32) for p in new] * 2

"""An embedding bag with its backward: each of B bags sums the rows of a (V, D) table at its L indices, a linear layer
and a squared error make a loss, and the gradients of the loss for the table and the layer come from tinyspec.gradient.

The table's gradient is a scatter-add of the bags' gradients into the rows they read, repeated rows included. The
frontend writes it as a one-hot sum over the positions (embedding's backward); the lowering's scatter pass turns that
into an init kernel and a kernel of ATOMIC adds, one per position (`tinyspec lower examples/embedding_bag.py` shows
them), which the CPU backend runs on threads where a kernel has the work for it and OpenCL runs as work items.

The outputs are [loss, d table, d weight]; `expected()` computes the same with numpy (np.add.at for the scatter).
`sharded_graph()` is the same program with the table split along the vocabulary over two devices (rows 0..24 on
"CPU:0", 25..49 on "CPU:1") and the rest replicated: each device sums the rows it holds, the bags are all-reduced, and
each device scatters into its own rows with its own atomic kernel.

    tinyspec check examples/embedding_bag.py
    tinyspec run examples/embedding_bag.py --backend cpu
"""
from functools import cache

import numpy as np

from tinyspec import gradient
from tinyspec.frontend import Tensor, inputs_of

rng = np.random.default_rng(0)
V, D, B, L, K = 50, 8, 16, 5, 3  # vocabulary, embedding width, bags, indices per bag, outputs
TABLE = (rng.standard_normal((V, D)) * 0.5).astype(np.float32)
W = (rng.standard_normal((D, K)) * 0.3).astype(np.float32)
IDX = rng.integers(0, V // 2, (B, L)).astype(np.int32)  # half the rows: many bags share rows, and some rows repeat in a bag
Y = rng.standard_normal((B, K)).astype(np.float32)


DEVICES = ("CPU:0", "CPU:1")


def program(table: Tensor, w: Tensor, idx: Tensor, y: Tensor) -> Tensor:
  bags = idx.embedding(table).sum(1)  # (B, D)
  return ((bags @ w - y) ** 2).mean()


@cache
def graph():
  table, w = Tensor(TABLE), Tensor(W)
  loss = program(table, w, Tensor(IDX), Tensor(Y))
  return Tensor.sink(loss, *gradient(loss, [table, w]))


@cache
def sharded_graph():
  table, w = Tensor(TABLE), Tensor(W)
  loss = program(table.shard(DEVICES, 0), w.shard(DEVICES), Tensor(IDX).shard(DEVICES), Tensor(Y).shard(DEVICES))
  return Tensor.sink(loss, *gradient(loss, [table, w]))


def inputs():
  return inputs_of(graph())


def sharded_inputs():
  return inputs_of(sharded_graph())


def expected():
  table, w, y = (a.astype(np.float64) for a in (TABLE, W, Y))
  bags = table[IDX].sum(1)
  err = bags @ w - y
  loss = (err ** 2).mean()
  d_out = 2 * err / err.size
  d_w = bags.T @ d_out
  d_bags = d_out @ w.T  # (B, D): every index of a bag gets its bag's gradient
  d_table = np.zeros_like(table)
  np.add.at(d_table, IDX.reshape(-1), np.repeat(d_bags, L, axis=0))
  return [np.array(loss, np.float32), d_table.astype(np.float32), d_w.astype(np.float32)]

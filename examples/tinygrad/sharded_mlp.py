"""A two-layer MLP forward over a batch sharded on two devices (axis 0), its weights replicated: each device computes
its rows, and the loss sums across the split (tinygrad's all-reduce)."""
import numpy as np
from tinygrad import Tensor

DEVICES = ("CPU:0", "CPU:1")
rng = np.random.default_rng(21)
X = rng.standard_normal((8, 4)).astype(np.float32)
W1, W2 = (0.5 * rng.standard_normal((4, 6))).astype(np.float32), (0.5 * rng.standard_normal((6, 3))).astype(np.float32)
B1 = (0.1 * rng.standard_normal(6)).astype(np.float32)


def program():
  x = Tensor(X).shard(DEVICES, axis=0)
  w1, b1, w2 = (Tensor(a).shard(DEVICES) for a in (W1, B1, W2))
  out = (x @ w1 + b1).relu() @ w2
  return out, out.square().sum()

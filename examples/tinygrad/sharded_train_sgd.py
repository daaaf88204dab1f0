"""Two data-parallel training steps of a linear-ReLU-linear model: the batch sharded on two devices (axis 0), the weights
replicated on both, SGD (tinygrad.nn.optim.SGD). Each device's gradient is summed across the split (tinygrad's
all-reduce), so the replicas stay equal; each step's realize is a step of the check."""
import numpy as np
from tinygrad import Context, Tensor, nn

DEVICES = ("CPU:0", "CPU:1")
rng = np.random.default_rng(22)
X, Y = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
W1, W2 = (0.5 * rng.standard_normal((4, 6))).astype(np.float32), (0.5 * rng.standard_normal((6, 2))).astype(np.float32)


def program():
  w1, w2 = Tensor(W1).shard(DEVICES), Tensor(W2).shard(DEVICES)
  opt = nn.optim.SGD([w1, w2], lr=0.1)
  x, y = Tensor(X).shard(DEVICES, axis=0), Tensor(Y).shard(DEVICES, axis=0)
  with Context(TRAINING=1):
    for _ in range(2):
      opt.zero_grad()
      loss = ((x @ w1).relu() @ w2 - y).square().mean()
      loss.backward()
      opt.step()
  return w1, w2

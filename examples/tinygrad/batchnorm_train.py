"""BatchNorm2d in training mode: normalizes with the batch statistics and updates its running mean and variance."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(23)
X = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)


def program():
  bn = nn.BatchNorm2d(2)
  with Context(TRAINING=1):
    y = bn(Tensor(X))
  return y, bn.running_mean, bn.running_var

"""The gradients of a loss through a strided, padded conv2d with respect to the input and the weight."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(26)
X, W = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)


def program():
  x, w = Tensor(X), Tensor(W)
  y = x.conv2d(w, stride=2, padding=1)
  gx, gw = y.square().sum().gradient(x, w)
  return y, gx, gw

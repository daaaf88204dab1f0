"""GroupNorm (tinygrad.nn.GroupNorm, 2 groups of 2 channels) and the gradient of a loss through it."""
import numpy as np
from tinygrad import Tensor, nn

rng = np.random.default_rng(15)
X = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
G, B = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)


def program():
  gn = nn.GroupNorm(2, 4)
  gn.weight, gn.bias = Tensor(G), Tensor(B)
  x = Tensor(X)
  y = gn(x)
  (gx,) = (y * y).sum().gradient(x)
  return y, gx

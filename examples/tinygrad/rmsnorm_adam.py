"""Three Adam steps on an RMSNorm scale and a linear map (tinygrad.nn.RMSNorm)."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(27)
X, Y = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
W = rng.standard_normal((6, 2)).astype(np.float32)


def program():
  norm, w = nn.RMSNorm(6), Tensor(W)
  opt = nn.optim.Adam([norm.weight, w], lr=0.01)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      (norm(Tensor(X)) @ w - Tensor(Y)).square().mean().backward()
      opt.step()
  return norm.weight, w

"""Three steps of LAMB (tinygrad.nn.optim.LAMB: Adam moments scaled by the trust ratio |w| / |update|)."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(12)
X, Y = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
W, B = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3,)).astype(np.float32)


def program():
  w, b = Tensor(W), Tensor(B)
  opt = nn.optim.LAMB([w, b], lr=0.01, weight_decay=0.01)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      ((Tensor(X) @ w + b).tanh() - Tensor(Y)).abs().mean().backward()
      opt.step()
  return w, b

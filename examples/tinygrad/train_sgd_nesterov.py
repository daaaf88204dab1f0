"""Three steps of SGD with nesterov momentum and weight decay on a linear least-squares model."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(11)
X, Y = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)


def program():
  w = Tensor(W)
  opt = nn.optim.SGD([w], lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      ((Tensor(X) @ w - Tensor(Y)).square().sum()).backward()
      opt.step()
  return w

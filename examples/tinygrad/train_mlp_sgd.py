"""Three training steps of a two-layer MLP with SGD and momentum (tinygrad.nn.optim.SGD): each step's realize
(the optimizer's assigns into the weights and its momentum buffers) is a step of the check."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(10)
X, Y = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
W1, W2 = (0.5 * rng.standard_normal((4, 6))).astype(np.float32), (0.5 * rng.standard_normal((6, 2))).astype(np.float32)
B1 = np.zeros(6, np.float32)


def program():
  w1, b1, w2 = Tensor(W1), Tensor(B1), Tensor(W2)
  opt = nn.optim.SGD([w1, b1, w2], lr=0.1, momentum=0.9)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      loss = ((Tensor(X) @ w1 + b1).relu() @ w2 - Tensor(Y)).square().mean()
      loss.backward()
      opt.step()
  return w1, b1, w2

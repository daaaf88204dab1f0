"""One MLP training step: the loss of relu(x @ w1) @ w2 against targets and its gradients (loss.gradient), then
the SGD-updated weights."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(4)
X, Y, W1, W2 = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (4, 2), (3, 5), (5, 2)])


def program():
  w1, w2 = Tensor(W1), Tensor(W2)
  loss = ((Tensor(X) @ w1).relu() @ w2 - Tensor(Y)).square().mean()
  g1, g2 = loss.gradient(w1, w2)
  return loss, w1 - 0.1 * g1, w2 - 0.1 * g2

"""A value call (@function) of a two-layer MLP, called on two batches, and the gradient of a loss through both calls."""
import numpy as np
from tinygrad import Tensor, function

rng = np.random.default_rng(22)
A, B, W1, W2 = (rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (2, 4), (4, 5), (5, 2)])


@function
def mlp(x: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
  return (x @ w1).relu() @ w2


def program():
  w1, w2 = Tensor(W1), Tensor(W2)
  loss = mlp(Tensor(A), w1, w2).square().sum() + mlp(Tensor(B), w1, w2).sum()
  g1, g2 = loss.gradient(w1, w2)
  return loss, g1, g2

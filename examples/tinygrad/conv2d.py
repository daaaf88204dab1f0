"""A 2-channel 6x6 image convolved with three 3x3 filters, padding 1, plus a bias."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(2)
X, W, B = (rng.standard_normal(s).astype(np.float32) for s in [(1, 2, 6, 6), (3, 2, 3, 3), (3,)])


def program():
  return Tensor(X).conv2d(Tensor(W), Tensor(B), padding=1)

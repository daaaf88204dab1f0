"""Reductions over different axes of a 3-d tensor: sum, max, min and mean."""
import numpy as np
from tinygrad import Tensor

X = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)


def program():
  x = Tensor(X)
  return x.sum(axis=(0, 2)), x.max(axis=1), x.min(axis=0), x.mean()

"""Row-wise softmax of a 3x6 matrix: a max reduce, exp2, a sum reduce and a reciprocal."""
import numpy as np
from tinygrad import Tensor

X = np.random.default_rng(1).uniform(-3, 3, (3, 6)).astype(np.float32)


def program():
  return Tensor(X).softmax(-1)

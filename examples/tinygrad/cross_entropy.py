"""sparse_categorical_crossentropy (its mask multiplies two bools: MUL on bool is AND), with label smoothing, and the
normalisation x / x.sum() whose programs divide with FDIV."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(9)
X = rng.standard_normal((4, 5)).astype(np.float32)
Y = np.array([1, 0, 4, 2], np.int32)


def program():
  x, y = Tensor(X), Tensor(Y)
  e = x.exp()
  return x.sparse_categorical_crossentropy(y), x.sparse_categorical_crossentropy(y, label_smoothing=0.1), e / e.sum(1, keepdim=True)

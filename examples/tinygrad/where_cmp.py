"""Comparisons and selection: where, clip, relu, equality and a cast of booleans."""
import numpy as np
from tinygrad import Tensor, dtypes

X = np.linspace(-3, 3, 10, dtype=np.float32)


def program():
  x = Tensor(X)
  return (x > 0).where(x, x * 0.5), x.clip(-1, 1), (x == 0.0).cast(dtypes.int32) + (x < 1).cast(dtypes.int32)

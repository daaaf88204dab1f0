"""Signed integers: int32 addition that wraps, floor division and modulo (Python // and %) on negatives."""
import numpy as np
from tinygrad import Tensor, dtypes

X = np.array([[-7, 7, 100], [2147483600, -128, 3]], np.int32)
Y = np.array([[2, -2, 20], [100, -1, 4]], np.int32)


def program():
  x, y = Tensor(X), Tensor(Y)
  return x + y, x // y, x % y, (x * 3 - y).cast(dtypes.int8)

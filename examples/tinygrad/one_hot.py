"""one_hot of int labels: tinygrad's result is weakint, realized (as numpy() reads it) cast to int32."""
import numpy as np
from tinygrad import Tensor

L = np.array([0, 2, 1, 3, 2], dtype=np.int32)


def program():
  return Tensor(L).one_hot(4)

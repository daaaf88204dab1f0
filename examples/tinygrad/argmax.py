"""argmax along each axis and of the whole tensor."""
import numpy as np
from tinygrad import Tensor

X = np.array([[0.5, 2.0, -1.0, 2.0], [3.0, -2.0, 0.0, 1.0], [-1.0, -1.0, 4.0, 0.5]], np.float32)


def program():
  x = Tensor(X)
  return x.argmax(1), x.argmax(0), x.argmax()

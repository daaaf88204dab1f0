"""gather along an axis, argmax, cumsum and cummax, and scatter into zeros."""
import numpy as np
from tinygrad import Tensor

X = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
I = np.array([[0, 3], [2, 2], [1, 0]], np.int32)
S = np.arange(6, dtype=np.float32).reshape(3, 2) + 1


def program():
  x, i = Tensor(X), Tensor(I)
  c = x.cummax(1)
  scattered = Tensor(np.zeros((3, 4), np.float32)).scatter(1, i, Tensor(S))
  return (x.gather(1, i), x.argmax(1), x.cumsum(1), *(c if isinstance(c, tuple) else (c,)), scattered)

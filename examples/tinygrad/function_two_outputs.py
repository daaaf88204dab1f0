"""A value call with two outputs (@function), called twice: FUNCTION(TUPLE(...), args) read by GETTUPLE."""
import numpy as np
from tinygrad import Tensor, function

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.ones((2, 3), np.float32)


@function
def affine(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
  return x * 2.0 + y, x - y


def program():
  s1, d1 = affine(Tensor(A), Tensor(B))
  s2, _ = affine(d1, s1)
  return s1, s2.sum(1)

"""A 4x5 @ 5x3 float matmul: one reduce kernel.  tinyspec tinygrad check examples/tinygrad/matmul.py"""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(0)
A, B = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)


def program():
  return Tensor(A) @ Tensor(B)

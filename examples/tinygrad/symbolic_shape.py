"""A symbolic shape: a Variable bound to 3 sizes a slice (`x[:v]`), a shrink of a matrix and its reshape, and an arange;
each stage reads the variable (a SHRINK's size, a loop bound in the kernels, a scalar arg of the programs)."""
import numpy as np
from tinygrad import Tensor, Variable

X = np.arange(10, dtype=np.float32) * 0.5
M = np.random.default_rng(3).standard_normal((4, 10)).astype(np.float32)


def program():
  v = Variable("i", 1, 10).bind(3)
  x, m = Tensor(X), Tensor(M)
  head = x[:v].sum()
  rows = m.shrink(((0, 4), (0, v))).reshape(4, v).sum(1)
  ramp = (x.shrink(((0, v),)) * Tensor.arange(v)).sum()
  return head, rows, ramp

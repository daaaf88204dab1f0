"""x ** y with a tensor exponent (negative bases: NaN for a fractional exponent, signed for an odd one), a constant
fractional exponent, a negative one, and a scalar base (2 ** x); tinygrad's POW, lowered as exp2(y * log2|x|)."""
import numpy as np
from tinygrad import Tensor

X = np.array([0.5, 1.5, 2.0, -3.0, -2.0, 0.0, 4.0], np.float32)
Y = np.array([2.0, 0.5, -1.0, 3.0, 0.5, 2.0, 0.0], np.float32)


def program():
  x, y = Tensor(X), Tensor(Y)
  return x ** y, x.abs() ** 2.5, (x.abs() + 1) ** -1.5, 2 ** y

"""Arithmetic on bool masks as ordinary code writes it: a sum of masks (ADD on bool, an OR) and a product (MUL on bool,
an AND), then the masks used to select and count."""
import numpy as np
from tinygrad import Tensor

X = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)


def program():
  x = Tensor(X)
  hi, lo, pos = x > 1.0, x < -1.0, x > 0
  outside = hi + lo
  return outside, (pos * outside), outside.where(x, 0.0).sum(1), outside.sum()

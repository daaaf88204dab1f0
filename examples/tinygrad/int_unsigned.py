"""Unsigned integers: a uint8 sum (accumulated in uint32), uint8 addition that wraps, and shifts and masks."""
import numpy as np
from tinygrad import Tensor

X = np.arange(200, 250, 2, dtype=np.uint8).reshape(5, 5)


def program():
  x = Tensor(X)
  return x.sum(1), x + x, (x // 4) % 5, (x & 0x0F) | (x >> 4)

"""Dropout in training mode (tinygrad 0.14: inside Context(TRAINING=1)): a THREEFRY mask keeps each element with
probability 1 - p and scales it by 1 / (1 - p)."""
import numpy as np
from tinygrad import Context, Tensor

X = np.random.default_rng(8).standard_normal((4, 5)).astype(np.float32)


def program():
  Tensor.manual_seed(2)
  with Context(TRAINING=1): return Tensor(X).dropout(0.4)

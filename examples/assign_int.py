"""Integer state updated in place twice (x += y; x += y), then read, with floor division (Python's // and %) and wrap-around.

Each `+=` is STORE then AFTER on x's buffer, so the second update reads the first's result.
Example-file convention: graph() returns the root SINK, inputs() the {buffer id: array} it reads (cached together
so the ids agree), expected() the numpy result.
"""
from functools import cache

import numpy as np

from tinyspec.frontend import Tensor, inputs_of

X = np.array([[-7, 7, 100], [120, -128, 3]], np.int8)
Y = np.array([[2, -2, 20], [5, -1, 4]], np.int8)


@cache
def graph():
  x, y = Tensor(X), Tensor(Y)
  x += y
  x += y
  return Tensor.sink(x, x // 3, x % 3)


def inputs():
  return inputs_of(graph())


def expected():
  x = (X.astype(np.int64) + 2 * Y.astype(np.int64) + 128) % 256 - 128
  q = x // 3
  return [x.astype(np.int8), q.astype(np.int8), (x % 3).astype(np.int8)]

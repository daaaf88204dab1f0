"""A value call with two returns, called twice, and a buffer captured from the closure.

`affine(x, y)` traces to CALL(TUPLE(x * w + y, x - y), x, y, w): the captured weight `w` becomes the third arg.
Example-file convention: graph() returns the root SINK, inputs() the {buffer id: array} it reads (cached together
so the ids agree), expected() the numpy result.
"""
from functools import cache

import numpy as np

from tinyspec.frontend import Tensor, function, inputs_of

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.ones((2, 3), np.float32)
W = np.array([2.0, -1.0, 0.5], np.float32)


@cache
def graph():
  w = Tensor(W)

  @function
  def affine(x, y):
    return x * w + y, x - y

  a, b = Tensor(A), Tensor(B)
  s1, d1 = affine(a, b)
  s2, _ = affine(d1, s1)
  return Tensor.sink(s1, d1, s2.sum(1))


def inputs():
  return inputs_of(graph())


def expected():
  s1, d1 = A * W + B, A - B
  return [s1, d1, (d1 * W + s1).sum(1)]

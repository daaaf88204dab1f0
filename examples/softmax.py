"""Row-wise softmax of a 3x5 matrix (a max reduce, exp, a sum reduce and a division).

Example-file convention: graph() returns the root SINK, inputs() the {buffer id: array} it reads (cached together
so the ids agree), expected() the numpy result.
"""
from functools import cache

import numpy as np

from tinyspec.frontend import Tensor, inputs_of

X = np.random.default_rng(1).uniform(-3, 3, (3, 5)).astype(np.float32)


@cache
def graph():
  return Tensor.sink(Tensor(X).softmax(-1))


def inputs():
  return inputs_of(graph())


def expected():
  e = np.exp(X - X.max(-1, keepdims=True))
  return [e / e.sum(-1, keepdims=True)]

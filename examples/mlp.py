"""A two-layer MLP forward pass: relu(x @ w1 + b1) @ w2 + b2, built with the Tensor frontend.

Convention for example files: `graph()` returns the root SINK; `inputs()` returns {buffer id: array} for the
BUFFERs in that graph (a frontend Tensor's data lives in Python, not in the graph). Both are cached so that they
name the same buffers; a tool that only reads `graph()` evaluates with zero-filled buffers. `expected()` gives the
numpy result for comparison.

    tinyspec check examples/mlp.py
    tinyspec lower examples/mlp.py
"""
from functools import cache

import numpy as np

from tinyspec.frontend import Tensor, inputs_of

rng = np.random.default_rng(0)
X, W1, B1, W2, B2 = (rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,), (16, 3), (3,)])


@cache
def graph():
  h = (Tensor(X) @ Tensor(W1) + Tensor(B1)).relu()
  return Tensor.sink(h @ Tensor(W2) + Tensor(B2))


def inputs():
  return inputs_of(graph())


def expected():
  return [np.maximum(X @ W1 + B1, 0) @ W2 + B2]

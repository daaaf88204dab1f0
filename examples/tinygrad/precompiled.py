"""A precompiled function (@function(precompile=True)): its body becomes its own kernels, called from the graph."""
import numpy as np
from tinygrad import Tensor, function

X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)


@function(precompile=True)
def gelu_sum(x: Tensor) -> Tensor:
  return (x * (x * 1.702).sigmoid()).sum(1)


def program():
  return gelu_sum(Tensor(X)) + 1.0

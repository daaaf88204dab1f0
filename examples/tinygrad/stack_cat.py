"""Tensor.stack of floats along a new inner axis, of bools, a cat of equal parts (a STACK then a flatten) and a cat of
unequal parts (PADs added), and topk (a sort written with STACKs)."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(6)
A, B = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
C = rng.standard_normal((1, 3)).astype(np.float32)
A[0, 0] = -0.0


def program():
  a, b = Tensor(A), Tensor(B)
  values, indices = Tensor(B).topk(2)
  return (Tensor.stack(a, b, dim=1), Tensor.stack(a > 0, b > 0), a.cat(b, dim=0), a.cat(Tensor(C), dim=0), values, indices)

"""gather along an axis by int indices, and scatter of values into a zero tensor."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(20)
X = rng.standard_normal((3, 4)).astype(np.float32)
I = np.array([[0, 3], [2, 2], [1, 0]], dtype=np.int32)
S = rng.standard_normal((3, 2)).astype(np.float32)


def program():
  x = Tensor(X)
  return x.gather(1, Tensor(I)), Tensor(np.zeros((3, 4), np.float32)).scatter(1, Tensor(I[:, :1].copy()), Tensor(S[:, :1].copy()))

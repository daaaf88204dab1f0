"""Movement ops: permute, pad, shrink, expand and flip, then one elementwise use so they fuse into kernels."""
import numpy as np
from tinygrad import Tensor

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def program():
  x = Tensor(X)
  p = x.permute(1, 0).pad(((1, 0), (0, 2)))        # (5, 5)
  s = x.shrink(((1, 3), (0, 4))).flip(1)          # (2, 4)
  e = x[:, None, :].expand(3, 2, 4)               # (3, 2, 4)
  return p + 1, s * 2, e.contiguous()

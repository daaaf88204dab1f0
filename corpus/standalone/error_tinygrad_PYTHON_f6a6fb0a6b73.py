"""error/tinygrad-PYTHON/RuntimeError: tinygrad raises on a program numpy computes.

Found by tinyspec (corpus/error_tinygrad_PYTHON_f6a6fb0a6b73.py):
  tinygrad on PYTHON raised RuntimeError: non-contiguous view is not supported for PYTHON buffer
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "PYTHON"  # tinygrad's Python emulator, the device the finding was made on

import numpy as np
from tinygrad import Tensor, function


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v1(p0):
  q0 = p0.reshape((3, 1))
  return q0,


def program():
  x0 = Tensor(np.array([0, 0, 0], dtype=np.uint32).reshape((1, 3)))
  v0 = x0.contiguous()
  v1, = f_v1(x0)
  v2 = v0.shrink(((0, 1), (1, 3)))
  return v1, v2


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v1(p0):
    q0 = p0.reshape((3, 1))
    return q0,
  x0 = np.array([0, 0, 0], dtype=np.uint32).reshape((1, 3))
  v0 = np.array(x0)
  v1, = f_v1(x0)
  v2 = v0[0:1, 1:3]
  return v1, v2


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

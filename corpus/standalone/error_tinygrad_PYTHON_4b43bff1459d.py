"""error/tinygrad-PYTHON/TypeError: tinygrad raises on a program numpy computes.

Found by tinyspec (corpus/error_tinygrad_PYTHON_4b43bff1459d.py):
  tinygrad on PYTHON raised TypeError: int() argument must be a string, a bytes-like object or a real number, not 'list'
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "PYTHON"  # tinygrad's Python emulator, the device the finding was made on

import numpy as np
from tinygrad import Tensor


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x1 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint32).reshape((4, 1)))
  v4 = x1.minimum(0)
  return v4,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x1 = np.array([0, 0, 0, 0], dtype=np.uint32).reshape((4, 1))
  v4 = np.minimum(x1, 0)
  return v4,


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

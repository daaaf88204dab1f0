"""parity/tinygrad-render/uint64: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_render_f702c5fe5e01.py):
  output 0 (uint64[1, 3]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 2: np.uint64(96) against np.uint64(65632) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, dtypes


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x0 = Tensor(np.array([0, 0, 98], dtype=np.uint16).reshape((1, 3)))
  v2 = x0 - 2
  v4 = v2.cast(dtypes.uint64)
  return v4,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([0, 0, 98], dtype=np.uint16).reshape((1, 3))
  v2 = x0 - 2
  v4 = v2.astype(np.uint64)
  return v4,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

"""parity/tinygrad-codegen/uint16: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_codegen_b032a73aed06.py):
  output 0 (uint16[]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.uint16(65534) against np.uint16(45462) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x0 = Tensor(np.array([1, 10037], dtype=np.uint16).reshape((2,)))
  v0 = x0 * 65534
  v2 = v0.max(0)
  return v2,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([1, 10037], dtype=np.uint16).reshape((2,))
  v0 = x0 * 65534
  v2 = v0.max(0)
  return v2,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

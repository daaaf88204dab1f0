"""parity/tinygrad-codegen/uint64: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_codegen_d996f60354fc.py):
  output 0 (uint64[1, 3]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 2: np.uint64(0) against np.uint64(18446744073709551615) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs agree)
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
  x0 = Tensor(np.array([0, 0, 1003815933380876847], dtype=np.uint64).reshape((1, 3)))
  v1 = x0 // -2
  return v1,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([0, 0, 1003815933380876847], dtype=np.uint64).reshape((1, 3))
  v1 = x0 // np.uint64(18446744073709551614)  # -2 as uint64 is 18446744073709551614
  return v1,


def expected_weak():
  """The program in numpy as tinygrad reads a literal: its own value, the result wrapped."""
  x0 = np.array([0, 0, 1003815933380876847], dtype=np.uint64).reshape((1, 3))
  v1 = wrap(exact(x0) // -2, np.uint64)  # -2 kept as it is, the result wrapped to uint64 (tinygrad's reading)
  return v1,


def exact(x):
  """x's integers as Python's exact ones (an object array)."""
  return np.array(np.asarray(x).tolist(), dtype=object)


def wrap(x, dtype):
  """Exact integers (an object array) wrapped into an integer dtype."""
  info = np.iinfo(dtype)
  flat = [(int(v) - info.min) % (1 << info.bits) + info.min for v in np.ravel(x)]
  return np.array(flat, dtype=dtype).reshape(np.shape(x))


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w, k) in enumerate(zip(got, expected(), expected_weak())):
  assert same(g, w) or same(g, k), (f"output {i}: tinygrad gives {g!r}; with each literal converted to its tensor's dtype "
                                    f"the program means {np.asarray(w)!r}, with tinygrad's reading of a literal {np.asarray(k)!r}")
print("tinygrad gives what is asserted")

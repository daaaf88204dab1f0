"""parity/tinygrad-PYTHON/uint16: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_PYTHON_9747bb58f5e6.py):
  output 0 (uint16[1]): tinygrad on PYTHON against tinyspec's evaluation of tinygrad's kernel ASTs: element 0: np.uint16(11457) against np.uint16(11459) (1 of 1 differ)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "PYTHON"  # tinygrad's Python emulator, the device the finding was made on

import numpy as np
from tinygrad import Tensor


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x0 = Tensor(np.array([11459, 0], dtype=np.uint16).reshape((2,)))
  v1 = x0 % -2
  v2 = v1.max(0, keepdim=True)
  return v2,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([11459, 0], dtype=np.uint16).reshape((2,))
  v1 = x0 % np.uint16(65534)  # -2 as uint16 is 65534
  v2 = v1.max(0, keepdims=True)
  return v2,


def expected_weak():
  """The program in numpy as tinygrad reads a literal: its own value, the result wrapped."""
  x0 = np.array([11459, 0], dtype=np.uint16).reshape((2,))
  v1 = wrap(exact(x0) % -2, np.uint16)  # -2 kept as it is, the result wrapped to uint16 (tinygrad's reading)
  v2 = v1.max(0, keepdims=True)
  return v2,


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

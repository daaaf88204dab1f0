"""parity/tinygrad-schedule/uint8: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_schedule_e56087890d4e.py):
  output 0 (uint8[2, 2]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 3: np.uint8(254) against np.uint8(255) (1 of 4 differ) (tinyspec, tensor, callified agree)
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
  x0 = Tensor(np.array([0, 0, 0, 255], dtype=np.uint8).reshape((2, 2)))
  v0 = x0.minimum(-2)
  return v0,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([0, 0, 0, 255], dtype=np.uint8).reshape((2, 2))
  v0 = np.minimum(x0, np.uint8(254))  # -2 as uint8 is 254
  return v0,


def expected_weak():
  """The program in numpy as tinygrad reads a literal: its own value, the result wrapped."""
  x0 = np.array([0, 0, 0, 255], dtype=np.uint8).reshape((2, 2))
  v0 = wrap(np.minimum(exact(x0), -2), np.uint8)  # -2 kept as it is, the result wrapped to uint8 (tinygrad's reading)
  return v0,


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

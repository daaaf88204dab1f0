"""parity/tinygrad-schedule/uint32: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_schedule_31fdac844336.py):
  output 0 (uint32[1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint32(1151703907) against np.uint32(7) (1 of 1 differ) (tinyspec, tensor, callified agree)
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
  x0 = Tensor(np.array([1151703907], dtype=np.uint32).reshape((1,)))
  v1 = x0 % -2
  v5 = v1.maximum(7)
  return v5,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([1151703907], dtype=np.uint32).reshape((1,))
  v1 = x0 % np.uint32(4294967294)  # -2 as uint32 is 4294967294
  v5 = np.maximum(v1, 7)
  return v5,


def expected_weak():
  """The program in numpy as tinygrad reads a literal: its own value, the result wrapped."""
  x0 = np.array([1151703907], dtype=np.uint32).reshape((1,))
  v1 = wrap(exact(x0) % -2, np.uint32)  # -2 kept as it is, the result wrapped to uint32 (tinygrad's reading)
  v5 = np.maximum(v1, 7)
  return v5,


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

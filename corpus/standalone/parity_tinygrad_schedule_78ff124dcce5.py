"""parity/tinygrad-schedule/uint16: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_schedule_78ff124dcce5.py):
  output 0 (uint16[1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint16(256) against np.uint16(0) (1 of 1 differ) (tinyspec, tensor, callified agree)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, function


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v4(p0, p1):
  q0 = p1.minimum(-2)
  q1 = q0 << 8
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,)))
  x1 = Tensor(np.array([1], dtype=np.uint16).reshape((1,)))
  v2 = x1 % -1
  v3 = (x0 != x1)
  v4, = f_v4(v3, v2)
  return v4,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v4(p0, p1):
    q0 = np.minimum(p1, np.uint16(65534))  # -2 as uint16 is 65534
    q1 = q0 << 8
    return q1,
  x0 = np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,))
  x1 = np.array([1], dtype=np.uint16).reshape((1,))
  v2 = x1 % np.uint16(65535)  # -1 as uint16 is 65535
  v3 = x0 != x1
  v4, = f_v4(v3, v2)
  return v4,


def expected_weak():
  """The program in numpy as tinygrad reads a literal: its own value, the result wrapped."""
  def f_v4(p0, p1):
    q0 = wrap(np.minimum(exact(p1), -2), np.uint16)  # -2 kept as it is, the result wrapped to uint16 (tinygrad's reading)
    q1 = q0 << 8
    return q1,
  x0 = np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,))
  x1 = np.array([1], dtype=np.uint16).reshape((1,))
  v2 = wrap(exact(x1) % -1, np.uint16)  # -1 kept as it is, the result wrapped to uint16 (tinygrad's reading)
  v3 = x0 != x1
  v4, = f_v4(v3, v2)
  return v4,


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

"""parity/tinygrad-schedule/bool: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_schedule_7de332d8d931.py):
  output 0 (bool[1, 4]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.False_ against np.True_ (4 of 4 differ) (tinyspec, tensor, callified agree)
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
def f_v1(p0):
  q0 = p0 | -2
  return q0,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((1, 4)))
  v0 = x0 - x0
  v1, = f_v1(v0)
  v5 = (v1 < v0)
  return v5,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v1(p0):
    q0 = p0 | np.uint16(65534)  # -2 as uint16 is 65534
    return q0,
  x0 = np.array([0, 0, 0, 0], dtype=np.uint16).reshape((1, 4))
  v0 = x0 - x0
  v1, = f_v1(v0)
  v5 = v1 < v0
  return v5,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

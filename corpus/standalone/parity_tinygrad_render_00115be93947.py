"""parity/tinygrad-render/bool: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_render_00115be93947.py):
  output 0 (bool[1, 1, 2]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 1: np.False_ against np.True_ (1 of 2 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
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
def f_v3(p0):
  q0 = p0 + p0
  q1 = (p0 < q0)
  return q1,


def program():
  x1 = Tensor(np.array([0, 174], dtype=np.uint8).reshape((1, 1, 2)))
  v3, = f_v3(x1)
  return v3,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v3(p0):
    q0 = p0 + p0
    q1 = p0 < q0
    return q1,
  x1 = np.array([0, 174], dtype=np.uint8).reshape((1, 1, 2))
  v3, = f_v3(x1)
  return v3,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

"""parity/tinygrad-PYTHON/uint64: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_PYTHON_da1919eef6e2.py):
  output 0 (uint64[2]): tinygrad on PYTHON against tinyspec's evaluation of tinygrad's kernel ASTs: element 0: np.uint64(9223372036854775808) against np.uint64(18446744073709551614) (2 of 2 differ)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "PYTHON"  # tinygrad's Python emulator, the device the finding was made on

import numpy as np
from tinygrad import Tensor, function


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v3(p0, p1):
  q0 = p0.sum(1)
  q1 = q0.pad(((1, 2),))
  q2 = q0 - 2
  return q2, q1


def program():
  x1 = Tensor(np.array([0, 0], dtype=np.uint64).reshape((2, 1)))
  v0 = x1 % -2
  v3, v3_1 = f_v3(v0, v0)
  v4 = v3.maximum(9223372036854775808)
  return v4, v0


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v3(p0, p1):
    q0 = p0.sum(1, dtype=np.uint64)
    q1 = np.pad(q0, ((1, 2),))
    q2 = q0 - 2
    return q2, q1
  x1 = np.array([0, 0], dtype=np.uint64).reshape((2, 1))
  v0 = x1 % np.uint64(18446744073709551614)  # -2 as uint64 is 18446744073709551614
  v3, v3_1 = f_v3(v0, v0)
  v4 = np.maximum(v3, 9223372036854775808)
  return v4, v0


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

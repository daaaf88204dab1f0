"""parity-signed-overflow/tinygrad-codegen/undefined: the program overflows a signed integer, which tinygrad leaves undefined; asserted are the wrapped values numpy gives (a difference of policy).

Found by tinyspec (corpus/parity_signed_overflow_tinygrad_codegen_f12779fee32c.py):
  output 0 (int8[1, 1]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.int8(0) against np.int8(-92) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
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
def f_v5(p0, p1):
  q0 = p1.max(0, keepdim=True)
  q1 = q0.reshape((1, 1))
  q2 = q0.flip(0)
  return q0, q1


def program():
  x1 = Tensor(np.array([0, 0, 82, 0], dtype=np.int8).reshape((4,)))
  v1 = x1 + x1
  v5, v5_1 = f_v5(x1, v1)
  return v5_1,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v5(p0, p1):
    q0 = p1.max(0, keepdims=True)
    q1 = q0.reshape((1, 1))
    q2 = np.flip(q0, 0)
    return q0, q1
  x1 = np.array([0, 0, 82, 0], dtype=np.int8).reshape((4,))
  v1 = x1 + x1
  v5, v5_1 = f_v5(x1, v1)
  return v5_1,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

"""parity-signed-overflow/tinygrad-schedule/undefined: the program overflows a signed integer, which tinygrad leaves undefined; asserted are the wrapped values numpy gives (a difference of policy).

Found by tinyspec (corpus/parity_signed_overflow_tinygrad_schedule_9da37ae4fe4d.py):
  output 1 (uint64[3, 1, 1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint64(0) against np.uint64(18446744073709551613) (3 of 3 differ) (tinyspec, tensor, callified agree)
Does not reproduce on tinygrad 0.14.0 or a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, dtypes, function


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v0(p0):
  q0 = p0 // -1
  q1 = q0.max(1, keepdim=True)
  return q0, q1


def program():
  x0 = Tensor(np.array([7253527247943746899, 3, 902678437773602580, 62, 8, 12425551006358662102], dtype=np.uint64).reshape((3, 2, 1)))
  v0, v0_1 = f_v0(x0)
  v1 = x0.cast(dtypes.int16)
  v2 = v1 >> 4
  v3 = x0 % 18446744073709551614
  return v3, v0_1


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v0(p0):
    q0 = p0 // np.uint64(18446744073709551615)  # -1 as uint64 is 18446744073709551615
    q1 = q0.max(1, keepdims=True)
    return q0, q1
  x0 = np.array([7253527247943746899, 3, 902678437773602580, 62, 8, 12425551006358662102], dtype=np.uint64).reshape((3, 2, 1))
  v0, v0_1 = f_v0(x0)
  v1 = x0.astype(np.int16)
  v2 = v1 >> 4
  v3 = x0 % 18446744073709551614
  return v3, v0_1


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

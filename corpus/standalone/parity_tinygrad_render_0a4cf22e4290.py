"""parity/tinygrad-render/int32: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_render_0a4cf22e4290.py):
  output 0 (int32[1]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 0: np.int32(80) against np.int32(336) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, dtypes, function


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v0(p0, p1):
  q0 = p0 + 254
  q1 = q0.cast(dtypes.int32)
  q2 = q1.contiguous()
  return q0, q2


def program():
  x0 = Tensor(np.array([82], dtype=np.uint8).reshape((1,)))
  x2 = Tensor(np.array([0], dtype=np.uint8).reshape((1,)))
  v0, v0_1 = f_v0(x0, x2)
  return v0_1,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v0(p0, p1):
    q0 = p0 + 254
    q1 = q0.astype(np.int32)
    q2 = np.array(q1)
    return q0, q2
  x0 = np.array([82], dtype=np.uint8).reshape((1,))
  x2 = np.array([0], dtype=np.uint8).reshape((1,))
  v0, v0_1 = f_v0(x0, x2)
  return v0_1,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

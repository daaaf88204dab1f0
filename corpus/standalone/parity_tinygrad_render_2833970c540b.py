"""parity/tinygrad-render/float32: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_render_2833970c540b.py):
  output 0 (float32[1, 2, 2]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 3: np.float32(0.0) against np.float32(7680.0) (1 of 4 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, dtypes


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x1 = Tensor(np.array([0, 0, 0, 120], dtype=np.uint8).reshape((1, 2, 2)))
  v0 = x1 << 6
  v3 = v0.cast(dtypes.float32)
  return v3,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x1 = np.array([0, 0, 0, 120], dtype=np.uint8).reshape((1, 2, 2))
  v0 = x1 << 6
  v3 = v0.astype(np.float32)
  return v3,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

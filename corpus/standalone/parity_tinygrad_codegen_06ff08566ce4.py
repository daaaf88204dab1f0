"""parity/tinygrad-codegen/float8_e4m3fn: tinygrad's values differ from what the program means.

Found by tinyspec (corpus/parity_tinygrad_codegen_06ff08566ce4.py):
  output 0 (float32[1]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.float32(0.1015625) against np.float32(0.099975586) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
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
  x0 = Tensor(np.array([0.1], dtype=np.float32).reshape((1,)))
  v0 = x0.cast(dtypes.fp8e4m3)
  v1 = v0.cast(dtypes.float32)
  return v1,


def expected():
  """The values the program means."""
  # numpy has no float8_e4m3fn dtype: these are the values tinyspec's evaluator gave the program when this script was written
  return (
    np.array([0.1015625], dtype=np.float32).reshape((1,)),
  )


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


got = [t.numpy() for t in program()]
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

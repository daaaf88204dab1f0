"""error/tinygrad-CPU/KeyError: tinygrad raises on a program numpy computes.

Found by tinyspec (corpus/error_tinygrad_CPU_b86f08821777.py):
  tinygrad raised KeyError: UOp(Ops.SINK, dtypes.void, arg=None, src=(
    x0:=UOp(Ops.AFTER, dtypes.ulong, arg=None, src=(
      x1:=UOp(Ops.PARAM, dtypes.ulong, arg=ParamArg(0, dtypes.ulong, device='CPU'), src=(
        x2:=UOp(Ops.CONST, dtypes.weakint, arg=3, src=()),)),
      UOp(Ops.END, dtypes.void, arg=None, src=(
        UOp(Ops.STORE, dtypes.void, arg=None, src=(
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
  x0 = Tensor(np.array([1154669868015972911, 4793777912366116583, 10017103554528018664], dtype=np.uint64).reshape((3,)))
  v1 = x0 ** 9223372036854775808
  return v1,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([1154669868015972911, 4793777912366116583, 10017103554528018664], dtype=np.uint64).reshape((3,))
  v1 = x0 ** 9223372036854775808
  return v1,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e
for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

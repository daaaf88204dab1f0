"""spec/tinygrad-kernel_graph/kernel.shift_count: tinygrad compiles a program that breaks tinyspec's rule kernel.shift_count.

Found by tinyspec (corpus/spec_tinygrad_kernel_graph_36b16acc4270.py):
  [KERNEL] kernel.shift_count: SHR of int32 by a count in [46, 46], never in [0, 32); at KERNEL a shift count is within the width for some value
      at root.src[1].src[1].src[0].src[0].src[1].src[0] (SHR int32)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor
from tinygrad.codegen import to_program_cache
from tinygrad.uop.ops import Ops


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x1 = Tensor(np.array([0], dtype=np.int64).reshape((1, 1, 1)))
  v4 = x1 % -7
  v5 = v4 >> 46
  return v5,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x1 = np.array([0], dtype=np.int64).reshape((1, 1, 1))
  v4 = x1 % -7
  v5 = v4 >> 46
  return v5,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e

# tinyspec's rule kernel.shift_count, said of every program tinygrad compiled here
for prg in to_program_cache.values():
  for u in prg.src[1].src:
    if u.op in (Ops.SHL, Ops.SHR):
      count, width = u.src[1], u.dtype.itemsize * 8
      assert count.vmax >= 0 and count.vmin < width, \
        f"{u.op} of {u.dtype} by a count in [{count.vmin}, {count.vmax}], never within [0, {width}): undefined in C\n{prg.src[2].arg}"

for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

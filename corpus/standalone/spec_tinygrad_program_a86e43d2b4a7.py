"""spec/tinygrad-program/kernel.local_read_after_write: tinygrad compiles a program that breaks tinyspec's rule kernel.local_read_after_write.

Found by tinyspec (corpus/spec_tinygrad_program_a86e43d2b4a7.py):
  [PROGRAM] kernel.local_read_after_write: LOAD of kernel-local BUFFER 2808 (REG) is ordered after no STORE into it; at PROGRAM a kernel-local buffer is read only after it is written (through AFTER(buffer, the STORE...))
      at root.src[1].src[9] (LOAD uint8)
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
  x0 = Tensor(np.array([0, 0], dtype=np.uint8).reshape((1, 2, 1)))
  v2 = -x0
  v3 = v2.max(1)
  return v3,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  x0 = np.array([0, 0], dtype=np.uint8).reshape((1, 2, 1))
  v2 = -x0
  v3 = v2.max(1)
  return v3,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e

# tinyspec's rule kernel.local_read_after_write, said of every program tinygrad compiled here
def storage(u):  # what an INDEX reads or writes, through AFTERs
  while u.op in (Ops.INDEX, Ops.AFTER, Ops.CAST): u = u.src[0]
  return u
for prg in to_program_cache.values():
  written = set()
  for u in prg.src[1].src:
    if u.op is Ops.STORE: written.add(storage(u.src[0]))
    if u.op is Ops.LOAD and (b := storage(u.src[0])).op is Ops.BUFFER:  # a kernel-local buffer (REG or LOCAL)
      assert b in written, f"a LOAD of kernel-local {b.arg} comes before any STORE into it: uninitialized memory\n{prg.src[2].arg}"

for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

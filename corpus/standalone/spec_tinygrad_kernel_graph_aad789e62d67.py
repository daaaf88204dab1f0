"""spec/tinygrad-kernel_graph/kernel.store_dtype: tinygrad compiles a program that breaks tinyspec's rule kernel.store_dtype.

Found by tinyspec (corpus/spec_tinygrad_kernel_graph_aad789e62d67.py):
  [KERNEL] kernel.store_dtype: STORE of float32 through a uint16 INDEX; at KERNEL the value has the element dtype of its storage
      at root.src[1].src[1].src[0].src[0].src[0] (STORE void)
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "CPU"  # the device the finding was made on
os.environ["NOOPT"] = "1"  # no kernel optimizations, as tinyspec captured the program

import numpy as np
from tinygrad import Tensor, function
from tinygrad.codegen import to_program_cache
from tinygrad.uop.ops import Ops


# the program, as tinyspec's fuzzer found and reduced it
@function
def f_v5(p0, p1):
  q0 = p0.flip(0)
  q1 = p1 ** q0
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,)))
  v0 = x0 - x0
  v1 = v0 | -1
  v5, = f_v5(v1, x0)
  return v5,


def expected():
  """The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."""
  def f_v5(p0, p1):
    q0 = np.flip(p0, 0)
    q1 = p1 ** q0
    return q1,
  x0 = np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,))
  v0 = x0 - x0
  v1 = v0 | np.uint16(65535)  # -1 as uint16 is 65535
  v5, = f_v5(v1, x0)
  return v5,


def same(got, want):
  got, want = np.asarray(got), np.asarray(want)
  return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e

# tinyspec's rule kernel.store_dtype, said of every program tinygrad compiled here
for prg in to_program_cache.values():
  for u in prg.src[1].src:
    if u.op is Ops.STORE:
      target, value = u.src[0].dtype, u.src[1].dtype  # an INDEX has the element dtype of its storage
      assert target == value, \
        f"a STORE of {value} through an INDEX of {target}: the value is not converted to the storage's dtype\n{prg.src[2].arg}"

for i, (g, w) in enumerate(zip(got, expected())):
  assert same(g, w), f"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}"
print("tinygrad gives what is asserted")

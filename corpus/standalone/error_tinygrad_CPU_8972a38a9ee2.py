"""error/tinygrad-CPU/CalledProcessError: tinygrad raises on a program numpy computes.

Found by tinyspec (corpus/error_tinygrad_CPU_8972a38a9ee2.py):
  tinygrad raised CalledProcessError: Command '['clang', '-c', '-x', 'c', '-O2', '-fPIC', '-ffreestanding', '-fno-math-errno', '-nostdlib', '-fno-ident', '--target=x86_64-none-unknown-elf', '-march=native', '-', '-o', '-']' returned non-zero exit status 1.
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
  x0 = Tensor(np.array([0], dtype=np.int64).reshape((1, 1, 1)))
  v0 = x0 + -9223372036854775808
  v4 = v0 + v0
  return v4,


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e
# the program overflows a signed integer, so tinygrad's values are undefined: only the above is asserted
print("tinygrad gives what is asserted")

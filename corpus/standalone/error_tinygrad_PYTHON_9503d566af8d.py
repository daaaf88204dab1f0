"""error/tinygrad-PYTHON/OverflowError: tinygrad raises on a program numpy computes.

Found by tinyspec (corpus/error_tinygrad_PYTHON_9503d566af8d.py):
  tinygrad on PYTHON raised OverflowError: cannot convert float infinity to integer
Reproduces on tinygrad 0.14.0 and a9069c17.
Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.
"""

import os

os.environ["DEV"] = "PYTHON"  # tinygrad's Python emulator, the device the finding was made on

import numpy as np
from tinygrad import Tensor


# the program, as tinyspec's fuzzer found and reduced it
def program():
  x0 = Tensor(np.array([98], dtype=np.int16).reshape((1,)))
  x1 = Tensor(np.array([92], dtype=np.int16).reshape((1,)))
  v0 = x1 ** x0
  v3 = x1 ** v0
  return v3,


try:
  got = [t.numpy() for t in program()]
except Exception as e:
  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e
# the program overflows a signed integer, so tinygrad's values are undefined: only the above is asserted
print("tinygrad gives what is asserted")

"""One TinyJit function called with a Variable bound anew at each call (3, 5, then 7): it adds the sum of the first v
elements into an accumulator. The first call runs as it is, the second is captured (a step whose graphs bind v to 5,
whose kernels take v at launch), the third replays the captured kernels with v = 7."""
import numpy as np
from tinygrad import Tensor, TinyJit, Variable

X = np.arange(10, dtype=np.float32) * 0.25


def program():
  # realized as a copy alone, an input would be a realize that compiles no program
  x, acc = (Tensor(X) * 1).realize(), (Tensor.zeros(1) + 0).contiguous().realize()

  @TinyJit
  def step(x: Tensor, v) -> Tensor:
    return acc.assign(acc + x[:v].sum()).realize()

  for k in (3, 5, 7): step(x, Variable("i", 1, 10).bind(k))
  return acc

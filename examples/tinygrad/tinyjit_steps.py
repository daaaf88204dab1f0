"""Four SGD steps of a linear model through TinyJit: the first call runs as it is, the second is captured (tinygrad runs
its schedule once the capture ends), the later ones replay the captured kernels (no graph is made for them)."""
import numpy as np
from tinygrad import Context, Tensor, TinyJit, nn

rng = np.random.default_rng(21)
X, Y = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal((6, 1)).astype(np.float32)
W = rng.standard_normal((3, 1)).astype(np.float32)


def program():
  w = Tensor(W)
  opt = nn.optim.SGD([w], lr=0.05, momentum=0.5)

  @TinyJit
  def step(x: Tensor, y: Tensor) -> Tensor:
    opt.zero_grad()
    loss = (x @ w - y).square().mean()
    loss.backward()
    return loss.realize(*opt.schedule_step())

  # TinyJit takes realized inputs; realized as a copy alone, they would be a realize that compiles no program
  x, y = (Tensor(X) * 2).realize(), (Tensor(Y) * 2).realize()
  with Context(TRAINING=1):
    for _ in range(4): step(x, y)
  return w

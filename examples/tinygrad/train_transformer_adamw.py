"""Three training steps of a transformer block (LayerNorm, single-head self-attention with softmax, a relu MLP, residuals)
with AdamW."""
import numpy as np
from tinygrad import Context, Tensor, nn

rng = np.random.default_rng(14)
T, D = 4, 8
X, Y = rng.standard_normal((2, T, D)).astype(np.float32), rng.standard_normal((2, T, D)).astype(np.float32)
WQ, WK, WV, WO, W1, W2 = ((0.3 * rng.standard_normal(s)).astype(np.float32) for s in [(D, D)] * 4 + [(D, 2 * D), (2 * D, D)])


def program():
  ln1, ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
  wq, wk, wv, wo, w1, w2 = (Tensor(a) for a in (WQ, WK, WV, WO, W1, W2))
  opt = nn.optim.AdamW([wq, wk, wv, wo, w1, w2, ln1.weight, ln1.bias, ln2.weight, ln2.bias], lr=0.01, weight_decay=0.1)
  with Context(TRAINING=1):
    for _ in range(3):
      opt.zero_grad()
      x = Tensor(X)
      h = ln1(x)
      att = ((h @ wq) @ (h @ wk).transpose(1, 2) * (1 / np.sqrt(D))).softmax(-1)
      x = x + (att @ (h @ wv)) @ wo
      x = x + (ln2(x) @ w1).relu() @ w2
      (x - Tensor(Y)).square().mean().backward()
      opt.step()
  return wq, wo, w2, ln1.weight

"""scaled_dot_product_attention with a causal mask, and the gradient of a loss with respect to the query."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(25)
Q, K, V = (rng.standard_normal((1, 2, 4, 3)).astype(np.float32) for _ in range(3))


def program():
  q = Tensor(Q)
  out = q.scaled_dot_product_attention(Tensor(K), Tensor(V), is_causal=True)
  (gq,) = out.square().sum().gradient(q)
  return out, gq

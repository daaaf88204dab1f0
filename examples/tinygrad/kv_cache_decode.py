"""Greedy decoding with a key/value cache: each step writes its key and value into a slice of the cache
(`cache[:, pos:pos+1].assign(...)`, the AFTER of a view tinygrad makes), then attends over the cache so far."""
import numpy as np
from tinygrad import Tensor

rng = np.random.default_rng(21)
T, D = 4, 8
WQ, WK, WV = ((0.3 * rng.standard_normal((D, D))).astype(np.float32) for _ in range(3))
X0 = rng.standard_normal((1, D)).astype(np.float32)


def program():
  wq, wk, wv = Tensor(WQ), Tensor(WK), Tensor(WV)
  cache_k, cache_v = Tensor.zeros(T, D).contiguous().realize(), Tensor.zeros(T, D).contiguous().realize()
  x = Tensor(X0)
  for pos in range(3):
    cache_k[pos:pos + 1].assign(x @ wk).realize()
    cache_v[pos:pos + 1].assign(x @ wv).realize()
    att = ((x @ wq) @ cache_k[:pos + 1].T / np.sqrt(D)).softmax(-1)
    x = (att @ cache_v[:pos + 1]).tanh().realize()
  return x, cache_k, cache_v

"""One pre-norm transformer block over token embeddings, then next-token logits and their cross-entropy, built with the
Tensor frontend: embedding + positions -> layernorm -> 2-head causal scaled_dot_product_attention -> residual ->
layernorm -> gelu MLP -> residual -> logits -> sparse_categorical_crossentropy.

The outputs are [logits, loss] and the gradient of the loss for the attention's query weight; `expected()` computes
the forward pass with numpy and that gradient by central differences of the numpy loss in float64.

    tinyspec check examples/transformer.py
    tinyspec run examples/transformer.py
"""
from functools import cache

import numpy as np

from tinyspec import gradient
from tinyspec.frontend import Tensor, inputs_of

rng = np.random.default_rng(1)
B, T, D, NH, V = 2, 5, 8, 2, 11  # batch, sequence, model width, heads, vocabulary
IDS = rng.integers(0, V, (B, T + 1)).astype(np.int32)
TOK, POS = (rng.standard_normal((V, D)) * 0.5).astype(np.float32), (rng.standard_normal((T, D)) * 0.1).astype(np.float32)
WQ, WK, WV, WO = ((rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(4))
W1, W2 = (rng.standard_normal((D, 4 * D)) / np.sqrt(D)).astype(np.float32), (rng.standard_normal((4 * D, D)) / np.sqrt(4 * D)).astype(np.float32)
WOUT = (rng.standard_normal((D, V)) / np.sqrt(D)).astype(np.float32)


def block(ids: Tensor, tok: Tensor, pos: Tensor, wq: Tensor, wk: Tensor, wv: Tensor, wo: Tensor, w1: Tensor, w2: Tensor, wout: Tensor) -> Tensor:
  x = ids.embedding(tok) + pos
  h = x.layernorm()
  def heads(t: Tensor) -> Tensor: return t.reshape(B, T, NH, D // NH).transpose(1, 2)
  a = heads(h @ wq).scaled_dot_product_attention(heads(h @ wk), heads(h @ wv), is_causal=True)
  x = x + a.transpose(1, 2).reshape(B, T, D) @ wo
  x = x + (x.layernorm() @ w1).gelu() @ w2
  return x @ wout


@cache
def graph():
  wq = Tensor(WQ)
  logits = block(Tensor(IDS[:, :-1]), Tensor(TOK), Tensor(POS), wq, *(Tensor(w) for w in (WK, WV, WO, W1, W2, WOUT)))
  loss = logits.sparse_categorical_crossentropy(Tensor(IDS[:, 1:]))
  return Tensor.sink(logits, loss, gradient(loss, [wq])[0])


def inputs():
  return inputs_of(graph())


def _forward(wq: np.ndarray) -> tuple[np.ndarray, float]:
  tok, pos, wk, wv, wo, w1, w2, wout = (a.astype(np.float64) for a in (TOK, POS, WK, WV, WO, W1, W2, WOUT))
  def ln(t): return (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5)
  def heads(t): return t.reshape(B, T, NH, D // NH).transpose(0, 2, 1, 3)
  def softmax(t): return np.exp(t - t.max(-1, keepdims=True)) / np.exp(t - t.max(-1, keepdims=True)).sum(-1, keepdims=True)
  x = tok[IDS[:, :-1]] + pos
  h = ln(x)
  q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
  s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // NH) + np.where(np.tril(np.ones((T, T), bool)), 0, -np.inf)
  x = x + (softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ wo
  u = ln(x) @ w1
  x = x + 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3))) @ w2
  logits = x @ wout
  logp = logits - logits.max(-1, keepdims=True) - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
  return logits, -np.take_along_axis(logp, IDS[:, 1:, None], -1).mean()


def expected():
  logits, loss = _forward(WQ.astype(np.float64))
  g, eps = np.zeros((D, D)), 1e-6
  for i in np.ndindex(D, D):
    hi, lo = WQ.astype(np.float64), WQ.astype(np.float64)
    hi[i] += eps
    lo[i] -= eps
    g[i] = (_forward(hi)[1] - _forward(lo)[1]) / (2 * eps)
  return [logits, np.array(loss), g]

"""A small CNN's forward and backward pass: conv2d (3x3, padding 1) -> relu -> max_pool2d(2) -> flatten -> linear ->
cross_entropy, and the gradients of the loss for every weight, built with the Tensor frontend and tinyspec.gradient.

The outputs are [loss, d conv weight, d conv bias, d linear weight, d linear bias]; `expected()` computes the same
with numpy: the forward pass by im2col, the backward pass by hand.

    tinyspec check examples/cnn.py
    tinyspec run examples/cnn.py
"""
from functools import cache

import numpy as np

from tinyspec import gradient
from tinyspec.frontend import Tensor, inputs_of

rng = np.random.default_rng(0)
N, C, H, O, K = 2, 1, 8, 4, 3  # batch, input channels, image size, conv filters, classes
X = rng.standard_normal((N, C, H, H)).astype(np.float32)
WC = (rng.standard_normal((O, C, 3, 3)) * 0.5).astype(np.float32)
BC = (rng.standard_normal(O) * 0.1).astype(np.float32)
WF = (rng.standard_normal((O * (H // 2) ** 2, K)) * 0.2).astype(np.float32)
BF = (rng.standard_normal(K) * 0.1).astype(np.float32)
Y = np.array([2, 0], np.int32)


def forward(x: Tensor, wc: Tensor, bc: Tensor, wf: Tensor, bf: Tensor, y: Tensor) -> Tensor:
  h = x.conv2d(wc, bc, padding=1).relu().max_pool2d(2)
  return h.flatten(1).linear(wf, bf).cross_entropy(y)


@cache
def graph():
  params = [Tensor(a) for a in (WC, BC, WF, BF)]
  loss = forward(Tensor(X), *params, Tensor(Y))
  return Tensor.sink(loss, *gradient(loss, params))


def inputs():
  return inputs_of(graph())


def expected():
  x, wc, bc, wf, bf = (a.astype(np.float64) for a in (X, WC, BC, WF, BF))
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = np.stack([xp[:, :, i:i + H, j:j + H] for i in range(3) for j in range(3)], -1)  # (N, C, H, H, 9)
  conv = np.einsum("nchwk,ock->nohw", cols, wc.reshape(O, C, 9)) + bc.reshape(1, O, 1, 1)
  r = np.maximum(conv, 0)
  p = r.reshape(N, O, H // 2, 2, H // 2, 2).max((3, 5))
  f = p.reshape(N, -1)
  logits = f @ wf + bf
  e = np.exp(logits - logits.max(1, keepdims=True))
  sm = e / e.sum(1, keepdims=True)
  loss = -np.log(sm[np.arange(N), Y]).mean()
  # backward, by hand
  dlogits = (sm - np.eye(K)[Y]) / N
  dwf, dbf = f.T @ dlogits, dlogits.sum(0)
  dp = (dlogits @ wf.T).reshape(p.shape)
  up = np.repeat(np.repeat(p, 2, 2), 2, 3)
  dr = np.repeat(np.repeat(dp, 2, 2), 2, 3) * (r == up)  # the max of each window gets its gradient (no ties past relu)
  dconv = dr * (conv > 0)
  dwc = np.einsum("nohw,nchwk->ock", dconv, cols).reshape(wc.shape)
  dbc = dconv.sum((0, 2, 3))
  return [np.array(loss), dwc, dbc, dwf, dbf]

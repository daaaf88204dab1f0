"""Gradients of frontend ops come from the autograd rules of the primitives they are built from: for a representative
third of the ops (every module), d sum(op(x) * w) / d x in float64 equals central differences of the same function
written in numpy (so the forward meaning is checked too), the gradient graph is legal at TENSOR, and all of them
together lower (every pass's spec checked) and run on the CPU backend with the reference's values."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest
from frontend_parity import central_difference, rng

from tinyspec import gradient
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.runtime import run
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check

D = np.float64


def sm(a: np.ndarray, axis: int = -1) -> np.ndarray:
  e = np.exp(a - a.max(axis, keepdims=True))
  return e / e.sum(axis, keepdims=True)


def sigmoid(a): return 1 / (1 + np.exp(-a))
def softplus(a): return np.logaddexp(0, a)


def pool_max(a: np.ndarray, k: int, s: int) -> np.ndarray:
  n, c, h, w = a.shape
  oh, ow = (h - k) // s + 1, (w - k) // s + 1
  return np.array([[[[a[i, j, y * s:y * s + k, x * s:x * s + k].max() for x in range(ow)] for y in range(oh)] for j in range(c)] for i in range(n)])


def conv(a: np.ndarray, w: np.ndarray, pad: int = 0, stride: int = 1) -> np.ndarray:
  a = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  n, c, h, wd = a.shape
  o, _, kh, kw = w.shape
  oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
  out = np.zeros((n, o, oh, ow))
  for y in range(oh):
    for x in range(ow):
      out[:, :, y, x] = np.tensordot(a[:, :, y * stride:y * stride + kh, x * stride:x * stride + kw], w, ([1, 2, 3], [1, 2, 3]))
  return out


def lerp_interp(a: np.ndarray, n: int) -> np.ndarray:
  m = a.shape[-1]
  src = np.clip((np.arange(n) + 0.5) * m / n - 0.5, 0, m - 1)
  lo = np.floor(src).astype(int)
  hi = np.minimum(lo + 1, m - 1)
  return a[..., lo] * (1 - (src - lo)) + a[..., hi] * (src - lo)


R = rng(21)
W33 = R.uniform(-1, 1, (2, 2, 3, 3))
IDX = np.array([[2, 0], [1, 1], [0, 2]], np.int32)
EMB_IDX = np.array([3, 0, 3, 1], np.int32)
Y = np.array([2, 0, 1], np.int32)

# name: (input shape, frontend function, numpy function)
OPS: dict[str, tuple[tuple[int, ...], Callable, Callable]] = {
  "pow_scalar": ((3, 4), lambda t: t.abs() ** 2.5, lambda a: np.abs(a) ** 2.5),
  "pow_tensor": ((3, 4), lambda t: (t.abs() + 0.5) ** (t * 0.5), lambda a: (np.abs(a) + 0.5) ** (a * 0.5)),
  "rpow": ((5,), lambda t: 3 ** t, lambda a: 3.0 ** a),
  "sqrt": ((5,), lambda t: (t * t + 1).sqrt(), lambda a: np.sqrt(a * a + 1)),
  "rsqrt": ((5,), lambda t: (t * t + 1).rsqrt(), lambda a: 1 / np.sqrt(a * a + 1)),
  "log": ((5,), lambda t: (t * t + 0.5).log(), lambda a: np.log(a * a + 0.5)),
  "tan": ((5,), lambda t: (t * 0.5).tan(), lambda a: np.tan(a * 0.5)),
  "clip": ((3, 4), lambda t: t.clip(-0.5, 0.6), lambda a: np.clip(a, -0.5, 0.6)),
  "lerp": ((4,), lambda t: t.lerp(t * t, t.sigmoid()), lambda a: a + (a * a - a) * sigmoid(a)),
  "copysign": ((4,), lambda t: (t * 3).copysign(t - 0.1), lambda a: np.copysign(a * 3, a - 0.1)),
  "leaky_relu": ((3, 4), lambda t: t.leaky_relu(0.1), lambda a: np.where(a < 0, 0.1 * a, a)),
  "elu": ((3, 4), lambda t: t.elu(), lambda a: np.where(a > 0, a, np.expm1(a))),
  "gelu": ((3, 4), lambda t: t.gelu(), lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
  "silu": ((3, 4), lambda t: t.silu(), lambda a: a * sigmoid(a)),
  "softplus": ((3, 4), lambda t: t.softplus(), softplus),
  "mish": ((3, 4), lambda t: t.mish(), lambda a: a * np.tanh(softplus(a))),
  "hardswish": ((3, 4), lambda t: t.hardswish(), lambda a: a * np.clip(a + 3, 0, 6) / 6),
  "tanh": ((3, 4), lambda t: t.tanh(), np.tanh),
  "softmax": ((3, 4), lambda t: t.softmax(0), lambda a: sm(a, 0)),
  "log_softmax": ((3, 4), lambda t: t.log_softmax(), lambda a: np.log(sm(a))),
  "logsumexp": ((3, 4), lambda t: t.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
  "var": ((3, 4), lambda t: t.var(1), lambda a: a.var(1, ddof=1)),
  "std": ((3, 4), lambda t: t.std(0, correction=0), lambda a: a.std(0)),
  "mean": ((3, 4), lambda t: t.mean((0, 1)), lambda a: a.mean()),
  "prod": ((3, 4), lambda t: t.prod(1), lambda a: a.prod(1)),
  "max": ((3, 4), lambda t: t.max(0), lambda a: a.max(0)),
  "min": ((3, 4), lambda t: t.min(1, keepdim=True), lambda a: a.min(1, keepdims=True)),
  "cumsum": ((3, 4), lambda t: t.cumsum(1), lambda a: np.cumsum(a, 1)),
  "cumprod": ((3, 4), lambda t: t.cumprod(0), lambda a: np.cumprod(a, 0)),
  "cummax": ((3, 4), lambda t: t.cummax(1)[0], lambda a: np.maximum.accumulate(a, 1)),
  "logcumsumexp": ((3, 4), lambda t: t.logcumsumexp(1), lambda a: np.logaddexp.accumulate(a, 1)),
  "cat": ((3, 4), lambda t: t.cat(t * 2, t[:1], dim=0), lambda a: np.concatenate([a, a * 2, a[:1]], 0)),
  "stack": ((3, 4), lambda t: Tensor.stack(t, t.exp(), dim=1), lambda a: np.stack([a, np.exp(a)], 1)),
  "pad_reflect": ((3, 4), lambda t: t.pad(((1, 1), (2, 0)), mode="reflect"), lambda a: np.pad(a, ((1, 1), (2, 0)), mode="reflect")),
  "pad_value": ((3, 4), lambda t: t.pad(((1, 0), (0, 2)), value=2.0), lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=2.0)),
  "roll": ((3, 4), lambda t: t.roll(1, 1), lambda a: np.roll(a, 1, 1)),
  "diagonal": ((3, 4), lambda t: t.diagonal(1), lambda a: np.diagonal(a, 1)),
  "repeat_interleave": ((3, 4), lambda t: t.repeat_interleave(2, 0), lambda a: np.repeat(a, 2, 0)),
  "triu": ((3, 4), lambda t: t.triu(), np.triu),
  "unfold": ((3, 5), lambda t: t.unfold(1, 2, 2), lambda a: np.stack([a[:, 0:2], a[:, 2:4]], 1)),
  "getitem_steps": ((4, 5), lambda t: t[::-2, 1::3], lambda a: a[::-2, 1::3]),
  "getitem_fancy": ((4, 5), lambda t: t[[0, 3, 3], 1:], lambda a: a[[0, 3, 3], 1:]),
  "gather": ((3, 4), lambda t: t.gather(1, Tensor(IDX)), lambda a: np.take_along_axis(a, IDX, 1)),
  "scatter_reduce": ((3, 3), lambda t: t.scatter_reduce(1, Tensor(IDX), t[:, :2] * 3, "sum"),
                     lambda a: a + np.stack([np.bincount(IDX[i], a[i, :2] * 3, 3) for i in range(3)])),
  "matmul": ((3, 4), lambda t: t @ t.T, lambda a: a @ a.T),
  "einsum": ((3, 4), lambda t: Tensor.einsum("ij,kj->ik", t, t.exp()), lambda a: np.einsum("ij,kj->ik", a, np.exp(a))),
  "conv2d": ((1, 2, 5, 5), lambda t: t.conv2d(Tensor(W33), padding=1, stride=2), lambda a: conv(a, W33, 1, 2)),
  "conv_transpose2d": ((1, 2, 3, 3), lambda t: t.conv_transpose2d(Tensor(W33)),
                       lambda a: _convt(a)),
  "max_pool2d": ((1, 2, 5, 5), lambda t: t.max_pool2d(2, 2), lambda a: pool_max(a, 2, 2)),
  "avg_pool2d": ((1, 1, 4, 4), lambda t: t.avg_pool2d(2, 1), lambda a: (a[..., :-1, :-1] + a[..., 1:, :-1] + a[..., :-1, 1:] + a[..., 1:, 1:]) / 4),
  "interpolate": ((2, 3), lambda t: t.interpolate((7,)), lambda a: lerp_interp(a, 7)),
  "layernorm": ((3, 4), lambda t: t.layernorm(), lambda a: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)),
  "sdpa": ((1, 3, 4), lambda t: t.scaled_dot_product_attention(t * 0.5, t.exp(), is_causal=True),
           lambda a: sm(a @ (a * 0.5).transpose(0, 2, 1) / 2 + np.where(np.tril(np.ones((3, 3))), 0, -np.inf)) @ np.exp(a)),
  "embedding": ((4, 3), lambda t: Tensor(EMB_IDX).embedding(t), lambda a: a[EMB_IDX]),
  "cross_entropy": ((3, 4), lambda t: t.cross_entropy(Tensor(Y)), lambda a: -np.log(sm(a))[np.arange(3), Y].mean()),
  "bce_logits": ((5,), lambda t: t.binary_crossentropy_logits(t.sigmoid() * 0 + Tensor(np.array([1.0, 0, 1, 0, 1]))),
                 lambda a: (np.array([1.0, 0, 1, 0, 1]) * softplus(-a) + (1 - np.array([1.0, 0, 1, 0, 1])) * softplus(a)).mean()),
}


def _convt(a: np.ndarray) -> np.ndarray:
  n, c, h, w = a.shape
  out = np.zeros((n, W33.shape[1], h + 2, w + 2))
  for y in range(h):
    for x in range(w):
      out[:, :, y:y + 3, x:x + 3] += np.einsum("nc,cokl->nokl", a[:, :, y, x], W33)
  return out


def case(name: str) -> tuple[Tensor, Tensor, np.ndarray, np.ndarray, Callable]:
  shape, f, fnp = OPS[name]
  r = rng(len(name) * 7 + sum(map(ord, name)))
  x = r.uniform(-1.2, 1.2, shape)
  x = x + np.sign(x) * 0.05  # away from the kinks at 0 (abs, relu-like ops, copysign)
  out_shape = np.asarray(fnp(x)).shape
  wts = r.uniform(-1, 1, out_shape)
  xt = Tensor(x)
  loss = (f(xt) * Tensor(wts)).sum()
  return xt, loss, x, wts, fnp


@pytest.mark.parametrize("name", list(OPS))
def test_gradient_matches_central_differences(name: str) -> None:
  xt, loss, x, wts, fnp = case(name)
  assert xt.dtype.name == "float64" and loss.dtype.name == "float64"
  (g,) = gradient(loss, [xt])
  root = Tensor.sink(g)
  assert check(root, Stage.TENSOR) == []
  got = np.asarray(evaluate(root, inputs_of(root))[0]).reshape(x.shape)
  want = central_difference(lambda a: float((np.asarray(fnp(a)) * wts).sum()), x)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_gradients_lower_and_run_on_cpu() -> None:
  names = list(OPS)[::4]
  grads = []
  for name in names:
    xt, loss, *_ = case(name)
    grads.append(gradient(loss, [xt])[0])
  root = Tensor.sink(*grads)
  ref = evaluate(root, inputs_of(root))
  cpu = run(root, inputs_of(root), "cpu")
  for name, r, c in zip(names, ref, cpu): np.testing.assert_allclose(np.asarray(c).reshape(np.shape(r)), r, rtol=1e-9, atol=1e-12, err_msg=name)


def test_a_third_of_the_api_is_covered() -> None:
  from tinyspec.frontend.attach import DEFINED_IN
  ops = {n for n in DEFINED_IN if not n.startswith("_")}
  assert len(OPS) * 3 >= len(ops), f"{len(OPS)} gradient checks for {len(ops)} ops"


@pytest.mark.parametrize("name", ["conv2d", "max_pool2d", "softmax", "gather", "layernorm", "cross_entropy"])
def test_gradient_through_a_value_call(name: str) -> None:
  """The same op inside a @function: the gradient reaches x through the CALL (the call's backward body) and still
  equals central differences."""
  from tinyspec.frontend import function
  shape, f, fnp = OPS[name]
  r = rng(len(name) * 11 + sum(map(ord, name)))
  x = r.uniform(-1.2, 1.2, shape)
  x = x + np.sign(x) * 0.05
  wts = r.uniform(-1, 1, np.asarray(fnp(x)).shape)
  call = function(lambda t: f(t))
  xt = Tensor(x)
  out = call(xt)
  assert any(u.op.name == "CALL" for u in out.uop.toposort())
  (g,) = gradient((out * Tensor(wts)).sum(), [xt])
  root = Tensor.sink(g)
  assert check(root, Stage.TENSOR) == []
  got = np.asarray(evaluate(root, inputs_of(root))[0]).reshape(x.shape)
  want = central_difference(lambda a: float((np.asarray(fnp(a)) * wts).sum()), x)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)

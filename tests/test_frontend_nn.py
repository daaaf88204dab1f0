"""nn ops and losses (tinyspec/frontend/nn.py, losses.py) against loops and formulas written out here in float64:
matmul / dot / linear / einsum, conv2d (stride larger than the kernel, padding larger than the input, dilation,
groups), conv_transpose2d, max/avg pooling (ceil_mode, count_include_pad, return_indices), interpolate, layernorm,
batchnorm, dropout with a given mask, scaled_dot_product_attention, embedding, and the losses with their reductions."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from frontend_parity import Case, cases_by_name, check_backend, check_reference, rng

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor

F = np.float32
R = rng(11)


def randf(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray: return R.uniform(lo, hi, shape).astype(F)


# ---- references ----
def conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
  """Direct convolution (cross-correlation) over the spatial dims; padding per dim as (before, after) pairs or an int."""
  x, w = x.astype(np.float64), w.astype(np.float64)
  nd = x.ndim - 2
  st, dl = (stride,) * nd if isinstance(stride, int) else stride, (dilation,) * nd if isinstance(dilation, int) else dilation
  pads = [(padding, padding)] * nd if isinstance(padding, int) else padding
  for d, (pb, pa) in enumerate(pads):  # negative pads crop
    sl = [slice(None)] * x.ndim
    sl[2 + d] = slice(max(-pb, 0), x.shape[2 + d] - max(-pa, 0))
    x = x[tuple(sl)]
  x = np.pad(x, [(0, 0), (0, 0)] + [(max(pb, 0), max(pa, 0)) for pb, pa in pads])
  n, cin, *sp = x.shape
  cout, cg, *k = w.shape
  outs = [(s - d * (kk - 1) - 1) // t + 1 for s, d, kk, t in zip(sp, dl, k, st)]
  out = np.zeros((n, cout, *outs))
  og = cout // groups
  for o in itertools.product(*[range(v) for v in outs]):
    for g in range(groups):
      win = x[(slice(None), slice(g * cg, (g + 1) * cg)) + tuple(slice(oi * t, oi * t + d * (kk - 1) + 1, d) for oi, t, d, kk in zip(o, st, dl, k))]
      wg = w[g * og:(g + 1) * og]
      out[(slice(None), slice(g * og, (g + 1) * og)) + o] = np.tensordot(win, wg, (list(range(1, win.ndim)), list(range(1, wg.ndim))))
  return out if b is None else out + b.reshape((1, -1) + (1,) * nd)


def conv_transpose_ref(x, w, stride=1, padding=0, dilation=1, output_padding=0, groups=1):
  """out[n, g*og+o, i*s - p + k*d] += x[n, g*cg+c, i] * w[g*cg+c, o, k], then cropped by padding."""
  x, w = x.astype(np.float64), w.astype(np.float64)
  n, cin, *sp = x.shape
  _, og, *k = w.shape
  nd = len(sp)
  st, dl, op, pd = ((v,) * nd if isinstance(v, int) else v for v in (stride, dilation, output_padding, padding))
  full = [(s - 1) * t + d * (kk - 1) + 1 + o for s, t, d, kk, o in zip(sp, st, dl, k, op)]
  out = np.zeros((n, og * groups, *full))
  cg = cin // groups
  for i in itertools.product(*[range(v) for v in sp]):
    for kk in itertools.product(*[range(v) for v in k]):
      pos = tuple(a * t + b * d for a, t, b, d in zip(i, st, kk, dl))
      for g in range(groups):
        xs, ws = x[(slice(None), slice(g * cg, (g + 1) * cg)) + i], w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk]
        out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += xs @ ws
  return out[(slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(pd, full))]


def pool_ref(x, k, stride=None, padding=0, dilation=1, ceil_mode=False, op="max", count_include_pad=True):
  """torch's pooling: output size floor (or ceil, with the last window starting inside the input or left padding)."""
  x = x.astype(np.float64)
  nd = len(k)
  st = k if stride is None else (stride,) * nd if isinstance(stride, int) else stride
  pd, dl = ((v,) * nd if isinstance(v, int) else v for v in (padding, dilation))
  sp = x.shape[-nd:]
  outs = []
  for s, kk, t, p, d in zip(sp, k, st, pd, dl):
    span = s + 2 * p - d * (kk - 1) - 1
    o = (-(-span // t) if ceil_mode else span // t) + 1
    if ceil_mode and (o - 1) * t >= s + p: o -= 1
    outs.append(o)
  fill = -np.inf if op == "max" else 0.0
  big = [max(s + 2 * p, (o - 1) * t + d * (kk - 1) + 1) for s, p, o, t, d, kk in zip(sp, pd, outs, st, dl, k)]
  xp = np.full(x.shape[:-nd] + tuple(big), fill)
  inside = np.zeros(tuple(big))
  xp[(...,) + tuple(slice(p, p + s) for p, s in zip(pd, sp))] = x
  inside[tuple(slice(0, s + 2 * p) for p, s in zip(pd, sp))] = 1  # the padded input (not the ceil overhang)
  out = np.zeros(x.shape[:-nd] + tuple(outs))
  for o in itertools.product(*[range(v) for v in outs]):
    sl = tuple(slice(oi * t, oi * t + d * (kk - 1) + 1, d) for oi, t, d, kk in zip(o, st, dl, k))
    win = xp[(...,) + sl].reshape(x.shape[:-nd] + (-1,))
    if op == "max": out[(...,) + o] = win.max(-1)
    else:
      real = np.zeros(tuple(big))
      real[tuple(slice(p, p + s) for p, s in zip(pd, sp))] = 1
      cnt = (inside if count_include_pad else real)[sl].sum()
      out[(...,) + o] = win.sum(-1) / cnt
  return out


def interp_ref(x, size, mode, align_corners=False):
  out = x.astype(np.float64)
  for ax, n in zip(range(x.ndim - len(size), x.ndim), size):
    m = out.shape[ax]
    i = np.arange(n)
    if mode == "nearest": out = np.take(out, np.floor(i * m / n).astype(int), ax)
    elif mode == "nearest-exact": out = np.take(out, np.minimum(np.floor((i + 0.5) * m / n).astype(int), m - 1), ax)
    else:
      src = i * (m - 1) / (n - 1) if align_corners and n > 1 else np.clip((i + 0.5) * m / n - 0.5, 0, m - 1) if not align_corners else np.zeros(n)
      lo = np.floor(src).astype(int)
      hi = np.minimum(lo + 1, m - 1)
      frac = (src - lo).reshape([-1 if a == ax else 1 for a in range(out.ndim)])
      out = np.take(out, lo, ax) * (1 - frac) + np.take(out, hi, ax) * frac
  return out


def np_softmax(a, axis=-1):
  e = np.exp(a - a.max(axis, keepdims=True))
  return e / e.sum(axis, keepdims=True)


def log_softmax(a, axis): return a - a.max(axis, keepdims=True) - np.log(np.exp(a - a.max(axis, keepdims=True)).sum(axis, keepdims=True))


# ---- cases ----
def product_cases() -> list[Case]:
  a, b, v, w = randf(3, 4), randf(4, 5), randf(4), randf(5)
  ba, bb = randf(2, 3, 4), randf(4, 2)
  i8a, i8b = np.array([[100, 2], [3, -4]], np.int8), np.array([[2, 1], [1, 1]], np.int8)
  return [
    Case("matmul_2d", Tensor(a) @ Tensor(b), a.astype(np.float64) @ b, 1e-5, 1e-6),
    Case("matmul_vec_vec", Tensor(v) @ Tensor(v), np.dot(v.astype(np.float64), v), 1e-5, 1e-6),
    Case("matmul_mat_vec", Tensor(a) @ Tensor(v), a.astype(np.float64) @ v, 1e-5, 1e-6),
    Case("matmul_vec_mat", Tensor(v).matmul(Tensor(b)), v.astype(np.float64) @ b, 1e-5, 1e-6),
    Case("matmul_batched", Tensor(ba) @ Tensor(bb), ba.astype(np.float64) @ bb, 1e-5, 1e-6),
    Case("matmul_broadcast", Tensor(randf(2, 1, 3, 4) * 0 + ba[:, None]) @ Tensor(np.stack([b, b, b])),
         ba[:, None].astype(np.float64) @ np.stack([b, b, b]), 1e-5, 1e-6),
    Case("matmul_reverse", Tensor(b).matmul(Tensor(a), reverse=True), a.astype(np.float64) @ b, 1e-5, 1e-6),
    Case("dot_int8_keeps_dtype", Tensor(i8a).dot(Tensor(i8b)), (i8a.astype(np.int32) @ i8b).astype(np.int8), dtype=dtypes.int8),
    # dtype= is the accumulation dtype: the products are int8 (100 * 2 wraps to -56), their sum is int32, as in tinygrad
    Case("matmul_dtype", Tensor(i8a).matmul(Tensor(i8b), dtype=dtypes.int32),
         (i8a[:, :, None] * i8b[None]).astype(np.int32).sum(1), dtype=dtypes.int32),
    Case("matmul_empty_inner", Tensor(np.zeros((2, 0), F)) @ Tensor(np.zeros((0, 3), F)), np.zeros((2, 3)), 0, 0),
    Case("linear", Tensor(a).linear(Tensor(b), Tensor(w)), a.astype(np.float64) @ b + w, 1e-5, 1e-6),
    Case("sequential", Tensor(a).sequential([lambda t: t * 2, lambda t: t @ Tensor(b)]), (a * 2).astype(np.float64) @ b, 1e-5, 1e-6),
    Case("linear_1d_weight", Tensor(a).linear(Tensor(v)), a * v, 1e-6, 0),
    Case("einsum_matmul", Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b)), np.einsum("ij,jk->ik", a.astype(np.float64), b), 1e-5, 1e-6),
    Case("einsum_implicit", Tensor.einsum("ij,jk", Tensor(a), Tensor(b)), np.einsum("ij,jk", a.astype(np.float64), b), 1e-5, 1e-6),
    Case("einsum_batch", Tensor.einsum("bij,jk->bik", Tensor(ba), Tensor(bb)), np.einsum("bij,jk->bik", ba.astype(np.float64), bb), 1e-5, 1e-6),
    Case("einsum_transpose", Tensor.einsum("ij->ji", Tensor(a)), a.T, 0, 0),
    Case("einsum_trace", Tensor.einsum("ii", Tensor(a[:3, :3])), np.einsum("ii", a[:3, :3].astype(np.float64)), 1e-6, 1e-7),
    Case("einsum_diag", Tensor.einsum("ii->i", Tensor(a[:3, :3])), np.einsum("ii->i", a[:3, :3]), 0, 0),
    Case("einsum_outer", Tensor.einsum("i,j->ij", Tensor(v), Tensor(w)), np.einsum("i,j->ij", v, w), 1e-6, 0),
    Case("einsum_inner", Tensor.einsum("i,i->", Tensor(v), Tensor(v)), np.einsum("i,i->", v.astype(np.float64), v), 1e-5, 1e-6),
    Case("einsum_sum_all", Tensor.einsum("ij->", Tensor(a)), a.astype(np.float64).sum(), 1e-5, 1e-6),
    Case("einsum_ellipsis", Tensor.einsum("...ij,jk->...ik", Tensor(ba), Tensor(bb)),
         np.einsum("...ij,jk->...ik", ba.astype(np.float64), bb), 1e-5, 1e-6),
    Case("einsum_list", Tensor.einsum("bij,bkj->bik", [Tensor(ba), Tensor(ba)]), np.einsum("bij,bkj->bik", ba.astype(np.float64), ba), 1e-5, 1e-6),
    Case("einsum_three", Tensor.einsum("ij,jk,k->i", Tensor(a), Tensor(b), Tensor(w)), np.einsum("ij,jk,k->i", a.astype(np.float64), b, w),
         1e-5, 1e-6),
  ]


CONVS = [
  # (x shape, w shape, kwargs)
  ((2, 3, 5, 6), (4, 3, 3, 3), {}),
  ((1, 2, 7, 5), (3, 2, 2, 3), {"stride": 2, "padding": 1}),
  ((1, 1, 6, 6), (2, 1, 2, 2), {"stride": 3}),  # stride larger than the kernel
  ((1, 2, 3, 3), (2, 2, 2, 2), {"padding": 4}),  # padding larger than the input
  ((1, 2, 7, 7), (2, 2, 3, 3), {"dilation": 2, "padding": (1, 2)}),
  ((2, 4, 5, 5), (6, 2, 3, 1), {"groups": 2, "stride": (1, 2)}),
  ((1, 3, 4, 4), (3, 1, 1, 1), {"groups": 3}),
  ((1, 1, 5, 5), (1, 1, 5, 5), {}),
  ((1, 2, 6, 5), (2, 2, 3, 3), {"padding": (1, 0, 2, 1)}),  # torch's flat form: (left, right, top, bottom)
  ((1, 1, 6, 6), (1, 1, 3, 3), {"padding": -1}),  # negative padding crops
  ((1, 2, 9), (3, 2, 3), {"stride": 2, "padding": 1}),  # 1-d
]


def _pairs(padding, nd):
  if isinstance(padding, int): return padding
  if len(padding) == nd: return [(p, p) for p in padding]
  return [(padding[2 * (nd - 1 - d)], padding[2 * (nd - 1 - d) + 1]) for d in range(nd)]


def conv_cases() -> list[Case]:
  out = []
  for j, (xs, ws, kw) in enumerate(CONVS):
    x, w, b = randf(*xs), randf(*ws), randf(ws[0])
    kw_ref = {**kw, "padding": _pairs(kw.get("padding", 0), len(xs) - 2)}
    out.append(Case(f"conv2d[{j}]", Tensor(x).conv2d(Tensor(w), Tensor(b), **kw), conv_ref(x, w, b, **kw_ref), 1e-5, 1e-5))
  x = randf(1, 2, 4, 4)
  out.append(Case("conv2d_int", Tensor(np.arange(16, dtype=np.int32).reshape(1, 1, 4, 4)).conv2d(Tensor(np.ones((1, 1, 2, 2), np.int32))),
                  conv_ref(np.arange(16).reshape(1, 1, 4, 4), np.ones((1, 1, 2, 2))).astype(np.int32), dtype=dtypes.int32))
  for j, (xs, ws, kw) in enumerate([((1, 2, 3, 3), (2, 3, 2, 2), {}), ((1, 2, 3, 4), (2, 2, 3, 3), {"stride": 2, "padding": 1}),
                                    ((2, 4, 3, 3), (4, 1, 2, 3), {"groups": 2, "stride": (2, 1), "dilation": (1, 2)}),
                                    ((1, 1, 4, 4), (1, 1, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
                                    ((1, 2, 2, 2), (2, 2, 2, 2), {"stride": 3})]):
    x, w = randf(*xs), randf(*ws)
    out.append(Case(f"conv_transpose2d[{j}]", Tensor(x).conv_transpose2d(Tensor(w), **kw), conv_transpose_ref(x, w, **kw), 1e-5, 1e-5))
  b = randf(3)
  out.append(Case("conv_transpose2d_bias", Tensor(x).conv_transpose2d(Tensor(randf(2, 3, 2, 2) * 0 + 1), Tensor(b)),
                  conv_transpose_ref(x, np.ones((2, 3, 2, 2))) + b.reshape(1, 3, 1, 1), 1e-5, 1e-5))
  return out


POOLS = [
  ((1, 2, 6, 6), {"kernel_size": (2, 2)}),
  ((2, 1, 7, 5), {"kernel_size": 3, "stride": 2}),
  ((1, 1, 7, 7), {"kernel_size": (2, 2), "stride": 3}),  # stride larger than the kernel
  ((1, 1, 5, 5), {"kernel_size": 3, "stride": 1, "padding": 1}),
  ((1, 1, 5, 6), {"kernel_size": (3, 2), "stride": (2, 1), "dilation": (1, 2)}),
  ((1, 1, 7, 6), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
  ((1, 1, 6, 6), {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True}),
  ((1, 2, 1, 1), {"kernel_size": 1}),
]


def pool_cases() -> list[Case]:
  out = []
  for j, (xs, kw) in enumerate(POOLS):
    x = randf(*xs)
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    ref_kw = {n: v for n, v in kw.items() if n != "kernel_size"}
    out.append(Case(f"max_pool2d[{j}]", Tensor(x).max_pool2d(**kw), pool_ref(x, k, **ref_kw), 0, 0))
    out.append(Case(f"avg_pool2d[{j}]", Tensor(x).avg_pool2d(**kw),
                    pool_ref(x, k, op="avg", **ref_kw), 1e-5, 1e-6))
  x = randf(1, 1, 5, 5)
  out += [
    Case("avg_pool2d_exclude_pad", Tensor(x).avg_pool2d(3, 2, padding=1, count_include_pad=False),
         pool_ref(x, (3, 3), 2, 1, op="avg", count_include_pad=False), 1e-5, 1e-6),
    Case("max_pool2d_padding_larger_than_input", Tensor(x[..., :2, :2]).max_pool2d(2, 1, padding=1), pool_ref(x[..., :2, :2], (2, 2), 1, 1), 0, 0),
    Case("max_pool2d_int", Tensor(np.arange(16, dtype=np.int32).reshape(1, 1, 4, 4)).max_pool2d(), np.array([[[[5, 7], [13, 15]]]], np.int32)),
  ]
  vals, idx = Tensor(x).max_pool2d(2, 2, return_indices=True)
  xi = x[0, 0, :4, :4].reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(2, 2, 4)
  arg = xi.argmax(-1)
  flat = (np.arange(2)[:, None] * 2 + arg // 2) * 5 + np.arange(2)[None, :] * 2 + arg % 2
  out.append(Case("max_pool2d_indices", (vals, idx), (xi.max(-1)[None, None], flat[None, None].astype(np.int32)), 0, 0))
  return out


def resample_cases() -> list[Case]:
  x = randf(1, 2, 3, 4)
  out = []
  for mode in ("nearest", "nearest-exact", "linear"):
    for size in [(5, 7), (2, 2), (3, 4), (6, 1)]:
      out.append(Case(f"interpolate[{mode}|{size}]", Tensor(x).interpolate(size, mode=mode), interp_ref(x, size, mode), 1e-5, 1e-6))
  out += [Case("interpolate_align_corners", Tensor(x).interpolate((5, 7), align_corners=True), interp_ref(x, (5, 7), "linear", True), 1e-5, 1e-6),
          Case("interpolate_1d", Tensor(x).interpolate((9,)), interp_ref(x, (9,), "linear"), 1e-5, 1e-6)]
  return out


def norm_cases() -> list[Case]:
  x = randf(2, 3, 4)
  def ln(a, axes, eps=1e-5):
    a = a.astype(np.float64)
    m = a.mean(axes, keepdims=True)
    return (a - m) / np.sqrt(((a - m) ** 2).mean(axes, keepdims=True) + eps)
  w, b, mu, var = randf(3), randf(3), randf(3), randf(3, lo=0.5, hi=2)
  invstd = 1 / np.sqrt(var + 1e-5)
  shape = (1, 3, 1)
  keep = R.uniform(0, 1, x.shape) > 0.3
  q, k, v = randf(2, 2, 4, 8), randf(2, 2, 5, 8), randf(2, 2, 5, 3)
  scores = q.astype(np.float64) @ k.transpose(0, 1, 3, 2) / math.sqrt(8)
  amask = R.uniform(0, 1, (4, 5)) > 0.3
  amask[:, 0] = True
  qc, kc, vc = randf(1, 4, 6), randf(1, 4, 6), randf(1, 4, 2)
  causal = qc.astype(np.float64) @ kc.transpose(0, 2, 1) / math.sqrt(6) + np.where(np.tril(np.ones((4, 4), bool)), 0, -np.inf)
  dmask = R.uniform(0, 1, (2, 2, 4, 5)) > 0.5
  emb, idx = randf(7, 3), np.array([[0, 6, 2], [2, 2, 1]], np.int32)
  kg, vg = randf(2, 1, 5, 8), randf(2, 1, 5, 3)
  return [
    Case("layernorm", Tensor(x).layernorm(), ln(x, -1), 1e-4, 1e-5),
    Case("layernorm_axes", Tensor(x).layernorm((1, 2), eps=1e-3), ln(x, (1, 2), 1e-3), 1e-4, 1e-5),
    Case("batchnorm", Tensor(x).batchnorm(Tensor(w), Tensor(b), Tensor(mu), Tensor(invstd)),
         (x - mu.reshape(shape)) * w.reshape(shape) * invstd.reshape(shape) + b.reshape(shape), 1e-5, 1e-6),
    Case("batchnorm_no_affine", Tensor(x).batchnorm(None, None, Tensor(mu), Tensor(invstd)),
         (x - mu.reshape(shape)) * invstd.reshape(shape), 1e-5, 1e-6),
    Case("dropout_mask", Tensor(x).dropout(0.3, mask=Tensor(keep)), np.where(keep, x, 0) / 0.7, 1e-6, 1e-7),
    Case("dropout_no_mask", Tensor(x).dropout(0.3), x, 0, 0),
    Case("dropout_p1", Tensor(x).dropout(1.0, mask=Tensor(keep)), np.zeros_like(x), 0, 0),
    Case("sdpa", Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v)), np_softmax(scores) @ v, 1e-5, 1e-6),
    Case("sdpa_bool_mask", Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(amask)),
         np_softmax(scores + np.where(amask, 0, -np.inf)) @ v, 1e-5, 1e-6),
    Case("sdpa_additive_mask", Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(amask.astype(F) * -2)),
         np_softmax(scores + amask * -2.0) @ v, 1e-5, 1e-6),
    Case("sdpa_causal", Tensor(qc).scaled_dot_product_attention(Tensor(kc), Tensor(vc), is_causal=True), np_softmax(causal) @ vc, 1e-5, 1e-6),
    Case("sdpa_dropout_mask", Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), dropout_p=0.5, dropout_mask=Tensor(dmask)),
         np.where(dmask, np_softmax(scores), 0) / 0.5 @ v, 1e-5, 1e-6),
    Case("sdpa_gqa", Tensor(q).scaled_dot_product_attention(Tensor(kg), Tensor(vg), enable_gqa=True),
         np_softmax(q.astype(np.float64) @ np.repeat(kg, 2, 1).transpose(0, 1, 3, 2) / math.sqrt(8)) @ np.repeat(vg, 2, 1), 1e-5, 1e-6),
    Case("embedding", Tensor(idx).embedding(Tensor(emb)), emb[idx], 0, 0),
    Case("embedding_0d", Tensor(np.array(4, np.int32)).embedding(Tensor(emb)), emb[4], 0, 0),
  ]


def loss_cases() -> list[Case]:
  logits, y = randf(4, 5, lo=-3, hi=3), np.array([1, 0, 4, 1], np.int32)
  probs = np_softmax(randf(4, 5, lo=-2, hi=2).astype(np.float64)).astype(F)
  lsm = log_softmax(logits.astype(np.float64), 1)
  p, t = randf(6, lo=0.05, hi=0.95), (R.uniform(0, 1, 6) > 0.5).astype(F)
  z = randf(6, lo=-4, hi=4)
  pw = randf(6, lo=0.5, hi=2)
  cw = randf(5, lo=0.5, hi=2)
  y3, l3 = np.array([[1, 2], [0, 0]], np.int32), randf(2, 3, 2)
  yi = np.array([1, 3, 4, 3], np.int32)
  nll_w = cw[y] * (y != 1)
  def sp(a): return np.logaddexp(0, a.astype(np.float64))
  out = [
    Case("cross_entropy_indices", Tensor(logits).cross_entropy(Tensor(y)), -lsm[np.arange(4), y].mean(), 1e-5, 1e-6),
    Case("cross_entropy_probs", Tensor(logits).cross_entropy(Tensor(probs)), -(lsm * probs).sum(1).mean(), 1e-5, 1e-6),
    Case("cross_entropy_smoothing", Tensor(logits).cross_entropy(Tensor(y), label_smoothing=0.2),
         -(lsm * (0.8 * np.eye(5)[y] + 0.2 / 5)).sum(1).mean(), 1e-5, 1e-6),
    Case("cross_entropy_none", Tensor(logits).cross_entropy(Tensor(y), reduction="none"), -lsm[np.arange(4), y], 1e-5, 1e-6),
    Case("cross_entropy_sum", Tensor(logits).cross_entropy(Tensor(y), reduction="sum"), -lsm[np.arange(4), y].sum(), 1e-5, 1e-6),
    Case("cross_entropy_1d", Tensor(logits[0]).cross_entropy(Tensor(np.array(2, np.int32))), -lsm[0, 2], 1e-5, 1e-6),
    Case("cross_entropy_spatial", Tensor(l3).cross_entropy(Tensor(y3)),
         -np.mean([log_softmax(l3.astype(np.float64), 1)[n, y3[n, j], j] for n in range(2) for j in range(2)]), 1e-5, 1e-6),
    Case("nll_loss", Tensor(lsm.astype(F)).nll_loss(Tensor(y)), -lsm[np.arange(4), y].mean(), 1e-5, 1e-6),
    Case("nll_loss_weight_ignore", Tensor(lsm.astype(F)).nll_loss(Tensor(y), Tensor(cw), ignore_index=1),
         -(lsm[np.arange(4), y] * nll_w).sum() / nll_w.sum(), 1e-5, 1e-6),
    Case("nll_loss_none", Tensor(lsm.astype(F)).nll_loss(Tensor(y), reduction="none"), -lsm[np.arange(4), y], 1e-5, 1e-6),
    Case("nll_loss_sum_weight", Tensor(lsm.astype(F)).nll_loss(Tensor(y), Tensor(cw), reduction="sum"),
         -(lsm[np.arange(4), y] * cw[y]).sum(), 1e-5, 1e-6),
    Case("binary_crossentropy", Tensor(p).binary_crossentropy(Tensor(t)),
         -(t * np.log(p.astype(np.float64)) + (1 - t) * np.log(1 - p.astype(np.float64))).mean(), 1e-5, 1e-6),
    Case("binary_crossentropy_sum", Tensor(p).binary_crossentropy(Tensor(t), reduction="sum"),
         -(t * np.log(p.astype(np.float64)) + (1 - t) * np.log(1 - p.astype(np.float64))).sum(), 1e-5, 1e-6),
    Case("binary_crossentropy_logits", Tensor(z).binary_crossentropy_logits(Tensor(t)), (t * sp(-z) + (1 - t) * sp(z)).mean(), 1e-5, 1e-6),
    Case("binary_crossentropy_logits_pos_weight", Tensor(z).binary_crossentropy_logits(Tensor(t), reduction="none", pos_weight=Tensor(pw)),
         pw * t * sp(-z) + (1 - t) * sp(z), 1e-5, 1e-6),
    Case("sparse_categorical_crossentropy", Tensor(logits).sparse_categorical_crossentropy(Tensor(yi)), -lsm[np.arange(4), yi].mean(), 1e-5, 1e-6),
    Case("sparse_categorical_crossentropy_ignore", Tensor(logits).sparse_categorical_crossentropy(Tensor(yi), ignore_index=3),
         -lsm[[0, 2], [1, 4]].mean(), 1e-5, 1e-6),
    Case("sparse_categorical_crossentropy_smoothing", Tensor(logits).sparse_categorical_crossentropy(Tensor(yi), label_smoothing=0.1),
         -(0.9 * lsm[np.arange(4), yi] + 0.1 * lsm.mean(1)).mean(), 1e-5, 1e-6),
    Case("sparse_categorical_crossentropy_sum", Tensor(logits).sparse_categorical_crossentropy(Tensor(yi), reduction="sum"),
         -lsm[np.arange(4), yi].sum(), 1e-5, 1e-6),
  ]
  return out


CASES = cases_by_name(product_cases() + conv_cases() + pool_cases() + resample_cases() + norm_cases() + loss_cases())


@pytest.mark.parametrize("name", list(CASES))
def test_reference(name: str) -> None:
  check_reference(CASES[name])


def test_cpu_backend() -> None:
  check_backend(list(CASES.values()), "cpu")


def test_opencl_backend(opencl) -> None:
  check_backend(list(CASES.values()), "opencl")


@pytest.mark.parametrize("call", [
  lambda: Tensor(randf(1, 3, 4, 4)).conv2d(Tensor(randf(2, 2, 3, 3))), lambda: Tensor(randf(1, 4, 4, 4)).conv2d(Tensor(randf(3, 2, 3, 3)), groups=2),
  lambda: Tensor(randf(1, 1, 2, 2)).max_pool2d(3), lambda: Tensor(randf(3, 4)) @ Tensor(randf(3, 4)),
  lambda: Tensor(randf(3)).dot(Tensor(np.array(1.0, F))),
  lambda: Tensor(randf(2, 3)).cross_entropy(Tensor(np.array([1, 2, 0], np.int32))),
  lambda: Tensor(randf(2)).binary_crossentropy(Tensor(randf(2)), reduction="avg"),
  lambda: Tensor(randf(2, 3)).interpolate((4,), mode="cubic"), lambda: Tensor(randf(2, 3)).dropout(1.5),
  lambda: Tensor.einsum("ij,jk->ik", Tensor(randf(2, 3))),
  lambda: Tensor.einsum("ij,jk->ik", Tensor(randf(2, 3)), Tensor(randf(4, 2))),
])
def test_bad_arguments(call) -> None:
  with pytest.raises((ValueError, TypeError)): call()

"""Neural-network ops as tinygrad 0.14 builds them: products are broadcast multiplies and a sum, windowed ops are
_pool (frontend/movement.py) and a reduction, normalizations are means.

- dot / matmul / linear: x * w broadcast over a new axis, summed (in sum's dtype, then cast back to the operands'
  promoted dtype, as tinygrad); einsum aligns every operand to the sorted letters, multiplies and sums the letters
  not in the output (a repeated letter in one operand takes its diagonal).
- conv2d (any number of spatial dims; stride, padding (int, per dim, or torch's flat form; negative crops), dilation,
  groups), conv_transpose2d (stride, padding, dilation, groups, output_padding) as conv2d of the zero-stuffed input
  with the flipped kernel; max_pool2d (padding with the dtype's minimum, return_indices, ceil_mode) and avg_pool2d
  (count_include_pad, ceil_mode); interpolate (nearest, nearest-exact, linear with align_corners) by gather and lerp.
- layernorm, batchnorm (inference: given mean and invstd), dropout with a given keep mask (tinygrad draws the mask
  from its RNG; here it is an argument, so a graph is a pure function of its inputs), scaled_dot_product_attention
  (attn_mask bool or additive, is_causal, enable_gqa, dropout through a given mask), embedding (one-hot select)."""
from __future__ import annotations

import math
import string
from typing import Any, Callable, Sequence

from tinyspec.dtype import DType, dtypes
from tinyspec.frontend.attach import alias, method, static
from tinyspec.frontend.promotion import promote
from tinyspec.frontend.tensor import Tensor


def _tuple(x: int | Sequence[int], n: int) -> tuple[int, ...]:
  return (x,) * n if isinstance(x, int) else tuple(x)


def resolve_pool_pads(padding: int | Sequence[int], dims: int) -> list[int]:
  """Flat pads in torch's order (last axis first): an int, one per spatial dim, or 2 per spatial dim."""
  if isinstance(padding, int): return [padding] * 2 * dims
  if len(padding) not in (dims, 2 * dims): raise ValueError(f"padding {tuple(padding)} needs 1, {dims} or {2 * dims} entries")
  return list(padding) if len(padding) == 2 * dims else [p for p in padding for _ in range(2)][::-1]


def flat_to_grouped(padding: Sequence[int]) -> tuple[tuple[int, int], ...]:
  return tuple(zip(padding[-2::-2], padding[::-2]))


# ---- products ----
@method
def dot(self: Tensor, w: Tensor, dtype: DType | None = None) -> Tensor:
  x, dx, dw = self, self.ndim, w.ndim
  if not (dx > 0 and dw > 0): raise ValueError(f"dot needs tensors of at least 1 dim, got {dx}-d and {dw}-d")
  axis_w = -min(w.ndim, 2)
  if x.shape[-1] != w.shape[axis_w]: raise ValueError(f"cannot dot {x.shape} and {w.shape}")
  x = x.reshape(x.shape[:-1] + (1,) * min(dx - 1, dw - 1, 1) + x.shape[-1:])
  w = w.reshape(w.shape[:-2] + (1,) * min(dx - 1, dw - 1, 1) + w.shape[axis_w:]).transpose(-1, axis_w)
  return (x * w).sum(-1, dtype=dtype).cast(promote(x.dtype, w.dtype) if dtype is None else dtype)


@method
def matmul(self: Tensor, x: Tensor, reverse: bool = False, dtype: DType | None = None) -> Tensor:
  return x.dot(self, dtype=dtype) if reverse else self.dot(x, dtype=dtype)


alias("__matmul__", lambda self, x: self.matmul(x))
alias("__rmatmul__", lambda self, x: self.matmul(x, True))


@method
def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
  x = self * weight if weight.ndim == 1 else self.dot(weight)
  return x + bias if bias is not None else x


@method
def sequential(self: Tensor, layers: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
  x = self
  for f in layers: x = f(x)
  return x


@static
def einsum(formula: str, *operands: Tensor | Sequence[Tensor], dtype: DType | None = None) -> Tensor:
  xs: list[Tensor] = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)  # type: ignore[arg-type]
  formula = formula.replace(" ", "")
  if "..." in formula:
    ell = "".join(c for c in string.ascii_letters if c not in formula)
    lhs = (formula.split("->") + [""])[0]
    inputs = lhs.split(",")
    ell_n = [max(0, x.ndim - len(s) + 3) if "..." in s else 0 for s, x in zip(inputs, xs)]
    for i, s in enumerate(inputs): inputs[i] = s.replace("...", ell[max(ell_n) - ell_n[i]:max(ell_n)])
    auto = "".join(sorted(c for c in lhs if lhs.count(c) == 1 and c.isalpha()))
    out = formula.split("->")[1].replace("...", ell[:max(ell_n)]) if "->" in formula else ell[:max(ell_n)] + auto
    formula = f"{','.join(inputs)}->{out}"
  lhs, rhs = formula.split("->") if "->" in formula else (formula, "".join(sorted(c for c in formula if formula.count(c) == 1 and c.isalpha())))
  inputs = lhs.split(",")
  if len(xs) != len(inputs): raise ValueError(f"einsum {formula!r} names {len(inputs)} operands, got {len(xs)}")
  for i, (s, x) in enumerate(zip(inputs, xs)):
    if len(s) != x.ndim: raise ValueError(f"einsum operand {i} has {x.ndim} dims, {s!r} names {len(s)}")
    for c in set(s):
      while s.count(c) > 1:
        j, k = s.index(c), s.index(c, s.index(c) + 1)
        x = x.diagonal(0, j, k)
        s = s[:j] + s[j + 1:k] + s[k + 1:] + c  # diagonal puts the merged axis last
    inputs[i], xs[i] = s, x
  sz: dict[str, int] = {}
  for s, x in zip(inputs, xs):
    for c, n in zip(s, x.shape):
      if sz.setdefault(c, n) != n: raise ValueError(f"einsum letter {c!r} has sizes {sz[c]} and {n}")
  alpha = sorted(sz)
  aligned = [x.permute(*[s.index(c) for c in sorted(s)]).reshape(tuple(sz[c] if c in s else 1 for c in alpha)) if s else x
             for s, x in zip(inputs, xs)]
  prod = aligned[0]
  for x in aligned[1:]: prod = prod * x
  out = prod.sum(tuple(i for i, c in enumerate(alpha) if c not in rhs), dtype=dtype) if any(c not in rhs for c in alpha) else prod
  ranks = sorted(range(len(rhs)), key=lambda i: rhs[i])
  return out.reshape(tuple(sz[c] for c in sorted(rhs))).permute(*sorted(range(len(rhs)), key=lambda i: ranks[i]))


# ---- convolution ----
@method
def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
           dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, dtype: DType | None = None) -> Tensor:
  (bs, cin_), (cout, cin), HW = self.shape[:2], weight.shape[:2], weight.shape[2:]
  if groups * cin != cin_ or self.ndim != weight.ndim:
    raise ValueError(f"input shape {self.shape} does not match weight shape {weight.shape} with groups={groups}")
  if cout % groups: raise ValueError(f"{cout} output channels do not split into {groups} groups")
  pads = flat_to_grouped(resolve_pool_pads(padding, len(HW)))
  x = self.pad(((0, 0),) * (self.ndim - len(HW)) + pads)._pool(HW, stride, dilation)
  rcout, oyx = cout // groups, x.shape[2:-len(HW)]
  x = x.reshape((bs, groups, cin, 1) + oyx + HW).expand((bs, groups, cin, rcout) + oyx + HW)
  x = x.permute(0, 1, 3, *[4 + i for i in range(len(oyx))], 2, *[4 + len(oyx) + i for i in range(len(HW))])
  ret = (x * weight.reshape((1, groups, rcout) + (1,) * len(oyx) + (cin,) + HW))
  ret = ret.sum(tuple(-1 - i for i in range(1 + len(oyx))), keepdim=True, dtype=dtype).reshape((bs, cout) + oyx)
  return ret if bias is None else ret + bias.reshape((1, -1) + (1,) * len(HW))


@method
def conv_transpose2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | Sequence[int] = 1,
                     dilation: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, output_padding: int | Sequence[int] = 0) -> Tensor:
  HW = weight.shape[2:]
  w = weight.unflatten(0, (groups, -1)).transpose(1, 2).flip(tuple(range(3, weight.ndim + 1)))
  pads = flat_to_grouped(resolve_pool_pads(padding, len(HW)))
  st, dil, op = (_tuple(v, len(HW)) for v in (stride, dilation, output_padding))
  x = self
  if any(s > 1 for s in st):
    lead = x.shape[:2]
    x = x.reshape(lead + tuple(v for k in x.shape[2:] for v in (k, 1)))
    x = x.pad((None, None) + tuple(p for s in st for p in (None, (0, s - 1))))
    x = x.reshape(lead + tuple(k * s for k, s in zip(x.shape[2::2], st)))
    x = x.shrink_to((None, None) + tuple(k - (s - 1) for k, s in zip(x.shape[2:], st)))
  flat = [v for k, d, (pb, pa), o in reversed(list(zip(HW, dil, pads, op))) for v in ((k - 1) * d - pb, (k - 1) * d - pa + o)]
  return x.conv2d(w.flatten(end_dim=1), groups=groups, bias=bias, dilation=dil, padding=flat)


# ---- pooling ----
def _apply_ceil_mode(x: Tensor, pads: Sequence[int], k_: tuple[int, ...], s_: int | Sequence[int], d_: int | Sequence[int]) -> list[int]:
  d_, s_ = _tuple(d_, len(k_)), _tuple(s_, len(k_))
  i_ = x.shape[-len(k_):]
  grouped = list(flat_to_grouped(pads))
  o_ = [-(-(i + pb + pa - (d * (k - 1) + 1)) // s) + 1 for i, d, k, s, (pb, pa) in zip(i_, d_, k_, s_, grouped)]
  for dim, (o, i, s, k, d, (pb, pa)) in enumerate(zip(o_, i_, s_, k_, d_, grouped)):
    grouped[dim] = (pb, pa + s * (o - 1) + (d * (k - 1) + 1) - (i + pb + pa) - max(s * (o - 1) - (pb + i - 1), 0))
  return [v for b, a in reversed(grouped) for v in (b, a)]


def _spatial_pad(x: Tensor, nk: int, pads: Sequence[int], value: Any) -> Tensor:
  return x.pad(((0, 0),) * (x.ndim - nk) + flat_to_grouped(pads), value=value)


@method
def avg_pool2d(self: Tensor, kernel_size: int | Sequence[int] = (2, 2), stride: int | Sequence[int] | None = None, dilation: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
  k_ = _tuple(kernel_size, 2)
  axis = tuple(range(-len(k_), 0))
  s_ = stride if stride is not None else k_
  def pool(x: Tensor, p: Sequence[int]) -> Tensor: return _spatial_pad(x, len(k_), p, 0.0)._pool(k_, s_, dilation)
  reg = resolve_pool_pads(padding, len(k_))
  pads = _apply_ceil_mode(self, reg, k_, s_, dilation) if ceil_mode else reg
  if not count_include_pad: return pool(self, pads).sum(axis) / pool(self.ones_like(), pads).sum(axis)
  if not ceil_mode: return pool(self, pads).mean(axis)
  ones = _spatial_pad(self, len(k_), reg, 0.0).ones_like()
  return pool(self, pads).sum(axis) / pool(ones, [c - r for c, r in zip(pads, reg)]).sum(axis)


@method
def max_pool2d(self: Tensor, kernel_size: int | Sequence[int] = (2, 2), stride: int | Sequence[int] | None = None, dilation: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, ceil_mode: bool = False, return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
  k_ = _tuple(kernel_size, 2)
  axis = tuple(range(-len(k_), 0))
  s_ = stride if stride is not None else k_
  pads = resolve_pool_pads(padding, len(k_))
  if ceil_mode: pads = _apply_ceil_mode(self, pads, k_, s_, dilation)
  pooled = _spatial_pad(self, len(k_), pads, self.dtype.min)._pool(k_, s_, dilation)
  if not return_indices: return pooled.max(axis)
  spatial = self.shape[-len(k_):]
  n = math.prod(spatial)
  idx = Tensor.arange(n, 0, -1).reshape(spatial)
  m = pooled == pooled.max(axis, keepdim=True)
  idx = m.where(_spatial_pad(idx, len(k_), pads, dtypes.int32.min)._pool(k_, s_, dilation), 0)
  return pooled.max(axis), n - idx.max(axis)


# ---- resampling ----
@method
def interpolate(self: Tensor, size: Sequence[int], mode: str = "linear", align_corners: bool = False) -> Tensor:
  if not isinstance(size, (tuple, list)) or not 0 < len(size) <= self.ndim:
    raise ValueError(f"interpolate size {size!r} must name 1 to {self.ndim} trailing dims")
  if mode not in ("linear", "nearest", "nearest-exact"): raise ValueError(f"interpolate mode {mode!r} is not 'linear', 'nearest' or 'nearest-exact'")
  if align_corners and mode != "linear": raise ValueError("align_corners needs mode 'linear'")
  x, expand = self, list(self.shape)
  for i in range(-1, -len(size) - 1, -1):
    in_sz, reshape = self.shape[i], [1] * self.ndim
    reshape[i] = expand[i] = size[i]
    if mode == "linear":
      arr = Tensor.arange(size[i])
      num, den = (arr * (in_sz - 1), size[i] - 1) if align_corners else ((arr * 2 + 1) * in_sz - size[i], size[i] * 2)
      if den == 0: num, den = arr * 0, 1
      num = num.clip(0, (in_sz - 1) * den)
      low, high, perc = (y.reshape(reshape).expand(expand) for y in (num // den, (num + den - 1) // den, (num % den).cast(dtypes.float32) / den))
      x = x.gather(i, low).lerp(x.gather(i, high), perc)
    else:
      scale, arr = in_sz / size[i], Tensor.arange(size[i], dtype=dtypes.float32)
      index = (scale * (arr + 0.5) if mode == "nearest-exact" else scale * arr).cast(dtypes.int32).reshape(reshape).expand(expand)
      x = x.gather(i, index)
  return x.cast(self.dtype)


# ---- normalization, regularization, attention ----
@method
def layernorm(self: Tensor, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
  y = self - self.mean(axis, keepdim=True)
  return y * ((y * y).mean(axis, keepdim=True) + eps).rsqrt()


@method
def batchnorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor, axis: int | Sequence[int] = 1) -> Tensor:
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  shape = tuple(s if ax in axes else 1 for ax, s in enumerate(self.shape))
  x = self - mean.reshape(shape)
  if weight is not None: x = x * weight.reshape(shape)
  ret = x * (invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
  return ret + bias.reshape(shape) if bias is not None else ret


@method
def dropout(self: Tensor, p: float = 0.5, mask: Tensor | None = None) -> Tensor:
  """Keep self where mask (bool, broadcast to self) is True, scaled by 1 / (1 - p); without a mask, self (inference)."""
  if not 0 <= p <= 1: raise ValueError(f"dropout p={p} is out of range [0, 1]")
  if mask is None or p == 0: return self
  if p == 1: return self.zeros_like()
  return mask.cast(dtypes.bool).where(self, 0) / (1.0 - p)


@method
def scaled_dot_product_attention(self: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, enable_gqa: bool = False, dropout_mask: Tensor | None = None) -> Tensor:
  if enable_gqa:
    key = key.repeat_interleave(self.shape[-3] // key.shape[-3], dim=-3)
    value = value.repeat_interleave(self.shape[-3] // value.shape[-3], dim=-3)
  qk = self.matmul(key.transpose(-2, -1), dtype=promote(promote(self.dtype, key.dtype), dtypes.float32)) / math.sqrt(self.shape[-1])
  if is_causal:
    if attn_mask is not None: raise ValueError("scaled_dot_product_attention takes attn_mask or is_causal, not both")
    attn_mask = Tensor.full(qk.shape, True, dtypes.bool).tril()
  if attn_mask is not None:
    if attn_mask.dtype.is_bool: attn_mask = attn_mask.where(0, -math.inf)
    qk = qk + attn_mask
  return qk.cast(self.dtype).softmax(-1).dropout(dropout_p, dropout_mask) @ value


@method
def embedding(self: Tensor, weight: Tensor) -> Tensor:
  """Rows of weight (vocab, dim) at the integer indices self: shape self.shape + (dim,), by a one-hot select."""
  if not self.dtype.is_int: raise TypeError(f"embedding indices must be integers, not {self.dtype.name}")
  hot = Tensor.arange(weight.shape[0]) == self.unsqueeze(-1)
  return hot.unsqueeze(-1).where(weight, 0).sum(-2, dtype=weight.dtype)

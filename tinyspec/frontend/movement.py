"""Layout: views built from the IR's movement ops (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP), as tinygrad 0.14 builds
them.

- transpose(dim0=1, dim1=0) and .T swap two axes (tinygrad's defaults: the first two).
- pad takes per-axis pairs ((before, after) or None, axis 0 first) or torch's flat form (last axis first);
  negative padding removes elements; mode "constant" (any value: the zero PAD, then WHERE of a padded mask),
  "reflect", "replicate" or "circular".
- cat joins along an axis by padding each piece to the whole and selecting with WHERE of padded masks (tinygrad adds
  the padded pieces; WHERE keeps -0.0 and needs no + on bools); stack is cat of unsqueezed pieces.
- _pool(k, stride, dilation) is tinygrad's window construction (repeat, shrink, reshape, no gather): windows last.
  unfold, the scans and the windowed nn ops are built on it."""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

from tinyspec.dtype import dtypes
from tinyspec.frontend.attach import method
from tinyspec.frontend.tensor import Tensor, resolve_axis

_zero_pad = Tensor._pad  # the IR's PAD: (before, after) zeros per axis, None for none


def _dim(x: Tensor, d: int, extra: bool = False) -> int:
  if not extra: return resolve_axis(d, x.ndim, scalar_ok=False) if x.ndim else resolve_axis(d, 0)
  return resolve_axis(d, x.ndim + 1, scalar_ok=False)


def _ints(args: tuple) -> tuple[int, ...]:
  return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)


@method
def transpose(self: Tensor, dim0: int = 1, dim1: int = 0) -> Tensor:
  order = list(range(self.ndim))
  a, b = resolve_axis(dim0, self.ndim, scalar_ok=False), resolve_axis(dim1, self.ndim, scalar_ok=False)
  order[a], order[b] = order[b], order[a]
  return self.permute(order)


@method
def view(self: Tensor, *shape: Any) -> Tensor: return self.reshape(*shape)


@method
def squeeze(self: Tensor, dim: int | None = None) -> Tensor:
  if dim is None: return self.reshape(tuple(d for d in self.shape if d != 1))
  if self.ndim == 0: return self
  dim = _dim(self, dim)
  return self if self.shape[dim] != 1 else self.reshape(self.shape[:dim] + self.shape[dim + 1:])


@method
def unsqueeze(self: Tensor, dim: int) -> Tensor:
  dim = _dim(self, dim, extra=True)
  return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])


@method
def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
  s, e = resolve_axis(start_dim, self.ndim), resolve_axis(end_dim, self.ndim)
  return self.reshape(self.shape[:s] + (math.prod(self.shape[s:e + 1]),) + self.shape[e + 1:])


@method
def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
  dim = _dim(self, dim)
  return self.reshape(self.shape[:dim] + tuple(sizes) + self.shape[dim + 1:])


@method
def shrink_to(self: Tensor, *shape: Any) -> Tensor:
  shp = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
  return self.shrink(tuple(None if n is None else (0, n) for n in shp))


@method
def pad_to(self: Tensor, *shape: Any) -> Tensor:
  shp = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
  return _zero_pad(self, tuple(None if n is None else (0, n - s) for s, n in zip(self.shape, shp, strict=True)))


# ---- pad ----
def _grouped(x: Tensor, padding: Sequence) -> tuple[tuple[int, int], ...]:
  if not any(isinstance(p, (tuple, list)) or p is None for p in padding):
    if len(padding) % 2: raise ValueError(f"flat padding {tuple(padding)} needs an even number of pads")
    flat = tuple(padding)
    pairs = tuple(zip(flat[-2::-2], flat[::-2]))
    if len(pairs) > x.ndim: raise ValueError(f"padding {flat} has more axes than shape {x.shape}")
    return ((0, 0),) * (x.ndim - len(pairs)) + pairs
  if len(padding) != x.ndim: raise ValueError(f"padding {tuple(padding)} needs {x.ndim} entries for shape {x.shape}")
  return tuple((0, 0) if p is None else (int(p[0]), int(p[1])) for p in padding)


def _pad_constant(x: Tensor, pX: tuple[tuple[int, int], ...], value: Any) -> Tensor:
  if any(b < 0 or a < 0 for b, a in pX):
    for (b, a), s in zip(pX, x.shape):
      if -min(b, 0) > min(a + s, s): raise ValueError(f"padding {pX} removes more than shape {x.shape} holds")
    x = x.shrink(tuple((-min(b, 0), min(a + s, s)) for (b, a), s in zip(pX, x.shape)))
    pX = tuple((max(b, 0), max(a, 0)) for b, a in pX)
  base = _zero_pad(x, pX)
  if value == 0 and not (isinstance(value, float) and math.copysign(1, value) < 0): return base
  return _zero_pad(Tensor.full(x.shape, True, dtypes.bool), pX).where(base, value)


def _pad_circular(x: Tensor, pX: tuple[tuple[int, int], ...]) -> Tensor:
  x = x.shrink(tuple((-min(b, 0), min(a + s, s)) for (b, a), s in zip(pX, x.shape)))
  pX = tuple((max(b, 0), max(a, 0)) for b, a in pX)
  if any(b > s or a > s for (b, a), s in zip(pX, x.shape)): raise ValueError(f"circular padding {pX} wraps around shape {x.shape} more than once")
  orig = x.shape
  x = x.repeat(tuple(1 + bool(b) + bool(a) for b, a in pX))
  return x.shrink(tuple((0 if b == 0 else o - b, xs if a == 0 else xs - o + a) for (b, a), o, xs in zip(pX, orig, x.shape)))


def _along(x: Tensor, d: int, window: Any) -> tuple:
  return tuple(window if i == d else (slice(None) if isinstance(window, slice) else None) for i in range(x.ndim))


def _pad_reflect_replicate(x: Tensor, pX: tuple[tuple[int, int], ...], mode: str) -> Tensor:
  for d, (b, a) in enumerate((max(b, 0), max(a, 0)) for b, a in pX):
    s = x.shape[d]
    if mode == "reflect":
      if b >= s or a >= s: raise ValueError(f"reflect padding ({b}, {a}) must be below the size {s} of axis {d}")
      xb = x[_along(x, d, slice(b, 0, -1))] if b else None
      xa = x[_along(x, d, slice(s - 2, s - 2 - a if s - 2 - a >= 0 else None, -1))] if a else None
    else:
      if s == 0 and (a or b): raise ValueError(f"replicate padding of the empty axis {d}")
      xb = x.shrink(_along(x, d, (0, 1))).repeat(tuple(b if i == d else 1 for i in range(x.ndim))) if b else None
      xa = x.shrink(_along(x, d, (s - 1, s))).repeat(tuple(a if i == d else 1 for i in range(x.ndim))) if a else None
    pieces = [p for p in (xb, x, xa) if p is not None]
    x = pieces[0].cat(*pieces[1:], dim=d)
  return x.shrink(tuple((-min(b, 0), min(a + s, s)) for (b, a), s in zip(pX, x.shape)))


@method
def pad(self: Tensor, padding: Sequence, mode: str = "constant", value: Any = 0.0) -> Tensor:
  pX = _grouped(self, padding)
  if mode == "constant": return _pad_constant(self, pX, value)
  if mode == "circular": return _pad_circular(self, pX)
  if mode in ("reflect", "replicate"): return _pad_reflect_replicate(self, pX, mode)
  raise ValueError(f"pad mode {mode!r} is not one of 'constant', 'reflect', 'replicate', 'circular'")


# ---- joining and splitting ----
@method
def cat(self: Tensor, *args: Tensor, dim: int = 0) -> Tensor:
  tensors = [self, *args]
  dim = _dim(self, dim)
  for t in args:
    if t.ndim != self.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != dim):
      raise ValueError(f"cat along axis {dim}: shape {t.shape} does not match {self.shape}")
  if len(tensors) == 1: return self
  ends = list(itertools.accumulate([t.shape[dim] for t in tensors], initial=0))
  def placed(t: Tensor, i: int) -> tuple:
    return tuple((ends[i], ends[-1] - ends[i + 1]) if j == dim else None for j in range(t.ndim))
  out = _zero_pad(tensors[0], placed(tensors[0], 0))
  for i, t in enumerate(tensors[1:], 1):
    mask = _zero_pad(Tensor.full(t.shape, True, dtypes.bool), placed(t, i))
    out = mask.where(_zero_pad(t, placed(t, i)), out)
  return out


@method
def stack(self: Tensor, *args: Tensor, dim: int = 0) -> Tensor:
  """self and args stacked along a new axis dim (Tensor.stack(a, b) or a.stack(b))."""
  tensors = (self, *args)
  if any(t.shape != tensors[0].shape for t in tensors): raise ValueError(f"stack needs equal shapes, got {[t.shape for t in tensors]}")
  dim = _dim(tensors[0], dim, extra=True)
  return tensors[0].unsqueeze(dim).cat(*(t.unsqueeze(dim) for t in tensors[1:]), dim=dim)


@method
def split(self: Tensor, sizes: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
  dim = _dim(self, dim)
  n = self.shape[dim]
  if isinstance(sizes, int):
    if sizes <= 0: raise ValueError(f"split size must be positive, got {sizes}")
    sizes = [min(sizes, n - i) for i in range(0, max(1, n), sizes)]
  if sum(sizes) != n: raise ValueError(f"split sizes {list(sizes)} do not sum to {n}")
  starts = list(itertools.accumulate(sizes, initial=0))
  return tuple(self.shrink(tuple((starts[i], starts[i + 1]) if j == dim else None for j in range(self.ndim))) for i in range(len(sizes)))


@method
def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
  if chunks <= 0: raise ValueError(f"chunk needs a positive number of chunks, got {chunks}")
  dim = _dim(self, dim)
  n = self.shape[dim]
  return list(self.split(-(-n // chunks) if n else [0] * chunks, dim=dim))


@method
def repeat(self: Tensor, *repeats: int) -> Tensor:
  reps = _ints(repeats)
  if len(reps) < self.ndim: raise ValueError(f"repeat {reps} needs at least {self.ndim} entries")
  if any(r < 0 for r in reps): raise ValueError(f"negative repeat in {reps}")
  base = (1,) * (len(reps) - self.ndim) + self.shape
  unsq = [d for r, s in zip(reps, base) for d in ([s] if r == 1 else [1, s])]
  expd = [d for r, s in zip(reps, base) for d in ([s] if r == 1 else [r, s])]
  return self.reshape(unsq).expand(expd).reshape([r * s for r, s in zip(reps, base)])


@method
def repeat_interleave(self: Tensor, repeats: int, dim: int | None = None) -> Tensor:
  x, dim = (self.flatten(), 0) if dim is None else (self, _dim(self, dim))
  shp = x.shape
  x = x.reshape(shp[:dim + 1] + (1,) + shp[dim + 1:]).expand(shp[:dim + 1] + (repeats,) + shp[dim + 1:])
  return x.reshape(shp[:dim] + (shp[dim] * repeats,) + shp[dim + 1:])


@method
def roll(self: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
  if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
  dims_t = (dims,) if isinstance(dims, int) else tuple(dims)
  shifts_t = (shifts,) if isinstance(shifts, int) else tuple(shifts)
  if len(dims_t) != len(shifts_t): raise ValueError(f"roll: {len(shifts_t)} shifts for {len(dims_t)} dims")
  dims_t = tuple(_dim(self, d) for d in dims_t)
  if 0 in self.shape: return self
  window: list = [None] * self.ndim
  for d, s in zip(dims_t, shifts_t):
    delta = self.shape[d] - s % self.shape[d]
    window[d] = (delta, delta + self.shape[d])
  return self.repeat(tuple(2 if i in dims_t else 1 for i in range(self.ndim))).shrink(tuple(window))


@method
def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
  d1, d2 = _dim(self, dim1), _dim(self, dim2)
  if d1 == d2: raise ValueError("diagonal: dim1 and dim2 must differ")
  x = self.permute(*[i for i in range(self.ndim) if i not in (d1, d2)], d1, d2)
  nones = (None,) * (x.ndim - 2)
  if offset >= 0: x = x.shrink(nones + (None, (min(offset, x.shape[-1]), x.shape[-1])))
  else: x = x.shrink(nones + ((min(-offset, x.shape[-2]), x.shape[-2]), None))
  d = min(x.shape[-2], x.shape[-1])
  if d <= 0: return x.reshape(x.shape[:-2] + (0,))
  x = x.shrink_to(nones + (d, d))
  return x.flatten(-2).pad_to(nones + (d * (d + 1),)).unflatten(-1, (d, d + 1)).shrink_to(nones + (None, 1)).squeeze(-1)


@method
def diag(self: Tensor) -> Tensor:
  if self.ndim != 1: raise ValueError(f"diag needs a 1-d tensor, got shape {self.shape}")
  n = self.shape[0]
  return self.unsqueeze(-1).pad_to((None, 1 + n)).flatten().shrink_to((n * n,)).reshape(n, n)


@method
def meshgrid(self: Tensor, *args: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
  if indexing not in ("ij", "xy"): raise ValueError(f"meshgrid indexing {indexing!r} is not 'ij' or 'xy'")
  tensors = (self, *args)
  if len(tensors) == 1: return tensors
  basis = tuple(range(len(tensors))) if indexing == "ij" else (1, 0) + tuple(range(2, len(tensors)))
  shaped = [t.reshape((-1,) + (1,) * (len(args) - i)) for i, t in zip(basis, tensors)]
  shape = tuple(max(s) for s in itertools.zip_longest(*(((1,) * (len(args) + 1 - t.ndim) + t.shape) for t in shaped)))
  return tuple(t.expand(shape) for t in shaped)


# ---- windows ----
def _tuple(x: int | Sequence[int], n: int) -> tuple[int, ...]:
  return (x,) * n if isinstance(x, int) else tuple(x)


@method
def _pool(self: Tensor, k_: tuple[int, ...], stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1) -> Tensor:
  """Windows of size k_ over the last len(k_) axes: shape (..., *out, *k_), by repeat and shrink (tinygrad's _pool)."""
  if self.ndim < len(k_): raise ValueError(f"cannot pool shape {self.shape} with kernel {k_}")
  s_, d_ = _tuple(stride, len(k_)), _tuple(dilation, len(k_))
  if not len(k_) == len(s_) == len(d_): raise ValueError(f"kernel {k_}, stride {s_} and dilation {d_} differ in length")
  if any(s <= 0 for s in s_) or any(d <= 0 for d in d_) or any(k <= 0 for k in k_):
    raise ValueError(f"kernel {k_}, stride {s_} and dilation {d_} must be positive")
  noop, i_ = [None] * (self.ndim - len(k_)), self.shape[-len(k_):]
  if any(d * (k - 1) + 1 > i for k, d, i in zip(k_, d_, i_)): raise ValueError(f"kernel {k_} (dilation {d_}) is larger than the input {i_}")
  o_ = [-(-(i - d * (k - 1)) // s) for i, d, k, s in zip(i_, d_, k_, s_)]
  f_ = [max(1, -(-(o * s - d) // i)) for o, s, i, d in zip(o_, s_, i_, d_)]
  x = self.repeat([1] * len(noop) + [-(-k * (i * f + d) // i) for k, i, d, f in zip(k_, i_, d_, f_)])
  x = x.shrink_to(noop + [k * (i * f + d) for k, i, d, f in zip(k_, i_, d_, f_)])
  x = x.reshape(noop + [v for k, i, d, f in zip(k_, i_, d_, f_) for v in (k, i * f + d)])
  x = x.shrink_to(noop + [v for k, o, s in zip(k_, o_, s_) for v in (k, o * s)]).reshape(noop + [v for k, o, s in zip(k_, o_, s_) for v in (k, o, s)])
  x = x.shrink_to(noop + [v for k, o in zip(k_, o_) for v in (k, o, 1)]).reshape(noop + [v for k, o in zip(k_, o_) for v in (k, o)])
  return x.permute(*range(len(noop)), *[len(noop) + i * 2 + 1 for i in range(len(i_))], *[len(noop) + i * 2 for i in range(len(i_))])


@method
def unfold(self: Tensor, dim: int, size: int, step: int) -> Tensor:
  """Windows of size along dim every step, appended as the last axis (torch's unfold)."""
  if size < 0: raise ValueError(f"unfold size must be >= 0, got {size}")
  if step <= 0: raise ValueError(f"unfold step must be > 0, got {step}")
  dim = _dim(self, dim)
  if size > self.shape[dim]: raise ValueError(f"unfold size {size} is larger than axis {dim} of size {self.shape[dim]}")
  perm = tuple(i for i in range(self.ndim) if i != dim) + (dim,)
  inv = tuple(sorted(range(self.ndim), key=lambda i: perm[i]))
  if size == 0:
    n = self.shape[dim] // step + 1
    return Tensor.full(tuple(self.shape[p] for p in perm[:-1]) + (n, 0), 0, self.dtype).permute(inv + (self.ndim,))
  return self.permute(perm)._pool((size,), step).permute(inv + (self.ndim,))

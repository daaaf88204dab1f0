"""The parity suite: small programs built with the frontend, each with its numpy-computed expected outputs.

    from programs import PROGRAMS, Program, float_programs, check_outputs
    prog = PROGRAMS["gemm"]()
    outs = evaluate(prog.root, prog.inputs)
    check_outputs(prog, outs)

`root` is a SINK; `inputs` maps BUFFER ids to arrays; `expected` holds one array per SINK entry, computed with
numpy directly (never through tinyspec); `exact` is True when every output is integer or bool. Shapes stay at a few
dozen elements so lowering and compiling every program stays fast. No program relies on undefined behaviour.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.uop import Ops, UOp


@dataclass(frozen=True)
class Program:
  name: str
  root: UOp
  inputs: dict[int, np.ndarray]
  expected: list[np.ndarray]
  exact: bool


PROGRAMS: dict[str, Callable[[], Program]] = {}
F32 = np.float32


def program(fn: Callable[[], tuple[list[Tensor], list[np.ndarray]]]) -> Callable[[], Program]:
  """Register a builder returning (output tensors, expected arrays) under the function's name."""
  name = fn.__name__

  def build() -> Program:
    outs, expected = fn()
    root = Tensor.sink(*outs)
    expected = [np.asarray(e) for e in expected]
    exact = all(e.dtype.kind in "biu" for e in expected)
    return Program(name, root, inputs_of(root), expected, exact)
  build.__name__ = name
  PROGRAMS[name] = build
  return build


def float_programs() -> dict[str, Callable[[], Program]]:
  """The programs with a float output (compared with a tolerance)."""
  return {n: b for n, b in PROGRAMS.items() if not b().exact}


def check_outputs(prog: Program, outs: list, rtol: float = 1e-5, atol: float = 1e-6) -> None:
  """Assert outs (one per SINK entry; flat or shaped) equal prog.expected: exactly for ints and bools."""
  assert len(outs) == len(prog.expected), f"{prog.name}: {len(outs)} outputs, expected {len(prog.expected)}"
  for i, (o, e) in enumerate(zip(outs, prog.expected)):
    assert o is not None, f"{prog.name}: output {i} is None"
    o = np.asarray(o)
    assert o.size == e.size, f"{prog.name}: output {i} has {o.size} elements, expected {e.size}"
    o = o.reshape(e.shape)
    if e.dtype.kind in "biu":
      assert o.dtype == e.dtype, f"{prog.name}: output {i} dtype {o.dtype}, expected {e.dtype}"
      np.testing.assert_array_equal(o, e, err_msg=f"{prog.name}: output {i}")
    else:
      np.testing.assert_allclose(o.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=f"{prog.name}: output {i}")


def _rng(seed: int) -> np.random.Generator:
  return np.random.default_rng(seed)


def _randf(seed: int, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
  return _rng(seed).uniform(lo, hi, size=shape).astype(F32)


def _randi(seed: int, *shape: int, lo: int = -20, hi: int = 20, dtype=np.int32) -> np.ndarray:
  return _rng(seed).integers(lo, hi, size=shape).astype(dtype)


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """C division (truncating), computed with Python integers."""
  return np.array([int(x / y) if abs(int(x)) < 2**52 else (abs(int(x)) // abs(int(y))) * (1 if (x < 0) == (y < 0) else -1)
                   for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())], dtype=a.dtype).reshape(a.shape)


def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  return np.array([x - y * int(x / y) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())], dtype=a.dtype).reshape(a.shape)


# ---- elementwise ----
@program
def add_broadcast():
  a, b = _randf(1, 2, 3), _randf(2, 3)
  return [Tensor(a) + Tensor(b), Tensor(a) + 1.5], [a + b, a + F32(1.5)]


@program
def sub_mul_neg():
  a, b = _randf(3, 4, 3), _randf(4, 4, 3)
  return [Tensor(a) - Tensor(b), Tensor(a) * Tensor(b), -Tensor(a), 2.0 - Tensor(a)], [a - b, a * b, -a, F32(2) - a]


@program
def true_div():
  a, b = _randf(5, 6), _randf(6, 6, lo=0.5, hi=3.0)
  ia, ib = np.array([7, -7, 3, 10], np.int32), np.array([2, 2, 4, -3], np.int32)
  return [Tensor(a) / Tensor(b), Tensor(ia) / Tensor(ib)], [a / b, ia.astype(F32) / ib.astype(F32)]


@program
def exp2_log2():
  a, b = _randf(7, 8), _randf(8, 8, lo=0.1, hi=5.0)
  return [Tensor(a).exp2(), Tensor(b).log2()], [np.exp2(a), np.log2(b)]


@program
def exp_log():
  a, b = _randf(9, 3, 4), _randf(10, 3, 4, lo=0.1, hi=5.0)
  return [Tensor(a).exp(), Tensor(b).log()], [np.exp(a), np.log(b)]


@program
def sqrt_recip():
  a = _randf(11, 10, lo=0.1, hi=9.0)
  return [Tensor(a).sqrt(), Tensor(a).reciprocal()], [np.sqrt(a), F32(1) / a]


@program
def sin_cos():
  a = _randf(12, 12, lo=-3.0, hi=3.0)
  return [Tensor(a).sin(), Tensor(a).cos()], [np.sin(a), np.cos(a)]


@program
def activations():
  a = _randf(13, 3, 5, lo=-4.0, hi=4.0)
  t = Tensor(a)
  return [t.relu(), t.sigmoid(), t.tanh()], [np.maximum(a, 0), 1 / (1 + np.exp(-a)), np.tanh(a)]


@program
def maximum_minimum():
  a, b = _randf(14, 2, 4), _randf(15, 4)
  ia, ib = _randi(16, 6), _randi(17, 6)
  ua, ub = _randi(18, 6, lo=0, hi=250, dtype=np.uint8), _randi(19, 6, lo=0, hi=250, dtype=np.uint8)
  return ([Tensor(a).maximum(Tensor(b)), Tensor(a).minimum(Tensor(b)), Tensor(ia).maximum(Tensor(ib)), Tensor(ia).minimum(Tensor(ib)),
           Tensor(ua).minimum(Tensor(ub))],
          [np.maximum(a, b), np.minimum(a, b), np.maximum(ia, ib), np.minimum(ia, ib), np.minimum(ua, ub)])


@program
def abs_trunc():
  a = np.array([-2.5, -0.5, 0.0, 0.7, 3.9, -7.2], F32)
  ia = np.array([-5, 0, 3, -1], np.int32)
  return [Tensor(a).abs(), Tensor(a).trunc(), Tensor(ia).abs()], [np.abs(a), np.trunc(a), np.abs(ia)]


@program
def comparisons():
  a, b = np.array([1, 5, -3, 4, 4], np.int32), np.array([2, 5, -4, 4, 0], np.int32)
  fa, fb = np.array([0.5, -1.0, 2.0], F32), np.array([0.5, 1.0, -2.0], F32)
  ta, tb = Tensor(a), Tensor(b)
  return ([ta < tb, ta > tb, ta <= tb, ta >= tb, ta == tb, ta != tb, Tensor(fa) < Tensor(fb), Tensor(fa) == Tensor(fb)],
          [a < b, a > b, a <= b, a >= b, a == b, a != b, fa < fb, fa == fb])


@program
def where_select():
  c = np.array([[True, False, True], [False, False, True]])
  a, b = _randf(20, 2, 3), _randf(21, 3)
  return [Tensor(c).where(Tensor(a), Tensor(b)), Tensor(c).where(Tensor(a), 0.0)], [np.where(c, a, b), np.where(c, a, F32(0))]


@program
def bool_logic():
  a = np.array([True, True, False, False])
  b = np.array([True, False, True, False])
  ta, tb = Tensor(a), Tensor(b)
  return [ta & tb, ta | tb, ta ^ tb, ta.logical_not(), ~ta], [a & b, a | b, a ^ b, ~a, ~a]


@program
def bitwise_int():
  a, b = np.array([12, -7, 255, 0x0F0F, -1], np.int32), np.array([10, 3, 128, 0x00FF, 77], np.int32)
  ta, tb = Tensor(a), Tensor(b)
  return [ta & tb, ta | tb, ta ^ tb, ~ta], [a & b, a | b, a ^ b, ~a]


# ---- integer edge cases ----
@program
def idiv_mod_negative():
  a = np.array([-7, 7, -7, 7, -1, 0, 5, -8, 9, -9], np.int32)
  b = np.array([2, -2, -2, 2, 3, 3, -5, 3, 4, 4], np.int32)
  # the frontend's // and % floor as Python's do (tinygrad's Tensor semantics), built on the IR's truncating IDIV/MOD
  return [Tensor(a) // Tensor(b), Tensor(a) % Tensor(b), Tensor(a) // 3, Tensor(a) % 3], \
         [np.floor_divide(a, b), np.mod(a, b), np.floor_divide(a, 3), np.mod(a, 3)]


@program
def idiv_mod_int64():
  a = np.array([-(2**40) - 3, 2**40 + 5, -17, 17], np.int64)
  b = np.array([7, -7, 5, -5], np.int64)
  return [Tensor(a) // Tensor(b), Tensor(a) % Tensor(b)], [np.floor_divide(a, b), np.mod(a, b)]


@program
def idiv_mod_small_ints():
  a = np.array([-100, 100, -128, 127, 9], np.int8)
  b = np.array([7, -7, 3, -3, 2], np.int8)
  ua, ub = np.array([200, 255, 17, 3], np.uint8), np.array([7, 16, 5, 9], np.uint8)
  return [Tensor(a) // Tensor(b), Tensor(a) % Tensor(b), Tensor(ua) // Tensor(ub), Tensor(ua) % Tensor(ub)], \
         [np.floor_divide(a, b), np.mod(a, b), ua // ub, ua % ub]


@program
def shifts():
  a = np.array([1, 3, 100, 0x1234, 7], np.int32)
  n = np.array([0, 4, 7, 12, 31 - 3], np.int32)
  neg = np.array([-1, -8, -100, -(2**20)], np.int32)
  k = np.array([1, 2, 3, 5], np.int32)
  u = np.array([0xF0, 0x81, 0xFF, 0x01], np.uint8)
  ku = np.array([1, 3, 7, 4], np.uint8)
  exp_shl = np.array([int(x) << int(s) for x, s in zip(a, n)], np.int64).astype(np.int32)  # wraps 7 << 28
  return ([Tensor(a) << Tensor(n), Tensor(neg) >> Tensor(k), Tensor(a) >> 1, Tensor(u) << Tensor(ku), Tensor(u) >> Tensor(ku)],
          [exp_shl, np.array([int(x) >> int(s) for x, s in zip(neg, k)], np.int32), a // 2,
           np.array([(int(x) << int(s)) & 0xFF for x, s in zip(u, ku)], np.uint8), np.array([int(x) >> int(s) for x, s in zip(u, ku)], np.uint8)])


@program
def int8_wrap():
  a = np.array([100, 127, -128, -100, 64], np.int8)
  b = np.array([100, 1, -1, -100, 2], np.int8)
  wrap = lambda v: ((v + 128) % 256 - 128).astype(np.int8)
  ai, bi = a.astype(np.int64), b.astype(np.int64)
  return [Tensor(a) + Tensor(b), Tensor(a) * Tensor(b), Tensor(a) - Tensor(b), -Tensor(a)], \
         [wrap(ai + bi), wrap(ai * bi), wrap(ai - bi), wrap(-ai)]


@program
def uint8_wrap():
  a = np.array([0, 1, 200, 255, 16], np.uint8)
  b = np.array([1, 2, 100, 255, 16], np.uint8)
  ai, bi = a.astype(np.int64), b.astype(np.int64)
  return [Tensor(a) - Tensor(b), Tensor(a) + Tensor(b), Tensor(a) * Tensor(b)], \
         [((ai - bi) % 256).astype(np.uint8), ((ai + bi) % 256).astype(np.uint8), ((ai * bi) % 256).astype(np.uint8)]


@program
def uint32_wrap():
  a = np.array([0, 4000000000, 2**32 - 1, 123456789], np.uint32)
  b = np.array([1, 500000000, 2, 1000], np.uint32)
  ai, bi = a.astype(np.int64), b.astype(np.int64)
  return [Tensor(a) - Tensor(b), Tensor(a) + Tensor(b), Tensor(a) * Tensor(b)], \
         [((ai - bi) % 2**32).astype(np.uint32), ((ai + bi) % 2**32).astype(np.uint32), ((ai * bi) % 2**32).astype(np.uint32)]


@program
def casts_int():
  i = np.array([-1, 255, 256, -129, 1000, 127], np.int32)
  u = np.array([0, 127, 128, 255], np.uint8)
  wrap8 = lambda v: ((v.astype(np.int64) + 128) % 256 - 128).astype(np.int8)
  return ([Tensor(i).cast(dtypes.int8), Tensor(i).cast(dtypes.uint8), Tensor(u).cast(dtypes.int8), Tensor(u).cast(dtypes.int32),
           Tensor(i).cast(dtypes.uint32), Tensor(i).cast(dtypes.int64), Tensor(i).cast(dtypes.bool), Tensor(u).cast(dtypes.bool).cast(dtypes.int32)],
          [wrap8(i), (i.astype(np.int64) % 256).astype(np.uint8), wrap8(u), u.astype(np.int32),
           (i.astype(np.int64) % 2**32).astype(np.uint32), i.astype(np.int64), i != 0, (u != 0).astype(np.int32)])


@program
def casts_float():
  f = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.9, -100.9], F32)
  fp = np.array([0.0, 1.9, 200.5, 254.99], F32)
  i = np.array([-3, 0, 7, 16777217], np.int32)
  u = np.array([0, 4000000000], np.uint32)
  return ([Tensor(f).cast(dtypes.int32), Tensor(fp).cast(dtypes.uint8), Tensor(f).cast(dtypes.int8), Tensor(i).cast(dtypes.float32),
           Tensor(u).cast(dtypes.float32), Tensor(f).cast(dtypes.float64), Tensor(f).cast(dtypes.bool)],
          [np.trunc(f).astype(np.int32), np.trunc(fp).astype(np.uint8), np.trunc(f).astype(np.int8), i.astype(F32),
           u.astype(F32), f.astype(np.float64), f != 0])


@program
def bitcast_bits():
  f = np.array([1.0, -2.0, 0.5, 0.0], F32)
  i = np.array([0x3F800000, -1082130432, 7], np.int32)
  return [Tensor(f).bitcast(dtypes.int32), Tensor(f).bitcast(dtypes.uint32), Tensor(i).bitcast(dtypes.float32)], \
         [f.view(np.int32), f.view(np.uint32), i.view(F32)]


@program
def float64_math():
  a = _rng(22).uniform(0.1, 3.0, 6)
  t = Tensor(a)
  return [t * t + 1.0, t.sqrt(), t.log2(), (t - 1.0).sin()], [a * a + 1.0, np.sqrt(a), np.log2(a), np.sin(a - 1.0)]


# ---- creation ----
@program
def full_zeros_ones():
  a = _randf(23, 2, 3)
  return [Tensor.full((2, 3), 2.5), Tensor.zeros((3,)), Tensor.ones((2, 2), dtypes.int32), Tensor(a) * Tensor.full((2, 3), 3.0)], \
         [np.full((2, 3), 2.5, F32), np.zeros(3, F32), np.ones((2, 2), np.int32), a * F32(3)]


@program
def arange():
  return [Tensor.arange(10), Tensor.arange(3, 20, 4), Tensor.arange(5, 0, -1), Tensor.arange(0.0, 2.0, 0.25)], \
         [np.arange(10, dtype=np.int32), np.arange(3, 20, 4, dtype=np.int32), np.arange(5, 0, -1, dtype=np.int32),
          np.arange(0.0, 2.0, 0.25, dtype=F32)]


# ---- movement ----
@program
def reshape_permute():
  a = _randf(24, 2, 3, 4)
  t = Tensor(a)
  return [t.reshape(6, 4), t.permute(2, 0, 1), t.transpose(0, 2).reshape(-1), t.T], \
         [a.reshape(6, 4), a.transpose(2, 0, 1), a.transpose(2, 1, 0).reshape(-1), a.swapaxes(0, 1)]  # .T swaps the first two axes, as in tinygrad


@program
def expand_middle():
  a = _randf(25, 2, 1, 3)
  b = _randf(26, 4, 1)
  return [Tensor(a).expand(2, 4, 3), Tensor(b).expand(3, 4, 5), Tensor(a) * Tensor(b)], \
         [np.broadcast_to(a, (2, 4, 3)), np.broadcast_to(b, (3, 4, 5)), a * b]


@program
def pad_shrink():
  a = _randf(27, 3, 4)
  t = Tensor(a)
  return [t.pad(((1, 0), (2, 1))), t.shrink(((1, 3), (0, 2))), t.pad(((1, 1), (1, 1))).shrink(((1, 4), (1, 5))) + 1.0], \
         [np.pad(a, ((1, 0), (2, 1))), a[1:3, 0:2], a + F32(1)]


@program
def flip_axes():
  a = _randi(28, 3, 4)
  t = Tensor(a)
  return [t.flip(0), t.flip((0, 1)), t.flip(1) - t], [a[::-1], a[::-1, ::-1], a[:, ::-1] - a]


@program
def slicing():
  a = _randi(29, 4, 5)
  t = Tensor(a)
  return [t[1], t[:, -1], t[1:3, 2:], t[::-1, 1], t[-2:, ::-1], t[..., 0]], [a[1], a[:, -1], a[1:3, 2:], a[::-1, 1], a[-2:, ::-1], a[..., 0]]


# ---- reductions ----
@program
def reductions_float():
  a = _randf(30, 3, 4, 2)
  t = Tensor(a)
  return [t.sum(), t.sum(1), t.sum((0, 2), keepdim=True), t.max(0), t.min((1, 2)), t.mean(1, keepdim=True), t.prod(2)], \
         [a.sum(), a.sum(1), a.sum((0, 2), keepdims=True), a.max(0), a.min((1, 2)), a.mean(1, keepdims=True), a.prod(2)]


@program
def reductions_int():
  a = _randi(31, 3, 4)
  u = _randi(32, 5, lo=0, hi=200, dtype=np.uint8)
  t = Tensor(a)
  return [t.sum(0), t.max(1, keepdim=True), t.min(), t.prod(1), Tensor(u).max(), Tensor(u).min(), (t > 0).sum()], \
         [a.sum(0, dtype=np.int32), a.max(1, keepdims=True), a.min(), a.prod(1, dtype=np.int32), u.max(), u.min(), (a > 0).sum(dtype=np.int32)]


@program
def argmax():
  a = np.array([[1.0, 3.0, 3.0, -1.0], [5.0, 0.0, 5.0, 7.0], [-2.0, -2.0, -2.0, -2.0]], F32)
  return [Tensor(a).argmax(1), Tensor(a).argmax(0)], [a.argmax(1).astype(np.int32), a.argmax(0).astype(np.int32)]


@program
def prefix_sum():
  a = _randi(33, 9, lo=-5, hi=10)
  f = _randf(34, 3, 5)
  return [Tensor(a).cumsum(), Tensor(f).cumsum(1)], [np.cumsum(a, dtype=np.int32), np.cumsum(f, 1, dtype=F32)]


@program
def cumsum_axis0():
  a = _randi(35, 4, 3)
  return [Tensor(a).cumsum(0)], [np.cumsum(a, 0, dtype=np.int32)]


# ---- composites ----
@program
def gemm():
  a, b = _randf(36, 4, 3), _randf(37, 3, 5)
  c = _randf(38, 5)
  return [Tensor(a) @ Tensor(b), Tensor(a) @ Tensor(b) + Tensor(c), Tensor(a[0]) @ Tensor(b)], [a @ b, a @ b + c, a[0] @ b]


@program
def gather_onehot():
  table = _randf(39, 5, 3)
  idx = np.array([4, 0, 2, 2], np.int32)
  onehot = Tensor(idx).reshape(4, 1) == Tensor.arange(5).reshape(1, 5)
  out = onehot.reshape(4, 5, 1).where(Tensor(table).reshape(1, 5, 3), 0.0).sum(1)
  return [out], [table[idx]]


@program
def scatter_add():
  base = _randf(40, 5)
  vals = _randf(41, 6)
  idx = np.array([1, 3, 1, 0, 4, 1], np.int32)
  hit = Tensor(idx).reshape(6, 1) == Tensor.arange(5).reshape(1, 5)
  out = Tensor(base) + hit.where(Tensor(vals).reshape(6, 1), 0.0).sum(0)
  exp = base.copy()
  np.add.at(exp, idx, vals)
  return [out], [exp]


@program
def softmax():
  a = _randf(42, 3, 6, lo=-3.0, hi=3.0)
  e = np.exp(a - a.max(-1, keepdims=True))
  return [Tensor(a).softmax(), Tensor(a).softmax(0)], [e / e.sum(-1, keepdims=True), np.exp(a) / np.exp(a).sum(0, keepdims=True)]


@program
def log_softmax():
  a = _randf(43, 2, 5, lo=-3.0, hi=3.0)
  m = a - a.max(-1, keepdims=True)
  return [Tensor(a).log_softmax()], [m - np.log(np.exp(m).sum(-1, keepdims=True))]


@program
def layernorm():
  a = _randf(44, 3, 6)
  g, b = _randf(45, 6), _randf(46, 6)
  d = a - a.mean(-1, keepdims=True)
  exp = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g + b
  return [Tensor(a).layernorm() * Tensor(g) + Tensor(b)], [exp]


def _conv2d(x: Tensor, w: Tensor, pad: int) -> Tensor:
  """conv2d (N, Cin, H, W) x (Cout, Cin, KH, KW) with stride 1, by padding and reshape windows."""
  n, cin, h, wd = x.shape
  cout, _, kh, kw = w.shape
  xp = x.pad((None, None, (pad, pad), (pad, pad)))
  win = xp.windows(kw)                           # (n, cin, H+2p, kw, ow)
  win = win.permute(0, 1, 3, 4, 2).windows(kh)   # (n, cin, kw, ow, kh, oh)
  oh, ow = win.shape[-1], win.shape[3]
  win = win.permute(0, 1, 4, 2, 5, 3).reshape(n, 1, cin, kh, kw, oh, ow)
  return (win * w.reshape(1, cout, cin, kh, kw, 1, 1)).sum((2, 3, 4))


@program
def conv2d():
  x, w = _randf(47, 1, 2, 4, 4), _randf(48, 3, 2, 3, 3)
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  exp = np.zeros((1, 3, 4, 4), F32)
  for o in range(3):
    for i in range(4):
      for j in range(4): exp[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[o]).sum()
  return [_conv2d(Tensor(x), Tensor(w), 1)], [exp]


@program
def mlp2():
  x, w1, b1, w2, b2 = _randf(49, 4, 3), _randf(50, 3, 5), _randf(51, 5), _randf(52, 5, 2), _randf(53, 2)
  h = (Tensor(x) @ Tensor(w1) + Tensor(b1)).relu()
  return [h @ Tensor(w2) + Tensor(b2)], [np.maximum(x @ w1 + b1, 0) @ w2 + b2]


# ---- value calls ----
@function
def _mul_sub(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  return a * b, a - b


@program
def call_two_returns():
  a, b = _randf(54, 2, 3), _randf(55, 2, 3)
  p, q = _mul_sub(Tensor(a), Tensor(b))
  return [p, q, p + q], [a * b, a - b, a * b + (a - b)]


@function
def _outer(a: Tensor) -> Tensor:
  p, q = _mul_sub(a, a + 1.0)
  return p.sum(0) + q.max(0)


@program
def call_nested():
  a = _randf(56, 3, 4)
  return [_outer(Tensor(a))], [(a * (a + 1)).sum(0) + (a - (a + 1)).max(0)]


@program
def call_twice():
  a, b, c = _randf(57, 5), _randf(58, 5), _randf(59, 5)
  ta, tb = Tensor(a), Tensor(b)
  p1, q1 = _mul_sub(ta, tb)
  p2, _ = _mul_sub(tb, Tensor(c))
  p3, _ = _mul_sub(ta, tb)  # identical construction: the same CALL node
  assert p3.uop is p1.uop
  return [p1 + p2, q1, p3], [a * b + b * c, a - b, a * b]


@program
def call_captured():
  w, bias = _randf(60, 3, 2), _randf(61, 2)
  tw, tb = Tensor(w), Tensor(bias)

  @function
  def layer(x: Tensor) -> Tensor:
    return (x @ tw + tb).relu()
  x1, x2 = _randf(62, 4, 3), _randf(63, 2, 3)
  return [layer(Tensor(x1)), layer(Tensor(x2)).sum()], [np.maximum(x1 @ w + bias, 0), np.maximum(x2 @ w + bias, 0).sum()]


@program
def call_int():
  a, b = _randi(64, 6), _randi(65, 6, lo=1, hi=9)

  @function
  def divmod_(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    return x // y, x % y
  q, r = divmod_(Tensor(a), Tensor(b))
  return [q, r, q * Tensor(b) + r], [np.floor_divide(a, b), np.mod(a, b), a]


# ---- precompiled calls (@function(precompile=True)): bodies stored into output PARAMs, lowered into their own kernels ----
@function(precompile=True)
def _gelu_sum(x: Tensor) -> Tensor:
  return (x * (x * 1.702).sigmoid()).sum(1)


@function(precompile=True)
def _affine(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
  return x * 2.0 + y, (x - y).sum(0)


def _np_gelu_sum(x: np.ndarray) -> np.ndarray:
  return (x * (1 / (1 + np.exp(-x * 1.702)))).sum(1)


@program
def precompiled_call():
  a = _randf(80, 3, 4)
  return [_gelu_sum(Tensor(a)) + 1.0], [_np_gelu_sum(a) + 1]


@program
def precompiled_two_outputs_chained():
  # a computed arg (realized first), two outputs, and one call's output fed to the next call
  a, b = _randf(81, 3, 4), _randf(82, 3, 4)
  s, d = _affine(Tensor(a), Tensor(b) * 3.0)
  s2, _ = _affine(s, Tensor(a))
  return [s, d, _gelu_sum(s2), s2.max()], [a * 2 + b * 3, (a - b * 3).sum(0), _np_gelu_sum((a * 2 + b * 3) * 2 + a), ((a * 2 + b * 3) * 2 + a).max()]


# ---- effects ----
@program
def assign_chain():
  x0, y = _randf(66, 2, 3), _randf(67, 2, 3)
  x, ty = Tensor(x0), Tensor(y)
  x += ty
  x += ty
  return [x, x * 2.0], [x0 + y + y, (x0 + y + y) * 2]


@program
def assign_int_view():
  x0 = _randi(68, 2, 4)
  x = Tensor(x0)
  x.assign(x * 3 - 1)
  row = x[1]
  return [x, row + 1], [x0 * 3 - 1, (x0 * 3 - 1)[1] + 1]


@program
def contiguous_detach():
  a = _randf(69, 3, 4)
  t = (Tensor(a) * 2.0).contiguous()
  return [t.T.detach() + 1.0, t.sum()], [(a * 2).T + 1, (a * 2).sum()]


@program
def mixed_promotion():
  i, f, u = np.array([1, -2, 3], np.int32), np.array([0.5, 0.25, -1.0], F32), np.array([250, 3, 7], np.uint8)
  ti, tf, tu = Tensor(i), Tensor(f), Tensor(u)
  return [ti + tf, tu + ti, ti * 2, tf * 2, tu + 10], [i.astype(F32) + f, u.astype(np.int32) + i, i * 2, f * 2, (u + np.uint8(10)).astype(np.uint8)]


@program
def sum_of_squares_mean():
  a = _randf(70, 8)
  t = Tensor(a)
  return [t.square().mean().sqrt(), t.var()], [np.sqrt((a * a).mean()), a.var(ddof=1)]  # correction=1 by default, as in tinygrad


assert len(PROGRAMS) >= 40, len(PROGRAMS)
__all__ = ["Program", "PROGRAMS", "float_programs", "check_outputs", "c_div", "c_mod", "math"]


# ---- hand-built tensor graphs: views, assigns, value calls, opaque kernel calls, copies (all lowering modes) ----
T32 = dtypes.float32  # the IR dtype (F32 above is numpy's)


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, dtypes.void, xs)
def tup(*xs: UOp) -> UOp: return UOp(Ops.TUPLE, dtypes.void, xs)
def call(body: UOp, *args: UOp) -> UOp: return UOp(Ops.CALL, dtypes.void, (body, *args))
def fconst(v: float, shape: tuple = ()) -> UOp:
  c = UOp.const(T32, v)
  return c.expand(shape) if shape else c


class Local:
  """A hand-built program: its tensor graph, inputs {buffer id: array} and the numpy results (None for effects)."""
  def __init__(self, name: str, root: UOp, inputs: dict, expected: list):
    self.name, self.root, self.inputs, self.expected, self.exact = name, root, inputs, expected, False


def _hand_built_programs() -> list[Local]:
  rng = np.random.default_rng(0)
  out = []
  av, bv, cv = rng.standard_normal(6).astype(np.float32), rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
  a, b, c = UOp.buffer(T32, 6), UOp.buffer(T32, 3), UOp.buffer(T32, 3)
  ins = {a.arg.id: av, b.arg.id: bv, c.arg.id: cv}
  A, B = av.reshape(2, 3), bv
  x = a.reshape((2, 3))

  s = (x + b.expand((2,))).permute((1, 0)).pad(((1, 5), (0, 4)))
  nps = np.pad((A + B).T, ((1, 1), (0, 2)))
  out.append(Local("views_and_reduce", sink(s, s.reduce(Ops.ADD, 1), x.flip((True, False)).shrink(((0, 1), (1, 2)))), ins,
                   [nps, nps.sum(axis=0), A[::-1][0:1, 1:3]]))
  out.append(Local("reduce_max_of_reduce", sink(x.reduce(Ops.MAX, 1).reduce(Ops.ADD, 1)), ins, [np.array(A.max(axis=0).sum())]))
  out.append(Local("input_is_output", sink(a, x, b.reshape((1, 3))), ins, [av, av, bv]))
  out.append(Local("contiguous_then_view", sink(UOp(Ops.CONTIGUOUS, T32, (x * x,)).permute((1, 0))), ins, [(A * A).T]))

  # assign: x1 = x + 1 in place; the old contents are read by another value listed before and after it
  a1 = a.after(a.store(a + fconst(1.0, (6,))))
  out.append(Local("assign_read_old_then_new", sink(a + a1, a1), ins, [av + av + 1, av + 1]))
  out.append(Local("assign_new_then_old", sink(a1, a * fconst(2.0, (6,))), ins, [av + 1, av * 2]))
  out.append(Local("assign_non_pointwise", sink(a.after(a.store(a.flip((True,))))), ins, [av[::-1]]))
  # a partial write through a view, then a read of the whole buffer
  part = x.shrink(((1, 1), (0, 3)))
  a2 = a.after(a.reshape((2, 3)).shrink(((1, 1), (0, 3))).store(part * fconst(3.0, (1, 3))))
  out.append(Local("assign_through_shrink", sink(a2), ins, [np.concatenate([av[:3], av[3:] * 3])]))
  # two assigns that each need the other's old contents: only a snapshot can order them
  c1 = c.after(c.store(fconst(5.0, (3,))))
  b1 = b.after(b.store(fconst(7.0, (3,))))
  out.append(Local("assign_cycle_needs_snapshot", sink(b + c1, c + b1), ins, [bv + 5, cv + 7]))
  # a chain of assigns, and an effect entry
  b2 = b1.after(b1.store(b1 * b1))
  out.append(Local("assign_chain", sink(b2, c.store(b2 + c)), ins, [np.full(3, 49, np.float32), None]))

  # value calls: two outputs, an arg that is a strided view, a nested call whose PARAM 0 is another call's PARAM 0
  p0, p1 = UOp.param(0, T32, 6), UOp.param(1, T32, 3)
  body = tup((p0.reshape((2, 3)) * p1.expand((2,))).reduce(Ops.ADD, 1), p0 + p0)
  cl = call(body, x.permute((1, 0)).reshape((6,)), b)
  At = A.T.reshape(6)
  out.append(Local("call_two_outputs", sink(cl.gettuple(0), cl.gettuple(1) + a), ins, [(At.reshape(2, 3) * B).sum(0), At + At + av]))
  inner = call(tup(p0.reshape((2, 3)).permute((1, 0)) * fconst(2.0, (3, 2))), p0 + fconst(1.0, (6,)))
  outer = call(tup(inner.gettuple(0).reduce(Ops.ADD, 1), p0), a)
  out.append(Local("call_nested", sink(outer.gettuple(0), outer.gettuple(1)), ins, [((A + 1).T * 2).sum(0), av]))

  # an opaque kernel call that adds 1 to its arg in place; the old contents are read too
  p4 = UOp.param(0, T32, 3)
  r = UOp.range(3, 0)
  kbody = sink(p4.index(r).store(p4.index(r).load() + UOp.const(T32, 1.0)).end(r))
  kcall = call(kbody, c)
  cnew = c.after(kcall)
  out.append(Local("opaque_kernel_call", sink(cnew * cnew, c + c, kcall), ins, [(cv + 1) ** 2, cv + cv, None]))
  # a store through a PAD view writes only the elements that are not padding
  pad_target = a.reshape((2, 3)).shrink(((0, 2), (1, 2))).pad(((0, 2), (1, 3)))
  ap = a.after(pad_target.store(fconst(9.0, (2, 3))))
  out.append(Local("store_through_pad_view", sink(ap), ins, [np.where(np.arange(6) % 3 != 0, 9, av).astype(np.float32)]))

  out.append(Local("copy", sink(UOp(Ops.COPY, T32, (x + x,), "CPU:1"), UOp(Ops.COPY, T32, (a,), "CPU:1")), ins, [A + A, av]))
  iv = np.arange(-6, 6, dtype=np.int32)
  ib = UOp.buffer(dtypes.int32, 12)
  ix = ib.reshape((3, 4))
  out.append(Local("int_idiv_mod", sink((ix // UOp.const(dtypes.int32, 3).expand((3, 4))).reduce(Ops.ADD, 1), ix.pad(((1, 5), (2, 7)))),
                   {ib.arg.id: iv}, [np.trunc(iv.reshape(3, 4) / 3).astype(np.int32).sum(0), np.pad(iv.reshape(3, 4), ((1, 1), (2, 1)))]))
  out[-1].exact = True
  out.append(Local("scalar_and_empty", sink(fconst(2.5), x.shrink(((0, 0), (0, 3))), x.reduce(Ops.ADD, 2)), ins,
                   [np.array(2.5, np.float32), np.zeros((0, 3), np.float32), A.sum()]))
  return out


def _programs() -> list[tuple[str, Callable]]:
  """(name, builder) of every parity program: the shared suite, then the hand-built ones above."""
  local = [(p.name, (lambda p=p: p)) for p in _hand_built_programs()]
  return sorted(PROGRAMS.items()) + local


ALL_PROGRAMS = _programs()
MODES = [("inline", "minimal"), ("inline", "all"), ("precompile", "minimal"), ("precompile", "all")]

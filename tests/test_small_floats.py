"""The frontend's small floats (float16, bfloat16, float8_e4m3fn, float8_e5m2): matmul and conv2d accumulating in
float32, an fp8 quantize / dequantize round trip and saturation, fp8 arithmetic, reductions and gradients through
casts, on every backend; and promotion, reductions and products checked dtype by dtype against tinygrad 0.14 itself.

Expected numbers come from numpy and ml_dtypes, computed here: inputs widened to float32, numpy's matmul or an explicit
convolution in float32, rounded to the dtype by ml_dtypes' astype (with a clip to the largest finite value where the
fp8 dtypes saturate, docs/spec.md "Small floats"); tolerances are a stated multiple of the dtype's eps."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tinyspec.dtype import DType, dtypes, finfo
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.runtime import run
from tinyspec.spec import Stage, check
from tinyspec.uop import GroupOp, Ops

F32 = np.float32
HALVES = [dtypes.float16, dtypes.bfloat16]
FP8S = list(dtypes.fp8s)
BACKENDS = ["reference", "cpu", "opencl"]


def _run(backend: str, request, *outs: Tensor) -> list[np.ndarray]:
  if backend == "opencl": request.getfixturevalue("opencl")
  root = Tensor.sink(*outs)
  assert check(root, Stage.TENSOR) == []
  return [np.asarray(g).reshape(t.shape) for g, t in zip(run(root, inputs_of(root), backend), outs)]


def _reduces(t: Tensor) -> list:
  return [u for u in t.uop.toposort() if u.op is Ops.REDUCE]


def _wide(a: np.ndarray) -> np.ndarray: return np.asarray(a).astype(F32)


def _data(dt: DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
  """Normal values stored in dt (ml_dtypes' rounding), so the inputs are exact in the dtype."""
  return np.random.default_rng(seed).standard_normal(shape).astype(F32).astype(dt.np)


# ---- products accumulate in float32 ----
# a product rounded to the dtype (eps/2 of it), the float32 sum, and the result rounded on both sides (eps/2 each):
# within 2 eps of the sum of the magnitudes of the products
PRODUCT_EPS = 2


def _within_products(got: np.ndarray, want: np.ndarray, magnitudes: np.ndarray, dt: DType) -> None:
  err = np.abs(_wide(got) - _wide(want))
  bound = PRODUCT_EPS * float(finfo(dt).eps) * magnitudes
  assert (err <= bound).all(), f"{dt.name}: error {err.max()} beyond {PRODUCT_EPS} eps of the products' magnitudes"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_matmul_accumulates_in_float32(dt: DType, backend: str, request) -> None:
  x, w = _data(dt, (5, 48), 1), _data(dt, (48, 7), 2)
  # 1024 ones: a float16 or bfloat16 accumulator stops counting at 2048 and 256, float32 reaches 1024 exactly
  ones = np.ones((1, 1024), dt.np)
  m, n = Tensor(x) @ Tensor(w), Tensor(ones) @ Tensor(ones.T)
  assert m.dtype is dt and n.dtype is dt
  assert [(r.dtype, r.arg[0]) for r in _reduces(m)] == [(dtypes.float32, Ops.ADD)]
  got_m, got_n = _run(backend, request, m, n)
  want = np.matmul(_wide(x), _wide(w)).astype(dt.np)
  _within_products(got_m, want, np.abs(_wide(x)) @ np.abs(_wide(w)), dt)
  assert _wide(got_n).tolist() == [[1024.0]]


def _conv_f32(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
  """An explicit 2-d convolution (cross-correlation, stride 1) in float32: out[n, o, i, j] = sum over c, ky, kx of
  x[n, c, i + ky, j + kx] * w[o, c, ky, kx] on the zero-padded input."""
  x = np.pad(_wide(x), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  w = _wide(w)
  (b, _, hh, ww), (co, _, kh, kw) = x.shape, w.shape
  out = np.zeros((b, co, hh - kh + 1, ww - kw + 1), F32)
  for ky in range(kh):
    for kx in range(kw):
      out += np.einsum("bchw,oc->bohw", x[:, :, ky:ky + out.shape[2], kx:kx + out.shape[3]], w[:, :, ky, kx])
  return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_conv2d_accumulates_in_float32(dt: DType, backend: str, request) -> None:
  x, w = _data(dt, (2, 3, 6, 5), 3), _data(dt, (4, 3, 3, 3), 4)
  c = Tensor(x).conv2d(Tensor(w), padding=1)
  assert c.dtype is dt and [r.dtype for r in _reduces(c)] == [dtypes.float32]
  (got,) = _run(backend, request, c)
  want = _conv_f32(x, w, 1).astype(dt.np)
  _within_products(got, want, _conv_f32(np.abs(_wide(x)), np.abs(_wide(w)), 1), dt)


# ---- fp8: quantize, amax, dequantize; saturation ----
def _fp8(v: np.ndarray, dt: DType) -> np.ndarray:
  """v (float32) into fp8 as docs/spec.md says: finite values clipped to the largest finite one, then ml_dtypes' rounding
  (which turns an infinity into NaN where the dtype has none, e4m3fn and the fnuz ones, and keeps it for float8_e5m2)."""
  m = F32(ml_dtypes.finfo(dt.np).max)
  with np.errstate(invalid="ignore"): return np.where(np.isfinite(v), np.clip(v, -m, m), v).astype(dt.np)


def _round(v: np.ndarray, dt: DType) -> np.ndarray: return _fp8(v, dt) if dt.storage_only else v.astype(dt.np)


def _same(got: np.ndarray, want: np.ndarray) -> None:
  g, w = _wide(got), _wide(want)
  np.testing.assert_array_equal(g, w)
  assert np.signbit(g).tolist() == np.signbit(w).tolist()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", FP8S, ids=lambda d: d.name)
def test_fp8_quantize_dequantize_round_trip(dt: DType, backend: str, request) -> None:
  rng = np.random.default_rng(5)
  x_np = (rng.standard_normal(64) * np.exp2(rng.integers(-6, 6, 64))).astype(F32)
  fmax = float(ml_dtypes.finfo(dt.np).max)
  x = Tensor(x_np)
  amax = x.abs().max()
  scale = fmax / amax
  q = (x * scale).cast(dt)
  deq = q.cast(dtypes.float32) / scale
  assert q.dtype is dt and deq.dtype is dtypes.float32
  got_amax, got_scale, got_q, got_deq = _run(backend, request, amax, scale, q, deq)
  assert got_amax == np.abs(x_np).max()
  np.testing.assert_allclose(got_scale, fmax / np.abs(x_np).max(), rtol=2 ** -22)
  _same(got_q, _fp8(x_np * F32(got_scale), dt))
  info = ml_dtypes.finfo(dt.np)
  eps, tiny, amax_np = float(info.eps), float(info.smallest_normal), float(np.abs(x_np).max())
  err = np.abs(got_deq.astype(np.float64) - x_np)
  # one rounding into fp8 is half a unit of the scaled value's binade (the smallest normal's binade below it), scaled
  # back; float32's roundings of the scaling and the division add a few 2**-24 of |x|
  v = np.abs(x_np.astype(np.float64) * float(got_scale))
  binade = np.exp2(np.floor(np.log2(np.maximum(v, tiny))))
  assert (err <= binade * eps / 2 / float(got_scale) + np.abs(x_np) * 2.0 ** -21).all()
  assert (err <= amax_np * eps).all()
  assert np.count_nonzero(err) > 0  # fp8 really rounded something


SATURATING = np.array([1e4, -1e4, 448, 449, 464, 465, 480, 57344, 61440, 1e6, -1e6, np.inf, -np.inf, np.nan, 2.0 ** -10, 2.0 ** -17,
                       -0.0, 0.3], F32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", FP8S, ids=lambda d: d.name)
def test_fp8_casts_saturate(dt: DType, backend: str, request) -> None:
  src = Tensor(SATURATING)
  outs = (src.cast(dt), src.half().cast(dt), src.cast(dtypes.float64).cast(dt))
  got = _run(backend, request, *outs)
  with np.errstate(over="ignore"): halves = SATURATING.astype(np.float16)  # 1e6 is past float16's range: inf
  for g, via in zip(got, (SATURATING, halves, SATURATING.astype(np.float64))): _same(g, _fp8(via, dt))
  g = _wide(got[0])
  fmax = float(ml_dtypes.finfo(dt.np).max)
  assert g[9] == fmax and g[10] == -fmax  # finite values past the range saturate
  if math.isfinite(dt.max): assert np.isnan(g[11]) and np.isnan(g[12])  # no infinity: NaN
  else: assert g[11] == np.inf and g[12] == -np.inf


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", FP8S, ids=lambda d: d.name)
def test_fp8_arithmetic_is_float32_rounded_back(dt: DType, backend: str, request) -> None:
  a_np = np.array([1.5, -3.0, 0.4375, 240, 12, 0.0], F32).astype(dt.np)
  b_np = np.array([2.5, 0.75, 3.0, 240, -13, 0.0], F32).astype(dt.np)
  a, b = Tensor(a_np), Tensor(b_np)
  outs = (a + b, a * b, a - b, a.maximum(b), a.sqrt(), (a < b), a.sum(), a.max(), a.min())
  assert [o.dtype for o in outs] == [dt] * 5 + [dtypes.bool] + [dt] * 3
  # the IR has no fp8 arithmetic: every op on fp8 values in these graphs is a conversion or a WHERE
  root = Tensor.sink(*outs)
  assert [u.op for u in root.toposort() if u.dtype in FP8S and (u.op in GroupOp.ALU or u.op is Ops.REDUCE)
          and u.op not in (Ops.CAST, Ops.BITCAST, Ops.WHERE)] == []
  got = _run(backend, request, *outs)
  wa, wb = _wide(a_np), _wide(b_np)
  with np.errstate(invalid="ignore"):
    wants = (wa + wb, wa * wb, wa - wb, np.maximum(wa, wb), np.sqrt(wa))
  for g, w in zip(got[:5], wants): _same(g, _fp8(w, dt))
  assert got[5].tolist() == (wa < wb).tolist()
  _same(got[6], _fp8(np.array(wa.sum(dtype=F32)), dt))
  assert _wide(got[7]) == wa.max() and _wide(got[8]) == wa.min()


def test_fp8_refuses_what_no_float_takes() -> None:
  f = Tensor(np.zeros(3, F32)).cast(dtypes.float8_e5m2)
  with pytest.raises(TypeError, match="float8_e5m2"): f & f
  with pytest.raises(TypeError, match="float8_e5m2"): f << 1


# ---- reductions ----
@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_sum_and_mean_accumulate_in_float32_and_max_stays(dt: DType) -> None:
  ones = Tensor(np.ones(4096, dt.np))
  s, m, mx = ones.sum(), ones.mean(), ones.max()
  assert (s.dtype, m.dtype, mx.dtype) == (dt, dt, dt)
  assert [r.dtype for r in _reduces(s)] == [dtypes.float32] and [r.dtype for r in _reduces(mx)] == [dt]
  # float16 counts to 2048 and bfloat16 to 256 by ones: 4096 and a mean of exactly 1 need the float32 accumulator
  assert float(s.numpy()) == 4096 and float(m.numpy()) == 1.0 and float(mx.numpy()) == 1.0
  assert Tensor(np.ones(4096, dt.np)).sum(dtype=dt).dtype is dt  # dtype= accumulates where it says


# ---- construction and casts ----
@pytest.mark.parametrize("dt", [*HALVES, *FP8S], ids=lambda d: d.name)
def test_arrays_and_casts_of_every_small_float(dt: DType) -> None:
  vals = np.array([0.1, -2.5, 3e4, 1e-3], F32)
  assert Tensor(vals.astype(dt.np)).dtype is dt
  for src in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.bool, dtypes.float16, dtypes.bfloat16):
    t = Tensor(vals).cast(src).cast(dt)
    assert t.dtype is dt and check(Tensor.sink(t), Stage.TENSOR) == []
  # Python data into a dtype saturates for fp8 as a cast does (ml_dtypes alone would give NaN past 448 + 16)
  _same(Tensor([1e4, -0.1], dtype=dt).numpy(), _round(np.array([1e4, -0.1]), dt))
  assert Tensor(vals).half().dtype is dtypes.float16 and Tensor(vals).bfloat16().dtype is dtypes.bfloat16


def test_float_ops_on_ints_still_give_float32() -> None:
  i = Tensor([1, 4, 9])
  assert i.sqrt().dtype is dtypes.float32 and i.exp().dtype is dtypes.float32 and i.sigmoid().dtype is dtypes.float32
  h = Tensor(np.array([1, 4, 9], np.float16))
  assert h.sqrt().dtype is dtypes.float16 and h.exp().dtype is dtypes.float16 and h.sigmoid().dtype is dtypes.float16


# ---- gradients through casts ----
@pytest.mark.parametrize("dt", HALVES, ids=lambda d: d.name)
def test_gradient_through_a_half_precision_product(dt: DType) -> None:
  x_np, w_np = np.array([[0.3, -1.7, 2.2]], F32), np.array([[0.1], [3.3], [-0.7]], F32)
  x, w = Tensor(x_np), Tensor(w_np)
  (x.cast(dt) @ w.cast(dt)).float().sum().backward()
  # d/dx of sum(x @ w) is w's row, here w as the dtype holds it, and back into float32 exactly
  np.testing.assert_array_equal(x.grad.numpy(), _wide(w_np.astype(dt.np)).T)
  np.testing.assert_array_equal(w.grad.numpy(), _wide(x_np.astype(dt.np)).T)


@pytest.mark.parametrize("dt", [*HALVES, *FP8S], ids=lambda d: d.name)
def test_gradient_of_a_broadcast_small_float_sums_in_float32(dt: DType) -> None:
  x = Tensor(np.array([1.0], F32))
  (x.cast(dt).expand(4096).cast(dtypes.float32) * 0.75).sum().backward()
  # 4096 gradients of 0.75 (exact in every small float) summed in float32: 3072, which float16, bfloat16 and
  # float8_e5m2 hold and float8_e4m3fn saturates to 448; a float16 or bfloat16 sum stops growing at 2048 and 256
  assert x.grad.numpy().tolist() == [float(_wide(_round(np.array([3072], F32), dt))[0])]
  assert check(Tensor.sink(x.grad), Stage.TENSOR) == []


@pytest.mark.parametrize("dt", FP8S, ids=lambda d: d.name)
def test_gradient_into_fp8_is_rounded_to_it(dt: DType) -> None:
  x = Tensor(np.array([1.0, 2.0], F32))
  q = x.cast(dt)
  (q.float() * 0.3).sum().backward()
  # the gradient of the cast into fp8 is the output's gradient cast to fp8 (tinygrad's rule): 0.3 as fp8 holds it
  assert x.grad.numpy().tolist() == [float(_wide(np.array(0.3, F32).astype(dt.np)))] * 2


# ---- dtypes against tinygrad 0.14 itself ----
VALUE_DTYPES = [dtypes.bool, *dtypes.ints, *dtypes.floats]
# tinygrad's attribute names where they differ from tinyspec's (its float8_e4m3 has no infinity, like e4m3fn)
TG_NAMES = {"float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2", "float8_e4m3fnuz": "fp8e4m3fnuz", "float8_e5m2fnuz": "fp8e5m2fnuz"}


@pytest.fixture(scope="module")
def tg():
  """tinygrad's Tensor and a translation of its result dtypes to tinyspec's: a weak dtype (tinygrad's int64 with
  uint64 is weakfloat) is the dtype it realizes as (strong_dtype: float32)."""
  pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")
  from tinygrad import Tensor as TgTensor
  from tinygrad.dtype import dtypes as tgd, strong_dtype
  names = {getattr(tgd, TG_NAMES.get(d.name, d.name)): d for d in VALUE_DTYPES}
  def tensor(dt: DType) -> TgTensor: return TgTensor.zeros(2, 2, dtype=getattr(tgd, TG_NAMES.get(dt.name, dt.name)))
  def dtype_of(t: TgTensor) -> DType: return names[strong_dtype(t.dtype)]
  return tensor, dtype_of


def _ours(dt: DType) -> Tensor: return Tensor.zeros(2, 2, dtype=dt)


@pytest.mark.tinygrad
@pytest.mark.parametrize("a", VALUE_DTYPES, ids=lambda d: d.name)
def test_binary_promotion_matches_tinygrad(a: DType, tg) -> None:
  from tinyspec.frontend.promotion import promote
  tensor, dtype_of = tg
  for b in VALUE_DTYPES:
    want = dtype_of(tensor(a) + tensor(b))
    assert promote(a, b) is want and (_ours(a) + _ours(b)).dtype is want, f"{a.name} + {b.name}: tinygrad gives {want.name}"


@pytest.mark.tinygrad
@pytest.mark.parametrize("a", VALUE_DTYPES, ids=lambda d: d.name)
def test_scalars_and_float_ops_match_tinygrad(a: DType, tg) -> None:
  tensor, dtype_of = tg
  for scalar in (True, 3, 1.5):
    assert (_ours(a) * scalar).dtype is dtype_of(tensor(a) * scalar), f"{a.name} * {scalar!r}"
  for op in ("sqrt", "exp", "sigmoid", "reciprocal"):
    assert getattr(_ours(a), op)().dtype is dtype_of(getattr(tensor(a), op)()), f"{a.name}.{op}()"


@pytest.mark.tinygrad
@pytest.mark.parametrize("a", VALUE_DTYPES, ids=lambda d: d.name)
def test_reductions_and_products_match_tinygrad(a: DType, tg) -> None:
  tensor, dtype_of = tg
  for op in ("sum", "mean", "max"):
    assert getattr(_ours(a), op)().dtype is dtype_of(getattr(tensor(a), op)()), f"{a.name}.{op}()"
  if not a.is_bool:
    assert (_ours(a) @ _ours(a)).dtype is dtype_of(tensor(a) @ tensor(a)), f"{a.name} @ {a.name}"


@pytest.mark.parametrize("src", [*HALVES, *FP8S], ids=lambda d: d.name)
def test_widens_exactly_says_whether_every_value_survives_the_cast(src: DType) -> None:
  # every finite bit pattern of src, cast into each float dtype and back: exact for all of them iff widens_exactly
  from tinyspec.dtype import widens_exactly
  bits = np.arange(1 << (8 * src.itemsize), dtype=np.uint16 if src.itemsize == 2 else np.uint8)
  with np.errstate(invalid="ignore"): vals = bits.view(src.np).astype(np.float64)  # NaN patterns widen quietly
  vals = vals[np.isfinite(vals)]
  for dt in dtypes.floats:
    with np.errstate(over="ignore", invalid="ignore"): back = vals.astype(dt.np).astype(np.float64)
    assert widens_exactly(src, dt) == bool(np.all(back == vals)), dt.name
  assert widens_exactly(src, dtypes.float32) and not widens_exactly(dtypes.float32, src)

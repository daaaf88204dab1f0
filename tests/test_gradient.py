"""Reverse-mode gradients (tinyspec.gradient): every per-op rule against its derivative computed with numpy, every
float parity program against central finite differences in float64, value calls against their inlined bodies, the
form of backward calls (slots aligned to source positions, interning, SINK bundles), the spec of gradient graphs at
every stage of their lowering, and the CPU and OpenCL backends on gradient graphs."""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from programs import PROGRAMS

from tinyspec import gradient
from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec import autograd
from fuzz.check.gradient_oracle import call_gradient_mismatches
from tinyspec.autograd import GRAD_SUFFIX, GradientError, backward_call, gradient_sink, is_backward_call
from tinyspec.lower.base import LowerOptions, Trace
from tinyspec.lower.callify import CALLIFY
from tinyspec.lower.pipeline import lower
from tinyspec.runtime import run
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops, UOp, is_precompiled_call

pytestmark = pytest.mark.spec
F32, F64 = dtypes.float32, dtypes.float64


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, src=tuple(xs))


def rng_for(name: str) -> np.random.Generator: return np.random.default_rng(zlib.crc32(name.encode()))


# ---- helpers: losses, float64 copies of graphs, finite differences ----

@dataclass
class Case:
  """A loss over a graph: loss = sum_i sum(out_i * W_i) with fixed random W_i held in buffers, and the float buffers
  the gradient is taken with respect to."""
  name: str
  loss: UOp
  wrt: list[UOp]
  inputs: dict[int, np.ndarray]


def weighted_loss(name: str, outs: list[UOp], inputs: dict[int, np.ndarray], keep: list[bool] | None = None) -> Case:
  """keep[i] False leaves output i out of the loss (its weights are drawn all the same, so the others keep theirs)."""
  rng = rng_for(name)
  inputs = dict(inputs)
  data = [u for u in sink(*outs).toposort() if u.op is Ops.BUFFER and u.dtype.is_float]  # the program's own float data
  total = None
  acc = F64 if any(o.dtype is F64 for o in outs) else F32
  for i, o in enumerate(outs):
    w = UOp.buffer(o.dtype, o.size)
    inputs[w.arg.id] = rng.uniform(-1.0, 1.0, o.size).astype(o.dtype.np)
    if keep is not None and not keep[i]: continue
    t = o.alu(Ops.MUL, w.reshape(o.shape) if o.shape != (o.size,) else w)
    t = t.reduce(Ops.ADD, len(o.shape)) if o.shape else t
    if t.dtype is not acc: t = t.cast(acc)
    total = t if total is None else total + t
  return Case(name, total, data, inputs)


def stops_gradient(u: UOp) -> bool:
  """A DETACH that changes the derivative: not the detached shift of softmax / logsumexp (a max that the result does
  not depend on, which tinygrad detaches too), whose derivative is zero anyway."""
  if u.op is not Ops.DETACH: return False
  x = u.src[0]
  while x.op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE): x = x.src[0]
  return not (x.op is Ops.REDUCE and x.arg[0] is Ops.MAX)


def program_case(name: str, drop_detached: bool = False) -> Case:
  """The program's loss; drop_detached leaves out the outputs that read a DETACH (a derivative does not stop there)."""
  p = PROGRAMS[name]()
  outs = [e for e in p.root.src if e.dtype.is_float and e.shape is not None]
  keep = [not (drop_detached and any(stops_gradient(u) for u in o.toposort())) for o in outs]
  return weighted_loss(name, outs, p.inputs, keep)


def to_float64(root: UOp) -> UOp:
  """The same graph computing in float64: every float32 node (BUFFER, PARAM, CONST, CAST target, ...) becomes float64."""
  memo: dict[UOp, UOp] = {}
  assert not any(u.op is Ops.BITCAST for u in root.toposort()), "BITCAST reinterprets float32 bits: no float64 twin"
  for u in root.toposort():
    memo[u] = UOp(u.op, F64 if u.dtype is F32 else u.dtype, tuple(memo[s] for s in u.src), u.arg, u.tag)
  return memo[root]


def inputs64(inputs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
  return {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}


def ev(root: UOp, inputs: dict[int, np.ndarray]) -> list[np.ndarray]:
  return [np.asarray(x) for x in evaluate(root, inputs)]


def grads_of(loss: UOp, wrt: list[UOp], inputs: dict[int, np.ndarray]) -> list[np.ndarray]:
  gs = gradient(loss, wrt)
  for g, w in zip(gs, wrt): assert g.shape == w.shape and g.dtype is w.dtype
  return ev(sink(*gs), inputs)


def check_against_finite_differences(case: Case, directions: int = 3, eps: float = 1e-6) -> None:
  """The float64 gradient's directional derivatives along random directions lie within the one-sided difference
  quotients of the float64 loss (equal to their central difference where the loss is smooth; between them at a kink,
  where any subgradient is right). Every element is probed once on its own when there are few."""
  loss64 = to_float64(case.loss)
  wrt64 = [to_float64(w) for w in case.wrt]
  ins = inputs64(case.inputs)
  g64 = grads_of(loss64, wrt64, ins)
  sizes = [w.size for w in case.wrt]
  n = sum(sizes)
  rng = rng_for(case.name + "dirs")
  dirs = [rng.standard_normal(n) for _ in range(directions)]
  if n <= 24: dirs += list(np.eye(n))
  flat_g = np.concatenate([g.reshape(-1) for g in g64])

  def loss_at(v: np.ndarray, h: float) -> float:
    shifted, off = dict(ins), 0
    for w, s in zip(case.wrt, sizes):
      shifted[w.arg.id] = ins[w.arg.id] + h * v[off:off + s]
      off += s
    return float(evaluate(loss64, shifted))
  f0 = loss_at(np.zeros(n), 0.0)
  for i, v in enumerate(dirs):
    up, down = (loss_at(v, eps) - f0) / eps, (f0 - loss_at(v, -eps)) / eps
    lo, hi = min(up, down), max(up, down)
    got = float(flat_g @ v)
    tol = 1e-5 * max(1.0, abs(got), abs(lo), abs(hi))
    assert lo - tol <= got <= hi + tol, f"{case.name}: direction {i}: gradient gives {got}, finite differences [{down}, {up}]"
  # the float32 gradient is the float64 one up to float32 rounding
  if any(w.dtype is F32 for w in case.wrt):
    for w, g32, g in zip(case.wrt, grads_of(case.loss, case.wrt, case.inputs), g64):
      np.testing.assert_allclose(g32.astype(np.float64), g, rtol=2e-3, atol=2e-4, err_msg=f"{case.name}: float32 vs float64, BUFFER {w.arg.id}")


def check_lowering(root: UOp, inputs: dict[int, np.ndarray], expected: list[np.ndarray], backends: tuple[str, ...] = ("cpu",), **options) -> None:
  """root lowers with every stage's spec holding, and runs on the backends giving the expected values."""
  stages = lower(root, **options)
  assert not check(stages["input"], Stage.TENSOR)
  assert not check(stages["callify"], Stage.TENSOR)
  assert not check(stages["rangeify"], Stage.KERNEL_GRAPH)
  for name in ("simplify", "optimize", "lower_reduce"): assert not check(stages[name], Stage.KERNEL), name
  for name in ("linearize", "render"): assert not check(stages[name], Stage.PROGRAM), name
  for b in backends:
    got = run(root, inputs, backend=b, **options)
    for i, (x, e) in enumerate(zip(got, expected)):
      np.testing.assert_allclose(np.asarray(x, np.float64).reshape(e.shape), e, rtol=2e-5, atol=2e-6, err_msg=f"{b}: gradient {i}")


# ---- per-op rules ----

def _buf(data: np.ndarray) -> tuple[UOp, UOp]:
  b = UOp.buffer(dtypes.from_np(data.dtype), data.size)
  return b, b.reshape(data.shape) if data.ndim != 1 else b


def _unary_case(op: Ops, deriv: Callable[[np.ndarray], np.ndarray], lo: float = -2.0, hi: float = 2.0):
  return op.name.lower(), (lambda x, y: x.alu(op)), (lambda x, y, w: (w * deriv(x), np.zeros_like(y))), lo, hi


ELEMENTWISE = [
  _unary_case(Ops.NEG, lambda x: -np.ones_like(x)),
  _unary_case(Ops.RECIP, lambda x: -1 / (x * x), 0.5, 3.0),
  _unary_case(Ops.SQRT, lambda x: 0.5 / np.sqrt(x), 0.5, 3.0),
  _unary_case(Ops.EXP2, lambda x: np.exp2(x) * math.log(2)),
  _unary_case(Ops.LOG2, lambda x: 1 / (x * math.log(2)), 0.5, 3.0),
  _unary_case(Ops.SIN, np.cos),
  _unary_case(Ops.TRUNC, np.zeros_like),
  ("add", lambda x, y: x + y, lambda x, y, w: (w, w), -2.0, 2.0),
  ("sub", lambda x, y: x - y, lambda x, y, w: (w, -w), -2.0, 2.0),
  ("mul", lambda x, y: x * y, lambda x, y, w: (w * y, w * x), -2.0, 2.0),
  ("max", lambda x, y: x.maximum(y), lambda x, y, w: (w * (x > y) + 0.5 * w * (x == y), w * (y > x) + 0.5 * w * (x == y)), -2.0, 2.0),
  ("where", lambda x, y: (x < y).where(x, y), lambda x, y, w: (w * (x < y), w * (x >= y)), -2.0, 2.0),
  ("cast_f64_f32", lambda x, y: x.cast(F32).cast(F64) * y, lambda x, y, w: ((w * y).astype(np.float32), w * x.astype(np.float32)), -2.0, 2.0),
  ("cast_through_int", lambda x, y: x.cast(dtypes.int32).cast(F64) * y, lambda x, y, w: (np.zeros_like(x), w * np.trunc(x)), -5.0, 5.0),
  ("compare", lambda x, y: (x < y).cast(F64), lambda x, y, w: (np.zeros_like(x), np.zeros_like(y)), -2.0, 2.0),
  ("detach", lambda x, y: UOp(Ops.DETACH, F64, (x,)) * y, lambda x, y, w: (np.zeros_like(x), w * x), -2.0, 2.0),
  ("contiguous", lambda x, y: UOp(Ops.CONTIGUOUS, F64, (x * y,)), lambda x, y, w: (w * y, w * x), -2.0, 2.0),
]


@pytest.mark.parametrize("name,build,expect,lo,hi", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_rule(name: str, build, expect, lo: float, hi: float) -> None:
  rng = rng_for(name)
  xv, yv, wv = rng.uniform(lo, hi, (2, 3)), rng.uniform(lo, hi, (2, 3)), rng.uniform(-1, 1, (2, 3))
  if name == "max": yv[0, 1] = xv[0, 1]  # a tie: each side gets half
  (bx, x), (by, y), (bw, w) = _buf(xv), _buf(yv), _buf(wv)
  loss = (build(x, y) * w).reduce(Ops.ADD, 2)
  got = grads_of(loss, [x, y], {bx.arg.id: xv.reshape(-1), by.arg.id: yv.reshape(-1), bw.arg.id: wv.reshape(-1)})
  for g, e in zip(got, expect(xv, yv, wv)): np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


MOVEMENT = [  # (name, build on x of shape (2, 3), the numpy view it computes)
  ("reshape", lambda x: x.reshape((3, 2)), lambda a: a.reshape(3, 2)),
  ("permute", lambda x: x.permute((1, 0)), lambda a: a.T),
  ("expand_prepends", lambda x: x.expand((4,)), lambda a: np.broadcast_to(a, (4, 2, 3))),
  ("pad", lambda x: x.pad(((1, 4), (0, 5))), lambda a: np.pad(a, ((1, 1), (0, 2)))),
  ("shrink", lambda x: x.shrink(((1, 1), (1, 2))), lambda a: a[1:2, 1:3]),
  ("flip", lambda x: x.flip((True, False)), lambda a: a[::-1]),
  ("chain", lambda x: x.expand((2,)).permute((2, 0, 1)).pad(((1, 5), (0, 2), (0, 2))).flip((False, True, False)),
   lambda a: np.pad(np.broadcast_to(a, (2, 2, 3)).transpose(2, 0, 1), ((1, 1), (0, 0), (0, 0)))[:, ::-1]),
]


@pytest.mark.parametrize("name,build,view", MOVEMENT, ids=[m[0] for m in MOVEMENT])
def test_movement_rule_is_the_inverse_view(name: str, build, view) -> None:
  """d sum(view(x) * W) / dx: each x element collects the weights of every position the view reads it into, which
  numpy finds by viewing an array of element numbers."""
  rng = rng_for(name)
  xv = rng.uniform(-1, 1, (2, 3))
  bx, x = _buf(xv)
  v = build(x)
  wv = rng.uniform(-1, 1, v.shape)
  bw, w = _buf(wv)
  got = grads_of((v * w).reduce(Ops.ADD, len(v.shape)), [x], {bx.arg.id: xv.reshape(-1), bw.arg.id: wv.reshape(-1)})[0]
  ids = view(np.arange(1, 7).reshape(2, 3))  # 0 marks padding
  expect = np.zeros(7)
  np.add.at(expect, ids.reshape(-1), wv.reshape(-1))
  np.testing.assert_allclose(got.reshape(-1), expect[1:], rtol=1e-12, atol=1e-12)


def test_reduce_add_and_prod_with_zeros() -> None:
  """REDUCE reduces the first n axes. MUL's gradient is exact with zeros: one zero in a group gets the product of
  the others and the rest 0; two zeros give 0 everywhere."""
  xv = np.array([[2.0, 0.0, 3.0, 0.0], [5.0, 4.0, 0.5, 0.0], [1.5, 2.0, -1.0, 7.0]])  # zeros per column: 0, 1, 0, 2
  bx, x = _buf(xv)
  wv = np.array([1.0, -2.0, 0.5, 3.0])
  bw, w = _buf(wv)
  ins = {bx.arg.id: xv.reshape(-1), bw.arg.id: wv}
  g_sum, = grads_of((x.reduce(Ops.ADD, 1) * w).reduce(Ops.ADD, 1), [x], ins)
  np.testing.assert_allclose(g_sum, np.broadcast_to(wv, (3, 4)))
  g_prod, = grads_of((x.reduce(Ops.MUL, 1) * w).reduce(Ops.ADD, 1), [x], ins)
  expect = np.array([[wv[c] * np.prod(np.delete(xv[:, c], r)) for c in range(4)] for r in range(3)])
  np.testing.assert_allclose(g_prod, expect, rtol=1e-12)
  assert expect[1, 1] == 0 and expect[0, 1] != 0 and np.all(expect[:, 3] == 0)


def test_reduce_max_splits_ties_evenly() -> None:
  xv = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 2.0], [3.0, 5.0, -1.0]])  # column maxima: 3 twice, 5 three times, 2 twice
  bx, x = _buf(xv)
  got, = grads_of(x.reduce(Ops.MAX, 1).reduce(Ops.ADD, 1), [x], {bx.arg.id: xv.reshape(-1)})
  np.testing.assert_allclose(got, [[0, 1 / 3, 0.5], [0.5, 1 / 3, 0.5], [0.5, 1 / 3, 0]])


def test_assign_overwriting_storage_passes_the_gradient_to_the_value() -> None:
  xv, yv = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 4.0])
  (bx, x), (by, y) = _buf(xv), _buf(yv)
  x1 = x.after(x.store(x * y))  # x *= y
  got = grads_of((x1 * y).reduce(Ops.ADD, 1), [x, y], {bx.arg.id: xv, by.arg.id: yv})
  np.testing.assert_allclose(got[0], yv * yv)
  np.testing.assert_allclose(got[1], 2 * xv * yv)


def test_unreached_and_integer_paths_give_zeros() -> None:
  xv, iv = np.array([1.5, -2.0]), np.array([3, 4], np.int32)
  (bx, x), (bi, i), (bz, z) = _buf(xv), _buf(iv), _buf(np.zeros(2))
  loss = (i.cast(F64) * (x < z).cast(F64)).reduce(Ops.ADD, 1) + x.cast(dtypes.int32).cast(F64).reduce(Ops.ADD, 1)
  gx, gz = grads_of(loss, [x, z], {bx.arg.id: xv, bi.arg.id: iv, bz.arg.id: np.zeros(2)})
  assert np.all(gx == 0) and np.all(gz == 0)


# ---- errors ----

def test_bad_input_gets_clear_errors() -> None:
  x = UOp.buffer(F32, 3)
  with pytest.raises(ValueError, match=r"scalar \(shape \(\)\)"): gradient(x * x, [x])
  with pytest.raises(TypeError, match="float"): gradient(x.cast(dtypes.int32).reduce(Ops.ADD, 1), [x])
  i = UOp.buffer(dtypes.int32, 3)
  with pytest.raises(TypeError, match="wrt\\[0\\] is int32"): gradient((x * x).reduce(Ops.ADD, 1), [i])
  with pytest.raises(TypeError, match="list"): gradient((x * x).reduce(Ops.ADD, 1), x)
  opaque = UOp(Ops.CALL, src=(UOp(Ops.SINK), x))
  with pytest.raises(GradientError, match="AFTER waiting for CALL"): gradient((x.after(opaque) * x).reduce(Ops.ADD, 1), [x])
  partial = x.after(x.shrink(((0, 2),)).store(x.shrink(((1, 2),))))
  with pytest.raises(GradientError, match="assign"): gradient(partial.reduce(Ops.ADD, 1), [x])
  y = UOp.buffer(F32, 1)
  repeated = y.expand((3,)).reshape((3,))
  with pytest.raises(GradientError, match="assign"): gradient(repeated.after(repeated.store(x)).reduce(Ops.ADD, 1), [x])


# ---- the parity programs ----

# the programs with float outputs that read float data (bitcast_bits has none: its float output is int bits)
# a precompiled call is opaque (its body stores into its output storage): no gradient flows through it
PRECOMPILED_PROGRAMS = [name for name in PROGRAMS if any(is_precompiled_call(u) for u in PROGRAMS[name]().root.toposort())]
DIFF_PROGRAMS = [name for name in PROGRAMS if program_case(name).wrt and name not in PRECOMPILED_PROGRAMS]


def test_no_gradient_through_a_precompiled_call() -> None:
  assert PRECOMPILED_PROGRAMS
  for name in PRECOMPILED_PROGRAMS:
    case = program_case(name)
    with pytest.raises(GradientError, match="AFTER waiting for CALL"): gradient(case.loss, case.wrt)


def test_most_float_programs_are_differentiable() -> None:
  assert len(DIFF_PROGRAMS) >= 30, DIFF_PROGRAMS
  assert {"gemm", "conv2d", "mlp2", "softmax", "layernorm", "call_two_returns", "call_nested", "call_twice", "call_captured"} <= set(DIFF_PROGRAMS)


@pytest.mark.parametrize("name", DIFF_PROGRAMS)
def test_program_gradient_spec_and_finite_differences(name: str) -> None:
  case = program_case(name)
  bundle = gradient_sink(case.loss, case.wrt)
  assert bundle.op is Ops.SINK and not check(bundle, Stage.TENSOR), check(bundle, Stage.TENSOR)
  assert not any(u.op is Ops.GROUP for u in bundle.toposort())
  if any(stops_gradient(u) for u in case.loss.toposort()):
    # DETACH stops gradients, which finite differences cannot see: the gradient equals that of the loss without the
    # detached outputs, and that one is checked against finite differences
    fd_case = program_case(name, drop_detached=True)
    assert fd_case.loss is not case.loss
    for g, h in zip(ev(bundle, case.inputs), grads_of(fd_case.loss, fd_case.wrt, fd_case.inputs)): np.testing.assert_array_equal(g, h)
    case = fd_case
  check_against_finite_differences(case)


@pytest.mark.parametrize("name", DIFF_PROGRAMS)
def test_program_gradient_lowers_and_runs_on_cpu(name: str) -> None:
  case = program_case(name)
  bundle = gradient_sink(case.loss, case.wrt)
  check_lowering(bundle, case.inputs, [g.astype(np.float64) for g in ev(bundle, case.inputs)])


# ---- value calls ----

def _use_sites(root: UOp, buf: UOp) -> int:
  """How many nodes (call bodies included, the buffer's own RESHAPEs not) read buf or a RESHAPE of it."""
  views = {buf}
  nodes = root.toposort()
  for u in nodes:
    if u.op is Ops.RESHAPE and u.src[0] in views: views.add(u)
  return sum(1 for u in nodes if u not in views for s in u.src if s in views)


def _inlined_gradients(case: Case) -> list[np.ndarray]:
  inlined = CALLIFY.run(sink(case.loss), LowerOptions(callify="inline"), Trace()).src[0]
  assert not any(u.op is Ops.CALL for u in inlined.toposort())
  return grads_of(inlined, case.wrt, case.inputs)


@function
def mul_sub(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  return a * b, a - b


def _two_output_twice() -> Case:
  """A two-output function called twice on different args; one output of the second call is unused."""
  rng = rng_for("two_output_twice")
  a, b, c = (Tensor(rng.uniform(-1, 1, (2, 3)).astype(np.float32)) for _ in range(3))
  p1, q1 = mul_sub(a, b)
  p2, _ = mul_sub(q1, c)
  out = p1.sin() * p2 + q1.sum(0)
  return weighted_loss("two_output_twice", [out.uop], inputs_of(out.uop))


def _nested() -> Case:
  rng = rng_for("nested")

  @function
  def inner(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    return (x * y).exp(), x.maximum(y)

  @function
  def outer(x: Tensor, y: Tensor) -> Tensor:
    e, m = inner(x, y)
    e2, _ = inner(m, x * 0.5)
    return e.sum(0) + e2.max(0) * m.prod(0)
  x, y = Tensor(rng.uniform(-1, 1, (3, 2)).astype(np.float32)), Tensor(rng.uniform(-1, 1, (3, 2)).astype(np.float32))
  out = outer(x, y)
  return weighted_loss("nested", [out.uop], inputs_of(out.uop))


def _captured() -> Case:
  rng = rng_for("captured")
  w, bias = Tensor(rng.uniform(-1, 1, (3, 2)).astype(np.float32)), Tensor(rng.uniform(-1, 1, (2,)).astype(np.float32))

  @function
  def layer(x: Tensor) -> Tensor:
    return (x @ w + bias).tanh()
  x1, x2 = Tensor(rng.uniform(-1, 1, (4, 3)).astype(np.float32)), Tensor(rng.uniform(-1, 1, (2, 3)).astype(np.float32))
  out = layer(x1).sum(0) + layer(x2).sum(0) * w.sum(0)  # w is read inside (captured) and outside the call
  return weighted_loss("captured", [out.uop], inputs_of(out.uop))


def _chained_and_mixed_args() -> Case:
  """Calls feeding calls; an int arg between float args; one tensor passed twice; a detached arg; an output read by
  several consumers."""
  rng = rng_for("chained")

  @function
  def scale(x: Tensor, n: Tensor, y: Tensor, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    return x * n.cast(dtypes.float32) + y * z, n * 2, (x - z).square()
  x, y = Tensor(rng.uniform(-1, 1, (4,)).astype(np.float32)), Tensor(rng.uniform(-1, 1, (4,)).astype(np.float32))
  n = Tensor(np.array([1, -2, 3, 0], np.int32))
  a, k, sq = scale(x, n, y, x)
  b, _, _ = scale(a, k, sq, y.detach())
  out = b * a + a.sum() + sq
  return weighted_loss("chained", [out.uop], inputs_of(out.uop))


def _direct_capture() -> Case:
  """Call bodies that read BUFFERs directly (not through a PARAM), one of them only inside a nested call's body."""
  rng = rng_for("direct")
  av, bv, cv = (rng.uniform(-1, 1, 4).astype(np.float32) for _ in range(3))
  a, b, c = UOp.buffer(F32, 4), UOp.buffer(F32, 4), UOp.buffer(F32, 4)
  p0 = UOp.param(0, F32, 4)
  inner = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(p0 * c,)), p0 + b), arg="inner")
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(p0 * b, inner.gettuple(0).alu(Ops.SIN))), a), arg="direct")
  out = call.gettuple(0) + call.gettuple(1) * b
  return weighted_loss("direct", [out], {a.arg.id: av, b.arg.id: bv, c.arg.id: cv})


CALL_CASES: dict[str, Callable[[], Case]] = {
  "two_output_twice": _two_output_twice, "nested": _nested, "captured": _captured, "chained": _chained_and_mixed_args,
  "direct_capture": _direct_capture,
  **{n: (lambda n=n: program_case(n)) for n in ("call_two_returns", "call_nested", "call_twice", "call_captured")},
}


@pytest.mark.parametrize("name", list(CALL_CASES))
def test_call_gradient_equals_inlined_gradient(name: str) -> None:
  """Gradients through value calls (backward calls) give the same values as gradients of the inlined graph; the
  only freedom is the order float additions happen in, so they agree to a float32 ulp or two."""
  case = CALL_CASES[name]()
  assert any(is_backward_call(u) for u in gradient_sink(case.loss, case.wrt).toposort())
  for w, x, y in zip(case.wrt, grads_of(case.loss, case.wrt, case.inputs), _inlined_gradients(case)):
    if _use_sites(case.loss, w) == 1: np.testing.assert_array_equal(x, y, err_msg=f"{name}: BUFFER {w.arg.id} (one use: same additions)")
    else: np.testing.assert_allclose(x, y, rtol=3e-7, atol=1e-7, err_msg=f"{name}: BUFFER {w.arg.id}")
  assert call_gradient_mismatches(sink(case.loss), case.inputs) == []


@pytest.mark.parametrize("name", list(CALL_CASES))
def test_call_gradient_finite_differences_and_lowering(name: str) -> None:
  case = CALL_CASES[name]()
  bundle = gradient_sink(case.loss, case.wrt)
  assert not check(bundle, Stage.TENSOR), check(bundle, Stage.TENSOR)
  check_against_finite_differences(case)
  expected = [g.astype(np.float64) for g in ev(bundle, case.inputs)]
  check_lowering(bundle, case.inputs, expected)


def test_precompiled_backward_calls_run_on_cpu() -> None:
  case = _two_output_twice()
  bundle = gradient_sink(case.loss, case.wrt)
  check_lowering(bundle, case.inputs, [g.astype(np.float64) for g in ev(bundle, case.inputs)], callify="precompile")


def test_two_output_function_called_twice_on_every_backend(opencl: str) -> None:
  """reference, cpu and opencl give the gradients numpy computes by hand for p1, q1 = a*b, a-b; p2 = q1*c."""
  rng = rng_for("backends")
  av, bv, cv = (rng.uniform(-1, 1, 5).astype(np.float32) for _ in range(3))
  a, b, c = Tensor(av), Tensor(bv), Tensor(cv)
  p1, q1 = mul_sub(a, b)
  p2, q2 = mul_sub(q1, c)
  loss = (p1 * p2 + q2).sum()
  bundle = gradient_sink(loss, [a, b, c])
  q = av - bv
  # loss = sum(a*b * q*c + q - c): d/da = b*q*c + a*b*c + 1, d/db = a*q*c - a*b*c - 1, d/dc = a*b*q - 1
  expected = [bv * q * cv + av * bv * cv + 1, av * q * cv - av * bv * cv - 1, av * bv * q - 1]
  for backend in ("reference", "cpu", "opencl"):
    got = run(bundle, inputs_of(bundle), backend=backend)
    for i, (g, e) in enumerate(zip(got, expected)): np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=f"{backend}: gradient {i}")


# ---- the form of backward calls ----

def test_backward_call_slots_align_with_forward_args() -> None:
  """Slot k of the backward TUPLE is the flat gradient for forward arg k, whatever the args' dtypes; there are as many
  slots as forward args; the backward call takes the forward args then one gradient per output."""
  case = _chained_and_mixed_args()
  bwd = [u for u in gradient_sink(case.loss, case.wrt).toposort() if is_backward_call(u)]
  assert len(bwd) == 2
  for b in bwd:
    fwd_args = b.src[1:5]
    assert len(b.src[0].src) == 4 and len(b.src) == 1 + 4 + 3 and b.arg == "scale" + GRAD_SUFFIX
    for k, (slot, a) in enumerate(zip(b.src[0].src, fwd_args)):
      assert slot.shape == (a.size,) and slot.dtype is a.dtype, k
    assert b.src[0].src[1].dtype is dtypes.int32  # the int arg keeps its position (zeros), so the float slots after it do not shift


def test_buffers_read_in_a_body_are_inputs_after_the_args() -> None:
  """A BUFFER read directly in a body (or a nested body) is an input of the call after its args: the backward call
  takes it there and returns its gradient in that slot."""
  case = _direct_capture()
  fwd = {u.arg: u for u in case.loss.toposort() if u.op is Ops.CALL}
  a = fwd["direct"].src[1]
  c = next(u for u in fwd["inner"].src[0].toposort() if u.op is Ops.BUFFER)
  (b,) = set(case.wrt) - {a, c}
  bwd = {u.arg: u for u in gradient_sink(case.loss, case.wrt).toposort() if is_backward_call(u)}
  assert set(bwd) == {"direct.grad", "inner.grad"}
  outer, inner = bwd["direct.grad"], bwd["inner.grad"]
  assert len(outer.src[0].src) == 3 and outer.src[1] is a and set(outer.src[2:4]) == {b, c} and len(outer.src) == 1 + 3 + 2
  assert len(inner.src[0].src) == 2 and inner.src[2] is c and len(inner.src) == 1 + 2 + 1
  assert not check(sink(*gradient(case.loss, case.wrt)), Stage.TENSOR)


def test_backward_slot_values_by_position() -> None:
  """f(x, n, y) = x * y + n: slot 0 is d/dx = g*y, slot 1 (int) is zeros, slot 2 is d/dy = g*x."""
  xv, yv, gv = np.array([1.0, 2.0], np.float32), np.array([3.0, -4.0], np.float32), np.array([0.5, 2.0], np.float32)
  nv = np.array([7, 8], np.int32)

  @function
  def f(x: Tensor, n: Tensor, y: Tensor) -> Tensor:
    return x * y + n.cast(dtypes.float32)
  x, n, y, g = Tensor(xv), Tensor(nv), Tensor(yv), Tensor(gv)
  call = f(x, n, y).uop.src[0]
  bwd = backward_call(call, [g.uop])
  got = ev(sink(*(bwd.gettuple(k) for k in range(3))), inputs_of(bwd))
  np.testing.assert_array_equal(got[0], gv * yv)
  np.testing.assert_array_equal(got[1], np.zeros(2, np.int32))
  np.testing.assert_array_equal(got[2], gv * xv)


def test_identical_constructions_intern() -> None:
  case = _nested()
  g1, g2 = gradient(case.loss, case.wrt), gradient(case.loss, case.wrt)
  assert all(a is b for a, b in zip(g1, g2))
  rebuilt = _nested()  # new buffers: a new graph, but the same functions give the same backward bodies
  assert gradient(rebuilt.loss, rebuilt.wrt)[0] is not g1[0]


def _output_grad_params_read(bwd: UOp) -> set[int]:
  """Which output gradients a backward body reads: its PARAM slots past the inputs (one TUPLE slot per input)."""
  first_out = len(bwd.src[0].src)
  return {u.arg.slot - first_out for u in bwd.src[0].toposort() if u.op is Ops.PARAM and u.arg.slot >= first_out}


def test_same_function_twice_gives_separate_backward_calls() -> None:
  """Two calls of one function get two backward calls; their bodies are one node when the same outputs carry
  gradients. Here the second call's q output is unused, so its backward body reads no gradient for it: a zero
  gradient pushed through the body could meet an infinite local derivative (0 * inf = NaN) where the inlined
  graph has no path."""
  case = _two_output_twice()
  bwd = [u for u in gradient_sink(case.loss, case.wrt).toposort() if is_backward_call(u)]
  assert len(bwd) == 2 and bwd[0] is not bwd[1]
  assert bwd[0].src[1:3] != bwd[1].src[1:3]
  reads = sorted((_output_grad_params_read(b) for b in bwd), key=len)
  assert reads == [{0}, {0, 1}]
  assert bwd[0].src[0] is not bwd[1].src[0]
  a, b, c, d = (Tensor(np.full((2, 3), v, np.float32)) for v in (0.5, -1.0, 2.0, 0.25))
  p1, q1 = mul_sub(a, b)
  p2, q2 = mul_sub(c, d)
  loss = (p1 * q1 + p2 * q2).sum()
  both = [u for u in gradient_sink(loss.uop, [a.uop, c.uop]).toposort() if is_backward_call(u)]
  assert len(both) == 2 and both[0] is not both[1] and both[0].src[0] is both[1].src[0]


def test_an_unused_output_adds_no_nan_through_an_infinite_derivative() -> None:
  """sqrt(x) at 0 has an infinite derivative; with only the other output used, nothing flows back through it."""
  @function
  def root_and_double(x: Tensor) -> tuple[Tensor, Tensor]:
    return x.sqrt(), x * 2.0
  x = Tensor(np.array([0.0, 4.0], np.float32))
  _, d = root_and_double(x)
  g = gradient(d.sum(), [x])[0].numpy()
  np.testing.assert_array_equal(g, [2.0, 2.0])


def test_gettuple_consumers_accumulate() -> None:
  """p read three times: the backward call gets one output gradient holding all three contributions."""
  xv = np.array([1.0, -2.0, 3.0], np.float32)
  x = Tensor(xv)
  p, q = mul_sub(x, x)
  loss = (p * 2.0 + p.sin() + p * q).sum()
  got = gradient(loss, [x])[0].numpy()
  # q = x - x = 0, so d/dx = (2 + cos(p) + q) * 2x (q's own gradient, p, reaches x as p * (1 - 1) = 0)
  np.testing.assert_allclose(got, (2 + np.cos(xv * xv)) * 2 * xv, rtol=1e-6)


def test_gradient_spec_rule_rejects_misaligned_backward_calls() -> None:
  case = _chained_and_mixed_args()
  b = next(u for u in gradient_sink(case.loss, case.wrt).toposort() if is_backward_call(u))
  body = b.src[0]
  dropped = b.replace(src=(UOp(Ops.TUPLE, src=body.src[:1] + body.src[2:]), *b.src[1:]))  # slot 1 removed: later slots shift
  ids = {v.rule for v in check(sink(dropped.gettuple(0)), Stage.TENSOR)}
  assert "gradient.backward_slots" in ids
  too_many = b.replace(src=(UOp(Ops.TUPLE, src=body.src * 2), *b.src[1:]))
  assert "gradient.backward_slots" in {v.rule for v in check(sink(too_many.gettuple(0)), Stage.TENSOR)}
  assert not check(sink(b.gettuple(0)), Stage.TENSOR)


# ---- Tensor.backward and .grad ----

def test_tensor_backward_accumulates_into_grad() -> None:
  rng = rng_for("backward")
  wv, xv = rng.uniform(-1, 1, (3, 2)).astype(np.float32), rng.uniform(-1, 1, (4, 3)).astype(np.float32)
  w, x = Tensor(wv), Tensor(xv)

  @function
  def layer(t: Tensor) -> Tensor:
    return t @ w  # w is captured
  loss = layer(x).square().sum()
  assert w.grad is None
  loss.backward()
  h = xv @ wv
  np.testing.assert_allclose(w.grad.numpy(), xv.T @ (2 * h), rtol=1e-5)
  np.testing.assert_allclose(x.grad.numpy(), (2 * h) @ wv.T, rtol=1e-5)
  loss.backward(w)  # accumulates, only into w
  np.testing.assert_allclose(w.grad.numpy(), 2 * xv.T @ (2 * h), rtol=1e-5)
  np.testing.assert_allclose(x.grad.numpy(), (2 * h) @ wv.T, rtol=1e-5)
  w.grad = None
  assert w.grad is None and x.grad is not None
  assert (x * 2.0).grad is None


# ---- the metamorphic oracle ----

def test_oracle_finds_a_misaligned_backward_call(monkeypatch: pytest.MonkeyPatch) -> None:
  """call_gradient_mismatches can fail: with the call rule's arg gradients handed to the wrong slots it reports."""
  case = _captured()
  root = sink(case.loss)
  assert call_gradient_mismatches(root, case.inputs) == []

  def swapped(ctx: UOp, ret: UOp):
    good = autograd._call_grad(ctx, ret)
    return (None, *reversed(good[1:])) if all(a.shape == ret.src[1].shape for a in ret.src[1:]) else good
  bad_pm = autograd.pm_gradient.replace_rule("grad_value_call", fn=swapped)
  monkeypatch.setattr(autograd, "pm_gradient", bad_pm)
  probe = _two_output_twice()
  assert call_gradient_mismatches(sink(probe.loss), probe.inputs) != []


def test_gradient_oracle_calls_an_undefined_gradient_undefined_both_ways():
  # sqrt at 0 read through a value call and directly, joined by a WHERE that always takes the direct side: through the
  # call the gradient is 0 * inf + inf = NaN, inlined (both sides one node) it is inf; undefined either way, no finding
  buf = UOp.buffer(dtypes.float32, 1, id=4)
  root = buf.alu(Ops.SQRT)
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(UOp.param(0, dtypes.float32, 1, "CPU").alu(Ops.SQRT),)), buf), arg="f")
  where = UOp.const(dtypes.bool, False).expand((1,)).where(call.gettuple(0), root)
  assert call_gradient_mismatches(UOp(Ops.SINK, src=(where,)), {4: np.array([0.0], np.float32)}) == []
  # where it is defined both ways agree
  assert call_gradient_mismatches(UOp(Ops.SINK, src=(where,)), {4: np.array([4.0], np.float32)}) == []

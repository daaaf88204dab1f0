"""The scatter pass: a one-hot sum over data indices becomes an init kernel and an atomic scatter-add, meaning the same."""
from __future__ import annotations

import numpy as np
import pytest

from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.ops import atomic
from tinyspec.semantics.graph import evaluate
from tinyspec.uop import AxisType, Ops, RangeArg, UOp, kernel_calls, walk

IDX = dtypes.index
KERNEL_PASSES = [p for p in PASSES if p.name in ("simplify", "scatter", "optimize", "lower_reduce", "linearize")]


def one_hot_graph(dt=dtypes.float32, V=10, D=4, B=6, k=0, cast=True, with_base=False, hot_of=None, store_at=None, value_of=None, x_of=None):
  """out[o, d] = (base[o, d] +) SUM_b WHERE(o + k == idx[b], g[b, d], 0): an embedding's backward as rangeify writes it.
  hot_of / store_at / value_of replace the compared value, the store index, the summed value (the rule must then refuse)."""
  out, ix, g, base = UOp.param(0, dt, V * D), UOp.param(1, dtypes.int32, B), UOp.param(2, dt, B * D), UOp.param(3, dt, V * D)
  o, d = UOp.range(V, 0), UOp.range(D, 1)
  b = UOp(Ops.RANGE, IDX, (UOp.const(IDX, B),), RangeArg(2, AxisType.REDUCE))
  a = o + k if k else o
  a = hot_of(o, d, b) if hot_of is not None else a.cast(dtypes.int32) if cast else a
  x = ix.index(b).load() if cast or hot_of is not None else ix.index(b).load().cast(IDX)
  if x_of is not None: x = x_of(x)
  v = value_of(o, d, b, g) if value_of is not None else g.index(b * D + d).load()
  red = UOp(Ops.REDUCE, dt, (UOp(Ops.CMPEQ, dtypes.bool, (a, x)).where(v, UOp.const(dt, 0)), b), Ops.ADD)
  val = red + base.index(o * D + d).load() if with_base else red
  e = store_at(o, d) if store_at is not None else o * D + d
  body = UOp(Ops.SINK, src=(out.index(e).store(val).end(o, d),))
  bufs = [UOp.buffer(dt, V * D), UOp.buffer(dtypes.int32, B), UOp.buffer(dt, B * D), UOp.buffer(dt, V * D)]
  root = UOp(Ops.SINK, src=(bufs[0].after(UOp(Ops.CALL, src=(body, *bufs), arg="one_hot_sum")),))
  rng = np.random.default_rng(0)
  idx = rng.integers(-3 + k, V + 3 + k, B).astype(np.int32)  # some indices match no row
  G = (rng.standard_normal((B, D)) * 8).astype(dt.np) if dt.is_float else rng.integers(-1000, 1000, (B, D)).astype(dt.np)
  B0 = np.arange(V * D).astype(dt.np).reshape(V, D)
  inputs = {bufs[0].arg.id: np.full(V * D, 7, dt.np),  # stale contents: the sum must not start from them
             bufs[1].arg.id: idx, bufs[2].arg.id: G.ravel(), bufs[3].arg.id: B0.ravel()}
  want = B0.copy() if with_base else np.zeros((V, D), dt.np)
  rows = idx - k
  m = (rows >= 0) & (rows < V)
  np.add.at(want, rows[m], G[m])
  return root, inputs, want


def run_all(root, inputs, **options):
  stages = lower(root, passes=KERNEL_PASSES, **options)
  return stages, {name: evaluate(r, {k: v.copy() for k, v in inputs.items()})[0] for name, r in stages.items()}


def atomics(root) -> list[UOp]:
  return [u for c in kernel_calls(root) for u in walk((c.src[0],)) if u.op is Ops.ATOMIC]


def holds_atomic(call: UOp) -> bool: return any(u.op is Ops.ATOMIC for u in walk((call.src[0],)))


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("form", [dict(), dict(k=2), dict(cast=False), dict(with_base=True), dict(k=-1, with_base=True)],
                         ids=["plain", "offset", "index", "base", "offset_base"])
def test_one_hot_sum_becomes_an_atomic_scatter(dt, form):
  root, inputs, want = one_hot_graph(dt, **form)
  stages, got = run_all(root, inputs)
  assert len(kernel_calls(stages["scatter"])) == 2 and len(atomics(stages["scatter"])) == 1
  # the init kernel runs first: it is what the scatter kernel's output arg waits for
  sc = next(c for c in kernel_calls(stages["scatter"]) if holds_atomic(c))
  assert sc.src[1].op is Ops.AFTER and kernel_calls(sc.src[1])
  for name, res in got.items():
    if dt.is_float: np.testing.assert_allclose(res.reshape(want.shape), want, rtol=1e-6, atol=1e-5, err_msg=name)
    else: np.testing.assert_array_equal(res.reshape(want.shape), want, err_msg=name)
  # the reduce ranges became loops the optimizer could make threads of: they meet only through the atomic
  linear = next(c for c in kernel_calls(stages["linearize"]) if holds_atomic(c)).src[0].src[1].src
  assert any(u.op is Ops.RANGE and u.arg.kind is AxisType.GLOBAL for u in linear)


def test_float_sum_is_within_the_stated_tolerance():
  root, inputs, want = one_hot_graph(dtypes.float32, V=3, D=2, B=4000)
  _, got = run_all(root, inputs)
  idx, G = inputs[sorted(inputs)[1]], inputs[sorted(inputs)[2]].reshape(4000, 2)
  exact = np.zeros((3, 2)); np.add.at(exact, idx[(idx >= 0) & (idx < 3)], G[(idx >= 0) & (idx < 3)].astype(np.float64))  # noqa: E702
  for row in range(3):
    for col in range(2):
      terms = G[idx == row, col]
      tol = atomic.sum_tolerance(np.concatenate([[0.0], terms]).astype(np.float32), dtypes.float32)
      assert abs(got["linearize"].reshape(3, 2)[row, col] - exact[row, col]) <= tol


@pytest.mark.parametrize("case", [
  dict(store_at=lambda o, d: (o // 2) * 4 + d),                # two rows store one element: the last one wins, not their sum
  dict(value_of=lambda o, d, b, g: g.index(b * 4 + d).load() * o.cast(dtypes.float32)),  # the value depends on the row
  dict(hot_of=lambda o, d, b: (o * 2).cast(dtypes.int32)),     # 2 * o == x: not an index of a row
  dict(hot_of=lambda o, d, b: d.cast(dtypes.int32)),           # the hot range d is also the column the value reads
  # int8(o) == int8(x) wraps: row 300 + j meets x == j too, so the rows the sum reaches are not index(x)
  dict(V=300, hot_of=lambda o, d, b: o.cast(dtypes.int8), x_of=lambda x: x.cast(dtypes.int8)),
], ids=["not_injective", "value_uses_row", "scaled_row", "value_uses_hot_range", "wrapping_cast"])
def test_the_rule_refuses_what_is_no_scatter(case):
  root, inputs, _ = one_hot_graph(dtypes.float32, **case)
  stages, got = run_all(root, inputs)
  assert not atomics(stages["scatter"])
  ref = got["input"]
  for name, res in got.items(): np.testing.assert_allclose(res, ref, rtol=1e-6, atol=1e-5, err_msg=name)


def test_reading_the_output_storage_keeps_the_one_hot_form():
  # the base is read from the output buffer itself (slot 3 is given slot 0's storage): the rule does not reason about
  # what an init before the sum would change there, it leaves the kernel alone
  root, inputs, want = one_hot_graph(dtypes.float32, with_base=True)
  call = kernel_calls(root)[0]
  aliased = root.replace(src=(root.src[0].replace(src=(call.src[1], call.replace(src=(*call.src[:4], call.src[1])))),))
  stages, got = run_all(aliased, inputs)
  assert not atomics(stages["scatter"])
  for name, res in got.items(): np.testing.assert_allclose(res, got["input"], rtol=1e-6, atol=1e-5, err_msg=name)


def test_dense_option_leaves_the_one_hot_sum():
  root, inputs, want = one_hot_graph(dtypes.float32)
  stages, got = run_all(root, inputs, scatter="dense")
  assert not atomics(stages["linearize"]) and len(kernel_calls(stages["linearize"])) == 1
  np.testing.assert_allclose(got["linearize"].reshape(want.shape), want, rtol=1e-6, atol=1e-5)
  with pytest.raises(ValueError, match="scatter option 'sparse'"):
    lower(root, passes=KERNEL_PASSES, scatter="sparse")


# ---- the count fold and the inlining of index-only buffers ----

def count_graph(cond, t, f, n: int = 7, m: int = 5):
  """out[o] = SUM_{r < n} WHERE(cond(r, o), t(o), f(o)) as an int32 kernel over o < m; data[o] feeds t and f."""
  out, data = UOp.param(0, dtypes.int32, m), UOp.param(1, dtypes.int32, m)
  o = UOp.range(m, 0)
  r = UOp(Ops.RANGE, IDX, (UOp.const(IDX, n),), RangeArg(1, AxisType.REDUCE))
  x = data.index(o).load()
  red = UOp(Ops.REDUCE, dtypes.int32, (cond(r, o).where(t(x, r), f(x, r)), r), Ops.ADD)
  body = UOp(Ops.SINK, src=(out.index(o).store(red).end(o),))
  bufs = [UOp.buffer(dtypes.int32, m), UOp.buffer(dtypes.int32, m)]
  root = UOp(Ops.SINK, src=(bufs[0].after(UOp(Ops.CALL, src=(body, *bufs), arg="count")),))
  return root, {bufs[0].arg.id: np.zeros(m, np.int32), bufs[1].arg.id: np.array([3, -7, 1 << 30, 0, 11], np.int32)}


def lt(a, b) -> UOp: return UOp(Ops.CMPLT, dtypes.bool, (a, b))


C = lambda v: UOp.const(IDX, v)  # noqa: E731
CONDS = {
  "c<r+o": lambda c: lambda r, o: lt(C(c), r + o), "r+o<c": lambda c: lambda r, o: lt(r + o, C(c)),
  "c<o-r": lambda c: lambda r, o: lt(C(c), o - r), "o-r<c": lambda c: lambda r, o: lt(o - r, C(c)),
  "o+c<r": lambda c: lambda r, o: lt(o + c, r), "r<2o+c": lambda c: lambda r, o: lt(r, o * 2 + c),
}
VALUES = {"1,0": (lambda x, r: UOp.const(dtypes.int32, 1), lambda x, r: UOp.const(dtypes.int32, 0)),
          "3,-2": (lambda x, r: UOp.const(dtypes.int32, 3), lambda x, r: UOp.const(dtypes.int32, -2)),
          "data,5": (lambda x, r: x, lambda x, r: UOp.const(dtypes.int32, 5))}  # data[o] near int32's max: the product wraps


@pytest.mark.parametrize("values", list(VALUES), ids=list(VALUES))
@pytest.mark.parametrize("cond", list(CONDS), ids=list(CONDS))
def test_a_sum_of_a_linear_condition_folds_to_a_count(cond, values):
  from tinyspec.lower.scatter import SCATTER
  for c in (-20, -3, 0, 2, 4, 9, 30):  # the clamps matter at both ends
    root, inputs = count_graph(CONDS[cond](c), *VALUES[values])
    new = lower(root, passes=[SCATTER])["scatter"]
    assert not any(u.op is Ops.REDUCE for u in walk((kernel_calls(new)[0].src[0],))), (cond, c)
    np.testing.assert_array_equal(evaluate(new, {k: v.copy() for k, v in inputs.items()})[0],
                                  evaluate(root, {k: v.copy() for k, v in inputs.items()})[0], err_msg=f"{cond} c={c}")


@pytest.mark.parametrize("case", ["scaled", "value_uses_r"])
def test_a_sum_the_count_does_not_describe_stays(case):
  from tinyspec.lower.scatter import SCATTER
  cond = (lambda r, o: lt(r * 2, o)) if case == "scaled" else CONDS["c<r+o"](2)
  t = (lambda x, r: r.cast(dtypes.int32)) if case == "value_uses_r" else VALUES["1,0"][0]
  root, inputs = count_graph(cond, t, VALUES["1,0"][1])
  new = lower(root, passes=[SCATTER])["scatter"]
  assert any(u.op is Ops.REDUCE for u in walk((kernel_calls(new)[0].src[0],)))


def embedding_backward(V=10, D=4, B=6, seed=0):
  from tinyspec.frontend import Tensor, inputs_of
  rng = np.random.default_rng(seed)
  W, G = rng.standard_normal((V, D)).astype(np.float32), rng.standard_normal((B, D)).astype(np.float32)
  idx = rng.integers(0, V, B).astype(np.int32)
  w = Tensor(W)
  (Tensor(idx).embedding(w) * Tensor(G)).sum().backward(w)
  want = np.zeros((V, D), np.float32)
  np.add.at(want, idx, G)
  root = Tensor.sink(w.grad)
  return root, inputs_of(root), want


def test_the_frontend_embedding_backward_is_a_scatter():
  # rangeify writes arange into a buffer and compares the indices with it; the pass folds the arange to its index,
  # recomputes it where it is read, and turns the one-hot sum into an init and an atomic scatter
  root, inputs, want = embedding_backward()
  stages = lower(root, passes=[p for p in PASSES if p.name != "render"])
  assert len(kernel_calls(stages["rangeify"])) == 2 and not atomics(stages["rangeify"])
  calls = kernel_calls(stages["scatter"])
  assert len(calls) == 2 and len(atomics(stages["scatter"])) == 1  # the arange kernel is gone
  for name, r in stages.items():
    np.testing.assert_allclose(np.asarray(evaluate(r, {k: v.copy() for k, v in inputs.items()})[0]).reshape(want.shape), want,
                               rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("dim", [0, 1])
def test_the_frontend_scatter_reduce_sum_is_a_scatter(dim):
  from tinyspec.frontend import Tensor, inputs_of
  rng = np.random.default_rng(dim)
  S = rng.standard_normal((5, 3)).astype(np.float32)
  shape = (4, 3) if dim == 0 else (5, 2)
  ix, src = rng.integers(0, S.shape[dim], shape).astype(np.int32), rng.standard_normal(shape).astype(np.float32)
  root = Tensor.sink(Tensor(S).scatter_reduce(dim, Tensor(ix), Tensor(src), "sum"))
  want = S.copy()
  for i in np.ndindex(shape):
    j = list(i)
    j[dim] = ix[i]
    want[tuple(j)] += src[i]
  stages = lower(root, passes=[p for p in PASSES if p.name != "render"])
  assert len(atomics(stages["linearize"])) == 1
  got = evaluate(stages["linearize"], inputs_of(root))[0]
  np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=1e-6, atol=1e-6)


def test_a_constant_hot_index_adds_every_position():
  # x folded to a constant (every position hits one row): the scatter's update no longer depends on its positions'
  # range, and is placed in it so each position still adds (found by the fuzzer as a reduced case)
  root, inputs, _ = one_hot_graph(dtypes.int64, B=100, x_of=lambda x: UOp.const(dtypes.int32, 3),
                                  value_of=lambda o, d, b, g: UOp.const(dtypes.int64, 2))
  stages, got = run_all(root, inputs)
  assert len(atomics(stages["scatter"])) == 1
  for name, res in got.items(): np.testing.assert_array_equal(res, got["input"], err_msg=name)
  assert (got["input"].reshape(10, 4)[3] == 200).all()


def test_an_index_buffer_read_in_a_gate_and_an_index_is_recomputed_at_every_read():
  # the consumer reads the arange buffer three ways: a gated LOAD whose gate tests the element it loads, and a LOAD whose
  # index is loaded from the buffer; each read is replaced, sources first, so no LOAD of the dropped arg is left (a
  # campaign found the gate's read left behind, a PARAM beyond the call's args)
  from tinyspec.frontend import Tensor, inputs_of
  x = Tensor.arange(8).cast(dtypes.int32)
  root = Tensor.sink((x != 3).where(x, 0), x, x.gather(0, (x * 5) % 8))
  stages = lower(root, callify="precompile", passes=[p for p in PASSES if p.name != "render"])  # each pass's output is checked
  args = [len(c.src) - 1 for c in kernel_calls(stages["simplify"])], [len(c.src) - 1 for c in kernel_calls(stages["scatter"])]
  assert sum(args[1]) < sum(args[0])  # the arange is recomputed where it is read, not passed
  ar = np.arange(8, dtype=np.int32)
  want = [np.where(ar != 3, ar, 0), ar, ar[(ar * 5) % 8]]
  for name in ("simplify", "scatter", "linearize"):
    for got, w in zip(evaluate(stages[name], inputs_of(root)), want): np.testing.assert_array_equal(got, w, err_msg=name)

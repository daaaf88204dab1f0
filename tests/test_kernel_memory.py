"""Kernel bodies run with C's memory semantics: read-modify-write loops, loads that see earlier iterations' stores,
the statement and loop order of the generated code. Every hand-built kernel graph is run three ways: the reference
evaluator, the compiled C (CPU backend), and an independent numpy / plain-Python expectation."""
from __future__ import annotations

import numpy as np
import pytest

from tinyspec.dtype import dtypes
from tinyspec.runtime import cpu
from tinyspec.semantics import EvalError, evaluate, evaluate_kernel
from tinyspec.semantics import kernel as kmod
from tinyspec.spec import Stage, check
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp

pytestmark = pytest.mark.spec

F, I32, B = dtypes.float32, dtypes.int32, dtypes.bool


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
  monkeypatch.setenv("TINYSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "tinyspec-cache"))


def c(v: int) -> UOp: return UOp.const(dtypes.index, v)


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, src=xs)


def graph(body: UOp, arrays: list[np.ndarray], written: tuple[int, ...] = (0,)) -> tuple[UOp, dict]:
  """A KERNEL_GRAPH running body once: slot k is a BUFFER holding arrays[k]; the root holds the written slots."""
  bufs = [UOp.buffer(_dt(a), a.size) for a in arrays]
  call = UOp(Ops.CALL, src=(body, *bufs), arg="k")
  root = sink(*(bufs[k].after(call) for k in written))
  return root, {b.arg.id: a.reshape(-1) for b, a in zip(bufs, arrays)}


def _dt(a: np.ndarray):
  return {np.dtype(np.float32): F, np.dtype(np.int32): I32, np.dtype(np.bool_): B, np.dtype(np.float64): dtypes.float64}[a.dtype]


def run3(body: UOp, arrays: list[np.ndarray], want: list[np.ndarray], written: tuple[int, ...] = (0,), legal: bool = True) -> None:
  """reference == compiled C == want, for every written slot."""
  root, inputs = graph(body, arrays, written)
  if legal: assert check(root, Stage.KERNEL_GRAPH) == []
  ref = evaluate(root, {k: v.copy() for k, v in inputs.items()})
  got = cpu.run(root, {k: v.copy() for k, v in inputs.items()})
  for k, (r, g, w) in enumerate(zip(ref, got, want)):
    r, g = np.asarray(r).reshape(-1), np.asarray(g).reshape(-1)
    np.testing.assert_array_equal(g, w.reshape(-1), err_msg=f"C, output {k}")
    np.testing.assert_array_equal(r, w.reshape(-1), err_msg=f"reference, output {k}")


def params(*specs: tuple) -> list[UOp]:
  return [UOp.param(k, dt, n) for k, (dt, n) in enumerate(specs)]


RNG = np.random.default_rng(7)


# ---- read-modify-write into global storage ----
@pytest.mark.parametrize("reduce_outer", [True, False])
def test_any_along_an_axis_with_or(reduce_outer):
  n, m = 5, 4
  x = RNG.random((n, m)) < 0.2
  x[:, 3] = [False, False, False, False, True]  # the user's case: only the last row holds a True
  out, xs = params((B, m), (B, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  if reduce_outer:  # i outer: the load of out[j] runs inside both loops
    body = sink(out.index(j).store(out.index(j).load() | xs.index(i * m + j).load()).end(i, j))
  else:  # i inner: the load names i through AFTER, so it runs in the i loop too
    body = sink(out.index(j).store(out.after(i).index(j).load() | xs.index(i * m + j).load()).end(j, i))
  run3(body, [np.zeros(m, bool), x], [x.any(0)])


def test_all_along_an_axis_with_and():
  n, m = 6, 3
  x = RNG.random((n, m)) < 0.8
  x[:, 0], x[-1], x[0, 1] = True, True, False  # column 1: the last row alone would say True
  out, xs = params((B, m), (B, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  body = sink(out.index(j).store(out.index(j).load() & xs.index(i * m + j).load()).end(i, j))
  run3(body, [np.ones(m, bool), x], [x.all(0)])


def test_max_by_where():
  n, m = 7, 4
  x = RNG.standard_normal((n, m)).astype(np.float32)
  out, xs = params((F, m), (F, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  acc, v = out.index(j).load(), xs.index(i * m + j).load()
  body = sink(out.index(j).store((acc < v).where(v, acc)).end(i, j))
  run3(body, [np.full(m, -np.inf, np.float32), x], [x.max(0)])


def test_accumulator_loaded_twice():
  n, m = 4, 3
  x = RNG.integers(-3, 4, (n, m)).astype(np.int32)
  out, xs = params((I32, m), (I32, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  a = out.index(j)
  body = sink(a.store(a.load() * a.load() + xs.index(i * m + j).load()).end(i, j))
  want = np.ones(m, np.int64)
  for r in range(n): want = want * want + x[r]
  run3(body, [np.ones(m, np.int32), x], [want.astype(np.int32)])


def test_two_stores_to_one_buffer_in_one_loop():
  n = 6
  x = np.arange(10, 10 + n, dtype=np.int32)
  out, xs = params((I32, n), (I32, n))
  i = UOp.range(n, 0)
  first = out.index(i).store(xs.index(i).load() * UOp.const(I32, 2))
  nxt = (i + 1) % n
  # reads what `first` wrote this iteration, then writes the next element, which the next iteration overwrites
  second = out.index(nxt).store(out.after(first).index(i).load() + UOp.const(I32, 1))
  body = sink(UOp(Ops.GROUP, src=(first, second)).end(i))
  want = np.full(n, -5, np.int64)
  for r in range(n):
    want[r] = x[r] * 2
    want[(r + 1) % n] = want[r] + 1
  run3(body, [np.full(n, -5, np.int32), x], [want.astype(np.int32)])


def test_prefix_sum_reads_the_previous_iteration():
  n = 9
  x = RNG.integers(-50, 50, n).astype(np.int32)
  out, xs = params((I32, n), (I32, n))
  i = UOp.range(n - 1, 0)
  body = sink(out.index(i + 1).store(out.index(i).load() + xs.index(i + 1).load()).end(i))
  start = np.zeros(n, np.int32)
  start[0] = x[0]
  run3(body, [start, x], [np.cumsum(x).astype(np.int32)])


def test_reading_the_next_element_sees_the_old_value():
  n = 8
  x = np.arange(n, dtype=np.int32) * 3
  out, = params((I32, n))
  i = UOp.range(n - 1, 0)
  body = sink(out.index(i).store(out.index(i + 1).load() + UOp.const(I32, 1)).end(i))
  want = x.copy()
  want[:-1] = x[1:] + 1
  run3(body, [x.copy()], [want])


def test_gated_read_modify_write():
  n, m = 5, 4
  x = RNG.integers(-5, 6, (n, m)).astype(np.int32)
  out, xs = params((I32, m), (I32, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  v = xs.index(i * m + j).load()
  body = sink(out.index(j).store(out.index(j).load() + v, UOp.const(I32, 0) < v).end(i, j))
  run3(body, [np.full(m, 100, np.int32), x], [100 + np.where(x > 0, x, 0).sum(0).astype(np.int32)])


# ---- accumulators ----
def test_nested_ranges_accumulator_in_the_inner_loop():
  n, p, q = 3, 4, 5
  x = RNG.integers(-9, 10, (n, p, q)).astype(np.int32)
  out, xs = params((I32, n), (I32, n * p * q))
  i, j, k = UOp.range(n, 0), UOp.range(p, 1), UOp.range(q, 2)
  acc = UOp.buffer(I32, 1, addrspace=AddrSpace.REG)
  init = acc.after(i).index(c(0)).store(UOp.const(I32, 7))
  upd = acc.index(c(0)).store(acc.after(init, j, k).index(c(0)).load() * UOp.const(I32, 3) + xs.index((i * p + j) * q + k).load()).end(j, k)
  body = sink(out.index(i).store(acc.after(upd).index(c(0)).load()).end(i))
  want = np.full(n, 7, np.int64)
  for jj in range(p):
    for kk in range(q): want = (want * 3 + x[:, jj, kk]) % 2**32
  want = want.astype(np.uint32).view(np.int32)
  run3(body, [np.zeros(n, np.int32), x], [want])
  # the range-form REDUCE over the same two ranges: the same sequential accumulation (here a plain sum)
  red = UOp(Ops.REDUCE, I32, (xs.index((i * p + j) * q + k).load(), j, k), Ops.ADD)
  run3(sink(out.index(i).store(red).end(i)), [np.zeros(n, np.int32), x], [x.sum((1, 2)).astype(np.int32)])


def test_several_accumulators():
  n, k = 4, 6
  x = RNG.integers(-20, 20, (n, k)).astype(np.int32)
  out, xs = params((I32, 2 * n), (I32, n * k))
  i, r = UOp.range(n, 0), UOp.range(k, 1)
  v = xs.index(i * k + r).load()
  s = UOp(Ops.REDUCE, I32, (v, r), Ops.ADD)
  mx = UOp(Ops.REDUCE, I32, (v, r), Ops.MAX)
  body = sink(out.index(i).store(s).end(i), out.index(i + n).store(mx - s).end(i))
  run3(body, [np.zeros(2 * n, np.int32), x], [np.concatenate([x.sum(1), x.max(1) - x.sum(1)]).astype(np.int32)])
  # two REG accumulators updated in one loop, one reading the other's running value
  a1, a2 = UOp.buffer(I32, 1, addrspace=AddrSpace.REG), UOp.buffer(I32, 1, addrspace=AddrSpace.REG)
  i1 = a1.after(i).index(c(0)).store(UOp.const(I32, 0))
  i2 = a2.after(i).index(c(0)).store(UOp.const(I32, 0))
  u1 = a1.index(c(0)).store(a1.after(i1, r).index(c(0)).load() + v)
  u2 = a2.index(c(0)).store(a2.after(i2, r).index(c(0)).load() + a1.after(u1).index(c(0)).load())
  both = UOp(Ops.GROUP, src=(u1, u2)).end(r)
  body = sink(out.index(i).store(a1.after(both).index(c(0)).load()).end(i), out.index(i + n).store(a2.after(both).index(c(0)).load()).end(i))
  run3(body, [np.zeros(2 * n, np.int32), x], [np.concatenate([x.sum(1), np.cumsum(x, 1).sum(1)]).astype(np.int32)])


def test_register_after_its_loop_holds_the_last_iteration():
  n = 5
  x = RNG.integers(-9, 9, n).astype(np.int32)
  out, xs = params((I32, n + 1), (I32, n))
  i = UOp.range(n, 0)
  acc = UOp.buffer(I32, 1, addrspace=AddrSpace.REG)
  put = acc.after(i).index(c(0)).store(xs.index(i).load())
  loop = out.index(i).store(acc.after(put).index(c(0)).load() * UOp.const(I32, 2)).end(i)
  body = sink(loop, out.index(c(n)).store(acc.after(loop).index(c(0)).load()))
  run3(body, [np.zeros(n + 1, np.int32), x], [np.concatenate([x * 2, x[-1:]]).astype(np.int32)])


# ---- last write wins, in C's loop order ----
def test_last_write_wins_where_the_index_ignores_a_range():
  n, m = 3, 5
  x = RNG.integers(0, 100, (n, m)).astype(np.int32)
  out, xs = params((I32, n), (I32, n * m))
  i, j = UOp.range(n, 0), UOp.range(m, 1)
  v = xs.index(i * m + j).load()
  run3(sink(out.index(i).store(v).end(i, j)), [np.zeros(n, np.int32), x], [x[:, -1]])  # j inner
  run3(sink(out.index(i).store(v).end(j, i)), [np.zeros(n, np.int32), x], [x[:, -1]])  # j outer: still the last j
  out2, xs2 = params((I32, m), (I32, n * m))
  v2 = xs2.index(i * m + j).load()
  run3(sink(out2.index(j).store(v2).end(i, j)), [np.zeros(m, np.int32), x], [x[-1]])  # the outer range is ignored
  # a gate picks which iterations write: the last one whose gate holds wins
  run3(sink(out.index(i).store(v, j < 3).end(i, j)), [np.zeros(n, np.int32), x], [x[:, 2]])


def test_hoisted_load_reads_before_the_loop():
  # out[i] = out[0] + 1: the load uses no range, so it runs once before the loop, as in the generated C
  n = 5
  out, = params((I32, n))
  i = UOp.range(n, 0)
  body = sink(out.index(i).store(out.index(c(0)).load() + UOp.const(I32, 1)).end(i))
  run3(body, [np.full(n, 4, np.int32)], [np.full(n, 5, np.int32)])


# ---- what it cannot run ----
def test_loop_bound_from_a_loaded_value_raises():
  out, nb = params((I32, 4), (I32, 1))
  r = UOp(Ops.RANGE, dtypes.index, (nb.index(c(0)).load().cast(dtypes.index),), UOp.range(4, 0).arg)
  body = sink(out.index(r).store(UOp.const(I32, 1)).end(r))
  with pytest.raises(EvalError, match="^RANGE.*loaded value"):
    evaluate_kernel(body, [np.zeros(4, np.int32), np.array([3], np.int32)])


def test_store_whose_target_is_not_an_index_raises():
  out, = params((I32, 4))
  i = UOp.range(4, 0)
  body = sink(UOp(Ops.STORE, dtypes.void, (out, UOp.const(I32, 1))).end(i))
  with pytest.raises(EvalError, match="^STORE.*not an INDEX"):
    evaluate_kernel(body, [np.zeros(4, np.int32)])


def test_out_of_bounds_under_a_true_gate_raises():
  out, xs = params((I32, 4), (I32, 4))
  i = UOp.range(4, 0)
  body = sink(out.index(i).store(out.index(i).load() + xs.index(i + 1).load()).end(i))
  with pytest.raises(EvalError, match="^LOAD.*out of bounds"):
    evaluate_kernel(body, [np.zeros(4, np.int32), np.zeros(4, np.int32)])


# ---- the order is linearize's, and vectorization keeps the reduce loop the only sequential one ----
def test_statement_order_is_linearize_order():
  import programs
  # linearize and the evaluator share one scheduler (tinyspec.loop_order): what is left to hold is that the
  # evaluator's expansion of a range-form REDUCE is lower_reduce's, so a kernel SINK runs as its lowered program
  from tinyspec.loop_order import one_end_per_range, schedule
  from tinyspec.lower.kernel_map import kernel_calls
  from tinyspec.lower.pipeline import lower
  from tinyspec.lower.lower_reduce import pm_lower_reduce
  from tinyspec.rewrite import graph_rewrite
  from tinyspec.semantics.loops import expand_reduces

  def shape_of(order: list[UOp]) -> list:  # buffer ids aside (the evaluator's accumulators have ids of their own)
    return [(u.op, u.dtype, u.arg.size if u.op is Ops.BUFFER else u.arg) for u in order]
  reduced = 0
  for name in ("gemm", "softmax", "conv2d", "layernorm", "argmax", "scatter_add"):
    stages = lower(programs.PROGRAMS[name]().root, backend="c")
    for call in kernel_calls(stages["optimize"]):  # REDUCE still in range form: expanded as lower_reduce does
      body = call.src[0]
      reduced += any(u.op is Ops.REDUCE for u in body.toposort())
      want = schedule(one_end_per_range(graph_rewrite(body, pm_lower_reduce)))
      assert shape_of(schedule(one_end_per_range(expand_reduces(body)))) == shape_of(want), name
  assert reduced >= 4


def test_matmul_runs_the_reduce_loop_only(monkeypatch):
  n, m, k = 16, 12, 10
  out, a, b = params((F, n * m), (F, n * k), (F, k * m))
  i, j, r = UOp.range(n, 0), UOp.range(m, 1), UOp.range(k, 2)
  red = UOp(Ops.REDUCE, F, (a.index(i * k + r).load() * b.index(r * m + j).load(), r), Ops.ADD)
  body = sink(out.index(i * m + j).store(red).end(i, j))
  x, y = RNG.integers(-4, 5, (n, k)).astype(np.float32), RNG.integers(-4, 5, (k, m)).astype(np.float32)
  passes = []
  orig = kmod.KernelEval._block
  monkeypatch.setattr(kmod.KernelEval, "_block", lambda self, *a: (passes.append(1), orig(self, *a))[1])
  res = np.zeros(n * m, np.float32)
  evaluate_kernel(body, [res, x.reshape(-1), y.reshape(-1)])
  np.testing.assert_array_equal(res.reshape(n, m), x @ y)  # small integers: exact in any order
  assert len(passes) <= k + 4  # the kernel, i, j once each (vectorized) and one pass per reduce iteration


def test_one_array_bound_to_two_slots_is_one_storage():
  n = 6
  x = np.arange(n, dtype=np.int32) * 10
  p0, p1 = params((I32, n), (I32, n))
  i = UOp.range(n - 1, 0)
  body = sink(p0.index(i + 1).store(p1.index(i).load() + UOp.const(I32, 1)).end(i))  # reads what the last iteration wrote
  buf = UOp.buffer(I32, n)
  root = sink(buf.after(UOp(Ops.CALL, src=(body, buf, buf), arg="k")))
  want = x[0] + np.arange(n, dtype=np.int32)
  np.testing.assert_array_equal(np.asarray(evaluate(root, {buf.arg.id: x.copy()})[0]), want)
  np.testing.assert_array_equal(np.asarray(cpu.run(root, {buf.arg.id: x.copy()})[0]), want)


def test_gpu_threads_run_at_once_and_must_not_race():
  n = 6
  out, xs = params((I32, n), (I32, n))
  g = UOp(Ops.SPECIAL, dtypes.index, (c(n),), "gidx0")
  body = sink(out.index(g).store(xs.index((g + 1) % n).load() * UOp.const(I32, 2)))
  res, x = np.zeros(n, np.int32), np.arange(n, dtype=np.int32)
  evaluate_kernel(body, [res, x])
  np.testing.assert_array_equal(res, np.roll(x, -1) * 2)
  racy = sink(out.index(g).store(out.index((g + 1) % n).load() + UOp.const(I32, 1)))  # thread g reads what g+1 writes
  with pytest.raises(EvalError, match="^SPECIAL.*threads"):
    evaluate_kernel(racy, [res, x])


def test_two_thread_axes_with_a_per_thread_register_accumulator():
  # a matmul program as a GPU runs it: thread (i, j) sums a[i, k] * b[k, j] in its own register
  M, K, N = 4, 5, 3
  out, a, b = params((I32, M * N), (I32, M * K), (I32, K * N))
  gi = UOp(Ops.SPECIAL, dtypes.index, (c(M),), "gidx1")
  gj = UOp(Ops.SPECIAL, dtypes.index, (c(N),), "gidx0")
  acc = UOp.buffer(I32, 1, addrspace=AddrSpace.REG)
  k = UOp.range(K, 0, AxisType.REDUCE)
  init = acc.index(c(0)).store(UOp.const(I32, 0))
  slot = acc.after(init, k).index(c(0))
  update = slot.store(slot.load() + a.index(gi * c(K) + k).load() * b.index(k * c(N) + gj).load()).end(k)
  body = sink(out.index(gi * c(N) + gj).store(acc.after(update).index(c(0)).load()))
  av, bv = np.arange(M * K, dtype=np.int32) - 7, np.arange(K * N, dtype=np.int32) * 3 - 11
  res = np.zeros(M * N, np.int32)
  evaluate_kernel(body, [res, av, bv])
  np.testing.assert_array_equal(res.reshape(M, N), av.reshape(M, K) @ bv.reshape(K, N))

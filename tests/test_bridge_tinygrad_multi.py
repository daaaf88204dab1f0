"""The tinygrad bridge on sharded programs (Tensor.shard over a device tuple): the callified graph's storage over the tuple
is one BUFFER per device, tinygrad's all-reduce call is the nested kernel graph tinygrad lowers it into, and every
stage of every step translates in full, is legal and gives tinygrad's numbers."""
from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad.check import Report, evaluate_callified, run_check  # noqa: E402
from tinyspec.bridge.tinygrad.translator import STAGES  # noqa: E402
from tinyspec.spec import Stage, check  # noqa: E402
from tinyspec.uop import Ops, UOp, body_kind, substitute  # noqa: E402

pytestmark = pytest.mark.tinygrad
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tinygrad"
D2, D3 = ("CPU:0", "CPU:1"), ("CPU:0", "CPU:1", "CPU:2")
A = (np.arange(24, dtype=np.float32).reshape(6, 4) - 10) / 4
W = (np.arange(24, dtype=np.float32).reshape(4, 6) % 5 - 2) / 2


def assert_holds_fully(rep: Report) -> None:
  """Every stage of every step translated in full, legal, and all four comparisons of numbers ran and agreed."""
  for r in [*rep.steps, rep]:
    assert {s: (d, n) for s, (d, n) in r.translation.coverage().items() if d != n} == {}
    assert all(r.translation.graphs[s] for s in STAGES)
    assert {s: [str(v) for _, v in vs] for s, vs in r.violations.items() if vs} == {}
    assert r.ran == {"tensor": True, "callified": True, "kernel ASTs": True, "programs": True}, r.numbers
    assert all(x is None for x in r.numbers.values()), r.numbers
  assert rep.all_ok and rep.all_unchecked == []


def test_callified_storage_over_a_device_tuple_is_one_buffer_per_device():
  # x * 2 sharded on axis 0: tinygrad stores into UNSHARD(RESHAPE(PARAM over (CPU, CPU:1))); tinyspec's storage is on one
  # device, so the call takes one BUFFER per device and its body stores each device's block there
  from tinygrad import Tensor
  rep = run_check(lambda: Tensor(A).shard(D2, axis=0) * 2)
  t = rep.translation
  call = t.graphs["callified"][0][1]
  (bufs, axis), = t.output_shards
  assert axis == 0 and [b.arg.device for b in bufs] == ["CPU", "CPU:1"] and [b.arg.size for b in bufs] == [12, 12]
  assert all(b in call.src[1:] for b in bufs)
  mine = [e for e in call.src[0].src if e.op is Ops.AFTER and e.src[0].op is Ops.RESHAPE and call.src[1 + e.src[0].src[0].arg.slot] in bufs]
  stores = {e.src[0].src[0].arg.device: e.src[1] for e in mine}
  # each device's STORE writes that device's block: the COPY to it of the SHRINK to its rows
  for dev, off in (("CPU", 0), ("CPU:1", 3)):
    v = stores[dev].src[1]
    assert v.op is Ops.COPY and v.arg == dev and v.src[0].op is Ops.SHRINK and v.src[0].arg[0] == (off, 3)
  assert check(call, Stage.TENSOR) == []
  np.testing.assert_array_equal(evaluate_callified(t)[0], A * 2)
  # the rules see the per-device args: a body that stores device 1's block into the PARAM of device 0's BUFFER is flagged
  p0, p1 = (e.src[0].src[0] for e in mine)
  swapped = substitute(call, {p1: UOp.param(p0.arg.slot, p1.dtype, p1.arg.size, p1.arg.device)})
  assert "call.param_device" in {v.rule for v in check(swapped, Stage.TENSOR)}


def test_the_all_reduce_is_the_nested_kernel_graph_tinygrad_lowers_it_into():
  # a sum across the split: tinygrad's kernel graph holds CALL(SINK(STORE(PARAM 0, COPY(MSELECT(PARAM 1, 0)) + ...)))
  # named allreduce, a precompiled call it lowers with get_kernel_graph when it runs: that kernel graph is its body,
  # over one arg per device, its copies COPY calls between the devices
  from tinygrad import Tensor
  rep = run_check(lambda: Tensor(A).shard(D2, axis=0).sum())
  assert_holds_fully(rep)
  t = rep.translation
  kg = t.kernel_graph()
  (ar,) = [u for u in kg.toposort() if u.op is Ops.CALL and u.arg == "allreduce"]
  assert body_kind(ar.src[0]) == "graph"
  assert [a.arg.device for a in ar.src[1:] if a.op is Ops.BUFFER] == ["CPU", "CPU:1"]
  copies = [u for u in ar.src[0].toposort() if u.op is Ops.CALL and u.src[0].op is Ops.COPY]
  assert sorted(c.src[0].arg for c in copies) == ["CPU", "CPU:1"]
  # the call is one node in both devices' entries: each device's kernel waits on the same all-reduce
  assert sum(u is ar for u in kg.toposort()) == 1 and len(t.graphs["kernel_graph"]) == 2
  # the all-reduce's own kernel graph, checked on its own, has one PARAM per device of each arg
  (own, graph), = [(r, g) for r, g in t.graphs["kernel_graph"] if r is not t.bound_graphs[t.main_kernel_graph][0]]
  params = {(u.arg.slot, u.arg.device) for u in graph.toposort() if u.op is Ops.PARAM and u.arg.size == 1}
  assert {(0, "CPU"), (1, "CPU:1"), (2, "CPU"), (3, "CPU:1")} <= params


@pytest.mark.parametrize("how", ["RING", "ALL2ALL"])
def test_ring_and_all_to_all_reduces_over_three_devices_hold(how):
  # tinygrad's ring and all-to-all all-reduces (chosen with RING=2 / ALL2ALL=2) chunk the partial sums and pass them
  # around the devices: their copies wait on calls over the other PARAMs, all found
  from tinygrad import Context, Tensor
  def prog():
    with Context(**{how: 2}): return (Tensor(A).shard(D3, axis=0) * 2).sum(0).realize()
  rep = run_check(prog)
  assert_holds_fully(rep)
  np.testing.assert_allclose(rep.capture.outputs[0], (A * 2).sum(0), rtol=1e-6)


SHARDED = {
  "tensor parallel": lambda T: (T(A).shard(D2) @ T(W).shard(D2, axis=1)).relu().sum(1),
  "row parallel": lambda T: T(A).shard(D2, axis=1) @ T(W).shard(D2, axis=0),
  "three devices": lambda T: (T(A).shard(D3, axis=0) * 2).max(0),
  "gathered": lambda T: (T(A).shard(D2, axis=0) + 1).to("CPU") * 2,
  "mean and var": lambda T: (T(A).shard(D2, axis=0).mean(), T(A).shard(D2, axis=0).var(0)),
  "int": lambda T: (T(np.arange(12, dtype=np.int32).reshape(6, 2)).shard(D2, axis=0) * 3).sum(),
  "argmax across the split": lambda T: T(A).shard(D2, axis=0).argmax(0),   # its kernels index by the DEVICE range
}


@pytest.mark.parametrize("name", list(SHARDED))
def test_sharded_programs_hold_at_every_stage(name):
  from tinygrad import Tensor
  assert_holds_fully(run_check(lambda: SHARDED[name](Tensor)))


def test_sharded_storage_realized_then_assigned_is_checked_at_every_step():
  # storage over the device tuple realized, then assigned into: the second step reads its per-device contents (captured
  # per device), and the output the last step wrote is that step's, not a step of its own with nothing run
  from tinygrad import Tensor
  def prog():
    x = Tensor(A).shard(D2, axis=0).contiguous().realize()
    x.assign(x * 2 + 1).realize()
    return x
  rep = run_check(prog)
  assert len(rep.steps) == 1 and rep.steps[0].translation.graphs["kernel_graph"]
  assert_holds_fully(rep)
  inputs = rep.capture.inputs
  (data,) = [d for b, d in inputs.items() if isinstance(b.arg.device, tuple)]
  np.testing.assert_array_equal(data.reshape(2, 3, 4), A.reshape(2, 3, 4))
  np.testing.assert_array_equal(rep.capture.outputs[0], A * 2 + 1)


def test_data_parallel_training_steps_hold_and_train_as_numpy_does():
  # sharded_train_sgd.py: batch sharded, weights replicated, SGD; the second step reads the replicated weights the first
  # wrote, per device, and the weights are numpy's SGD
  ns = runpy.run_path(str(EXAMPLES / "sharded_train_sgd.py"))
  rep = run_check(ns["program"])
  assert len(rep.steps) == 1
  assert_holds_fully(rep)
  replicas = [d for b, d in rep.capture.inputs.items() if isinstance(b.arg.device, tuple)]
  assert replicas and all(np.array_equal(d[0], d[1]) for d in replicas)
  X, Y, w1, w2 = (ns[k].astype(np.float64) for k in ("X", "Y", "W1", "W2"))
  for _ in range(2):
    h = X @ w1
    a = np.maximum(h, 0)
    d = 2 * (a @ w2 - Y) / Y.size
    gw2, dh = a.T @ d, (d @ w2.T) * (h > 0)
    w1, w2 = w1 - 0.1 * X.T @ dh, w2 - 0.1 * gw2
  np.testing.assert_allclose(rep.capture.outputs[0], w1, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(rep.capture.outputs[1], w2, rtol=1e-5, atol=1e-6)


def test_tinyjit_data_parallel_steps_are_read_from_per_device_storage():
  # TinyJit runs the realizes its capture took as one schedule, and the bridge then reads each step's numbers from its
  # storage alone: for storage over a device tuple, device 0's replica or the devices' blocks side by side
  from tinygrad import Context, Tensor, TinyJit, nn
  X, Y = A[:, :2] * 2, A[:, 2:] - 1
  def prog():
    w = Tensor(W[:2, :2].copy()).shard(D2).contiguous().realize()
    opt = nn.optim.SGD([w], lr=0.05)
    @TinyJit
    def step(x, y):
      opt.zero_grad()
      (x @ w - y).square().mean().backward()
      return (x @ w).realize(*opt.schedule_step())
    x, y = Tensor(X).shard(D2, axis=0).contiguous().realize(), Tensor(Y).shard(D2, axis=0).contiguous().realize()
    with Context(TRAINING=1):
      for _ in range(3): step(x, y)
    return w
  rep = run_check(prog)
  assert_holds_fully(rep)
  # the jitted steps' x @ w is split (UNSHARD of storage over the tuple), w replicated: both read from per-device storage
  split = [r for r in rep.steps if any(u.op.name == "UNSHARD" for u in r.capture.realized)]
  assert len(split) >= 2 and all(r.capture.unread is None for r in rep.steps)


def test_an_all_reduce_over_a_symbolic_shape_holds_at_every_step():
  # t[:rows].sum(1) split along the summed axis, rows a bound Variable: tinygrad's all-reduce call is passed no variable
  # and its body reads rows as its caller's p1 (resolve_linear_call: such a call inherits the caller's scope); its
  # buffers of shape (rows,) are allocated at the max, 4, and its kernels read them through SHRINK(PARAM 4, 0, p1)
  from tinygrad import Tensor, UOp
  def prog():
    rows = UOp.variable("rows", 1, 4).bind(3)
    return Tensor.ones(4, 4).shard(D2, axis=1).realize()[:rows].sum(1)
  rep = run_check(prog)
  assert_holds_fully(rep)
  np.testing.assert_array_equal(rep.capture.outputs[0], [4.0, 4.0, 4.0])
  t = rep.translation
  # the all-reduce's own kernel graph, checked on its own: its storage of shape (rows,) is 4 elements, as allocated
  (graph,) = [g for r, g in t.graphs["kernel_graph"] if r is not t.bound_graphs[t.main_kernel_graph][0]]
  assert {u.arg.size for u in graph.toposort() if u.op is Ops.BUFFER} == {4}
  # in the program's kernel graph the all-reduce's kernels read rows bound to 3, the value the runtime launched them with
  (ar,) = [u for u in t.kernel_graph().toposort() if u.op is Ops.CALL and u.arg == "allreduce"]
  binds = {(u.src[0].arg.name, u.src[1].arg) for u in ar.src[0].toposort() if u.op is Ops.BIND}
  assert binds == {("rows", 3)}


def test_a_custom_kernel_over_sharded_tensors_is_one_kernel_call_per_device():
  # tinygrad runs a custom kernel over sharded args once per device, its PARAMs a shard's size (8 of 16 elements): at the
  # tensor stage it is one CALL per device, each over that device's storage, and the output is the MULTI of each device's
  # storage waiting on its own run (one CALL over the whole args broke call.param_size and kgraph.one_device)
  from tinygrad import Tensor
  def program():
    mod = runpy.run_path(str(EXAMPLES / "sharded_custom_kernel.py"))
    a = Tensor(A[:4]).shard(D2, axis=0).realize()
    return mod["doubled"](a)
  rep = run_check(program)
  assert_holds_fully(rep)
  g = rep.translation.graphs["tensor"][0][1]
  out = next(u for u in g.toposort() if u.op is Ops.MULTI and u.src[0].op is Ops.AFTER)
  calls = [x.src[1] for x in out.src]
  assert out.arg == 0 and [len(x.src) for x in out.src] == [2, 2]
  for dev, x, c in zip(("CPU", "CPU:1"), out.src, calls):
    assert c.op is Ops.CALL and body_kind(c.src[0]) == "kernel" and {a.device for a in c.src[1:]} == {dev}
    assert sorted(p.arg.size for p in c.src[0].toposort() if p.op is Ops.PARAM) == [8, 8] and x.src[0] in c.src[1:]


def test_a_custom_kernel_over_sharded_values_not_yet_realized_runs_on_each_devices_shard():
  # the input a sharded value (`Tensor(A).contiguous().shard(...)`, unrealized: a MULTI of per-device values, no
  # storage yet): each device's kernel CALL takes that device's shard, so every CALL is on one device
  from tinygrad import Tensor
  def program():
    mod = runpy.run_path(str(EXAMPLES / "sharded_custom_kernel.py"))
    return mod["doubled"](Tensor(A[:4]).contiguous().shard(D2, axis=0))
  rep = run_check(program)
  g = rep.translation.graphs["tensor"][0][1]
  calls = [u for u in g.toposort() if u.op is Ops.CALL and body_kind(u.src[0]) == "kernel"]
  assert len(calls) == 2 and [sorted({a.device for a in c.src[1:]}) for c in calls] == [["CPU"], ["CPU:1"]]
  assert not [v.rule for vs in rep.violations.values() for _, v in vs if v.rule.endswith("one_device")]
  np.testing.assert_array_equal(np.reshape(rep.values["tensor"][0], -1), (A[:4] * 2).reshape(-1))

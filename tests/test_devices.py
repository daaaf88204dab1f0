"""Devices: a graph over two simulated devices ("CPU:0", "CPU:1"), with COPY moving a value between them, lowers to
per-device kernels and a copy, and runs on the reference, CPU and OpenCL backends. The rules: an op combines values of
one device (tensor.one_device), a kernel runs on one device, host memory aside (kgraph.one_device), and a COPY call
writes the device it names (kgraph.copy_device); the lowering keeps them at every stage."""
from __future__ import annotations

import numpy as np
import pytest

from builders import assert_breaks_exactly, buf, call, k_add, program, rng, sink
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.runtime import run
from tinyspec.spec import engine
from tinyspec.spec.tensor import one_device
from tinyspec.uop import BufferArg, Ops, UOp, kernel_calls, storage_of, walk

F32 = dtypes.float32

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 0.5, np.float32)


def two_device_graph() -> UOp:
  x, y = Tensor(A, device="CPU:0"), Tensor(B, device="CPU:1")
  return Tensor.sink((x + y.copy_to("CPU:0")).sum(0), (y * 2).sum(1))


@pytest.mark.parametrize("backend", ["reference", "cpu", "opencl"])
def test_a_graph_over_two_devices_runs_per_device(backend, request):
  if backend == "opencl": request.getfixturevalue("opencl")
  root = two_device_graph()
  assert check(root, Stage.TENSOR) == []
  got = run(root, inputs_of(root), backend)
  np.testing.assert_allclose(got[0], (A + B).sum(0))
  np.testing.assert_allclose(got[1], (B * 2).sum(1))


def test_each_kernel_touches_one_device_and_a_copy_crosses():
  stages = lower(two_device_graph())
  kg = stages["rangeify"]
  devices = [{storage_of(a).arg.device for a in c.src[1:]} for c in kernel_calls(kg)]
  assert sorted(map(sorted, devices)) == [["CPU:0"], ["CPU:1"]]
  copies = [u for u in walk((kg,)) if u.op is Ops.CALL and u.src[0].op is Ops.COPY]
  assert len(copies) == 1 and copies[0].src[0].arg == "CPU:0" and storage_of(copies[0].src[2]).arg.device == "CPU:1"


def _kernel_devices(kg: UOp) -> list[list[str]]:
  return sorted(sorted({storage_of(a).arg.device for a in c.src[1:]}) for c in kernel_calls(kg))


def _legal_at_every_stage(root: UOp, **options) -> dict[str, UOp]:
  assert check(root, Stage.TENSOR) == []
  stages = lower(root, **options)  # each pass's output is verified at its stage
  for p in PASSES: assert check(stages[p.name], p.stage_out) == [], p.name
  return stages


# ---- TENSOR: tensor.one_device ----
def test_adding_values_of_two_devices_is_flagged():
  a, b = Tensor(A, device="CPU:0").uop, Tensor(B, device="CPU:1").uop  # UOps: the frontend refuses this sum itself
  root = sink(a.alu(Ops.ADD, b))
  vs = assert_breaks_exactly(root, Stage.TENSOR, {"tensor.one_device"})
  assert "ADD combines values on CPU:0 and CPU:1 (COPY one first)" in vs[0].message


def test_a_store_of_another_devices_value_is_flagged():
  target, value = buf(4, id=7101, device="CPU:1"), buf(4, id=7102)
  vs = assert_breaks_exactly(sink(target.after(target.store(value))), Stage.TENSOR, {"tensor.one_device"})
  assert "STORE combines values on CPU:1 and CPU" in vs[0].message


def test_a_where_of_two_devices_is_flagged_by_the_walk_and_by_the_rules_alike():
  a, b = buf(4, id=7111), buf(4, id=7112, device="CPU:1")
  for g in (sink((a < a).where(a, b)), sink((b < b).where(a, a)), sink(a * b), sink(b + a)):
    fast = [(v.rule, v.message) for v in check(g, Stage.TENSOR)]
    engine.set_fused(False)
    try:
      for u in g.toposort(): u._cache.clear()
      slow = [(v.rule, v.message) for v in check(g, Stage.TENSOR)]
    finally: engine.set_fused(True)
    assert fast == slow and [r for r, _ in fast] == ["tensor.one_device"]


def test_values_without_a_device_and_copies_go_with_any_device():
  x = buf(4, id=7121, device="CPU:1")
  c = UOp.const(F32, 2.0).expand((4,))
  y = buf(4, id=7122)
  legal = [x + c, c * x, (x < c).where(c, x), x + UOp(Ops.COPY, F32, (y,), "CPU:1"), UOp(Ops.COPY, F32, (x,), "CPU") + y]
  assert check(sink(*legal), Stage.TENSOR) == []


def test_after_and_call_args_may_span_devices():
  x, y = buf(4, id=7131, device="CPU:1"), buf(4, id=7132)
  # an AFTER of CPU storage waiting for a STORE on CPU:1
  w = x.after(x.store(x + x))
  assert check(sink(y.after(y.store(y + y), x.store(x * x)), w), Stage.TENSOR) == []
  # a value call whose args are on two devices, each PARAM on its arg's device, the body COPYing one over
  p0, p1 = UOp.param(0, F32, 4, "CPU:1"), UOp.param(1, F32, 4)
  body = UOp(Ops.TUPLE, dtypes.void, (p0 + UOp(Ops.COPY, F32, (p1,), "CPU:1"),))
  assert check(sink(call(body, x, y).gettuple(0)), Stage.TENSOR) == []
  # a body combining its PARAMs of two devices is what is flagged, inside the body
  bad = UOp(Ops.TUPLE, dtypes.void, (p0 + p1,))
  assert_breaks_exactly(sink(call(bad, x, y).gettuple(0)), Stage.TENSOR, {"tensor.one_device"})


def test_devices_are_compared_with_equality_whatever_their_type():
  # a sharded value's device is a tuple of names: tuples equal as values agree, unequal ones do not
  def node(dev: object, i: int) -> UOp: return UOp(Ops.BUFFER, F32, (), BufferArg(7140 + i, 4, dev))  # type: ignore[arg-type]
  same = UOp(Ops.ADD, F32, (node(("CPU:0", "CPU:1"), 1), node(tuple(["CPU:0", "CPU:1"]), 2)))
  other = UOp(Ops.ADD, F32, (node(("CPU:0", "CPU:1"), 3), node(("CPU:0", "CPU:2"), 4)))
  assert one_device.fn(same, engine.T_TOP) is None
  assert one_device.fn(other, engine.T_TOP) == ("ADD combines values on ('CPU:0', 'CPU:1') and ('CPU:0', 'CPU:2') (COPY one first); at "
                                                "TENSOR the sources of an elementwise op are on one device")


def test_the_fused_accepts_of_combining_ops_cover_the_device_rule():
  # a rule with no fast predicate takes the op off the fast path (spec/fast.py): tensor.one_device has one for binary
  # ALUs and WHERE, so they keep theirs
  check(sink(buf(4, id=7145) + buf(4, id=7146)), Stage.TENSOR)
  for op in (Ops.ADD, Ops.CMPLT, Ops.WHERE, Ops.COPY):
    assert engine.T_TOP.table.fused[op.value] is not None, op.name


# ---- KERNEL_GRAPH: kgraph.one_device, kgraph.copy_device ----
def _kernel_on(*devices: str) -> UOp:
  """A kernel CALL of out = a + b whose args (out, a, b) are on these devices."""
  out, a, b = (buf(4, id=7150 + i, device=d) for i, d in enumerate(devices))
  return sink(out.after(call(k_add(), out, a, b)))


def test_a_kernel_whose_args_span_devices_is_flagged():
  vs = assert_breaks_exactly(_kernel_on("CPU", "CPU", "CPU:1"), Stage.KERNEL_GRAPH, {"kgraph.one_device"})
  assert vs[0].message.startswith("kernel CALL arg 0 is on CPU and arg 2 on CPU:1; at KERNEL_GRAPH a kernel runs on one device")


def test_a_kernel_call_at_tensor_takes_its_value_args_on_its_device():
  """At TENSOR a kernel CALL may take values; one COPYed to another device would make rangeify build a kernel with args
  on two devices (a campaign found that), so the TENSOR spec refuses it, and the same call on one device is legal."""
  out = buf(4, id=7170)
  moved = (buf(4, id=7171) + buf(4, id=7172)).copy_to("CPU:1")
  vs = assert_breaks_exactly(sink(out.after(call(k_add(), out, buf(4, id=7173), moved))), Stage.TENSOR, {"kgraph.one_device"})
  assert "arg 2 on CPU:1; at TENSOR a kernel runs on one device" in vs[0].message
  here = buf(4, id=7171) + buf(4, id=7172)
  assert check(sink(out.after(call(k_add(), out, buf(4, id=7173), here))), Stage.TENSOR) == []


def test_host_memory_is_read_by_kernels_of_the_cpu_family_only():
  for devs in (("CPU", "NPY", "CPU"), ("CPU:1", "NPY", "NPY"), ("PYTHON", "NPY", "PYTHON"), ("NPY", "NPY", "NPY")):
    assert check(_kernel_on(*devs), Stage.KERNEL_GRAPH) == [], devs
  vs = assert_breaks_exactly(_kernel_on("GPU", "NPY", "GPU"), Stage.KERNEL_GRAPH, {"kgraph.one_device"})
  assert "arg 1 is host memory on NPY" in vs[0].message and "only a kernel of the CPU or PYTHON family reads host memory" in vs[0].message


def _kernel_body_on(*devices: str, it=dtypes.index) -> UOp:
  """The kernel body out[i] = a[i] + b[i] whose PARAMs (out, a, b) are on these devices, its index arithmetic in it."""
  out, a, b = (UOp.param(k, F32, 4, d) for k, d in enumerate(devices))
  r = rng(4, 0, it)
  return sink(out.index(r).store(a.index(r).load() + b.index(r).load()).end(r))


@pytest.mark.parametrize("stage", [Stage.KERNEL, Stage.PROGRAM])
def test_a_kernel_body_touches_one_device_at_every_stage(stage):
  def at(*devs: str) -> UOp:
    return _kernel_body_on(*devs) if stage is Stage.KERNEL else program(_kernel_body_on(*devs, it=dtypes.int32))
  for devs in (("CPU:1", "CPU:1", "CPU:1"), ("CPU", "NPY", "CPU"), ("PYTHON", "NPY", "NPY")):
    assert check(at(*devs), stage) == [], devs
  vs = assert_breaks_exactly(at("CPU:0", "CPU:0", "CPU:1"), stage, {"kernel.one_device"})
  assert vs[0].message.startswith(f"PARAM slot 2 is on CPU:1 and PARAM slot 0 on CPU:0; at {stage.name} a kernel runs on one device")
  assert vs[0].node is UOp.param(2, F32, 4, "CPU:1")
  vs = assert_breaks_exactly(at("GPU", "GPU", "NPY"), stage, {"kernel.one_device"})
  assert "only a kernel of the CPU or PYTHON family reads host memory on NPY" in vs[0].message


def _copy_call(dest_device: str, to: str) -> UOp:
  src, dst = buf(4, id=7161), buf(4, id=7162, device=dest_device)
  return sink(dst.after(call(UOp(Ops.COPY, F32, (UOp.param(1, F32, 4),), to), dst, src)))


def test_a_copy_writes_the_device_it_names():
  assert check(_copy_call("CPU:1", "CPU:1"), Stage.KERNEL_GRAPH) == []
  vs = assert_breaks_exactly(_copy_call("CPU", "CPU:1"), Stage.KERNEL_GRAPH, {"kgraph.copy_device"})
  assert vs[0].message.startswith("a COPY to CPU:1 writes arg 0 on CPU; at KERNEL_GRAPH a COPY call's destination is on the device its COPY names")


# ---- the lowering keeps every kernel on one device ----
@pytest.mark.parametrize("realize", ["minimal", "all"])
@pytest.mark.parametrize("callify", ["inline", "precompile"])
def test_the_two_device_graph_is_legal_at_every_stage(realize, callify):
  stages = _legal_at_every_stage(two_device_graph(), realize=realize, callify=callify)
  assert all(len(d) == 1 for d in _kernel_devices(stages["rangeify"]))


def test_a_value_of_constants_is_realized_where_its_reader_runs():
  # sum of constants (no device of its own) read by a kernel on CPU:1: it was realized on "CPU", the kernel reading both
  x = buf(3, id=7171, device="CPU:1")
  r = UOp.const(F32, 2.0).expand((4, 3)).reduce(Ops.ADD, 1)
  stages = _legal_at_every_stage(sink(x + r))
  assert _kernel_devices(stages["rangeify"]) == [["CPU:1"], ["CPU:1"]]
  got = run(sink(x + r), {7171: np.arange(3, dtype=np.float32)}, "reference")
  np.testing.assert_allclose(got[0], np.arange(3) + 8.0)


def test_a_value_of_constants_read_on_two_devices_is_computed_on_each():
  x, y = buf(3, id=7181, device="CPU:1"), buf(3, id=7182)
  r = UOp.const(F32, 2.0).expand((4, 3)).reduce(Ops.ADD, 1)
  root = sink(x + r, y * r, r)
  stages = _legal_at_every_stage(root)
  kg = stages["rangeify"]
  assert all(len(d) == 1 for d in _kernel_devices(kg))
  assert not [u for u in walk((kg,)) if u.op is Ops.CALL and u.src[0].op is Ops.COPY]  # no copy: each device sums its own
  sums = [c for c in kernel_calls(kg) if any(u.op is Ops.REDUCE for u in walk((c.src[0],)))]
  assert sorted(storage_of(c.src[1]).arg.device for c in sums) == ["CPU", "CPU:1"]
  ins = {7181: np.arange(3, dtype=np.float32), 7182: np.ones(3, np.float32)}
  for backend in ("reference", "cpu"):
    got = run(root, ins, backend)
    np.testing.assert_allclose(got[0], np.arange(3) + 8.0)
    np.testing.assert_allclose(got[1], np.full(3, 8.0))
    np.testing.assert_allclose(got[2], np.full(3, 8.0))


def test_generated_cases_with_copies_combine_values_of_one_device():
  from fuzz.generate.kinds import case_for
  seen = 0
  for i in range(60):
    c = case_for(5, i, {"step:copy": 0.6, "copy:back": 2.0})
    if c.kind != "tensor" or "step:copy" not in c.features: continue
    seen += 1
    _legal_at_every_stage(c.root, callify=c.options["callify"], realize=c.options["realize"])
  assert seen >= 10


def _call_of_constants() -> UOp:
  """A value call on CPU:1 whose first output is computed from constants alone (it has no device), read on CPU:1."""
  x = buf(3, id=7191, device="CPU:1")
  p0 = UOp.param(0, F32, 3, "CPU:1")
  r = UOp.const(F32, 2.0).expand((4, 3)).reduce(Ops.ADD, 1)
  body = UOp(Ops.TUPLE, dtypes.void, ((r + UOp.const(F32, 1.0).expand((3,))).reduce(Ops.MAX, 1), p0 + p0))
  c = call(body, x, name="f")
  return sink(x.reduce(Ops.MAX, 1) + c.gettuple(0), c.gettuple(1))


@pytest.mark.parametrize("realize", ["minimal", "all"])
def test_an_output_of_constants_of_a_call_is_on_its_readers_device(realize):
  # precompiled by callify: the output is inlined where it is read, not given a buffer on "CPU"
  _legal_at_every_stage(_call_of_constants(), callify="precompile", realize=realize)
  # lowered by rangeify as a nested kernel graph: its kernels run where the output storage they write is
  stages = lower(_call_of_constants(), passes=[p for p in PASSES if p.name != "callify"], realize=realize)
  assert check(stages["rangeify"], Stage.KERNEL_GRAPH) == []
  got = run(_call_of_constants(), {7191: np.arange(3, dtype=np.float32)}, "reference")
  np.testing.assert_allclose(got[0], 2.0 + 9.0)
  np.testing.assert_allclose(got[1], np.arange(3) * 2.0)


# ---- value calls: an output is where its body computes it (uop._gettuple_device, call.param_device) ----
def _call_of_two_devices(reader_device: str) -> UOp:
  """A value call whose body returns a captured CPU buffer and its PARAM on CPU:1, bound to a constant (legal: a
  constant is read on any device); output 1 is compared with a buffer of reader_device."""
  const = UOp.const(F32, 1.5).expand((4,))
  p = UOp.param(0, F32, 4, "CPU:1")
  c = call(UOp(Ops.TUPLE, dtypes.void, (buf(4, id=7201), p * p)), const, name="two")
  return sink(c.gettuple(1) < buf(4, id=7202, device=reader_device))


def test_each_output_of_a_value_call_is_on_the_device_its_body_computes_it():
  root = _call_of_two_devices("CPU:1")
  g0, g1 = (UOp(Ops.GETTUPLE, F32, (root.src[0].src[0].src[0],), i) for i in range(2))
  assert (g0.device, g1.device) == ("CPU", "CPU:1")  # not the call's first output's device for both
  for callify in ("inline", "precompile"):
    _legal_at_every_stage(root, callify=callify)
  ins = {7201: np.zeros(4, np.float32), 7202: np.array([1, 2, 3, 2.25], np.float32)}
  for backend in ("reference", "cpu"):
    np.testing.assert_array_equal(run(root, ins, backend)[0], [False, False, True, False])


def test_combining_a_value_calls_output_with_another_devices_value_is_flagged():
  # the output is on CPU:1: combining it with a CPU buffer is what precompiling would make a kernel across devices of
  vs = assert_breaks_exactly(_call_of_two_devices("CPU"), Stage.TENSOR, {"tensor.one_device"})
  assert "CMPLT combines values on CPU:1 and CPU" in vs[0].message


def test_a_param_on_another_device_than_its_arg_is_flagged():
  p = UOp.param(0, F32, 4, "CPU:1")
  bad = call(UOp(Ops.TUPLE, dtypes.void, (p + p,)), buf(4, id=7211), name="moved")
  vs = assert_breaks_exactly(sink(bad.gettuple(0)), Stage.TENSOR, {"call.param_device"})
  assert vs[0].message.startswith("PARAM slot 0 is on CPU:1 but CALL arg 0 is on CPU")
  # a PARAM on its arg's device, or bound to a constant, is legal; a MULTI arg's PARAM is on its first device
  ok = call(UOp(Ops.TUPLE, dtypes.void, (p + p,)), buf(4, id=7212, device="CPU:1"), name="kept")
  assert check(sink(ok.gettuple(0)), Stage.TENSOR) == []
  m = Tensor(np.arange(8, dtype=np.float32)).shard(("CPU:0", "CPU:1"), axis=0).uop
  def doubled(device: str) -> UOp: return UOp(Ops.TUPLE, dtypes.void, (UOp.param(0, F32, 8, device) * UOp.const(F32, 2.0).expand((8,)),))
  assert check(sink(call(doubled("CPU:0"), m, name="sharded").gettuple(0)), Stage.TENSOR) == []
  assert_breaks_exactly(sink(call(doubled("CPU:1"), m, name="sharded").gettuple(0)), Stage.TENSOR, {"call.param_device"})


def test_a_kernel_in_a_kernel_graph_is_held_to_one_device_in_its_body_too():
  out, a, b = (buf(4, id=7220 + i) for i in range(3))
  root = sink(out.after(call(_kernel_body_on("CPU", "CPU", "CPU:1"), out, a, b)))
  assert_breaks_exactly(root, Stage.KERNEL_GRAPH, {"kernel.one_device"})

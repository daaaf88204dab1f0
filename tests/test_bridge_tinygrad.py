"""The tinygrad bridge: capture, translation (golden forms derived from tinygrad's graphs by hand), coverage over
examples/tinygrad, the imported tinygrad's name, Untranslatable, and the `tinyspec tinygrad check` verb's exit codes."""
from __future__ import annotations

import functools
import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad import RULES, TinygradMissingError, Untranslatable, capture, translate  # noqa: E402
from tinyspec.bridge.tinygrad.compat import KNOWN, identity, imported  # noqa: E402
from tinyspec.bridge.tinygrad.check import check_capture, evaluate_callified, main as check_main, run_check  # noqa: E402
from tinyspec.bridge.tinygrad.table import rules_markdown  # noqa: E402
from tinyspec.bridge.tinygrad.translator import STAGES, Rule  # noqa: E402
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.spec import Stage, check  # noqa: E402
from tinyspec.spec.tensor import written_slots  # noqa: E402
from tinyspec.uop import AxisType, Ops, UOp, body_kind, is_precompiled_call, substitute  # noqa: E402
from builders import without_rule  # noqa: E402

pytestmark = pytest.mark.tinygrad
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples" / "tinygrad").glob("*.py"))


@functools.cache
def captured(name: str):
  return capture(runpy.run_path(str(ROOT / "examples" / "tinygrad" / f"{name}.py"))["program"])


def nodes(root: UOp, op: Ops) -> list[UOp]:
  return [u for u in root.toposort() if u.op is op]


# ---- the imported tinygrad (compat; the snapshot's run is tests/test_bridge_versions.py) ----
def test_the_imported_tinygrad_is_named_from_where_it_was_imported():
  import tinygrad
  tg = imported()
  assert Path(tg.path) == Path(tinygrad.__file__).resolve().parent
  # this module runs on each version the bridge is tested on (test_bridge_versions runs it on the snapshot too)
  assert tg.known and tg.identity in KNOWN and identity() == tg.identity, tg
  # test_bridge_versions runs this module on the snapshot, naming the tinygrad it must find
  assert tg.identity == os.environ.get("TINYSPEC_TINYGRAD", tg.identity)


def test_importing_the_bridge_with_no_tinygrad_names_what_is_missing():
  code = ("import sys; sys.modules['tinygrad'] = None\n"
          "try:\n  import tinyspec.bridge.tinygrad\nexcept ImportError as e: print(type(e).__name__, e)\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
  assert out.startswith(TinygradMissingError.__name__) and "pip install 'tinyspec[tinygrad]'" in out and "\n" not in out.strip()


# ---- golden translations, derived from tinygrad's own forms ----
def test_weak_const_and_implicit_broadcast_become_explicit():
  # x * 2.0 on a (2, 3) float tensor: tinygrad's MUL takes a weakfloat CONST of shape () and broadcasts it; tinyspec
  # needs a float32 CONST expanded (prepended dims) to (2, 3)
  from tinygrad import Tensor
  cap = capture(lambda: Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)) * 2.0)
  root = translate(cap).graphs["tensor"][0][1]
  mul = root.src[0]
  assert mul.op is Ops.MUL and mul.dtype is dtypes.float32 and mul.shape == (2, 3)
  c = mul.src[1]
  assert c.op is Ops.EXPAND and c.arg == (2, 3) and c.src[0] is UOp.const(dtypes.float32, 2.0)
  assert check(root, Stage.TENSOR) == []


def test_floor_division_is_truncating_division_corrected():
  # tinygrad's FLOORDIV (Python //) on int32 has no tinyspec op: it is IDIV (C, truncating) minus one where the
  # remainder is nonzero and its sign differs from the divisor's
  from tinygrad import Tensor
  cap = capture(lambda: Tensor(np.array([-7, 7], np.int32)) // Tensor(np.array([2, 2], np.int32)))
  w = translate(cap).graphs["tensor"][0][1].src[0]
  assert w.op is Ops.WHERE and w.dtype is dtypes.int32
  adj, lower, q = w.src
  assert q.op is Ops.IDIV and lower.op is Ops.SUB and lower.src[0] is q
  assert adj.op is Ops.AND and {s.op for s in adj.src} == {Ops.CMPNE}


def test_matmul_reduce_kernel():
  # the 4x5 @ 5x3 matmul kernel: out[i*3+j] = REDUCE_ADD over k<5 of a[i*5+k] * b[k*3+j]; tinygrad's INDEX reads
  # become LOAD(INDEX), REDUCE's (ADD, 0) arg with ranges as sources becomes the range form with arg ADD
  t = translate(captured("matmul"))
  kernels = [g for _, g in t.graphs["kernel"]]
  (red,) = [r for k in kernels for r in nodes(k, Ops.REDUCE)]
  assert red.arg is Ops.ADD and red.dtype is dtypes.float32
  mul, rng = red.src
  assert rng.op is Ops.RANGE and rng.arg.kind is AxisType.REDUCE and rng.src[0] is UOp.const(dtypes.index, 5)
  assert mul.op is Ops.MUL and all(s.op is Ops.LOAD and s.src[0].op is Ops.INDEX and s.src[0].src[0].op is Ops.PARAM for s in mul.src)
  assert {s.src[0].src[0].arg.size for s in mul.src} == {20, 15}


def test_kernel_graph_binds_params_to_buffers():
  # tinygrad's kernel graph is the callified function's body: its top-level PARAMs become the call's BUFFERs, and
  # every kernel CALL arg is storage
  t = translate(captured("matmul"))
  kg = t.kernel_graph()
  calls = nodes(kg, Ops.CALL)
  assert calls and all(a.op is Ops.BUFFER or (a.op is Ops.AFTER and a.src[0].op is Ops.BUFFER) for c in calls for a in c.src[1:])
  assert check(kg, Stage.KERNEL_GRAPH) == []


def test_untranslatable_names_op_and_stage(monkeypatch):
  # layernorm's last program divides with FDIV: without its rule that program is untranslatable, named and counted
  without_rule(monkeypatch, "FDIV")
  with pytest.raises(Untranslatable) as e: translate(captured("layernorm"))
  assert (e.value.op, e.value.stage) == ("FDIV", "program") and "FDIV at program" in str(e.value)
  t = translate(captured("layernorm"), strict=False)
  assert t.untranslatable("program") == {"FDIV": "no rule: tinyspec has no form for this op"}
  assert t.untranslatable_counts("program") == {"FDIV": 1}


def test_an_op_or_form_the_table_does_not_know_is_counted_and_the_rest_checked():
  # an op no RULES entry covers (the snapshot's WAIT, on a tinygrad that has it) and a REDUCE whose arg has another form
  # (as another version might give it): each counted per op in the report, every other stage still checked
  import dataclasses

  from tinygrad import Tensor
  from tinygrad.uop.ops import Ops as TgOps
  from tinygrad.uop.ops import UOp as TgUOp

  from tinyspec.bridge.tinygrad.check import check_capture, format_report
  unknown = getattr(TgOps, "WAIT", None) or next(o for o in TgOps if o.name not in RULES)
  cap = capture(lambda: Tensor(np.arange(6, dtype=np.float32)) * 2.0 + 1.0)
  x = cap.tensor.src[0]
  odd = (TgUOp(unknown, x.dtype, (x,)), TgUOp(unknown, x.dtype, (x, x)), TgUOp(TgOps.REDUCE, x.dtype, (x,), "another form"))
  with pytest.raises(Untranslatable) as e: translate(dataclasses.replace(cap, tensor=TgUOp.sink(odd[2])))
  assert (e.value.op, e.value.stage) == ("REDUCE", "tensor") and "a form its rule does not know" in e.value.why
  rep = check_capture(dataclasses.replace(cap, tensor=TgUOp.sink(*odd)))
  t = rep.translation
  assert t.untranslatable_counts("tensor") == {unknown.name: 2, "REDUCE": 1} and t.graphs["tensor"][0][1] is None
  out = format_report(rep, "p")
  assert f"untranslatable {unknown.name} x2: no rule: tinyspec has no form for this op" in out
  assert "untranslatable REDUCE x1: a form its rule does not know (ValueError: " in out
  assert rep.ok and rep.unchecked == ["tensor: none of its 1 graph(s) translated",
                                      "numbers, tensor: not compared (the tensor graph did not translate)"]
  assert all(rep.ran[m] and rep.numbers[m] is None for m in ("callified", "kernel ASTs", "programs"))


# ---- coverage over the example programs ----


def test_rules_table_is_documented_word_for_word():
  doc = (ROOT / "docs" / "tinygrad.md").read_text()
  assert rules_markdown() in doc
  assert set(STAGES) == {"tensor", "callified", "kernel_graph", "kernel", "program"}


# ---- the check verb ----
def test_check_verb_exit_codes(capsys, tmp_path):
  assert check_main(str(ROOT / "examples" / "tinygrad" / "matmul.py")) == 0
  out = capsys.readouterr().out
  assert "all holds" in out and "reproduces tinygrad's outputs" in out
  assert check_main(str(tmp_path / "missing.py")) == 2
  bad = tmp_path / "noprogram.py"
  bad.write_text("x = 1\n")
  assert check_main(str(bad)) == 2


SHARDED = """\
import numpy as np
from tinygrad import Tensor

def program():
  a = Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)).shard(("CPU:0", "CPU:1"), axis=0)
  return a.sum()
"""


def test_a_sharded_program_holds_at_every_stage(capsys, tmp_path):
  # a sum over the sharded axis: tinygrad's callified graph stores into storage over the device tuple, and its kernel
  # graph holds the all-reduce as a precompiled call; every stage translates, is legal and gives tinygrad's numbers
  prog = tmp_path / "sharded.py"
  prog.write_text(SHARDED)
  assert check_main(str(prog)) == 0
  out = capsys.readouterr().out
  assert "all holds" in out and "NOT CHECKED" not in out
  for mode in ("tensor graph", "callified graph", "kernel graph with kernel ASTs", "kernel graph with programs"):
    assert f"numbers, {mode}" in out.replace(" (its precompiled CALL)", "")
  rep = run_check(runpy.run_path(str(prog))["program"])
  assert rep.all_ok and rep.all_unchecked == [] and all(d == n for d, n in rep.translation.coverage().values())


@pytest.mark.parametrize("view", ["reshape", "permute", "expand"])
def test_a_view_of_an_untranslated_node_is_untranslated_not_a_crash(view, monkeypatch):
  # Tensor.rand's graph holds a STACK as a value; without its rule it has no tinyspec form: its placeholder has no shape,
  # so a view over what it feeds cannot be built; that node is then untranslated as well, counted, and the check goes on
  # (it raised ValueError out of the check)
  from tinygrad import Tensor
  without_rule(monkeypatch, "STACK")
  prog = {"reshape": lambda: Tensor.rand(8).reshape(2, 4) + 1, "permute": lambda: Tensor.rand(2, 4).permute(1, 0) + 1,
          "expand": lambda: Tensor.rand(4, 1).expand(4, 3) + 1}[view]
  rep = run_check(prog)
  why = rep.translation.untranslatable("tensor")
  assert rep.translation.graphs["tensor"][0][1] is None and "STACK" in why
  assert any(w.startswith("a source did not translate") for w in why.values()), why
  assert not rep.ran["tensor"] and not any(rep.violations.values())


SHARDED_PROGRAMS = {
  "elementwise": lambda T, x: x * 2,
  "all-reduce": lambda T, x: x.sum(),
  "along the split": lambda T, x: x.sum(1),
  "replicated": lambda T, x: T(np.arange(4, dtype=np.float32)).shard(("CPU:0", "CPU:1")) + 1,
  "reshape": lambda T, x: x.reshape(8) * 2,
  "sharded with replicated": lambda T, x: x + T(np.ones(2, dtype=np.float32)).shard(("CPU:0", "CPU:1")),
}


@pytest.mark.parametrize("name", list(SHARDED_PROGRAMS))
def test_a_sharded_program_is_a_multi_and_reproduces_tinygrad_at_every_stage(name):
  # tinygrad's UNSHARD(x, DEVICE range) is tinyspec's MULTI of x once per device (the range bound to its number), its
  # COPY to a device tuple a COPY per device: the tensor graph translates whole; the callified graph's storage over the
  # device tuple is one BUFFER per device, and the kernel graph one entry per device. Every stage translates, is
  # legal, and each of the four evaluations gives tinygrad's numbers
  from tinygrad import Tensor
  def prog(): return SHARDED_PROGRAMS[name](Tensor, Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)).shard(("CPU:0", "CPU:1"), axis=0))
  rep = run_check(prog)
  t = rep.translation
  g = t.graphs["tensor"][0][1]
  assert g is not None, t.untranslatable("tensor")
  assert any(u.op is Ops.MULTI for u in g.toposort())
  assert {s: (d, n) for s, (d, n) in t.coverage().items() if d != n} == {}
  assert {s: [str(v) for _, v in vs] for s, vs in rep.violations.items() if vs} == {}
  assert rep.ran == {"tensor": True, "callified": True, "kernel ASTs": True, "programs": True}
  assert all(x is None for x in rep.numbers.values()), rep.numbers
  assert rep.all_ok and rep.all_unchecked == []


def test_a_copy_from_host_memory_to_an_opencl_device_is_a_copy_call(opencl):
  # on CL tinygrad moves a numpy array's NPY storage to the device with a kernel its schedule makes a COPY: an OpenCL
  # kernel cannot read host memory, so this one is that copy (it was reported as breaking kgraph.one_device)
  from tinygrad import Tensor
  rep = run_check(lambda: Tensor(np.arange(4, dtype=np.float32)) + 1, device="CL")
  assert not any(rep.violations.values()) and rep.ok
  kg = rep.translation.kernel_graph()
  assert [u.src[0].arg for u in kg.toposort() if u.op is Ops.CALL and u.src[0].op is Ops.COPY] == ["CL"]


def test_a_stage_with_nothing_captured_is_not_checked(capsys, tmp_path):
  # a program that only copies its input: tinygrad compiles no program, so the PROGRAM stage checked nothing
  prog = tmp_path / "copy_only.py"
  prog.write_text("import numpy as np\nfrom tinygrad import Tensor\n\ndef program():\n  return Tensor(np.arange(4, dtype=np.float32))\n")
  assert check_main(str(prog)) == 3
  out = capsys.readouterr().out
  assert "program: 0 graphs captured" in out and "all holds" not in out
  assert "numbers, kernel graph with kernel ASTs: tinyspec's evaluator reproduces tinygrad's outputs" in out


def test_a_kernel_over_two_devices_is_checked_once_per_device():
  # the runtime launches a kernel AST over multi-device PARAMs once per device (tinygrad.engine.realize.unwrap_multi):
  # each launch translates, its PARAMs on that device
  ns: dict = {}
  exec(SHARDED, ns)
  rep = run_check(ns["program"])
  t = rep.translation
  multi = [k for k in rep.capture.kernels if any(u.op.name == "PARAM" and isinstance(u.arg.device, tuple) for u in k.toposort())]
  assert multi and len(t.graphs["kernel"]) == len(rep.capture.kernels) + len(multi)
  for stage in ("kernel", "program"):
    assert all(g is not None for _, g in t.graphs[stage]), t.untranslatable(stage)
    assert t.coverage()[stage][0] == t.coverage()[stage][1]
  for k in multi:   # its launches, in device order: every PARAM of each on that one device
    launched = [{u.arg.device for u in g.toposort() if u.op is Ops.PARAM} for root, g in t.graphs["kernel"] if root is k]
    assert launched == [{"CPU"}, {"CPU:1"}]


def test_a_launch_binds_the_device_number():
  # arange over a sharded axis: the kernel computes its shard's block from its device's number, a RANGE of AxisType.DEVICE
  # in the AST and the scalar PARAM _device_num in the program, which the runtime binds to 0 and 1
  from tinygrad import Tensor
  devs = ("CPU:0", "CPU:1")
  rep = run_check(lambda: Tensor.arange(8).reshape(4, 2).shard(devs, axis=0) + Tensor.ones(4, 2).shard(devs, axis=0))
  t = rep.translation
  ranged = [k for k in rep.capture.kernels if any(u.op.name == "RANGE" and u.arg[-1].name == "DEVICE" for u in k.toposort())]
  numbered = [p for _, p in rep.capture.programs if any(u.op.name == "PARAM" and u.arg.name == "_device_num" for u in p.toposort())]
  assert ranged and numbered
  for stage, roots in (("kernel", ranged), ("program", numbered)):
    for r in roots:
      launches = [g for root, g in t.graphs[stage] if root is r]
      assert len(launches) == 2 and None not in launches and launches[0] is not launches[1], t.untranslatable(stage)
  assert not rep.violations["kernel"] and not rep.violations["program"]
  # and the kernel graph, one entry per device, gives tinygrad's numbers: each launch computed its own block
  assert rep.ran["kernel ASTs"] and rep.numbers["kernel ASTs"] is None and rep.numbers["programs"] is None, rep.numbers
  assert rep.as_programs[0] > 0


def test_a_sharded_kernel_graph_is_checked_per_device(monkeypatch):
  # (x * 2) over a tensor sharded on axis 0: tinygrad's kernel graph holds the multiply as one CALL over the device
  # tuple (its input an MSTACK of per-device copies), which becomes one CALL per device; the output is read as its two
  # shards concatenated along axis 0
  from tinygrad import Tensor
  x = np.arange(8, dtype=np.float32).reshape(4, 2)
  rep = run_check(lambda: Tensor(x).shard(("CPU:0", "CPU:1"), axis=0) * 2)
  t = rep.translation
  assert all(g is not None for _, g in t.graphs["kernel_graph"]), t.untranslatable("kernel_graph")
  assert rep.numbers["kernel ASTs"] is None and rep.numbers["programs"] is None and rep.ran["programs"], rep.numbers
  assert t.output_shards[0] is not None and t.output_shards[0][1] == 0
  kg = t.kernel_graph()
  calls = [u for u in kg.toposort() if u.op is Ops.CALL and u.src[0].op is Ops.SINK]
  devices = {u.arg.device for c in calls for u in c.src[0].toposort() if u.op is Ops.PARAM}
  assert {"CPU", "CPU:1"} <= devices
  # tinygrad writes the copy from CPU to CPU:1 as a kernel over both devices, which its schedule makes a COPY: the
  # bridge gives tinyspec's form of it, a COPY call, so the kernel graph is legal
  copies = [u for u in kg.toposort() if u.op is Ops.CALL and u.src[0].op is Ops.COPY]
  assert [c.src[0].arg for c in copies] == ["CPU:1"] and copies[0].src[1].arg.device == "CPU:1"
  assert not any(rep.violations.values())
  # kept as the kernel over two devices it is, kgraph.one_device reports its args and kernel.one_device its body: the
  # rules are applied to these graphs
  import tinyspec.bridge.tinygrad.calls as calls
  monkeypatch.setattr(calls, "copy_call", lambda u: None)
  vs = run_check(lambda: Tensor(x).shard(("CPU:0", "CPU:1"), axis=0) * 2).violations["kernel_graph"]
  assert vs and {v.rule for _, v in vs} == {"kgraph.one_device", "kernel.one_device"} and "CPU:1" in str(vs[0][1])


def test_a_copy_kernel_between_devices_is_a_copy_call():
  # tinygrad keeps a Python list's data on PYTHON and copies it to CPU with a kernel over both devices at the kernel graph
  # (its schedule makes that a COPY): translated as the COPY call it is, the kernel graph is legal (it was reported as
  # breaking kgraph.one_device)
  from tinygrad import Tensor
  rep = run_check(lambda: Tensor([1.0, 2.0]) + 1)
  assert rep.ok and not rep.unchecked and not any(rep.violations.values()), rep.violations
  kg = rep.translation.kernel_graph()
  copies = [u for u in kg.toposort() if u.op is Ops.CALL and u.src[0].op is Ops.COPY]
  assert [c.src[0].arg for c in copies] == ["CPU"] and copies[0].src[0].src[0].arg.device == "PYTHON"
  assert all(done == total for done, total in rep.translation.coverage().values())


def test_a_graph_that_shares_an_untranslatable_node_is_not_checked(monkeypatch):
  # whether a graph translated is judged by the placeholders its own translation made: tinygrad interns nodes, so kernels
  # share PARAM nodes, and a failure recorded by node once counted for the first kernel holding it only; the others
  # were then checked with its CONST placeholder in place of the PARAM
  orig = RULES["PARAM"]
  def refuse(tr, u, want):   # in kernel bodies only: a placeholder in a tensor graph leaves it malformed
    if tr.kernel: raise Untranslatable("PARAM", tr.stage, "refused for the test")
    return orig.fn(tr, u, want)
  monkeypatch.setitem(RULES, "PARAM", Rule("PARAM", "refused in kernels", refuse))
  import dataclasses
  cap = captured("matmul")
  cap = dataclasses.replace(cap, programs=cap.programs + cap.programs[:1])  # one program twice: every node of it shared
  t = translate(cap, strict=False)
  assert t.graphs["kernel"] and all(g is None for _, g in t.graphs["kernel"])
  assert len(t.graphs["program"]) >= 2 and all(g is None for _, g in t.graphs["program"])


def test_a_broken_translation_is_caught(monkeypatch, capsys):
  # the spec check is not vacuous: a translation that drops tinygrad's END (the loop closing a STORE) gives kernels
  # whose STOREs depend on unclosed ranges
  monkeypatch.setitem(RULES, "END", Rule("END", "dropped", lambda tr, u, want: tr(u.src[0])))
  rep = run_check(runpy.run_path(str(ROOT / "examples" / "tinygrad" / "matmul.py"))["program"])
  assert not rep.ok and rep.violations["kernel"]
  assert check_main(str(ROOT / "examples" / "tinygrad" / "matmul.py")) == 1
  assert "violation" in capsys.readouterr().out


def test_a_mutated_kernel_violates_the_spec():
  t = translate(captured("matmul"))
  k = next(g for _, g in t.graphs["kernel"] if nodes(g, Ops.REDUCE))
  assert check(k, Stage.KERNEL) == []
  store = nodes(k, Ops.STORE)[0]
  idx = store.src[0]
  oob = idx.replace(src=(idx.src[0], UOp(Ops.ADD, dtypes.index, (idx.src[1], UOp.const(dtypes.index, 100)))))
  from tinyspec.uop import substitute
  bad = substitute(k, {idx: oob})
  assert any(v.rule.startswith("kernel.") for v in check(bad, Stage.KERNEL))


def test_capture_restores_tinygrad():
  import tinygrad.codegen as codegen
  import tinygrad.schedule.rangeify as rangeify
  import tinygrad.tensor as tensor_mod
  before = (tensor_mod.transform_to_call, codegen.do_to_program, rangeify.get_kernel_graph.__closure__[0].cell_contents)
  captured("softmax")
  capture(runpy.run_path(str(ROOT / "examples" / "tinygrad" / "softmax.py"))["program"])
  assert (tensor_mod.transform_to_call, codegen.do_to_program, rangeify.get_kernel_graph.__closure__[0].cell_contents) == before


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_hold(path):
  # every example, at every step of a program that realizes several times (a training loop's optimizer steps): at least
  # 99.5% of the nodes of every stage translated, legal at every stage, and its numbers agree from the tensor graph, the
  # callified graph and the kernel graph both ways. A realize that scheduled nothing (its outputs were storage already, as
  # a KV cache written slice by slice) has its tensor graph alone.
  rep = check_capture(captured(path.stem))
  for r in [*rep.steps, rep]:
    stages = STAGES if r.capture.scheduled else ("tensor",)
    for stage, (done, total) in r.translation.coverage().items():
      assert (total > 0 and done / total >= 0.995) if stage in stages else total == 0, f"{path.stem} {stage}: {done}/{total}"
    assert r.ran == {m: True for m in ("tensor", "callified", "kernel ASTs", "programs")[:4 if r.capture.scheduled else 1]}
    assert all(x is None for x in r.numbers.values()), r.numbers
    assert {s: [str(v) for _, v in vs] for s, vs in r.violations.items() if vs} == {}
  assert rep.all_ok and not rep.all_unchecked
  assert sum(not r.capture.scheduled for r in [*rep.steps, rep]) <= 1   # only the outputs' own realize can schedule nothing


def test_precompiled_call_translates_to_the_tensor_form():
  # tinygrad's callified graph is CALL(SINK(AFTER(PARAM_k, STORE(PARAM_k, value))...), buffers...), and the
  # @function(precompile=True) inside it CALL(SINK(AFTER(PARAM(1), STORE(PARAM(1), sum))), input, PARAM_out): both are
  # tinyspec's precompiled call at TENSOR, run by the evaluator to tinygrad's numbers
  t = translate(captured("precompiled"), strict=False)
  root = t.graphs["callified"][0][1]
  assert is_precompiled_call(root) and all(a.op is Ops.BUFFER for a in root.src[1:])
  (inner,) = [u for u in root.src[0].toposort() if is_precompiled_call(u)]
  body = inner.src[0]
  assert inner.arg == "gelu_sum" and body_kind(body) == "effect" and written_slots(body) == {1}
  (entry,) = body.src
  assert entry.op is Ops.AFTER and entry.src[0] is UOp.param(1, dtypes.float32, 3) and entry.src[1].op is Ops.STORE
  # the outer call stores the copied input (slot 0) and the result (slot 3); slot 2 is the inner call's output arg
  assert written_slots(root.src[0]) == {0, 3} and inner.src[2].op is Ops.PARAM and inner.src[2].arg.slot == 2
  assert check(root, Stage.TENSOR) == []
  np.testing.assert_allclose(evaluate_callified(t)[0], captured("precompiled").outputs[0], rtol=1e-6)
  # the spec tells the form apart: a body that stores into a BUFFER of the program, not into a PARAM of its call, is flagged
  st = entry.src[1]
  stray = UOp.buffer(dtypes.float32, 3)
  bad = substitute(root, {st: UOp(Ops.STORE, dtypes.void, (stray, st.src[1]))})
  assert {v.rule for v in check(bad, Stage.TENSOR)} == {"tensor.precompiled_store_target"}


def test_precompiled_schedule_becomes_a_nested_kernel_graph():
  # tinygrad's precompiled call at the kernel graph is CALL(LINEAR(CALL(kernel, ...)...), args); tinyspec's form is
  # CALL(SINK(AFTER(PARAM_out, CALL(kernel, ...))), args): order by AFTER, outputs as PARAMs of the nested graph
  t = translate(captured("precompiled"), strict=False)
  kg = t.kernel_graph()
  (outer,) = [c for c in nodes(kg, Ops.CALL) if c.src[0].op is Ops.SINK and all(e.op is Ops.AFTER for e in c.src[0].src)]
  inner = outer.src[0]
  assert all(e.src[0].op in (Ops.PARAM, Ops.AFTER) and e.src[-1].op is Ops.CALL for e in inner.src)
  assert all(a.op is Ops.PARAM or a.op is Ops.AFTER for c in inner.toposort() if c.op is Ops.CALL for a in c.src[1:])
  assert check(kg, Stage.KERNEL_GRAPH) == []


def gather_program():
  from tinygrad import Tensor
  return Tensor([[0, 2, 3], [1, 2, 3]]).sparse_categorical_crossentropy(Tensor([1, 2]))


def test_a_lane_read_used_as_an_index_is_a_load_of_it():
  # optimized, tinygrad unrolls the loss's reduce over the labels: one vector load of them, whose lane 0 is the gather's
  # index as it is, INDEX(logits, INDEX(LOAD(SHRINK(labels, 0, 2)), 0)), lane 1 under an ADD. Translated as the lane's
  # INDEX (a place) rather than its LOAD (a number), the bounds proof knew nothing of the index (a violation of
  # kernel.index_bounds though the gate keeps it in [0, 3)) and the evaluator refused the program
  from tinyspec.bridge.tinygrad.indexing import is_vector_load
  def lane(x) -> bool: return x.op.name == "INDEX" and len(x.src) == 2 and is_vector_load(x.src[0])

  cap = capture(gather_program, noopt=False)
  (ast,) = [a for a, p in cap.programs if any(u.op.name == "INDEX" and len(u.src) == 2 and lane(u.src[1]) for u in p.toposort())]
  rep = check_capture(cap)
  assert {s: [str(v) for _, v in vs] for s, vs in rep.violations.items() if vs} == {}
  assert rep.ran["programs"] and rep.numbers["programs"] is None, rep.numbers
  # both gathers read the logits at a loaded label: lane 0 itself, lane 1 plus the row's offset
  gathers = [u for u in rep.translation.programs[ast].toposort() if u.op is Ops.INDEX and u.src[1].op is not Ops.CONST]
  assert sorted(u.src[1].op.name for u in gathers if u.src[0].arg.size == 6) == ["ADD", "LOAD"]

# ---- small floats ----
# values float16 cannot hold (so the casts into it round) whose float16 doubles are exact, and one past its range: tinygrad's
# CPU backend renders half as clang's __fp16, whose sum is computed in float and not rounded back to half, so only sums
# float16 holds exactly give both the same numbers
HALF_IN = np.array([[0.1, 1.3, -2.7], [7e4, 1e-6, 333.3]], np.float32)


def half_program():
  from tinygrad import Tensor
  return (Tensor(HALF_IN).half() + Tensor(HALF_IN.copy()).half()).float()


def test_a_float16_program_translates_checks_and_reproduces_tinygrad(tmp_path, capsys):
  prog = tmp_path / "half.py"
  prog.write_text("import numpy as np\nfrom tinygrad import Tensor\n"
                  f"A = np.array({HALF_IN.tolist()!r}, np.float32)\n"
                  "def program():\n  return (Tensor(A).half() + Tensor(A.copy()).half()).float()\n")
  assert check_main(str(prog)) == 0  # the verb: every stage translated, legal, and the numbers agree
  assert "all holds" in capsys.readouterr().out
  rep = run_check(half_program)
  assert {s: [str(v) for _, v in vs] for s, vs in rep.violations.items() if vs} == {}
  assert all(r is None for r in rep.numbers.values()) and rep.ok, rep.numbers
  t = translate(capture(half_program))
  root = t.graphs["tensor"][0][1]
  assert {u.dtype for u in root.toposort() if u.op is Ops.ADD} == {dtypes.float16}
  want = capture(half_program).outputs[0]
  got = np.asarray(evaluate_callified(t)[0]).reshape(want.shape)
  # the expected numbers by numpy alone: each input rounded to float16 (70000 overflows to inf, 1e-6 is subnormal), doubled exactly
  np.testing.assert_array_equal(got, want)
  with np.errstate(over="ignore"): halves = HALF_IN.astype(np.float16).astype(np.float32)
  np.testing.assert_array_equal(got, 2 * halves)
  assert not np.array_equal(got, 2 * HALF_IN)


def test_small_float_dtypes_translate_by_tinygrad_name():
  from tinygrad.dtype import dtypes as tgd
  from tinyspec.bridge.tinygrad.dtype_names import DTYPES
  # tinygrad's float8_e4m3 saturates to 448 and has no infinity (float_to_fp8 gives NaN for one): OCP's e4m3fn
  pairs = {tgd.half: dtypes.float16, tgd.bfloat16: dtypes.bfloat16, tgd.fp8e4m3: dtypes.float8_e4m3fn, tgd.fp8e5m2: dtypes.float8_e5m2,
           tgd.fp8e4m3fnuz: dtypes.float8_e4m3fnuz, tgd.fp8e5m2fnuz: dtypes.float8_e5m2fnuz}
  assert {DTYPES[t.name] for t in pairs} == set(pairs.values()) and all(DTYPES[t.name] is d for t, d in pairs.items())


@pytest.mark.parametrize("name", ["fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz"])
def test_fp8_storage_is_read_as_its_elements(name):
  # tinygrad's Buffer.numpy() views bfloat16 and fp8 storage as float32 (4 bytes an element); the capture reads the
  # elements themselves, so an output realized in fp8 is tinygrad's bits, and the evaluator's numbers match them (a
  # NaN as a NaN: float8_e5m2's payload differs).
  # (bfloat16 is left out: tinygrad's CPU backend renders it as __bf16, which not every clang target has.)
  # Normal values only: tinygrad's CPU emulation of fp8 flushes subnormals and stores float8_e5m2fnuz's zero as 0x04
  from tinygrad import Tensor
  from tinygrad.dtype import dtypes as tgd, float_to_fp8
  from tinyspec.bridge.tinygrad.dtype_names import DTYPES
  x = np.array([1.0, -1.5, 0.3, 3.25, 100.0, -0.0625, np.nan], np.float32)
  tg = getattr(tgd, name)
  rep = run_check(lambda: Tensor(x).cast(tg).contiguous())
  got = rep.capture.outputs[0]
  assert got.dtype == DTYPES[tg.name].np and got.shape == x.shape
  assert got.view(np.uint8).tolist()[:-1] == [float_to_fp8(float(v), tg) for v in x[:-1]] and np.isnan(got[-1].astype(np.float32))
  assert rep.numbers["tensor"] is None and rep.numbers["kernel ASTs"] is None, rep.numbers


# float32 values into fnuz fp8 and back: past max (saturates), +-inf and NaN (the one NaN), -0.0 (no negative zero), the
# smallest subnormals and half of them (ties to even, down to 0), ties between normals
FNUZ_IN = np.array([0.0, -0.0, 1.0, -1.5, 0.1, 3.3, 240.0, 248.0, 250.0, -1000.0, 57344.0, 61440.0, 1e30, -1e30, np.inf, -np.inf, np.nan,
                    2.0 ** -10, 2.0 ** -11, 3 * 2.0 ** -11, 2.0 ** -17, 2.0 ** -18, -(2.0 ** -18), 2.0 ** -7, 1.0625, 1.1875, 1e-30], np.float32)


def _fnuz_stored():
  from tinygrad import Tensor
  from tinygrad.dtype import dtypes as tgd
  x = Tensor(FNUZ_IN)
  return tuple(x.cast(dt).contiguous().realize().cast(tgd.float32) for dt in (tgd.fp8e4m3fnuz, tgd.fp8e5m2fnuz))


def test_fnuz_casts_hold_with_numbers_on_tinygrads_python_device():
  # on PYTHON, tinygrad's own emulator (fp8 by its float_to_fp8), each stored fnuz value and the values read back are
  # tinyspec's at every stage and step, programs included
  rep = run_check(_fnuz_stored, device="PYTHON")
  assert rep.all_ok and rep.all_unchecked == [], rep.numbers
  assert all(d == n for d, n in rep.translation.coverage().values())


def test_fnuz_zero_stored_by_tinygrads_cpu_emulation_is_reported():
  # tinygrad's CPU backend emulates fp8 through half; float8_e5m2fnuz's exponent bias (16) is one more than half's,
  # and its store turns 0.0 into 0x04 (2^-15) where float_to_fp8 gives 0x00 (its load flushes 0x04 back to 0, so
  # tinygrad's own round trip hides it): the check reads the stored bits and reports the difference
  rep = run_check(_fnuz_stored, device="CPU")
  assert rep.numbers["tensor"] == "output 1 differs at (0,): tinyspec np.float32(3.0517578e-05), tinygrad np.float32(0.0)"


def _fp8_sweep(dt) -> np.ndarray:
  """float64 values where converting into fp8 dt changes meaning: every finite value of dt, the ties between
  neighbours, one float64 step either side of each, half the smallest subnormal, past +-max, +-inf, NaN, -0.0."""
  with np.errstate(invalid="ignore"): v = np.unique(np.arange(256, dtype=np.uint8).view(dt.np).astype(np.float64))
  v = v[np.isfinite(v)]
  mx = float(v[-1])
  v = np.concatenate([v, (v[1:] + v[:-1]) / 2, [mx * 1.03, mx * 1.1, mx * 4, 1e30, -1e30, np.inf, -np.inf, np.nan, -0.0]])
  return np.concatenate([v, np.nextafter(v, np.inf), np.nextafter(v, -np.inf)])


@pytest.mark.parametrize("name", ["fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz"])
def test_fp8_conversion_is_tinygrads_float_to_fp8(name):
  # tinyspec's one meaning of converting into an fp8 dtype (round_float) gives the bits tinygrad's float_to_fp8 gives,
  # for the dtype the bridge translates tinygrad's to: saturation past max, infinities, NaN, ties, subnormals, zeros
  from tinygrad.dtype import dtypes as tgd, float_to_fp8
  from tinyspec.bridge.tinygrad.dtype_names import DTYPES
  from tinyspec.dtype import round_float
  tg = getattr(tgd, name)
  dt = DTYPES[tg.name]
  x = _fp8_sweep(dt)
  ours = round_float(x, dt).view(np.uint8)
  theirs = np.array([float_to_fp8(float(v), tg) for v in x], np.uint8)
  with np.errstate(invalid="ignore"): nan = np.isnan(ours.view(dt.np).astype(np.float32))
  # NaNs compare as NaNs: float8_e5m2 has several, and float_to_fp8 picks another payload (0x7f) than ml_dtypes (0x7e)
  same = np.where(nan, np.isnan(theirs.view(dt.np).astype(np.float32)), ours == theirs)
  assert same.all(), [(float(v), hex(o), hex(t)) for v, o, t in zip(x[~same], ours[~same], theirs[~same])][:8]
  if "fnuz" in name: assert set(theirs[nan].tolist()) == {0x80} and 0x80 not in theirs[~nan]  # the one NaN; no -0.0


def test_a_precompiled_backward_graph_binds_the_params_its_calls_take():
  # the backward of a precompiled function: most PARAMs of its kernel graphs are reached only through the args of the
  # calls in them (outside every call only slots {3} and {0, 4, 6, 7}); all of them are the graph's own, bound by its CALL
  from tinygrad import Tensor, function
  def program():
    rng = np.random.default_rng(0)
    a, b, c = (Tensor(rng.standard_normal(s).astype(np.float32)) for s in ((4, 8), (8, 12), (12, 16)))
    @function(precompile=True)
    def gemm(a: Tensor, b: Tensor, c: Tensor) -> Tensor: return (a @ b) @ c
    gemm(a, b, c).square().mean().backward()
    return a.grad, b.grad, c.grad
  rep = run_check(program)
  assert len(rep.translation.graphs["kernel_graph"]) > 1 and all(g is not None for _, g in rep.translation.graphs["kernel_graph"])
  assert [v.rule for _, v in rep.violations["kernel_graph"]] == []


def test_a_precompiled_function_with_an_unused_arg_is_bound():
  # the function's kernel graph names no PARAM for b: its slot is still an arg of the CALL the graph is checked under
  from tinygrad import Tensor, function
  def program():
    a, b, c = (Tensor(np.arange(4, dtype=np.float32) + i) for i in range(3))
    @function(precompile=True)
    def f(a: Tensor, b: Tensor, c: Tensor) -> Tensor: return a * c + 1
    return f(a, b, c)
  rep = run_check(program)
  assert [v.rule for _, v in rep.violations["kernel_graph"]] == [] and len(rep.translation.graphs["kernel_graph"]) == 2


def test_a_kernel_reading_a_buffer_runs_before_the_kernel_overwriting_it():
  # m reads a, then a is assigned in the same realize: tinygrad's schedule orders the read first (write after read), its
  # kernel graph does not say so; the translation does, or the evaluator may run the assign first and read 2a + 1
  def program():
    from tinygrad import Tensor
    a = (Tensor(np.arange(4, dtype=np.float32)) + 0.5).contiguous()
    m = (a + 1).contiguous()
    a.assign(a * 2)
    return a, m
  rep = run_check(program)
  assert rep.all_ok and not rep.all_unchecked, rep.all_unchecked
  a = np.arange(4, dtype=np.float32) + 0.5
  for mode in ("tensor", "callified", "kernel ASTs", "programs"):
    assert [np.reshape(v, -1).tolist() for v in rep.values[mode]] == [(a * 2).tolist(), (a + 1).tolist()], mode


def test_a_setitem_through_detach_writes_the_storage_and_holds():
  # t.detach()[1, 2] = 5 writes t: the DETACH of storage is that storage, as a store target and as what an AFTER waits on
  def program():
    from tinygrad import Tensor
    t = Tensor.zeros((3, 3)).contiguous().realize()
    t.detach()[1, 2] = 5
    return t * 1
  rep = run_check(program)
  assert rep.all_ok and not rep.all_unchecked, rep.all_unchecked
  want = np.zeros((3, 3), np.float32)
  want[1, 2] = 5
  assert all(np.array_equal(np.reshape(rep.values[m][0], (3, 3)), want) for m in ("tensor", "callified", "kernel ASTs", "programs"))
  assert not [u for _, g in rep.translation.graphs["tensor"] for u in g.toposort() if u.op is Ops.DETACH]


def test_a_chain_of_assigns_into_slices_holds_and_reproduces_tinygrad():
  # x[0] += 1 forty times unrealized: each AFTER waits on a view of storage holding the AFTER before it (its effects are
  # the dependencies); translating each such view once keeps this linear, where walking every path is 2^40
  def program():
    from tinygrad import Tensor, dtypes as tgd
    x = Tensor.zeros(2, dtype=tgd.int32).contiguous().realize()   # a kernel (a copy alone compiles no program)
    for _ in range(40): x[0] += 1
    return x
  rep = run_check(program)
  assert rep.all_ok and not rep.all_unchecked, rep.all_unchecked
  assert rep.capture.outputs[0].tolist() == [40, 0] and rep.values["tensor"][0].tolist() == [40, 0]
  after = [u for u in rep.translation.graphs["tensor"][0][1].toposort() if u.op is Ops.AFTER]
  assert max(len(u.src) - 1 for u in after) == 40   # the last AFTER waits on every store of the chain

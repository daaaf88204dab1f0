"""The reducer: shape moves carried through movement ops, kernel moves, local minimality, seeded bugs reduced to
small shapes, and crash findings reduced in child processes."""
from __future__ import annotations

import io
import os
import signal
import time

import numpy as np
import pytest

from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.corpus.store import load_entry, same_bug
from fuzz.check.oracles import Checker, Config
from fuzz.reduce.graph import Reducer, node_count
from tinyspec.uop import substitute
from fuzz.reduce.isolated import run_isolated
from fuzz.reduce.kernel import drop_range, shrink_buffers
from fuzz.reduce.shapes import shape_moves
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, broken_pipeline
from fuzz.generate.case import Case
from tinyspec.dtype import dtypes
from tinyspec.lower.base import Pass
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops, SourceArg, UOp

OPTS = {"callify": "inline", "realize": "minimal", "opts": None}


def _view_dims(root: UOp) -> list[int]:
  """Every dimension of every value (flat storage aside)."""
  return [d for u in root.toposort() if u.op not in (Ops.BUFFER, Ops.PARAM) and u.shape_ok and u.shape for d in u.shape]


def _bug_reducer(bug_name: str, case: Case) -> tuple[Reducer, tuple]:
  bug = BUGS_BY_NAME[bug_name]
  chk = Checker(Config(passes=broken_pipeline(bug), metamorphic=False))
  sig = next(f.signature for f in chk.check(case) if f.signature[1:] == (bug.pass_name, bug.rule))
  return Reducer(lambda c: any(same_bug(f.signature, sig) for f in chk.check(c))), sig


# ---- shape moves ----
def test_a_shorter_input_axis_is_carried_through_permute_pad_and_reduce():
  b = UOp.buffer(dtypes.float32, 12, id=7001)
  a = np.arange(12, dtype=np.float32) + 1
  out = b.reshape((4, 3)).permute((1, 0)).pad(((1, 5), (0, 6))).reduce(Ops.ADD, 1)
  root = UOp(Ops.SINK, src=(out,))
  found = []
  for r, ins in shape_moves(root, {7001: a}):
    bufs = [u for u in r.toposort() if u.op is Ops.BUFFER]
    assert not check(r, Stage.TENSOR)
    if bufs[0].arg.size == 6 and np.array_equal(ins[7001], a[:6]): found.append(r)
  assert found
  # the same computation on the first two rows, by numpy
  x = a[:6].reshape(2, 3).T
  want = np.pad(x, ((1, 1), (0, 2))).sum(axis=0)
  assert any(np.array_equal(evaluate(r, {7001: a[:6].copy()})[0], want) for r in found)


def test_size_one_axes_and_expand_dims_shrink():
  b = UOp.buffer(dtypes.int32, 6, id=7002)
  root = UOp(Ops.SINK, src=(b.reshape((2, 1, 3)) + UOp.const(dtypes.int32, 1).expand((2, 1, 3)),))
  shapes = {r.src[0].shape for r, _ in shape_moves(root, {7002: np.arange(6, dtype=np.int32)})}
  assert (2, 3) in shapes and (1, 1, 3) in shapes and (2, 1, 1) in shapes
  e = UOp.const(dtypes.float32, 2.0).expand((4, 3))
  moved = [r for r, _ in shape_moves(UOp(Ops.SINK, src=(e.pad(((0, 6), (1, 4))),)), {})]
  assert {r.src[0].shape for r in moved} == {(3, 4), (4, 4), (5, 4), (6, 2), (6, 3)}
  assert all(not check(r, Stage.TENSOR) for r in moved)


# ---- seeded bugs with larger shapes ----
def _inp(dt, shape, i):
  n = int(np.prod(shape))
  return UOp.buffer(dt, n, id=i).reshape(shape), (np.arange(n) % 5 + 1).astype(dt.np)


def _cases():
  v, a = _inp(dtypes.float32, (4, 3), 7101)
  yield "pad_gate_dropped", Case(UOp(Ops.SINK, src=(v.pad(((1, 6), (2, 5))),)), {7101: a}, OPTS), 4, 2
  v, a = _inp(dtypes.int32, (3, 4, 2), 7102)
  yield "permute_wrong_map", Case(UOp(Ops.SINK, src=(v.permute((2, 0, 1)),)), {7102: a}, OPTS), 4, 3
  yield "cast_fold_wrong_dtype", Case(UOp(Ops.SINK, src=(UOp.const(dtypes.int32, 3).expand((3, 4)).cast(dtypes.int8),)), {}, OPTS), 3, 0
  v, a = _inp(dtypes.float32, (3, 4), 7103)
  w = v * UOp.const(dtypes.float32, 2.0).expand((3, 4))
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(UOp.param(0, dtypes.float32, 12).reshape((3, 4)), w.reshape((4, 3)))), v), arg="f")
  yield "gettuple_wrong_output", Case(UOp(Ops.SINK, src=(call.gettuple(1),)), {7103: a}, OPTS), 6, 0
  v, a = _inp(dtypes.int32, (3, 4), 7104)
  t, _ = _inp(dtypes.int32, (3, 4), 7105)
  x = UOp(Ops.AFTER, dtypes.int32, (t, t.store(v + v)))
  yield "after_dependency_dropped", Case(UOp(Ops.SINK, src=(x.permute((1, 0)) + UOp.const(dtypes.int32, 1).expand((4, 3)),)), {7104: a}, OPTS), 7, 1


@pytest.mark.parametrize("name, case, max_nodes, max_dim", list(_cases()), ids=[c[0] for c in _cases()])
def test_seeded_bug_with_large_shapes_reduces_to_small_shapes(name, case, max_nodes, max_dim):
  r, sig = _bug_reducer(name, case)
  small = r.reduce(case)
  assert r.minimal
  assert node_count(small.root) <= max_nodes
  assert max(_view_dims(small.root), default=0) <= max_dim < max(_view_dims(case.root))
  # local minimality: no single move from the result is cheaper and still fails
  assert r.improvement(small) is None
  assert r.fails(small) and not check(small.root, Stage.TENSOR)


# measured: the oracle that sees the bug first, nodes and largest dimension of a value, for tensor cases (kind:kernel 0)
# and kernel cases (kind:kernel 1), with the spec checked after every rule application (the campaign's default) or
# after every pass. The wrong GETTUPLE output is a spec violation between two applications only when a second call
# reads the first one's result (two calls: 9 nodes); checked per pass, the same bug shows as a changed result of one call.
# (None: whichever oracle sees it)
CAMPAIGN_BOUNDS = [
  ("pad_gate_dropped", 0.0, True, None, 4, 2), ("permute_wrong_map", 0.0, True, None, 4, 3),
  ("gettuple_wrong_output", 0.0, True, "spec", 9, 1), ("gettuple_wrong_output", 0.0, False, "parity", 6, 1),
  ("reduce_skips_last", 0.0, True, None, 4, 2), ("after_dependency_dropped", 0.0, True, None, 7, 1),
  ("view_as_kernel_arg", 0.0, True, None, 6, 1), ("reduce_skips_last", 1.0, True, None, 13, 1),
]


CAMPAIGN_IDS = [f"{c[0]}-{'kernel' if c[1] else 'tensor'}-{'per_rewrite' if c[2] else 'per_pass'}" for c in CAMPAIGN_BOUNDS]


@pytest.mark.parametrize("name, kernel, per_rewrite, oracle, max_nodes, max_dim", CAMPAIGN_BOUNDS, ids=CAMPAIGN_IDS)
def test_campaign_reduces_seeded_bugs(tmp_path, name, kernel, per_rewrite, oracle, max_nodes, max_dim):
  bug = BUGS_BY_NAME[name]
  cfg = CampaignConfig(seconds=60, seed=0, workers=0, corpus=str(tmp_path), passes=broken_pipeline(bug),
                       weights={"kind:kernel": kernel, "kind:multi": 0.0},  # sharded cases keep their MULTIs: a few nodes more
                       per_rewrite=per_rewrite, max_cases=300, reduce_seconds=30,
                       stop_when=lambda r: r.signature[1:] == (bug.pass_name, bug.rule))
  s = run_campaign(cfg, io.StringIO())
  hit = next(f for f in s.findings if f.signature[1:] == (bug.pass_name, bug.rule))
  entry = load_entry(hit.path)
  assert oracle in (None, hit.signature[0]) and entry.per_rewrite is per_rewrite
  assert node_count(entry.case.root) == hit.nodes <= min(max_nodes, hit.found_nodes)
  assert max(_view_dims(entry.case.root), default=0) <= max_dim
  assert s.phase["reduce"] > 0  # the runner's reduction time reaches the campaign's phases


@pytest.mark.slow
def test_kernel_mod_bug_reduces(tmp_path):
  bug = BUGS_BY_NAME["mod_off_by_one"]
  # the kernel generator's cases alone (no integer kernels), and no proof of the swapped rule at the start: this is
  # about how far a kernel case that shows the bug reduces
  cfg = CampaignConfig(seconds=60, seed=0, workers=0, corpus=str(tmp_path), passes=broken_pipeline(bug),
                       weights={"kind:kernel": 1.0, "kind:int": 0.0}, prove_changed=False,
                       max_cases=300, stop_when=lambda r: r.signature[1:] == (bug.pass_name, bug.rule))
  hit = next(f for f in run_campaign(cfg, io.StringIO()).findings if f.signature[1:] == (bug.pass_name, bug.rule))
  case = load_entry(hit.path).case
  assert hit.nodes <= 19 < hit.found_nodes  # one kernel, one loop, one load through a MOD index: a kernel graph of ~18 nodes
  assert sum(u.op is Ops.RANGE for u in case.root.toposort()) == 1


# ---- kernel moves ----
def _copy_kernel(rows: int, cols: int) -> tuple[UOp, UOp, UOp]:
  out, inp = UOp.buffer(dtypes.float32, rows * cols, id=7201), UOp.buffer(dtypes.float32, rows * cols, id=7202)
  r0, r1 = UOp.range(rows, 0), UOp.range(cols, 1)
  idx = r0 * cols + r1
  p0, p1 = UOp.param(0, dtypes.float32, rows * cols), UOp.param(1, dtypes.float32, rows * cols)
  body = UOp(Ops.SINK, src=(p0.index(idx).store(p1.index(idx).load()).end(r0, r1),))
  return UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, inp), arg="k")),)), r0, r1


def test_dropping_a_range_keeps_the_kernel_legal_and_runs_one_row():
  root, r0, _ = _copy_kernel(3, 4)
  a = np.arange(12, dtype=np.float32) + 1
  small = drop_range(root, r0)
  assert not check(small, Stage.KERNEL_GRAPH)
  assert sum(u.op is Ops.RANGE for u in small.toposort()) == 1
  want = np.zeros(12, dtype=np.float32)
  want[:4] = a[:4]
  assert np.array_equal(evaluate(small, {7202: a})[0], want)


def test_shrinking_a_buffer_resizes_its_params_and_input():
  root, r0, r1 = _copy_kernel(3, 4)
  root = substitute(root, {r0: UOp.range(1, 0)})  # one row: the input may shrink to 4 elements
  a = np.arange(12, dtype=np.float32) + 1
  legal = []
  for r, ins in shrink_buffers(root, {7202: a}):
    if check(r, Stage.KERNEL_GRAPH): continue
    sizes = {u.arg.size for u in r.toposort() if u.op is Ops.PARAM and u.arg.slot == 1}
    if len(ins[7202]) < 12: legal.append((len(ins[7202]), sizes))
  # 12 -> 6 or 11 elements keeps the 4 the kernel reads; 1 or 2 would not, and the spec drops those
  assert sorted(legal) == [(6, {6}), (11, {11})]


# ---- crash findings ----
def _segfault(case):
  os.kill(os.getpid(), signal.SIGSEGV)


def test_isolated_runs_report_how_the_child_ended():
  c = Case(UOp(Ops.SINK, src=(UOp.const(dtypes.int32, 1),)), {})
  assert run_isolated(lambda case: None, c, 10) == "ok"
  assert run_isolated(_segfault, c, 10) == "signal11"
  t = time.monotonic()
  assert run_isolated(lambda case: time.sleep(30), c, 0.5) == "timeout"
  assert time.monotonic() - t < 10


def _render_null_deref(root: UOp, options, trace, tables) -> UOp:
  """The reference render, except that a kernel computing a float product first writes through a NULL pointer."""
  from tinyspec.lower.pipeline import PASSES
  out = PASSES[-1].run(root, options, trace)
  fix = {}
  for u in out.toposort():
    if u.op is Ops.PROGRAM and len(u.src) == 3 and any(x.op is Ops.MUL and x.dtype.is_float for x in u.src[1].src):
      a = u.src[2].arg
      text = a.text.replace("{\n", "{\n  *(volatile int*)0 = 0;\n", 1)
      fix[u] = u.replace(src=(u.src[0], u.src[1], UOp(Ops.SOURCE, arg=SourceArg(a.lang, a.name, text))))
  return substitute(out, fix) if fix else out


def test_a_segfaulting_kernel_is_a_finding_of_its_case_and_reduced(tmp_path):
  from tinyspec.lower.pipeline import PASSES
  r = PASSES[-1]
  passes = [*PASSES[:-1], Pass(r.name, r.stage_in, r.stage_out, _render_null_deref, r.tables)]
  cfg = CampaignConfig(seconds=60, seed=0, workers=1, corpus=str(tmp_path), passes=passes, backends=("reference", "cpu"), cc="tcc",
                       case_timeout=10, reduce_seconds=60, max_cases=64, stop_on_finding=True,
                       weights={"kind:kernel": 0.0, "kind:compose": 0.0, "kind:multi": 0.0})  # the tensor generator's cases only
  s = run_campaign(cfg, io.StringIO())
  # every kernel ran in the kernel host: the signal killed it, not the worker; the signature names the kernel
  sig = ("crash", "cpu", "signal11@kernel_0")
  assert [f.signature for f in s.findings] == [sig]
  hit = s.findings[0]
  case = load_entry(hit.path).case
  assert hit.nodes == node_count(case.root) <= 4 < hit.found_nodes
  assert any(u.op is Ops.MUL and u.dtype.is_float for u in case.root.toposort())
  chk = Checker(Config(passes=passes, backends=("reference", "cpu"), cc="tcc"))
  assert [f.signature for f in chk.check(case)] == [sig]  # and this process is still here
  fixed = Checker(Config(backends=("reference", "cpu"), cc="tcc"))
  assert fixed.check(case) == []


def test_still_fails_holds_while_the_same_bug_shows_and_keeps_its_last_finding():
  from types import SimpleNamespace as F

  from fuzz.corpus.store import StillFails
  found = F(signature=("metamorphic", "simplify", "r"), message="as found")
  by_case = {1: [F(signature=("spec", "simplify", "r"), message="other bug")], 2: [F(signature=("parity", "simplify", "r"), message="smaller")]}
  still = StillFails(lambda c: by_case.get(c, []), found)
  assert still.last is found and not still(1) and still.last is found  # another oracle's finding is another bug
  assert still(2) and still.last.message == "smaller"  # a metamorphic difference replays as a parity one
  assert not still(3) and still.last.message == "smaller"

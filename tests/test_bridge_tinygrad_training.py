"""The tinygrad bridge on training programs: a program that realizes several times is checked step by step, an input the
capture has no contents for is not compared (never read as zeros), an optimizer's assign into a tensor not yet realized,
one_hot's weak result, TinyJit steps, and a kernel's sum over WHERE(cond, x, Invalid)."""
from __future__ import annotations

import functools
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad import capture, translate  # noqa: E402
from tinyspec.bridge.tinygrad.check import Report, check_capture  # noqa: E402
from tinyspec.bridge.tinygrad.translator import STAGES  # noqa: E402
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.spec import Stage, check  # noqa: E402
from tinyspec.uop import Ops, UOp  # noqa: E402

pytestmark = pytest.mark.tinygrad
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tinygrad"


@functools.cache
def captured(name: str):
  return capture(runpy.run_path(str(EXAMPLES / f"{name}.py"))["program"])


def assert_holds_fully(rep: Report) -> None:
  """Every stage of every step translated in full, legal, and all four comparisons of numbers ran and agreed."""
  for r in [*rep.steps, rep]:
    assert {s: (d, n) for s, (d, n) in r.translation.coverage().items() if d != n} == {}
    assert all(r.translation.graphs[s] for s in STAGES)
    assert {s: [str(v) for _, v in vs] for s, vs in r.violations.items() if vs} == {}
    assert r.ran == {"tensor": True, "callified": True, "kernel ASTs": True, "programs": True}, r.numbers
    assert all(x is None for x in r.numbers.values()), r.numbers
  assert rep.all_ok and rep.all_unchecked == []


def sgd_momentum(steps: int) -> tuple[np.ndarray, ...]:
  """train_mlp_sgd.py's training by numpy alone: relu MLP, mean squared error, SGD with momentum 0.9 (torch's form,
  tinygrad's default: b = 0.9 b + g; w -= lr b)."""
  ns = runpy.run_path(str(EXAMPLES / "train_mlp_sgd.py"))
  X, Y, w1, b1, w2 = (ns[k].astype(np.float64) for k in ("X", "Y", "W1", "B1", "W2"))
  params, moms = [w1, b1, w2], [np.zeros_like(w1), np.zeros_like(b1), np.zeros_like(w2)]
  for _ in range(steps):
    w1, b1, w2 = params
    h = X @ w1 + b1
    a = np.maximum(h, 0)
    d = 2 * (a @ w2 - Y) / Y.size
    gw2, da = a.T @ d, d @ w2.T
    dh = da * (h > 0)
    grads = [X.T @ dh, dh.sum(0), gw2]
    moms = [0.9 * m + g for m, g in zip(moms, grads)]
    params = [p - 0.1 * m for p, m in zip(params, moms)]
  return tuple(params)


def test_training_loop_is_checked_at_every_step():
  cap = captured("train_mlp_sgd")
  # three optimizer steps: the last one realized the outputs, so it is the capture itself
  assert len(cap.steps) == 2 and all(s.programs for s in [*cap.steps, cap])
  assert_holds_fully(check_capture(cap))
  # each step's numbers are tinygrad's after that step: they match numpy's SGD with momentum, step by step
  for k, step in enumerate([*cap.steps, cap]):
    want = sgd_momentum(k + 1)
    got = {o.shape: o for o in step.outputs}
    for w in want: np.testing.assert_allclose(got[w.shape], w, rtol=1e-4, atol=1e-5)


def test_assign_into_an_unrealized_tensor_is_its_value_made_contiguous():
  # the first step assigns into parameters that are still COPYs of numpy arrays: tinygrad's transform_to_call rewrites
  # AFTER(COPY, STORE(COPY, v)) to CONTIGUOUS(v) (replace_store_after_with_contig), and so does the translation
  first = captured("train_mlp_sgd").steps[0]
  assigns = [s for s in first.tensor.src if s.op.name == "AFTER" and s.src[0].op.name == "COPY"]
  assert assigns and all(s.src[1].op.name == "STORE" for s in assigns)
  root = translate(first).graphs["tensor"][0][1]
  outs = [root.src[list(first.tensor.src).index(s)] for s in assigns]
  assert all(o.op is Ops.CONTIGUOUS for o in outs)
  assert check(root, Stage.TENSOR) == []
  # the spec is not weakened: an AFTER and a STORE on a value that is no storage are still flagged
  x = outs[0].src[0]
  bad = UOp(Ops.SINK, dtypes.void, (UOp(Ops.AFTER, x.dtype, (x, UOp(Ops.STORE, dtypes.void, (x, x)))),))
  assert {v.rule for v in check(bad, Stage.TENSOR)} >= {"tensor.after_storage", "tensor.store_target"}


def test_a_missing_input_is_not_compared_and_named():
  # drop the captured contents of one input: the check must not read it as zeros (a MISMATCH that is the capture's, not
  # tinygrad's); every comparison that reads it is "not compared", naming the buffer
  cap = capture(runpy.run_path(str(EXAMPLES / "matmul.py"))["program"])
  gone = next(b for b in cap.inputs if b.arg.device == "NPY")
  del cap.inputs[gone]
  rep = check_capture(cap)
  assert not any(rep.violations.values())
  t = rep.translation
  (bid,) = [b.arg.id for k, b in t.buffers.items() if k is gone]
  assert rep.ran == {"tensor": False, "callified": False, "kernel ASTs": False, "programs": False}
  assert all(f"BUFFER {bid} " in why and "not captured" in why for why in rep.numbers.values()), rep.numbers
  assert rep.ok and rep.unchecked and not rep.differs


def test_one_hot_is_captured_with_its_input():
  # one_hot's result is weakint: the capture realizes it as tinygrad's numpy() does (cast to int32), and its int input
  # is read from the tensor graph
  cap = captured("one_hot")
  assert cap.outputs[0].dtype == np.int32 and cap.inputs
  np.testing.assert_array_equal(cap.outputs[0], np.eye(4, dtype=np.int32)[[0, 2, 1, 3, 2]])
  assert_holds_fully(check_capture(cap))


def test_tinyjit_steps_are_checked_when_run():
  # the jit's first call runs as it is; the second is captured, and tinygrad runs its schedule when the call ends: that
  # step's numbers are read then; replays make no graph
  cap = captured("tinyjit_steps")
  assert len(cap.steps) == 3 and cap.unread is None
  assert_holds_fully(check_capture(cap))


def test_sum_over_invalid_masked_value_is_checked():
  # pool backward's kernels sum WHERE(cond, x, Invalid) over the window; tinygrad's codegen gives the masked iterations 0
  cap = captured("pool_backward")
  t = translate(cap, strict=False)
  masked = [r for _, g in t.graphs["kernel"] if g is not None for r in g.toposort()
            if r.op is Ops.REDUCE and r.src[0].op is Ops.WHERE and r.src[0].src[2].op is Ops.CONST and r.src[0].src[2].arg == 0]
  assert masked
  assert t.coverage()["kernel"][0] == t.coverage()["kernel"][1] and t.coverage()["kernel_graph"][0] == t.coverage()["kernel_graph"][1]
  rep = check_capture(cap)
  assert {s: [str(v) for _, v in vs] for s, vs in rep.violations.items() if vs} == {}
  assert rep.ran["kernel ASTs"] and rep.numbers["kernel ASTs"] is None

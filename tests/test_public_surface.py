"""The stable interface outside code uses: every name of the design's public surface imports from where it is documented
and does what it is for, and the CLI has every documented verb."""
from __future__ import annotations

import numpy as np
import pytest

from tinyspec import Ops, SpecError, Stage, UOp, Violation, check, dtypes, gradient, verify
from tinyspec.cli import build_parser
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.semantics import evaluate


def test_check_verify_and_violation_on_a_built_graph():
  a = Tensor([1.0, 2.0, 3.0])
  root = Tensor.sink(a * 2 + 1)
  assert check(root, Stage.TENSOR) == []
  verify(root, Stage.TENSOR)
  np.testing.assert_array_equal(evaluate(root, inputs_of(root))[0], [3.0, 5.0, 7.0])
  bad = UOp(Ops.SINK, src=(UOp(Ops.ADD, dtypes.float32, (UOp.const(dtypes.float32, 1.0), UOp.const(dtypes.int32, 1))),))
  vs = check(bad, Stage.TENSOR)
  assert vs and all(isinstance(v, Violation) and v.stage is Stage.TENSOR and v.rule for v in vs)
  with pytest.raises(SpecError):
    verify(bad, Stage.TENSOR)


def test_function_and_gradient():
  @function
  def f(x: Tensor) -> Tensor: return x * x

  x = Tensor([1.0, -2.0])
  np.testing.assert_array_equal(f(x).numpy(), [1.0, 4.0])
  w = Tensor([3.0, 4.0])
  (g,) = gradient((w * w).sum(), [w])
  np.testing.assert_array_equal(g.numpy(), [6.0, 8.0])


def test_the_cli_has_every_documented_verb():
  sub = next(a for a in build_parser()._actions if a.dest == "verb")
  assert {"check", "lower", "run", "fuzz", "repro", "prove", "viz", "tinygrad"} <= set(sub.choices)
  tg = next(a for a in sub.choices["tinygrad"]._actions if a.dest == "tinygrad_verb")
  assert "check" in tg.choices


@pytest.mark.tinygrad
def test_the_bridge_names():
  pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")
  from tinygrad import Tensor as TgTensor

  from tinyspec.bridge.tinygrad import capture, translate
  tr = translate(capture(lambda: TgTensor([1.0, 2.0]) + 1))
  roots = [ts for graphs in tr.graphs.values() for _, ts in graphs]
  assert roots and all(isinstance(r, UOp) for r in roots)
  assert all(done == total for done, total in tr.coverage().values())

"""Every gradient rule of tinyspec.autograd held against central differences in float64, and the numeric oracle
(fuzz.check.numeric_grad) shown to catch a wrong rule that the through-calls oracle cannot see."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from fuzz.check.gradient_oracle import call_gradient_mismatches
from fuzz.check.numeric_grad import local_mismatch, numeric_gradient_check
from fuzz.check.oracles import Checker, Config
from fuzz.generate.kinds import case_for
from tinyspec.autograd import full_like, pm_gradient
from tinyspec.dtype import dtypes
from tinyspec.rewrite import PatternMatcher
from tinyspec.uop import Ops, UOp

F64, F32 = dtypes.float64, dtypes.float32
Inputs = dict[int, np.ndarray]


class Leaves:
  """Float64 input buffers with random data in a range, seen in a shape."""
  def __init__(self, seed: int):
    self.rng, self.inputs = np.random.default_rng(seed), {}

  def __call__(self, shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0, dtype=F64) -> UOp:
    n = int(np.prod(shape))
    b = UOp.buffer(dtype, n)
    self.inputs[b.arg.id] = self.rng.uniform(lo, hi, size=n).astype(dtype.np)
    return b if shape == (n,) else b.reshape(shape)


def value_call(body_of: Callable[[UOp], UOp], x: UOp) -> UOp:
  """GETTUPLE(CALL(TUPLE(body_of(PARAM 0 in x's shape)), x), 0): the op inside a value call's body."""
  p = UOp.param(0, x.dtype, x.size)
  return UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(body_of(p.reshape(x.shape) if x.shape != (x.size,) else p),)), x)).gettuple(0)


def _assign(x: UOp) -> UOp:
  """AFTER(s, STORE(s, 2x)) over a fresh buffer s: the assign, whose gradient is the stored value's."""
  s = UOp.buffer(F64, x.size).reshape(x.shape)
  return UOp(Ops.AFTER, F64, (s, s.store(x.alu(Ops.MUL, full_like(x, 2.0)))))


# rule name -> a graph built from random leaves in which the rule is on the gradient path. Domains keep away from the
# points where an op is not differentiable, so every point is compared.
GRAPHS: dict[str, Callable[[Leaves], UOp]] = {
  "grad_neg": lambda x: -x((2, 3)),
  "grad_recip": lambda x: x((6,), 0.5, 2.0).alu(Ops.RECIP),
  "grad_sqrt": lambda x: x((6,), 0.5, 4.0).alu(Ops.SQRT),
  "grad_exp2": lambda x: x((6,)).alu(Ops.EXP2),
  "grad_log2": lambda x: x((6,), 0.5, 4.0).alu(Ops.LOG2),
  "grad_sin": lambda x: x((6,), -3.0, 3.0).alu(Ops.SIN),
  "grad_add": lambda x: x((2, 3)) + x((2, 3)),
  "grad_sub": lambda x: x((2, 3)).alu(Ops.SUB, x((2, 3))),
  "grad_mul": lambda x: x((2, 3)).alu(Ops.MUL, x((2, 3))),
  "grad_max_ties_half": lambda x: x((8,)).alu(Ops.MAX, x((8,))),
  "grad_where": lambda x: (x((8,)) < x((8,))).where(x((8,)), x((8,))),
  "grad_cast": lambda x: x((6,), dtype=F32).cast(F64),
  "grad_reshape": lambda x: x((6,)).reshape((2, 3)).alu(Ops.SIN),
  "grad_permute": lambda x: x((2, 3, 2)).permute((2, 0, 1)).alu(Ops.SIN),
  "grad_expand": lambda x: x((3,)).expand((2,)).alu(Ops.SIN),
  "grad_pad": lambda x: x((2, 3)).pad(((1, 4), (0, 5))).alu(Ops.EXP2),
  "grad_shrink": lambda x: x((4, 5)).shrink(((1, 2), (2, 3))).alu(Ops.SIN),
  "grad_flip": lambda x: x((2, 3)).flip((True, False)).alu(Ops.SIN),
  "grad_reduce_add": lambda x: x((3, 4)).reduce(Ops.ADD, 1).alu(Ops.SIN),
  "grad_reduce_max_split": lambda x: x((3, 4)).reduce(Ops.MAX, 1),
  "grad_reduce_mul": lambda x: x((3, 4), 0.5, 1.5).reduce(Ops.MUL, 1),
  "grad_contiguous": lambda x: UOp(Ops.CONTIGUOUS, F64, (x((6,)).alu(Ops.SIN),)),
  "grad_copy": lambda x: UOp(Ops.COPY, F64, (x((6,)),), "CPU:1").alu(Ops.SIN),
  "grad_multi": lambda x: _multi_graph(x),
  "grad_assign": lambda x: _assign(x((2, 3))),
  "grad_store_value": lambda x: _assign(x((6,))),
  "grad_value_call": lambda x: value_call(lambda p: p.alu(Ops.SIN).alu(Ops.MUL, p), x((2, 3))),
  "grad_gettuple": lambda x: value_call(lambda p: p.alu(Ops.EXP2), x((6,))),
  "grad_tuple": lambda x: value_call(lambda p: p.alu(Ops.EXP2), x((6,))),
}
def _multi_graph(x) -> UOp:
  """A tensor split over two devices (uneven blocks) times one replicated on both: the gradient of each block and of
  the replicated leaf."""
  sharded = UOp.multi([x((2, 3)).copy_to("CPU:0"), x((1, 3)).copy_to("CPU:1")], 0)
  w = x((3, 3))
  return sharded.alu(Ops.MUL, UOp.multi([w.copy_to("CPU:0"), w.copy_to("CPU:1")], None)).alu(Ops.SIN)


# rules that give no gradient or raise: central differences have nothing to hold them to (a TRUNC or a comparison is
# flat wherever it is differentiable; DETACH and the opaque forms are gradient stops by definition)
NOT_NUMERIC = {"grad_trunc_zero", "grad_none", "grad_detach_stop", "grad_bitcast_same", "grad_after_other", "grad_opaque_call"}


def test_every_gradient_rule_is_in_the_table():
  assert {r.name for r in pm_gradient.rules} == set(GRAPHS) | NOT_NUMERIC


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_rule_agrees_with_central_differences(name: str, seed: int):
  x = Leaves(seed)
  root = GRAPHS[name](x)
  res = numeric_gradient_check(root, x.inputs, seed=seed)
  assert res.mismatches == [] and res.compared >= min(6, sum(a.size for a in x.inputs.values())), res


def scaled(name: str, factor: float = 1.5) -> PatternMatcher:
  """pm_gradient with rule `name` giving each of its gradients times factor (a bundle, a SINK, is left as it is)."""
  rule = next(r for r in pm_gradient.rules if r.name == name)
  def fn(ctx: UOp, **kw: UOp):
    out = rule.fn(ctx=ctx, **kw) if rule.takes_ctx else rule.fn(**kw)
    return tuple(g if g is None or g.op is Ops.SINK else g.alu(Ops.MUL, full_like(g, factor)) for g in out)
  return pm_gradient.replace_rule(name, fn)


# a scaled rule whose gradient never reaches a buffer on its own: grad_gettuple's bundle is not scaled, and grad_tuple
# does not run on a call's own outputs (the backward body seeds them directly)
SCALED_INVISIBLE = {"grad_gettuple", "grad_tuple"}


@pytest.mark.parametrize("name", sorted(set(GRAPHS) - SCALED_INVISIBLE))
def test_a_scaled_rule_is_caught_and_named(name: str):
  x = Leaves(0)
  root = GRAPHS[name](x)
  res = numeric_gradient_check(root, x.inputs, seed=0, rules=scaled(name))
  assert res.mismatches, res
  assert {m.rule for m in res.mismatches} == {name}


@pytest.mark.parametrize("src,dst", [(F32, F64), (F64, F32)])
def test_cast_between_float_types_has_the_local_derivative_of_the_identity(src, dst):
  # the float64 twin of a graph casts float64 to float64; here the rule runs on the real pair of dtypes
  x = Leaves(3)
  node = x((6,), dtype=src).cast(dst)
  rng = np.random.default_rng(0)
  assert local_mismatch(node, x.inputs, pm_gradient, rng) is None
  assert local_mismatch(node, x.inputs, scaled("grad_cast"), rng) == "grad_cast"


# the two mutations of the brief: SIN's derivative taken as +sin, and MUL's gradients handed to the wrong operand
SIN_AS_SIN = pm_gradient.replace_rule("grad_sin", lambda ctx, x: (x.alu(Ops.SIN).alu(Ops.MUL, ctx),))
MUL_SWAPPED = pm_gradient.replace_rule("grad_mul", lambda ctx, a, b: (a.alu(Ops.MUL, ctx), b.alu(Ops.MUL, ctx)))


@pytest.mark.parametrize("rules,name,body", [(SIN_AS_SIN, "grad_sin", lambda p: p.alu(Ops.SIN)),
                                             (MUL_SWAPPED, "grad_mul", lambda p: p.alu(Ops.MUL, p.alu(Ops.EXP2)))])
def test_a_wrong_rule_inside_a_call_is_seen_by_the_numeric_oracle_only(rules, name, body):
  x = Leaves(5)
  root = UOp(Ops.SINK, src=(value_call(body, x((2, 3), -1.0, 1.0)),))
  # through calls and inlined, both sides use the same wrong rule: they agree
  assert call_gradient_mismatches(root, x.inputs, rules=rules) == []
  bad = numeric_gradient_check(root, x.inputs, rules=rules).mismatches
  assert bad and bad[0].rule == name


def test_the_checker_takes_the_rule_table_from_its_config():
  x = Leaves(6)
  root = UOp(Ops.SINK, src=(value_call(lambda p: p.alu(Ops.SIN), x((2, 3), -1.0, 1.0)),))
  from fuzz.generate.case import Case
  case = Case(root, x.inputs, {"callify": "inline"}, index=0)
  assert Checker(Config()).gradient(case) is None
  f = Checker(Config(gradient_rules=SIN_AS_SIN)).gradient(case)
  assert f is not None and f.signature == ("gradient", "autograd", "grad_sin")
  assert "BUFFER" in f.message and "element" in f.message and "central differences give" in f.message
  assert "test_autograd_numeric.py:" in f.message  # where the wrong rule is written: here, SIN_AS_SIN
  # the whole check of the case reports it too (the lowering of the case is right: nothing else is found)
  assert [g.signature for g in Checker(Config(gradient_rules=SIN_AS_SIN)).check(case)] == [f.signature]
  assert Checker(Config(gradient_rules=SIN_AS_SIN, numeric_gradients=False)).gradient(case) is None


def _tied(x: Leaves) -> tuple[UOp, UOp]:
  """Two buffers holding the same small integers: MAX ties and TRUNC steps at every element."""
  a, b = x((8,)), x((8,))
  data = np.round(x.inputs[a.arg.id])
  x.inputs[a.arg.id], x.inputs[b.arg.id] = data, data.copy()
  return a, b


@pytest.mark.parametrize("build", [lambda a, b: a.alu(Ops.MAX, b), lambda a, b: a.alu(Ops.TRUNC).alu(Ops.MUL, b),
                                   lambda a, b: (a < b).where(a, b.alu(Ops.MUL, full_like(b, 3.0)))],
                         ids=["max_tie", "trunc_step", "where_flips"])
def test_points_where_the_loss_has_a_kink_are_skipped_not_reported(build):
  x = Leaves(7)
  a, b = _tied(x)
  res = numeric_gradient_check(build(a, b), x.inputs, seed=0)
  # central differences there are not the derivative the rule chose, and need not be: the point is not compared
  assert res.mismatches == [] and res.skipped > 0, res


@pytest.mark.slow
def test_no_finding_on_generated_cases_with_the_real_rules():
  checked = 0
  for i in range(200):
    c = case_for(0, i)
    if c.kind != "tensor": continue
    res = numeric_gradient_check(c.root, c.copy_inputs(), seed=i)
    assert res.mismatches == [], (i, [m.describe() for m in res.mismatches])
    checked += res.compared > 0
  assert checked >= 40  # the oracle compares on a good share of the cases, so its silence says something


def test_a_tie_is_skipped_not_reported():
  # a frontend composition (a gather, a max pool and a scan) over whole numbers in float32 is full of ties: moving one input
  # by h either way leaves the loss flat while the rule, at the tie itself, sends a gradient down one branch. The
  # comparisons and MAXes that change outcome under the move mark the point as a tie, and it is not compared
  import random
  from fuzz.check import numeric_grad
  from fuzz.generate.compositions import composition_case
  from fuzz.generate.case import default_weights
  c = composition_case(random.Random("g:18"), default_weights())
  assert {"compose:scan", "dtype:float32"} <= c.features
  got = numeric_grad.numeric_gradient_check(c.root, c.inputs, seed=0)
  assert got.mismatches == [] and got.skipped > 0
  # a flat loss and a rule that says 5: a mismatch, unless a comparison changes outcome between x - h and x + h
  probe = numeric_grad.Probe(lambda fd: 0.0, {7: np.array([1.0])}, 0.0, 1.0, branches=lambda fd: bytes([int(fd[7][0] > 1.0)]))
  assert probe.judge(7, 0, symbolic=5.0, scale=5.0)[0] == "skip"
  assert numeric_grad.Probe(lambda fd: 0.0, {7: np.array([1.0])}, 0.0, 1.0).judge(7, 0, symbolic=5.0, scale=5.0)[0] == "bad"

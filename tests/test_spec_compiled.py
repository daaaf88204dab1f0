"""The fused checks are compiled from the rules of a table: a rule added with a fast predicate is enforced by the fused
check, a rule added without one takes its op off the fast path, and a table is frozen (adding a rule makes a new one)."""
from __future__ import annotations

import itertools

import pytest

from tinyspec import Ops, Stage, UOp, dtypes
from tinyspec.spec import engine
from tinyspec.spec.base import Code, Ctx, Rule
from tinyspec.spec.tensor import TENSOR_TABLE
from tinyspec.uop import BufferArg

pytestmark = pytest.mark.spec
_tags = itertools.count()


def _ctx(tbl) -> Ctx:
  cx = Ctx(f"test_compiled_{next(_tags)}", Stage.TENSOR, tbl, top=True)
  cx.body_ctx = engine.T_TOP.body_ctx
  return cx


def _x() -> UOp:
  return UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 41, 16), ("compiled", next(_tags)))


def _rules_of(g: UOp, cx: Ctx) -> list[str]:
  assert engine.clean(g, cx) is False
  return [v.rule for v in engine.collect(g, cx)]


# at most two axes after a RESHAPE: what no rule of TENSOR asks
_flat = Rule("test.two_axes", "A RESHAPE gives at most two axes.", lambda u, cx: None if len(u.arg) <= 2 else f"RESHAPE to {u.arg}",
             fast=lambda op: (Code.of("len(a) <= 2"),))


def test_a_rule_with_a_fast_predicate_is_enforced_by_the_compiled_check():
  tbl = TENSOR_TABLE.with_rules(Ops.RESHAPE, _flat)
  assert TENSOR_TABLE[Ops.RESHAPE] + (_flat,) == tbl[Ops.RESHAPE]
  check = tbl.fused[Ops.RESHAPE.value]
  assert check is not None  # the op stays on the fast path, with the new rule's clause compiled in
  cx = _ctx(tbl)
  x = _x()
  bad, good = x.reshape((2, 2, 4)), x.reshape((4, 4))
  # the walk reports the node, by the new rule alone (the rules of the stage accept it)
  assert _rules_of(UOp(Ops.SINK, dtypes.void, (bad,)), cx) == ["test.two_axes"]
  assert engine.check(UOp(Ops.SINK, dtypes.void, (bad,)), Stage.TENSOR) == []
  # the compiled check of the op, its source decided: never True for the node the rule rejects, True for one it accepts
  assert check(bad, cx.key) is not True
  assert engine.clean(UOp(Ops.SINK, dtypes.void, (good,)), cx) is True
  good2 = x.reshape((16,)).reshape((2, 8))
  assert engine.clean(good2.src[0], cx) is True
  assert check(good2, cx.key) is True
  bad2 = x.reshape((16,)).reshape((2, 2, 4))
  assert check(bad2, cx.key) is not True
  # the same graphs through the walk's written-out branch: a chain of views decided bottom up
  chain = x.reshape((4, 4)).permute((1, 0)).reshape((2, 2, 2, 2)).reshape((16,))
  assert _rules_of(UOp(Ops.SINK, dtypes.void, (chain,)), cx) == ["test.two_axes"]


def test_a_rule_without_a_fast_predicate_takes_its_op_to_the_rules():
  no_neg = Rule("test.no_neg", "No NEG.", lambda u, cx: "NEG is banned here")
  tbl = TENSOR_TABLE.with_rules(Ops.NEG, no_neg)
  assert TENSOR_TABLE.fused[Ops.NEG.value] is not None
  assert tbl.fused[Ops.NEG.value] is None  # the rules decide every NEG
  assert tbl.fused[Ops.ADD.value] is not None  # other ops keep theirs
  cx = _ctx(tbl)
  g = UOp(Ops.SINK, dtypes.void, (-(_x() + _x()),))
  assert _rules_of(g, cx) == ["test.no_neg"]
  assert engine.check(g, Stage.TENSOR) == []
  # a fast predicate with no clauses for an op leaves that op to the rules too
  partial = Rule("test.partial", "No EXP2.", lambda u, cx: "EXP2 is banned here" if u.op is Ops.EXP2 else None,
                 fast=lambda op: None if op is Ops.EXP2 else ())
  tbl = TENSOR_TABLE.with_rules((Ops.EXP2, Ops.LOG2), partial)
  assert tbl.fused[Ops.EXP2.value] is None and tbl.fused[Ops.LOG2.value] is not None
  assert _rules_of(UOp(Ops.SINK, dtypes.void, (UOp(Ops.EXP2, dtypes.float32, (_x(),)),)), _ctx(tbl)) == ["test.partial"]


def test_tables_are_frozen():
  with pytest.raises(TypeError):
    TENSOR_TABLE[Ops.NEG] = ()
  with pytest.raises(TypeError):
    TENSOR_TABLE.update({Ops.NEG: ()})
  with pytest.raises(TypeError):
    del TENSOR_TABLE[Ops.NEG]


def test_fused_checks_are_off_with_set_fused():
  g = UOp(Ops.SINK, dtypes.void, (_x().reshape((4, 4)) + _x().reshape((4, 4)),))
  engine.set_fused(False)
  try: assert engine.check(g, Stage.TENSOR) == []
  finally: engine.set_fused(True)
  assert engine.check(g, Stage.TENSOR) == []

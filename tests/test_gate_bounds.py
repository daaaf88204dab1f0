"""Interval bounds where a gate holds (tinyspec.ops.intervals.gate_bounds, bounds_given): what the KERNEL bounds rule
tries before z3 on a gated LOAD or STORE. Sound on every point where the gate holds (checked by enumeration), and tight
enough that the gated reads of padded views take no solver call."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyspec import Ops, Stage, UOp, check, dtypes, smt
from tinyspec.ops import scalar
from tinyspec.ops.intervals import bounds_given, gate_bounds

pytestmark = pytest.mark.spec
IDX = dtypes.index
R = (UOp.range(6, 0), UOp.range(5, 1))


def _c(v: int) -> UOp: return UOp.const(IDX, v)


def _value(u: UOp, env: dict[UOp, int]) -> int:
  if u in env: return env[u]
  if u.op is Ops.CONST: return u.arg
  out = scalar.run(u.op, u.src[-1].dtype, *(_value(s, env) for s in u.src))
  env[u] = out
  return out


def _exprs() -> st.SearchStrategy[UOp]:
  leaves = st.one_of(st.sampled_from(R), st.integers(-4, 8).map(_c))
  def grow(inner):
    bin_ = st.tuples(st.sampled_from([Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX]), inner, inner).map(lambda t: t[1].alu(t[0], t[2]))
    div = st.tuples(st.sampled_from([Ops.IDIV, Ops.MOD]), inner, st.integers(1, 5)).map(lambda t: t[1].alu(t[0], _c(t[2])))
    return st.one_of(bin_, div)
  return st.recursive(leaves, grow, max_leaves=6)


def _atoms(exprs: st.SearchStrategy[UOp]) -> st.SearchStrategy[UOp]:
  below = st.tuples(exprs, st.integers(-3, 12)).map(lambda t: t[0].alu(Ops.CMPLT, _c(t[1])))
  above = st.tuples(st.integers(-3, 8), exprs).map(lambda t: _c(t[0]).alu(Ops.CMPLT, t[1]))
  return st.one_of(below, above)


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.lists(_atoms(st.one_of(st.sampled_from(R), _exprs())), min_size=1, max_size=3))
def test_bounds_where_the_gate_holds_contain_every_value_there(e: UOp, atoms: list[UOp]) -> None:
  gate = atoms[0]
  for a in atoms[1:]: gate = gate.alu(Ops.AND, a)
  known = gate_bounds(gate)
  points = [dict(zip(R, p)) for p in itertools.product(range(6), range(5))]
  where = [p for p in points if _value(gate, dict(p))]
  if known is None:
    assert where == [], "gate_bounds says the gate never holds, but it does"
    return
  lo, hi = bounds_given(e, known)
  assert e.vmin <= lo and hi <= e.vmax, "never looser than the bounds that hold everywhere"
  for p in where:
    assert lo <= _value(e, dict(p)) <= hi, (p, lo, hi)


def test_narrowing_reads_only_comparisons_with_constants() -> None:
  r0, r1 = R
  assert gate_bounds(_c(0).alu(Ops.CMPLT, r0).alu(Ops.AND, r0.alu(Ops.CMPLT, _c(4)))) == {r0: (1, 3)}
  assert gate_bounds(r0.alu(Ops.CMPLT, r1)) == {}  # two variables: nothing narrowed
  assert gate_bounds(r0.alu(Ops.CMPLT, _c(0))) is None  # r0 >= 0: never
  assert gate_bounds(UOp.const(dtypes.bool, False)) is None and gate_bounds(UOp.const(dtypes.bool, True)) == {}
  e = r0 * _c(3) + _c(-1)
  assert (e.vmin, e.vmax) == (-1, 14) and bounds_given(e, {r0: (1, 3)}) == (2, 8)


def test_padded_reads_are_proven_without_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
  # a kernel reading x[3*r - 1] where 0 < r and x[r - 2] where never: the gates decide both, z3 is not asked
  asked: list[UOp] = []
  real = smt.prove_in_bounds
  monkeypatch.setattr(smt, "prove_in_bounds", lambda e, size, gate=None, **kw: asked.append(e) or real(e, size, gate, **kw))
  r = UOp.range(2, 7)
  buf = UOp.param(1, dtypes.float32, 4)
  a = buf.index(r * _c(3) + _c(-1)).load(UOp.const(dtypes.float32, 0.0), _c(0).alu(Ops.CMPLT, r))
  b = buf.index(r + _c(-2)).load(UOp.const(dtypes.float32, 0.0), UOp.const(dtypes.bool, False))
  st_ = UOp.param(0, dtypes.float32, 2).index(r).store(a + b)
  assert check(UOp(Ops.SINK, src=(st_.end(r),)), Stage.KERNEL) == []
  assert asked == []
  # out of bounds where the gate holds is still a violation (x[3*r] at r = 1 is x[3]... of a 3-element buffer)
  small = UOp.param(1, dtypes.float32, 3)
  c = small.index(r * _c(3)).load(UOp.const(dtypes.float32, 0.0), _c(0).alu(Ops.CMPLT, r))
  bad = UOp.param(0, dtypes.float32, 2).index(r).store(c)
  assert "kernel.index_bounds" in {v.rule for v in check(UOp(Ops.SINK, src=(bad.end(r),)), Stage.KERNEL)}

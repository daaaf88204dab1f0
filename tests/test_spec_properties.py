"""Properties of the IR and the checker: interning, the pyrender round trip, check never raising, big graphs; z3 translation."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from builders import buf, c, f32, i32, k_acc, kgraph_of, sink, tensor_graphs

from tinyspec import Ops, Stage, UOp, check, dtypes, smt
from tinyspec.dtype import DType
from tinyspec.pyrender import render_module
from tinyspec.uop import ParamArg

pytestmark = pytest.mark.spec
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])





@given(tensor_graphs())
@FAST
def test_random_graphs_are_legal(g):
  assert check(g, Stage.TENSOR) == []


@given(tensor_graphs())
@FAST
def test_interning_same_fields_same_object(g):
  for u in g.toposort():
    assert UOp(u.op, u.dtype, tuple(u.src), u.arg, u.tag) is u
    assert u.replace() is u


@given(tensor_graphs())
@FAST
def test_pyrender_round_trip(g):
  for fname in ("graph", "rebuilt"):
    ns: dict = {}
    exec(compile(render_module(g, fname), "<pyrender>", "exec"), ns)
    assert ns[fname]() is g


def _corruptions(u: UOp, draw) -> UOp:
  kind = draw(st.sampled_from(["arg", "srcs_more", "srcs_fewer", "dtype_unknown", "dtype_obj", "src_int", "op_str", "param_arg"]))
  if kind == "arg": return UOp(u.op, u.dtype, u.src, draw(st.sampled_from([("x",), 3.5, "s", (1, "a"), ((1,),), -1, (True, 2)])))
  if kind == "srcs_more": return UOp(u.op, u.dtype, u.src + (buf(2),) * draw(st.integers(1, 3)), u.arg)
  if kind == "srcs_fewer": return UOp(u.op, u.dtype, u.src[:-1], u.arg)
  if kind == "dtype_unknown": return UOp(u.op, DType("float16", 2, "f", "half", "half"), u.src, u.arg)
  if kind == "dtype_obj": return UOp(u.op, draw(st.sampled_from([5, "float32", None, (1,)])), u.src, u.arg)
  if kind == "src_int": return UOp(u.op, u.dtype, u.src + (7,), u.arg)
  if kind == "op_str": return UOp("ADD", u.dtype, u.src, u.arg)
  return UOp(Ops.PARAM, u.dtype, (), ParamArg("a", -1))


@st.composite
def corrupted(draw) -> tuple[UOp, Stage]:
  stage = draw(st.sampled_from(list(Stage)))
  g = draw(tensor_graphs()) if stage is Stage.TENSOR else kgraph_of(k_acc(i32 if stage is Stage.PROGRAM else dtypes.index))
  if stage is Stage.PROGRAM:
    from builders import program
    g = kgraph_of(program(k_acc(i32)))
  nodes = g.toposort()
  target = draw(st.sampled_from(nodes))
  bad = _corruptions(target, draw)
  def subst(u: UOp) -> UOp:
    memo: dict = {}
    for x in u.toposort():
      memo[x] = bad if x is target else (x.replace(src=tuple(memo[s] for s in x.src)) if any(memo[s] is not s for s in x.src) else x)
    return memo[u]
  return subst(g), stage


@given(corrupted())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_check_never_raises_on_corrupted_nodes(case):
  g, stage = case
  vs = check(g, stage)
  assert isinstance(vs, list)
  for v in vs:
    assert isinstance(v.rule, str) and v.message and str(v)


def test_corruption_is_reported():
  g = sink(UOp(Ops.ADD, f32, (buf(4), 7)), UOp(Ops.NEG, 5, (buf(4),)), UOp("FOO", f32, ()))
  assert sorted(v.rule for v in check(g, Stage.TENSOR)) == ["node.dtype", "node.op", "node.src_type"]
  assert [v.rule for v in check(3, Stage.TENSOR)] == ["node.root"]


@pytest.mark.slow
def test_million_node_chain():
  """1,000,000 nodes: toposort, check (legal and illegal) and pyrender run without recursion."""
  x = buf(4)
  for i in range(999_998): x = -x if i % 2 else x.reshape((4,))
  g = sink(x)
  assert len(g.toposort()) == 1_000_000
  assert check(g, Stage.TENSOR) == []
  assert [v.rule for v in check(sink(x + buf(8)), Stage.TENSOR)] == ["tensor.elementwise_shape"]
  assert render_module(g).count(" = UOp(") == 1_000_000


def test_long_chain_without_recursion():
  old = sys.getrecursionlimit()
  sys.setrecursionlimit(200)  # nothing may recurse per node
  try:
    x = buf(4, dtypes.int32)
    for _ in range(50_000): x = UOp(Ops.NEG, dtypes.int32, (x,))
    assert check(sink(x), Stage.TENSOR) == []
    assert [v.rule for v in check(sink(x.alu(Ops.SQRT)), Stage.TENSOR)] == ["alu.dtype_class"]
  finally:
    sys.setrecursionlimit(old)


# ---- smt: the z3 translation agrees with an independent computation ----

def _eval(u: UOp) -> int:
  t = smt.Translator()
  e = z3.simplify(t.as_int(t(u), u.dtype))
  return e.as_long()


def _c_trunc_div(a: int, b: int) -> int: return int(math.copysign(abs(a) // abs(b), a * b)) if a * b else 0


@pytest.mark.parametrize("a", [-7, -6, -1, 0, 1, 5, 7])
@pytest.mark.parametrize("b", [-3, -2, 1, 2, 3])
@pytest.mark.parametrize("dt", [dtypes.index, dtypes.int32, dtypes.int8])
def test_idiv_mod_truncate_like_c(a, b, dt):
  x, y = UOp.const(dt, a), UOp.const(dt, b)
  q = _c_trunc_div(a, b)
  assert _eval(x // y) == q
  assert _eval(x % y) == a - b * q == int(np.fmod(a, b))


@pytest.mark.parametrize("dt,a,b", [(dtypes.int8, 100, 100), (dtypes.int32, 2**31 - 1, 1), (dtypes.uint8, 250, 10), (dtypes.int16, -30000, -30000)])
def test_fixed_width_wraps(dt, a, b):
  want = int((np.array([a], dtype=dt.np) + np.array([b], dtype=dt.np))[0])
  assert _eval(UOp.const(dt, a) + UOp.const(dt, b)) == want


def test_index_does_not_wrap():
  x = UOp.const(dtypes.index, 2**62)
  assert _eval(x + x) == 2**63


def test_cast_and_compare_translation():
  assert _eval(UOp.const(dtypes.int32, 300).cast(dtypes.uint8)) == 300 % 256
  assert _eval(UOp.const(dtypes.int8, -1).cast(dtypes.uint16)) == 65535
  assert _eval(UOp.const(dtypes.index, -5).cast(dtypes.uint8)) == 251
  t = smt.Translator()
  assert z3.is_true(z3.simplify(t(UOp.const(dtypes.uint8, 200) < UOp.const(dtypes.uint8, 3)))) is False
  assert z3.is_true(z3.simplify(t(UOp.const(dtypes.int8, -56) < UOp.const(dtypes.int8, 3))))


def test_division_by_zero_is_unconstrained():
  """x // 0 has no defined value: no proof may depend on it (both 0 and 1 are possible)."""
  t = smt.Translator()
  e = t(UOp.const(dtypes.index, 5) // UOp.const(dtypes.index, 0))
  for v in (0, 1):
    s = z3.Solver()
    s.add(*t.constraints, e == v)
    assert s.check() == z3.sat


def test_ranges_share_variables_across_terms():
  """the same RANGE node is one variable: r - r is 0 for every r, and a rule prover can compare two terms."""
  r = UOp.range(10, 0)
  t = smt.Translator()
  lhs, rhs = t((r * UOp.const(dtypes.index, 4) + UOp.const(dtypes.index, 3)) // UOp.const(dtypes.index, 4)), t(r)
  s = z3.Solver()
  s.add(*t.constraints, lhs != rhs)
  assert s.check() == z3.unsat


def test_prove_in_bounds_statuses():
  r = UOp.range(8, 0)
  assert smt.prove_in_bounds(r, 8).status == "proved"
  res = smt.prove_in_bounds(r + UOp.const(dtypes.index, 1), 8)
  assert res.status == "violated" and res.value == 8 and res.example == {"r0": 7}
  assert smt.prove_in_bounds(r - UOp.const(dtypes.index, 1), 8, UOp.const(dtypes.index, 0) < r).status == "proved"
  assert check(sink(c(1.0)), Stage.TENSOR) == []

"""The fuzz generators: legal at TENSOR by construction, free of undefined behaviour, every op covered, reproducible."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.local_eval import LocalEval, free_ranges
from fuzz.safety import Info, Unsafe, node_info, unsafe_reason
from fuzz.strategies import ARITH, BITWISE, COMPARE, INT_ONLY, MOVEMENT, UNARY_FLOAT, case_for, cases, in_bounds, index_exprs, kernel_graphs
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.uop import GroupOp, Ops, UOp

N = 400


@pytest.fixture(scope="module")
def many():
  return [case_for(7, i) for i in range(N)]


def test_same_seed_same_cases():
  for i in range(30):
    a, b = case_for(3, i), case_for(3, i)
    assert a.root is b.root and a.options == b.options and a.kind == b.kind
    assert a.inputs.keys() == b.inputs.keys() and all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs)
  assert any(case_for(3, i).root is not case_for(4, i).root for i in range(5))


def test_cases_are_legal_and_safe(many):
  for c in many:
    stage = Stage.TENSOR if c.kind == "tensor" else Stage.KERNEL_GRAPH
    assert check(c.root, stage) == [], (c.index, check(c.root, stage)[:1])
    if c.kind == "tensor": assert unsafe_reason(c.root, c.inputs) is None, c.index
    for u in c.root.toposort():
      if u.shape_ok and u.shape is not None: assert u.size <= 64


def test_every_tensor_op_is_generated(many):
  seen = {u.op for c in many if c.kind == "tensor" for u in c.root.toposort()}
  want = {Ops.CONST, Ops.BUFFER, Ops.PARAM, *GroupOp.Movement, *GroupOp.Elementwise, Ops.REDUCE, Ops.CALL, Ops.TUPLE, Ops.GETTUPLE,
          Ops.STORE, Ops.AFTER, Ops.SINK, Ops.CONTIGUOUS, Ops.DETACH}
  assert want - seen == set()


def test_elementwise_ops_cover_their_dtypes():
  pairs = set()
  for i in range(2500):
    c = case_for(11, i)
    for u in c.root.toposort():
      if u.op in GroupOp.ALU: pairs.add((u.op, u.src[-1].dtype))
  floats, ints = set(dtypes.floats), set(dtypes.ints)
  want = {(op, d) for op in UNARY_FLOAT for d in floats} | {(op, d) for op in ARITH for d in floats | ints}
  want |= {(op, d) for op in INT_ONLY for d in ints} | {(op, d) for op in BITWISE for d in ints | {dtypes.bool}}
  want |= {(op, d) for op in COMPARE for d in floats | ints}
  missing = sorted((o.name, d.name) for o, d in want - pairs)
  assert len(missing) <= len(want) // 20, missing  # a few rare pairs may need more cases


def test_structures_are_generated(many):
  tensors = [c for c in many if c.kind == "tensor"]
  def has(pred): return any(pred(c.root) for c in tensors)
  nodes = lambda r: r.toposort()
  # nested calls: a CALL inside a call body
  assert has(lambda r: any(u.op is Ops.CALL and any(x.op is Ops.CALL for x in u.src[0].toposort()) for u in nodes(r)))
  # a call with several returns, and the same call read twice
  assert has(lambda r: any(u.op is Ops.TUPLE and len(u.src) >= 2 for u in nodes(r)))
  assert has(lambda r: len({u.arg for u in nodes(r) if u.op is Ops.GETTUPLE and u.src[0].op is Ops.CALL}) >= 2)
  # an assign chain: AFTER of an AFTER
  assert has(lambda r: any(u.op is Ops.AFTER and u.src[0].op is Ops.AFTER for u in nodes(r)))
  # a chain of movement ops
  assert has(lambda r: any(u.op in GroupOp.Movement and u.src[0].op in GroupOp.Movement and u.src[0].src[0].op in GroupOp.Movement
                           for u in nodes(r)))
  # a captured buffer: a BUFFER read directly inside a call body
  assert has(lambda r: any(u.op is Ops.CALL and u.src[0].op is Ops.TUPLE and any(x.op is Ops.BUFFER for x in u.src[0].toposort())
                           for u in nodes(r)))
  assert {c.options["callify"] for c in tensors} == {"inline", "precompile"}
  assert {c.options["realize"] for c in tensors} == {"minimal", "all"}
  assert any(c.kind == "kernel" for c in many)
  assert all(set(MOVEMENT) <= {u.op for c in tensors for u in nodes(c.root)} for _ in [0])


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_hypothesis_cases_are_legal(case):
  assert check(case.root, Stage.TENSOR) == []
  assert unsafe_reason(case.root, case.inputs) is None


@settings(max_examples=15, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernel_graphs())
def test_kernel_graphs_are_legal(case):
  assert check(case.root, Stage.KERNEL_GRAPH) == []


@settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(index_exprs())
def test_index_exprs_wrapped_in_bounds(expr_ranges):
  expr, rs = expr_ranges
  assert expr.dtype is dtypes.index
  wrapped = in_bounds(expr, 7)
  ev = LocalEval({}, {}, free_ranges(wrapped))
  vals = np.asarray(ev.value(wrapped))
  assert vals.min() >= 0 and vals.max() < 7
  # the brute-force values agree with a direct Python evaluation at one corner
  env = {r: r.src[0].arg - 1 for r in rs}
  assert _py(expr, env) == int(np.broadcast_to(ev.value(expr), ev.grid)[tuple(env.get(r, 0) for r in ev.ranges)])


def _py(u: UOp, env: dict) -> int:
  if u.op is Ops.RANGE: return env[u]
  if u.op is Ops.CONST: return int(u.arg)
  v = [_py(s, env) for s in u.src]
  if u.op is Ops.IDIV: return abs(v[0]) // abs(v[1]) * (1 if (v[0] < 0) == (v[1] < 0) else -1)
  if u.op is Ops.MOD: return v[0] - _py(UOp(Ops.IDIV, u.dtype, u.src), env) * v[1]
  ops = {Ops.ADD: lambda a, b: a + b, Ops.SUB: lambda a, b: a - b, Ops.MUL: lambda a, b: a * b, Ops.MAX: max, Ops.CMPLT: lambda a, b: int(a < b),
         Ops.WHERE: lambda c, a, b: a if c else b}
  return ops[u.op](*v)


# ---- the safety analysis ----
def _info(op: Ops, dt, *infos: Info) -> Info | None:
  srcs = tuple(UOp.const(dt, 0) for _ in infos)
  return node_info(UOp(op, dtypes.bool if op in GroupOp.Comparison else dt, srcs), list(infos), {}, {})


@pytest.mark.parametrize("op, dt, infos", [
  (Ops.IDIV, dtypes.int32, (Info(0, 9), Info(-1, 3))),
  (Ops.MOD, dtypes.uint8, (Info(0, 9), Info(0, 3))),
  (Ops.IDIV, dtypes.int8, (Info(-128, 5), Info(-1, -1))),
  (Ops.SHL, dtypes.int32, (Info(0, 9), Info(0, 32))),
  (Ops.SHR, dtypes.int64, (Info(0, 9), Info(-1, 2))),
  (Ops.LOG2, dtypes.float32, (Info(-1.0, 2.0),)),
  (Ops.SQRT, dtypes.float32, (Info(-0.5, 2.0),)),
  (Ops.RECIP, dtypes.float64, (Info(-1.0, 1.0),)),
  (Ops.EXP2, dtypes.float32, (Info(0.0, 200.0),)),
  (Ops.CMPLT, dtypes.float32, (Info(0.0, 1.0, exact=False), Info(0.0, 1.0))),
  (Ops.MUL, dtypes.float32, (Info(-1e4, 1e4), Info(-1e4, 1e4))),
])
def test_unsafe_ops_are_rejected(op, dt, infos):
  with pytest.raises(Unsafe):
    _info(op, dt, *infos)


def test_safe_ops_get_tight_ranges():
  assert _info(Ops.IDIV, dtypes.int32, Info(-9, 9), Info(2, 3)) == Info(-4, 4)
  assert _info(Ops.ADD, dtypes.int8, Info(100, 120), Info(10, 10)) == Info(-128, 127)  # wraps: any int8
  got = _info(Ops.MUL, dtypes.float32, Info(0.25, 2.0, True, 2), Info(-3.0, 1.0, True, 0))
  assert got is not None and (got.lo, got.hi, got.exact) == (-6.0, 2.0, True)


def test_float_to_int_cast_needs_exact_in_range_values():
  c = UOp.const(dtypes.float32, 1.5)
  x = c.cast(dtypes.uint8)
  with pytest.raises(Unsafe): node_info(x, [Info(-1.0, 3.0, True, 1)], {}, {})
  with pytest.raises(Unsafe): node_info(x, [Info(0.0, 3.0, False)], {}, {})
  assert node_info(x, [Info(0.5, 3.75, True, 2)], {}, {}) == Info(0, 3)


def test_unsafe_reason_sees_inputs():
  b = UOp.buffer(dtypes.int32, 4, id=900)
  g = UOp(Ops.SINK, src=(b.alu(Ops.IDIV, b),))
  assert unsafe_reason(g, {900: np.array([1, 2, 3, 4], np.int32)}) is None
  assert "holding 0" in unsafe_reason(g, {900: np.array([0, 2, 3, 4], np.int32)})


def test_grid_of_ranges_is_every_point():
  r0, r1 = UOp.range(3, 0), UOp.range(2, 1)
  e = r0 * UOp.const(dtypes.index, 2) + r1
  ev = LocalEval({}, {}, free_ranges(e))
  got = np.broadcast_to(ev.value(e), ev.grid)
  assert sorted(got.reshape(-1).tolist()) == list(range(6))
  assert [int(got[i, j]) for i, j in itertools.product(range(3), range(2))] == list(range(6))

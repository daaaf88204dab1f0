"""The fuzz generators: legal at TENSOR by construction, free of undefined behaviour, every op covered, reproducible."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.check.local_eval import LocalEval, free_ranges
from fuzz.generate.safety import Analysis, Info, Unsafe, node_info, unsafe_reason
from fuzz.generate.compositions import MAX_COMPOSE_SIZE
from fuzz.generate.case import ELEMENTWISE, MOVEMENT
from fuzz.generate.index_kernels import in_bounds
from fuzz.generate.kinds import case_for
from fuzz.generate.strategies import cases, index_exprs, kernel_graphs
from fuzz.generate.tensor import TensorGen, operand_dtypes
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.semantics import evaluate
from tinyspec.uop import GroupOp, Ops, UOp

N = 400


@pytest.fixture(scope="module")
def many():
  return [case_for(7, i) for i in range(N)]


def test_same_seed_same_cases():
  for i in range(30):
    a, b = case_for(3, i), case_for(3, i)
    assert a.root is b.root and a.options == b.options and a.kind == b.kind
    assert a.inputs.keys() == b.inputs.keys()
    assert all(a.inputs[k].dtype == b.inputs[k].dtype and a.inputs[k].tobytes() == b.inputs[k].tobytes() for k in a.inputs)  # every bit
  assert any(case_for(3, i).root is not case_for(4, i).root for i in range(5))


def test_cases_are_legal_and_safe(many):
  for c in many:
    stage = Stage.TENSOR if c.kind == "tensor" else Stage.KERNEL_GRAPH
    assert check(c.root, stage) == [], (c.index, check(c.root, stage)[:1])
    if c.kind == "tensor": assert unsafe_reason(c.root, c.inputs) is None, c.index
    # the tensor generator keeps every value to 64 elements; a frontend composition (a conv's window view) to its own cap
    cap = MAX_COMPOSE_SIZE if "kind:compose" in c.features else 64
    for u in c.root.toposort():
      if u.shape_ok and u.shape is not None: assert u.size <= cap, (c.index, u.op, u.size)


def _opaque_calls(root: UOp) -> list[UOp]:
  return [u for u in root.toposort() if u.op is Ops.CALL and u.src[0].op is not Ops.TUPLE]


def test_every_tensor_op_is_generated(many):
  seen = {u.op for c in many if c.kind == "tensor" for u in c.root.toposort()}
  # FDIV (float division as tinygrad's programs write it) is not drawn: the registry's tests hold its meaning against C
  want = {Ops.CONST, Ops.BUFFER, Ops.PARAM, *(GroupOp.Movement | GroupOp.Elementwise - {Ops.FDIV}), Ops.REDUCE, Ops.CALL, Ops.TUPLE,
          Ops.GETTUPLE, Ops.STORE, Ops.AFTER, Ops.SINK, Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY}
  assert want - seen == set()
  tensors = [c for c in many if c.kind == "tensor"]
  # a COPY to another device, and one copied back
  assert any(u.op is Ops.COPY and u.arg == "CPU:1" for c in tensors for u in c.root.toposort())
  assert any(u.op is Ops.COPY and u.arg == "CPU" and u.src[0].op is Ops.COPY for c in tensors for u in c.root.toposort())
  # an opaque void CALL: a kernel SINK body over PARAMs, read back through AFTER(storage, call)
  opaque = [(c, u) for c in tensors for u in _opaque_calls(c.root)]
  assert opaque
  assert all(u.src[0].op is Ops.SINK and check(u.src[0], Stage.KERNEL) == [] for _, u in opaque)
  assert any(a.op is Ops.AFTER and a.src[1] in opaque_calls for c in tensors if (opaque_calls := _opaque_calls(c.root))
             for a in c.root.toposort())
  assert any(e in _opaque_calls(c.root) for c in tensors for e in c.root.src)  # the call itself as an effect entry


def test_side_steps_leave_other_cases_unchanged():
  # cases are drawn from their own Random; without a COPY or opaque call a case is the one the main Random alone gives
  same = 0
  for i in range(80):
    c = case_for(5, i)
    if c.kind != "tensor" or {"step:copy", "step:opaque", "kind:compose", "kind:alias", "kind:multi"} & c.features: continue
    rng = random.Random(f"tinyspec-fuzz:5:{i}")
    rng.random()  # the kind roll of case_for, before the generator seeds its variables' Random from rng's state
    plain = TensorGen(rng, {"step:copy": 0.0, "step:opaque": 0.0}, side=random.Random(0))
    assert plain.case().root is c.root
    same += 1
  assert same >= 20  # of 80: integer, edge and other kernel cases, aliasing, sharded cases and compositions take the rest


def test_opaque_cases_evaluate_like_numpy(many):
  # the reference evaluator runs each generated opaque kernel; the buffer it writes holds what numpy computes from the
  # kernel's own loads, recomputed here from the args
  done = 0
  for c in many:
    for call in _opaque_calls(c.root) if c.kind == "tensor" else []:
      outs = evaluate(UOp(Ops.SINK, src=tuple(a for a in call.src[1:])), c.copy_inputs())
      after = evaluate(UOp(Ops.SINK, src=(call.src[1].after(call),)), c.copy_inputs())[0]
      got = np.asarray(after).reshape(-1)
      want = _run_kernel_numpy(call.src[0], [np.asarray(o).reshape(-1).copy() for o in outs])
      assert np.array_equal(got, want), c.index
      done += 1
  assert done >= 10


def _run_kernel_numpy(body: UOp, args: list[np.ndarray]) -> np.ndarray:
  """A generated opaque kernel SINK(END(STORE(INDEX(PARAM 0, r), value), r)) run element by element in Python."""
  (end,) = body.src
  st, r = end.src[0], end.src[1]
  out = args[0].copy()
  def val(u: UOp, i: int):
    if u.op is Ops.RANGE: return i
    if u.op is Ops.CONST: return u.arg
    if u.op is Ops.LOAD: return args[u.src[0].src[0].arg.slot][val(u.src[0].src[1], i)]
    v = [val(s, i) for s in u.src]
    if u.op is Ops.WHERE: return v[1] if v[0] else v[2]
    if u.op is Ops.CMPLT: return v[0] < v[1]
    with np.errstate(over="ignore"):
      return {Ops.ADD: lambda a, b: a + b, Ops.SUB: lambda a, b: a - b, Ops.MUL: lambda a, b: a * b, Ops.MAX: max,
              Ops.AND: lambda a, b: a & b, Ops.OR: lambda a, b: a | b, Ops.XOR: lambda a, b: a ^ b}[u.op](*v)
  for i in range(r.src[0].arg): out[val(st.src[0].src[1], i)] = val(st.src[1], i)
  return out


def test_elementwise_ops_cover_their_dtypes():
  # every ALU op on every value dtype its registry class admits (bool MAX and bool CMPLT included); the small floats, in
  # a few cases by default, are held to it with their weight up (tests/test_fuzz_small_floats.py)
  want = {(op, d) for op in ELEMENTWISE if op in GroupOp.ALU for d in operand_dtypes(op) if not d.is_small_float}
  assert {(Ops.MAX, dtypes.bool), (Ops.CMPLT, dtypes.bool), (Ops.IDIV, dtypes.uint8), (Ops.ADD, dtypes.bool)} <= want
  assert (Ops.SUB, dtypes.bool) not in want
  pairs = set()
  for i in range(2500):  # until every pair was drawn
    c = case_for(11, i)
    for u in c.root.toposort():
      if u.op in GroupOp.ALU: pairs.add((u.op, u.src[-1].dtype))
    if want <= pairs: break
  assert sorted((o.name, d.name) for o, d in want - pairs) == []


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


@pytest.mark.parametrize("v", [-math.inf, math.inf, math.nan])
def test_the_screen_takes_an_infinite_constant_where_the_op_defines_it(v):
  # max_pool2d pads a float tensor with -inf: MAX defines it; a cast of an infinite or NaN result to an int does not,
  # and the screen says so (MAX of finite values and -inf is finite: that cast is fine)
  b = UOp.buffer(dtypes.float32, 2, id=901)
  g = b.alu(Ops.MAX, UOp.const(dtypes.float32, v).expand((2,)))
  assert unsafe_reason(UOp(Ops.SINK, src=(g,)), {901: np.array([1.0, 2.0], np.float32)}) is None
  cast = unsafe_reason(UOp(Ops.SINK, src=(g.cast(dtypes.int32),)), {901: np.array([1.0, 2.0], np.float32)})
  assert (cast is None) == (v == -math.inf), cast


def test_grid_of_ranges_is_every_point():
  r0, r1 = UOp.range(3, 0), UOp.range(2, 1)
  e = r0 * UOp.const(dtypes.index, 2) + r1
  ev = LocalEval({}, {}, free_ranges(e))
  got = np.broadcast_to(ev.value(e), ev.grid)
  assert sorted(got.reshape(-1).tolist()) == list(range(6))
  assert [int(got[i, j]) for i, j in itertools.product(range(3), range(2))] == list(range(6))


# ---- opaque calls: what they write, and when they are unsafe ----
def _kernel(value_of, n: int = 4, idx_of=lambda r: r) -> UOp:
  """SINK(END(STORE(INDEX(PARAM 0, r), value_of(load of PARAM 1 at idx_of(r), r)), r)) over n elements."""
  r = UOp.range(n, 0)
  p0, p1 = UOp.param(0, dtypes.int32, n), UOp.param(1, dtypes.int32, n)
  return UOp(Ops.SINK, src=(p0.index(r).store(value_of(p1.index(idx_of(r)).load(), p0.index(r))).end(r),))


def test_opaque_call_writes_are_analysed():
  out, src = UOp.buffer(dtypes.int32, 4, id=901), UOp.buffer(dtypes.int32, 4, id=902)
  body = _kernel(lambda ld, own: ld * UOp.const(dtypes.int32, 3) + own.load())
  g = UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, src))) + UOp.const(dtypes.int32, 0).expand((4,)),))
  ins = {901: np.array([1, 2, 0, 1], np.int32), 902: np.array([-2, 5, 1, 0], np.int32)}
  assert unsafe_reason(g, ins) is None
  an = Analysis(ins)
  info = an.info(g.src[0].src[0])
  # written: 3 * [-2, 5] + [0, 2] = [-6, 17], joined with the old contents [0, 2]
  assert info is not None and (info.lo, info.hi) == (-6, 17)
  # a division by what the call wrote is unsafe when the written range holds 0, even if the old contents do not
  div = UOp(Ops.SINK, src=(src.alu(Ops.IDIV, out.after(UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld), out, src)))),))
  assert "holding 0" in unsafe_reason(div, {901: np.array([1, 2, 3, 4], np.int32), 902: np.array([0, 1, 2, 3], np.int32)})


def test_each_walk_keeps_what_it_learns():
  # what a walk learns (what an opaque call writes, the values stored) is on its own Facts: a second walk of the same
  # graph with other inputs starts from nothing and sees its own inputs' writes
  out, src = UOp.buffer(dtypes.int32, 4, id=907), UOp.buffer(dtypes.int32, 4, id=908)
  call = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld * UOp.const(dtypes.int32, 3)), out, src))
  after = out.after(call)
  first = Analysis({907: np.zeros(4, np.int32), 908: np.array([1, 2, 3, 4], np.int32)})
  assert (first.info(after).lo, first.info(after).hi) == (0, 12) and call in first.facts.call_writes
  second = Analysis({907: np.zeros(4, np.int32), 908: np.array([-5, 0, 0, 0], np.int32)})
  assert second.facts is not first.facts and not second.facts.call_writes and not second.facts.values
  assert (second.info(after).lo, second.info(after).hi) == (-15, 0)
  # one generator run shares one Facts between the analyses of its scopes, and the next run has its own
  gens = [TensorGen(random.Random(f"facts:{i}")) for i in range(2)]
  for g in gens: g.case()
  assert gens[0].facts is not gens[1].facts and gens[0].facts.values
  assert gens[0].outer is not None and gens[0].outer.an.facts is gens[0].facts


def test_unsafe_opaque_calls_are_rejected():
  out, src, other = (UOp.buffer(dtypes.int32, 4, id=i) for i in (903, 904, 905))
  ins = {903: np.zeros(4, np.int32), 904: np.arange(4, dtype=np.int32), 905: np.arange(4, dtype=np.int32)}
  def sink(*xs): return UOp(Ops.SINK, src=xs)
  # an index past the arg
  oob = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld, idx_of=lambda r: r + UOp.const(dtypes.index, 1)), out, src))
  assert "outside PARAM 1" in unsafe_reason(sink(out.after(oob)), ins)
  # a read of the written arg at another element than the one written (an order the backends do not fix)
  r = UOp.range(4, 0)
  p0, p1 = UOp.param(0, dtypes.int32, 4), UOp.param(1, dtypes.int32, 4)
  rev = UOp.const(dtypes.index, 3).alu(Ops.SUB, r)
  cross = UOp(Ops.SINK, src=(p0.index(r).store(p0.index(rev).load() + p1.index(r).load()).end(r),))
  assert "another element" in unsafe_reason(sink(out.after(UOp(Ops.CALL, src=(cross, out, src)))), ins)
  # two args on one storage
  same = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld), out, out.reshape((2, 2))))
  assert "same storage" in unsafe_reason(sink(out.after(same)), ins)
  # two calls that may both write `src` (a call may write any arg), with no AFTER ordering them
  c1 = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld), out, src))
  c2 = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld), other, src))
  assert "no order" in unsafe_reason(sink(out.after(c1), other.after(c2)), ins)
  # ordered through an AFTER in the arg: fine
  c3 = UOp(Ops.CALL, src=(_kernel(lambda ld, own: ld), other, out.after(c1)))
  assert unsafe_reason(sink(other.after(c3)), ins) is None


def test_rangeify_gives_the_same_kernel_graph_again():
  # blame re-runs a pass and finds nodes by identity: lowering the same graph twice must give the same nodes, also when
  # rangeify's own preparation rewrites the graph (here AFTER of a view) so the graph it schedules is one it made
  from tinyspec.lower.base import LowerOptions, Trace
  from tinyspec.lower.rangeify import RANGEIFY
  b = UOp.buffer(dtypes.uint16, 1, id=906)
  v = b.reshape(())
  g = UOp(Ops.SINK, src=(v.after(v.store(UOp.const(dtypes.float32, 0.0).cast(dtypes.uint16))),))
  for realize in ("minimal", "all"):
    first = RANGEIFY.run(g, LowerOptions(realize=realize), Trace())
    assert RANGEIFY.run(g, LowerOptions(realize=realize), Trace()) is first


def test_generators_make_bounded_variables(many):
  # tensor cases hold BINDs where constants would be; kernel cases read DEFINE_VARs their CALL binds; both run on the CPU
  # as the reference evaluator says
  from tinyspec.runtime import run
  # in the places of the sharded cases (fuzz.generate.shards, which hold no variables), the cases drawn without them
  many = [case_for(7, c.index, {"kind:multi": 0.0}) if "kind:multi" in c.features else c for c in many]
  tensors = [c for c in many if c.kind == "tensor" and any(u.op is Ops.BIND for u in c.root.toposort())]
  kernels = [c for c in many if "var:kernel" in c.features]
  assert len(tensors) >= 3 and kernels
  for c in kernels:
    call = next(u for u in c.root.toposort() if u.op is Ops.CALL)
    assert any(a.op is Ops.BIND for a in call.src[1:]) and any(u.op is Ops.DEFINE_VAR for u in call.src[0].toposort())
  for c in tensors[:3] + kernels[:2]:
    want, got = evaluate(c.root, c.inputs), run(c.root, c.inputs, "cpu")
    assert len(want) == len(got)
    for w, g in zip(want, got):
      np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64), rtol=1e-5, equal_nan=True)


# ---- frontend compositions ----
def test_campaign_cases_include_every_frontend_composition():
  from fuzz.generate.case import COMPOSITION_NAMES
  comps = [c for c in (case_for(5, i, {"kind:compose": 0.9, "kind:alias": 0.0, "kind:scatter": 0.0}) for i in range(160))
           if "kind:compose" in c.features]
  assert len(comps) > 100
  seen = {f.split(":", 1)[1] for c in comps for f in c.features if f.startswith("compose:")}
  assert seen == {*COMPOSITION_NAMES, "call", "cast"}
  # inputs of every dtype the compositions use
  from fuzz.generate.compositions import DTYPES
  assert {v.dtype for c in comps for v in c.inputs.values()} >= {d.np for d in DTYPES}
  for c in comps:
    assert check(c.root, Stage.TENSOR) == [], sorted(c.features)
    assert c.options["callify"] in ("inline", "precompile") and c.options["realize"] in ("minimal", "all")
  # a step traced into a value call: a CALL of a TUPLE in the graph
  assert all(any(u.op is Ops.CALL and u.src[0].op is Ops.TUPLE for u in c.root.toposort()) == ("compose:call" in c.features)
             for c in comps)
  # the same seed and index give the same composition; off by weight: none, and the tensor cases they do not replace
  # stay the cases they were
  again = [c for c in (case_for(5, i, {"kind:compose": 0.9, "kind:alias": 0.0, "kind:scatter": 0.0}) for i in range(40))
           if "kind:compose" in c.features]
  assert all(a.root is b.root and a.inputs.keys() == b.inputs.keys() for a, b in zip(comps, again))
  assert not any("kind:compose" in case_for(5, i, {"kind:compose": 0.0}).features for i in range(60))
  assert any("kind:compose" in case_for(5, i).features for i in range(60))  # on by default
  plain = [i for i in range(60) if "kind:compose" not in case_for(5, i, {"kind:compose": 0.3}).features]
  assert all(case_for(5, i, {"kind:compose": 0.0}).root is case_for(5, i, {"kind:compose": 0.3}).root for i in plain[:20])


def test_compositions_leave_no_data_in_the_frontend():
  from fuzz.generate.compositions import composition_case
  from fuzz.generate.case import default_weights
  from tinyspec.frontend import Tensor, data_scope, inputs_of
  kept = Tensor([1, 2, 3])
  with data_scope():
    inner = Tensor([4, 5])
    assert inputs_of(inner.uop)
  assert inputs_of(inner.uop) == {} and inputs_of(kept.uop)  # the block's data is gone, the data from before stays
  cases = [composition_case(random.Random(f"compose-data:{i}"), default_weights()) for i in range(20)]
  # while each case keeps the data of every BUFFER it reads
  assert all({u.arg.id for u in c.root.toposort() if u.op is Ops.BUFFER} == set(c.inputs) for c in cases)


def test_frontend_compositions_agree_exactly_on_the_cpu():
  from fuzz.generate.compositions import composition_case
  from fuzz.generate.case import default_weights
  from tinyspec.runtime import run
  cases = [composition_case(random.Random(f"compose-cpu:{i}"), default_weights()) for i in range(24)]
  for c in cases:
    ref = evaluate(c.root, c.inputs)[0]
    assert np.abs(ref).max(initial=0) < 2**20  # whole numbers far from any float's rounding: the oracles compare exactly
    assert np.array_equal(ref, np.round(ref)), sorted(c.features)
    got = run(c.root, c.inputs, "cpu")[0]
    np.testing.assert_array_equal(np.asarray(got).reshape(ref.shape), ref, err_msg=str(sorted(c.features)))

"""The fused accepts of tinyspec/spec/fast.py against the rules they stand for, node by node.

Each graph is checked twice from empty caches: once by the rules alone, once with the fused accepts on. Every verdict,
every derived shape and every violation must agree; and a fused accept given the rules' verdicts on the sources must
never accept a node the rules reject, nor cache a shape other than the one the shape rules derive."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from builders import tensor_graphs

from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.dtype import DType
from tinyspec.spec import engine
from tinyspec.spec.fast import FUSED, fused_for
from tinyspec.uop import AddrSpace, BufferArg, GroupOp

pytestmark = pytest.mark.spec
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
K = engine.T_TOP.key
_tags = itertools.count()

FUSED_OPS = sorted(FUSED[Stage.TENSOR], key=lambda op: op.value)
F32_COPY = DType("float32", 4, "f", "float", "float")  # equal to dtypes.float32, not the same object
DTYPES = [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int64, dtypes.bool, dtypes.index, dtypes.void, F32_COPY]
ARGS = [None, (4, 4), (16,), (2, 8), (1, 0), (0, 1), (0, 0), (True, False), (False, True), (2,), (0,), (-1, -16), (4, 4.0), (),
        ((0, 4), (0, 4)), ((1, 6), (0, 4)), ((0, 2), (1, 3)), ((0, 5), (0, 4)), ((-1, 4), (0, 4)), ((0, 4),), ((True, 4), (0, 4)),
        (Ops.ADD, 1), (Ops.MAX, 0), (Ops.MUL, 2), (Ops.ADD, 3), (Ops.SUB, 1), (Ops.ADD, -1), (Ops.ADD, True), "CPU", 1.5, 0, 1, True,
        300, -1, 2**40, BufferArg(1 << 40, 16), BufferArg(1 << 40, -1), BufferArg(1 << 40, True)]


class FloatSub(float):
  pass


def _leaves(tag: int) -> list:
  """Fresh leaves (the tag makes them new interned nodes, so no verdict is cached on anything above them)."""
  b = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 16), tag)
  bi = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg((1 << 40) + 1, 16), tag)
  cf = UOp(Ops.CONST, dtypes.float32, (), 1.0, tag)
  return [b, bi, b.reshape((4, 4)), bi.reshape((4, 4)), cf, UOp(Ops.CONST, dtypes.bool, (), True, tag),
          UOp(Ops.CONST, dtypes.int32, (), 7, tag), UOp(Ops.CONST, dtypes.uint8, (), 300, tag),
          UOp(Ops.CONST, dtypes.float32, (), FloatSub(2.0), tag), UOp(Ops.CONST, F32_COPY, (), 1.0, tag),
          b.reshape((4, 4)).store(cf.reshape((1, 1)).expand((4,)).reshape((4, 4))), UOp(Ops.TUPLE, dtypes.void, (cf,), None, tag),
          UOp(Ops.PARAM, dtypes.float32, (), UOp.param(0, dtypes.float32, 16).arg, tag), "not a node"]


@st.composite
def mixed_graphs(draw) -> UOp:
  """Graphs of the fused ops with sources, dtypes and args drawn near the legal forms and far from them."""
  pool = _leaves(next(_tags))
  for _ in range(draw(st.integers(1, 14))):
    op = draw(st.sampled_from(FUSED_OPS))
    n = 0 if op in GroupOp.Source else 3 if op is Ops.WHERE else 2 if op in GroupOp.Binary else 1
    if op is Ops.SINK: n = draw(st.integers(0, 3))
    if draw(st.integers(0, 5)) == 0: n = draw(st.integers(0, 3))
    srcs = tuple(draw(st.sampled_from(pool[:-1] if draw(st.integers(0, 9)) else pool)) for _ in range(n))
    first = srcs[-1] if srcs and isinstance(srcs[-1], UOp) else None
    if op is Ops.SINK: dt = dtypes.void
    elif op in GroupOp.Comparison: dt = dtypes.bool
    else: dt = first.dtype if first is not None and op is not Ops.CAST else dtypes.float32
    if draw(st.integers(0, 3)) == 0: dt = draw(st.sampled_from(DTYPES))
    arg = draw(st.sampled_from(ARGS)) if op in GroupOp.Movement or op in (Ops.REDUCE, Ops.COPY, Ops.CONST, Ops.BUFFER) else None
    if draw(st.integers(0, 7)) == 0: arg = draw(st.sampled_from(ARGS))
    pool.append(UOp(op, dt, srcs, arg))
  return UOp(Ops.SINK, dtypes.void, tuple(x for x in pool[-3:] if isinstance(x, UOp)))


def _forget(g: UOp) -> list[UOp]:
  nodes = g.toposort(gate=lambda u: all(isinstance(s, UOp) for s in u.src))
  for u in nodes: u._cache.clear()
  return nodes


def _compare(g: UOp) -> int:
  """Check g by the rules alone and with the fused accepts; both must agree everywhere. Returns the fused accepts made."""
  nodes = _forget(g)
  engine.set_fused(False)
  try: slow = [str(v) for v in check(g, Stage.TENSOR)]
  finally: engine.set_fused(True)
  verdicts = {u: u._cache.get(K) for u in nodes}
  shapes = {u: u._cache.get("shape", "missing") for u in nodes}
  accepts, fused = 0, fused_for(engine.T_TOP)
  for u in nodes:  # each fused test on its own, given the rules' verdicts on the sources
    fn = fused[u.op.value] if isinstance(u.op, Ops) else None
    if fn is None or verdicts[u] is None or any(isinstance(s, UOp) and s._cache.get(K) is None for s in u.src): continue
    try: r = fn(u, K)
    except Exception: r = None
    if r is None: continue
    assert r == verdicts[u], f"fused test for {u.op.name} says {r}, the rules say {verdicts[u]}"
    if r and u.op is not Ops.SINK:
      accepts += 1
      assert u._cache["shape"] == shapes[u], f"{u.op.name}: fused shape {u._cache['shape']}, derived {shapes[u]}"
  _forget(g)
  fast = [str(v) for v in check(g, Stage.TENSOR)]
  assert fast == slow
  for u in nodes:
    if (v := u._cache.get(K)) is not None: assert v == verdicts[u], f"{u.op.name}: verdict {v} with fused accepts, {verdicts[u]} by the rules"
    if u._cache.get(K) and "shape" in u._cache: assert u._cache["shape"] == shapes[u]
  return accepts


@given(mixed_graphs())
@SETTINGS
def test_fused_agree_with_rules_on_mixed_graphs(g):
  _compare(g)


@given(tensor_graphs())
@SETTINGS
def test_fused_agree_with_rules_on_legal_graphs(g):
  assert _compare(g) > 0  # the fused tests do accept legal nodes


def test_fused_rejects_what_rules_reject():
  """Near misses of every fused form: each is a violation, and the fused path reports exactly what the rules report."""
  t = next(_tags)
  x = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 16), t).reshape((4, 4))
  xi = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg((1 << 40) + 1, 16), t).reshape((4, 4))
  bad = [x.reshape((True, 16)), x.reshape((2, 4)), x.permute((1, 1)), x.permute((True, False)), x.expand((-1,)), x.flip((1, 0)),
         x.pad(((1, 4), (0, 4))), x.shrink(((0, 5), (0, 4))), x.pad(((-1, 4), (0, 4))), x.shrink(((-1, 4), (0, 4))),
         x.reduce(Ops.SUB, 1), x.reduce(Ops.ADD, 3), x.alu(Ops.IDIV, x), xi.alu(Ops.SQRT), x.reshape((16,)) + x,
         UOp(Ops.CMPLT, dtypes.float32, (x, x)), UOp(Ops.WHERE, dtypes.float32, (x, x, x)), x.bitcast(dtypes.float64),
         UOp(Ops.COPY, dtypes.float32, (x,), 3), UOp(Ops.CONTIGUOUS, dtypes.float32, (x,), "arg"), UOp(Ops.NEG, dtypes.float32, (x,), 1),
         UOp(Ops.CONST, dtypes.uint8, (), 256), UOp(Ops.CONST, dtypes.float32, (), 1), UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(7, -2)),
         UOp(Ops.BUFFER, dtypes.void, (), BufferArg(7, 2, "CPU", AddrSpace.GLOBAL)), UOp(Ops.SINK, dtypes.float32, (x,))]
  for u in bad:
    g = UOp(Ops.SINK, dtypes.void, (u,))
    _compare(g)
    assert check(g, Stage.TENSOR), f"{u.op.name} {u.arg!r} passed"
  # an equal copy of a dtype is that dtype: legal, though no fused test takes it by identity
  for u in (UOp(Ops.ADD, F32_COPY, (x, x)), UOp(Ops.ADD, dtypes.float32, (x, x.cast(F32_COPY)))):
    g = UOp(Ops.SINK, dtypes.void, (u,))
    _compare(g)
    assert check(g, Stage.TENSOR) == []


def test_fused_not_used_when_a_rule_is_added():
  """A rule added to a stage's table later takes the op off the fused path, so the new rule is never skipped."""
  from tinyspec.spec.base import Rule
  from tinyspec.spec.tensor import TENSOR_TABLE
  old = TENSOR_TABLE[Ops.NEG]
  extra = Rule("test.no_neg", "no NEG", lambda u, cx: "NEG is banned here")
  TENSOR_TABLE[Ops.NEG] = (*old, extra)
  try:
    g = UOp(Ops.SINK, dtypes.void, (-UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 16), next(_tags)),))
    assert [v.rule for v in check(g, Stage.TENSOR)] == ["test.no_neg"]
    assert engine.T_TOP.fused[Ops.NEG.value] is None
  finally:
    TENSOR_TABLE[Ops.NEG] = old
  assert check(UOp(Ops.SINK, dtypes.void, (-UOp.buffer(dtypes.float32, 4),)), Stage.TENSOR) == []
  assert engine.T_TOP.fused[Ops.NEG.value] is not None

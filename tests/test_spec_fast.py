"""The fused checks compiled from the tables (tinyspec/spec/fast.py) against the rules they stand for, node by node, at TENSOR,
KERNEL and PROGRAM.

Each graph is checked twice from empty caches: once by the rules alone, once with the fused accepts on. Every verdict,
every derived shape and every violation must agree; and a fused accept given the rules' verdicts on the sources must
never accept a node the rules reject, nor cache a shape other than the one the shape rules derive."""
from __future__ import annotations

import enum
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from builders import (k_2d, k_acc, k_add, k_cast, k_divmod, k_gated_store, k_group, k_max_clamp, k_pad, k_reduce, k_special, k_tri,
                      k_where_idx, linear, program, tensor_graphs)

from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.dtype import DType
from tinyspec.spec import engine
from tinyspec.spec.fast import branch_source
from tinyspec.spec.tensor import TENSOR_TABLE
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.uop import AddrSpace, BufferArg, GroupOp, kernel_calls, substitute

pytestmark = pytest.mark.spec
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
K = engine.T_TOP.key
_tags = itertools.count()

FUSED_OPS = [op for op in Ops if TENSOR_TABLE.fused[op.value] is not None]
F32_COPY = DType("float32", 4, "f", "float", "float")  # equal to dtypes.float32, not the same object
DTYPES = [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int64, dtypes.bool, dtypes.index, dtypes.void, F32_COPY]
ARGS = [None, (4, 4), (16,), (2, 8), (1, 0), (0, 1), (0, 0), (True, False), (False, True), (2,), (0,), (-1, -16), (4, 4.0), (),
        ((0, 4), (0, 4)), ((1, 6), (0, 4)), ((0, 2), (1, 3)), ((0, 5), (0, 4)), ((-1, 4), (0, 4)), ((0, 4),), ((True, 4), (0, 4)),
        (Ops.ADD, 1), (Ops.MAX, 0), (Ops.MUL, 2), (Ops.ADD, 3), (Ops.SUB, 1), (Ops.ADD, -1), (Ops.ADD, True), "CPU", "CPU:1", 1.5, 0, 1, True,
        300, -1, 2**40, BufferArg(1 << 40, 16), BufferArg(1 << 40, -1), BufferArg(1 << 40, True)]


class FloatSub(float):
  pass


def _leaves(tag: int) -> list:
  """Fresh leaves (the tag makes them new interned nodes, so no verdict is cached on anything above them)."""
  b = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 16), tag)
  bi = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg((1 << 40) + 1, 16), tag)
  cf = UOp(Ops.CONST, dtypes.float32, (), 1.0, tag)
  # storage on other devices (a tuple of names, as a sharded value has, too): tensor.one_device and its fused form
  b1 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg((1 << 40) + 2, 16, "CPU:1"), tag)
  bm = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg((1 << 40) + 3, 16, ("CPU:0", "CPU:1")), tag)  # type: ignore[arg-type]
  return [b, bi, b.reshape((4, 4)), bi.reshape((4, 4)), b1, b1.reshape((4, 4)), bm, cf, UOp(Ops.CONST, dtypes.bool, (), True, tag),
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


def _seen(v) -> tuple:
  """What a violation says: its rule, path, node and message; a message naming a solver's witness (an index out of bounds,
  two iterations that clash) may name another witness on another run, so for those the rule, path and node say it."""
  return (v.rule, v.path, v.node, None if v.rule in SOLVER_RULES else v.message)


SOLVER_RULES = {"kernel.thread_independent", "kernel.index_bounds", "kernel.index_bounds_timeout", "kernel.view_index_bounds"}


def _verdicts(nodes: list[UOp]) -> dict[tuple[UOp, str], object]:
  return {(u, cx.key): u._cache[cx.key] for u in nodes for cx in engine.CTXS if cx.key in u._cache}


def _compare(g: UOp, stage: Stage = Stage.TENSOR) -> dict[Stage, int]:
  """Check g at stage by the rules alone and with the fused accepts; both must agree everywhere, in every context the
  walk entered (call bodies at their own stage). Returns the fused accepts made, by the stage of the context."""
  nodes = _forget(g)
  engine.set_fused(False)
  try: slow = [_seen(v) for v in check(g, stage)]
  finally: engine.set_fused(True)
  verdicts = _verdicts(nodes)
  shapes = {u: u._cache.get("shape", "missing") for u in nodes}
  accepts = dict.fromkeys(Stage, 0)
  for cx in engine.CTXS:  # each fused test on its own, given the rules' verdicts on the sources
    fused, k = cx.table.fused, cx.key
    for u in nodes:
      fn = fused[u.op.value] if isinstance(u.op, Ops) else None
      if fn is None or (u, k) not in verdicts or any(isinstance(s, UOp) and (s, k) not in verdicts for s in u.src): continue
      try: r = fn(u, k)
      except Exception: r = None
      if r is None: continue
      assert r == verdicts[(u, k)], f"fused test for {u.op.name} in {cx.name} says {r}, the rules say {verdicts[(u, k)]}"
      if r and u.op is not Ops.SINK:
        accepts[cx.stage] += 1
        assert u._cache["shape"] == shapes[u], f"{u.op.name}: fused shape {u._cache['shape']}, derived {shapes[u]}"
  _forget(g)
  fast = [_seen(v) for v in check(g, stage)]
  assert fast == slow
  for (u, k), v in _verdicts(nodes).items():
    assert (u, k) in verdicts and v == verdicts[(u, k)], f"{u.op.name}: verdict {v} in {k} with fused accepts, {verdicts.get((u, k))} by the rules"
    if v and "shape" in u._cache: assert u._cache["shape"] == shapes[u]
  return accepts


@given(mixed_graphs())
@SETTINGS
def test_fused_agree_with_rules_on_mixed_graphs(g):
  _compare(g)


@given(tensor_graphs())
@SETTINGS
def test_fused_agree_with_rules_on_legal_graphs(g):
  assert _compare(g)[Stage.TENSOR] > 0  # the fused tests do accept legal nodes


def _lowered(g: UOp) -> list[tuple[UOp, Stage]]:
  """The graph after each pass of the reference lowering whose output is at KERNEL or PROGRAM, with that stage."""
  outs = lower(g)
  return [(outs[p.name], p.stage_out) for p in PASSES if p.stage_out in (Stage.KERNEL, Stage.PROGRAM)]


# kernel bodies on their own (builders' kernels, their LINEARs and PROGRAMs) and in kernel graphs
KERNELS = (k_add, k_2d, k_acc, k_reduce, k_pad, k_gated_store, k_divmod, k_group, k_special, k_cast, k_where_idx, k_tri, k_max_clamp)
# a program's integers are concrete (int32), a kernel's may still be index (a program of index integers is a violation per node)
BODIES = [(k(), Stage.KERNEL) for k in KERNELS] + [(f(k(it)), Stage.PROGRAM) for k in KERNELS for f in (linear, program)
                                                   for it in (dtypes.int32, dtypes.index)]


@st.composite
def corrupted(draw, g: UOp) -> UOp:
  """g with one node changed: its dtype, its arg, one source swapped for an earlier node, or one source dropped."""
  nodes = g.toposort()
  i = draw(st.integers(0, len(nodes) - 1))
  u = nodes[i]
  kind = draw(st.sampled_from(["dtype", "arg", "src", "drop"] if u.src else ["dtype", "arg"]))
  dt, src, arg = u.dtype, u.src, u.arg
  if kind == "dtype": dt = draw(st.sampled_from(DTYPES))
  elif kind == "arg": arg = draw(st.sampled_from(ARGS + [u.arg]))
  elif kind == "src":
    j = draw(st.integers(0, len(src) - 1))
    src = src[:j] + (draw(st.sampled_from(nodes[:i] or [u.src[j]])),) + src[j + 1:]
  else: src = src[:-1]
  return substitute(g, {u: UOp(u.op, dt, src, arg, u.tag)})


@given(tensor_graphs())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fused_agree_with_rules_on_lowered_graphs(g):
  """Kernel graphs and programs the reference lowering makes of random tensor graphs: legal, and the fused accepts of
  KERNEL and PROGRAM take part of them."""
  for root, stage in _lowered(g):
    accepts = _compare(root, stage)
    if kernel_calls(root): assert accepts[stage] > 0  # (a graph of views alone lowers to no kernel)
    assert check(root, stage) == []


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fused_agree_with_rules_on_corrupted_kernels(data):
  """One node of a legal kernel, LINEAR, PROGRAM or lowered kernel graph changed: the fused path reports what the rules do."""
  root, stage = data.draw(st.sampled_from(BODIES))
  if data.draw(st.booleans()): root, stage = data.draw(st.sampled_from(_lowered(data.draw(tensor_graphs()))))
  _compare(data.draw(corrupted(root)), stage)


def test_fused_kernel_and_program_accept_builders():
  """Every builder kernel is legal at KERNEL, and the fused accepts decide some of its nodes at KERNEL and at PROGRAM (where
  the kernels not yet through lower_reduce, and those of index integers, are not legal: the two paths agree on those
  violations too)."""
  for root, stage in BODIES:
    if stage is Stage.KERNEL: assert check(root, stage) == [], f"{stage.name}: {check(root, stage)}"
    assert _compare(root, stage)[stage] > 0


def test_fused_rejects_what_rules_reject():
  """Near misses of every fused form: each is a violation, and the fused path reports exactly what the rules report."""
  t = next(_tags)
  x = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 16), t).reshape((4, 4))
  xi = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg((1 << 40) + 1, 16), t).reshape((4, 4))
  x1 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg((1 << 40) + 2, 16, "CPU:1"), t).reshape((4, 4))
  bad = [x.reshape((True, 16)), x.reshape((2, 4)), x.permute((1, 1)), x.permute((True, False)), x.expand((-1,)), x.flip((1, 0)),
         x.pad(((1, 4), (0, 4))), x.shrink(((0, 5), (0, 4))), x.pad(((-1, 4), (0, 4))), x.shrink(((-1, 4), (0, 4))),
         x.reduce(Ops.SUB, 1), x.reduce(Ops.ADD, 3), x.alu(Ops.IDIV, x), xi.alu(Ops.SQRT), x.reshape((16,)) + x,
         UOp(Ops.CMPLT, dtypes.float32, (x, x)), UOp(Ops.WHERE, dtypes.float32, (x, x, x)), x.bitcast(dtypes.float64),
         UOp(Ops.COPY, dtypes.float32, (x,), 3), UOp(Ops.CONTIGUOUS, dtypes.float32, (x,), "arg"), UOp(Ops.NEG, dtypes.float32, (x,), 1),
         UOp(Ops.CONST, dtypes.uint8, (), 256), UOp(Ops.CONST, dtypes.float32, (), 1), UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(7, -2)),
         UOp(Ops.BUFFER, dtypes.void, (), BufferArg(7, 2, "CPU", AddrSpace.GLOBAL)), UOp(Ops.SINK, dtypes.float32, (x,)),
         x + x1, x1 * x, (x < x1).where(x, x), (x < x).where(x1, x), (x < x).where(x, x1), x + UOp(Ops.COPY, dtypes.float32, (x,), "CPU:1")]
  for u in bad:
    g = UOp(Ops.SINK, dtypes.void, (u,))
    _compare(g)
    assert check(g, Stage.TENSOR), f"{u.op.name} {u.arg!r} passed"
  # an equal copy of a dtype is that dtype: legal, though no fused test takes it by identity
  for u in (UOp(Ops.ADD, F32_COPY, (x, x)), UOp(Ops.ADD, dtypes.float32, (x, x.cast(F32_COPY)))):
    g = UOp(Ops.SINK, dtypes.void, (u,))
    _compare(g)
    assert check(g, Stage.TENSOR) == []


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_walk_agrees_with_rules_on_corrupted_tensor_graphs(data):
  """One node of a random legal tensor graph changed: the walk with its inline tests (engine._run_frame) reports what the
  rules alone do, with the same verdicts and shapes on every node."""
  g = data.draw(tensor_graphs())
  _compare(data.draw(corrupted(g)))


def test_inline_views_near_misses():
  """The RESHAPE and PERMUTE forms the walk decides inline, and their near misses: a permutation of more axes than the
  walk's table holds, axis numbers that are equal to ints but are not ints, sizes that are bools; and long chains of
  views and of ALUs on one shared source (x + x), which the walk descends without the stack, and chains above a
  rejected node or over a source decided on another path."""
  t = next(_tags)
  x = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 128), t)
  x7 = x.reshape((2,) * 7)
  y = x.reshape((8, 16))
  empty = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(1 << 40, 0), t)
  legal = [x7.permute((6, 5, 4, 3, 2, 1, 0)), x7.permute(tuple(range(7))), y.permute((1, 0)), y.reshape((128,)), y.reshape((2, 64, 1)),
           empty.reshape((2, 0, 3)).reshape((0,))]
  f32, perm, resh = dtypes.float32, Ops.PERMUTE, Ops.RESHAPE
  # each tagged apart: args that are equal ((1.0, 0) == (True, False) == (1, 0)) would otherwise intern to one node
  bad = [UOp(op, dt, src, a, (t, i)) for i, (op, dt, src, a) in enumerate([
    (perm, f32, (y,), (1.0, 0)), (perm, f32, (y,), (True, False)), (perm, f32, (y,), (1, 0, 2)), (perm, f32, (y,), (0, 0)),
    (perm, f32, (x7,), (6, 5, 4, 3, 2, 1, 1)), (perm, f32, (x7,), (6, 5, 4, 3, 2, 1, 0.0)), (perm, f32, (y,), (1, 0, None)), (perm, f32, (y,), "ab"),
    (resh, f32, (y,), (True, 128)), (resh, f32, (y,), (2.0, 64)), (resh, f32, (y,), (-2, -64)), (resh, f32, (y,), (127,)),
    (resh, dtypes.int32, (y,), (128,)), (resh, f32, (y, y), (128,)), (resh, f32, (y,), 128)])]
  for u in legal + bad:
    g = UOp(Ops.SINK, dtypes.void, (u,))
    _compare(g)
    assert bool(check(g, Stage.TENSOR)) is any(u is b for b in bad), f"{u.op.name} {u.arg!r}"
  # a chain node is read from the one accepted just before it (engine._run_frame keeps its verdict and shape at hand): a
  # chain above a rejected node, and x + c and c + x where c was decided on another path before the chain reached x
  for u in legal + bad:
    c = UOp(Ops.EXP2, u.dtype, (u,), None, (t, "c"))
    above = UOp(Ops.NEG, u.dtype, (u,), None, t)
    for g in (UOp(Ops.SINK, dtypes.void, (above.reshape((4, 32)).reshape((128,)),)),
              UOp(Ops.SINK, dtypes.void, (c, UOp(Ops.ADD, u.dtype, (-c, c)), UOp(Ops.MUL, u.dtype, (c, UOp(Ops.EXP2, u.dtype, (c,))))))):
      _compare(g)
  # x + bad on a chain, bad rejected on another path and x the node accepted last, above an earlier x + w on the chain
  # (w legal, decided on another path too)
  bad = UOp(Ops.NEG, dtypes.float32, (y,), "not an arg", t)
  e, e2, w = (UOp(Ops.EXP2, dtypes.float32, (y,), None, (t, i)) for i in range(3))
  x_bad = UOp(Ops.ADD, dtypes.float32, (UOp(Ops.NEG, dtypes.float32, (e + w,)), bad))
  bad_x = UOp(Ops.ADD, dtypes.float32, (bad, UOp(Ops.NEG, dtypes.float32, (w + e2,))))
  g = UOp(Ops.SINK, dtypes.void, (x_bad, bad_x, bad, w))
  _compare(g)
  assert [v.rule for v in check(g, Stage.TENSOR)] == [v.rule for v in check(UOp(Ops.SINK, dtypes.void, (bad,)), Stage.TENSOR)] != []
  # a node whose op is a member of another Enum with the value of an op the walk decides inline: the rules reject it
  foreign = enum.Enum("Foreign", {op.name: op.value for op in (Ops.NEG, Ops.ADD, Ops.RESHAPE, Ops.PERMUTE)})
  for op, srcs, a in ((foreign.NEG, (e,), None), (foreign.ADD, (e, w), None), (foreign.RESHAPE, (e,), (128,)), (foreign.PERMUTE, (e,), (1, 0))):
    g = UOp(Ops.SINK, dtypes.void, (UOp(Ops.NEG, dtypes.float32, (UOp(op, dtypes.float32, srcs, a, t),)),))
    _compare(g)
    assert [v.rule for v in check(g, Stage.TENSOR)] == ["node.op"]
  z = y
  for _ in range(300): z = ((z + z).permute((1, 0)).reshape((128,)).reshape((16, 8)) * z.permute((1, 0))).permute((1, 0))
  g = UOp(Ops.SINK, dtypes.void, (z, (-z).cast(dtypes.int32)))
  assert _compare(g)[Stage.TENSOR] > 1000
  assert check(g, Stage.TENSOR) == []


def test_walk_knows_what_its_accepts_hold():
  """Every check the walk writes out says which dtypes the nodes it accepts have, so where a node's source is the node the
  walk accepted last, a test of that source's dtype that the accept implies is left out (a RESHAPE's), and one it does not
  imply is kept (a NEG's: not every dtype the walk accepts is one NEG takes)."""
  for cx in engine.CTXS:
    inline = [c for c in cx.table.compiled.checks if c.frame.n is not None]
    assert all(c.dtype_ids is not None for c in inline), f"{cx.name}: {[c.op.name for c in inline if c.dtype_ids is None]}"
  checks = {c.op: c for c in TENSOR_TABLE.compiled.checks}
  last_ids = frozenset().union(*(c.dtype_ids for c in checks.values() if c.frame.n is not None))
  for op, implied in ((Ops.RESHAPE, True), (Ops.NEG, False)):
    code = branch_source(checks[op], last_ids)
    up = code[code.index("if s0 is last:") + 1:code.index("else:")]
    assert any(".name] is d0" in line for line in code) and any(".name] is d0" in line for line in up) is not implied

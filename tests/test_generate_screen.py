"""The generators' race screen decides on the TENSOR graph alone, and decides as the lowering would.

fuzz.generate.safety.opaque_race writes each value in one spelling with IR rewrites of its own. The lowering's own
preparation (callify's inlining, then rangeify's pm_prepare) is the other way to get there; the two must give the same
verdict on every graph the generator asks about, so the screen is kept to here, where the tests may run the lowering.
"""
from __future__ import annotations

from fuzz.generate.safety import opaque_race
from fuzz.generate.kinds import case_for
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp, is_opaque_call


def race_through_lowering(root: UOp) -> str | None:
  """The verdict computed with the lowering's passes: the race check on the graph as rangeify prepares it, with value calls
  kept and with them inlined by callify."""
  from fuzz.generate.safety import unordered_effects  # the race rule itself: both sides differ only in how they spell the graph
  from tinyspec.lower.base import LowerOptions, Trace
  from tinyspec.lower.callify import CALLIFY
  from tinyspec.lower.rangeify import pm_prepare
  from tinyspec.rewrite import graph_rewrite
  if not any(is_opaque_call(u) for u in root.toposort()): return None
  if (r := unordered_effects(graph_rewrite(root, pm_prepare))) is not None: return r
  return unordered_effects(graph_rewrite(CALLIFY.run(root, LowerOptions(callify="inline"), Trace()), pm_prepare))


def copy_call(x: UOp) -> UOp:
  """An opaque kernel call that reads x elementwise into a fresh buffer (what step_opaque adds to a graph)."""
  buf = UOp.buffer(x.dtype, x.size, "CPU")
  r = UOp.range(x.size, 0)
  body = UOp(Ops.SINK, src=(UOp.param(0, x.dtype, x.size).index(r).store(UOp.param(1, x.dtype, x.size).index(r).load()).end(r),))
  return UOp(Ops.CALL, src=(body, buf, x))


def candidates(root: UOp, limit: int = 12) -> list[UOp]:
  """Graphs the generator could ask about: the case with one more opaque call reading one of its values."""
  vals = [u for u in root.toposort() if u.shape_ok and u.shape is not None and u.size >= 1 and u.device == "CPU" and u.op is not Ops.PARAM]
  return [UOp(Ops.SINK, src=(*root.src, copy_call(v))) for v in vals[-limit:]]


def test_the_screen_agrees_with_the_lowering_on_generated_graphs():
  verdicts = []
  for i in range(200):
    c = case_for(0, i)
    if c.kind != "tensor": continue
    for g in [c.root, *candidates(c.root)]:
      ours, theirs = opaque_race(g), race_through_lowering(g)
      assert (ours is None) == (theirs is None), (i, ours, theirs)
      verdicts.append(ours is None)
  # both verdicts occur, so the agreement says something
  assert verdicts.count(True) > 50 and verdicts.count(False) > 5, (verdicts.count(True), verdicts.count(False))


def _written(n: int = 4) -> tuple[UOp, UOp, UOp]:
  """A buffer, an opaque call writing it in place, and AFTER(buffer, call)."""
  buf = UOp.buffer(dtypes.float32, n, "CPU")
  r = UOp.range(n, 0)
  p0 = UOp.param(0, dtypes.float32, n)
  body = UOp(Ops.SINK, src=(p0.index(r).store(p0.index(r).load() + UOp.const(dtypes.float32, 1.0)).end(r),))
  call = UOp(Ops.CALL, src=(body, buf))
  return buf, call, buf.after(call)


def test_an_identity_value_call_hands_its_arg_storage_through():
  # GETTUPLE of a call returning its PARAM is the arg itself: a second opaque call on it races with the first
  buf, call, _ = _written()
  ident = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(UOp.param(0, dtypes.float32, 4),)), buf)).gettuple(0)
  g = UOp(Ops.SINK, src=(call, copy_call(ident)))
  assert opaque_race(g) is not None and race_through_lowering(g) is not None
  # read after the write (through AFTER), the same read is ordered
  ordered = UOp(Ops.CALL, src=(ident.src[0].src[0], buf.after(call))).gettuple(0)
  assert opaque_race(UOp(Ops.SINK, src=(call, copy_call(ordered)))) is None


def test_detach_does_not_make_a_second_value():
  # DETACH(view of a written buffer) is that buffer: reading it with no AFTER races with the call writing it
  buf, call, after = _written()
  x = buf.reshape((2, 2))
  g = UOp(Ops.SINK, src=(call, copy_call(UOp(Ops.DETACH, x.dtype, (x,)))))
  assert opaque_race(g) is not None and race_through_lowering(g) is not None
  assert opaque_race(UOp(Ops.SINK, src=(call, copy_call(UOp(Ops.DETACH, x.dtype, (after.reshape((2, 2)),)))))) is None

"""lower.ordering: a value rewrite keeps every store after the effects its value read through."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from fuzz.generate.strategies import rmw_kernels
from tinyspec.dtype import dtypes
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.lower.ordering import pm_pin_order, pm_unpin_order, value_deps
from tinyspec.lower.simplify import SIMPLIFY, simplify_body
from tinyspec.rewrite import graph_rewrite
from tinyspec.runtime import cpu
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import AddrSpace, Ops, UOp

Z = UOp.const(dtypes.index, 0)


def _graph(body: UOp, *args: UOp) -> UOp:
  return UOp(Ops.SINK, src=tuple(a.after(UOp(Ops.CALL, src=(body, *args))) for a in args[:1]))


def _simplified(root: UOp) -> UOp:
  return map_kernels(root, lambda call, body: simplify_body(body, SIMPLIFY.tables))


def test_a_store_whose_value_folds_stays_after_an_earlier_store_to_its_buffer():
  # p[0] = 7 in the loop, then p[0] = (acc & 0) + 5 after it: folding drops the load that ordered the second store
  dt, r = dtypes.int32, UOp.range(2, 0)
  acc, p = UOp.buffer(dt, 1, addrspace=AddrSpace.REG, id=1001), UOp.param(0, dt, 1)
  init = acc.index(Z).store(UOp.const(dt, 3))
  first = p.after(init, r).index(Z).store(UOp.const(dt, 7)).end(r)
  second = p.index(Z).store((acc.after(first).index(Z).load() & UOp.const(dt, 0)) + UOp.const(dt, 5))
  root = _graph(UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(init, first, second)),)), UOp.buffer(dt, 1, id=1))
  assert check(root, Stage.KERNEL_GRAPH) == []
  assert evaluate(root, {})[0].tolist() == [5]
  simplified = _simplified(root)
  assert check(simplified, Stage.KERNEL_GRAPH) == []
  stores = [u for u in simplified.toposort() if u.op is Ops.STORE and u.src[1].op is Ops.CONST and u.src[1].arg == 5]
  assert len(stores) == 1 and first in stores[0].src[0].src[0].src[1:], "the folded store's target keeps the order"
  assert evaluate(simplified, {})[0].tolist() == [5]
  assert cpu.run(root, {}, opts=())[0].tolist() == [5]


def test_a_rewrite_that_keeps_the_loads_leaves_the_graph_as_it_was():
  dt, r = dtypes.int32, UOp.range(4, 0)
  acc, p = UOp.buffer(dt, 1, addrspace=AddrSpace.REG, id=1001), UOp.param(0, dt, 4)
  init = acc.index(Z).store(UOp.const(dt, 0))
  update = acc.index(Z).store(acc.after(init, r).index(Z).load() + p.after(r).index(r).load()).end(r)
  body = UOp(Ops.SINK, src=(p.index(Z).store(acc.after(update).index(Z).load()),))
  pinned = graph_rewrite(body, pm_pin_order)
  assert pinned is not body and value_deps(body.src[0].src[1]) == [update]
  assert graph_rewrite(pinned, pm_unpin_order) is body
  assert simplify_body(body, SIMPLIFY.tables) is body


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(rmw_kernels())
def test_pinning_keeps_spec_and_meaning_of_rmw_kernels(case):
  pinned = map_kernels(case.root, lambda call, body: graph_rewrite(body, pm_pin_order))
  assert check(pinned, Stage.KERNEL_GRAPH) == []
  want, got = evaluate(case.root, case.copy_inputs()), evaluate(pinned, case.copy_inputs())
  for w, g in zip(want, got): np.testing.assert_array_equal(w, g)
  unpinned = map_kernels(pinned, lambda call, body: graph_rewrite(body, pm_unpin_order))
  assert unpinned is map_kernels(case.root, lambda call, body: graph_rewrite(body, pm_unpin_order))

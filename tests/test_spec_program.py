"""PROGRAM stage: linearized kernels pass; each illegal program breaks exactly the rules named."""
from __future__ import annotations

import pytest
from builders import (PROGRAM_KERNELS, VOID, assert_breaks_exactly, buf, c, f32, group, i32, k_2d, k_acc, k_add, k_reduce, kgraph_of,
                                linear, program, rng, sink)

from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.uop import SourceArg

pytestmark = pytest.mark.spec
P = Stage.PROGRAM


def ic(v: int) -> UOp: return UOp.const(i32, v)
def lin(*xs: UOp) -> UOp: return UOp(Ops.LINEAR, VOID, tuple(xs))
def prog_of(ksink: UOp, order: list[UOp]) -> UOp: return UOp(Ops.PROGRAM, VOID, (ksink, lin(*order)), "k")


def nodes(k: UOp) -> list[UOp]: return [n for n in k.toposort() if n is not k]


LEGAL = {
  **{n: (lambda f=f: program(f(i32))) for n, f in PROGRAM_KERNELS.items()},
  "bare_linear": lambda: linear(k_add(i32)),
  "linear_with_sink_last": lambda: (lambda k: prog_of(k, nodes(k) + [k]))(k_add(i32)),
  "with_source": lambda: (lambda k: UOp(Ops.PROGRAM, VOID, (k, linear(k), UOp(Ops.SOURCE, VOID, (), SourceArg("c", "k", "void k(){}"))), "k"))(
    k_add(i32)),
  "kernel_graph_of_programs": lambda: kgraph_of(program(k_acc(i32))),
  "int64_indices": lambda: program(k_2d(dtypes.int64)),
}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal(name):
  assert check(LEGAL[name](), P) == []


def swapped(k: UOp, a: int, b: int) -> UOp:
  ns = nodes(k)
  ns[a], ns[b] = ns[b], ns[a]
  return prog_of(k, ns)


def first(k: UOp, op: Ops) -> int: return next(i for i, n in enumerate(nodes(k)) if n.op is op)


def use_before_def():
  k = k_add(i32)
  i = first(k, Ops.RANGE)
  return swapped(k, i, i + 1)  # the RANGE's first user before it


def nested_wrong():
  """END r0 while r1 (opened inside r0) is still open"""
  p0 = UOp.param(0, f32, 12)
  r0, r1 = rng(3, 0, i32), rng(4, 1, i32)
  st = p0.index(r0 * ic(4) + r1).store(c(1.0))
  e1 = st.end(r1)
  order = [p0, r0.src[0], r0, ic(4), r0 * ic(4), r1, r0 * ic(4) + r1, p0.index(r0 * ic(4) + r1), c(1.0), st]
  return lin(*order, UOp(Ops.END, VOID, (st, r0)), e1)


def use_after_end():
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(4, 0, i32)
  st = p0.index(r).store(c(1.0))
  late = p1.index(r).store(c(2.0))
  e = st.end(r)
  return lin(p0, p1, r.src[0], r, p0.index(r), c(1.0), st, e, p1.index(r), c(2.0), late)


def unclosed():
  p0 = UOp.param(0, f32, 4)
  r = rng(4, 0, i32)
  st = p0.index(r).store(c(1.0))
  return lin(p0, r.src[0], r, p0.index(r), c(1.0), st)


def with_reduce():
  k = k_reduce(i32)
  return program(k)


ILLEGAL = {
  "use_before_define": (use_before_def, {"program.linear_order"}),
  "source_never_listed": (lambda: (lambda k: lin(*nodes(k)[1:]))(k_add(i32)), {"program.linear_order"}),
  "range_not_closed": (unclosed, {"program.range_unclosed"}),
  "bad_nesting": (nested_wrong, {"program.range_nesting", "program.range_use_after_end"}),
  "use_after_end": (use_after_end, {"program.range_use_after_end"}),
  "index_dtype_left": (lambda: program(k_add()), {"program.no_index_dtype"}),
  "special_index_dtype": (lambda: (lambda g: lin(g.src[0], g))(UOp(Ops.SPECIAL, dtypes.index, (UOp.const(dtypes.index, 4),), "g")),
                          {"program.no_index_dtype"}),
  "reduce_left": (with_reduce, {"program.no_reduce", "program.range_unclosed", "program.range_nesting"}),
  "movement_op": (lambda: (lambda x: lin(x.src[0], x))(UOp.param(0, f32, 4).reshape((2, 2))), {"program.no_movement"}),
  "duplicate_instruction": (lambda: (lambda k: prog_of(k, nodes(k)[:1] + nodes(k)))(k_add(i32)), {"program.linear_duplicate"}),
  "linear_misses_node": (lambda: (lambda k: prog_of(k, [n for n in nodes(k) if n.op is not Ops.CONST or n.dtype is not f32]))(k_2d(i32)),
                         {"program.linear_covers_sink", "program.linear_order"}),
  "linear_extra_node": (lambda: (lambda k: prog_of(k, [UOp.param(7, f32, 1)] + nodes(k)))(k_add(i32)), {"program.linear_covers_sink"}),
  "program_sources_swapped": (lambda: (lambda k: UOp(Ops.PROGRAM, VOID, (linear(k), k), "k"))(k_add(i32)), {"program.program_form"}),
  "root_is_kernel_sink": (lambda: k_add(i32), {"program.root_form"}),
  "oob_int32": (lambda: (lambda r: lin(*nodes(sink(UOp.param(0, f32, 4).index(r * ic(2) - r + ic(1)).store(c(1.0)).end(r))))
                         )(rng(4, 0, i32)), {"kernel.index_bounds"}),
  "kernel_body_at_program": (lambda: kgraph_of(k_add()), {"kgraph.body_stage"}),
  "storage_as_value": (lambda: (lambda r: program(sink(UOp.param(0, f32, 4).index(r).store(UOp.param(1, f32, 4)).end(r))))(rng(4, 0, i32)),
                       {"kernel.scalar_values"}),
  "value_in_group": (lambda: program(sink(group(UOp.param(0, f32, 1).index(ic(0)).store(c(1.0)), c(2.0)))), {"group.effects"}),
  "contiguous": (lambda: program(sink(UOp.param(0, f32, 1).index(ic(0)).store(UOp(Ops.CONTIGUOUS, f32, (c(1.0),))))), {"kernel.op_allowed"}),
  "alu_dtype_mismatch": (lambda: program(sink(UOp.param(0, f32, 1).index(ic(0)).store(UOp(Ops.ADD, f32, (c(1.0), c(1, i32)))))),
                         {"alu.dtype_match"}),
  "gate_not_bool": (lambda: program(sink(UOp.param(0, f32, 1).index(ic(0)).store(c(1.0), ic(1)))), {"kernel.gate_bool"}),
  "store_outside_end": (lambda: (lambda r: program(sink(UOp.param(0, f32, 4).index(r).store(c(1.0)).end(r),
                                                        UOp.param(1, f32, 4).index(r).store(c(2.0)))))(rng(4, 0, i32)),
                        {"kernel.range_closed", "program.range_use_after_end"}),
  "global_buffer": (lambda: program(sink(buf(1).index(ic(0)).store(c(1.0)))), {"kernel.buffer_local"}),
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal(name):
  build, rules = ILLEGAL[name]
  assert_breaks_exactly(build(), P, rules)


def test_use_before_define_points_at_the_instruction():
  k = k_add(i32)
  i = first(k, Ops.RANGE)
  vs = check(swapped(k, i, i + 1), P)
  assert vs and all(v.path[:2] == (1, i) for v in vs) and "listed later" in vs[0].message


def test_unclosed_range_points_at_the_range():
  (v,) = check(unclosed(), P)
  assert v.node.op is Ops.RANGE and v.path == (2,)


def test_acc_program_is_legal_and_order_matters():
  k = k_acc(i32)
  assert check(program(k), P) == []
  ns = nodes(k)
  end_rr = next(i for i, n in enumerate(ns) if n.op is Ops.END and n.src[1].arg.axis == 1)
  # move the reduce loop's END to the very end: the final store then runs inside the reduce loop, and END r0 closes over an open r1
  moved = ns[:end_rr] + ns[end_rr + 1:] + [ns[end_rr]]
  rules = {v.rule for v in check(prog_of(k, moved), P)}
  assert "program.linear_order" in rules and "program.range_nesting" in rules

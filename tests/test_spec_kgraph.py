"""KERNEL_GRAPH stage: kernel graphs in the forms of docs/ir.md pass; each illegal one breaks exactly the rules named."""
from __future__ import annotations

import pytest
from builders import (KERNELS, assert_breaks_exactly, buf, c, call, f32, group, i32, k_acc, k_add, k_reduce, kgraph_of, program, rng,
                                sink, tup)

from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.uop import AddrSpace

pytestmark = pytest.mark.spec
G = Stage.KERNEL_GRAPH


def two_kernels():
  a, tmp, out = buf(4, id=501), buf(4, id=502), buf(4, id=503)
  t = tmp.after(call(k_add(), tmp, a, a))
  return sink(out.after(call(k_add(), out, t, a)))


def precompiled():
  """a precompiled value call: the body is itself a kernel graph whose output storage is PARAM slot 1 (after the input PARAM)."""
  pin, pout = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  inner = sink(pout.after(call(k_add(), pout, pin, pin)))
  x, out = buf(4, id=511), buf(4, id=512)
  return sink(out.after(call(inner, x, out)))


def copy_call():
  src, dst = buf(4, id=521), buf(4, id=522, device="GPU")
  body = UOp(Ops.COPY, f32, (UOp.param(1, f32, 4),), "GPU")
  return sink(dst.after(call(body, dst, src)))


LEGAL = {
  **{f"one_kernel_{n}": (lambda f=f: kgraph_of(f())) for n, f in KERNELS.items()},
  "two_kernels_ordered_by_after": two_kernels,
  "input_buffer_entry": lambda: sink(buf(4, id=531)),
  "precompiled_nested_kgraph": precompiled,
  "copy_body": copy_call,
  "program_body": lambda: kgraph_of(program(k_add(i32))),
  "two_outputs": lambda: sink(kgraph_of(k_add(), 540).src[0], kgraph_of(k_acc(), 550).src[0]),
  "assign_into_input": lambda: (lambda a, b: sink(a.after(call(k_add(), a, a, b))))(buf(4, id=561), buf(4, id=562)),
  "after_two_calls": lambda: (lambda a, b: sink(a.after(call(k_add(), a, b, b), call(k_add(), b, b, b))))(buf(4, id=571), buf(4, id=572)),
  "empty_sink": lambda: sink(),
  "after_of_after": lambda: (lambda a, b: sink(a.after(call(k_add(), a, b, b)).after(call(k_add(), a, b, b))))(buf(4, id=573), buf(4, id=574)),
}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal(name):
  assert check(LEGAL[name](), G) == []


def with_arg(arg: UOp, n: int = 4):
  out, a = buf(n, id=601), buf(n, id=602)
  return sink(out.after(call(k_add(n=n), out, arg, a)))


def oob_kernel():
  p0 = UOp.param(0, f32, 4)
  r = rng(4, 0)
  return sink(p0.index(r + UOp.const(dtypes.index, 1)).store(c(1.0)).end(r))


def movement_in_body():
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(4, 0)
  return sink(p0.index(r).store(p1.reshape((2, 2)).index(r).load()).end(r))


ILLEGAL = {
  "permute_view_arg": (lambda: with_arg(buf(16, id=611).reshape((4, 4)).permute((1, 0)).reshape((16,)), 16),
                       {"kgraph.call_arg_storage", "kgraph.no_movement"}),
  "shrink_view_arg": (lambda: with_arg(buf(8, id=612).shrink(((0, 4),))), {"kgraph.call_arg_storage", "kgraph.no_movement"}),
  "reshape_view_arg": (lambda: with_arg(buf(4, id=613).reshape((4,))), {"kgraph.call_arg_storage", "kgraph.no_movement"}),
  "alu_value_arg": (lambda: with_arg(buf(4, id=614) + buf(4, id=615)), {"kgraph.call_arg_storage", "kgraph.op_allowed"}),
  "const_arg": (lambda: with_arg(c(1.0)), {"kgraph.call_arg_storage", "kgraph.op_allowed"}),
  "tuple_left": (lambda: (lambda b: sink(b.after(call(tup(UOp.param(0, f32, 4)), b))))(buf(4, id=616)), {"kgraph.no_tuple"}),
  "gettuple_left": (lambda: sink(UOp(Ops.GETTUPLE, f32, (call(tup(UOp.param(0, f32, 4)), buf(4, id=617)),), 0)),
                    {"kgraph.no_tuple", "kgraph.sink_entry"}),
  "param_outside_call": (lambda: with_arg(UOp.param(0, f32, 4)), {"call.param_outside"}),
  "param_slot_past_args": (lambda: (lambda o: sink(o.after(call(k_add(), o, buf(4, id=618)))))(buf(4, id=619)), {"call.param_slot"}),
  "param_size_unlike_arg": (lambda: with_arg(buf(8, id=620)), {"call.param_size"}),
  "param_dtype_unlike_arg": (lambda: with_arg(buf(4, i32, id=621)), {"call.param_dtype"}),
  "root_not_sink": (lambda: kgraph_of(k_add()).src[0], {"kgraph.root_sink"}),
  "sink_entry_alu": (lambda: sink(buf(4, id=622) + buf(4, id=623)), {"kgraph.sink_entry", "kgraph.op_allowed"}),
  "sink_entry_view": (lambda: sink(buf(4, id=624).reshape((2, 2))), {"kgraph.sink_entry", "kgraph.no_movement"}),
  "after_dep_not_call": (lambda: sink(buf(4, id=625).after(buf(4, id=626))), {"kgraph.after_deps"}),
  "after_on_const": (lambda: sink(UOp(Ops.AFTER, f32, (c(1.0), call(k_add(), buf(4), buf(4), buf(4))))),
                     {"kgraph.after_storage", "kgraph.op_allowed", "kgraph.sink_entry"}),
  "call_body_alu": (lambda: (lambda o: sink(o.after(call(o + o, o))))(buf(4, id=627)), {"kgraph.call_body", "kgraph.op_allowed"}),
  "reg_buffer_in_graph": (lambda: sink(buf(1, id=628, addrspace=AddrSpace.REG)), {"kgraph.buffer_global"}),
  "copy_of_value": (lambda: (lambda o: sink(o.after(call(UOp(Ops.COPY, f32, (c(1.0),), "GPU"), o))))(buf(4, id=629, device="GPU")),
                    {"kgraph.copy_body", "kgraph.op_allowed"}),
  "movement_inside_kernel_body": (lambda: kgraph_of(movement_in_body()), {"kernel.no_movement", "kernel.index_storage"}),
  "oob_inside_kernel_body": (lambda: kgraph_of(oob_kernel()), {"kernel.index_bounds"}),
  "store_in_graph": (lambda: sink(group(buf(4, id=631).store(buf(4, id=632)))), {"kgraph.sink_entry", "kgraph.op_allowed"}),
  "kernel_body_value_in_sink": (lambda: kgraph_of(sink(group(), UOp.param(0, f32, 4).index(UOp.const(dtypes.index, 0)).load())),
                                {"kernel.sink_effects"}),
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal(name):
  build, rules = ILLEGAL[name]
  assert_breaks_exactly(build(), G, rules)


def test_kernel_body_violation_is_reported_at_kernel_stage_with_path():
  vs = check(kgraph_of(oob_kernel()), G)
  assert len(vs) == 1
  v = vs[0]
  assert v.stage is Stage.KERNEL and v.path == (0, 1, 0, 0, 0) and v.node.op is Ops.STORE


def test_kernel_stage_accepts_kernel_graph_and_requires_kernel_bodies():
  assert check(kgraph_of(k_reduce()), Stage.KERNEL) == []
  vs = check(kgraph_of(program(k_add(i32))), Stage.KERNEL)
  assert [v.rule for v in vs] == ["kgraph.body_stage"]
  vs = check(kgraph_of(k_add()), Stage.PROGRAM)
  assert [v.rule for v in vs] == ["kgraph.body_stage"]
  assert check(kgraph_of(program(k_add(i32))), Stage.PROGRAM) == []


def test_precompiled_inner_param_bound_by_outer_call():
  """the nested kernel graph's PARAMs are bound by the outer call's args: a size mismatch there is found."""
  pin, pout = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  inner = sink(pout.after(call(k_add(), pout, pin, pin)))
  vs = check(sink(buf(4, id=641).after(call(inner, buf(8, id=642), buf(4, id=641)))), G)
  assert {v.rule for v in vs} == {"call.param_size"}

"""TENSOR stage: legal tensor graphs pass; each illegal graph breaks exactly the rules named."""
from __future__ import annotations

import pytest
from builders import VOID, assert_breaks_exactly, buf, c, call, f32, group, i32, k_add, sink, tup

from tinyspec import Ops, Stage, UOp, check, dtypes, verify
from tinyspec.dtype import DType
from tinyspec.spec import SpecError

pytestmark = pytest.mark.spec
T = Stage.TENSOR


def x44(id=None) -> UOp: return buf(16, id=id).reshape((4, 4))


def value_call():
  """CALL(TUPLE(p0 + p1, p0 * 2 as int)...) on two 4x4 inputs: PARAMs are flat, the body reshapes them."""
  p0, p1 = UOp.param(0, f32, 16).reshape((4, 4)), UOp.param(1, f32, 16).reshape((4, 4))
  body = tup(p0 + p1, (p0 * scalar44(2.0)).cast(i32))
  return call(body, x44(), x44(), name="f")


def scalar44(v, dt=f32) -> UOp: return c(v, dt).reshape((1,)).expand((4, 4)).reshape((4, 4))


LEGAL = {
  "buffer_view": lambda: sink(x44()),
  "elementwise_chain": lambda: sink(((x44() + x44()) * x44() - x44()).maximum(x44())),
  "float_unaries": lambda: sink(*[x44().alu(op) for op in (Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.TRUNC)]),
  "compare_where": lambda: sink((x44() < x44()).where(x44(), scalar44(0.0)), x44().ne(x44()), x44().eq(x44())),
  "casts": lambda: sink(x44().cast(i32), x44().bitcast(i32), x44().cast(dtypes.bool)),
  "views": lambda: sink(x44().permute((1, 0)).expand((2,)).pad(((0, 3), (1, 6), (0, 4))).shrink(((1, 1), (2, 3), (0, 4))).flip((True, False, True))),
  "reduce": lambda: sink(x44().reduce(Ops.ADD, 1), x44().reduce(Ops.MAX, 2), x44().reduce(Ops.MUL, 0)),
  "value_call_two_outputs": lambda: sink(value_call().gettuple(0), value_call().gettuple(1)),
  "nested_value_call": lambda: sink(call(tup(call(tup(UOp.param(0, f32, 16) * UOp.param(0, f32, 16)), UOp.param(1, f32, 16)).gettuple(0)),
                                         buf(16), buf(16)).gettuple(0)),
  "gettuple_of_tuple": lambda: sink(UOp(Ops.GETTUPLE, f32, (tup(x44(), buf(3)),), 1)),
  "assign": lambda: (lambda b: sink(b.after(b.store(b + b))))(buf(8)),
  "store_into_view": lambda: (lambda b: sink(b.after(b.reshape((2, 4)).store(scalar44(1.0).shrink(((0, 2), (0, 4)))))))(buf(8)),
  "group_of_stores": lambda: (lambda a, b: sink(group(a.store(b), b.store(a))))(buf(4), buf(4)),
  "sink_of_values": lambda: sink(x44(), buf(3), c(1.0)),
  "contiguous_detach_copy": lambda: sink(x44().alu(Ops.NEG).replace(op=Ops.CONTIGUOUS), UOp(Ops.DETACH, f32, (x44(),)),
                                         UOp(Ops.COPY, f32, (x44(),), "GPU")),
  "opaque_kernel_call": lambda: (lambda o, a, b: sink(o.after(call(k_add(), o, a, b))))(buf(4), buf(4), buf(4)),
  "int_ops": lambda: (lambda a: sink(a // a, a % a, a.alu(Ops.SHL, a), a.alu(Ops.SHR, a), a ^ a if False else a.alu(Ops.XOR, a)))(buf(4, i32)),
  "bool_ops": lambda: (lambda a: sink(a & a, a | a, a.alu(Ops.XOR, a), a.maximum(a)))(buf(4, dtypes.bool)),
  "const_expanded": lambda: sink(c(3, i32).reshape((1,)).expand((5,)).reshape((5,)) + buf(5, i32)),
  "empty_sink": lambda: sink(),
  "param_in_body_behind_view": lambda: sink(call(tup(UOp.param(0, f32, 16).reshape((4, 4)).permute((1, 0))), x44()).gettuple(0)),
}


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal(name):
  g = LEGAL[name]()
  assert check(g, T) == []
  assert verify(g, T) is g


def after_alu():
  a = buf(4)
  v = a + a
  return sink(v.after(a.store(v)))


ILLEGAL = {
  "gettuple_out_of_range": (lambda: sink(value_call().gettuple(2) if False else UOp(Ops.GETTUPLE, f32, (value_call(),), 2)),
                            {"tensor.gettuple_index"}),
  "gettuple_wrong_dtype": (lambda: sink(UOp(Ops.GETTUPLE, dtypes.float64, (value_call(),), 0)), {"tensor.gettuple_dtype"}),
  "gettuple_on_non_call": (lambda: sink(UOp(Ops.GETTUPLE, f32, (buf(4),), 0)), {"tensor.gettuple_source"}),
  "gettuple_on_opaque_call": (lambda: sink(UOp(Ops.GETTUPLE, f32, (call(k_add(), buf(4), buf(4), buf(4)),), 0)), {"tensor.gettuple_source"}),
  "param_outside_body": (lambda: sink(UOp.param(0, f32, 4) + buf(4)), {"call.param_outside"}),
  "param_as_top_level_call_arg": (lambda: sink(call(tup(UOp.param(0, f32, 4)), UOp.param(0, f32, 4)).gettuple(0)), {"call.param_outside"}),
  "param_slot_past_args": (lambda: sink(call(tup(UOp.param(1, f32, 4)), buf(4)).gettuple(0)), {"call.param_slot"}),
  "param_size_unlike_arg": (lambda: sink(call(tup(UOp.param(0, f32, 8)), buf(4)).gettuple(0)), {"call.param_size"}),
  "param_dtype_unlike_arg": (lambda: sink(call(tup(UOp.param(0, i32, 4)), buf(4)).gettuple(0)), {"call.param_dtype"}),
  "elementwise_two_shapes": (lambda: sink(x44() + buf(16)), {"tensor.elementwise_shape"}),
  "alu_mixed_dtypes": (lambda: sink(UOp(Ops.ADD, f32, (buf(4), buf(4, i32)))), {"alu.dtype_match"}),
  "sqrt_on_int": (lambda: sink(buf(4, i32).alu(Ops.SQRT)), {"alu.dtype_class"}),
  "idiv_on_float": (lambda: sink(buf(4) // buf(4)), {"alu.dtype_class"}),
  "neg_on_bool": (lambda: sink(buf(4, dtypes.bool).alu(Ops.NEG)), {"alu.dtype_class"}),
  "compare_not_bool": (lambda: sink(UOp(Ops.CMPLT, f32, (buf(4), buf(4)))), {"alu.dtype_match"}),
  "where_cond_not_bool": (lambda: sink(UOp(Ops.WHERE, f32, (buf(4), buf(4), buf(4)))), {"alu.where_cond"}),
  "bitcast_size": (lambda: sink(buf(4).bitcast(dtypes.int64)), {"alu.cast"}),
  "store_unequal_shapes": (lambda: (lambda b: sink(b.after(b.store(buf(8)))))(buf(4)), {"tensor.store_shape"}),
  "store_dtype": (lambda: (lambda b: sink(b.store(buf(4, i32))))(buf(4)), {"tensor.store_dtype"}),
  "store_into_alu": (lambda: sink((buf(4) + buf(4)).store(buf(4))), {"tensor.store_target"}),
  "after_on_alu": (after_alu, {"tensor.after_storage"}),
  "after_dep_value": (lambda: sink(buf(4).after(buf(4) + buf(4))), {"tensor.after_deps"}),
  "reshape_count": (lambda: sink(buf(16).reshape((3, 5))), {"tensor.movement_arg"}),
  "permute_not_permutation": (lambda: sink(x44().permute((0, 0))), {"tensor.movement_arg"}),
  "shrink_outside": (lambda: sink(x44().shrink(((0, 4), (2, 3)))), {"tensor.movement_arg"}),
  "pad_too_small": (lambda: sink(x44().pad(((1, 4), (0, 4)))), {"tensor.movement_arg"}),
  "flip_wrong_length": (lambda: sink(x44().flip((True,))), {"tensor.movement_arg"}),
  "reduce_too_many_axes": (lambda: sink(x44().reduce(Ops.ADD, 3)), {"tensor.reduce_axes"}),
  "reduce_range_form": (lambda: sink(UOp(Ops.REDUCE, f32, (c(1.0), UOp.range(4, 0)), Ops.ADD)), {"tensor.reduce_form", "tensor.no_range_ops"}),
  "range_in_tensor": (lambda: sink(UOp.range(4, 0)), {"tensor.no_range_ops"}),
  "linear_in_tensor": (lambda: sink(UOp(Ops.LINEAR, VOID, ())), {"tensor.no_program_ops"}),
  "value_in_group": (lambda: (lambda b: sink(group(b.store(b), b + b)))(buf(4)), {"group.effects"}),
  "tuple_in_sink": (lambda: sink(tup(buf(4))), {"tensor.sink_entry"}),
  "call_body_alu": (lambda: sink(buf(4).after(call(buf(4) + buf(4), buf(4)))), {"tensor.call_body"}),
  "call_arg_effect": (lambda: sink(call(tup(UOp.param(0, f32, 4)), buf(4).store(buf(4))).gettuple(0)), {"tensor.call_arg_value"}),
  "tuple_of_effect": (lambda: sink(UOp(Ops.GETTUPLE, f32, (call(tup(buf(4).store(buf(4))), buf(4)),), 0)), {"tensor.tuple_values"}),
  "add_three_sources": (lambda: sink(UOp(Ops.ADD, f32, (buf(4), buf(4), buf(4)))), {"node.src_count"}),
  "reshape_arg_type": (lambda: sink(UOp(Ops.RESHAPE, f32, (buf(4),), "4")), {"node.arg"}),
  "unknown_dtype": (lambda: sink(UOp(Ops.NEG, DType("float16", 2, "f", "half", "half"), (buf(4),))), {"node.dtype"}),
  "const_arg_kind": (lambda: sink(UOp(Ops.CONST, f32, (), 1)), {"node.arg"}),
  "store_not_void": (lambda: sink(UOp(Ops.STORE, f32, (buf(4), buf(4)))), {"node.dtype_void"}),
  "neg_of_store": (lambda: sink(UOp(Ops.NEG, f32, (buf(4).store(buf(4)),))), {"value.source"}),
  "view_changes_dtype": (lambda: sink(UOp(Ops.RESHAPE, i32, (buf(4),), (2, 2))), {"value.dtype_passthrough"}),
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal(name):
  build, rules = ILLEGAL[name]
  vs = assert_breaks_exactly(build(), T, rules)
  assert all(v.stage is T for v in vs)
  with pytest.raises(SpecError) as e:
    verify(build(), T)
  assert {v.rule for v in e.value.violations} == rules


def test_violation_carries_node_and_shortest_path():
  bad = buf(4) + buf(8)
  root = sink(buf(2), bad.alu(Ops.NEG), bad)
  vs = check(root, T)
  assert len(vs) == 1, "the root cause is reported once, not again at its consumer"
  v = vs[0]
  assert v.node is bad and v.path == (2,) and v.rule == "tensor.elementwise_shape"
  assert "(4,), (8,)" in v.message and "identical shapes" in v.message


def test_message_names_arg_and_expectation():
  a = buf(16)
  g = sink(a.after(call(k_add(n=16), a, a.reshape((4, 4)).permute((1, 0)), a)))
  vs = check(g, Stage.KERNEL_GRAPH)
  msgs = [v.message for v in vs if v.rule == "kgraph.call_arg_storage"]
  assert msgs == ["CALL arg 1 is a PERMUTE view; at KERNEL_GRAPH call args must be storage (BUFFER, PARAM, or AFTER of one) or a variable "
                  "(a BIND, or a DEFINE_VAR passed on)"]


def test_every_violation_is_collected():
  g = sink(buf(4) + buf(8), buf(4, i32).alu(Ops.SQRT), UOp.param(0, f32, 4), x44().permute((1, 1)))
  assert sorted(v.rule for v in check(g, T)) == ["alu.dtype_class", "call.param_outside", "tensor.elementwise_shape", "tensor.movement_arg"]


def test_check_is_repeatable_and_cached_verdicts_agree():
  g = sink(buf(4) + buf(8), x44())
  first = check(g, T)
  assert [str(v) for v in check(g, T)] == [str(v) for v in first]
  assert check(g.src[1], T) == []


def test_shared_subgraph_in_and_out_of_body():
  """The same node checked inside a call body and at top level: a PARAM under it is legal only in the body."""
  p = UOp.param(0, f32, 4)
  shared = p * p
  g = sink(call(tup(shared), buf(4)).gettuple(0), shared)
  vs = check(g, T)
  assert [v.rule for v in vs] == ["call.param_outside"]
  assert vs[0].node is p and vs[0].path in ((1, 0), (1, 1))


def test_param_belongs_to_innermost_call():
  """PARAM slot 1 inside the inner body refers to the inner call's args (it has one): a violation there, not at the outer call."""
  inner = call(tup(UOp.param(1, f32, 4)), UOp.param(0, f32, 4))
  outer = call(tup(inner.gettuple(0)), buf(4), buf(4))
  vs = check(sink(outer.gettuple(0)), T)
  assert [v.rule for v in vs] == ["call.param_slot"] and vs[0].path == (0,) * 7

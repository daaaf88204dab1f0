"""The spec's rules for the small floats (docs/spec.md, Small floats): which ops take them, BITCAST sizes, where fp8
may appear, and the CONSTs they hold; at TENSOR and in kernels, and the fused fast path agreeing with the rules."""
from __future__ import annotations

import math

import pytest
from builders import assert_breaks_exactly, buf, sink

from tinyspec.dtype import DType, dtypes
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec
F16, BF16, E4M3, E5M2 = dtypes.float16, dtypes.bfloat16, dtypes.float8_e4m3fn, dtypes.float8_e5m2


def tensor(dt: DType, n: int = 4) -> UOp: return buf(n, dt)


@pytest.mark.parametrize("dt", [F16, BF16], ids=lambda d: d.name)
def test_float16_and_bfloat16_take_every_float_op_and_reduce(dt):
  a, b = tensor(dt), tensor(dt)
  outs = [a + b, a * b, a.alu(Ops.MAX, b), a.alu(Ops.SQRT), a.alu(Ops.RECIP), a.alu(Ops.EXP2), a.alu(Ops.CMPLT, b),
          UOp(Ops.REDUCE, dt, (a,), (Ops.ADD, 1)), a.cast(dtypes.float32), a.bitcast(dtypes.int16), a.bitcast(F16 if dt is BF16 else BF16)]
  assert check(sink(*outs), Stage.TENSOR) == []


@pytest.mark.parametrize("dt", dtypes.fp8s, ids=lambda d: d.name)
@pytest.mark.parametrize("op", [Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE])
def test_fp8_refuses_arithmetic_and_comparisons(dt, op):
  a, b = tensor(dt), tensor(dt)
  u = UOp(op, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE) else dt, (a, b))
  vs = assert_breaks_exactly(sink(u), Stage.TENSOR, {"alu.dtype_class"})
  assert "storage only" in vs[0].message and dt.name in vs[0].message


@pytest.mark.parametrize("dt", dtypes.fp8s, ids=lambda d: d.name)
def test_fp8_is_stored_moved_selected_and_converted(dt):
  a, b, c = tensor(dt), tensor(dt), tensor(dtypes.bool)
  outs = [c.where(a, b), a.cast(dtypes.float32), tensor(dtypes.float32).cast(dt), a.bitcast(dtypes.uint8),
          a.bitcast(E5M2 if dt is not E5M2 else E4M3),
          UOp(Ops.RESHAPE, dt, (a,), (2, 2)), UOp.const(dt, 448.0)]
  assert check(sink(*outs), Stage.TENSOR) == []


@pytest.mark.parametrize("dt", dtypes.fp8s, ids=lambda d: d.name)
def test_fp8_refuses_a_reduce_at_tensor_and_in_kernels(dt):
  vs = assert_breaks_exactly(sink(UOp(Ops.REDUCE, dt, (tensor(dt),), (Ops.MAX, 1))), Stage.TENSOR, {"reduce.dtype"})
  assert dt.name in vs[0].message
  r = UOp.range(4, 0)
  red = UOp(Ops.REDUCE, dt, (UOp.param(1, dt, 4).index(r).load(), r), Ops.ADD)
  body = sink(UOp.param(0, dt, 1).index(UOp.const(dtypes.index, 0)).store(red))
  assert "reduce.dtype" in {v.rule for v in check(body, Stage.KERNEL)}


@pytest.mark.parametrize("src,dst", [(F16, dtypes.int8), (BF16, dtypes.float32), (E4M3, dtypes.int16), (E5M2, F16)], ids=str)
def test_a_bitcast_that_changes_the_itemsize_is_refused(src, dst):
  assert_breaks_exactly(sink(tensor(src).bitcast(dst)), Stage.TENSOR, {"alu.cast"})


@pytest.mark.parametrize("dt,v", [(F16, 0.1), (BF16, 1.001), (E4M3, 1000.0), (E5M2, 0.3), (dtypes.float8_e4m3fnuz, 1000.0),
                                  (dtypes.float8_e5m2fnuz, -0.0)], ids=str)
def test_a_small_float_const_holds_a_value_of_its_dtype(dt, v):
  bad = UOp(Ops.CONST, dt, (), v)  # not rounded: no value of dt
  vs = assert_breaks_exactly(sink(bad), Stage.TENSOR, {"node.arg"})
  assert repr(v) in vs[0].message
  good = UOp.const(dt, v)  # rounded (fp8 saturating) into the dtype
  assert repr(good.arg) != repr(v) and check(sink(good), Stage.TENSOR) == []
  if dt is E4M3: assert good.arg == 448.0
  if dt is dtypes.float8_e4m3fnuz: assert good.arg == 240.0
  if dt is dtypes.float8_e5m2fnuz: assert math.copysign(1.0, good.arg) == 1.0  # no negative zero

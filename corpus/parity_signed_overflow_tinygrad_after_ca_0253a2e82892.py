# tinyspec counterexample: parity-signed-overflow/tinygrad-after-callified/int16
# seed 0, case 2187, found 2026-12-01 18:40:20 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (3, 1, 2): tinyspec np.int16(-2), tinygrad np.int16(-8) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-callified', 'int16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 2187
PROGRAM = '''\
@function
def f_v4(p0, p1):
  q0 = p0.maximum(-2)
  q1 = q0.permute((1, 2, 0))
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28], dtype=np.int16).reshape((3, 4, 2)))
  v0 = x0 & 7
  v1 = x0.cast(dtypes.uint64)
  v2 = v0 * 32766
  v4, = f_v4(v2, v1)
  return v4,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int16, (), ParamArg(slot=0, size=24, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int16, (n0, ), (3, 4, 2, ))
  n2 = UOp(Ops.CONST, dtypes.int16, (), -2)
  n3 = UOp(Ops.EXPAND, dtypes.int16, (n2, ), (3, 4, 2, ))
  n4 = UOp(Ops.MAX, dtypes.int16, (n1, n3, ), None)
  n5 = UOp(Ops.PERMUTE, dtypes.int16, (n4, ), (1, 2, 0, ))
  n6 = UOp(Ops.TUPLE, dtypes.void, (n5, ), None)
  n7 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=10594, size=24, device='NPY', addrspace=AddrSpace.GLOBAL))
  n8 = UOp(Ops.RESHAPE, dtypes.int16, (n7, ), (3, 4, 2, ))
  n9 = UOp(Ops.COPY, dtypes.int16, (n8, ), 'CPU')
  n10 = UOp(Ops.CONST, dtypes.int16, (), 7)
  n11 = UOp(Ops.EXPAND, dtypes.int16, (n10, ), (3, 4, 2, ))
  n12 = UOp(Ops.AND, dtypes.int16, (n9, n11, ), None)
  n13 = UOp(Ops.CONST, dtypes.int16, (), 32766)
  n14 = UOp(Ops.EXPAND, dtypes.int16, (n13, ), (3, 4, 2, ))
  n15 = UOp(Ops.MUL, dtypes.int16, (n12, n14, ), None)
  n16 = UOp(Ops.CAST, dtypes.uint64, (n9, ), None)
  n17 = UOp(Ops.CALL, dtypes.void, (n6, n15, n16, ), 'f_v4')
  n18 = UOp(Ops.GETTUPLE, dtypes.int16, (n17, ), 0)
  n19 = UOp(Ops.SINK, dtypes.void, (n18, ), None)
  return n19


def inputs():
  return {
    10594: np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28], dtype='int16'),
  }

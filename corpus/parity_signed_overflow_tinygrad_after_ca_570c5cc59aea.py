# tinyspec counterexample: parity-signed-overflow/tinygrad-after-callified/int8
# seed 0, case 11421, found 2026-12-01 18:46:55 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (1, 1, 0): tinyspec np.int8(0), tinygrad np.int8(-1) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-callified', 'int8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 11421
PROGRAM = '''\
@function
def f_v1(p0):
  q0 = p0 - p0
  q1 = q0 | -128
  q2 = (q0 < p0)
  return q2, q0


def program():
  x0 = Tensor(np.array([1, 6, 0, 0, 75, 0, 18446744073709551615, 1], dtype=np.uint64).reshape((2, 2, 2)))
  v0 = x0.cast(dtypes.int8)
  v1, v1_1 = f_v1(v0)
  v2 = v1_1.maximum(v0)
  return v2,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int8, (), ParamArg(slot=0, size=8, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int8, (n0, ), (2, 2, 2, ))
  n2 = UOp(Ops.CONST, dtypes.int8, (), -1)
  n3 = UOp(Ops.EXPAND, dtypes.int8, (n2, ), (2, 2, 2, ))
  n4 = UOp(Ops.MUL, dtypes.int8, (n1, n3, ), None)
  n5 = UOp(Ops.ADD, dtypes.int8, (n1, n4, ), None)
  n6 = UOp(Ops.CMPLT, dtypes.bool, (n5, n1, ), None)
  n7 = UOp(Ops.TUPLE, dtypes.void, (n6, n5, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=38877, size=8, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.RESHAPE, dtypes.uint64, (n8, ), (2, 2, 2, ))
  n10 = UOp(Ops.COPY, dtypes.uint64, (n9, ), 'CPU')
  n11 = UOp(Ops.CAST, dtypes.int8, (n10, ), None)
  n12 = UOp(Ops.CALL, dtypes.void, (n7, n11, ), 'f_v1')
  n13 = UOp(Ops.GETTUPLE, dtypes.int8, (n12, ), 1)
  n14 = UOp(Ops.MAX, dtypes.int8, (n13, n11, ), None)
  n15 = UOp(Ops.SINK, dtypes.void, (n14, ), None)
  return n15


def inputs():
  return {
    38877: np.array([1, 6, 0, 0, 75, 0, 18446744073709551615, 1], dtype='uint64'),
  }

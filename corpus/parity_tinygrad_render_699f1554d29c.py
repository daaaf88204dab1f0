# tinyspec counterexample: parity/tinygrad-render/int64
# seed 0, case 1116, found 2026-12-01 23:31:23 UTC
# output 0 (int64[1, 1, 1]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 0: np.int64(0) against np.int64(1) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'int64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1116
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([-9223372036854775807], dtype=np.int64).reshape((1, 1, 1)))
  v0 = x0 // -9223372036854775808
  return v0,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int64, (), BufferArg(id=4001, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int64, (n0, ), (1, 1, 1, ))
  n2 = UOp(Ops.COPY, dtypes.int64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int64, (), -9223372036854775808)
  n4 = UOp(Ops.RESHAPE, dtypes.int64, (n3, ), (1, 1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.int64, (n4, ), ())
  n6 = UOp(Ops.MOD, dtypes.int64, (n2, n5, ), None)
  n7 = UOp(Ops.CONST, dtypes.int64, (), 0)
  n8 = UOp(Ops.RESHAPE, dtypes.int64, (n7, ), (1, 1, 1, ))
  n9 = UOp(Ops.EXPAND, dtypes.int64, (n8, ), ())
  n10 = UOp(Ops.CMPNE, dtypes.bool, (n6, n9, ), None)
  n11 = UOp(Ops.CMPLT, dtypes.bool, (n6, n9, ), None)
  n12 = UOp(Ops.CMPLT, dtypes.bool, (n5, n9, ), None)
  n13 = UOp(Ops.CMPNE, dtypes.bool, (n11, n12, ), None)
  n14 = UOp(Ops.AND, dtypes.bool, (n10, n13, ), None)
  n15 = UOp(Ops.IDIV, dtypes.int64, (n2, n5, ), None)
  n16 = UOp(Ops.CONST, dtypes.int64, (), 1)
  n17 = UOp(Ops.RESHAPE, dtypes.int64, (n16, ), (1, 1, 1, ))
  n18 = UOp(Ops.EXPAND, dtypes.int64, (n17, ), ())
  n19 = UOp(Ops.SUB, dtypes.int64, (n15, n18, ), None)
  n20 = UOp(Ops.WHERE, dtypes.int64, (n14, n19, n15, ), None)
  n21 = UOp(Ops.SINK, dtypes.void, (n20, ), None)
  return n21


def inputs():
  return {
    4001: np.array([-9223372036854775807], dtype='int64'),
  }

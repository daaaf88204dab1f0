# tinyspec counterexample: spec/tinygrad-kernel_graph/kernel.shift_count
# seed 0, case 1752, found 2026-12-01 23:35:28 UTC
# [KERNEL] kernel.shift_count: SHR of int32 by a count in [46, 46], never in [0, 32); at KERNEL a shift count is within the width for some value
#     at root.src[1].src[1].src[0].src[0].src[1].src[0] (SHR int32)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'tinygrad-kernel_graph', 'kernel.shift_count')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1752
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0], dtype=np.int64).reshape((1, 1, 1)))
  v4 = x1 % -7
  v5 = v4 >> 46
  return v5,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int64, (), BufferArg(id=6332, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int64, (n0, ), (1, 1, 1, ))
  n2 = UOp(Ops.COPY, dtypes.int64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int64, (), -7)
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
  n15 = UOp(Ops.ADD, dtypes.int64, (n6, n5, ), None)
  n16 = UOp(Ops.WHERE, dtypes.int64, (n14, n15, n6, ), None)
  n17 = UOp(Ops.CONST, dtypes.int64, (), 46)
  n18 = UOp(Ops.RESHAPE, dtypes.int64, (n17, ), (1, 1, 1, ))
  n19 = UOp(Ops.EXPAND, dtypes.int64, (n18, ), ())
  n20 = UOp(Ops.SHR, dtypes.int64, (n16, n19, ), None)
  n21 = UOp(Ops.SINK, dtypes.void, (n20, ), None)
  return n21


def inputs():
  return {
    6332: np.array([0], dtype='int64'),
  }

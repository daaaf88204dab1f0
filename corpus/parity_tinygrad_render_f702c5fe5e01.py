# tinyspec counterexample: parity/tinygrad-render/uint64
# seed 0, case 3634, found 2026-12-01 23:44:25 UTC
# output 0 (uint64[1, 3]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 2: np.uint64(96) against np.uint64(65632) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3634
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 98], dtype=np.uint16).reshape((1, 3)))
  v2 = x0 - 2
  v4 = v2.cast(dtypes.uint64)
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=11608, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint16, (n0, ), (1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint16, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint16, (), 2)
  n4 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n5 = UOp(Ops.MUL, dtypes.uint16, (n3, n4, ), None)
  n6 = UOp(Ops.RESHAPE, dtypes.uint16, (n5, ), (1, ))
  n7 = UOp(Ops.EXPAND, dtypes.uint16, (n6, ), (3, ))
  n8 = UOp(Ops.PERMUTE, dtypes.uint16, (n7, ), (1, 0, ))
  n9 = UOp(Ops.ADD, dtypes.uint16, (n2, n8, ), None)
  n10 = UOp(Ops.CAST, dtypes.uint64, (n9, ), None)
  n11 = UOp(Ops.SINK, dtypes.void, (n10, ), None)
  return n11


def inputs():
  return {
    11608: np.array([0, 0, 98], dtype='uint16'),
  }

# tinyspec counterexample: parity/tinygrad-render/uint8
# seed 0, case 3131, found 2026-12-01 23:41:22 UTC
# output 0 (uint8[1, 2]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 1: np.uint8(63) against np.uint8(255) (1 of 2 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3131
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint8).reshape((1, 2)))
  v0 = -x0
  v2 = v0 >> 2
  return v2,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=10542, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (1, 0, ))
  n7 = UOp(Ops.MUL, dtypes.uint8, (n2, n6, ), None)
  n8 = UOp(Ops.CONST, dtypes.uint8, (), 2)
  n9 = UOp(Ops.RESHAPE, dtypes.uint8, (n8, ), (1, ))
  n10 = UOp(Ops.EXPAND, dtypes.uint8, (n9, ), (2, ))
  n11 = UOp(Ops.PERMUTE, dtypes.uint8, (n10, ), (1, 0, ))
  n12 = UOp(Ops.SHR, dtypes.uint8, (n7, n11, ), None)
  n13 = UOp(Ops.SINK, dtypes.void, (n12, ), None)
  return n13


def inputs():
  return {
    10542: np.array([0, 1], dtype='uint8'),
  }

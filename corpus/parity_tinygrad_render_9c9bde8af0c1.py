# tinyspec counterexample: parity/tinygrad-render/uint16
# seed 0, case 2508, found 2026-12-01 23:38:46 UTC
# output 0 (uint16[3]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 2: np.uint16(389) against np.uint16(33157) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'uint16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 2508
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0, 0, 33157], dtype=np.uint16).reshape((1, 3)))
  v0 = x1.max(0)
  v1 = x1.max(0)
  v2 = v1 + v0
  v3 = v2 >> 1
  return v3,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=8614, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint16, (n0, ), (1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint16, (n1, ), 'CPU')
  n3 = UOp(Ops.RESHAPE, dtypes.uint16, (n2, ), (3, ))
  n4 = UOp(Ops.ADD, dtypes.uint16, (n3, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint16, (), 1)
  n6 = UOp(Ops.EXPAND, dtypes.uint16, (n5, ), (3, ))
  n7 = UOp(Ops.SHR, dtypes.uint16, (n4, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    8614: np.array([0, 0, 33157], dtype='uint16'),
  }

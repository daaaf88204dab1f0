# tinyspec counterexample: parity/tinygrad-codegen/uint32
# seed 0, case 256, found 2026-12-01 23:24:25 UTC
# output 0 (uint32[1, 1, 3]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 2: np.uint32(0) against np.uint32(4294967295) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-codegen', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 256
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 11], dtype=np.uint32).reshape((1, 1, 3)))
  v4 = x0 // -2
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=1097, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint32, (n0, ), (1, 1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint32, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint32, (), 4294967294)
  n4 = UOp(Ops.RESHAPE, dtypes.uint32, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint32, (n4, ), (3, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint32, (n5, ), (1, 2, 0, ))
  n7 = UOp(Ops.IDIV, dtypes.uint32, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    1097: np.array([0, 0, 11], dtype='uint32'),
  }

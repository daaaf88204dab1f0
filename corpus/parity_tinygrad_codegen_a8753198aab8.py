# tinyspec counterexample: parity/tinygrad-codegen/uint8
# seed 0, case 747, found 2026-12-01 23:27:55 UTC
# output 0 (uint8[1, 3]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 2: np.uint8(18) against np.uint8(16) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-codegen', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 747
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 18], dtype=np.uint8).reshape((1, 3)))
  v4 = x0 % -2
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=2707, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 254)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (3, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (1, 0, ))
  n7 = UOp(Ops.MOD, dtypes.uint8, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    2707: np.array([0, 0, 18], dtype='uint8'),
  }

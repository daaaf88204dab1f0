# tinyspec counterexample: parity/tinygrad-codegen/uint64
# seed 0, case 890, found 2026-12-01 23:29:26 UTC
# output 0 (uint64[1, 3]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 2: np.uint64(0) against np.uint64(18446744073709551615) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-codegen', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 890
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 1003815933380876847], dtype=np.uint64).reshape((1, 3)))
  v1 = x0 // -2
  return v1,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=3257, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint64, (n4, ), (3, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint64, (n5, ), (1, 0, ))
  n7 = UOp(Ops.IDIV, dtypes.uint64, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    3257: np.array([0, 0, 1003815933380876847], dtype='uint64'),
  }

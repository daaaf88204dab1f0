# tinyspec counterexample: parity-literal-policy/tinygrad-codegen/weak-literal
# seed 0, case 3289, found 2026-12-01 23:42:07 UTC
# output 0 (uint16[1]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.uint16(0) against np.uint16(65535) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-literal-policy', 'tinygrad-codegen', 'weak-literal')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3289
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1], dtype=np.uint16).reshape((1,)))
  v5 = x0 // -2
  return v5,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=10497, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65534)
  n3 = UOp(Ops.RESHAPE, dtypes.uint16, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.uint16, (n3, ), ())
  n5 = UOp(Ops.IDIV, dtypes.uint16, (n1, n4, ), None)
  n6 = UOp(Ops.SINK, dtypes.void, (n5, ), None)
  return n6


def inputs():
  return {
    10497: np.array([1], dtype='uint16'),
  }

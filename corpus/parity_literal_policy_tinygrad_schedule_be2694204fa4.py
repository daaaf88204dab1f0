# tinyspec counterexample: parity-literal-policy/tinygrad-schedule/weak-literal
# seed 0, case 40, found 2026-12-01 23:22:04 UTC
# output 0 (uint64[1, 1, 1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint64(18446744073709551615) against np.uint64(0) (1 of 1 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-literal-policy', 'tinygrad-schedule', 'weak-literal')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 40
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0], dtype=np.uint64).reshape((1, 1, 1)))
  v0 = x0.maximum(-1)
  return v0,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=196, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (1, 1, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (1, 1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint64, (n4, ), ())
  n6 = UOp(Ops.MAX, dtypes.uint64, (n2, n5, ), None)
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    196: np.array([0], dtype='uint64'),
  }

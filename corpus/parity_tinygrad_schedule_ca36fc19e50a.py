# tinyspec counterexample: parity/tinygrad-schedule/uint64
# seed 0, case 4014, found 2026-12-01 23:46:30 UTC
# output 0 (uint64[2, 3]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 5: np.uint64(18446744073709551614) against np.uint64(18446744073709551615) (1 of 6 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-schedule', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 4014
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 67, 0, 47, 18446744073709551615], dtype=np.uint64).reshape((2, 3)))
  v5 = x0.minimum(-2)
  return v5,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=12755, size=6, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (2, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n4 = UOp(Ops.EXPAND, dtypes.uint64, (n3, ), (2, 3, ))
  n5 = UOp(Ops.XOR, dtypes.uint64, (n2, n4, ), None)
  n6 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n7 = UOp(Ops.XOR, dtypes.uint64, (n6, n3, ), None)
  n8 = UOp(Ops.EXPAND, dtypes.uint64, (n7, ), (2, 3, ))
  n9 = UOp(Ops.MAX, dtypes.uint64, (n5, n8, ), None)
  n10 = UOp(Ops.XOR, dtypes.uint64, (n9, n4, ), None)
  n11 = UOp(Ops.SINK, dtypes.void, (n10, ), None)
  return n11


def inputs():
  return {
    12755: np.array([0, 0, 67, 0, 47, 18446744073709551615], dtype='uint64'),
  }

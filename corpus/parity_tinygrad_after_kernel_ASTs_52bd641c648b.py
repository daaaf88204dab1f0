# tinyspec counterexample: parity/tinygrad-after-kernel-ASTs/uint64
# seed 0, case 890, found 2026-12-01 18:39:15 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (0, 1): tinyspec np.uint64(0), tinygrad np.uint64(18446744073709551615) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-kernel-ASTs', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 890
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint64).reshape((1, 2)))
  v1 = x0 // -2
  return v1,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=3826, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint64, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint64, (n5, ), (1, 0, ))
  n7 = UOp(Ops.IDIV, dtypes.uint64, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    3826: np.array([0, 1], dtype='uint64'),
  }

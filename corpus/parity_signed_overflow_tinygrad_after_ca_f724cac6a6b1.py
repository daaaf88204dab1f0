# tinyspec counterexample: parity-signed-overflow/tinygrad-after-callified/int64
# seed 0, case 10741, found 2026-12-01 18:46:23 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (1, 0, 2): tinyspec np.int64(-1), tinygrad np.int64(-1892231290133976332) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-callified', 'int64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 10741
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([24, 1, 13, 84, 0, 16554512783575575284], dtype=np.uint64).reshape((2, 1, 3)))
  v1 = x1.cast(dtypes.int64)
  v2 = v1.maximum(-1)
  return v2,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=36699, size=6, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (2, 1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CAST, dtypes.int64, (n2, ), None)
  n4 = UOp(Ops.CONST, dtypes.int64, (), -1)
  n5 = UOp(Ops.RESHAPE, dtypes.int64, (n4, ), (1, ))
  n6 = UOp(Ops.EXPAND, dtypes.int64, (n5, ), (2, 3, ))
  n7 = UOp(Ops.PERMUTE, dtypes.int64, (n6, ), (0, 2, 1, ))
  n8 = UOp(Ops.MAX, dtypes.int64, (n3, n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    36699: np.array([24, 1, 13, 84, 0, 16554512783575575284], dtype='uint64'),
  }

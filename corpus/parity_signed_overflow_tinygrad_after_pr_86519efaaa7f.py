# tinyspec counterexample: parity-signed-overflow/tinygrad-after-programs/int32
# seed 0, case 2814, found 2026-12-01 18:40:46 UTC
# tinyspec's evaluator on tinygrad's programs: output 0 differs at (0, 2): tinyspec np.int32(-768439), tinygrad np.int32(1328713)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-programs', 'int32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 2814
PROGRAM = '''\
def program():
  x2 = Tensor(np.array([0, 0, 355223442], dtype=np.int32).reshape((1, 3)))
  v2 = x2 * x2
  v3 = v2 >> 11
  return v3,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg(id=12622, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int32, (n0, ), (1, 3, ))
  n2 = UOp(Ops.COPY, dtypes.int32, (n1, ), 'CPU')
  n3 = UOp(Ops.MUL, dtypes.int32, (n2, n2, ), None)
  n4 = UOp(Ops.CONST, dtypes.int32, (), 11)
  n5 = UOp(Ops.RESHAPE, dtypes.int32, (n4, ), (1, ))
  n6 = UOp(Ops.EXPAND, dtypes.int32, (n5, ), (3, ))
  n7 = UOp(Ops.PERMUTE, dtypes.int32, (n6, ), (1, 0, ))
  n8 = UOp(Ops.SHR, dtypes.int32, (n3, n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    12622: np.array([0, 0, 355223442], dtype='int32'),
  }

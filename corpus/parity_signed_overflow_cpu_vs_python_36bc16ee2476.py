# tinyspec counterexample: parity-signed-overflow/cpu-vs-python/int64
# seed 0, case 1752, found 2026-12-01 18:39:52 UTC
# output 0 (int64[1, 3, 1]): PYTHON against CPU: element 0: np.int64(-1) against np.int64(-2) (2 of 3 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'cpu-vs-python', 'int64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1752
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([90, 63, -9223372036854775807], dtype=np.int64).reshape((1, 3, 1)))
  v3 = x1 << 4
  v4 = v3 % -7
  v5 = v4 >> 46
  return v5,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int64, (), BufferArg(id=8728, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int64, (n0, ), (1, 3, 1, ))
  n2 = UOp(Ops.COPY, dtypes.int64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int64, (), 4)
  n4 = UOp(Ops.RESHAPE, dtypes.int64, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.int64, (n4, ), (3, ))
  n6 = UOp(Ops.PERMUTE, dtypes.int64, (n5, ), (1, 0, 2, ))
  n7 = UOp(Ops.SHL, dtypes.int64, (n2, n6, ), None)
  n8 = UOp(Ops.CONST, dtypes.int64, (), -7)
  n9 = UOp(Ops.RESHAPE, dtypes.int64, (n8, ), (1, 1, ))
  n10 = UOp(Ops.EXPAND, dtypes.int64, (n9, ), (3, ))
  n11 = UOp(Ops.PERMUTE, dtypes.int64, (n10, ), (1, 0, 2, ))
  n12 = UOp(Ops.MOD, dtypes.int64, (n7, n11, ), None)
  n13 = UOp(Ops.CONST, dtypes.int64, (), 0)
  n14 = UOp(Ops.RESHAPE, dtypes.int64, (n13, ), (1, 1, ))
  n15 = UOp(Ops.EXPAND, dtypes.int64, (n14, ), (3, ))
  n16 = UOp(Ops.PERMUTE, dtypes.int64, (n15, ), (1, 0, 2, ))
  n17 = UOp(Ops.CMPNE, dtypes.bool, (n12, n16, ), None)
  n18 = UOp(Ops.CMPLT, dtypes.bool, (n12, n16, ), None)
  n19 = UOp(Ops.CMPLT, dtypes.bool, (n11, n16, ), None)
  n20 = UOp(Ops.CMPNE, dtypes.bool, (n18, n19, ), None)
  n21 = UOp(Ops.AND, dtypes.bool, (n17, n20, ), None)
  n22 = UOp(Ops.ADD, dtypes.int64, (n12, n11, ), None)
  n23 = UOp(Ops.WHERE, dtypes.int64, (n21, n22, n12, ), None)
  n24 = UOp(Ops.CONST, dtypes.int64, (), 46)
  n25 = UOp(Ops.RESHAPE, dtypes.int64, (n24, ), (1, 1, ))
  n26 = UOp(Ops.EXPAND, dtypes.int64, (n25, ), (3, ))
  n27 = UOp(Ops.PERMUTE, dtypes.int64, (n26, ), (1, 0, 2, ))
  n28 = UOp(Ops.SHR, dtypes.int64, (n23, n27, ), None)
  n29 = UOp(Ops.SINK, dtypes.void, (n28, ), None)
  return n29


def inputs():
  return {
    8728: np.array([90, 63, -9223372036854775807], dtype='int64'),
  }

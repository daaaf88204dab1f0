# tinyspec counterexample: parity-signed-overflow/cpu-vs-python/bool
# seed 0, case 140, found 2026-12-01 18:38:52 UTC
# output 0 (bool[1, 2]): PYTHON against CPU: element 1: np.True_ against np.False_ (1 of 2 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'cpu-vs-python', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 140
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, -128], dtype=np.int8).reshape((1, 2)))
  v4 = x0 * x0
  v5 = (v4 < 127)
  return v5,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int8, (), BufferArg(id=1020, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int8, (n0, ), (1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.int8, (n1, ), 'CPU')
  n3 = UOp(Ops.MUL, dtypes.int8, (n2, n2, ), None)
  n4 = UOp(Ops.CONST, dtypes.int8, (), 127)
  n5 = UOp(Ops.RESHAPE, dtypes.int8, (n4, ), (1, ))
  n6 = UOp(Ops.EXPAND, dtypes.int8, (n5, ), (2, ))
  n7 = UOp(Ops.PERMUTE, dtypes.int8, (n6, ), (1, 0, ))
  n8 = UOp(Ops.CMPLT, dtypes.bool, (n3, n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    1020: np.array([0, -128], dtype='int8'),
  }

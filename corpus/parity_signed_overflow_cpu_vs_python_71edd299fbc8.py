# tinyspec counterexample: parity-signed-overflow/cpu-vs-python/int8
# seed 0, case 1772, found 2026-12-01 18:39:54 UTC
# output 0 (int8[2, 2, 2]): PYTHON against CPU: element 7: np.int8(-4) against np.int8(4) (1 of 8 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'cpu-vs-python', 'int8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1772
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 0, 0, 0, 0, 0, 127], dtype=np.int8).reshape((2, 2, 2)))
  v0 = x0 + 1
  v1 = v0 >> 5
  return v1,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int8, (), BufferArg(id=7367, size=8, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int8, (n0, ), (2, 2, 2, ))
  n2 = UOp(Ops.COPY, dtypes.int8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int8, (), 1)
  n4 = UOp(Ops.EXPAND, dtypes.int8, (n3, ), (2, 2, 2, ))
  n5 = UOp(Ops.ADD, dtypes.int8, (n2, n4, ), None)
  n6 = UOp(Ops.CONST, dtypes.int8, (), 5)
  n7 = UOp(Ops.EXPAND, dtypes.int8, (n6, ), (2, 2, 2, ))
  n8 = UOp(Ops.SHR, dtypes.int8, (n5, n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    7367: np.array([0, 0, 0, 0, 0, 0, 0, 127], dtype='int8'),
  }

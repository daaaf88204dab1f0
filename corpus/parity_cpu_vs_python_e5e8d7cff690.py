# tinyspec counterexample: parity/cpu-vs-python/uint8
# seed 0, case 778, found 2026-12-01 18:39:12 UTC
# output 0 (uint8[2, 1]): PYTHON against CPU: element 1: np.uint8(0) against np.uint8(174) (1 of 2 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'cpu-vs-python', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 778
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 0, 0, 0, 0], dtype=np.uint8).reshape((2, 3, 1)))
  v2 = -x0
  v3 = v2.max(1)
  return v3,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=3407, size=6, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (2, 3, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (2, 3, ))
  n6 = UOp(Ops.MUL, dtypes.uint8, (n2, n5, ), None)
  n7 = UOp(Ops.PERMUTE, dtypes.uint8, (n6, ), (1, 0, 2, ))
  n8 = UOp(Ops.REDUCE, dtypes.uint8, (n7, ), (Ops.MAX, 1, ))
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    3407: np.array([0, 0, 0, 0, 0, 0], dtype='uint8'),
  }

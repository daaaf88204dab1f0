# tinyspec counterexample: parity/cpu-vs-python/int32
# seed 0, case 7963, found 2026-12-01 18:44:51 UTC
# output 0 (int32[1, 3, 3]): PYTHON against CPU: element 8: np.int32(0) against np.int32(9289) (1 of 9 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'cpu-vs-python', 'int32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 7963
PROGRAM = '''\
@function
def f_v1(p0, p1):
  q0 = p1 // 7
  return q0,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0, 0, 0, 0, 0, 255], dtype=np.uint8).reshape((1, 3, 3)))
  v0 = x0 * x0
  v1, = f_v1(x0, v0)
  v4 = v1.cast(dtypes.int32)
  return v4,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint8, (), ParamArg(slot=1, size=9, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 3, 3, ))
  n2 = UOp(Ops.CONST, dtypes.uint8, (), 7)
  n3 = UOp(Ops.RESHAPE, dtypes.uint8, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.uint8, (n3, ), (3, 3, ))
  n5 = UOp(Ops.PERMUTE, dtypes.uint8, (n4, ), (2, 0, 1, ))
  n6 = UOp(Ops.IDIV, dtypes.uint8, (n1, n5, ), None)
  n7 = UOp(Ops.TUPLE, dtypes.void, (n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=29919, size=9, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.RESHAPE, dtypes.uint8, (n8, ), (1, 3, 3, ))
  n10 = UOp(Ops.COPY, dtypes.uint8, (n9, ), 'CPU')
  n11 = UOp(Ops.MUL, dtypes.uint8, (n10, n10, ), None)
  n12 = UOp(Ops.CALL, dtypes.void, (n7, n10, n11, ), 'f_v1')
  n13 = UOp(Ops.GETTUPLE, dtypes.uint8, (n12, ), 0)
  n14 = UOp(Ops.CAST, dtypes.int32, (n13, ), None)
  n15 = UOp(Ops.SINK, dtypes.void, (n14, ), None)
  return n15


def inputs():
  return {
    29919: np.array([0, 0, 0, 0, 0, 0, 0, 0, 255], dtype='uint8'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-vs-tinyspec/uint64
# seed 0, case 4392, found 2026-12-01 18:42:08 UTC
# output 0 (uint64[4]): tinyspec against CPU: element 3: np.uint64(32766) against np.uint64(0) (1 of 4 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-vs-tinyspec', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 4392
PROGRAM = '''\
@function
def f_v1(p0):
  q0 = p0.cast(dtypes.uint64)
  q1 = p0 * -7
  q2 = q0 % -1
  return q1, q2


def program():
  x2 = Tensor(np.array([0, 0, 0, 32766], dtype=np.int16).reshape((4,)))
  v1, v1_1 = f_v1(x2)
  return v1_1,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int16, (), ParamArg(slot=0, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.CONST, dtypes.int16, (), -7)
  n2 = UOp(Ops.EXPAND, dtypes.int16, (n1, ), (4, ))
  n3 = UOp(Ops.MUL, dtypes.int16, (n0, n2, ), None)
  n4 = UOp(Ops.CAST, dtypes.uint64, (n0, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n6 = UOp(Ops.EXPAND, dtypes.uint64, (n5, ), (4, ))
  n7 = UOp(Ops.MOD, dtypes.uint64, (n4, n6, ), None)
  n8 = UOp(Ops.TUPLE, dtypes.void, (n3, n7, ), None)
  n9 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=17961, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n10 = UOp(Ops.COPY, dtypes.int16, (n9, ), 'CPU')
  n11 = UOp(Ops.CALL, dtypes.void, (n8, n10, ), 'f_v1')
  n12 = UOp(Ops.GETTUPLE, dtypes.uint64, (n11, ), 1)
  n13 = UOp(Ops.SINK, dtypes.void, (n12, ), None)
  return n13


def inputs():
  return {
    17961: np.array([0, 0, 0, 32766], dtype='int16'),
  }

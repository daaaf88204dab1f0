# tinyspec counterexample: parity/tinygrad-vs-tinyspec/uint16
# seed 0, case 452, found 2026-12-01 18:39:00 UTC
# output 0 (uint16[2]): tinyspec against CPU: element 1: np.uint16(0) against np.uint16(65535) (1 of 2 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-vs-tinyspec', 'uint16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 452
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint16).reshape((2,)))
  v1 = x0 // -1
  return v1,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=2101, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), (2, ))
  n4 = UOp(Ops.IDIV, dtypes.uint16, (n1, n3, ), None)
  n5 = UOp(Ops.SINK, dtypes.void, (n4, ), None)
  return n5


def inputs():
  return {
    2101: np.array([0, 1], dtype='uint16'),
  }

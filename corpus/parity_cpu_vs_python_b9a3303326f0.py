# tinyspec counterexample: parity/cpu-vs-python/uint32
# seed 0, case 3385, found 2026-12-01 18:41:10 UTC
# output 0 (uint32[]): PYTHON against CPU: element 0: np.uint32(0) against np.uint32(2554485144) (1 of 1 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'cpu-vs-python', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3385
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0, 0], dtype=np.uint32).reshape((2,)))
  v0 = x1 // -1
  v1 = v0.max(0)
  return v1,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=14876, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint32, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint32, (), 4294967295)
  n3 = UOp(Ops.EXPAND, dtypes.uint32, (n2, ), (2, ))
  n4 = UOp(Ops.IDIV, dtypes.uint32, (n1, n3, ), None)
  n5 = UOp(Ops.REDUCE, dtypes.uint32, (n4, ), (Ops.MAX, 1, ))
  n6 = UOp(Ops.SINK, dtypes.void, (n5, ), None)
  return n6


def inputs():
  return {
    14876: np.array([0, 0], dtype='uint32'),
  }

# tinyspec counterexample: parity/tinygrad-vs-tinyspec/uint32
# seed 0, case 63, found 2026-12-01 18:38:48 UTC
# output 0 (uint32[1]): tinyspec against CPU: element 0: np.uint32(0) against np.uint32(4294967295) (1 of 1 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-vs-tinyspec', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 63
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1], dtype=np.uint32).reshape((1,)))
  v1 = x0 // -1
  return v1,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=524, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint32, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint32, (), 4294967295)
  n3 = UOp(Ops.RESHAPE, dtypes.uint32, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.uint32, (n3, ), ())
  n5 = UOp(Ops.IDIV, dtypes.uint32, (n1, n4, ), None)
  n6 = UOp(Ops.SINK, dtypes.void, (n5, ), None)
  return n6


def inputs():
  return {
    524: np.array([1], dtype='uint32'),
  }

# tinyspec counterexample: parity/tinygrad-vs-tinyspec/bool
# seed 0, case 172, found 2026-12-01 18:38:53 UTC
# output 0 (bool[1, 4, 1]): tinyspec against CPU: element 3: np.False_ against np.True_ (1 of 4 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-vs-tinyspec', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 172
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 0, 255], dtype=np.uint8).reshape((1, 4, 1)))
  v2 = (x0 != -1)
  return v2,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=1208, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 4, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (4, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (1, 0, 2, ))
  n7 = UOp(Ops.CMPNE, dtypes.bool, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    1208: np.array([0, 0, 0, 255], dtype='uint8'),
  }

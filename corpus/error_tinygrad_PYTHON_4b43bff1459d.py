# tinyspec counterexample: error/tinygrad-PYTHON/TypeError
# seed 0, case 814, found 2026-12-01 23:28:46 UTC
# tinygrad on PYTHON raised TypeError: int() argument must be a string, a bytes-like object or a real number, not 'list'
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('error', 'tinygrad-PYTHON', 'TypeError')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 814
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint32).reshape((4, 1)))
  v4 = x1.minimum(0)
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=3099, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint32, (n0, ), (4, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint32, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint32, (), 4294967295)
  n4 = UOp(Ops.RESHAPE, dtypes.uint32, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint32, (n4, ), (4, ))
  n6 = UOp(Ops.XOR, dtypes.uint32, (n2, n5, ), None)
  n7 = UOp(Ops.CONST, dtypes.uint32, (), 0)
  n8 = UOp(Ops.XOR, dtypes.uint32, (n7, n3, ), None)
  n9 = UOp(Ops.RESHAPE, dtypes.uint32, (n8, ), (1, ))
  n10 = UOp(Ops.EXPAND, dtypes.uint32, (n9, ), (4, ))
  n11 = UOp(Ops.MAX, dtypes.uint32, (n6, n10, ), None)
  n12 = UOp(Ops.XOR, dtypes.uint32, (n11, n5, ), None)
  n13 = UOp(Ops.SINK, dtypes.void, (n12, ), None)
  return n13


def inputs():
  return {
    3099: np.array([0, 0, 0, 0], dtype='uint32'),
  }

# tinyspec counterexample: parity/tinygrad-after-programs/uint32
# seed 0, case 3385, found 2026-12-01 18:41:09 UTC
# tinyspec's evaluator on tinygrad's programs: output 1 differs at (): tinyspec np.uint32(0), tinygrad np.uint32(2947186688)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-programs', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3385
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([-32768], dtype=np.int16).reshape((1,)))
  x1 = Tensor(np.array([0, 0, 0], dtype=np.uint32).reshape((3,)))
  v0 = x1 // -1
  v1 = v0.max(0)
  v4 = x0 - -32768
  return v4, v1
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=14814, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.int16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.int16, (), -32768)
  n3 = UOp(Ops.CONST, dtypes.int16, (), -1)
  n4 = UOp(Ops.MUL, dtypes.int16, (n2, n3, ), None)
  n5 = UOp(Ops.RESHAPE, dtypes.int16, (n4, ), (1, ))
  n6 = UOp(Ops.EXPAND, dtypes.int16, (n5, ), ())
  n7 = UOp(Ops.ADD, dtypes.int16, (n1, n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=14815, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.COPY, dtypes.uint32, (n8, ), 'CPU')
  n10 = UOp(Ops.CONST, dtypes.uint32, (), 4294967295)
  n11 = UOp(Ops.EXPAND, dtypes.uint32, (n10, ), (3, ))
  n12 = UOp(Ops.IDIV, dtypes.uint32, (n9, n11, ), None)
  n13 = UOp(Ops.REDUCE, dtypes.uint32, (n12, ), (Ops.MAX, 1, ))
  n14 = UOp(Ops.SINK, dtypes.void, (n7, n13, ), None)
  return n14


def inputs():
  return {
    14814: np.array([-32768], dtype='int16'),
    14815: np.array([0, 0, 0], dtype='uint32'),
  }

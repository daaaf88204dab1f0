# tinyspec counterexample: parity/tinygrad-after-callified/uint8
# seed 0, case 45, found 2026-12-01 18:38:46 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (0, 1): tinyspec np.uint8(1), tinygrad np.uint8(0) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-callified', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 45
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0, 1], dtype=np.uint8).reshape((1, 2)))
  v2 = x1 % -1
  return v2,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=207, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (1, 0, ))
  n7 = UOp(Ops.MOD, dtypes.uint8, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    207: np.array([0, 1], dtype='uint8'),
  }

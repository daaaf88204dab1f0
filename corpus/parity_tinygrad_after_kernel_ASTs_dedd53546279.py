# tinyspec counterexample: parity/tinygrad-after-kernel-ASTs/uint32
# seed 0, case 256, found 2026-12-01 18:38:55 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (0, 0, 1): tinyspec np.uint32(0), tinygrad np.uint32(4294967295) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-kernel-ASTs', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 256
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint32).reshape((1, 1, 2)))
  v4 = x0 // -2
  return v4,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=1584, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint32, (n0, ), (1, 1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint32, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint32, (), 4294967294)
  n4 = UOp(Ops.RESHAPE, dtypes.uint32, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint32, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint32, (n5, ), (1, 2, 0, ))
  n7 = UOp(Ops.IDIV, dtypes.uint32, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    1584: np.array([0, 1], dtype='uint32'),
  }

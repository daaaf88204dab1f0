# tinyspec counterexample: parity/tinygrad-after-callified/uint64
# seed 0, case 40, found 2026-12-01 18:38:46 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (0, 0, 0): tinyspec np.uint64(18446744073709551615), tinygrad np.uint64(0) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-callified', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 40
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0], dtype=np.uint64).reshape((1, 1, 1)))
  v0 = x0.maximum(-1)
  return v0,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=226, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (1, 1, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (1, 1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint64, (n4, ), ())
  n6 = UOp(Ops.MAX, dtypes.uint64, (n2, n5, ), None)
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    226: np.array([0], dtype='uint64'),
  }

# tinyspec counterexample: parity/tinygrad-after-callified/uint16
# seed 0, case 452, found 2026-12-01 18:38:59 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (1,): tinyspec np.uint16(0), tinygrad np.uint16(65535) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-callified', 'uint16')
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
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=2036, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), (2, ))
  n4 = UOp(Ops.IDIV, dtypes.uint16, (n1, n3, ), None)
  n5 = UOp(Ops.SINK, dtypes.void, (n4, ), None)
  return n5


def inputs():
  return {
    2036: np.array([0, 1], dtype='uint16'),
  }

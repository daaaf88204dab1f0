# tinyspec counterexample: parity/tinygrad-after-programs/uint8
# seed 0, case 1056, found 2026-12-01 18:39:18 UTC
# tinyspec's evaluator on tinygrad's programs: output 0 differs at (1,): tinyspec np.uint8(1), tinygrad np.uint8(0) (the callified, kernel ASTs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-programs', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1056
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint8).reshape((2,)))
  v0 = x0 * 128
  v4 = -v0
  v5 = v0 - v4
  return v5,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=5586, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint8, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint8, (), 128)
  n3 = UOp(Ops.EXPAND, dtypes.uint8, (n2, ), (2, ))
  n4 = UOp(Ops.MUL, dtypes.uint8, (n1, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n6 = UOp(Ops.EXPAND, dtypes.uint8, (n5, ), (2, ))
  n7 = UOp(Ops.MUL, dtypes.uint8, (n4, n6, ), None)
  n8 = UOp(Ops.MUL, dtypes.uint8, (n7, n6, ), None)
  n9 = UOp(Ops.ADD, dtypes.uint8, (n4, n8, ), None)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    5586: np.array([0, 1], dtype='uint8'),
  }

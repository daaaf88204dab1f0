# tinyspec counterexample: parity-signed-overflow/tinygrad-after-programs/uint8
# seed 0, case 506, found 2026-12-01 18:39:02 UTC
# tinyspec's evaluator on tinygrad's programs: output 0 differs at (2,): tinyspec np.uint8(9), tinygrad np.uint8(45)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-programs', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 506
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 5], dtype=np.uint8).reshape((3,)))
  x1 = Tensor(np.array([0, -20316], dtype=np.int16).reshape((2,)))
  v1 = x0 << 6
  v2 = x1 << 12
  v3 = v1 // 7
  return v3, v2
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=2713, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint8, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint8, (), 6)
  n3 = UOp(Ops.EXPAND, dtypes.uint8, (n2, ), (3, ))
  n4 = UOp(Ops.SHL, dtypes.uint8, (n1, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint8, (), 7)
  n6 = UOp(Ops.EXPAND, dtypes.uint8, (n5, ), (3, ))
  n7 = UOp(Ops.IDIV, dtypes.uint8, (n4, n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=2714, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.COPY, dtypes.int16, (n8, ), 'CPU')
  n10 = UOp(Ops.CONST, dtypes.int16, (), 12)
  n11 = UOp(Ops.EXPAND, dtypes.int16, (n10, ), (2, ))
  n12 = UOp(Ops.SHL, dtypes.int16, (n9, n11, ), None)
  n13 = UOp(Ops.SINK, dtypes.void, (n7, n12, ), None)
  return n13


def inputs():
  return {
    2713: np.array([0, 0, 5], dtype='uint8'),
    2714: np.array([0, -20316], dtype='int16'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-after-programs/uint32
# seed 0, case 8285, found 2026-12-01 18:45:01 UTC
# tinyspec's evaluator on tinygrad's programs: output 0 differs at (0, 1): tinyspec np.uint32(4294967208), tinygrad np.uint32(2883496)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-programs', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 8285
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 88], dtype=np.int16).reshape((1, 2)))
  v2 = x0 * 32767
  v4 = v2.cast(dtypes.uint32)
  return v4,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=28946, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int16, (n0, ), (1, 2, ))
  n2 = UOp(Ops.COPY, dtypes.int16, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int16, (), 32767)
  n4 = UOp(Ops.RESHAPE, dtypes.int16, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.int16, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.int16, (n5, ), (1, 0, ))
  n7 = UOp(Ops.MUL, dtypes.int16, (n2, n6, ), None)
  n8 = UOp(Ops.CAST, dtypes.uint32, (n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    28946: np.array([0, 88], dtype='int16'),
  }

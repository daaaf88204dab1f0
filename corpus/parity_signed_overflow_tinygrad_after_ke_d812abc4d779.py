# tinyspec counterexample: parity-signed-overflow/tinygrad-after-kernel-ASTs/int16
# seed 0, case 9290, found 2026-12-01 18:45:37 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (0,): tinyspec np.int16(15790), tinygrad np.int16(0) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-kernel-ASTs', 'int16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 9290
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, -24873], dtype=np.int16).reshape((2,)))
  v1 = x0 + x0
  v3 = v1.max(0, keepdim=True)
  return v3,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=32368, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.int16, (n0, ), 'CPU')
  n2 = UOp(Ops.ADD, dtypes.int16, (n1, n1, ), None)
  n3 = UOp(Ops.REDUCE, dtypes.int16, (n2, ), (Ops.MAX, 1, ))
  n4 = UOp(Ops.RESHAPE, dtypes.int16, (n3, ), (1, ))
  n5 = UOp(Ops.SINK, dtypes.void, (n4, ), None)
  return n5


def inputs():
  return {
    32368: np.array([0, -24873], dtype='int16'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-after-kernel-ASTs/int32
# seed 0, case 8927, found 2026-12-01 18:45:23 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (2,): tinyspec np.int32(1158421740), tinygrad np.int32(0) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-kernel-ASTs', 'int32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 8927
PROGRAM = '''\
@function
def f_v5(p0):
  q0 = p0.max(1)
  q1 = p0.pad(((2, 1), (0, 1)))
  q2 = q1 + 2147483646
  return q1, q0


def program():
  x1 = Tensor(np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1568272778], dtype=np.int32).reshape((3, 4)))
  v2 = x1 + x1
  v5, v5_1 = f_v5(v2)
  return v5_1,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int32, (), ParamArg(slot=0, size=12, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int32, (n0, ), (3, 4, ))
  n2 = UOp(Ops.PAD, dtypes.int32, (n1, ), ((2, 6, ), (0, 5, ), ))
  n3 = UOp(Ops.PERMUTE, dtypes.int32, (n1, ), (1, 0, ))
  n4 = UOp(Ops.REDUCE, dtypes.int32, (n3, ), (Ops.MAX, 1, ))
  n5 = UOp(Ops.TUPLE, dtypes.void, (n2, n4, ), None)
  n6 = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg(id=31254, size=12, device='NPY', addrspace=AddrSpace.GLOBAL))
  n7 = UOp(Ops.RESHAPE, dtypes.int32, (n6, ), (3, 4, ))
  n8 = UOp(Ops.COPY, dtypes.int32, (n7, ), 'CPU')
  n9 = UOp(Ops.ADD, dtypes.int32, (n8, n8, ), None)
  n10 = UOp(Ops.CALL, dtypes.void, (n5, n9, ), 'f_v5')
  n11 = UOp(Ops.GETTUPLE, dtypes.int32, (n10, ), 1)
  n12 = UOp(Ops.SINK, dtypes.void, (n11, ), None)
  return n12


def inputs():
  return {
    31254: np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1568272778], dtype='int32'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-after-kernel-ASTs/int64
# seed 0, case 6387, found 2026-12-01 18:43:54 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (1, 0): tinyspec np.int64(0), tinygrad np.int64(-8) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-kernel-ASTs', 'int64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 6387
PROGRAM = '''\
@function
def f_v0(p0):
  q0 = p0 + p0
  q1 = q0 + q0
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0, 0, 0, -14, -38, 0, 0, 9223372036854775806, -26], dtype=np.int64).reshape((2, 3, 2)))
  v0, = f_v0(x0)
  v1 = v0.max(1)
  return v1,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int64, (), ParamArg(slot=0, size=12, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int64, (n0, ), (2, 3, 2, ))
  n2 = UOp(Ops.ADD, dtypes.int64, (n1, n1, ), None)
  n3 = UOp(Ops.ADD, dtypes.int64, (n2, n2, ), None)
  n4 = UOp(Ops.TUPLE, dtypes.void, (n3, ), None)
  n5 = UOp(Ops.BUFFER, dtypes.int64, (), BufferArg(id=24043, size=12, device='NPY', addrspace=AddrSpace.GLOBAL))
  n6 = UOp(Ops.RESHAPE, dtypes.int64, (n5, ), (2, 3, 2, ))
  n7 = UOp(Ops.COPY, dtypes.int64, (n6, ), 'CPU')
  n8 = UOp(Ops.CALL, dtypes.void, (n4, n7, ), 'f_v0')
  n9 = UOp(Ops.GETTUPLE, dtypes.int64, (n8, ), 0)
  n10 = UOp(Ops.PERMUTE, dtypes.int64, (n9, ), (1, 0, 2, ))
  n11 = UOp(Ops.REDUCE, dtypes.int64, (n10, ), (Ops.MAX, 1, ))
  n12 = UOp(Ops.SINK, dtypes.void, (n11, ), None)
  return n12


def inputs():
  return {
    24043: np.array([0, 0, 0, 0, 0, 0, -14, -38, 0, 0, 9223372036854775806, -26], dtype='int64'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-after-kernel-ASTs/uint64
# seed 0, case 13480, found 2026-12-01 18:48:09 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (0, 0): tinyspec np.uint64(1), tinygrad np.uint64(18446744073709551615) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-kernel-ASTs', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 13480
PROGRAM = '''\
@function
def f_v0(p0, p1):
  q0 = p0 << 6
  q1 = q0 - 3
  q2 = p0.permute((1, 0))
  return q2, q1


def program():
  x0 = Tensor(np.array([1, 39, 52, 85], dtype=np.uint64).reshape((2, 2)))
  x1 = Tensor(np.array([1, 18446744073709551615, 55, 93], dtype=np.uint64).reshape((2, 2)))
  x2 = Tensor(np.array([-86, 86, -34, -72], dtype=np.int8).reshape((2, 2)))
  v0, v0_1 = f_v0(x2, x0)
  v1 = x0 & 0
  v2 = x0 ^ -2
  v3 = x1 % -2
  return v3, v1
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=45541, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (2, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n4 = UOp(Ops.EXPAND, dtypes.uint64, (n3, ), (2, 2, ))
  n5 = UOp(Ops.MOD, dtypes.uint64, (n2, n4, ), None)
  n6 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=45542, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n7 = UOp(Ops.RESHAPE, dtypes.uint64, (n6, ), (2, 2, ))
  n8 = UOp(Ops.COPY, dtypes.uint64, (n7, ), 'CPU')
  n9 = UOp(Ops.CONST, dtypes.uint64, (), 0)
  n10 = UOp(Ops.EXPAND, dtypes.uint64, (n9, ), (2, 2, ))
  n11 = UOp(Ops.AND, dtypes.uint64, (n8, n10, ), None)
  n12 = UOp(Ops.SINK, dtypes.void, (n5, n11, ), None)
  return n12


def inputs():
  return {
    45541: np.array([1, 18446744073709551615, 55, 93], dtype='uint64'),
    45542: np.array([1, 39, 52, 85], dtype='uint64'),
  }

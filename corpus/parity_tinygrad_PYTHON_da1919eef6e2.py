# tinyspec counterexample: parity/tinygrad-PYTHON/uint64
# seed 0, case 4047, found 2026-12-01 23:46:44 UTC
# output 0 (uint64[2]): tinygrad on PYTHON against tinyspec's evaluation of tinygrad's kernel ASTs: element 0: np.uint64(9223372036854775808) against np.uint64(18446744073709551614) (2 of 2 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-PYTHON', 'uint64')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 4047
PROGRAM = '''\
@function
def f_v3(p0, p1):
  q0 = p0.sum(1)
  q1 = q0.pad(((1, 2),))
  q2 = q0 - 2
  return q2, q1


def program():
  x1 = Tensor(np.array([0, 0], dtype=np.uint64).reshape((2, 1)))
  v0 = x1 % -2
  v3, v3_1 = f_v3(v0, v0)
  v4 = v3.maximum(9223372036854775808)
  return v4, v0
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint64, (), ParamArg(slot=0, size=2, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (2, 1, ))
  n2 = UOp(Ops.RESHAPE, dtypes.uint64, (n1, ), (2, ))
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 2)
  n4 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n5 = UOp(Ops.MUL, dtypes.uint64, (n3, n4, ), None)
  n6 = UOp(Ops.EXPAND, dtypes.uint64, (n5, ), (2, ))
  n7 = UOp(Ops.ADD, dtypes.uint64, (n2, n6, ), None)
  n8 = UOp(Ops.PAD, dtypes.uint64, (n2, ), ((1, 5, ), ))
  n9 = UOp(Ops.TUPLE, dtypes.void, (n7, n8, ), None)
  n10 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=12880, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n11 = UOp(Ops.RESHAPE, dtypes.uint64, (n10, ), (2, 1, ))
  n12 = UOp(Ops.COPY, dtypes.uint64, (n11, ), 'CPU')
  n13 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n14 = UOp(Ops.RESHAPE, dtypes.uint64, (n13, ), (1, ))
  n15 = UOp(Ops.EXPAND, dtypes.uint64, (n14, ), (2, ))
  n16 = UOp(Ops.MOD, dtypes.uint64, (n12, n15, ), None)
  n17 = UOp(Ops.CALL, dtypes.void, (n9, n16, ), 'f_v3')
  n18 = UOp(Ops.GETTUPLE, dtypes.uint64, (n17, ), 0)
  n19 = UOp(Ops.CONST, dtypes.uint64, (), 9223372036854775808)
  n20 = UOp(Ops.EXPAND, dtypes.uint64, (n19, ), (2, ))
  n21 = UOp(Ops.MAX, dtypes.uint64, (n18, n20, ), None)
  n22 = UOp(Ops.SINK, dtypes.void, (n21, n16, ), None)
  return n22


def inputs():
  return {
    12880: np.array([0, 0], dtype='uint64'),
  }

# tinyspec counterexample: parity/tinygrad-after-kernel-ASTs/bool
# seed 0, case 7657, found 2026-12-01 18:44:38 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (1, 1, 2): tinyspec np.False_, tinygrad np.True_ (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-after-kernel-ASTs', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 7657
PROGRAM = '''\
@function
def f_v0(p0, p1):
  q0 = (p1 == 32766)
  q1 = p0 % -2
  return q1,


def program():
  x1 = Tensor(np.array([0, 0], dtype=np.int16).reshape((2,)))
  x2 = Tensor(np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], dtype=np.uint64).reshape((2, 2, 3)))
  v0, = f_v0(x2, x1)
  v1 = x2 * v0
  v2 = (v1 == -1)
  return v2,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=28372, size=12, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (2, 2, 3, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.PARAM, dtypes.uint64, (), ParamArg(slot=0, size=12, device='CPU', addrspace=AddrSpace.GLOBAL))
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (2, 2, 3, ))
  n5 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n6 = UOp(Ops.EXPAND, dtypes.uint64, (n5, ), (2, 2, 3, ))
  n7 = UOp(Ops.MOD, dtypes.uint64, (n4, n6, ), None)
  n8 = UOp(Ops.TUPLE, dtypes.void, (n7, ), None)
  n9 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=28373, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n10 = UOp(Ops.COPY, dtypes.int16, (n9, ), 'CPU')
  n11 = UOp(Ops.CALL, dtypes.void, (n8, n2, n10, ), 'f_v0')
  n12 = UOp(Ops.GETTUPLE, dtypes.uint64, (n11, ), 0)
  n13 = UOp(Ops.MUL, dtypes.uint64, (n2, n12, ), None)
  n14 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n15 = UOp(Ops.EXPAND, dtypes.uint64, (n14, ), (2, 2, 3, ))
  n16 = UOp(Ops.CMPNE, dtypes.bool, (n13, n15, ), None)
  n17 = UOp(Ops.CONST, dtypes.bool, (), True)
  n18 = UOp(Ops.EXPAND, dtypes.bool, (n17, ), (2, 2, 3, ))
  n19 = UOp(Ops.CMPNE, dtypes.bool, (n16, n18, ), None)
  n20 = UOp(Ops.SINK, dtypes.void, (n19, ), None)
  return n20


def inputs():
  return {
    28372: np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], dtype='uint64'),
    28373: np.array([0, 0], dtype='int16'),
  }

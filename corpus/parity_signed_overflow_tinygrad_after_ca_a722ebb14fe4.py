# tinyspec counterexample: parity-signed-overflow/tinygrad-after-callified/bool
# seed 0, case 3154, found 2026-12-01 18:41:00 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (0, 0, 0): tinyspec np.True_, tinygrad np.False_ (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-callified', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3154
PROGRAM = '''\
@function
def f_v0(p0):
  q0 = p0.maximum(-32767)
  q1 = p0 - -32768
  q2 = p0 & q0
  return q1, q0


def program():
  x0 = Tensor(np.array([0, 0], dtype=np.int16).reshape((2, 1, 1)))
  v0, v0_1 = f_v0(x0)
  v4 = (v0 < 2)
  return v4,
'''


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int16, (), ParamArg(slot=0, size=2, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int16, (n0, ), (2, 1, 1, ))
  n2 = UOp(Ops.CONST, dtypes.int16, (), -32768)
  n3 = UOp(Ops.CONST, dtypes.int16, (), -1)
  n4 = UOp(Ops.MUL, dtypes.int16, (n2, n3, ), None)
  n5 = UOp(Ops.RESHAPE, dtypes.int16, (n4, ), (1, 1, ))
  n6 = UOp(Ops.EXPAND, dtypes.int16, (n5, ), (2, ))
  n7 = UOp(Ops.ADD, dtypes.int16, (n1, n6, ), None)
  n8 = UOp(Ops.CONST, dtypes.int16, (), -32767)
  n9 = UOp(Ops.RESHAPE, dtypes.int16, (n8, ), (1, 1, ))
  n10 = UOp(Ops.EXPAND, dtypes.int16, (n9, ), (2, ))
  n11 = UOp(Ops.MAX, dtypes.int16, (n1, n10, ), None)
  n12 = UOp(Ops.TUPLE, dtypes.void, (n7, n11, ), None)
  n13 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=11688, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n14 = UOp(Ops.RESHAPE, dtypes.int16, (n13, ), (2, 1, 1, ))
  n15 = UOp(Ops.COPY, dtypes.int16, (n14, ), 'CPU')
  n16 = UOp(Ops.CALL, dtypes.void, (n12, n15, ), 'f_v0')
  n17 = UOp(Ops.GETTUPLE, dtypes.int16, (n16, ), 0)
  n18 = UOp(Ops.CONST, dtypes.int16, (), 2)
  n19 = UOp(Ops.RESHAPE, dtypes.int16, (n18, ), (1, 1, ))
  n20 = UOp(Ops.EXPAND, dtypes.int16, (n19, ), (2, ))
  n21 = UOp(Ops.CMPLT, dtypes.bool, (n17, n20, ), None)
  n22 = UOp(Ops.SINK, dtypes.void, (n21, ), None)
  return n22


def inputs():
  return {
    11688: np.array([0, 0], dtype='int16'),
  }

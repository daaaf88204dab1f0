# tinyspec counterexample: parity-signed-overflow/tinygrad-after-kernel-ASTs/uint32
# seed 0, case 3951, found 2026-12-01 18:41:32 UTC
# tinyspec's evaluator on tinygrad's kernel ASTs: output 0 differs at (1,): tinyspec np.uint32(1), tinygrad np.uint32(4294967295) (the programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-kernel-ASTs', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3951
PROGRAM = '''\
@function
def f_v0(p0, p1):
  q0 = p1.contiguous()
  q1 = q0 * 3
  q2 = p1 * p1
  return q2,


def program():
  x0 = Tensor(np.array([0, 1], dtype=np.uint32).reshape((2,)))
  x1 = Tensor(np.array([0, 0, 0, 214422398], dtype=np.int32).reshape((4,)))
  x2 = Tensor(np.array([0, 0], dtype=np.int32).reshape((1, 2)))
  v0, = f_v0(x2, x1)
  v2 = x0 % -2
  return v2, v0
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=15092, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint32, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint32, (), 4294967294)
  n3 = UOp(Ops.EXPAND, dtypes.uint32, (n2, ), (2, ))
  n4 = UOp(Ops.MOD, dtypes.uint32, (n1, n3, ), None)
  n5 = UOp(Ops.PARAM, dtypes.int32, (), ParamArg(slot=1, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n6 = UOp(Ops.MUL, dtypes.int32, (n5, n5, ), None)
  n7 = UOp(Ops.TUPLE, dtypes.void, (n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg(id=15093, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.RESHAPE, dtypes.int32, (n8, ), (1, 2, ))
  n10 = UOp(Ops.COPY, dtypes.int32, (n9, ), 'CPU')
  n11 = UOp(Ops.BUFFER, dtypes.int32, (), BufferArg(id=15094, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n12 = UOp(Ops.COPY, dtypes.int32, (n11, ), 'CPU')
  n13 = UOp(Ops.CALL, dtypes.void, (n7, n10, n12, ), 'f_v0')
  n14 = UOp(Ops.GETTUPLE, dtypes.int32, (n13, ), 0)
  n15 = UOp(Ops.SINK, dtypes.void, (n4, n14, ), None)
  return n15


def inputs():
  return {
    15092: np.array([0, 1], dtype='uint32'),
    15093: np.array([0, 0], dtype='int32'),
    15094: np.array([0, 0, 0, 214422398], dtype='int32'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-after-callified/uint16
# seed 0, case 11570, found 2026-12-01 18:47:00 UTC
# tinyspec's evaluator on tinygrad's callified: output 0 differs at (0, 0): tinyspec np.uint16(71), tinygrad np.uint16(0) (the kernel ASTs, programs agree with tinygrad's numbers)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-after-callified', 'uint16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 11570
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([71, 43874, 3, 78], dtype=np.uint16).reshape((1, 4)))
  x1 = Tensor(np.array([9223372036854775807, -95, -34, 1], dtype=np.int64).reshape((1, 4)))
  x2 = Tensor(np.array([8578659413997205949, 731108451106380045, -6607653578505921934, -42], dtype=np.int64).reshape((1, 4)))
  v0 = (x2 < x1)
  v1 = x2.max(0)
  v2 = x2 - 4611686018427387904
  v3 = x2.max(1, keepdim=True)
  v4 = v3.reshape((1, 1))
  v5 = x0 % -1
  return v5,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=39492, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint16, (n0, ), (1, 4, ))
  n2 = UOp(Ops.COPY, dtypes.uint16, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n4 = UOp(Ops.RESHAPE, dtypes.uint16, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint16, (n4, ), (4, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint16, (n5, ), (1, 0, ))
  n7 = UOp(Ops.MOD, dtypes.uint16, (n2, n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    39492: np.array([71, 43874, 3, 78], dtype='uint16'),
  }

# tinyspec counterexample: parity-signed-overflow/tinygrad-schedule/undefined
# seed 0, case 1320, found 2026-12-01 23:33:10 UTC
# output 1 (uint64[3, 1, 1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint64(0) against np.uint64(18446744073709551613) (3 of 3 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-schedule', 'undefined')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1320
PROGRAM = '''\
@function
def f_v0(p0):
  q0 = p0 // -1
  q1 = q0.max(1, keepdim=True)
  return q0, q1


def program():
  x0 = Tensor(np.array([7253527247943746899, 3, 902678437773602580, 62, 8, 12425551006358662102], dtype=np.uint64).reshape((3, 2, 1)))
  v0, v0_1 = f_v0(x0)
  v1 = x0.cast(dtypes.int16)
  v2 = v1 >> 4
  v3 = x0 % 18446744073709551614
  return v3, v0_1
'''
REPRODUCES = {'0.14.0': False, 'a9069c17': False}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=4931, size=6, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (3, 2, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint64, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551614)
  n4 = UOp(Ops.RESHAPE, dtypes.uint64, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint64, (n4, ), (3, 2, ))
  n6 = UOp(Ops.MOD, dtypes.uint64, (n2, n5, ), None)
  n7 = UOp(Ops.PARAM, dtypes.uint64, (), ParamArg(slot=0, size=6, device='CPU', addrspace=AddrSpace.GLOBAL))
  n8 = UOp(Ops.RESHAPE, dtypes.uint64, (n7, ), (3, 2, 1, ))
  n9 = UOp(Ops.CONST, dtypes.uint64, (), 18446744073709551615)
  n10 = UOp(Ops.RESHAPE, dtypes.uint64, (n9, ), (1, ))
  n11 = UOp(Ops.EXPAND, dtypes.uint64, (n10, ), (3, 2, ))
  n12 = UOp(Ops.IDIV, dtypes.uint64, (n8, n11, ), None)
  n13 = UOp(Ops.PERMUTE, dtypes.uint64, (n12, ), (1, 0, 2, ))
  n14 = UOp(Ops.REDUCE, dtypes.uint64, (n13, ), (Ops.MAX, 1, ))
  n15 = UOp(Ops.RESHAPE, dtypes.uint64, (n14, ), (3, 1, 1, ))
  n16 = UOp(Ops.TUPLE, dtypes.void, (n12, n15, ), None)
  n17 = UOp(Ops.CALL, dtypes.void, (n16, n2, ), 'f_v0')
  n18 = UOp(Ops.GETTUPLE, dtypes.uint64, (n17, ), 1)
  n19 = UOp(Ops.SINK, dtypes.void, (n6, n18, ), None)
  return n19


def inputs():
  return {
    4931: np.array([7253527247943746899, 3, 902678437773602580, 62, 8, 12425551006358662102], dtype='uint64'),
  }

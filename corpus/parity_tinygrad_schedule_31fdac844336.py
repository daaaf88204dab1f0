# tinyspec counterexample: parity/tinygrad-schedule/uint32
# seed 0, case 164, found 2026-12-01 23:23:23 UTC
# output 0 (uint32[1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint32(1151703907) against np.uint32(7) (1 of 1 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-schedule', 'uint32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 164
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1151703907], dtype=np.uint32).reshape((1,)))
  v1 = x0 % -2
  v5 = v1.maximum(7)
  return v5,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=754, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint32, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint32, (), 4294967294)
  n3 = UOp(Ops.RESHAPE, dtypes.uint32, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.uint32, (n3, ), ())
  n5 = UOp(Ops.MOD, dtypes.uint32, (n1, n4, ), None)
  n6 = UOp(Ops.CONST, dtypes.uint32, (), 7)
  n7 = UOp(Ops.RESHAPE, dtypes.uint32, (n6, ), (1, ))
  n8 = UOp(Ops.EXPAND, dtypes.uint32, (n7, ), ())
  n9 = UOp(Ops.MAX, dtypes.uint32, (n5, n8, ), None)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    754: np.array([1151703907], dtype='uint32'),
  }

# tinyspec counterexample: parity/tinygrad-schedule/uint8
# seed 0, case 242, found 2026-12-01 23:24:14 UTC
# output 0 (uint8[2, 2]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 3: np.uint8(254) against np.uint8(255) (1 of 4 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-schedule', 'uint8')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 242
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 0, 255], dtype=np.uint8).reshape((2, 2)))
  v0 = x0.minimum(-2)
  return v0,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=1007, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (2, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.EXPAND, dtypes.uint8, (n3, ), (2, 2, ))
  n5 = UOp(Ops.XOR, dtypes.uint8, (n2, n4, ), None)
  n6 = UOp(Ops.CONST, dtypes.uint8, (), 254)
  n7 = UOp(Ops.XOR, dtypes.uint8, (n6, n3, ), None)
  n8 = UOp(Ops.EXPAND, dtypes.uint8, (n7, ), (2, 2, ))
  n9 = UOp(Ops.MAX, dtypes.uint8, (n5, n8, ), None)
  n10 = UOp(Ops.XOR, dtypes.uint8, (n9, n4, ), None)
  n11 = UOp(Ops.SINK, dtypes.void, (n10, ), None)
  return n11


def inputs():
  return {
    1007: np.array([0, 0, 0, 255], dtype='uint8'),
  }

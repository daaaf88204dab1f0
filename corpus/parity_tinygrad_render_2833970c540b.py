# tinyspec counterexample: parity/tinygrad-render/float32
# seed 0, case 52, found 2026-12-01 23:22:24 UTC
# output 0 (float32[1, 2, 2]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 3: np.float32(0.0) against np.float32(7680.0) (1 of 4 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'float32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 52
PROGRAM = '''\
def program():
  x1 = Tensor(np.array([0, 0, 0, 120], dtype=np.uint8).reshape((1, 2, 2)))
  v0 = x1 << 6
  v3 = v0.cast(dtypes.float32)
  return v3,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=335, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 2, 2, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 6)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (2, 2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (2, 0, 1, ))
  n7 = UOp(Ops.SHL, dtypes.uint8, (n2, n6, ), None)
  n8 = UOp(Ops.CAST, dtypes.float32, (n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    335: np.array([0, 0, 0, 120], dtype='uint8'),
  }

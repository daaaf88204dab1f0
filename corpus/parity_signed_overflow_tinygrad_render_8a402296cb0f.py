# tinyspec counterexample: parity-signed-overflow/tinygrad-render/undefined
# seed 0, case 100, found 2026-12-01 23:22:52 UTC
# output 0 (int16[1, 3, 1]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 2: np.int16(-16) against np.int16(2032) (1 of 3 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-render', 'undefined')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 100
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0, 127], dtype=np.int8).reshape((1, 3, 1)))
  v3 = x0 << 4
  v4 = v3.cast(dtypes.int16)
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int8, (), BufferArg(id=542, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int8, (n0, ), (1, 3, 1, ))
  n2 = UOp(Ops.COPY, dtypes.int8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.int8, (), 4)
  n4 = UOp(Ops.RESHAPE, dtypes.int8, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.int8, (n4, ), (3, ))
  n6 = UOp(Ops.PERMUTE, dtypes.int8, (n5, ), (1, 0, 2, ))
  n7 = UOp(Ops.SHL, dtypes.int8, (n2, n6, ), None)
  n8 = UOp(Ops.CAST, dtypes.int16, (n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  return n9


def inputs():
  return {
    542: np.array([0, 0, 127], dtype='int8'),
  }

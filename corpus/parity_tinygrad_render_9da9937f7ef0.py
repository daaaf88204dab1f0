# tinyspec counterexample: parity/tinygrad-render/float16
# seed None, case None, found 2026-12-04 21:30:37 UTC
# output 0 (float32[1]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 0: np.float32(1024.0) against np.float32(1024.5) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'float16', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = None
CASE = None
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1024.0], dtype=np.float32).reshape((1,)))
  x1 = Tensor(np.array([0.5], dtype=np.float32).reshape((1,)))
  v0 = x0.cast(dtypes.float16)
  v1 = x1.cast(dtypes.float16)
  v2 = v0 + v1
  v3 = v2.cast(dtypes.float32)
  return v3,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=67, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.float32, (n0, ), 'CPU')
  n2 = UOp(Ops.CAST, dtypes.float16, (n1, ), None)
  n3 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=68, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n4 = UOp(Ops.COPY, dtypes.float32, (n3, ), 'CPU')
  n5 = UOp(Ops.CAST, dtypes.float16, (n4, ), None)
  n6 = UOp(Ops.ADD, dtypes.float16, (n2, n5, ), None)
  n7 = UOp(Ops.CAST, dtypes.float32, (n6, ), None)
  n8 = UOp(Ops.SINK, dtypes.void, (n7, ), None)
  return n8


def inputs():
  return {
    67: np.array([1024.0], dtype='float32'),
    68: np.array([0.5], dtype='float32'),
  }

# tinyspec counterexample: parity/tinygrad-codegen/float8_e4m3fn
# seed None, case None, found 2026-12-04 21:30:37 UTC
# output 0 (float32[1]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.float32(0.1015625) against np.float32(0.099975586) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-codegen', 'float8_e4m3fn', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = None
CASE = None
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0.1], dtype=np.float32).reshape((1,)))
  v0 = x0.cast(dtypes.float8_e4m3fn)
  v1 = v0.cast(dtypes.float32)
  return v1,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=74, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.float32, (n0, ), 'CPU')
  n2 = UOp(Ops.CAST, dtypes.float8_e4m3fn, (n1, ), None)
  n3 = UOp(Ops.CAST, dtypes.float32, (n2, ), None)
  n4 = UOp(Ops.SINK, dtypes.void, (n3, ), None)
  return n4


def inputs():
  return {
    74: np.array([0.10000000149011612], dtype='float32'),
  }

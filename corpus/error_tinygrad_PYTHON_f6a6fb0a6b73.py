# tinyspec counterexample: error/tinygrad-PYTHON/RuntimeError
# seed 2, case 2213, found 2026-12-04 22:18:47 UTC
# tinygrad on PYTHON raised RuntimeError: non-contiguous view is not supported for PYTHON buffer
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('error', 'tinygrad-PYTHON', 'RuntimeError', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 2
CASE = 2213
PROGRAM = '''\
@function
def f_v1(p0):
  q0 = p0.reshape((3, 1))
  return q0,


def program():
  x0 = Tensor(np.array([0, 0, 0], dtype=np.uint32).reshape((1, 3)))
  v0 = x0.contiguous()
  v1, = f_v1(x0)
  v2 = v0.shrink(((0, 1), (1, 3)))
  return v1, v2
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint32, (), ParamArg(slot=0, size=3, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint32, (n0, ), (1, 3, ))
  n2 = UOp(Ops.RESHAPE, dtypes.uint32, (n1, ), (3, 1, ))
  n3 = UOp(Ops.TUPLE, dtypes.void, (n2, ), None)
  n4 = UOp(Ops.BUFFER, dtypes.uint32, (), BufferArg(id=7624, size=3, device='NPY', addrspace=AddrSpace.GLOBAL))
  n5 = UOp(Ops.RESHAPE, dtypes.uint32, (n4, ), (1, 3, ))
  n6 = UOp(Ops.COPY, dtypes.uint32, (n5, ), 'CPU')
  n7 = UOp(Ops.CALL, dtypes.void, (n3, n6, ), 'f_v1')
  n8 = UOp(Ops.GETTUPLE, dtypes.uint32, (n7, ), 0)
  n9 = UOp(Ops.CONTIGUOUS, dtypes.uint32, (n6, ), None)
  n10 = UOp(Ops.SHRINK, dtypes.uint32, (n9, ), ((0, 1, ), (1, 2, ), ))
  n11 = UOp(Ops.SINK, dtypes.void, (n8, n10, ), None)
  return n11


def inputs():
  return {
    7624: np.array([0, 0, 0], dtype='uint32'),
  }

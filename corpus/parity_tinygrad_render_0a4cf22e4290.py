# tinyspec counterexample: parity/tinygrad-render/int32
# seed 2, case 46, found 2026-12-04 22:16:30 UTC
# output 0 (int32[1]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 0: np.int32(80) against np.int32(336) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'int32', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 2
CASE = 46
PROGRAM = '''\
@function
def f_v0(p0, p1):
  q0 = p0 + 254
  q1 = q0.cast(dtypes.int32)
  q2 = q1.contiguous()
  return q0, q2


def program():
  x0 = Tensor(np.array([82], dtype=np.uint8).reshape((1,)))
  x2 = Tensor(np.array([0], dtype=np.uint8).reshape((1,)))
  v0, v0_1 = f_v0(x0, x2)
  return v0_1,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint8, (), ParamArg(slot=0, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.CONST, dtypes.uint8, (), 254)
  n2 = UOp(Ops.RESHAPE, dtypes.uint8, (n1, ), (1, ))
  n3 = UOp(Ops.EXPAND, dtypes.uint8, (n2, ), ())
  n4 = UOp(Ops.ADD, dtypes.uint8, (n0, n3, ), None)
  n5 = UOp(Ops.CAST, dtypes.int32, (n4, ), None)
  n6 = UOp(Ops.CONTIGUOUS, dtypes.int32, (n5, ), None)
  n7 = UOp(Ops.TUPLE, dtypes.void, (n4, n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=418, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.COPY, dtypes.uint8, (n8, ), 'CPU')
  n10 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=419, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n11 = UOp(Ops.COPY, dtypes.uint8, (n10, ), 'CPU')
  n12 = UOp(Ops.CALL, dtypes.void, (n7, n9, n11, ), 'f_v0')
  n13 = UOp(Ops.GETTUPLE, dtypes.int32, (n12, ), 1)
  n14 = UOp(Ops.SINK, dtypes.void, (n13, ), None)
  return n14


def inputs():
  return {
    418: np.array([82], dtype='uint8'),
    419: np.array([0], dtype='uint8'),
  }

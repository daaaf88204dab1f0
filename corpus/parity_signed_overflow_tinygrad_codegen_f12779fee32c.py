# tinyspec counterexample: parity-signed-overflow/tinygrad-codegen/undefined
# seed 0, case 1265, found 2026-12-01 23:32:39 UTC
# output 0 (int8[1, 1]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.int8(0) against np.int8(-92) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'tinygrad-codegen', 'undefined')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 1265
PROGRAM = '''\
@function
def f_v5(p0, p1):
  q0 = p1.max(0, keepdim=True)
  q1 = q0.reshape((1, 1))
  q2 = q0.flip(0)
  return q0, q1


def program():
  x1 = Tensor(np.array([0, 0, 82, 0], dtype=np.int8).reshape((4,)))
  v1 = x1 + x1
  v5, v5_1 = f_v5(x1, v1)
  return v5_1,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.int8, (), ParamArg(slot=1, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.REDUCE, dtypes.int8, (n0, ), (Ops.MAX, 1, ))
  n2 = UOp(Ops.RESHAPE, dtypes.int8, (n1, ), (1, ))
  n3 = UOp(Ops.RESHAPE, dtypes.int8, (n2, ), (1, 1, ))
  n4 = UOp(Ops.TUPLE, dtypes.void, (n2, n3, ), None)
  n5 = UOp(Ops.BUFFER, dtypes.int8, (), BufferArg(id=4611, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n6 = UOp(Ops.COPY, dtypes.int8, (n5, ), 'CPU')
  n7 = UOp(Ops.ADD, dtypes.int8, (n6, n6, ), None)
  n8 = UOp(Ops.CALL, dtypes.void, (n4, n6, n7, ), 'f_v5')
  n9 = UOp(Ops.GETTUPLE, dtypes.int8, (n8, ), 1)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    4611: np.array([0, 0, 82, 0], dtype='int8'),
  }

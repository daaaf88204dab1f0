# tinyspec counterexample: parity/tinygrad-schedule/bool
# seed 0, case 3102, found 2026-12-01 23:41:14 UTC
# output 0 (bool[1, 4]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.False_ against np.True_ (4 of 4 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-schedule', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 3102
PROGRAM = '''\
@function
def f_v1(p0):
  q0 = p0 | -2
  return q0,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((1, 4)))
  v0 = x0 - x0
  v1, = f_v1(v0)
  v5 = (v1 < v0)
  return v5,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint16, (), ParamArg(slot=0, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint16, (n0, ), (1, 4, ))
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65534)
  n3 = UOp(Ops.RESHAPE, dtypes.uint16, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.uint16, (n3, ), (4, ))
  n5 = UOp(Ops.PERMUTE, dtypes.uint16, (n4, ), (1, 0, ))
  n6 = UOp(Ops.OR, dtypes.uint16, (n1, n5, ), None)
  n7 = UOp(Ops.TUPLE, dtypes.void, (n6, ), None)
  n8 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=10390, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n9 = UOp(Ops.RESHAPE, dtypes.uint16, (n8, ), (1, 4, ))
  n10 = UOp(Ops.COPY, dtypes.uint16, (n9, ), 'CPU')
  n11 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n12 = UOp(Ops.RESHAPE, dtypes.uint16, (n11, ), (1, ))
  n13 = UOp(Ops.EXPAND, dtypes.uint16, (n12, ), (4, ))
  n14 = UOp(Ops.PERMUTE, dtypes.uint16, (n13, ), (1, 0, ))
  n15 = UOp(Ops.MUL, dtypes.uint16, (n10, n14, ), None)
  n16 = UOp(Ops.ADD, dtypes.uint16, (n10, n15, ), None)
  n17 = UOp(Ops.CALL, dtypes.void, (n7, n16, ), 'f_v1')
  n18 = UOp(Ops.GETTUPLE, dtypes.uint16, (n17, ), 0)
  n19 = UOp(Ops.CMPLT, dtypes.bool, (n18, n16, ), None)
  n20 = UOp(Ops.SINK, dtypes.void, (n19, ), None)
  return n20


def inputs():
  return {
    10390: np.array([0, 0, 0, 0], dtype='uint16'),
  }

# tinyspec counterexample: parity/tinygrad-schedule/uint16
# seed 0, case 615, found 2026-12-01 23:26:57 UTC
# output 0 (uint16[1]) changes meaning in tinygrad's schedule: callified against kernel ASTs: element 0: np.uint16(256) against np.uint16(0) (1 of 1 differ) (tinyspec, tensor, callified agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-schedule', 'uint16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 615
PROGRAM = '''\
@function
def f_v4(p0, p1):
  q0 = p1.minimum(-2)
  q1 = q0 << 8
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,)))
  x1 = Tensor(np.array([1], dtype=np.uint16).reshape((1,)))
  v2 = x1 % -1
  v3 = (x0 != x1)
  v4, = f_v4(v3, v2)
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint16, (), ParamArg(slot=1, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n2 = UOp(Ops.RESHAPE, dtypes.uint16, (n1, ), (1, ))
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), ())
  n4 = UOp(Ops.XOR, dtypes.uint16, (n0, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint16, (), 65534)
  n6 = UOp(Ops.XOR, dtypes.uint16, (n5, n1, ), None)
  n7 = UOp(Ops.RESHAPE, dtypes.uint16, (n6, ), (1, ))
  n8 = UOp(Ops.EXPAND, dtypes.uint16, (n7, ), ())
  n9 = UOp(Ops.MAX, dtypes.uint16, (n4, n8, ), None)
  n10 = UOp(Ops.XOR, dtypes.uint16, (n9, n3, ), None)
  n11 = UOp(Ops.CONST, dtypes.uint16, (), 8)
  n12 = UOp(Ops.RESHAPE, dtypes.uint16, (n11, ), (1, ))
  n13 = UOp(Ops.EXPAND, dtypes.uint16, (n12, ), ())
  n14 = UOp(Ops.SHL, dtypes.uint16, (n10, n13, ), None)
  n15 = UOp(Ops.TUPLE, dtypes.void, (n14, ), None)
  n16 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=2232, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n17 = UOp(Ops.COPY, dtypes.uint16, (n16, ), 'CPU')
  n18 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=2233, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n19 = UOp(Ops.COPY, dtypes.uint16, (n18, ), 'CPU')
  n20 = UOp(Ops.RESHAPE, dtypes.uint16, (n19, ), ())
  n21 = UOp(Ops.EXPAND, dtypes.uint16, (n20, ), (4, ))
  n22 = UOp(Ops.CMPNE, dtypes.bool, (n17, n21, ), None)
  n23 = UOp(Ops.MOD, dtypes.uint16, (n19, n3, ), None)
  n24 = UOp(Ops.CALL, dtypes.void, (n15, n22, n23, ), 'f_v4')
  n25 = UOp(Ops.GETTUPLE, dtypes.uint16, (n24, ), 0)
  n26 = UOp(Ops.SINK, dtypes.void, (n25, ), None)
  return n26


def inputs():
  return {
    2232: np.array([0, 0, 0, 0], dtype='uint16'),
    2233: np.array([1], dtype='uint16'),
  }

# tinyspec counterexample: parity/tinygrad-render/bool
# seed 0, case 768, found 2026-12-01 23:28:02 UTC
# output 0 (bool[1, 1, 2]) changes meaning in tinygrad's render: programs against tinygrad on CPU: element 1: np.False_ against np.True_ (1 of 2 differ) (tinyspec, tensor, callified, kernel ASTs, programs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-render', 'bool')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 768
PROGRAM = '''\
@function
def f_v3(p0):
  q0 = p0 + p0
  q1 = (p0 < q0)
  return q1,


def program():
  x1 = Tensor(np.array([0, 174], dtype=np.uint8).reshape((1, 1, 2)))
  v3, = f_v3(x1)
  return v3,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint8, (), ParamArg(slot=0, size=2, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 1, 2, ))
  n2 = UOp(Ops.ADD, dtypes.uint8, (n1, n1, ), None)
  n3 = UOp(Ops.CMPLT, dtypes.bool, (n1, n2, ), None)
  n4 = UOp(Ops.TUPLE, dtypes.void, (n3, ), None)
  n5 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=2770, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n6 = UOp(Ops.RESHAPE, dtypes.uint8, (n5, ), (1, 1, 2, ))
  n7 = UOp(Ops.COPY, dtypes.uint8, (n6, ), 'CPU')
  n8 = UOp(Ops.CALL, dtypes.void, (n4, n7, ), 'f_v3')
  n9 = UOp(Ops.GETTUPLE, dtypes.bool, (n8, ), 0)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    2770: np.array([0, 174], dtype='uint8'),
  }

# tinyspec counterexample: parity/tinygrad-PYTHON/uint16
# seed 2, case 89, found 2026-12-04 22:16:34 UTC
# output 0 (uint16[1]): tinygrad on PYTHON against tinyspec's evaluation of tinygrad's kernel ASTs: element 0: np.uint16(11457) against np.uint16(11459) (1 of 1 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-PYTHON', 'uint16', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 2
CASE = 89
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([11459, 0], dtype=np.uint16).reshape((2,)))
  v1 = x0 % -2
  v2 = v1.max(0, keepdim=True)
  return v2,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=668, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65534)
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), (2, ))
  n4 = UOp(Ops.MOD, dtypes.uint16, (n1, n3, ), None)
  n5 = UOp(Ops.REDUCE, dtypes.uint16, (n4, ), (Ops.MAX, 1, ))
  n6 = UOp(Ops.RESHAPE, dtypes.uint16, (n5, ), (1, ))
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    668: np.array([11459, 0], dtype='uint16'),
  }

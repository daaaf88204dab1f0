# tinyspec counterexample: parity/tinygrad-codegen/uint16
# seed 0, case 782, found 2026-12-01 23:28:30 UTC
# output 0 (uint16[]) changes meaning in tinygrad's codegen: kernel ASTs against programs: element 0: np.uint16(65534) against np.uint16(45462) (1 of 1 differ) (tinyspec, tensor, callified, kernel ASTs agree)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'tinygrad-codegen', 'uint16')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 782
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1, 10037], dtype=np.uint16).reshape((2,)))
  v0 = x0 * 65534
  v2 = v0.max(0)
  return v2,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=2976, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.uint16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 65534)
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), (2, ))
  n4 = UOp(Ops.MUL, dtypes.uint16, (n1, n3, ), None)
  n5 = UOp(Ops.REDUCE, dtypes.uint16, (n4, ), (Ops.MAX, 1, ))
  n6 = UOp(Ops.SINK, dtypes.void, (n5, ), None)
  return n6


def inputs():
  return {
    2976: np.array([1, 10037], dtype='uint16'),
  }

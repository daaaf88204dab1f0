# tinyspec counterexample: spec/tinygrad-program/kernel.local_read_after_write
# seed 0, case 778, found 2026-12-01 23:28:23 UTC
# [PROGRAM] kernel.local_read_after_write: LOAD of kernel-local BUFFER 2808 (REG) is ordered after no STORE into it; at PROGRAM a kernel-local buffer is read only after it is written (through AFTER(buffer, the STORE...))
#     at root.src[1].src[9] (LOAD uint8)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'tinygrad-program', 'kernel.local_read_after_write')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 778
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0, 0], dtype=np.uint8).reshape((1, 2, 1)))
  v2 = -x0
  v3 = v2.max(1)
  return v3,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint8, (), BufferArg(id=2809, size=2, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint8, (n0, ), (1, 2, 1, ))
  n2 = UOp(Ops.COPY, dtypes.uint8, (n1, ), 'CPU')
  n3 = UOp(Ops.CONST, dtypes.uint8, (), 255)
  n4 = UOp(Ops.RESHAPE, dtypes.uint8, (n3, ), (1, 1, ))
  n5 = UOp(Ops.EXPAND, dtypes.uint8, (n4, ), (2, ))
  n6 = UOp(Ops.PERMUTE, dtypes.uint8, (n5, ), (1, 0, 2, ))
  n7 = UOp(Ops.MUL, dtypes.uint8, (n2, n6, ), None)
  n8 = UOp(Ops.PERMUTE, dtypes.uint8, (n7, ), (1, 0, 2, ))
  n9 = UOp(Ops.REDUCE, dtypes.uint8, (n8, ), (Ops.MAX, 1, ))
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    2809: np.array([0, 0], dtype='uint8'),
  }

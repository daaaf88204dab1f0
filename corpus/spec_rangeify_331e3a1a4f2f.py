# tinyspec counterexample: spec/rangeify/index_leaf_load
# seed 9, case 303, found 2026-12-04 21:54:33 UTC
# after rule application 4 of rangeify: [KERNEL] kernel.one_device: PARAM slot 0 is on CPU and PARAM slot 0 on CPU:1; at KERNEL a kernel runs on one device (a COPY call moves storage between devices)
#     at root.src[0].src[0].src[0] (PARAM bfloat16)
# Found by the campaign of the tree that added kernel.one_device: a kernel rangeify is still building inside a precompiled call's body reaches that body's PARAM on CPU:1 (an opaque call's arg), not a PARAM of its own, and the rule took it for one. Fixed: the rule holds for built kernels (KERNEL_TABLE), not for those under construction (KERNEL_BUILD_TABLE).
# blamed: rule 'index_leaf_load' of pass rangeify at tinyspec/lower/indexing.py:178, application 4 of 8
#   before:
#     %0 = BUFFER bfloat16 (1,) [] BufferArg(id=2, size=1, device='CPU', addrspace=AddrSpace.GLOBAL, image=None)
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'rangeify', 'index_leaf_load', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': (('unroll', 0, ), ), 'images': True}
BACKENDS = ('reference', 'cpu', )
PER_REWRITE = True
SEED = 9
CASE = 303


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.bfloat16, (), BufferArg(id=2, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.TUPLE, dtypes.void, (n0, ), None)
  n2 = UOp(Ops.PARAM, dtypes.bfloat16, (), ParamArg(slot=0, size=2, device='CPU:1', addrspace=AddrSpace.GLOBAL))
  n3 = UOp(Ops.CALL, dtypes.void, (n1, n2, ), 'f3')
  n4 = UOp(Ops.GETTUPLE, dtypes.bfloat16, (n3, ), 0)
  n5 = UOp(Ops.TUPLE, dtypes.void, (n4, n0, ), None)
  n6 = UOp(Ops.CONST, dtypes.bfloat16, (), 0.0)
  n7 = UOp(Ops.EXPAND, dtypes.bfloat16, (n6, ), (2, 1, ))
  n8 = UOp(Ops.CALL, dtypes.void, (n5, n7, ), 'f4')
  n9 = UOp(Ops.GETTUPLE, dtypes.bfloat16, (n8, ), 1)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  return n10


def inputs():
  return {
    2: np.array([0.0], dtype='bfloat16'),
  }

# tinyspec counterexample: spec/optimize/split_end_ranges
# seed 0, case 7, found 2026-12-01 09:13:58 UTC
# after optimize: [KERNEL] kernel.after_deps: AFTER dependency 0 is an ADD value; at KERNEL AFTER waits for effects or is placed in RANGEs
#     at root.src[0].src[1].src[0].src[0].src[0].src[0].src[0].src[1] (ADD index)
# blamed: rule 'split_end_ranges' of pass optimize at tinyspec/lower/optimize.py:73, application 1 of 1
#   before:
#     %3 = AFTER int8 (1,) [%0, %2]
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'optimize', 'split_end_ranges')
EXPECT = 'passes'
KIND = 'kernel'
OPTIONS = {'callify': 'inline', 'realize': 'minimal', 'opts': (('split', 0, 2),)}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 7


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int8, (), BufferArg(id=2, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.PARAM, dtypes.int8, (), ParamArg(slot=0, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n2 = UOp(Ops.CONST, dtypes.index, (), 6)
  n3 = UOp(Ops.RANGE, dtypes.index, (n2, ), RangeArg(axis=0, kind=AxisType.LOOP))
  n4 = UOp(Ops.AFTER, dtypes.int8, (n1, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.index, (), 0)
  n6 = UOp(Ops.INDEX, dtypes.int8, (n4, n5, ), None)
  n7 = UOp(Ops.CONST, dtypes.int8, (), 0)
  n8 = UOp(Ops.STORE, dtypes.void, (n6, n7, ), None)
  n9 = UOp(Ops.END, dtypes.void, (n8, n3, ), None)
  n10 = UOp(Ops.SINK, dtypes.void, (n9, ), None)
  n11 = UOp(Ops.CALL, dtypes.void, (n10, n0, ), 'rmw0')
  n12 = UOp(Ops.AFTER, dtypes.int8, (n0, n11, ), None)
  n13 = UOp(Ops.SINK, dtypes.void, (n12, ), None)
  return n13


def inputs():
  return {
    2: np.array([0], dtype='int8'),
  }

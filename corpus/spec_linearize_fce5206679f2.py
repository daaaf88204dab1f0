# tinyspec counterexample: spec/linearize/<outside rules>
# seed 1, case 0, found 2026-11-29 15:50:06 UTC
# before any rule application of linearize: [PROGRAM] program.no_index_dtype: CONST has dtype index; at PROGRAM every integer has a concrete dtype (int32 or int64)
#     at root.src[0].src[1].src[0].src[1].src[1] (CONST index)
# blamed: rule '<outside rules>' of pass linearize at tinyspec/lower/linearize.py:159, application 0 of 3
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'linearize', '<outside rules>')
EXPECT = 'passes'
KIND = 'kernel'
OPTIONS = {'callify': 'inline', 'realize': 'minimal', 'opts': None}
BACKENDS = ('reference',)
PER_REWRITE = True
SEED = 1
CASE = 0


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=1, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.PARAM, dtypes.float32, (), ParamArg(slot=0, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n2 = UOp(Ops.CONST, dtypes.index, (), 0)
  n3 = UOp(Ops.INDEX, dtypes.float32, (n1, n2, ), None)
  n4 = UOp(Ops.CONST, dtypes.float32, (), 0.0)
  n5 = UOp(Ops.STORE, dtypes.void, (n3, n4, ), None)
  n6 = UOp(Ops.RANGE, dtypes.index, (n2, ), RangeArg(axis=0, kind=AxisType.LOOP))
  n7 = UOp(Ops.RANGE, dtypes.index, (n2, ), RangeArg(axis=1, kind=AxisType.LOOP))
  n8 = UOp(Ops.END, dtypes.void, (n5, n6, n7, ), None)
  n9 = UOp(Ops.SINK, dtypes.void, (n8, ), None)
  n10 = UOp(Ops.CALL, dtypes.void, (n9, n0, ), 'k')
  n11 = UOp(Ops.AFTER, dtypes.float32, (n0, n10, ), None)
  n12 = UOp(Ops.SINK, dtypes.void, (n11, ), None)
  return n12


def inputs():
  return {
  }

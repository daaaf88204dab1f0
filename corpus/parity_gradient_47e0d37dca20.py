# tinyspec counterexample: metamorphic/gradient/through_call_vs_inlined
# seed 3, case 2276, found 2026-11-29 17:08:11 UTC
# gradient w.r.t. BUFFER 6: through calls np.float64(nan) but inlined np.float64(-inf) at element 0
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('metamorphic', 'gradient', 'through_call_vs_inlined')
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'inline', 'realize': 'minimal', 'opts': None}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 3
CASE = 2276


def graph():
  n0 = UOp(Ops.CONST, dtypes.float64, (), 0.0)
  n1 = UOp(Ops.CONST, dtypes.bool, (), False)
  n2 = UOp(Ops.BUFFER, dtypes.float64, (), BufferArg(id=6, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n3 = UOp(Ops.SQRT, dtypes.float64, (n2, ), None)
  n4 = UOp(Ops.TUPLE, dtypes.void, (n0, n1, n3, ), None)
  n5 = UOp(Ops.CALL, dtypes.void, (n4, n3, ), 'f6')
  n6 = UOp(Ops.GETTUPLE, dtypes.float64, (n5, ), 2)
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    6: np.array([0.0], dtype='float64'),
  }

# tinyspec counterexample: spec/optimize/mark_global
# seed 0, case 292, found 2026-12-02 02:48:47 UTC
# after optimize: [KERNEL] kernel.thread_independent: iteration 0 of GLOBAL axis 2 stores element 0 and iteration 1 stores it; at KERNEL the iterations of a thread range are independent
#     at root.src[0].src[1].src[0].src[0].src[0].src[0] (STORE void)
# blamed: rule 'mark_global' of pass optimize at tinyspec/lower/optimize.py:174, application 1 of 6
#   before:
#     %0 = CONST index () [] 2
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'optimize', 'mark_global', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'inline', 'realize': 'all', 'opts': (('global', 1, ), ('unroll', 0, ), )}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 0
CASE = 292


def graph():
  n0 = UOp(Ops.CONST, dtypes.float32, (), 0.0)
  n1 = UOp(Ops.EXPAND, dtypes.float32, (n0, ), (2, 2, ))
  n2 = UOp(Ops.SINK, dtypes.void, (n1, ), None)
  return n2


def inputs():
  return {
  }

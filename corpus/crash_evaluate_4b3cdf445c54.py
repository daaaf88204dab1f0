# tinyspec counterexample: crash/evaluate/EvalError
# seed 7, case 1775, found 2026-11-29 15:49:38 UTC
# evaluating the input graph raised EvalError: AND (bool): source CAST is not a value
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('crash', 'evaluate', 'EvalError')
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': None}
BACKENDS = ('reference', 'cpu')
PER_REWRITE = False
SEED = 7
CASE = 1775


def graph():
  n0 = UOp(Ops.CONST, dtypes.uint64, (), 0)
  n1 = UOp(Ops.CAST, dtypes.bool, (n0, ), None)
  n2 = UOp(Ops.CONST, dtypes.bool, (), False)
  n3 = UOp(Ops.AND, dtypes.bool, (n1, n2, ), None)
  n4 = UOp(Ops.SINK, dtypes.void, (n3, ), None)
  return n4


def inputs():
  return {
  }

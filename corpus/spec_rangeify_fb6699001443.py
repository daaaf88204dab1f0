# tinyspec counterexample: spec/rangeify/<outside rules>
# seed 1, case 1, found 2026-11-29 15:50:06 UTC
# before any rule application of rangeify: [KERNEL] node.src_count: INDEX has 4 source(s); INDEX takes 2
#     at root.src[0].src[1].src[0].src[0].src[0].src[1] (INDEX int32)
# blamed: rule '<outside rules>' of pass rangeify at tinyspec/lower/rangeify.py:208, application 0 of 2
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'rangeify', '<outside rules>')
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': (('global', 2),)}
BACKENDS = ('reference',)
PER_REWRITE = True
SEED = 1
CASE = 1


def graph():
  n0 = UOp(Ops.CONST, dtypes.int32, (), 0)
  n1 = UOp(Ops.EXPAND, dtypes.int32, (n0, ), (4, 4, 1, ))
  n2 = UOp(Ops.SINK, dtypes.void, (n1, ), None)
  return n2


def inputs():
  return {
  }

# tinyspec counterexample: spec/scatter/inline_index_buffer
# seed 5, case 656, found 2026-12-04 21:37:23 UTC
# after scatter: [KERNEL_GRAPH] call.param_slot: PARAM slot 1 in the body of a CALL with 1 arg(s); at KERNEL_GRAPH a PARAM slot is below the arg count of its innermost CALL
#     at root.src[0].src[1].src[0].src[0].src[0].src[1].src[0].src[0].src[0].src[0] (PARAM uint32)
# The scatter pass's inline_index_buffer recomputed the constant buffer at each LOAD of it, but built a gated LOAD's replacement from its original gate, which itself loads the buffer: that LOAD was left behind, reading a PARAM of the arg the rule dropped. Fixed: the replacements are built sources first, each given those of the LOADs below it.
# blamed: rule 'inline_index_buffer' of pass scatter at tinyspec/lower/scatter.py:124, application 1 of 1
#   before:
#     %16 = STORE void  [%3, %15]
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'scatter', 'inline_index_buffer', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': None, 'images': False}
BACKENDS = ('reference', 'cpu', )
PER_REWRITE = True
SEED = 5
CASE = 656


def graph():
  n0 = UOp(Ops.CONST, dtypes.uint32, (), 1)
  n1 = UOp(Ops.EXPAND, dtypes.uint32, (n0, ), (2, ))
  n2 = UOp(Ops.CONST, dtypes.uint32, (), 0)
  n3 = UOp(Ops.EXPAND, dtypes.uint32, (n2, ), (2, ))
  n4 = UOp(Ops.CMPNE, dtypes.bool, (n1, n3, ), None)
  n5 = UOp(Ops.WHERE, dtypes.uint32, (n4, n1, n3, ), None)
  n6 = UOp(Ops.SINK, dtypes.void, (n5, n1, ), None)
  return n6


def inputs():
  return {
  }

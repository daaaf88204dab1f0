# tinyspec counterexample: parity/callify/precompile_gettuple_of_call
# seed 0, case 953, found 2026-12-02 05:38:10 UTC
# callify changed the results: output 1: element 0: np.float32(2.0) against np.float32(0.0) (9 of 9 differ)
# A value call reads BUFFER 4 while an unordered STORE overwrites it: the TENSOR graph reads its initial contents, but once precompiled the call reads the storage by reference after the STORE ran. Found by campaign seed 0 (case 953, 400 cases and more into the campaign); reduced, the case holds no edge value. Fixed: callify realizes such an arg first (rule snapshot_raced_arg).
# blamed: rule 'precompile_gettuple_of_call' of pass callify at tinyspec/lower/callify.py:94, application 1 of 1
#   before:
#     %0 = PARAM float32 (18,) [] ParamArg(slot=0, size=18, device='CPU', addrspace=AddrSpace.GLOBAL)
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity', 'callify', 'precompile_gettuple_of_call', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': None}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 0
CASE = 953


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=4, size=18, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.float32, (n0, ), (3, 3, 2, ))
  n2 = UOp(Ops.CONST, dtypes.float32, (), 0.0)
  n3 = UOp(Ops.EXPAND, dtypes.float32, (n2, ), (3, 3, 2, ))
  n4 = UOp(Ops.STORE, dtypes.void, (n1, n3, ), None)
  n5 = UOp(Ops.AFTER, dtypes.float32, (n1, n4, ), None)
  n6 = UOp(Ops.PARAM, dtypes.float32, (), ParamArg(slot=0, size=18, device='CPU', addrspace=AddrSpace.GLOBAL))
  n7 = UOp(Ops.RESHAPE, dtypes.float32, (n6, ), (3, 3, 2, ))
  n8 = UOp(Ops.PERMUTE, dtypes.float32, (n7, ), (2, 0, 1, ))
  n9 = UOp(Ops.REDUCE, dtypes.float32, (n8, ), (Ops.ADD, 1, ))
  n10 = UOp(Ops.TUPLE, dtypes.void, (n9, ), None)
  n11 = UOp(Ops.CALL, dtypes.void, (n10, n1, ), 'f7')
  n12 = UOp(Ops.GETTUPLE, dtypes.float32, (n11, ), 0)
  n13 = UOp(Ops.SINK, dtypes.void, (n5, n12, ), None)
  return n13


def inputs():
  return {
    4: np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype='float32'),
  }

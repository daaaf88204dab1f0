# tinyspec counterexample: spec/callify/precompile_gettuple_of_call
# seed 0, case 1378, found 2026-12-04 20:02:24 UTC
# after callify: [TENSOR] tensor.one_device: CMPNE combines values on CPU:1 and CPU (COPY one first); at TENSOR the sources of an elementwise op are on one device
#     at root.src[0] (CMPNE bool)
# A value call's body returns a CPU buffer and its PARAM on CPU:1, bound to a constant; its GETTUPLE of the PARAM output reported the call's first device, CPU, so TENSOR took the CMPNE with a CPU buffer, which precompiling exposed as CPU:1 against CPU. Fixed: a GETTUPLE is on the device its body output is (uop._gettuple_device), so TENSOR now rejects this graph by tensor.one_device, and a PARAM is on its arg's device (call.param_device).
# blamed: rule 'precompile_gettuple_of_call' of pass callify at tinyspec/lower/callify.py:105, application 1 of 1
#   before:
#     %3 = PARAM bool (12,) [] ParamArg(slot=0, size=12, device='CPU:1', addrspace=AddrSpace.GLOBAL, image=None)
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'callify', 'precompile_gettuple_of_call', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': None, 'images': True}
BACKENDS = ('reference', 'cpu', )
PER_REWRITE = True
SEED = 0
CASE = 1378


def graph():
  n0 = UOp(Ops.CONST, dtypes.bool, (), False)
  n1 = UOp(Ops.EXPAND, dtypes.bool, (n0, ), (3, 4, ))
  n2 = UOp(Ops.BUFFER, dtypes.float8_e4m3fn, (), BufferArg(id=2, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n3 = UOp(Ops.PARAM, dtypes.bool, (), ParamArg(slot=0, size=12, device='CPU:1', addrspace=AddrSpace.GLOBAL))
  n4 = UOp(Ops.RESHAPE, dtypes.bool, (n3, ), (2, 3, 2, ))
  n5 = UOp(Ops.PERMUTE, dtypes.bool, (n4, ), (1, 2, 0, ))
  n6 = UOp(Ops.TUPLE, dtypes.void, (n1, n2, n5, ), None)
  n7 = UOp(Ops.CALL, dtypes.void, (n6, n1, n1, ), 'f5')
  n8 = UOp(Ops.GETTUPLE, dtypes.bool, (n7, ), 2)
  n9 = UOp(Ops.BUFFER, dtypes.bool, (), BufferArg(id=8, size=12, device='CPU', addrspace=AddrSpace.GLOBAL))
  n10 = UOp(Ops.RESHAPE, dtypes.bool, (n9, ), (3, 2, 2, ))
  n11 = UOp(Ops.CMPNE, dtypes.bool, (n8, n10, ), None)
  n12 = UOp(Ops.SINK, dtypes.void, (n11, ), None)
  return n12


def inputs():
  return {
    2: np.array([0.0], dtype='float8_e4m3fn'),
    8: np.array([False, False, False, False, False, False, False, False, False, False, False, False], dtype='bool'),
  }

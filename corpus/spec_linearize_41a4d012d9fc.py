# tinyspec counterexample: spec/linearize/fold_image
# seed 7, case 6, found 2026-12-04 19:24:39 UTC
# after rule application 1 of linearize: [KERNEL] kernel.image_param: PARAM slot 1 carries image (1, 1); at KERNEL a PARAM is flat and an IMAGE view makes it an image
#     at root.src[0].src[0].src[1].src[0].src[0] (PARAM float32)
# blamed: rule 'fold_image' of pass linearize at tinyspec/lower/linearize.py:64, application 1 of 2
#   before:
#     %0 = PARAM float32 (4,) [] ParamArg(slot=1, size=4, device='CPU', addrspace=AddrSpace.GLOBAL, image=None)
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'linearize', 'fold_image', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'minimal', 'opts': (('split', 4, 2, ), ), 'images': True}
BACKENDS = ('reference', 'cpu', 'opencl', )
PER_REWRITE = True
SEED = 7
CASE = 6


def graph():
  n0 = UOp(Ops.CONST, dtypes.bool, (), True)
  n1 = UOp(Ops.EXPAND, dtypes.bool, (n0, ), (2, 2, ))
  n2 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=3, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n3 = UOp(Ops.RESHAPE, dtypes.float32, (n2, ), (2, 2, ))
  n4 = UOp(Ops.CONST, dtypes.float32, (), float('inf'))
  n5 = UOp(Ops.EXPAND, dtypes.float32, (n4, ), (2, 2, ))
  n6 = UOp(Ops.WHERE, dtypes.float32, (n1, n3, n5, ), None)
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    3: np.array([0.0, 0.0, 0.0, 0.0], dtype='float32'),
  }

# tinyspec counterexample: spec/images/image_index
# seed 7, case 34, found 2026-12-04 19:25:12 UTC
# after rule application 1 of images: [KERNEL] kernel.image_one_form: PARAM slot 0 is used as flat storage and as a (1, 2) image; at KERNEL a kernel sees a storage in one form
#     at root.src[0].src[0].src[0].src[0].src[0] (IMAGE float32)
# blamed: rule 'image_index' of pass images at tinyspec/lower/images.py:73, application 1 of 4
#   before:
#     %0 = PARAM float32 (8,) [] ParamArg(slot=0, size=8, device='CPU', addrspace=AddrSpace.GLOBAL, image=None)
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'images', 'image_index', )
EXPECT = 'passes'
KIND = 'tensor'
OPTIONS = {'callify': 'precompile', 'realize': 'all', 'opts': (('unroll', 1, ), ('split', 0, 7, ), ('split', 0, 4, ), ), 'images': True}
BACKENDS = ('reference', 'cpu', 'opencl', )
PER_REWRITE = True
SEED = 7
CASE = 34


def graph():
  n0 = UOp(Ops.CONST, dtypes.float32, (), 0.0)
  n1 = UOp(Ops.EXPAND, dtypes.float32, (n0, ), (2, 4, ))
  n2 = UOp(Ops.SINK, dtypes.void, (n1, ), None)
  return n2


def inputs():
  return {
  }

# tinyspec counterexample: parity-signed-overflow/cpu-vs-python/float32
# seed 0, case 9598, found 2026-12-01 18:45:47 UTC
# output 0 (float32[1]): PYTHON against CPU: element 0: np.float32(-32768.0) against np.float32(32768.0) (1 of 1 differ)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('parity-signed-overflow', 'cpu-vs-python', 'float32')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 9598
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1], dtype=np.int16).reshape((1,)))
  v1 = x0 << 15
  v2 = v1.cast(dtypes.float32)
  return v2,
'''


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int16, (), BufferArg(id=34804, size=1, device='NPY', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.COPY, dtypes.int16, (n0, ), 'CPU')
  n2 = UOp(Ops.CONST, dtypes.int16, (), 15)
  n3 = UOp(Ops.RESHAPE, dtypes.int16, (n2, ), (1, ))
  n4 = UOp(Ops.EXPAND, dtypes.int16, (n3, ), ())
  n5 = UOp(Ops.SHL, dtypes.int16, (n1, n4, ), None)
  n6 = UOp(Ops.CAST, dtypes.float32, (n5, ), None)
  n7 = UOp(Ops.SINK, dtypes.void, (n6, ), None)
  return n7


def inputs():
  return {
    34804: np.array([1], dtype='int16'),
  }

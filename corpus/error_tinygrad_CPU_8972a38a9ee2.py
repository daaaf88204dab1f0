# tinyspec counterexample: error/tinygrad-CPU/CalledProcessError
# seed 0, case 4829, found 2026-12-01 23:50:57 UTC
# tinygrad raised CalledProcessError: Command '['clang', '-c', '-x', 'c', '-O2', '-fPIC', '-ffreestanding', '-fno-math-errno', '-nostdlib', '-fno-ident', '--target=x86_64-none-unknown-elf', '-march=native', '-', '-o', '-']' returned non-zero exit status 1.
# graph(): tinyspec's frontend graph of the program
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg
from tinyspec.dtype import dtypes

SIGNATURE = ('error', 'tinygrad-CPU', 'CalledProcessError')
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference',)
PER_REWRITE = False
SEED = 0
CASE = 4829
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([0], dtype=np.int64).reshape((1, 1, 1)))
  v0 = x0 + -9223372036854775808
  v4 = v0 + v0
  return v4,
'''
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.int64, (), BufferArg(id=15888, size=1, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.int64, (n0, ), (1, 1, 1, ))
  n2 = UOp(Ops.CONST, dtypes.int64, (), -9223372036854775808)
  n3 = UOp(Ops.RESHAPE, dtypes.int64, (n2, ), (1, 1, 1, ))
  n4 = UOp(Ops.ADD, dtypes.int64, (n1, n3, ), None)
  n5 = UOp(Ops.ADD, dtypes.int64, (n4, n4, ), None)
  n6 = UOp(Ops.SINK, dtypes.void, (n5, ), None)
  return n6


def inputs():
  return {
    15888: np.array([0], dtype='int64'),
  }

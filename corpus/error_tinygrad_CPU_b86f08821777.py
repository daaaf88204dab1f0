# tinyspec counterexample: error/tinygrad-CPU/KeyError
# seed 0, case 81, found 2026-12-06 01:44:50 UTC
# tinygrad raised KeyError: UOp(Ops.SINK, dtypes.void, arg=None, src=(
#   x0:=UOp(Ops.AFTER, dtypes.ulong, arg=None, src=(
#     x1:=UOp(Ops.PARAM, dtypes.ulong, arg=ParamArg(0, dtypes.ulong, device='CPU'), src=(
#       x2:=UOp(Ops.CONST, dtypes.weakint, arg=3, src=()),)),
#     UOp(Ops.END, dtypes.void, arg=None, src=(
#       UOp(Ops.STORE, dtypes.void, arg=None, src=(
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('error', 'tinygrad-CPU', 'KeyError', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 0
CASE = 81
PROGRAM = '''\
def program():
  x0 = Tensor(np.array([1154669868015972911, 4793777912366116583, 10017103554528018664], dtype=np.uint64).reshape((3,)))
  v1 = x0 ** 9223372036854775808
  return v1,
'''
FOUND_ON = '0.14.0'
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.BUFFER, dtypes.uint64, (), BufferArg(id=1, size=3, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.RESHAPE, dtypes.uint64, (n0, ), (3, ))
  n2 = UOp(Ops.MUL, dtypes.uint64, (n1, n1, ), None)
  n3 = UOp(Ops.MUL, dtypes.uint64, (n2, n2, ), None)
  n4 = UOp(Ops.MUL, dtypes.uint64, (n3, n3, ), None)
  n5 = UOp(Ops.MUL, dtypes.uint64, (n4, n4, ), None)
  n6 = UOp(Ops.MUL, dtypes.uint64, (n5, n5, ), None)
  n7 = UOp(Ops.MUL, dtypes.uint64, (n6, n6, ), None)
  n8 = UOp(Ops.MUL, dtypes.uint64, (n7, n7, ), None)
  n9 = UOp(Ops.MUL, dtypes.uint64, (n8, n8, ), None)
  n10 = UOp(Ops.MUL, dtypes.uint64, (n9, n9, ), None)
  n11 = UOp(Ops.MUL, dtypes.uint64, (n10, n10, ), None)
  n12 = UOp(Ops.MUL, dtypes.uint64, (n11, n11, ), None)
  n13 = UOp(Ops.MUL, dtypes.uint64, (n12, n12, ), None)
  n14 = UOp(Ops.MUL, dtypes.uint64, (n13, n13, ), None)
  n15 = UOp(Ops.MUL, dtypes.uint64, (n14, n14, ), None)
  n16 = UOp(Ops.MUL, dtypes.uint64, (n15, n15, ), None)
  n17 = UOp(Ops.MUL, dtypes.uint64, (n16, n16, ), None)
  n18 = UOp(Ops.MUL, dtypes.uint64, (n17, n17, ), None)
  n19 = UOp(Ops.MUL, dtypes.uint64, (n18, n18, ), None)
  n20 = UOp(Ops.MUL, dtypes.uint64, (n19, n19, ), None)
  n21 = UOp(Ops.MUL, dtypes.uint64, (n20, n20, ), None)
  n22 = UOp(Ops.MUL, dtypes.uint64, (n21, n21, ), None)
  n23 = UOp(Ops.MUL, dtypes.uint64, (n22, n22, ), None)
  n24 = UOp(Ops.MUL, dtypes.uint64, (n23, n23, ), None)
  n25 = UOp(Ops.MUL, dtypes.uint64, (n24, n24, ), None)
  n26 = UOp(Ops.MUL, dtypes.uint64, (n25, n25, ), None)
  n27 = UOp(Ops.MUL, dtypes.uint64, (n26, n26, ), None)
  n28 = UOp(Ops.MUL, dtypes.uint64, (n27, n27, ), None)
  n29 = UOp(Ops.MUL, dtypes.uint64, (n28, n28, ), None)
  n30 = UOp(Ops.MUL, dtypes.uint64, (n29, n29, ), None)
  n31 = UOp(Ops.MUL, dtypes.uint64, (n30, n30, ), None)
  n32 = UOp(Ops.MUL, dtypes.uint64, (n31, n31, ), None)
  n33 = UOp(Ops.MUL, dtypes.uint64, (n32, n32, ), None)
  n34 = UOp(Ops.MUL, dtypes.uint64, (n33, n33, ), None)
  n35 = UOp(Ops.MUL, dtypes.uint64, (n34, n34, ), None)
  n36 = UOp(Ops.MUL, dtypes.uint64, (n35, n35, ), None)
  n37 = UOp(Ops.MUL, dtypes.uint64, (n36, n36, ), None)
  n38 = UOp(Ops.MUL, dtypes.uint64, (n37, n37, ), None)
  n39 = UOp(Ops.MUL, dtypes.uint64, (n38, n38, ), None)
  n40 = UOp(Ops.MUL, dtypes.uint64, (n39, n39, ), None)
  n41 = UOp(Ops.MUL, dtypes.uint64, (n40, n40, ), None)
  n42 = UOp(Ops.MUL, dtypes.uint64, (n41, n41, ), None)
  n43 = UOp(Ops.MUL, dtypes.uint64, (n42, n42, ), None)
  n44 = UOp(Ops.MUL, dtypes.uint64, (n43, n43, ), None)
  n45 = UOp(Ops.MUL, dtypes.uint64, (n44, n44, ), None)
  n46 = UOp(Ops.MUL, dtypes.uint64, (n45, n45, ), None)
  n47 = UOp(Ops.MUL, dtypes.uint64, (n46, n46, ), None)
  n48 = UOp(Ops.MUL, dtypes.uint64, (n47, n47, ), None)
  n49 = UOp(Ops.MUL, dtypes.uint64, (n48, n48, ), None)
  n50 = UOp(Ops.MUL, dtypes.uint64, (n49, n49, ), None)
  n51 = UOp(Ops.MUL, dtypes.uint64, (n50, n50, ), None)
  n52 = UOp(Ops.MUL, dtypes.uint64, (n51, n51, ), None)
  n53 = UOp(Ops.MUL, dtypes.uint64, (n52, n52, ), None)
  n54 = UOp(Ops.MUL, dtypes.uint64, (n53, n53, ), None)
  n55 = UOp(Ops.MUL, dtypes.uint64, (n54, n54, ), None)
  n56 = UOp(Ops.MUL, dtypes.uint64, (n55, n55, ), None)
  n57 = UOp(Ops.MUL, dtypes.uint64, (n56, n56, ), None)
  n58 = UOp(Ops.MUL, dtypes.uint64, (n57, n57, ), None)
  n59 = UOp(Ops.MUL, dtypes.uint64, (n58, n58, ), None)
  n60 = UOp(Ops.MUL, dtypes.uint64, (n59, n59, ), None)
  n61 = UOp(Ops.MUL, dtypes.uint64, (n60, n60, ), None)
  n62 = UOp(Ops.MUL, dtypes.uint64, (n61, n61, ), None)
  n63 = UOp(Ops.MUL, dtypes.uint64, (n62, n62, ), None)
  n64 = UOp(Ops.MUL, dtypes.uint64, (n63, n63, ), None)
  n65 = UOp(Ops.SINK, dtypes.void, (n64, ), None)
  return n65


def inputs():
  return {
    1: np.array([1154669868015972911, 4793777912366116583, 10017103554528018664], dtype='uint64'),
  }

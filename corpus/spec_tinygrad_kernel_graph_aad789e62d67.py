# tinyspec counterexample: spec/tinygrad-kernel_graph/kernel.store_dtype
# seed 0, case 181, found 2026-12-06 01:45:00 UTC
# [KERNEL] kernel.store_dtype: STORE of float32 through a uint16 INDEX; at KERNEL the value has the element dtype of its storage
#     at root.src[1].src[1].src[0].src[0].src[0] (STORE void)
# graph(): tinygrad's tensor graph, translated
import numpy as np
from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg
from tinyspec.dtype import dtypes

SIGNATURE = ('spec', 'tinygrad-kernel_graph', 'kernel.store_dtype', )
EXPECT = 'fails'
KIND = 'tinygrad'
OPTIONS = {}
BACKENDS = ('reference', )
PER_REWRITE = False
SEED = 0
CASE = 181
PROGRAM = '''\
@function
def f_v5(p0, p1):
  q0 = p0.flip(0)
  q1 = p1 ** q0
  return q1,


def program():
  x0 = Tensor(np.array([0, 0, 0, 0], dtype=np.uint16).reshape((4,)))
  v0 = x0 - x0
  v1 = v0 | -1
  v5, = f_v5(v1, x0)
  return v5,
'''
FOUND_ON = '0.14.0'
REPRODUCES = {'0.14.0': True, 'a9069c17': True}


def graph():
  n0 = UOp(Ops.PARAM, dtypes.uint16, (), ParamArg(slot=0, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n1 = UOp(Ops.FLIP, dtypes.uint16, (n0, ), (True, ))
  n2 = UOp(Ops.CONST, dtypes.uint16, (), 15)
  n3 = UOp(Ops.EXPAND, dtypes.uint16, (n2, ), (4, ))
  n4 = UOp(Ops.SHR, dtypes.uint16, (n1, n3, ), None)
  n5 = UOp(Ops.CONST, dtypes.uint16, (), 1)
  n6 = UOp(Ops.EXPAND, dtypes.uint16, (n5, ), (4, ))
  n7 = UOp(Ops.AND, dtypes.uint16, (n4, n6, ), None)
  n8 = UOp(Ops.CONST, dtypes.uint16, (), 0)
  n9 = UOp(Ops.EXPAND, dtypes.uint16, (n8, ), (4, ))
  n10 = UOp(Ops.CMPNE, dtypes.bool, (n7, n9, ), None)
  n11 = UOp(Ops.CONST, dtypes.uint16, (), 14)
  n12 = UOp(Ops.EXPAND, dtypes.uint16, (n11, ), (4, ))
  n13 = UOp(Ops.SHR, dtypes.uint16, (n1, n12, ), None)
  n14 = UOp(Ops.AND, dtypes.uint16, (n13, n6, ), None)
  n15 = UOp(Ops.CMPNE, dtypes.bool, (n14, n9, ), None)
  n16 = UOp(Ops.CONST, dtypes.uint16, (), 13)
  n17 = UOp(Ops.EXPAND, dtypes.uint16, (n16, ), (4, ))
  n18 = UOp(Ops.SHR, dtypes.uint16, (n1, n17, ), None)
  n19 = UOp(Ops.AND, dtypes.uint16, (n18, n6, ), None)
  n20 = UOp(Ops.CMPNE, dtypes.bool, (n19, n9, ), None)
  n21 = UOp(Ops.CONST, dtypes.uint16, (), 12)
  n22 = UOp(Ops.EXPAND, dtypes.uint16, (n21, ), (4, ))
  n23 = UOp(Ops.SHR, dtypes.uint16, (n1, n22, ), None)
  n24 = UOp(Ops.AND, dtypes.uint16, (n23, n6, ), None)
  n25 = UOp(Ops.CMPNE, dtypes.bool, (n24, n9, ), None)
  n26 = UOp(Ops.CONST, dtypes.uint16, (), 11)
  n27 = UOp(Ops.EXPAND, dtypes.uint16, (n26, ), (4, ))
  n28 = UOp(Ops.SHR, dtypes.uint16, (n1, n27, ), None)
  n29 = UOp(Ops.AND, dtypes.uint16, (n28, n6, ), None)
  n30 = UOp(Ops.CMPNE, dtypes.bool, (n29, n9, ), None)
  n31 = UOp(Ops.CONST, dtypes.uint16, (), 10)
  n32 = UOp(Ops.EXPAND, dtypes.uint16, (n31, ), (4, ))
  n33 = UOp(Ops.SHR, dtypes.uint16, (n1, n32, ), None)
  n34 = UOp(Ops.AND, dtypes.uint16, (n33, n6, ), None)
  n35 = UOp(Ops.CMPNE, dtypes.bool, (n34, n9, ), None)
  n36 = UOp(Ops.CONST, dtypes.uint16, (), 9)
  n37 = UOp(Ops.EXPAND, dtypes.uint16, (n36, ), (4, ))
  n38 = UOp(Ops.SHR, dtypes.uint16, (n1, n37, ), None)
  n39 = UOp(Ops.AND, dtypes.uint16, (n38, n6, ), None)
  n40 = UOp(Ops.CMPNE, dtypes.bool, (n39, n9, ), None)
  n41 = UOp(Ops.CONST, dtypes.uint16, (), 8)
  n42 = UOp(Ops.EXPAND, dtypes.uint16, (n41, ), (4, ))
  n43 = UOp(Ops.SHR, dtypes.uint16, (n1, n42, ), None)
  n44 = UOp(Ops.AND, dtypes.uint16, (n43, n6, ), None)
  n45 = UOp(Ops.CMPNE, dtypes.bool, (n44, n9, ), None)
  n46 = UOp(Ops.CONST, dtypes.uint16, (), 7)
  n47 = UOp(Ops.EXPAND, dtypes.uint16, (n46, ), (4, ))
  n48 = UOp(Ops.SHR, dtypes.uint16, (n1, n47, ), None)
  n49 = UOp(Ops.AND, dtypes.uint16, (n48, n6, ), None)
  n50 = UOp(Ops.CMPNE, dtypes.bool, (n49, n9, ), None)
  n51 = UOp(Ops.CONST, dtypes.uint16, (), 6)
  n52 = UOp(Ops.EXPAND, dtypes.uint16, (n51, ), (4, ))
  n53 = UOp(Ops.SHR, dtypes.uint16, (n1, n52, ), None)
  n54 = UOp(Ops.AND, dtypes.uint16, (n53, n6, ), None)
  n55 = UOp(Ops.CMPNE, dtypes.bool, (n54, n9, ), None)
  n56 = UOp(Ops.CONST, dtypes.uint16, (), 5)
  n57 = UOp(Ops.EXPAND, dtypes.uint16, (n56, ), (4, ))
  n58 = UOp(Ops.SHR, dtypes.uint16, (n1, n57, ), None)
  n59 = UOp(Ops.AND, dtypes.uint16, (n58, n6, ), None)
  n60 = UOp(Ops.CMPNE, dtypes.bool, (n59, n9, ), None)
  n61 = UOp(Ops.CONST, dtypes.uint16, (), 4)
  n62 = UOp(Ops.EXPAND, dtypes.uint16, (n61, ), (4, ))
  n63 = UOp(Ops.SHR, dtypes.uint16, (n1, n62, ), None)
  n64 = UOp(Ops.AND, dtypes.uint16, (n63, n6, ), None)
  n65 = UOp(Ops.CMPNE, dtypes.bool, (n64, n9, ), None)
  n66 = UOp(Ops.CONST, dtypes.uint16, (), 3)
  n67 = UOp(Ops.EXPAND, dtypes.uint16, (n66, ), (4, ))
  n68 = UOp(Ops.SHR, dtypes.uint16, (n1, n67, ), None)
  n69 = UOp(Ops.AND, dtypes.uint16, (n68, n6, ), None)
  n70 = UOp(Ops.CMPNE, dtypes.bool, (n69, n9, ), None)
  n71 = UOp(Ops.CONST, dtypes.uint16, (), 2)
  n72 = UOp(Ops.EXPAND, dtypes.uint16, (n71, ), (4, ))
  n73 = UOp(Ops.SHR, dtypes.uint16, (n1, n72, ), None)
  n74 = UOp(Ops.AND, dtypes.uint16, (n73, n6, ), None)
  n75 = UOp(Ops.CMPNE, dtypes.bool, (n74, n9, ), None)
  n76 = UOp(Ops.SHR, dtypes.uint16, (n1, n6, ), None)
  n77 = UOp(Ops.AND, dtypes.uint16, (n76, n6, ), None)
  n78 = UOp(Ops.CMPNE, dtypes.bool, (n77, n9, ), None)
  n79 = UOp(Ops.SHR, dtypes.uint16, (n1, n9, ), None)
  n80 = UOp(Ops.AND, dtypes.uint16, (n79, n6, ), None)
  n81 = UOp(Ops.CMPNE, dtypes.bool, (n80, n9, ), None)
  n82 = UOp(Ops.PARAM, dtypes.uint16, (), ParamArg(slot=1, size=4, device='CPU', addrspace=AddrSpace.GLOBAL))
  n83 = UOp(Ops.MUL, dtypes.uint16, (n6, n82, ), None)
  n84 = UOp(Ops.WHERE, dtypes.uint16, (n81, n83, n6, ), None)
  n85 = UOp(Ops.MUL, dtypes.uint16, (n82, n82, ), None)
  n86 = UOp(Ops.MUL, dtypes.uint16, (n84, n85, ), None)
  n87 = UOp(Ops.WHERE, dtypes.uint16, (n78, n86, n84, ), None)
  n88 = UOp(Ops.MUL, dtypes.uint16, (n85, n85, ), None)
  n89 = UOp(Ops.MUL, dtypes.uint16, (n87, n88, ), None)
  n90 = UOp(Ops.WHERE, dtypes.uint16, (n75, n89, n87, ), None)
  n91 = UOp(Ops.MUL, dtypes.uint16, (n88, n88, ), None)
  n92 = UOp(Ops.MUL, dtypes.uint16, (n90, n91, ), None)
  n93 = UOp(Ops.WHERE, dtypes.uint16, (n70, n92, n90, ), None)
  n94 = UOp(Ops.MUL, dtypes.uint16, (n91, n91, ), None)
  n95 = UOp(Ops.MUL, dtypes.uint16, (n93, n94, ), None)
  n96 = UOp(Ops.WHERE, dtypes.uint16, (n65, n95, n93, ), None)
  n97 = UOp(Ops.MUL, dtypes.uint16, (n94, n94, ), None)
  n98 = UOp(Ops.MUL, dtypes.uint16, (n96, n97, ), None)
  n99 = UOp(Ops.WHERE, dtypes.uint16, (n60, n98, n96, ), None)
  n100 = UOp(Ops.MUL, dtypes.uint16, (n97, n97, ), None)
  n101 = UOp(Ops.MUL, dtypes.uint16, (n99, n100, ), None)
  n102 = UOp(Ops.WHERE, dtypes.uint16, (n55, n101, n99, ), None)
  n103 = UOp(Ops.MUL, dtypes.uint16, (n100, n100, ), None)
  n104 = UOp(Ops.MUL, dtypes.uint16, (n102, n103, ), None)
  n105 = UOp(Ops.WHERE, dtypes.uint16, (n50, n104, n102, ), None)
  n106 = UOp(Ops.MUL, dtypes.uint16, (n103, n103, ), None)
  n107 = UOp(Ops.MUL, dtypes.uint16, (n105, n106, ), None)
  n108 = UOp(Ops.WHERE, dtypes.uint16, (n45, n107, n105, ), None)
  n109 = UOp(Ops.MUL, dtypes.uint16, (n106, n106, ), None)
  n110 = UOp(Ops.MUL, dtypes.uint16, (n108, n109, ), None)
  n111 = UOp(Ops.WHERE, dtypes.uint16, (n40, n110, n108, ), None)
  n112 = UOp(Ops.MUL, dtypes.uint16, (n109, n109, ), None)
  n113 = UOp(Ops.MUL, dtypes.uint16, (n111, n112, ), None)
  n114 = UOp(Ops.WHERE, dtypes.uint16, (n35, n113, n111, ), None)
  n115 = UOp(Ops.MUL, dtypes.uint16, (n112, n112, ), None)
  n116 = UOp(Ops.MUL, dtypes.uint16, (n114, n115, ), None)
  n117 = UOp(Ops.WHERE, dtypes.uint16, (n30, n116, n114, ), None)
  n118 = UOp(Ops.MUL, dtypes.uint16, (n115, n115, ), None)
  n119 = UOp(Ops.MUL, dtypes.uint16, (n117, n118, ), None)
  n120 = UOp(Ops.WHERE, dtypes.uint16, (n25, n119, n117, ), None)
  n121 = UOp(Ops.MUL, dtypes.uint16, (n118, n118, ), None)
  n122 = UOp(Ops.MUL, dtypes.uint16, (n120, n121, ), None)
  n123 = UOp(Ops.WHERE, dtypes.uint16, (n20, n122, n120, ), None)
  n124 = UOp(Ops.MUL, dtypes.uint16, (n121, n121, ), None)
  n125 = UOp(Ops.MUL, dtypes.uint16, (n123, n124, ), None)
  n126 = UOp(Ops.WHERE, dtypes.uint16, (n15, n125, n123, ), None)
  n127 = UOp(Ops.MUL, dtypes.uint16, (n124, n124, ), None)
  n128 = UOp(Ops.MUL, dtypes.uint16, (n126, n127, ), None)
  n129 = UOp(Ops.WHERE, dtypes.uint16, (n10, n128, n126, ), None)
  n130 = UOp(Ops.TUPLE, dtypes.void, (n129, ), None)
  n131 = UOp(Ops.BUFFER, dtypes.uint16, (), BufferArg(id=1200, size=4, device='NPY', addrspace=AddrSpace.GLOBAL))
  n132 = UOp(Ops.COPY, dtypes.uint16, (n131, ), 'CPU')
  n133 = UOp(Ops.CONST, dtypes.uint16, (), 65535)
  n134 = UOp(Ops.EXPAND, dtypes.uint16, (n133, ), (4, ))
  n135 = UOp(Ops.MUL, dtypes.uint16, (n132, n134, ), None)
  n136 = UOp(Ops.ADD, dtypes.uint16, (n132, n135, ), None)
  n137 = UOp(Ops.OR, dtypes.uint16, (n136, n134, ), None)
  n138 = UOp(Ops.CALL, dtypes.void, (n130, n137, n132, ), 'f_v5')
  n139 = UOp(Ops.GETTUPLE, dtypes.uint16, (n138, ), 0)
  n140 = UOp(Ops.SINK, dtypes.void, (n139, ), None)
  return n140


def inputs():
  return {
    1200: np.array([0, 0, 0, 0], dtype='uint16'),
  }

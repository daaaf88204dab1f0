"""How C and OpenCL C spell every elementwise op: the operator or math function, and which ops need care.

The renderers (tinyspec.render) own the language mechanics (type names, casts, helpers, overloads); what each op is
written as lives here. Where C leaves a point undefined, the renderer adds the guard that gives tinyspec's value
(tinyspec.ops.scalar): GUARDED names those ops.
"""
from __future__ import annotations

from tinyspec.opcodes import Ops

INFIX: dict[Ops, str] = {
  Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.IDIV: "/", Ops.MOD: "%", Ops.FDIV: "/", Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^",
  Ops.SHL: "<<", Ops.SHR: ">>", Ops.CMPLT: "<", Ops.CMPNE: "!=", Ops.CMPEQ: "==",
}
PREFIX: dict[Ops, str] = {Ops.NEG: "-"}
# bool operands are 0 or 1: MAX is OR there, MUL is AND, and the other bool ops are the bitwise ones, converted back to bool
BOOL_INFIX: dict[Ops, str] = {Ops.MAX: "|", Ops.ADD: "|", Ops.MUL: "&", Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^"}
# the math library function of a float op (C appends f for float32; OpenCL's builtins are overloaded)
MATH_FN: dict[Ops, str] = {Ops.SQRT: "sqrt", Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.SIN: "sin", Ops.TRUNC: "trunc"}
# signed results that may overflow: computed in the unsigned twin where the language does not wrap by itself
WRAPPING = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG})
# ops with a point C leaves undefined that the renderer guards: division by zero and MIN / -1, shift counts
GUARDED = frozenset({Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR})

"""The z3 meaning of every integer and bool op: the scalar meaning (tinyspec.ops.scalar) as z3 terms, exactly.

Sorts: a fixed-width integer dtype is a BitVec of its width (two's complement wrap is exact; signedness comes from
the dtype); `index` is an unbounded z3 Int; bool is a z3 Bool. Floats have no z3 meaning here.

`term(op, dt, args)` gives the op's value with tinyspec's defined values at C's undefined points (a IDIV 0 == 0,
a MOD 0 == a, MIN IDIV -1 == MIN, shift counts modulo the width) and `undefined(op, dt, args)` the condition under
which the operands hit such a point, so a bounds proof can leave the value free there while a rule prover keeps
the evaluator's value. Signed overflow is not in it: every backend wraps (-fwrapv), so proofs may rely on wrapping.

The terms themselves say how values are represented, the dtype what they mean: a BitVec of the dtype's own width
wraps as the dtype does; a wider BitVec or an Int holds the exact (unwrapped) value, so its ops are the signed
mathematical ones with the dtype's shift width (the rule prover's exact encodings wrap those nodes themselves).

Bitwise ops and shifts on `index` are exact: the Int operands are read as two's complement bit vectors of a width
that holds them (the caller passes one from their interval bounds; 64 by default, the evaluator's int64, plus the
largest count for SHL), computed there and read back as an Int.
"""
from __future__ import annotations

from typing import Callable

import z3

from tinyspec.dtype import DType
from tinyspec.opcodes import Ops
from tinyspec.ops.classes import accepts
from tinyspec.ops.scalar import INDEX_SHIFT_BITS, shift_bits

# z3 takes SIGINT for itself while it solves (it cancels the query, which then reads as "unknown"): ^C would not reach
# Python, and a query cut short would read as a failed proof. Off, ^C interrupts the program wherever it is.
z3.set_param("ctrl_c", False)

INDEX_WIDTH = INDEX_SHIFT_BITS  # default bit width of index operands of bitwise ops: the evaluator's int64


def sort(dt: DType) -> z3.SortRef | None:
  """The z3 sort of dt's values; None for floats and void."""
  if dt.kind == "x": return z3.IntSort()
  if dt.kind in "iu": return z3.BitVecSort(dt.bits)
  if dt.kind == "b": return z3.BoolSort()
  return None


def const(dt: DType, v) -> z3.ExprRef:
  if dt.kind == "x": return z3.IntVal(int(v))
  if dt.kind in "iu": return z3.BitVecVal(int(v) & ((1 << dt.bits) - 1), dt.bits)
  if dt.kind == "b": return z3.BoolVal(bool(v))
  raise TypeError(f"{dt.name} has no z3 meaning")


def const_like(e: z3.ExprRef, v) -> z3.ExprRef:
  """The constant v in the representation of term e (a BitVec of e's width, an Int, a Bool)."""
  if z3.is_bv(e): return z3.BitVecVal(int(v) & ((1 << e.size()) - 1), e.size())
  if z3.is_bool(e): return z3.BoolVal(bool(v))
  return z3.IntVal(int(v))


def _unsigned(dt: DType, e: z3.ExprRef) -> bool:
  # only a BitVec of an unsigned dtype's own width holds its bits; a wider one (or an Int) holds the exact value
  return dt.kind == "u" and z3.is_bv(e) and e.size() == dt.bits


def lt(dt: DType, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
  """a < b as values of dt."""
  if dt.kind == "b": return z3.And(z3.Not(a), b)
  if _unsigned(dt, a): return z3.ULT(a, b)
  return a < b


def as_int(dt: DType, e: z3.ExprRef) -> z3.ArithRef:
  """The mathematical integer value of a term of dtype dt."""
  if z3.is_bv(e): return z3.BV2Int(e, is_signed=dt.kind != "u")
  if z3.is_bool(e): return z3.If(e, z3.IntVal(1), z3.IntVal(0))
  return e


def c_idiv_int(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
  """a / b truncated toward zero on z3 Ints (z3's own div is Euclidean); b == 0 is left to the caller."""
  aa, ab = z3.If(a >= 0, a, -a), z3.If(b >= 0, b, -b)
  q = aa / ab  # both non-negative: Euclidean, floor and truncation agree
  return z3.If((a >= 0) == (b >= 0), q, -q)


def c_mod_int(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
  """a % b with the sign of a, on z3 Ints."""
  return a - b * c_idiv_int(a, b)


def _divmod_exact(op: Ops, dt: DType, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
  if z3.is_bv(a):
    # SMT-LIB's bvsdiv truncates and bvsrem takes the dividend's sign, as C; MIN bvsdiv -1 wraps to MIN
    if _unsigned(dt, a): return z3.UDiv(a, b) if op is Ops.IDIV else z3.URem(a, b)
    return a / b if op is Ops.IDIV else z3.SRem(a, b)
  return c_idiv_int(a, b) if op is Ops.IDIV else c_mod_int(a, b)


def _divmod(op: Ops) -> Callable:
  def f(dt: DType, a: z3.ExprRef, b: z3.ExprRef, width: int) -> z3.ExprRef:
    zero = const_like(a, 0)
    exact = _divmod_exact(op, dt, a, b)
    if z3.is_bv_value(b) or z3.is_int_value(b):
      if b.as_long() != 0: return exact
      return zero if op is Ops.IDIV else a
    return z3.If(b == zero, zero if op is Ops.IDIV else a, exact)
  return f


def _to_bv(e: z3.ArithRef, w: int) -> z3.BitVecRef: return z3.Int2BV(e, w)


_BOOL_BITWISE: dict[Ops, Callable] = {Ops.AND: z3.And, Ops.OR: z3.Or, Ops.XOR: z3.Xor}
_BV_BITWISE: dict[Ops, Callable] = {Ops.AND: lambda a, b: a & b, Ops.OR: lambda a, b: a | b, Ops.XOR: lambda a, b: a ^ b}


def _bitwise(op: Ops) -> Callable:
  def f(dt: DType, a: z3.ExprRef, b: z3.ExprRef, width: int) -> z3.ExprRef:
    if dt.kind == "b": return _BOOL_BITWISE[op](a, b)
    if z3.is_bv(a): return _BV_BITWISE[op](a, b)
    return z3.BV2Int(_BV_BITWISE[op](z3.Int2BV(a, width), z3.Int2BV(b, width)), is_signed=True)
  return f


def _shift(op: Ops) -> Callable:
  def f(dt: DType, a: z3.ExprRef, b: z3.ExprRef, width: int) -> z3.ExprRef:
    bits = shift_bits(dt)
    if z3.is_bv(a):
      cnt = b & const_like(b, bits - 1)
      if op is Ops.SHL: return a << cnt
      return z3.LShR(a, cnt) if _unsigned(dt, a) else a >> cnt
    if z3.is_int_value(b):  # a constant count: a product or a floor division by a power of two
      k = b.as_long() & (bits - 1)
      return a * (1 << k) if op is Ops.SHL else a / (1 << k)  # Euclidean by a positive divisor: the floor, as >>
    w = width + (bits if op is Ops.SHL else 0)
    ba, cnt = z3.Int2BV(a, w), z3.Int2BV(b, w) & z3.BitVecVal(bits - 1, w)
    return z3.BV2Int(ba << cnt if op is Ops.SHL else ba >> cnt, is_signed=True)
  return f


def _max(dt: DType, a: z3.ExprRef, b: z3.ExprRef, width: int) -> z3.ExprRef:
  return z3.Or(a, b) if dt.kind == "b" else z3.If(lt(dt, a, b), b, a)


def _arith(fn: Callable) -> Callable: return lambda dt, *xs: fn(*xs[:-1])


TERMS: dict[Ops, Callable[..., z3.ExprRef]] = {
  Ops.NEG: lambda dt, a, width: z3.Not(a) if dt.kind == "b" else -a,
  Ops.ADD: lambda dt, a, b, width: z3.Or(a, b) if dt.kind == "b" else a + b, Ops.SUB: _arith(lambda a, b: a - b),
  Ops.MUL: lambda dt, a, b, width: z3.And(a, b) if dt.kind == "b" else a * b,
  Ops.MAX: _max, Ops.IDIV: _divmod(Ops.IDIV), Ops.MOD: _divmod(Ops.MOD),
  Ops.AND: _bitwise(Ops.AND), Ops.OR: _bitwise(Ops.OR), Ops.XOR: _bitwise(Ops.XOR), Ops.SHL: _shift(Ops.SHL), Ops.SHR: _shift(Ops.SHR),
  Ops.CMPLT: lambda dt, a, b, width: lt(dt, a, b), Ops.CMPNE: _arith(lambda a, b: a != b), Ops.CMPEQ: _arith(lambda a, b: a == b),
  Ops.WHERE: lambda dt, c, a, b, width: z3.If(c, a, b),
}


def term(op: Ops, dt: DType, args: list[z3.ExprRef], width: int = INDEX_WIDTH) -> z3.ExprRef | None:
  """The z3 value of op on args of dtype dt (WHERE: the condition first, dt the values'). None where the op has no
  z3 meaning (floats, an op outside its dtype class)."""
  if sort(dt) is None or not accepts(op, dt) or op not in TERMS: return None
  return TERMS[op](dt, *args, width)


def undefined(op: Ops, dt: DType, args: list[z3.ExprRef]) -> z3.BoolRef | None:
  """Where op on args hits a point C leaves undefined and tinyspec defines by choice (tinyspec.ops.scalar): division
  by zero, MIN / -1, a shift count outside the width; None when it never does."""
  if dt.kind not in "iux": return None
  if op in (Ops.IDIV, Ops.MOD):
    a, b = args
    conds = [b == const_like(b, 0)]
    if dt.kind == "i": conds.append(z3.And(a == const_like(a, dt.min), b == const_like(b, -1)))
    return z3.Or(*conds)
  if op in (Ops.SHL, Ops.SHR):
    b, bits = args[1], shift_bits(dt)
    if _unsigned(dt, b): return z3.UGE(b, const_like(b, bits))
    return z3.Or(b < const_like(b, 0), b >= const_like(b, bits))
  return None


def cast(src: DType, dst: DType, a: z3.ExprRef) -> z3.ExprRef | None:
  """CAST from src to dst of a term; None for floats (no z3 meaning)."""
  if sort(src) is None or sort(dst) is None: return None
  if dst.kind == "b": return a if z3.is_bool(a) else a != const(src, 0)
  if z3.is_bool(a): return z3.If(a, const(dst, 1), const(dst, 0))
  if z3.is_bv(a) and dst.kind in "iu":
    m, n = src.bits, dst.bits
    if n > m: return (z3.SignExt if src.kind == "i" else z3.ZeroExt)(n - m, a)
    return z3.Extract(n - 1, 0, a) if n < m else a
  e = as_int(src, a)
  return z3.Int2BV(e, dst.bits) if dst.kind in "iu" else e  # to index: the exact value; from index: wraps


def bitcast(src: DType, dst: DType, a: z3.ExprRef) -> z3.ExprRef | None:
  """BITCAST between fixed-width ints of one width keeps the bits; floats have no z3 meaning."""
  if z3.is_bv(a) and src.kind in "iu" and dst.kind in "iu" and src.bits == dst.bits: return a
  return None


def signed_bits(lo: int, hi: int) -> int:
  """The fewest bits k with [lo, hi] inside [-2**(k-1), 2**(k-1) - 1]."""
  return max((-lo - 1).bit_length() if lo < 0 else 0, hi.bit_length() if hi >= 0 else 0) + 1


def index_width(*ivs: tuple[int, int]) -> int:
  """A bit width that holds every value of the given index intervals as two's complement (at most INDEX_WIDTH + 1)."""
  return min(max(signed_bits(int(lo), int(hi)) for lo, hi in ivs), INDEX_WIDTH + 1) if ivs else INDEX_WIDTH



"""UOp integer expressions as z3 terms, shared by the KERNEL bounds proofs and the rewrite-rule prover.

Sorts: `index` is an unbounded z3 Int; a fixed-width integer dtype is a BitVec of its width, so two's complement
wrap-around is exact; bool is a z3 Bool. IDIV and MOD truncate toward zero as C does: on Ints that is built
explicitly from Euclidean division of absolute values, on BitVecs it is bvsdiv/bvsrem (signed) and bvudiv/bvurem
(unsigned), which SMT-LIB defines with truncation. The points docs/spec.md leaves undefined (division by zero, a
shift count outside [0, width), float to int) become fresh unconstrained variables, so no proof depends on them.
Nodes with no exact integer meaning (LOAD, floats, bitwise ops on `index`, ...) become fresh variables bounded by
their interval bounds (u.vmin, u.vmax), which are sound.
"""
from __future__ import annotations

from typing import Any

import z3

from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp

TIMEOUT_MS = 5000  # per bounds proof; an unknown result is reported as a timeout


def is_int_sort_dtype(dt: Any) -> bool:
  return isinstance(dt, DType) and dt.kind in "iux"


def c_idiv_int(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
  """a / b truncated toward zero, for z3 Ints (z3's own div is Euclidean). b == 0 is left to the caller."""
  aa, ab = z3.If(a >= 0, a, -a), z3.If(b >= 0, b, -b)
  q = aa / ab  # both non-negative: Euclidean, floor and truncation agree
  return z3.If((a >= 0) == (b >= 0), q, -q)


def c_mod_int(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
  """a % b with the sign of a, as C, for z3 Ints."""
  return a - b * c_idiv_int(a, b)


def c_idiv_bv(a: z3.BitVecRef, b: z3.BitVecRef, signed: bool) -> z3.BitVecRef:
  return a / b if signed else z3.UDiv(a, b)  # z3py's / on BitVecs is bvsdiv: truncates toward zero


def c_mod_bv(a: z3.BitVecRef, b: z3.BitVecRef, signed: bool) -> z3.BitVecRef:
  return z3.SRem(a, b) if signed else z3.URem(a, b)  # SRem's sign follows the dividend, as C's %


class Translator:
  """A memoized translation of UOps to z3 terms. The same node always gives the same term (and the same variable
  for RANGE, SPECIAL and every opaque node), so terms of two expressions over shared nodes can be compared.

  `constraints` collects what the variables are known to satisfy: 0 <= r < bound for RANGE and SPECIAL, and the
  interval bounds of opaque nodes. A rule prover builds terms for both sides of a rule and asks z3 whether they can
  differ under `constraints`."""

  def __init__(self, interval_hints: bool = True):
    self.memo: dict[UOp, z3.ExprRef] = {}
    self.constraints: list[z3.BoolRef] = []
    self.vars: dict[UOp, z3.ExprRef] = {}  # the variable of every RANGE, SPECIAL and opaque node
    self.interval_hints = interval_hints
    self._n = 0

  # ---- sorts and conversions ----
  @staticmethod
  def sort(dt: DType) -> z3.SortRef | None:
    if not isinstance(dt, DType): return None
    if dt.kind == "x": return z3.IntSort()
    if dt.kind in "iu": return z3.BitVecSort(dt.bits)
    if dt.kind == "b": return z3.BoolSort()
    if dt.kind == "f": return z3.RealSort()
    return None

  def const(self, dt: DType, v: Any) -> z3.ExprRef:
    if dt.kind == "x": return z3.IntVal(int(v))
    if dt.kind in "iu": return z3.BitVecVal(int(v) & ((1 << dt.bits) - 1), dt.bits)
    if dt.kind == "b": return z3.BoolVal(bool(v))
    return self.fresh(dt, "f")

  def as_int(self, e: z3.ExprRef, dt: DType) -> z3.ArithRef:
    """The mathematical integer value of a term of dtype dt (BitVecs read signed or unsigned by dt)."""
    if z3.is_bv(e): return z3.BV2Int(e, is_signed=dt.kind == "i")
    if z3.is_bool(e): return z3.If(e, z3.IntVal(1), z3.IntVal(0))
    return e

  def from_int(self, e: z3.ArithRef, dt: DType) -> z3.ExprRef:
    """An Int term converted to dt, wrapping modulo 2**bits for fixed widths (as CAST does)."""
    if dt.kind in "iu": return z3.Int2BV(e, dt.bits)
    if dt.kind == "b": return e != 0
    return e

  def lt(self, a: z3.ExprRef, b: z3.ExprRef, dt: DType) -> z3.BoolRef:
    if z3.is_bv(a): return a < b if dt.kind == "i" else z3.ULT(a, b)
    return a < b

  def fresh(self, dt: DType, hint: str = "v", u: UOp | None = None) -> z3.ExprRef:
    """A new variable of dt's sort; bounded by u's interval bounds when u is given."""
    self._n += 1
    name = f"{hint}{self._n}"
    srt = self.sort(dt)
    if srt is None: srt = z3.IntSort()
    v = z3.Const(name, srt)
    if u is not None and self.interval_hints and is_int_sort_dtype(dt):
      lo, hi = u.vmin, u.vmax
      if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool):
        iv = self.as_int(v, dt)
        self.constraints += [iv >= lo, iv <= hi]
    return v

  # ---- translation ----
  def __call__(self, u: UOp) -> z3.ExprRef:
    """The z3 term of u. Iterative: deep expressions do not recurse."""
    if u in self.memo: return self.memo[u]
    stack: list[tuple[UOp, bool]] = [(u, False)]
    while stack:
      x, ready = stack.pop()
      if x in self.memo: continue
      if not ready and self._descends(x):
        stack.append((x, True))
        stack.extend((s, False) for s in x.src if isinstance(s, UOp) and s not in self.memo)
        continue
      self.memo[x] = self._translate(x)
    return self.memo[u]

  def _descends(self, u: UOp) -> bool:
    return u.op in _EXACT and isinstance(u.dtype, DType) and all(isinstance(s, UOp) for s in u.src)

  def _translate(self, u: UOp) -> z3.ExprRef:
    dt = u.dtype
    if not isinstance(dt, DType) or dt.kind in "vf" or u.op not in _EXACT: return self._opaque(u)
    try: ret = _EXACT[u.op](self, u, [self.memo[s] for s in u.src])
    except (z3.Z3Exception, KeyError, IndexError, TypeError, ValueError, AttributeError): ret = None
    if ret is None or ret.sort() != self.sort(dt): return self._opaque(u)
    return ret

  def _opaque(self, u: UOp) -> z3.ExprRef:
    if u not in self.vars:
      dt = u.dtype if isinstance(u.dtype, DType) else dtypes.index
      self.vars[u] = self.fresh(dt, "v", u if isinstance(u.dtype, DType) else None)
    return self.vars[u]

  def _range(self, u: UOp, srcs: list) -> z3.ExprRef:
    (bound,), dt = srcs, u.dtype
    name = f"r{u.arg.axis}" if u.op is Ops.RANGE and hasattr(u.arg, "axis") else str(u.arg)
    self._n += 1
    v = z3.Const(f"{name}_{self._n}", self.sort(dt))
    self.vars[u] = v
    lo = self.const(dt, 0)
    self.constraints += [z3.Not(self.lt(v, lo, dt)), self.lt(v, bound, dt)]
    return v

  def _divmod(self, u: UOp, srcs: list) -> z3.ExprRef:
    a, b = srcs
    dt = u.dtype
    if z3.is_bv(a): exact = (c_idiv_bv if u.op is Ops.IDIV else c_mod_bv)(a, b, dt.kind == "i")
    else: exact = (c_idiv_int if u.op is Ops.IDIV else c_mod_int)(a, b)
    if z3.is_bv_value(b) or z3.is_int_value(b):
      return self.fresh(dt, "divzero") if b.as_long() == 0 else exact
    return z3.If(b == self.const(dt, 0), self.fresh(dt, "divzero"), exact)

  def _shift(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    a, b = srcs
    dt = u.dtype
    if z3.is_bv(a):
      bits = dt.bits
      if dt.kind == "i": inrange = z3.And(b >= 0, b < bits)
      else: inrange = z3.ULT(b, bits)
      exact = a << b if u.op is Ops.SHL else (a >> b if dt.kind == "i" else z3.LShR(a, b))
      return z3.If(inrange, exact, self.fresh(dt, "shift"))
    bsrc = u.src[1]
    if bsrc.op is Ops.CONST and isinstance(bsrc.arg, int) and bsrc.arg >= 0:
      p = z3.IntVal(1 << bsrc.arg)
      return a * p if u.op is Ops.SHL else a / p  # Euclidean by a positive power of two: the arithmetic shift
    return None

  def _cast(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    (a,), src_dt, dt = srcs, u.src[0].dtype, u.dtype
    if not isinstance(src_dt, DType) or src_dt.kind in "vf": return None
    if dt.kind == "b":
      return a if z3.is_bool(a) else a != self.const(src_dt, 0)
    if z3.is_bool(a): return z3.If(a, self.const(dt, 1), self.const(dt, 0))
    if z3.is_bv(a) and dt.kind in "iu":
      m, n = src_dt.bits, dt.bits
      if n > m: return (z3.SignExt if src_dt.kind == "i" else z3.ZeroExt)(n - m, a)
      return z3.Extract(n - 1, 0, a) if n < m else a
    return self.from_int(self.as_int(a, src_dt), dt)

  def _bitcast(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    (a,), src_dt, dt = srcs, u.src[0].dtype, u.dtype
    if z3.is_bv(a) and dt.kind in "iu" and isinstance(src_dt, DType) and src_dt.bits == dt.bits: return a
    return None

  def _bitwise(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    a, b = srcs
    if z3.is_bool(a): return {Ops.AND: z3.And, Ops.OR: z3.Or, Ops.XOR: z3.Xor}[u.op](a, b)
    if z3.is_bv(a): return {Ops.AND: a & b, Ops.OR: a | b, Ops.XOR: a ^ b}[u.op]
    return None  # unbounded ints have no bit pattern in z3's Int theory: opaque, bounded by intervals

  def _cmp(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    a, b = srcs
    sdt = u.src[0].dtype
    if not isinstance(sdt, DType) or sdt.kind in "vf": return None
    if u.op is Ops.CMPLT:
      if z3.is_bool(a): return z3.And(z3.Not(a), b)
      return self.lt(a, b, sdt)
    return a != b if u.op is Ops.CMPNE else a == b

  def _max(self, u: UOp, srcs: list) -> z3.ExprRef:
    a, b = srcs
    if z3.is_bool(a): return z3.Or(a, b)
    return z3.If(self.lt(a, b, u.dtype), b, a)


def _bool_or(fn):
  return lambda t, u, s: None if z3.is_bool(s[0]) else fn(t, u, s)


_EXACT: dict[Ops, Any] = {
  Ops.CONST: lambda t, u, s: t.const(u.dtype, u.arg),
  Ops.RANGE: Translator._range, Ops.SPECIAL: Translator._range,
  Ops.ADD: _bool_or(lambda t, u, s: s[0] + s[1]), Ops.SUB: _bool_or(lambda t, u, s: s[0] - s[1]),
  Ops.MUL: _bool_or(lambda t, u, s: s[0] * s[1]), Ops.NEG: _bool_or(lambda t, u, s: -s[0]),
  Ops.MAX: Translator._max, Ops.IDIV: Translator._divmod, Ops.MOD: Translator._divmod,
  Ops.SHL: Translator._shift, Ops.SHR: Translator._shift,
  Ops.AND: Translator._bitwise, Ops.OR: Translator._bitwise, Ops.XOR: Translator._bitwise,
  Ops.CMPLT: Translator._cmp, Ops.CMPNE: Translator._cmp, Ops.CMPEQ: Translator._cmp,
  Ops.WHERE: lambda t, u, s: z3.If(s[0], s[1], s[2]),
  Ops.CAST: Translator._cast, Ops.BITCAST: Translator._bitcast,
  Ops.DETACH: lambda t, u, s: s[0], Ops.CONTIGUOUS: lambda t, u, s: s[0],
}


class BoundsResult:
  """The outcome of an in-bounds proof: status is "proved", "violated" (with an example) or "unknown"."""
  __slots__ = ("status", "example", "value")

  def __init__(self, status: str, example: dict[str, int] | None = None, value: int | None = None):
    self.status, self.example, self.value = status, example, value

  def __repr__(self) -> str: return f"BoundsResult({self.status}, {self.example}, {self.value})"


def prove_in_bounds(idx: UOp, size: int, gate: UOp | None = None, timeout_ms: int | None = None) -> BoundsResult:
  """Whether 0 <= idx < size holds for every value of the ranges (and loaded values) where gate is true."""
  t = Translator()
  e = t(idx)
  ie = t.as_int(e, idx.dtype) if isinstance(idx.dtype, DType) else e
  s = z3.Solver()
  s.set(timeout=TIMEOUT_MS if timeout_ms is None else timeout_ms)
  if gate is not None:
    g = t(gate)
    if z3.is_bool(g): s.add(g)
  s.add(*t.constraints)
  s.add(z3.Or(ie < 0, ie >= size))
  r = s.check()
  if r == z3.unsat: return BoundsResult("proved")
  if r == z3.unknown: return BoundsResult("unknown")
  m = s.model()
  example: dict[str, int] = {}
  for node, v in t.vars.items():
    if node.op in (Ops.RANGE, Ops.SPECIAL):
      val = m.eval(t.as_int(v, node.dtype), model_completion=True)
      if z3.is_int_value(val): example[str(v).rsplit("_", 1)[0] if node.op is Ops.RANGE else str(node.arg)] = val.as_long()
  val = m.eval(ie, model_completion=True)
  return BoundsResult("violated", example, val.as_long() if z3.is_int_value(val) else None)

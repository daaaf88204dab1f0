"""Exact-integer encodings of a rule query: what `tinyspec prove` asks z3 when the native encoding is slow.

The native encoding (tinyspec.prove.evalsem) gives a fixed-width dtype a bit vector of its width and `index` an unbounded z3 Int.
Two things are hard for z3 there: nested division of 64-bit vectors (a divider circuit per IDIV), and bitwise ops
on `index`, which go through Int -> bit vector -> Int conversions. When an expression is built only from slots
(with known bounds), constants and integer ALU ops, interval arithmetic over exact integers tells, node by node,
the range of the node's exact value and whether a fixed-width node can wrap. With that the same question has two
more encodings with exactly the same answers:

  int   every integer node is a z3 Int holding its exact value; a fixed-width node that may wrap is reduced modulo
        2**bits explicitly. Division by constants stays linear, so z3's integer solver decides what bit-blasting
        a 64-bit divider cannot. Bitwise ops and shifts by a variable count have no Int form here.
  bv    every integer node is a bit vector of one width W wide enough for every node's exact (unwrapped) value
        plus a sign bit, so no operation wraps at W; a fixed-width node that may wrap keeps its low bits and is
        sign- or zero-extended again. Bitwise ops on `index` are then plain bit-vector ops: two's complement of
        the unbounded value, which is the int64 result wherever the values fit in int64, as the evaluator and
        the lowered programs compute them.

Both keep the evaluator's meaning at the points C leaves undefined (a IDIV 0 == 0, a MOD 0 == a, shift counts taken
modulo the width, 64 for `index`): every op's meaning and interval is the registry's (tinyspec.ops). A node of any other form (a LOAD, a
float, a BITCAST) makes the encoding unavailable (Unsupported); the prover then asks the native one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import z3

from tinyspec.dtype import DType, dtypes
from tinyspec.ops.intervals import raw_interval
from tinyspec.ops.smt import term, undefined
from tinyspec.uop import GroupOp, Ops, UOp

WIDTH_CAP = 256  # wider bit vectors than this are not worth bit-blasting
Interval = tuple[int, int]


class Unsupported(Exception):
  """The expression has a node with no exact-integer encoding here."""


def signed_bits(lo: int, hi: int) -> int:
  """The fewest bits k with [lo, hi] inside [-2**(k-1), 2**(k-1) - 1]."""
  return max((-lo - 1).bit_length() if lo < 0 else 0, hi.bit_length() if hi >= 0 else 0) + 1


def _range(dt: DType) -> Interval | None:
  return None if dt is dtypes.index else (dt.min, dt.max)


def _is_int(dt) -> bool: return isinstance(dt, DType) and dt.kind in "iux"
def _is_bool(dt) -> bool: return isinstance(dt, DType) and dt.kind == "b"


def _hull(*ivs: Interval) -> Interval: return (min(i[0] for i in ivs), max(i[1] for i in ivs))
def _corners(f: Callable[[int, int], int], a: Interval, b: Interval) -> Interval:
  v = [f(x, y) for x in a for y in b]
  return (min(v), max(v))


def _raw_interval(u: UOp, s: list[Interval | None]) -> Interval:
  """The exact integer range of integer node u (before any wrap), from its sources' ranges (None for bools): the
  registry's interval of the op; a CAST's exact value is its source's."""
  if u.op is Ops.CAST: return (0, 1) if s[0] is None else s[0]
  ivs = [(False, True) if x is None else x for x in s]
  try: return raw_interval(u.op, u.dtype, *ivs)
  except KeyError: raise Unsupported(f"{u.op.name} on {u.dtype.name}") from None


_INT_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL, Ops.MAX, Ops.WHERE, Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR,
                      Ops.SHL, Ops.SHR, Ops.CAST})
_BOOL_OPS = frozenset({Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.ADD, Ops.MUL, Ops.OR, Ops.XOR, Ops.MAX, Ops.WHERE, Ops.CAST})


@dataclass
class Analysis:
  """Every node of the expressions in order, the range of each integer node's value (after wrapping to its dtype),
  the range of its exact value before wrapping, and which nodes wrap."""
  order: list[UOp]
  iv: dict[UOp, Interval | None]
  raw: dict[UOp, Interval]
  wraps: set[UOp]

  @property
  def width(self) -> int:
    """The bit-vector width at which no node's exact value wraps, with a bit to spare for bvsdiv's MIN / -1."""
    ks = [signed_bits(*r) for r in self.raw.values()] + [signed_bits(*i) for i in self.iv.values() if i is not None]
    # shift counts up to 63 must be exact constants of the width (a count past the width then shifts everything out)
    if any(u.op in (Ops.SHL, Ops.SHR) for u in self.order): ks.append(7)
    return max(ks, default=1) + 1

  def nonlinear(self) -> bool:
    """A product of two non-constant nodes, or a division by one: where integer solving is nonlinear."""
    def var(x: UOp) -> bool: return (i := self.iv[x]) is None or i[0] != i[1]
    return any((u.op is Ops.MUL and var(u.src[0]) and var(u.src[1])) or (u.op in (Ops.IDIV, Ops.MOD) and var(u.src[1])) for u in self.order)

  def bitwise(self) -> bool:
    """A bitwise op on integers or a shift by a non-constant count: no Int form."""
    def var_count(u: UOp) -> bool: return (c := self.iv[u.src[1]]) is not None and c[0] != c[1]
    return any(_is_int(u.dtype) and (u.op in (Ops.AND, Ops.OR, Ops.XOR) or (u.op in (Ops.SHL, Ops.SHR) and var_count(u))) for u in self.order)


def analyze(roots: tuple[UOp, ...], slots: dict[UOp, Interval | None]) -> Analysis:
  """Interval analysis of expressions over `slots` (leaf node -> its range, None for a bool slot). Raises Unsupported
  for a node of any other form."""
  iv: dict[UOp, Interval | None] = dict(slots)
  raw: dict[UOp, Interval] = {}
  order: list[UOp] = []
  wraps: set[UOp] = set()
  for r in roots:
    for u in r.toposort(gate=lambda x: x not in slots):
      if u in iv: continue
      dt = u.dtype
      if u.op is Ops.CONST:
        if _is_bool(dt): iv[u] = None
        elif _is_int(dt) and isinstance(u.arg, int): iv[u] = (int(u.arg), int(u.arg))
        else: raise Unsupported(f"CONST {u.arg!r} of {dt}")
        order.append(u)
        continue
      if any(s not in iv for s in u.src): raise Unsupported(f"{u.op.name} over a node with no exact form")
      srcs = [s.dtype for s in u.src]
      if _is_bool(dt):
        if u.op not in _BOOL_OPS: raise Unsupported(f"{u.op.name} giving bool")
        if u.op in GroupOp.Comparison and not (srcs[0] == srcs[1] and (_is_int(srcs[0]) or _is_bool(srcs[0]))): raise Unsupported("comparison")
        if u.op is Ops.CAST and not (_is_int(srcs[0]) or _is_bool(srcs[0])): raise Unsupported(f"CAST from {srcs[0]}")
        if u.op not in GroupOp.Comparison and u.op not in (Ops.CAST, Ops.WHERE) and any(not _is_bool(d) for d in srcs):
          raise Unsupported(f"bool {u.op.name} of non-bool sources")
        if u.op is Ops.WHERE and not (len(srcs) == 3 and all(_is_bool(d) for d in srcs)): raise Unsupported("WHERE")
        iv[u] = None
      elif _is_int(dt):
        if u.op not in _INT_OPS: raise Unsupported(f"{u.op.name} on {dt.name}")
        if u.op is Ops.CAST:
          if not (_is_int(srcs[0]) or _is_bool(srcs[0])): raise Unsupported(f"CAST from {srcs[0]}")
        elif u.op is Ops.WHERE:
          if not (len(srcs) == 3 and _is_bool(srcs[0]) and srcs[1] is dt and srcs[2] is dt): raise Unsupported("WHERE")
        elif any(d is not dt for d in srcs): raise Unsupported(f"{u.op.name} with sources of other dtypes")
        r0 = _raw_interval(u, [iv[s] for s in u.src])
        raw[u] = r0
        rng = _range(dt)
        if rng is None or rng[0] <= r0[0] and r0[1] <= rng[1]: iv[u] = r0
        else:
          iv[u] = rng
          wraps.add(u)
      else: raise Unsupported(f"dtype {dt}")
      order.append(u)
  return Analysis(order, iv, raw, wraps)


class ExactForm:
  """Terms of every analysed node in one encoding: kind "int" (z3 Ints) or "bv" (bit vectors of the analysis width)."""

  def __init__(self, an: Analysis, kind: str, slot_vars: dict[UOp, str]):
    if kind not in ("int", "bv"): raise ValueError(f"kind must be 'int' or 'bv', not {kind!r}")
    if kind == "int" and an.bitwise(): raise Unsupported("bitwise ops have no Int form")
    self.an, self.kind = an, kind
    self.w = an.width
    if kind == "bv" and self.w > WIDTH_CAP: raise Unsupported(f"{self.w}-bit vectors")
    self.t: dict[UOp, z3.ExprRef] = {}
    for node, name in slot_vars.items():
      self.t[node] = z3.Bool(name) if an.iv[node] is None else (z3.Int(name) if kind == "int" else z3.BitVec(name, self.w))
    for u in an.order: self.t[u] = self._term(u)

  def __call__(self, u: UOp) -> z3.ExprRef: return self.t[u]

  def num(self, v: int) -> z3.ExprRef: return z3.IntVal(v) if self.kind == "int" else z3.BitVecVal(v, self.w)

  def within(self, u: UOp, lo: int, hi: int) -> z3.BoolRef:
    v = self.t[u]
    return z3.BoolVal(True) if self.an.iv[u] is None else z3.And(self.num(lo) <= v, v <= self.num(hi))

  def value(self, m: z3.ModelRef, u: UOp) -> int | bool:
    v = m.eval(self.t[u], model_completion=True)
    if z3.is_true(v) or z3.is_false(v): return z3.is_true(v)
    if z3.is_int_value(v): return v.as_long()
    x = v.as_long()
    return x - (1 << self.w) if x >> (self.w - 1) else x

  def _wrap(self, e: z3.ExprRef, dt: DType) -> z3.ExprRef:
    n = dt.bits
    if self.kind == "int":
      if dt.kind == "u": return e % (1 << n)  # Euclidean: in [0, 2**n)
      return (e + (1 << (n - 1))) % (1 << n) - (1 << (n - 1))
    low = z3.Extract(n - 1, 0, e)
    return z3.SignExt(self.w - n, low) if dt.kind == "i" else z3.ZeroExt(self.w - n, low)

  def _term(self, u: UOp) -> z3.ExprRef:
    """The registry's z3 meaning of u on this encoding's terms (tinyspec.ops.smt reads Ints and wide bit vectors as
    exact values), wrapped into u's dtype where the analysis says it may wrap."""
    dt, op = u.dtype, u.op
    a = [self.t[s] for s in u.src]
    if op is Ops.CONST: return z3.BoolVal(bool(u.arg)) if _is_bool(dt) else self.num(int(u.arg))
    sdt = u.src[0].dtype
    if op is Ops.CAST:
      if _is_bool(dt): return a[0] if _is_bool(sdt) else a[0] != self.num(0)
      e = z3.If(a[0], self.num(1), self.num(0)) if _is_bool(sdt) else a[0]  # the exact value is the source's
    else:
      if op in (Ops.SHL, Ops.SHR) and (c := self.an.iv[u.src[1]]) is not None and c[0] == c[1]: a[1] = self.num(c[0])
      e = term(op, u.src[-1].dtype, a, self.w)
      if e is None: raise Unsupported(f"{op.name} on {u.src[-1].dtype.name}")
      if _is_bool(dt): return e
    return self._wrap(e, dt) if u in self.an.wraps else e

  def defined(self, root: UOp) -> z3.BoolRef:
    """Where root's value is defined in C (no division by zero, no signed MIN / -1 on the path its value takes), as
    tinyspec.prove.evalsem.defined."""
    ok: dict[UOp, z3.BoolRef] = {}
    for u in root.toposort():
      srcs = [ok.get(s, z3.BoolVal(True)) for s in u.src]
      if u.op is Ops.WHERE:
        ok[u] = z3.And(srcs[0], z3.If(self.t[u.src[0]], srcs[1], srcs[2]))
        continue
      conds = [c for c in srcs if not z3.is_true(c)]
      if u.op in (Ops.IDIV, Ops.MOD) and _is_int(u.dtype):
        (alo, ahi), (blo, bhi) = self.an.iv[u.src[0]], self.an.iv[u.src[1]]
        # the registry's undefined points, asked only where the operands' ranges reach them
        if blo <= 0 <= bhi or (u.dtype.kind == "i" and alo <= u.dtype.min <= ahi and blo <= -1 <= bhi):
          conds.append(z3.Not(undefined(u.op, u.dtype, [self.t[u.src[0]], self.t[u.src[1]]])))
      ok[u] = z3.And(*conds) if conds else z3.BoolVal(True)
    return ok.get(root, z3.BoolVal(True))

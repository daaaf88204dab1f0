"""Selection rules of the simplifier: WHERE and MAX (tables pm_where and pm_max).

A condition is a bool, so WHERE of a condition and the two bool constants is the condition (or its negation); nested
WHEREs on one condition take the branch it already chose; a condition is known true inside the branch it selects and
false inside the other. These hold for every dtype of the branches; the simplifier applies them to integer and bool
branches (floats are left alone) and never inside a branch that loads, so no load's gate or index changes.
"""
from __future__ import annotations

from tinyspec.dtype import dtypes
from tinyspec.lower.sums import INTS, build, lin
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import GroupOp, Ops, UOp, substitute

INTS_BOOL = INTS | {dtypes.bool}
_TRUE, _FALSE = UOp.const(dtypes.bool, True), UOp.const(dtypes.bool, False)


def negated(u: UOp) -> UOp | None:
  """x when u is the negation of the bool x: x != True, x == False or x ^ True."""
  if u.dtype is not dtypes.bool or len(u.src) != 2 or u.src[0].dtype is not dtypes.bool: return None
  x, k = u.src
  if k.op is not Ops.CONST:
    x, k = k, x
    if k.op is not Ops.CONST: return None
  if (u.op is Ops.CMPNE or u.op is Ops.XOR) and k.arg is True: return x
  if u.op is Ops.CMPEQ and k.arg is False: return x
  return None


def not_not(u: UOp) -> UOp | None:
  """not (not x) is x."""
  if (v := negated(u)) is None: return None
  return negated(v)


def where_not_cond(w: UOp, c: UOp, a: UOp, b: UOp) -> UOp | None:
  """(not x).where(a, b) is x.where(b, a)."""
  return None if (x := negated(c)) is None else x.where(b, a)


def _pure(u: UOp) -> bool:
  # no load or address under u: substituting inside it changes no gate, index or effect
  return not any(x.op in (Ops.LOAD, Ops.INDEX, Ops.STORE, Ops.CALL) for x in u.toposort())


def where_closure(c: UOp, t: UOp, f: UOp) -> UOp | None:
  """In c.where(t, f), c is True within t and False within f (t and f pure values)."""
  ts, fs = t.toposort(), f.toposort()
  if (c not in ts and c not in fs) or not _pure(t) or not _pure(f): return None
  nt = substitute(t, {c: _TRUE}) if c in ts else t
  nf = substitute(f, {c: _FALSE}) if c in fs else f
  return c.where(nt, nf)


def where_combine_alu(alu: UOp, c: UOp, t: UOp, f: UOp, tt: UOp, ff: UOp) -> UOp | None:
  """c.where(t, f) op c.where(tt, ff) is c.where(t op tt, f op ff) when a branch pair is constant (it folds), for the
  ops with no undefined point (division and shifts excluded)."""
  if alu.op in (Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR) or alu.dtype not in INTS_BOOL: return None
  if not ((t.op is Ops.CONST and tt.op is Ops.CONST) or (f.op is Ops.CONST and ff.op is Ops.CONST)): return None
  return c.where(t.alu(alu.op, tt), f.alu(alu.op, ff))


def _zero(u: UOp) -> bool: return u.op is Ops.CONST and u.arg == 0


def _combines(t: UOp, tt: UOp, f: UOp, ff: UOp) -> bool:
  # one WHERE is smaller than two when a branch pair folds to a constant, or each branch pair keeps one side (the other 0)
  return (t.op is Ops.CONST and tt.op is Ops.CONST) or (f.op is Ops.CONST and ff.op is Ops.CONST) or \
    (_zero(tt) and _zero(f)) or (_zero(t) and _zero(ff))


def where_sum_combine(x: UOp) -> UOp | None:
  """In a sum, k1*c.where(t, f) + k2*c.where(tt, ff) is c.where(k1*t + k2*tt, k1*f + k2*ff) when a branch pair is
  constant or each pair has a zero side. Tried where the sum's last term is a WHERE."""
  t = x.src[-1]
  if t.op is Ops.MUL or t.op is Ops.NEG: t = t.src[0]
  if t.op is not Ops.WHERE or (a := lin(x)) is None: return None
  ws = [(b, k) for b, k in a.terms.items() if b.op is Ops.WHERE]
  dt = x.dtype
  for i, (w1, k1) in enumerate(ws):
    for w2, k2 in ws[i + 1:]:
      if w1.src[0] is not w2.src[0]: continue
      (_, t, f), (_, tt, ff) = w1.src, w2.src
      if not _combines(t, tt, f, ff): continue
      new = w1.src[0].where(build([(t, k1), (tt, k2)], 0, dt), build([(f, k1), (ff, k2)], 0, dt))
      terms = {b: k for b, k in a.terms.items() if b is not w1 and b is not w2}
      terms[new] = terms.get(new, 0) + 1
      return build(terms, a.const, dt)
  return None


def max_const_assoc(x: UOp, c1: UOp, c2: UOp) -> UOp:
  """max(max(x, c1), c2) is max(x, max(c1, c2))."""
  return x.maximum(UOp.const(x.dtype, max(c1.arg, c2.arg)))


_b = UPat.var("c", dtypes.bool)
_v = UPat.var("a", INTS_BOOL)

pm_where = PatternMatcher([
  ("where_bool_identity", UPat(Ops.WHERE, src=(_b, UPat.const(dtypes.bool, True), UPat.const(dtypes.bool, False))), lambda c: c),
  ("where_bool_not", UPat(Ops.WHERE, src=(_b, UPat.const(dtypes.bool, False), UPat.const(dtypes.bool, True))),
   lambda c: c.alu(Ops.CMPNE, _TRUE)),
  ("where_same_cond_then", UPat(Ops.WHERE, src=(_b, UPat(Ops.WHERE, src=(UPat.var("c"), _v, UPat.var("b"))), UPat.var("d"))),
   lambda c, a, b, d: c.where(a, d)),
  ("where_same_cond_else", UPat(Ops.WHERE, src=(_b, _v, UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("b"), UPat.var("d"))))),
   lambda c, a, b, d: c.where(a, d)),
  ("where_merge_and", UPat(Ops.WHERE, src=(_b, UPat(Ops.WHERE, src=(UPat.var("e", dtypes.bool), _v, UPat.var("d"))), UPat.var("d"))),
   lambda c, e, a, d: c.alu(Ops.AND, e).where(a, d)),
  ("where_merge_or", UPat(Ops.WHERE, src=(_b, _v, UPat(Ops.WHERE, src=(UPat.var("e", dtypes.bool), UPat.var("a"), UPat.var("d"))))),
   lambda c, e, a, d: c.alu(Ops.OR, e).where(a, d)),
  ("where_not_cond", UPat(Ops.WHERE, name="w", src=(UPat.var("c", dtypes.bool), _v, UPat.var("b"))), where_not_cond,
   tuple(UPat(Ops.WHERE, src=(UPat(op, src=(UPat.var("x", dtypes.bool), UPat.const(dtypes.bool, k))), _v, UPat.var("b")))
         for op, k in ((Ops.CMPNE, True), (Ops.CMPEQ, False), (Ops.XOR, True)))),
  ("not_not", UPat((Ops.CMPNE, Ops.CMPEQ, Ops.XOR), dtypes.bool, name="u"), not_not,
   tuple(UPat(o1, src=(UPat(o2, src=(UPat.var("x", dtypes.bool), UPat.const(dtypes.bool, k2))), UPat.const(dtypes.bool, k1)))
         for o1, k1 in ((Ops.CMPNE, True), (Ops.CMPEQ, False)) for o2, k2 in ((Ops.CMPNE, True), (Ops.XOR, True)))),
  ("where_combine_alu", UPat(GroupOp.Binary, name="alu", src=(UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat.var("t"), UPat.var("f"))),
                                                             UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("tt"), UPat.var("ff"))))),
   where_combine_alu),
  ("where_sum_combine", UPat((Ops.ADD, Ops.SUB), dtype=INTS, name="x"), where_sum_combine,
   (UPat(Ops.ADD, src=[UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat.cvar("t", INTS), UPat.var("f", INTS))),
                       UPat(Ops.WHERE, src=(UPat.var("c"), UPat.cvar("tt", INTS), UPat.var("ff", INTS)))]),
    UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat.var("t", INTS), UPat.cvar("f", INTS))),
                                          UPat.var("y", INTS)]),
                       UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("tt", INTS), UPat.cvar("ff", INTS)))]))),
  ("where_closure", UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat.var("t", INTS_BOOL), UPat.var("f"))), where_closure,
   (UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat(Ops.ADD, src=[UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a", INTS), UPat.var("b"))),
                                                                       UPat.var("y", INTS)]), UPat.var("f", INTS))),
    UPat(Ops.WHERE, src=(UPat.var("c", dtypes.bool), UPat.var("t", INTS),
                         UPat(Ops.MAX, src=[UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a", INTS), UPat.var("b"))), UPat.var("y", INTS)]))))),
], name="pm_where")

pm_max = PatternMatcher([
  ("max_const_assoc", UPat(Ops.MAX, src=[UPat(Ops.MAX, src=[UPat.var("x", INTS), UPat.cvar("c1", INTS)]), UPat.cvar("c2", INTS)]), max_const_assoc),
  ("where_as_max", UPat(Ops.WHERE, src=(UPat(Ops.CMPLT, src=(UPat.var("a", INTS), UPat.var("b"))), UPat.var("b"), UPat.var("a"))),
   lambda a, b: a.maximum(b)),
], name="pm_max")

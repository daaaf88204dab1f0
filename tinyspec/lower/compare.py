"""Comparison rules of the simplifier: constants moved across, common factors divided out, quotients compared as
numerators (table pm_compare). Comparisons the operands' bounds decide fold by bounds (simplify's pm_bounds).

A comparison of integers compares values, so a rule that rewrites one side as an exact sum needs that sum not to wrap:
every rule reads its sums through their linear forms (tinyspec.lower.sums) and applies only where the compared value is
the exact sum (`fits_exactly`) and every constant it makes is representable. CMPNE and CMPEQ hold modulo 2**bits, so
moving a constant across them needs no guard.
"""
from __future__ import annotations

import math

from tinyspec.dtype import dtypes
from tinyspec.lower.sums import INTS, build, fits, fits_exactly, lin, lin_range
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import Ops, UOp


def _lt(a: UOp, b: UOp) -> UOp: return a.alu(Ops.CMPLT, b)
def _c(u: UOp, v: int) -> UOp: return UOp.const(u.dtype, v)


def lt_offset(x: UOp, c: UOp) -> UOp | None:
  """S + k < c is S < c - k (and c < S + k is c - k < S), when S + k does not wrap and c - k is representable."""
  a, r = lin(x), fits_exactly(x)
  if a is None or r is None or not a.terms or not a.const or not fits(x.dtype, c.arg - a.const, c.arg - a.const): return None
  if not fits(x.dtype, r[0] - a.const, r[1] - a.const): return None  # S itself must not wrap either
  return build(a.terms, 0, x.dtype), _c(x, c.arg - a.const)


def _lt_offset_right(x: UOp, c: UOp) -> UOp | None:
  if (r := lt_offset(x, c)) is None: return None
  s, k = r
  return _lt(s, k)


def _lt_offset_left(c: UOp, x: UOp) -> UOp | None:
  if (r := lt_offset(x, c)) is None: return None
  s, k = r
  return _lt(k, s)


def _factor(x: UOp) -> tuple[UOp, int] | None:
  """(S, g) with x == g*S exactly, g > 1 the common factor of x's coefficients (x has no constant and does not wrap)."""
  a = lin(x)
  if a is None or not a.terms or a.const or fits_exactly(x) is None: return None
  g = math.gcd(*a.terms.values())
  if g <= 1: return None
  return build({b: f // g for b, f in a.terms.items()}, 0, x.dtype), g


def lt_scale(x: UOp, c: UOp) -> UOp | None:
  """g*S < c is S < ceil(c / g) for g > 1: a * 4 < 13 is a < 4."""
  if (r := _factor(x)) is None: return None
  s, g = r
  return _lt(s, _c(x, -((-c.arg) // g)))


def lt_scale_left(c: UOp, x: UOp) -> UOp | None:
  """c < g*S is floor(c / g) < S for g > 1."""
  if (r := _factor(x)) is None: return None
  s, g = r
  return _lt(_c(x, c.arg // g), s)


def lt_gcd(x: UOp, c: UOp) -> UOp | None:
  """P + g*S < c is S < c / g when g divides c and every coefficient of S, and the unit terms P lie in [0, g): the unit
  terms cannot reach the next multiple of g. (a*4 + b < 16 with b in [0, 3] is a < 4.)"""
  a = lin(x)
  if a is None or a.const or c.arg <= 0 or fits_exactly(x) is None: return None
  p = [(b, f) for b, f in a.terms.items() if abs(f) == 1]
  q = [(b, f) for b, f in a.terms.items() if abs(f) != 1]
  if not p or not q or (g := math.gcd(*(f for _, f in q), c.arg)) <= 1: return None
  lo, hi = lin_range(p, 0)
  if lo < 0 or hi >= g: return None
  return _lt(build([(b, f // g) for b, f in q], 0, x.dtype), _c(x, c.arg // g))


def lt_simplex(x: UOp) -> UOp | None:
  """sum(f_i * b_i) < 1 with every f_i > 0 and every b_i >= 0 is sum(b_i) < 1: both say every b_i is 0."""
  a = lin(x)
  if a is None or a.const or len(a.terms) < 1 or fits_exactly(x) is None: return None
  if any(f <= 0 or b.vmin < 0 for b, f in a.terms.items()) or all(f == 1 for f in a.terms.values()): return None
  bases = [(b, 1) for b in a.terms]
  lo, hi = lin_range(bases, 0)
  if not fits(x.dtype, lo, hi): return None
  return _lt(build(bases, 0, x.dtype), _c(x, 1))


def lt_quotient(q: UOp, c: UOp) -> UOp | None:
  """x // d < c for a constant d > 0 is x < c*d when c >= 1, and x < (c-1)*d + 1 when c <= 0 (C truncates toward zero)."""
  x, d = q.src
  if d.op is not Ops.CONST or d.arg <= 0: return None
  k = c.arg * d.arg if c.arg >= 1 else (c.arg - 1) * d.arg + 1
  return _lt(x, _c(x, k)) if fits(x.dtype, k, k) else None


def lt_quotient_left(c: UOp, q: UOp) -> UOp | None:
  """c < x // d for a constant d > 0 is (c+1)*d - 1 < x when c >= 0, and c*d < x when c < 0."""
  x, d = q.src
  if d.op is not Ops.CONST or d.arg <= 0: return None
  k = (c.arg + 1) * d.arg - 1 if c.arg >= 0 else c.arg * d.arg
  return _lt(_c(x, k), x) if fits(x.dtype, k, k) else None


def _no_min(u: UOp) -> bool:
  # -u reverses order unless u may be its dtype's minimum (which negates to itself): exact for signed u, and for
  # unsigned u > 0 too, where -u is 2**bits - u
  return u.dtype is dtypes.index or u.vmin > u.dtype.min


def lt_negated(x: UOp, y: UOp) -> UOp | None:
  """-x < -y is y < x when neither negation wraps."""
  return _lt(y, x) if _no_min(x) and _no_min(y) else None


def lt_negated_const(x: UOp, c: UOp) -> UOp | None:
  """-x < c is -c < x when -x does not wrap and -c is representable. Never for unsigned x: there -c is representable
  only for c == 0, and -x < 0 is false while 0 < x holds for every x > 0 (an unsigned -x wraps unless x is 0)."""
  if x.dtype.kind == "u": return None
  return _lt(_c(x, -c.arg), x) if _no_min(x) and fits(x.dtype, -c.arg, -c.arg) else None


def eq_offset(e: UOp, x: UOp, c: UOp) -> UOp | None:
  """S + k == c is S == c - k, and likewise for !=: both sides agree modulo 2**bits whatever wraps."""
  a = lin(x)
  if a is None or not a.terms or not a.const: return None
  return build(a.terms, 0, x.dtype).alu(e.op, UOp.const(x.dtype, c.arg - a.const))


_x, _c0 = UPat.var("x", INTS), UPat.cvar("c", INTS)

pm_compare = PatternMatcher([
  ("lt_offset", UPat(Ops.CMPLT, src=(_x, _c0)), _lt_offset_right),
  ("lt_offset_left", UPat(Ops.CMPLT, src=(_c0, _x)), _lt_offset_left),
  ("lt_quotient", UPat(Ops.CMPLT, src=(UPat(Ops.IDIV, name="q", dtype=INTS), _c0)), lt_quotient),
  ("lt_quotient_left", UPat(Ops.CMPLT, src=(_c0, UPat(Ops.IDIV, name="q", dtype=INTS))), lt_quotient_left),
  ("lt_scale", UPat(Ops.CMPLT, src=(_x, _c0)), lt_scale),
  ("lt_scale_left", UPat(Ops.CMPLT, src=(_c0, _x)), lt_scale_left),
  ("lt_gcd", UPat(Ops.CMPLT, src=(_x, _c0)), lt_gcd,
   (UPat(Ops.CMPLT, src=(UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[UPat.var("a", INTS), UPat.cvar("k", INTS)]), UPat.var("b", INTS)]), _c0)),)),
  ("lt_simplex", UPat(Ops.CMPLT, src=(_x, UPat.const(INTS, 1))), lt_simplex),
  ("lt_negated", UPat(Ops.CMPLT, src=(UPat(Ops.NEG, src=(_x,)), UPat(Ops.NEG, src=(UPat.var("y", INTS),)))), lt_negated),
  ("lt_negated_const", UPat(Ops.CMPLT, src=(UPat(Ops.NEG, src=(_x,)), _c0)), lt_negated_const),
  ("eq_offset", UPat((Ops.CMPEQ, Ops.CMPNE), name="e", src=[_x, _c0]), eq_offset),
], name="pm_compare")

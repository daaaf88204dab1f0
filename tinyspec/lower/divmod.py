"""Division and modulo rules of the simplifier: IDIV and MOD of sums, by constants and by variables (table pm_divmod).

tinyspec's IDIV and MOD truncate toward zero, as C does. Where the numerator is never negative and the divisor is a
positive constant, truncation is floor division, and the algebra of floor division applies: a sum splits into its
multiples of the divisor and a remainder, a sum congruent to one whose range lies in one period of the divisor has a
constant quotient, a common factor of every coefficient and the divisor cancels. A numerator that is never positive is
negated first (x // c == -((-x) // c), x % c == -((-x) % c) in C), a negative divisor too (x // c == -(x // -c),
x % c == x % -c). A numerator whose range crosses zero is left alone.

Every rule reads its numerator through its linear form (tinyspec.lower.sums) and applies only where the numerator's
value is its exact sum (no wrap-around: `fits_exactly`), and where any sum it builds under a new IDIV or MOD does not wrap
either. A result built only of ADD, SUB, NEG and MUL by constants needs no such guard: it agrees with the exact result
modulo 2**bits, and the exact result (a quotient or remainder of an exact value in range) is in range.
"""
from __future__ import annotations

import itertools
import math

from tinyspec.lower.sums import INTS, build, fits, fits_exactly, lin, lin_range
from tinyspec.ops.intervals import raw_interval
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import Ops, UOp

MAX_CHOICES = 16  # remainder choices the congruence rule tries per numerator at most


def _nonneg(x: UOp, c: UOp) -> bool:
  """x is a sum whose exact value is never negative, and c a positive constant: truncation is floor division here."""
  r = fits_exactly(x)
  return c.arg > 0 and r is not None and r[0] >= 0


def size(u: UOp) -> int:
  """Nodes of u's graph: what "simpler" means where a rule has several forms to choose from."""
  return len(u.toposort())


def _result(d: UOp, q_terms, q_const, r_terms, r_const) -> UOp:
  return build(q_terms, q_const, d.dtype) if d.op is Ops.IDIV else build(r_terms, r_const, d.dtype)


# ---- constant divisors, non-negative numerators ----
def divmod_congruence(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """x = sum(f_i * b_i) + k, each f_i written as q_i * c + r_i with r_i one of the two residues of f_i nearest zero: when
  rem = sum(r_i * b_i) + k % c stays within one period [p*c, (p+1)*c), x // c = sum(q_i * b_i) + k // c + p and
  x % c = rem - p*c. ((3 + 3a) // 4 with a in [0, 1] is a.)"""
  if not _nonneg(x, c): return None
  n, a = c.arg, lin(x)
  items = list(a.terms.items())
  if not items: return None
  choices = []
  for _, f in items:
    r = f % n
    choices.append((r, r - n) if 2 * r == n or len(items) == 1 else (min(r, r - n, key=abs),))
  if math.prod(len(ch) for ch in choices) > MAX_CHOICES: choices = [ch[:1] for ch in choices]
  k_q, k_r = divmod(a.const, n)
  for rems in itertools.product(*choices):
    rem = [(b, r) for (b, _), r in zip(items, rems)]
    lo, hi = lin_range(rem, k_r)
    if lo // n != hi // n: continue
    p = lo // n
    return _result(d, [(b, (f - r) // n) for (b, f), r in zip(items, rems)], k_q + p, rem, k_r - p * n)
  return None


def divmod_gcd(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """x = g*y + k with g = gcd(every coefficient, c) > 1: x // c == (y + (k // g) % (c/g)) // (c/g) + k // c and
  x % c == ((y + (k // g) % (c/g)) % (c/g)) * g + k % g, when that numerator is never negative (and does not wrap)."""
  if not _nonneg(x, c): return None
  n, a = c.arg, lin(x)
  if not a.terms or (g := math.gcd(*a.terms.values(), n)) <= 1: return None
  m = n // g
  y = [(b, f // g) for b, f in a.terms.items()]
  shift = (a.const // g) % m
  lo, hi = lin_range(y, shift)
  if lo < 0 or not fits(x.dtype, lo, hi): return None
  dt = x.dtype
  inner = build(y, shift, dt)
  if d.op is Ops.IDIV: return build([(inner.alu(Ops.IDIV, UOp.const(dt, m)), 1)], a.const // n, dt)
  return build([(inner.alu(Ops.MOD, UOp.const(dt, m)), g)], a.const % g, dt)


def divmod_split(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """x = c*Q + R, Q taking every whole multiple of c out of the positive coefficients and the constant: x // c == Q + R // c
  and x % c == R % c when R is never negative."""
  if not _nonneg(x, c): return None
  n, a = c.arg, lin(x)
  q = [(b, f // n) for b, f in a.terms.items() if f > 0 and f >= n]
  if not q and a.const < n: return None
  r = [(b, f % n if f > 0 else f) for b, f in a.terms.items()]
  r = [(b, f) for b, f in r if f]
  lo, hi = lin_range(r, a.const % n)
  if lo < 0 or not fits(x.dtype, lo, hi): return None
  rest = build(r, a.const % n, x.dtype)
  if d.op is Ops.MOD: return rest.alu(Ops.MOD, c)
  return build([*q, (rest.alu(Ops.IDIV, c), 1)], a.const // n, x.dtype)


def mod_nested_mod(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """(y % m + rest) % c == (y + rest) % c when c divides m (y % m and y are congruent modulo c) and both numerators are
  never negative."""
  if d.op is not Ops.MOD or not _nonneg(x, c): return None
  a, changed, terms = lin(x), False, []
  for b, f in a.terms.items():
    if b.op is Ops.MOD and b.src[1].op is Ops.CONST and b.src[1].arg > 0 and b.src[1].arg % c.arg == 0:
      b, changed = b.src[0], True
    terms.append((b, f))
  if not changed: return None
  merged: dict[UOp, int] = {}
  for b, f in terms: merged[b] = merged.get(b, 0) + f
  lo, hi = lin_range(merged, a.const)
  if lo < 0 or not fits(x.dtype, lo, hi): return None
  return build(merged, a.const, x.dtype).alu(Ops.MOD, c)


def divmod_nest_factor(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """x // c == (x // f) // (c/f) for a coefficient f of x dividing c, when x // f folds (by the rules above); x % c ==
  ((x // f) % (c/f)) * f + b, b the remainder of x modulo f as a sum in [0, f). The smallest of the candidates, taken
  only when it is smaller than d (so merging nested divisions, div_of_div_sum, never undoes it)."""
  if not _nonneg(x, c): return None
  n, a, dt = c.arg, lin(x), x.dtype
  best: UOp | None = None
  for f in sorted({abs(f) for f in a.terms.values() if 1 < abs(f) < n and n % abs(f) == 0}):
    fc = UOp.const(dt, f)
    inner = _fold_nonneg(UOp(Ops.IDIV, dt, (x, fc)), x, fc, nest=False)
    if inner is None or inner.vmin < 0: continue
    if d.op is Ops.IDIV: cand = inner.alu(Ops.IDIV, UOp.const(dt, n // f))
    else:
      b = [(t, k % f) for t, k in a.terms.items() if k % f]
      lo, hi = lin_range(b, a.const % f)
      if lo < 0 or hi >= f: continue
      cand = inner.alu(Ops.MOD, UOp.const(dt, n // f)) * fc + build(b, a.const % f, dt)
    if best is None or size(cand) < size(best): best = cand
  return best if best is not None and size(best) < size(d) else None


_NONNEG_RULES = (divmod_congruence, divmod_gcd, divmod_split, mod_nested_mod)


def _fold_nonneg(d: UOp, x: UOp, c: UOp, nest: bool = True) -> UOp | None:
  """The first of the non-negative-numerator rules that rewrites d = x IDIV/MOD c (nest: divmod_nest_factor too)."""
  for fn in (*_NONNEG_RULES, *((divmod_nest_factor,) if nest else ())):
    if (r := fn(d, x, c)) is not None: return r
  return None


# ---- signs ----
def divmod_negative_numerator(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """A numerator that is never positive: x // c == -((-x) // c) and x % c == -((-x) % c) (C truncates toward zero), taken
  when (-x) // c or (-x) % c folds."""
  r = fits_exactly(x)
  if c.arg <= 0 or r is None or r[1] > 0 or r[0] >= 0 or not fits(x.dtype, -r[1], -r[0]): return None
  a = lin(x)
  nx = build({b: -f for b, f in a.terms.items()}, -a.const, x.dtype)
  inner = _fold_nonneg(UOp(d.op, d.dtype, (nx, c)), nx, c)
  return None if inner is None or size(inner) >= size(d) else inner.alu(Ops.NEG)


def divmod_negative_divisor(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """x // c == -(x // -c) and x % c == x % -c for a constant c < -1 (-c representable)."""
  if c.arg >= -1 or not fits(x.dtype, -c.arg, -c.arg): return None
  nc = UOp.const(x.dtype, -c.arg)
  return x.alu(Ops.IDIV, nc).alu(Ops.NEG) if d.op is Ops.IDIV else x.alu(Ops.MOD, nc)


# ---- nested division ----
def div_of_mod(y: UOp, m: UOp, c: UOp) -> UOp | None:
  """(y % (k*c)) // c == (y // c) % k for constants c, k > 0, whatever the sign of y (both truncate toward zero)."""
  if c.arg <= 0 or m.arg <= 0 or m.arg % c.arg: return None
  return y.alu(Ops.IDIV, c).alu(Ops.MOD, UOp.const(y.dtype, m.arg // c.arg))


def mod_of_mod(y: UOp, m: UOp, c: UOp) -> UOp | None:
  """(y % m) % c == y % c when c divides m (c, m > 0): both are congruent to y modulo c, have y's sign and lie below c."""
  if c.arg <= 0 or m.arg <= 0 or m.arg % c.arg or m.arg == c.arg: return None
  return y.alu(Ops.MOD, c)


def div_of_div_sum(d: UOp, x: UOp, c: UOp) -> UOp | None:
  """(y // c1 + a) // c2 == (y + a*c1) // (c1*c2) for constants c1, c2 > 0 when y and y // c1 + a are never negative."""
  if d.op is not Ops.IDIV or not _nonneg(x, c): return None
  a = lin(x)
  if len(a.terms) != 1 or not a.const: return None
  (q, f), = a.terms.items()
  if f != 1 or q.op is not Ops.IDIV or q.src[1].op is not Ops.CONST or q.src[1].arg <= 0: return None
  y, c1 = q.src[0], q.src[1].arg
  dt = x.dtype
  r = fits_exactly(y)
  if r is None or r[0] < 0 or not fits(dt, r[0] + a.const * c1, r[1] + a.const * c1) or not fits(dt, c1 * c.arg, c1 * c.arg): return None
  ly = lin(y)
  return build(ly.terms, ly.const + a.const * c1, dt).alu(Ops.IDIV, UOp.const(dt, c1 * c.arg))


# ---- variable divisors ----
def _quotient_terms(x: UOp, y: UOp) -> tuple[dict[UOp, int], int, list[tuple[UOp, int]]] | None:
  """x's terms that are y or y times a factor a whose product never wraps, as the quotient's (terms, constant), and the
  rest of x's terms; None when no term is."""
  a, dt = lin(x), x.dtype
  if a is None: return None
  q: dict[UOp, int] = {}
  q_const, rest = 0, []
  for b, f in a.terms.items():
    if b is y: q_const += f
    elif b.op is Ops.MUL and y in b.src and fits(dt, *raw_interval(Ops.MUL, dt, *((s.vmin, s.vmax) for s in b.src))):
      other = b.src[1] if b.src[0] is y else b.src[0]
      q[other] = q.get(other, 0) + f
    else: rest.append((b, f))
  return (q, q_const, rest) if q or q_const else None


def divmod_var_factor(d: UOp, x: UOp, y: UOp) -> UOp | None:
  """(y*a + b) // y == a + b // y and (y*a + b) % y == b % y for a divisor y > 0, when y*a + b and b have one sign and
  neither wraps."""
  if y.op is Ops.CONST or y.vmin <= 0 or not _small(x, y) or (split := _quotient_terms(x, y)) is None: return None
  q, q_const, rest = split
  r = fits_exactly(x)
  if r is None: return None
  a, dt = lin(x), x.dtype
  lo, hi = lin_range(rest, a.const)
  if not fits(dt, lo, hi) or not ((r[0] >= 0 and lo >= 0) or (r[1] <= 0 and hi <= 0)): return None
  rem = build(rest, a.const, dt)
  if d.op is Ops.MOD: return rem.alu(Ops.MOD, y)
  return build([*q.items(), (rem.alu(Ops.IDIV, y), 1)], q_const, dt)


def mod_below_var(x: UOp, y: UOp) -> UOp | None:
  """x % y == x when |x| is below every |y| (y never 0)."""
  if y.op is Ops.CONST or (y.vmin <= 0 <= y.vmax) or not _small(x, y): return None
  lowest = min(abs(y.vmin), abs(y.vmax))
  return x if max(abs(x.vmin), abs(x.vmax)) < lowest else None


SMALL = 1 << 30  # bounds of an index-sized value: the variable-divisor rules keep to them (z3 decides those quickly)


def _small(*us: UOp) -> bool: return all(-SMALL <= u.vmin and u.vmax <= SMALL for u in us)


def mod_var_constant_quotient(x: UOp, y: UOp) -> UOp | None:
  """x % y == x - q*y when x // y is the constant q over the bounds (a divisor y that is never 0, values of index size)."""
  if y.op is Ops.CONST or y.vmin <= 0 <= y.vmax or not _small(x, y): return None
  q = x.alu(Ops.IDIV, y)
  if q.vmin != q.vmax: return None
  return x if q.vmin == 0 else x.alu(Ops.SUB, y * UOp.const(x.dtype, q.vmin))


def idiv_self(x: UOp) -> UOp | None:
  """x // x == 1 for an x that is never 0 (of index size)."""
  return UOp.const(x.dtype, 1) if (x.vmin > 0 or x.vmax < 0) and _small(x) else None


_y, _a, _b = UPat.var("y", INTS), UPat.var("a", INTS), UPat.var("b", INTS)
_k = UPat.cvar("k", INTS)
EXAMPLES = {
  "div_of_div_sum": (UPat(Ops.IDIV, src=(UPat(Ops.ADD, src=[UPat(Ops.IDIV, src=(_y, UPat.cvar("c1", INTS))), _k]), UPat.cvar("c2", INTS))),),
  "mod_nested_mod": (UPat(Ops.MOD, src=(UPat(Ops.ADD, src=[UPat(Ops.MOD, src=(_y, _k)), _b]), UPat.cvar("c", INTS))),),
  # the rule fires only where x // f folds to something smaller: most instances of the sum of two terms must be tried
  "divmod_nest_factor": (UPat((Ops.IDIV, Ops.MOD), src=(UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_a, _k]),
                                                                           UPat(Ops.MUL, src=[_b, UPat.cvar("k2", INTS)])]), UPat.cvar("c", INTS))),
                         *[UPat((Ops.IDIV, Ops.MOD), src=(UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_a, _k]), _b]), UPat.cvar("c", INTS)))] * 4),
  "divmod_var_factor": (UPat((Ops.IDIV, Ops.MOD), src=(UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_y, _a]), _b]), _y)),
                        UPat((Ops.IDIV, Ops.MOD), src=(UPat(Ops.ADD, src=[_y, _b]), _y))),
}

_xc = (UPat.var("x", INTS), UPat.cvar("c", INTS))
_dm = (Ops.IDIV, Ops.MOD)

pm_divmod = PatternMatcher([(*r, EXAMPLES.get(r[0], ())) for r in [
  ("divmod_negative_divisor", UPat(_dm, name="d", src=_xc), divmod_negative_divisor),
  ("div_of_mod", UPat(Ops.IDIV, src=(UPat(Ops.MOD, src=(UPat.var("y"), UPat.cvar("m", INTS))), UPat.cvar("c", INTS))), div_of_mod),
  ("mod_of_mod", UPat(Ops.MOD, src=(UPat(Ops.MOD, src=(UPat.var("y"), UPat.cvar("m", INTS))), UPat.cvar("c", INTS))), mod_of_mod),
  ("div_of_div_sum", UPat(Ops.IDIV, name="d", src=_xc), div_of_div_sum),
  ("divmod_congruence", UPat(_dm, name="d", src=_xc), divmod_congruence),
  ("divmod_gcd", UPat(_dm, name="d", src=_xc), divmod_gcd),
  ("divmod_split", UPat(_dm, name="d", src=_xc), divmod_split),
  ("mod_nested_mod", UPat(Ops.MOD, name="d", src=_xc), mod_nested_mod),
  ("divmod_nest_factor", UPat(_dm, name="d", src=_xc), divmod_nest_factor),
  ("divmod_negative_numerator", UPat(_dm, name="d", src=_xc), divmod_negative_numerator),
  ("idiv_self", UPat(Ops.IDIV, src=(UPat.var("x", INTS), UPat.var("x"))), idiv_self),
  ("divmod_var_factor", UPat(_dm, name="d", src=(UPat.var("x", INTS), UPat.var("y", INTS))), divmod_var_factor),
  ("mod_below_var", UPat(Ops.MOD, src=(UPat.var("x", INTS), UPat.var("y", INTS))), mod_below_var),
  ("mod_var_constant_quotient", UPat(Ops.MOD, src=(UPat.var("x", INTS), UPat.var("y", INTS))), mod_var_constant_quotient),
]], name="pm_divmod")

"""Integer sums as linear forms: the terms of an ADD / SUB / NEG / MUL-by-constant tree, their exact range, and the one
node each sum is written as. The simplifier's rules read sums through these, so the place of a term in a sum does not
decide whether a rule sees it.

The linear form of an integer node u is (terms, const) with u == sum(coef * base) + const, where a base is any node that
is not itself such a sum (a RANGE, a DEFINE_VAR, a LOAD, a product of two non-constants, an IDIV...). It is exact for
`index` and holds modulo 2**bits for a fixed-width dtype: ADD, SUB, NEG and MUL are ring operations, so wrap-around
cannot break it, and coefficients are kept as the dtype's signed residues. Its exact range is the range of the sum over
the bases' bounds; where that range fits the dtype, u's value is the sum itself (both are in range and agree modulo
2**bits), which is what a rule that divides or compares a sum needs (`fits_exactly`).

The canonical node of a sum (`build`): its positive terms in first-seen order, then its negative ones subtracted, then
the constant added (`c - t` when no term is positive); a term is its base or base * coef. Every prefix of a canonical sum
is canonical, and rebuilding a canonical node gives the node itself, so the rule that canonicalizes sums (pm_sums,
sum_canonical) reaches a fixed point whichever node of a sum it meets first. A canonical sum with no constant times a
constant, (S) * k, is canonical too (one node fewer than its terms each scaled); inside a larger sum it is spread out.

Linear forms are cached on the node; a sum of more than MAX_TERMS terms gets none (its rules leave it as it is), which
keeps the work per node bounded and long chains of additions linear.
"""
from __future__ import annotations

from tinyspec.dtype import DType, dtypes
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import Ops, UOp

INTS = frozenset({*dtypes.ints, dtypes.index})
MAX_TERMS = 256
_LINEAR = frozenset({Ops.CONST, Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL})
# membership by identity: hashing an Enum member or a DType runs Python code, and these tests run on every node
_LINEAR_IDS, _INT_IDS = frozenset(map(id, _LINEAR)), frozenset(map(id, INTS))
_KEY, _CANON = "lin", "sum_canonical"


class Lin:
  """terms: base -> nonzero coefficient, in first-seen order; const: the constant. Never changed once made."""
  __slots__ = ("terms", "const")

  def __init__(self, terms: dict[UOp, int], const: int):
    self.terms, self.const = terms, const

  def __repr__(self) -> str: return f"Lin({ {b.op.name: k for b, k in self.terms.items()} }, {self.const})"


def residue(dt: DType, v: int) -> int:
  """v as dt computes it: exact for index, the signed residue modulo 2**bits for a fixed-width dtype."""
  if dt is dtypes.index: return v
  m = 1 << dt.bits
  v %= m
  return v - m if v >= m >> 1 else v


def fits(dt: DType, lo: int, hi: int) -> bool:
  """Whether every value in [lo, hi] is representable in dt without wrapping (index is unbounded)."""
  return dt is dtypes.index or (dt.min <= lo and hi <= dt.max)


# ---- the linear form of a node ----
def _scale(a: Lin, k: int, dt: DType) -> Lin:
  if k == 1: return a
  terms = {b: residue(dt, c * k) for b, c in a.terms.items()}
  return Lin({b: c for b, c in terms.items() if c}, residue(dt, a.const * k))


def _merge(a: Lin, b: Lin, sign: int, dt: DType) -> Lin:
  if not b.terms and sign == 1: return a if not b.const else Lin(a.terms, residue(dt, a.const + b.const))
  if not a.terms and not a.const: return _scale(b, sign, dt)
  terms = dict(a.terms)
  for t, c in b.terms.items():
    n = residue(dt, terms.get(t, 0) + sign * c)
    if n: terms[t] = n
    else: terms.pop(t, None)
  return Lin(terms, residue(dt, a.const + sign * b.const))


def _linear_srcs(u: UOp) -> tuple[UOp, ...]:
  op = u.op
  if op is Ops.ADD or op is Ops.SUB or op is Ops.NEG: return u.src
  if op is Ops.MUL: return tuple(s for s in u.src if s.op is not Ops.CONST) if any(s.op is Ops.CONST for s in u.src) else ()
  return ()


def _lin_of(u: UOp) -> Lin | None:
  dt, op = u.dtype, u.op
  if op is Ops.CONST: return Lin({}, residue(dt, int(u.arg)))
  if op is Ops.MUL and (ks := [s for s in u.src if s.op is Ops.CONST]):
    x = u.src[1] if u.src[0] is ks[0] else u.src[0]
    a = x._cache[_KEY]
    return None if a is None else _scale(a, residue(dt, int(ks[0].arg)), dt)
  if op in (Ops.ADD, Ops.SUB):
    a, b = (s._cache[_KEY] for s in u.src)
    if a is None or b is None or len(a.terms) + len(b.terms) > MAX_TERMS: return None
    return _merge(a, b, 1 if op is Ops.ADD else -1, dt)
  if op is Ops.NEG:
    a = u.src[0]._cache[_KEY]
    return None if a is None else _scale(a, -1, dt)
  return Lin({u: 1}, 0)


_MISSING = object()


def lin(u: UOp) -> Lin | None:
  """The linear form of integer node u (None for other dtypes and for sums of more than MAX_TERMS terms). Cached;
  iterative over the sum's tree, so a long chain does not recurse."""
  c = u._cache
  if (r := c.get(_KEY, _MISSING)) is not _MISSING: return r
  if id(u.dtype) not in _INT_IDS:
    c[_KEY] = None
    return None
  if id(u.op) not in _LINEAR_IDS:
    c[_KEY] = r = Lin({u: 1}, 0)
    return r
  srcs = _linear_srcs(u)
  if all(_KEY in s._cache for s in srcs):  # what a bottom-up rewrite meets: the sources were asked first
    c[_KEY] = r = _lin_of(u) if all(s.dtype is u.dtype for s in srcs) else None
    return r
  stack: list[tuple[UOp, bool]] = [(u, False)]
  while stack:
    x, ready = stack.pop()
    if _KEY in x._cache: continue
    ints = id(x.dtype) in _INT_IDS
    xs = _linear_srcs(x) if ints else ()
    if not ready and any(_KEY not in s._cache for s in xs):
      stack.append((x, True))
      stack.extend((s, False) for s in xs if _KEY not in s._cache)
      continue
    x._cache[_KEY] = _lin_of(x) if ints and all(s.dtype is x.dtype for s in xs) else None
  return c[_KEY]


def lin_range(terms: dict[UOp, int] | list[tuple[UOp, int]], const: int) -> tuple[int, int]:
  """The range of sum(coef * base) + const over the bases' bounds, computed exactly."""
  lo = hi = const
  for b, k in (terms.items() if isinstance(terms, dict) else terms):
    x, y = k * int(b.vmin), k * int(b.vmax)
    lo, hi = lo + min(x, y), hi + max(x, y)
  return lo, hi


def exact_range(u: UOp) -> tuple[int, int] | None:
  """The range of u's linear form over its bases' bounds (the sum computed exactly, before any wrap); None without one.
  Cached."""
  c = u._cache
  if "lin_range" not in c:
    a = lin(u)
    c["lin_range"] = None if a is None else lin_range(a.terms, a.const)
  return c["lin_range"]


def fits_exactly(u: UOp) -> tuple[int, int] | None:
  """u's exact range when u's value is its linear form's exact sum everywhere (the range fits u's dtype); else None."""
  r = exact_range(u)
  return r if r is not None and fits(u.dtype, *r) else None


# ---- the canonical node of a sum ----
def _atom(u: UOp) -> bool: return id(u.op) not in _LINEAR_IDS


def term(dt: DType, base: UOp, k: int) -> UOp:
  """coef * base as a node: the base itself, or base * coef."""
  return base if k == 1 else base * UOp.const(dt, k)


def build(terms: dict[UOp, int] | list[tuple[UOp, int]], const: int, dt: DType) -> UOp:
  """The canonical node of sum(coef * base) + const in dt."""
  items = [(b, residue(dt, k)) for b, k in (terms.items() if isinstance(terms, dict) else terms)]
  items = [(b, k) for b, k in items if k]
  const = residue(dt, const)
  if not items: return UOp.const(dt, const)
  pos, neg = [(b, k) for b, k in items if k > 0], [(b, -k) for b, k in items if k < 0]
  made = []  # every prefix of a canonical sum is canonical: marked, so the rule need not rebuild them to know
  if pos:
    acc = term(dt, *pos[0])
    for b, k in pos[1:]: made.append(acc := acc + term(dt, b, k))
  elif const:
    made.append(acc := UOp.const(dt, const).alu(Ops.SUB, term(dt, *neg[0])))
    const = 0
  else: acc = neg[0][0].alu(Ops.NEG) if neg[0][1] == 1 else term(dt, neg[0][0], -neg[0][1])
  for b, k in neg[0 if pos else 1:]: made.append(acc := acc.alu(Ops.SUB, term(dt, b, k)))
  if const: made.append(acc := acc + UOp.const(dt, const))
  for u in made: u._cache[_CANON] = True
  return acc


def build_lin(a: Lin, dt: DType) -> UOp: return build(a.terms, a.const, dt)


def _positive_term(t: UOp) -> UOp | None:
  """The base of t when t is, by its form, a canonical term with a positive coefficient: an atom, or atom * k (k >= 2)."""
  if _atom(t): return t
  if t.op is Ops.MUL and t.src[1].op is Ops.CONST and _atom(t.src[0]) and residue(t.dtype, t.src[1].arg) >= 2: return t.src[0]
  return None


def _appends(u: UOp) -> bool | None:
  """Whether u is a canonical sum because it adds or subtracts a new term to a canonical sum with no constant: decided
  without rebuilding (a long chain of distinct terms stays linear). None: not decided this way."""
  if u.op not in (Ops.ADD, Ops.SUB): return None
  s, t = u.src
  if s.op not in (Ops.ADD, Ops.SUB) or not s._cache.get(_CANON): return None
  if t.op is Ops.CONST and u.op is Ops.ADD:  # the constant after the terms of a sum with a positive term and none yet
    a = lin(s)
    return True if a is not None and not a.const and t.arg and next(iter(a.terms.values())) > 0 else None
  if (b := _positive_term(t)) is None: return None
  a = lin(s)
  if a is None or a.const or b in a.terms: return None
  if u.op is Ops.ADD and s.op is Ops.SUB: return None  # positive terms come before the subtracted ones
  return True


def _term(u: UOp) -> UOp | None:
  """The base of u when u is a canonical term by its form alone: an atom, atom * k (k not 0, 1 or -1), or -atom."""
  if _atom(u): return u
  if u.op is Ops.MUL and u.src[1].op is Ops.CONST and _atom(u.src[0]) and residue(u.dtype, u.src[1].arg) not in (0, 1, -1): return u.src[0]
  if u.op is Ops.NEG and _atom(u.src[0]): return u.src[0]
  return None


def _small_canonical(u: UOp) -> bool:
  """A term, or a + b / a - b of two terms of distinct bases with a positive first: canonical by form (no rebuild)."""
  if id(u.dtype) not in _INT_IDS or any(s.dtype is not u.dtype for s in u.src): return False
  if u.op is Ops.MUL or u.op is Ops.NEG: return _term(u) is not None and not (u.op is Ops.MUL and u.src[0].op is Ops.CONST)
  if u.op is not Ops.ADD and u.op is not Ops.SUB: return False
  a, b = u.src
  ba, bb = _term(a), _term(b)
  if ba is None or bb is None or ba is bb or a.op is Ops.NEG or (a.op is Ops.MUL and residue(a.dtype, a.src[1].arg) < 0): return False
  return b.op is not Ops.NEG and not (b.op is Ops.MUL and residue(b.dtype, b.src[1].arg) < 0)


def _scaled_sum(u: UOp) -> bool:
  """u is (S) * k for a canonical sum S of terms alone: kept as it is (its terms are spread out where it is a term of a
  larger sum, whose canonical node is built from the terms)."""
  if u.op is not Ops.MUL or u.src[1].op is not Ops.CONST or u.src[1].arg in (0, 1): return False
  s = u.src[0]
  return s.op in (Ops.ADD, Ops.SUB) and bool(s._cache.get(_CANON)) and (a := lin(s)) is not None and not a.const


def canonical(x: UOp) -> UOp | None:
  """The canonical node of the sum x, or None when x is it already (then marked, so sums built on it are decided
  quickly) or has no linear form."""
  if x._cache.get(_CANON): return None
  if _small_canonical(x) or _appends(x) or _scaled_sum(x):
    x._cache[_CANON] = True
    return None
  a = lin(x)
  if a is None: return None
  new = build_lin(a, x.dtype)
  if new is x:
    x._cache[_CANON] = True
    return None
  return new


# ---- the rule ----
pm_sums = PatternMatcher([
  ("sum_canonical", UPat((Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL), dtype=INTS, name="x"), canonical),
], name="pm_sums")

"""simplify (KERNEL -> KERNEL): integer simplification, by rules `tinyspec prove` proves sound with z3.

Every rule is sound for `index` (unbounded) and for every fixed-width integer dtype under wrap-around and C's
truncating IDIV and MOD, negative values included. Rules that only hold without overflow check, from the sources'
bounds, that the exact (unwrapped) value of every node they rely on fits its dtype. Float arithmetic is left alone:
x + 0.0 is not x when x is -0.0, and the evaluator's rounding is the program's.

The rules, table by table, in the order pm_simplify tries them on a node:
  fold_constants  constant operands, casts of constants
  identities      x + 0, x * 1, x | 0, x << 0, (x ^ y) ^ y, x & -1, x // -1, WHERE of one branch, ...
  bounds_rules    what the operands' interval bounds decide (a node of one value, max, mod below the divisor, ...)
  divmod          IDIV and MOD of sums: congruences, common factors, nested division, variable divisors (lower/divmod.py)
  compare         comparisons: constants moved across, factors divided out (lower/compare.py)
  where, max      WHERE of bool constants, nested WHERE on one condition, max of max (lower/select.py)
  combine_terms   local reassociation of constants and like terms
  recombine       x % c + (x // c) * c recombined, the quotient also as this table simplifies it
  sums            every sum written one way, like terms collected (lower/sums.py)
  gates           LOAD and STORE gates that are constant
"""
from __future__ import annotations

from typing import Any

from tinyspec.dtype import DType, dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace, nested_rewrite, running
from tinyspec.lower.compare import pm_compare
from tinyspec.lower.divmod import pm_divmod
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.lower.ordering import pm_pin_order, pm_unpin_order
from tinyspec.lower.select import pm_max, pm_where
from tinyspec.lower.sums import INTS, build, fits, lin, pm_sums, residue
from tinyspec.ops import accepts, scalar
from tinyspec.ops.intervals import raw_interval
from tinyspec.ops.scalar import DIV_OVERFLOW, SIGNED_OVERFLOW, c_undefined, cdiv
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.uop import GroupOp, Ops, UOp

INTS_BOOL = INTS | {dtypes.bool}


# every backend wraps these the same way (-fwrapv, and a guard for MIN / -1), so folding them keeps the meaning
_FOLDED_UB = (None, SIGNED_OVERFLOW, DIV_OVERFLOW)


def exec_alu(op: Ops, dtype: DType, vals: tuple) -> Any:
  """The value of integer or bool op on constant operands (the registry's scalar meaning), wrapped into dtype; None
  where it is not folded: a point C leaves undefined other than signed wrap-around (division by zero, a shift count
  outside [0, bits), an index past int64), an op outside its dtype class, anything on floats."""
  if dtype.kind not in "iuxb" or not accepts(op, dtype): return None
  if op not in GroupOp.Comparison and op is not Ops.WHERE and c_undefined(op, dtype, *vals) not in _FOLDED_UB: return None
  return scalar.run(op, dtype, *vals)


def is_int_or_bool(u: UOp) -> bool: return u.dtype in INTS_BOOL


# ---- bounds helpers ----
_RING_OPS = (Ops.ADD, Ops.SUB, Ops.MUL)


def op_range(u: UOp) -> tuple[int, int] | None:
  """The exact (unwrapped) range of one ADD, SUB or MUL from its sources' bounds (the registry's); None for other ops."""
  if u.op not in _RING_OPS: return None
  return raw_interval(u.op, u.dtype, *((s.vmin, s.vmax) for s in u.src))


def no_wrap(u: UOp) -> bool:
  """Whether the ADD/SUB/MUL u never wraps, whatever its sources' values within their bounds."""
  if u.dtype is dtypes.index: return u.op in _RING_OPS  # unbounded: nothing wraps, no bounds to compute
  r = op_range(u)
  return r is not None and fits(u.dtype, *r)


def divide_exact(x: UOp, c: int) -> UOp | None:
  """x / c as an expression, when x is a sum of constants and products by constants all divisible by c (c > 0)
  and no node of that sum wraps; None otherwise."""
  if x.op is Ops.CONST: return UOp.const(x.dtype, x.arg // c) if x.arg % c == 0 else None
  if x.op is Ops.MUL and no_wrap(x):
    for y, k in (x.src, x.src[::-1]):
      if k.op is Ops.CONST and k.arg % c == 0: return y if k.arg == c else y * UOp.const(x.dtype, k.arg // c)
    return None
  if x.op is Ops.ADD and no_wrap(x):
    p, q = (divide_exact(s, c) for s in x.src)
    return p + q if p is not None and q is not None else None
  return None


def _same_sign_sum(total: UOp, part: UOp) -> bool:
  # truncating division splits over a sum only when the sum and the remainder part lie on the same side of zero
  r = op_range(total)
  if r is None or not fits(total.dtype, *r): return False
  return (r[0] >= 0 and part.vmin >= 0) or (r[1] <= 0 and part.vmax <= 0)


# ---- rule functions ----
def fold_const(x: UOp) -> UOp | None:
  if not all(s.op is Ops.CONST for s in x.src): return None
  # a comparison is folded on its operands' dtype (its own is bool), every other op on its own
  cmp = x.op in GroupOp.Comparison
  if not (all(is_int_or_bool(s) for s in x.src) if cmp else is_int_or_bool(x)): return None
  ret = exec_alu(x.op, x.src[0].dtype if cmp else x.dtype, tuple(s.arg for s in x.src))
  return None if ret is None else UOp.const(x.dtype, ret)


def fold_cast(x: UOp, c: UOp) -> UOp | None:
  if not (is_int_or_bool(x) and is_int_or_bool(c)): return None
  return UOp.const(x.dtype, c.arg)


def fold_by_bounds(x: UOp) -> UOp | None:
  if x.op is Ops.CONST or not is_int_or_bool(x) or x.vmin != x.vmax: return None
  return UOp.const(x.dtype, x.vmin)


def mod_below_divisor(x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  return x if -abs(c.arg) < x.vmin and x.vmax < abs(c.arg) else None


def mod_constant_quotient(m: UOp, x: UOp, c: UOp) -> UOp | None:
  # trunc(x/c) is monotone in x, so equal quotients at both ends of x's range mean one quotient q everywhere
  if c.arg == 0: return None
  q = cdiv(x.vmin, c.arg)
  if q == 0 or q != cdiv(x.vmax, c.arg): return None
  return x - UOp.const(x.dtype, q * c.arg)


def idiv_split(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or (q := divide_exact(x, c.arg)) is None or not _same_sign_sum(s, b): return None
  return q + b.alu(Ops.IDIV, c)


def mod_split(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or divide_exact(x, c.arg) is None or not _same_sign_sum(s, b): return None
  return b.alu(Ops.MOD, c)


def idiv_divisible(x: UOp, c: UOp) -> UOp | None:
  return divide_exact(x, c.arg) if c.arg > 0 and x.op is not Ops.CONST else None


def mod_divisible(x: UOp, c: UOp) -> UOp | None:
  return UOp.const(x.dtype, 0) if c.arg > 0 and x.op is not Ops.CONST and divide_exact(x, c.arg) is not None else None


def idiv_idiv(x: UOp, a: UOp, b: UOp) -> UOp | None:
  if a.arg <= 0 or b.arg <= 0 or not fits(x.dtype, 0, a.arg * b.arg): return None
  return x.alu(Ops.IDIV, UOp.const(x.dtype, a.arg * b.arg))


def max_by_bounds(m: UOp, a: UOp, b: UOp) -> UOp | None:
  return a if a.vmin >= b.vmax else None


def _c(u: UOp, v: int) -> UOp: return UOp.const(u.dtype, v)


def _all_ones(c: UOp) -> bool: return c.arg == (c.dtype.max if c.dtype.kind == "u" else -1)


def and_mask_noop(x: UOp, c: UOp) -> UOp | None:
  """x & m is x when m is 2**k - 1 and x lies in [0, m]: the mask clears no bit x can have."""
  m = c.arg
  return x if m > 0 and m & (m + 1) == 0 and x.vmin >= 0 and x.vmax <= m else None


def idiv_neg_one(x: UOp) -> UOp | None:
  """x // -1 is -x (MIN // -1 wraps to MIN, as -MIN does)."""
  return x.alu(Ops.NEG) if x.dtype.kind != "u" else None


# ---- x % c + (x // c) * c recombined ----
# Here, with the table: finding the quotient as a simplified sum holds it takes a rewrite with this very table (inside a
# pass run, the pass's own pm_simplify through its Trace: lower.base.nested_rewrite).
def divmod_recombine(x: UOp) -> UOp | None:
  """In a sum, m*(y % c) + m*c*(y // c) is m*y (C's division identity, whatever y's sign), y // c also in the form the
  simplifier gives it; and m*(y % c) + m*c*((y // c) % d) is m*(y % (c*d)) (c, d > 0, c*d representable). Tried where the
  sum's last term is a MOD or IDIV: a pair in a longer sum is met at the prefix that ends with its later term."""
  t = x.src[1]
  if t.op is Ops.MUL or t.op is Ops.NEG: t = t.src[0]
  if t.op is not Ops.MOD and t.op is not Ops.IDIV: return None
  a = lin(x)
  if a is None or len(a.terms) < 2: return None
  dt = x.dtype
  for b, m in a.terms.items():
    if b.op is not Ops.MOD or b.src[1].op is not Ops.CONST or b.src[1].arg <= 0: continue
    y, c = b.src
    terms = {t: k for t, k in a.terms.items() if t is not b}
    q = UOp(Ops.IDIV, dt, (y, c))
    ly, step = lin(y), residue(dt, m * c.arg)
    # the quotient as the sum holds it: y // c itself, or what the simplifier made of it (split, merged, shifted), whose
    # terms all come scaled by m*c: looked for only when some term is
    if not step or not any(k % step == 0 for k in terms.values()): continue
    for cand in dict.fromkeys((q, nested_rewrite(q, pm_simplify))):
      lq = lin(cand)
      if ly is None or lq is None or not lq.terms or any(terms.get(t) != residue(dt, m * c.arg * k) for t, k in lq.terms.items()): continue
      for t in lq.terms: del terms[t]
      for t, k in ly.terms.items(): terms[t] = terms.get(t, 0) + m * k
      return build(terms, a.const - m * c.arg * lq.const + m * ly.const, dt)
    for t, k in terms.items():
      if t.op is Ops.MOD and t.src[0] is q and t.src[1].op is Ops.CONST and t.src[1].arg > 0 and k == residue(dt, m * c.arg) \
         and fits(dt, c.arg * t.src[1].arg, c.arg * t.src[1].arg):
        del terms[t]
        wide = y.alu(Ops.MOD, UOp.const(dt, c.arg * t.src[1].arg))
        terms[wide] = terms.get(wide, 0) + m
        return build(terms, a.const, dt)
  return None


# ---- rule tables ----
_x, _y = UPat.var("x", INTS), UPat.var("y", INTS)
_c1, _c2 = UPat.cvar("c1", INTS), UPat.cvar("c2", INTS)
_cint = UPat.cvar("c", INTS)
_bx = UPat.var("x", dtypes.bool)

pm_fold_constants = PatternMatcher([
  ("fold_const_alu", UPat(GroupOp.ALU, name="x", src=UPat(Ops.CONST)), fold_const),
  ("fold_const_cast", UPat(Ops.CAST, name="x", src=(UPat.cvar("c"),)), fold_cast),
  ("fold_cast_same_dtype", UPat(Ops.CAST, name="c", src=(UPat.var("x"),)), lambda c, x: x if c.dtype is x.dtype else None),
], name="pm_fold_constants")

pm_identities = PatternMatcher([
  ("add_zero", UPat(Ops.ADD, src=[_x, UPat.const(INTS, 0)]), lambda x: x),
  ("sub_zero", UPat(Ops.SUB, src=(_x, UPat.const(INTS, 0))), lambda x: x),
  ("sub_self", UPat(Ops.SUB, src=(_x, _x)), lambda x: _c(x, 0)),
  ("mul_one", UPat(Ops.MUL, src=[_x, UPat.const(INTS, 1)]), lambda x: x),
  ("mul_zero", UPat(Ops.MUL, src=[_x, UPat.const(INTS, 0)]), lambda x: _c(x, 0)),
  ("idiv_one", UPat(Ops.IDIV, src=(_x, UPat.const(INTS, 1))), lambda x: x),
  ("mod_one", UPat(Ops.MOD, src=(_x, UPat.const(INTS, 1))), lambda x: _c(x, 0)),
  ("max_self", UPat(Ops.MAX, src=(_x, _x)), lambda x: x),
  ("xor_zero", UPat(Ops.XOR, src=[_x, UPat.const(INTS, 0)]), lambda x: x),
  ("and_self", UPat(Ops.AND, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: x),
  ("or_self", UPat(Ops.OR, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: x),
  ("and_true", UPat(Ops.AND, src=[_bx, UPat.const(dtypes.bool, True)]), lambda x: x),
  ("and_false", UPat(Ops.AND, src=[_bx, UPat.const(dtypes.bool, False)]), lambda x: _c(x, False)),
  ("or_true", UPat(Ops.OR, src=[_bx, UPat.const(dtypes.bool, True)]), lambda x: _c(x, True)),
  ("or_false", UPat(Ops.OR, src=[_bx, UPat.const(dtypes.bool, False)]), lambda x: x),
  ("xor_false", UPat(Ops.XOR, src=[_bx, UPat.const(dtypes.bool, False)]), lambda x: x),
  ("cmpne_false", UPat(Ops.CMPNE, src=[_bx, UPat.const(dtypes.bool, False)]), lambda x: x),
  ("cmpeq_true", UPat(Ops.CMPEQ, src=[_bx, UPat.const(dtypes.bool, True)]), lambda x: x),
  ("cmplt_self", UPat(Ops.CMPLT, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: UOp.const(dtypes.bool, False)),
  ("cmpne_self", UPat(Ops.CMPNE, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: UOp.const(dtypes.bool, False)),
  ("cmpeq_self", UPat(Ops.CMPEQ, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: UOp.const(dtypes.bool, True)),
  ("where_true", UPat(Ops.WHERE, src=(UPat.const(dtypes.bool, True), UPat.var("a"), UPat.var("b"))), lambda a, b: a),
  ("where_false", UPat(Ops.WHERE, src=(UPat.const(dtypes.bool, False), UPat.var("a"), UPat.var("b"))), lambda a, b: b),
  ("where_same", UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a"), UPat.var("a"))), lambda c, a: a),
  # bit identities
  ("or_zero", UPat(Ops.OR, src=[_x, UPat.const(INTS, 0)]), lambda x: x),
  ("shl_zero", UPat(Ops.SHL, src=(_x, UPat.const(INTS, 0))), lambda x: x),
  ("shr_zero", UPat(Ops.SHR, src=(_x, UPat.const(INTS, 0))), lambda x: x),
  ("and_zero", UPat(Ops.AND, src=[_x, UPat.const(INTS, 0)]), lambda x: _c(x, 0)),
  ("and_all_ones", UPat(Ops.AND, src=[_x, _cint]), lambda x, c: x if _all_ones(c) else None),
  ("or_all_ones", UPat(Ops.OR, src=[_x, _cint]), lambda x, c: c if _all_ones(c) else None),
  ("and_mask_noop", UPat(Ops.AND, src=[_x, _cint]), and_mask_noop),
  ("xor_self", UPat(Ops.XOR, src=(UPat.var("x", INTS_BOOL), UPat.var("x"))), lambda x: UOp.const(x.dtype, False if x.dtype is dtypes.bool else 0)),
  ("xor_twice", UPat(Ops.XOR, src=[UPat(Ops.XOR, src=[UPat.var("x", INTS_BOOL), UPat.var("y")]), UPat.var("y")]), lambda x, y: x),
  ("idiv_neg_one", UPat(Ops.IDIV, src=(_x, UPat.const(INTS, -1))), idiv_neg_one),
  ("mod_neg_one", UPat(Ops.MOD, src=(_x, UPat.const(INTS, -1))), lambda x: _c(x, 0) if x.dtype.kind != "u" else None),
  ("mod_mod_same", UPat(Ops.MOD, src=(UPat(Ops.MOD, name="m", src=(UPat.var("x", INTS), UPat.cvar("c", INTS))), UPat.cvar("c"))),
   lambda m, x, c: m),
], name="pm_identities")

pm_bounds = PatternMatcher([
  ("fold_by_bounds", UPat(GroupOp.ALU | {Ops.CAST}, name="x"), fold_by_bounds),
  ("max_by_bounds", UPat(Ops.MAX, name="m", src=[UPat.var("a", INTS), UPat.var("b", INTS)]), max_by_bounds),
  ("mod_below_divisor", UPat(Ops.MOD, src=(_x, _cint)), mod_below_divisor),
  ("mod_constant_quotient", UPat(Ops.MOD, name="m", src=(_x, _cint)), mod_constant_quotient),
  ("idiv_split_divisible", UPat(Ops.IDIV, name="d", src=(UPat(Ops.ADD, name="s", src=[_x, UPat.var("b")]), _cint)), idiv_split),
  ("mod_split_divisible", UPat(Ops.MOD, name="d", src=(UPat(Ops.ADD, name="s", src=[_x, UPat.var("b")]), _cint)), mod_split),
  ("idiv_divisible", UPat(Ops.IDIV, src=(_x, _cint)), idiv_divisible),
  ("mod_divisible", UPat(Ops.MOD, src=(_x, _cint)), mod_divisible),
  ("idiv_idiv", UPat(Ops.IDIV, src=(UPat(Ops.IDIV, src=(_x, UPat.cvar("a", INTS))), UPat.cvar("b", INTS))), idiv_idiv),
], name="pm_bounds")


def _not_const(u: UOp) -> bool: return u.op is not Ops.CONST


pm_combine_terms = PatternMatcher([
  # ring identities: they hold modulo 2**bits, so wrap-around cannot break them
  ("add_const_assoc", UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_x, _c1]), _c2]), lambda x, c1, c2: x + _c(x, c1.arg + c2.arg)),
  ("mul_const_assoc", UPat(Ops.MUL, src=[UPat(Ops.MUL, src=[_x, _c1]), _c2]), lambda x, c1, c2: x * _c(x, c1.arg * c2.arg)),
  ("sub_const_as_add", UPat(Ops.SUB, src=(_x, _c1)), lambda x, c1: x + _c(x, -c1.arg)),
  ("const_out_of_sum", UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[_x, _c1]), UPat.var("y", INTS, )]),
   lambda x, c1, y: (x + y) + c1 if y.op is not Ops.CONST else None),
  ("combine_mul_terms", UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_x, _c1]), UPat(Ops.MUL, src=[_x, _c2])]),
   lambda x, c1, c2: x * _c(x, c1.arg + c2.arg)),
  ("combine_mul_and_term", UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[_x, _c1]), _x]), lambda x, c1: x * _c(x, c1.arg + 1)),
  ("combine_self", UPat(Ops.ADD, src=(_x, _x)), lambda x: x * _c(x, 2) if _not_const(x) else None),
], name="pm_combine_terms")

_qy, _qc = UPat.var("y", INTS), UPat.cvar("c", INTS)
pm_recombine = PatternMatcher([
  ("divmod_recombine", UPat((Ops.ADD, Ops.SUB), dtype=INTS, name="x"), divmod_recombine,
   (UPat(Ops.ADD, src=[UPat(Ops.MOD, src=(_qy, _qc)), UPat(Ops.MUL, src=[UPat(Ops.IDIV, src=(_qy, _qc)), _qc])]),
    UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[UPat(Ops.MOD, src=(_qy, _qc)), UPat.cvar("m", INTS)]),
                       UPat(Ops.MUL, src=[UPat(Ops.IDIV, src=(_qy, _qc)), UPat.cvar("k", INTS)])]),
    UPat(Ops.ADD, src=[UPat(Ops.MOD, src=(_qy, _qc)),
                       UPat(Ops.MUL, src=[UPat(Ops.MOD, src=(UPat(Ops.IDIV, src=(_qy, _qc)), UPat.cvar("d", INTS))), _qc])]))),
], name="pm_recombine")

pm_gates = PatternMatcher([
  ("load_gate_true", UPat(Ops.LOAD, src=(UPat.var("i"), UPat.var("alt"), UPat.const(dtypes.bool, True))), lambda i, alt: i.load()),
  ("load_gate_false", UPat(Ops.LOAD, src=(UPat.var("i"), UPat.var("alt"), UPat.const(dtypes.bool, False))), lambda i, alt: alt),
  ("store_gate_true", UPat(Ops.STORE, src=(UPat.var("t"), UPat.var("v"), UPat.const(dtypes.bool, True))), lambda t, v: t.store(v)),
], name="pm_gates")

pm_simplify = PatternMatcher([r for pm in (pm_fold_constants, pm_identities, pm_bounds, pm_divmod, pm_compare, pm_where, pm_max, pm_combine_terms,
                                          pm_recombine, pm_sums, pm_gates) for r in pm.rules], "pm_simplify")


def simplify_body(body: UOp, tables: Tables, trace: Trace | None = None) -> UOp:
  """One kernel body (or any integer expression) simplified to a fixed point with tables.pm_simplify, every store
  kept after the effects its value read through (tables.pm_pin_order and pm_unpin_order, lower.ordering): folding may
  drop the loads that carried that order. tables: a pass's Tables holding those three (SIMPLIFY.tables); the rules'
  nested rewrites use them too."""
  trace = trace or Trace()
  with running(trace, tables):
    pinned = trace.rewrite(body, tables.pm_pin_order, body=True)
    return trace.rewrite(trace.rewrite(pinned, tables.pm_simplify, body=True), tables.pm_unpin_order, body=True)


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  return map_kernels(root, lambda call, body: simplify_body(body, tables, trace))


SIMPLIFY = Pass("simplify", Stage.KERNEL, Stage.KERNEL, run, (pm_pin_order, pm_simplify, pm_unpin_order))

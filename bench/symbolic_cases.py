"""The integer expressions the simplifier's strength is measured on (bench/symbolic.py), with their bounded variables.

Two parts, every expression over DEFINE_VARs of `index` dtype (C division: IDIV and MOD truncate toward zero):
  hand    the families of tinygrad's own symbolic tests, written as tinyspec expressions: division and modulo by
          constants (congruences, nested division by a factor, common factors of the terms), recombination of x % c and
          (x // c) * c, comparisons (scaled, offset, bounds-decided), WHERE of bool constants and of one condition twice,
          variable divisors, sums with like terms, bit identities, max folding;
  random  the same families drawn at random (seeded): sums of scaled variables divided, compared, recombined, selected.

`cases()` gives (family, name, expression) triples; the same every run.
"""
from __future__ import annotations

import random
from typing import Callable

from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp

IDX = dtypes.index
T, F = UOp.const(dtypes.bool, True), UOp.const(dtypes.bool, False)


def V(name: str, lo: int, hi: int) -> UOp: return UOp.variable(name, lo, hi)
def c(v: int) -> UOp: return UOp.const(IDX, v)
def idiv(a: UOp, b: UOp | int) -> UOp: return a.alu(Ops.IDIV, b if isinstance(b, UOp) else c(b))
def mod(a: UOp, b: UOp | int) -> UOp: return a.alu(Ops.MOD, b if isinstance(b, UOp) else c(b))
def lt(a: UOp, b: UOp | int) -> UOp: return a.alu(Ops.CMPLT, b if isinstance(b, UOp) else c(b))
def ge(a: UOp, b: UOp | int) -> UOp: return lt(a, b).alu(Ops.CMPNE, T)
def neg(a: UOp) -> UOp: return a.alu(Ops.NEG)
def xor(a: UOp, b: UOp | int) -> UOp: return a.alu(Ops.XOR, b if isinstance(b, UOp) else c(b))
def shl(a: UOp, k: int) -> UOp: return a.alu(Ops.SHL, c(k))
def shr(a: UOp, k: int) -> UOp: return a.alu(Ops.SHR, c(k))
def usum(*xs: UOp) -> UOp:
  out = xs[0]
  for x in xs[1:]: out = out + x
  return out


# the leaves the hand-written cases share
a8, b8 = V("a", 0, 8), V("b", 0, 8)
a, b = V("a", 0, 7), V("b", 0, 3)
gidx0, gidx1, gidx2 = V("gidx0", 0, 24), V("gidx1", 0, 1), V("gidx2", 0, 255)
lidx0, lidx1, lidx2, lidx3 = V("lidx0", 0, 1), V("lidx1", 0, 15), V("lidx2", 0, 3), V("lidx3", 0, 1)
g7, l12 = V("gidx0", 0, 7), V("lidx2", 0, 12)
idx = V("idx", 0, 100)
x10, y10 = V("x", 0, 10), V("y", 1, 10)
s = V("s", 0, 10)
alu0 = gidx2 * c(640) + gidx1 * c(160) + idiv(gidx0, 5) * c(2) + lidx0 * c(320) + lidx1 * c(10)
gl, ll = V("gidx", 0, 124), V("lidx", 0, 7)
l0, l1 = V("lidx0", 0, 7), V("lidx1", 0, 7)
a38 = V("a", 3, 8)
a3, b3, c3 = V("a", 0, 3), V("b", 0, 3), V("c", 0, 3)
cond = lt(V("k", 0, 3), 2)
xc = lt(V("x", 0, 3), 2)
aa, bb = xc.where(V("a", 0, 3), c(0)), xc.where(V("b", 0, 3), c(1))
c1, c2 = lt(s, 6), lt(c(2), s)
sp = V("sp", 0, 127)
r = V("r", 0, 15)


def _division_and_modulo_by_constants_1(add: Callable[[str, str, UOp], None]) -> None:
  """Division and modulo by constants."""
  add("divmod", "div_reduction", idiv(V("a", 2, 3), 2))
  add("divmod", "div_remove", idiv(a, 20))
  add("divmod", "sum_div_remove", idiv(a + b, 20))
  add("divmod", "sum_div_min_max", idiv(a + b, 2))
  add("divmod", "sum_div_factor", idiv(a * c(4) + b * c(4), 2))
  add("divmod", "sum_mod_factor", mod(a * c(4) + b * c(4), 2))
  add("divmod", "sum_div_some_factor", idiv(a * c(5) + b * c(4), 2))
  add("divmod", "sum_div_trim_const", idiv(a * c(4) + b * c(4) + c(7), 16))
  add("divmod", "sum_div_partial_factor", idiv(V("a", 0, 7) * c(6) + V("b", 0, 7) * c(6), 16))
  add("divmod", "sum_div_partial_factor_const", idiv(c(16) + V("a", 0, 7) * c(6) + V("b", 0, 7) * c(6), 16))
  add("divmod", "sum_div_30_20", idiv(a * c(30) + c(20), 20))
  add("divmod", "sum_div_no_factor", idiv(a * c(5) + b * c(5), 2))
  add("divmod", "mod_factor", mod(a * c(100) + b * c(50), 100))
  add("divmod", "mod_to_sub", mod(c(1) + V("a", 1, 2), 2))
  add("divmod", "mod_congruence", mod(c(3) + c(3) * V("a", 0, 3), 4))
  add("divmod", "mod_congruence_13", mod(c(17) + c(13) * V("a", 0, 3), 18))
  add("divmod", "mod_congruence_9", mod(c(2) + c(9) * V("a", 0, 3), 18))
  add("divmod", "mod_congruence_mul_add", mod(c(6) * (V("a", 0, 2) + c(1)), 9))
  add("divmod", "mod_congruence_two_vars", mod(c(9) + c(9) * V("x", 0, 3) + c(9) * V("y", 0, 3), 10))
  add("divmod", "mod_congruence_three_vars", mod(c(7) + c(9) * V("x", 0, 2) + c(9) * V("y", 0, 2) + V("z", 0, 2), 10))
  add("divmod", "mod_congruence_mod_term", mod(c(10) + c(12) * V("x", 0, 2) + mod(V("y", 0, 4), 3), 13))
  add("divmod", "div_congruence", idiv(c(3) + c(3) * V("a", 0, 3), 4))
  add("divmod", "div_congruence_issue", idiv(c(3) + c(3) * V("a", 0, 1), 4))
  add("divmod", "div_congruence_17", idiv(c(18) + c(17) * V("a", 0, 2) + c(17), 18))
  add("divmod", "div_congruence_two_vars", idiv(c(9) + c(19) * V("x", 0, 3) + c(18) * V("y", 0, 2), 10))
  add("divmod", "mod_binary", mod(c(3) + V("a", 0, 1), 4))
  add("divmod", "mod_binary_shift", mod(c(3) + V("a", 4, 5), 4))
  add("divmod", "sum_div_const", idiv(a * c(4) + c(3), 4))
  add("divmod", "sum_div_const_big", idiv(a * c(4) + c(3), 16))
  add("divmod", "mul_mod_large", mod(V("a", 0, 20) * c(10), 9))
  add("divmod", "mul_mod_small", mod(V("a", 0, 5) * c(10), 9))
  add("divmod", "mod_mod", mod(mod(V("a", 0, 31), 12), 4))
  add("divmod", "mod_mod_factor", mod(mod(c(4) * V("a", 0, 31), 12), 4))
  add("divmod", "mod_mod_keep", mod(mod(c(5) * V("a", 0, 31), 12), 5))
  add("divmod", "mod_mod_small", mod(mod(V("a", 0, 31), 4), 12))
  add("divmod", "div_div", idiv(idiv(V("a", 0, 1800), 10), 9))
  add("divmod", "div_const_div", idiv(idiv(V("a", 0, 124), 2) + c(1), 2))
  add("divmod", "div_const_div_wrong_sign", idiv(idiv(V("a", 0, 124) - c(10), 2) + c(10), 2))
  add("divmod", "neg_mod", mod(neg(V("a", 0, 124)), 4))
  add("divmod", "mod_neg_divisor", mod(V("a", 0, 124), -4))
  add("divmod", "div_neg_divisor", idiv(V("a", 1, 7), -2))
  add("divmod", "mul_neg_div", idiv(neg(V("a", 0, 2)), 3))
  add("divmod", "mul_neg_div_2", idiv(neg(V("a", 2, 7)), 3))
  add("divmod", "mod_mul_sum", mod(V("b", 0, 2) + V("a", 0, 5) * c(10), 9))
  add("divmod", "mod_remove", mod(V("a", 0, 6), 100))
  add("divmod", "big_mod", mod(V("a", -20, 20), 10))
  add("divmod", "big_mod_neg", mod(V("a", -20, 0), 10))
  add("divmod", "mul_div", idiv(V("a", 0, 10) * c(4), 4))
  add("divmod", "add_div_m2", idiv(V("a", 0, 5) - c(2), 4))
  add("divmod", "add_div_p4", idiv(V("a", 0, 5) + c(4), 4))
  add("divmod", "add_div_p5", idiv(V("a", 0, 5) + c(5), 4))
  add("divmod", "div_neg_rem", idiv(neg(V("a", 0, 255)) + c(256), 2))
  add("divmod", "mul_div_factor_mul", idiv(V("a", 0, 10) * c(8), 4))
  add("divmod", "mul_div_factor_mul_neg", idiv(V("a", 0, 10) * c(-8) + c(16), 4))
  add("divmod", "mul_div_factor_div", idiv(V("a", 0, 10) * c(4), 8))
  add("divmod", "mul_div_factor_div_neg", idiv(V("a", 0, 10) * c(-4) + c(4), 8))
  add("divmod", "mod_gcd_factor_neg", mod(V("a", 0, 10) * c(-4) + c(4), 8))
  add("divmod", "mod_gcd_fold_neg", mod(V("a", 0, 10) * c(-8) + c(20), 4))
  add("divmod", "sum_div_partial_remove", idiv(V("idx0", 0, 127) * c(4) + V("idx2", 0, 3), 4))
  add("divmod", "cdiv_const_eval", idiv(V("a", 0, 2) - c(12), 8))
  add("divmod", "cdiv_neg_eval", idiv(neg(V("a", 0, 2)), 7))
  add("divmod", "cmod_const_eval", mod(V("a", 1, 1) * c(-3), 8))
  add("divmod", "div_numerator_negative", idiv(V("idx", 0, 9) * c(-10), 11))
  add("divmod", "nest_div_negative_factor", idiv(V("r0", 0, 9) * c(-7) + V("r1", 0, 6) + c(63), 35))
  add("divmod", "div_into_mod", idiv(mod(V("idx", 0, 16) * c(4), 8), 4))
  add("divmod", "div_neg_cancel_199", idiv(neg(idx) + c(199), -4) + c(50))
  add("divmod", "div_neg_cancel_200", idiv(neg(idx) + c(200), -4) + c(50))
  add("divmod", "div_neg_cancel_201", idiv(neg(idx) + c(201), -4) + c(50))
  add("divmod", "div_neg_half", idiv(neg(idx), 2))
  add("divmod", "div_by_neg_two", idiv(idx, -2))


def _division_and_modulo_by_constants_2(add: Callable[[str, str, UOp], None]) -> None:
  """Division and modulo by constants (continued)."""
  add("divmod", "sum_div_big_const_19", idiv(gidx0 + c(19), 20))
  add("divmod", "sum_div_big_const_20", idiv(gidx0 + c(20), 20))
  add("divmod", "sum_div_big_const_21", idiv(gidx0 + c(21), 20))
  add("divmod", "sum_div_complex1", idiv(alu0 + lidx2 * c(2) + c(1), 20))
  add("divmod", "sum_div_complex2", idiv(g7 * c(4) + V("lidx2", 0, 1) * c(2) + c(1), 10))
  add("divmod", "sum_div_complex2b", idiv(g7 * c(4) + V("lidx2", 0, 1) * c(2) + lidx3, 10))
  add("divmod", "sum_div_complex2c", idiv(g7 * c(2) + V("lidx2", 0, 1), 10))
  add("divmod", "sum_div_complex3", idiv(g7 * c(4) + l12 * c(2) + lidx3, 12))
  add("divmod", "sum_div_complex3b", idiv(l12 * c(2) + g7 * c(4) + lidx3, 12))
  for k in (999, 1000, 1001, 1002):
    add("divmod", f"div_neg_all_range_{k}", idiv(neg(gl) * c(8) - ll + c(k), -4) + c(250))
  for k in (14, 134, 142):
    add("divmod", f"div_neg_then_neg_{k}", idiv(neg(l0) - l1 + c(k), -32) + c(4))
  add("divmod", "arange_unrolled2_neg", neg(idiv(c(255) - V("ridx", 0, 255), 2)) - idiv(c(256) - V("ridx", 0, 255), 2))
  add("divmod", "mod_min_max_var", mod(x10, y10))
  add("divmod", "div_min_max_var", idiv(x10, y10))
  add("divmod", "divmod_var_const_x", idiv(V("x", 20, 23), V("y", 8, 10)))
  add("divmod", "divmod_var_const_m", mod(V("x", 20, 23), V("y", 8, 10)))
  add("divmod", "mod_factor_negative", mod(c(-29) + V("a", 0, 10) + V("b", 0, 10) * c(28), 28))
  add("divmod", "div_drop_small_terms", idiv(V("l1", 0, 1) + V("g1", 0, 10) * c(18) + V("r5", 0, 2) * c(18) + V("l0", 0, 1) * c(162)
                                         + V("g0", 0, 10) * c(2) + V("r6", 0, 2) * c(2) - c(40), 18))


def _recombination(add: Callable[[str, str, UOp], None]) -> None:
  """Recombination."""
  add("recombine", "div_mod_recombine", mod(gl, 4) + idiv(gl, 4) * c(4))
  add("recombine", "div_mod_recombine_swapped", idiv(gl, 4) * c(4) + mod(gl, 4))
  add("recombine", "recombine_folded_mod", mod(c(31) * V("a", 0, 2) + c(1), 30) + idiv(c(31) * V("a", 0, 2) + c(1), 30) * c(30))
  add("recombine", "recombine_with_gcd", mod(c(16) * V("b", 0, 100) + c(2), 18) + idiv(c(16) * V("b", 0, 100) + c(2), 18) * c(18))
  add("recombine", "recombine_scaled", mod(gl, 4) * c(3) + idiv(gl, 4) * c(12))
  add("recombine", "recombine_nested", mod(gl, 4) + mod(idiv(gl, 4), 8) * c(4))
  add("recombine", "recombine_in_sum", ll + mod(gl, 4) + ll * c(2) + idiv(gl, 4) * c(4))
  add("recombine", "recombine_negative", mod(V("n", -30, 30), 7) + idiv(V("n", -30, 30), 7) * c(7))
  add("recombine", "recombine_two_level", mod(idx, 3) + mod(idiv(idx, 3), 5) * c(3) + idiv(idx, 15) * c(15))


def _comparisons(add: Callable[[str, str, UOp], None]) -> None:
  """Comparisons."""
  for k in (4, 8, 77, 9, 3, 2):
    add("compare", f"lt_{k}", lt(a38, k))
    add("compare", f"ge_{k}", ge(a38, k))
  add("compare", "lt_vars_decided", lt(V("a", 3, 4), V("b", 5, 6)))
  add("compare", "lt_vars_open", lt(V("a", 3, 5), V("b", 5, 6)))
  add("compare", "lt_vars_false", lt(V("a", 5, 6), V("b", 3, 5)))
  add("compare", "lt_self", lt(V("a", 3, 4), V("a", 3, 4)))
  add("compare", "lt_divides", lt(V("idx", 0, 511) * c(4) + V("f", 0, 3), 512))
  add("compare", "lt_divides_and", lt(V("i1", 0, 511) * c(4) + V("f", 0, 3), 512).alu(Ops.AND, lt(V("i2", 0, 511) * c(4) + V("f", 0, 3), 512)))
  add("compare", "lt_factors", lt(V("i1", 0, 511) * c(4) + V("f", 0, 256), 512))
  add("compare", "sum_lt_fold", lt(V("a", 0, 7) * c(4) + V("b", 0, 3), 16))
  add("compare", "sum_lt_no_fold", lt(V("a", 0, 7) * c(4) + V("b", 0, 4), 16))
  add("compare", "sum_lt_fold_12", lt(V("u", 0, 3) + V("a", 0, 1529) * c(12), 4 * 67))
  add("compare", "mul_lt_13", lt(V("a", 0, 5) * c(4), 13))
  add("compare", "mul_lt_16", lt(V("a", 0, 5) * c(4), 16))
  add("compare", "mul_neg_lt", lt(V("a", 0, 5) * c(-2), 0))
  add("compare", "mul_ge_12", ge(V("a", 0, 5) * c(4), 12))
  add("compare", "mul_ge_13", ge(V("a", 0, 5) * c(4), 13))
  add("compare", "ge_remove", ge(V("a", 0, 6), 25))
  add("compare", "lt_remove_neg", lt(V("a", 0, 6), -3))
  add("compare", "lt_sum_remove", lt(V("a", 0, 6) + c(2), 3))
  add("compare", "lt_simple_factor", lt(V("a", 0, 6) * c(6) + V("b", 0, 6) * c(6), 8))
  add("compare", "lt_sum_factor_rhs_partial", lt(V("a", 0, 6) * c(6) + V("b", 0, 6) * c(4) + V("c", 0, 6) * c(8), 4))
  add("compare", "lt_sum_factor_rhs_all", lt(V("a", 0, 6) * c(6) + V("b", 0, 6) * c(4) + V("c", 0, 6) * c(8), 2))
  add("compare", "idiv_lt", lt(idiv(V("idx", 0, 24), 4), 3))
  add("compare", "idiv_lt_shift", lt(idiv(V("idx", 0, 24) - c(20), 4), -3))
  add("compare", "idiv_lt_shift_0", lt(idiv(V("idx", 0, 24) - c(10), 4), 0))
  add("compare", "idiv_neg_lt", lt(idiv(V("idx", 0, 24), -4), -3))
  add("compare", "simplex_1", ge(a3, 1))
  add("compare", "simplex_2", ge(a3 + b3, 1))
  add("compare", "simplex_scaled", ge(a3 * c(3) + b3 * c(4), 1))
  add("compare", "simplex_negative", ge(a3 * c(-3) + b3 * c(4), 1))
  add("compare", "simplex_signed_var", ge(a3 * c(3) + V("d", -3, 3) * c(4), 1))
  add("compare", "simplex_three", ge(a3 + b3 + c3 * c(2), 1))
  add("compare", "simplex_three_scaled", ge(a3 + b3 * c(2) + c3 * c(4), 1))
  add("compare", "neg_in_comp", lt(neg(a3), neg(b3)))
  add("compare", "offset_both_sides", lt(c(3), a8 + c(7)))
  add("compare", "eq_offset", (a8 + c(3)).alu(Ops.CMPEQ, c(5)))
  add("compare", "ne_offset", (a8 + c(3)).alu(Ops.CMPNE, c(5)))
  add("compare", "symbolic_div", lt(c(0), idiv(V("n", 3, 390), V("d", 1, 19))))


def _where(add: Callable[[str, str, UOp], None]) -> None:
  """WHERE."""
  add("where", "where_removal", lt(V("a", 0, 3), 2).where(T, F))
  add("where", "where_removal_twice", cond.where(T, F).where(T, F))
  add("where", "where_removal_not", cond.where(F, T))
  add("where", "where_removal_not_twice", cond.where(F, T).where(F, T))
  add("where", "where_combine_add", aa + bb)
  add("where", "where_combine_max", aa.maximum(bb))
  add("where", "where_combine_chain", V("c", 0, 3) + aa + bb)
  add("where", "where_keep", bb + xc.where(V("c", 0, 3), V("c", 0, 3) + c(1)))
  add("where", "negation_in_where", xc.alu(Ops.CMPNE, T).where(V("a", 0, 3), V("b", 0, 3)))
  add("where", "where_merge_branches", c1.where(c2.where(V("a", 0, 3), V("b", 0, 3)), V("b", 0, 3)))
  add("where", "where_merge_branches2", lt(s, 5).where(lt(s, 6).where(V("a", 0, 3), V("b", 0, 3)), V("b", 0, 3)))
  add("where", "where_same_then", cond.where(cond.where(a8, b8), c(3)))
  add("where", "where_same_else", cond.where(a8, cond.where(b8, c(3))))
  add("where", "where_same_branches", cond.where(a8 + c(1), a8 + c(1)))
  add("where", "where_const_cond", lt(a8, 20).where(a8, b8))
  add("where", "gated_load", lt(V("idx", 0, 24), 4).where(idiv(V("idx", 0, 24), 4), c(-1)))
  add("where", "where_complementary", cond.where(a8, c(0)) + cond.where(c(0), b8))
  add("where", "where_closure", cond.where(cond.where(a8, b8) + c(2), c(0)))


def _variable_divisors(add: Callable[[str, str, UOp], None]) -> None:
  """Variable divisors."""
  add("vardiv", "factor_remainder", idiv(V("d", 1, 9) * V("a", 0, 5) + V("b", 0, 4), V("d", 1, 9)))
  add("vardiv", "factor_remainder_mod", mod(V("d", 1, 9) * V("a", 0, 5) + V("b", 0, 4), V("d", 1, 9)))
  add("vardiv", "variable_divmod", idiv(V("i0", 0, 2) * (sp + c(1)) + V("i1", 0, 3), sp + c(4)))
  add("vardiv", "div_self", idiv(V("d", 1, 9), V("d", 1, 9)))
  add("vardiv", "mod_self", mod(V("d", 1, 9), V("d", 1, 9)))
  add("vardiv", "mod_below_var", mod(V("x", 0, 7), V("d", 8, 12)))
  add("vardiv", "factor_remainder_scaled", idiv(V("d", 2, 9) * V("a", 0, 5) * c(3) + V("b", 0, 1), V("d", 2, 9)))


def _sums(add: Callable[[str, str, UOp], None]) -> None:
  """Sums."""
  add("sums", "factorize", a8 * c(2) + a8 * c(3))
  add("sums", "factorize_b", b8 + a8 * c(2) + a8 * c(3))
  add("sums", "factorize_no_mul", a8 + a8 * c(3))
  add("sums", "factorize_no_mul_b", (a8 + b8) + a8 * c(3))
  add("sums", "factorize_two", (a8 * c(3) + b8) + b8 * c(3))
  add("sums", "add_self", a8 + a8)
  add("sums", "add_self_b", (a8 + b8) + b8)
  add("sums", "issue_a3_b_a", (a8 * c(3) + b8) + a8)
  add("sums", "add_self_c", (a8 + b8) + a8 * c(3))
  add("sums", "sub_self", a8 - a8)
  add("sums", "sub_self_mul", a8 * c(3) - a8)
  add("sums", "neg", neg(a8))
  add("sums", "add_1", a8 + c(1))
  add("sums", "sub_1", a8 - c(1))
  add("sums", "mul_0", a8 * c(0))
  add("sums", "mul_1", a8 * c(1))
  add("sums", "mul_2", a8 * c(2))
  add("sums", "mul_mul", (V("a", 0, 5) * c(10)) * c(9))
  add("sums", "add_min_max", a8 * c(2) + c(12))
  add("sums", "sum_combine_num", usum(c(29), V("a", 0, 10), c(-23)))
  add("sums", "hoisted_cancel", (V("a", 0, 1) * c(-4) + c(1)) + V("a", 0, 1) * c(4))
  add("sums", "distribute_mul", (a3 + V("b", 0, 5)) * c(3))
  add("sums", "distribute_mul_const", (c(1) + a3) * c(-2) + c(12))
  add("sums", "sum_mul_distribute", (g7 + l12 + lidx3) * c(4))
  add("sums", "far_like_terms", usum(a8, b8 * c(2), V("c", 0, 5), a8 * c(5), b8, c(3), V("c", 0, 5) * c(-1)))
  add("sums", "cancel_chain", usum(a8, b8, a8 * c(-1), b8 * c(-1), c(4)))
  add("sums", "resnet_index", usum(mod(c(1) + r, 16) * c(49), idiv(c(262145) + r, 16) * c(802816), V("g0", 0, 3) * c(3211264),
                                   V("g1", 0, 127) * c(784), V("g2", 0, 7) * c(8), V("l4", 0, 1) * c(100352), c(-13151129600), V("l3", 0, 7)))


def _bits_and_max(add: Callable[[str, str, UOp], None]) -> None:
  """Bits and max."""
  add("bits", "xor_0", xor(a8, 0))
  add("bits", "or_0", a8 | c(0))
  add("bits", "shl_0", shl(a8, 0))
  add("bits", "shr_0", shr(a8, 0))
  add("bits", "xor_twice", xor(xor(a8, 5), 5))
  add("bits", "xor_twice_var", xor(xor(a8, b8), b8))
  add("bits", "xor_self", xor(a8, a8))
  add("bits", "and_zero", a8 & c(0))
  add("bits", "and_mask", V("a", 0, 15) & c(15))
  add("bits", "and_all_ones", a8 & c(-1))
  add("bits", "and_fold", c(0) & V("a", 0, 1))
  add("bits", "and_remove", c(1) * V("a", 0, 1))
  add("max", "max_folds", V("a", 0, 20).maximum(c(10)).maximum(c(11)))
  add("max", "max_folds_small", V("a", 0, 7).maximum(c(10)).maximum(c(11)))
  add("max", "max_by_bounds", V("a", 5, 9).maximum(V("b", 0, 5)))
  add("max", "where_as_max", lt(V("a", 0, 9), V("b", 0, 9)).where(V("b", 0, 9), V("a", 0, 9)))
  add("max", "where_as_max_const", lt(c(3), V("b", 0, 9)).where(V("b", 0, 9), c(3)))


def hand() -> list[tuple[str, str, UOp]]:
  out: list[tuple[str, str, UOp]] = []
  def add(family: str, name: str, e: UOp) -> None: out.append((family, name, e))
  for part in (_division_and_modulo_by_constants_1, _division_and_modulo_by_constants_2, _recombination, _comparisons, _where,
               _variable_divisors, _sums, _bits_and_max):
    part(add)
  return out


# ---- random cases of the same families ----
class Gen:
  def __init__(self, rng: random.Random):
    self.rng, self.n = rng, 0

  def var(self, lo: int | None = None, hi: int | None = None) -> UOp:
    r = self.rng
    self.n += 1
    if lo is None:
      lo = r.choice([0, 0, 0, 0, 1, 2, -3, -8])
      hi = lo + r.choice([1, 2, 3, 5, 7, 9, 15, 31, 63, 127])
    return V(f"v{self.n}", lo, hi)

  def sum(self, nonneg: bool = True, terms: int | None = None) -> UOp:
    r = self.rng
    vs = [self.var(0, r.choice([1, 3, 7, 15, 31])) if nonneg else self.var() for _ in range(terms or r.randint(1, 3))]
    e = None
    for v in vs:
      k = r.choice([1, 1, 2, 3, 4, 6, 8, 9, 12, 16, 24, 32] if nonneg else [1, 2, 3, 4, -1, -2, -3, 6, 8])
      t = v if k == 1 else v * c(k)
      e = t if e is None else e + t
      if r.random() < 0.2: e = e + (v if r.random() < 0.5 else v * c(r.choice([2, 3])))  # a like term
    if r.random() < 0.6: e = e + c(r.choice([1, 2, 3, 5, 7, 12, 15, 16, 20, 31, 100] if nonneg else [-7, -3, -1, 1, 3, 7, 12]))
    return e

  def divisor(self) -> int: return self.rng.choice([2, 3, 4, 5, 6, 8, 9, 10, 12, 16, 18, 20, 24, 32])

  def case(self, family: str) -> UOp:
    r = self.rng
    if family == "divmod":
      e = self.sum(nonneg=r.random() < 0.8)
      return (idiv if r.random() < 0.5 else mod)(e, self.divisor())
    if family == "nested":
      e = self.sum()
      k = r.random()
      if k < 0.3: return idiv(idiv(e, self.divisor()) + c(r.randint(0, 5)), self.divisor())
      if k < 0.6:
        d = self.divisor()
        return idiv(mod(e, d * r.choice([2, 3, 4])), d)
      if k < 0.8:
        d = self.divisor()
        return mod(mod(e, d * r.choice([2, 3, 4])), d)
      return idiv(idiv(e, self.divisor()), self.divisor())
    if family == "recombine":
      e = self.sum(nonneg=r.random() < 0.7)
      d, m = self.divisor(), r.choice([1, 1, 2, 3])
      out = mod(e, d) * c(m) + idiv(e, d) * c(d * m)
      if r.random() < 0.4: out = out + self.var(0, 7)
      return out
    if family == "compare":
      e = self.sum(nonneg=r.random() < 0.8)
      k = r.random()
      if k < 0.35: return lt(e, r.randint(-5, 60))
      if k < 0.55: return lt(c(r.randint(-5, 60)), e)
      if k < 0.75: return lt(idiv(e, self.divisor()), r.randint(-3, 12))
      if k < 0.9: return ge(e, r.randint(0, 40))
      return lt(neg(e), c(r.randint(-30, 5)))
    if family == "where":
      a, b = self.sum(), self.sum()
      cond = lt(a, r.randint(0, 20))
      k = r.random()
      if k < 0.25: return cond.where(T, F) if r.random() < 0.6 else cond.where(F, T)
      if k < 0.5: return cond.where(cond.where(a, b), c(r.randint(0, 3)))
      if k < 0.7: return cond.where(a, cond.where(b, c(r.randint(0, 3))))
      if k < 0.85: return cond.where(c(r.randint(0, 5)), a) + cond.where(c(r.randint(0, 5)), b)
      return cond.where(b, b)
    if family == "vardiv":
      d, x, y = self.var(1, r.choice([3, 7, 15])), self.var(0, r.choice([3, 7])), self.var(0, r.choice([0, 2, 5]))
      e = d * x + y
      if r.random() < 0.3: e = e + d * c(r.randint(1, 3))
      return idiv(e, d) if r.random() < 0.6 else mod(e, d)
    if family == "sums":
      vs = [self.var() for _ in range(r.randint(2, 4))]
      e = None
      for _ in range(r.randint(3, 7)):
        v = r.choice(vs)
        t = v * c(r.choice([1, 2, 3, -1, -2, 5])) if r.random() < 0.6 else v
        e = t if e is None else (e + t if r.random() < 0.8 else e - t)
        if r.random() < 0.3: e = e + c(r.randint(-9, 9))
      return e
    if family == "bits":
      a = self.sum()
      k = r.random()
      if k < 0.25: return xor(xor(a, r.randint(1, 31)), r.randint(1, 31)) if r.random() < 0.3 else xor(xor(a, 5), 5)
      if k < 0.45: return a | c(0)
      if k < 0.6: return shl(a, 0) if r.random() < 0.5 else shr(a, 0)
      if k < 0.8: return self.var(0, 15) & c(15)
      return xor(a, 0)
    if family == "max":
      a = self.sum(nonneg=r.random() < 0.7)
      k = r.random()
      if k < 0.5: return a.maximum(c(r.randint(-5, 20))).maximum(c(r.randint(-5, 20)))
      b = self.sum()
      return lt(a, b).where(b, a)
    raise ValueError(family)


RANDOM_FAMILIES: dict[str, int] = {"divmod": 50, "nested": 25, "recombine": 20, "compare": 40, "where": 20, "vardiv": 12, "sums": 20,
                                   "bits": 12, "max": 12}


def random_cases(seed: int = 0) -> list[tuple[str, str, UOp]]:
  out = []
  for fam, n in RANDOM_FAMILIES.items():
    g = Gen(random.Random(f"symbolic-strength:{seed}:{fam}"))
    out += [(fam, f"random_{fam}_{i}", g.case(fam)) for i in range(n)]
  return out


def cases(seed: int = 0) -> list[tuple[str, str, UOp]]:
  """Every case: the hand-written ones, then the random ones."""
  out = hand() + random_cases(seed)
  check_names(out)
  return out


BUILDERS: dict[str, Callable] = {"idiv": idiv, "mod": mod, "lt": lt}


def check_names(items: list[tuple[str, str, UOp]]) -> None:
  """Each expression names each of its variables once (one name, one variable: the peer rebuilds variables by name)."""
  for _, name, e in items:
    vs = [u for u in e.toposort() if u.op is Ops.DEFINE_VAR]
    if len({v.arg.name for v in vs}) != len(vs): raise ValueError(f"case {name} has two variables of one name")

"""Deliberately unsound variants of real simplify rules: what the rule prover and the symbolic fuzzer must catch.

Each variant is the real rule with a changed function (PatternMatcher.replace_rule), the kind of mistake a div/mod
fold or a bounds rule is written with: a missing sign condition, an off-by-one, floor division where C truncates,
a forgotten negative range.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fuzz.testbed.seeded_bugs import mod_below_divisor_off_by_one
from tinyspec.lower import simplify as S
from tinyspec.lower.base import Pass
from tinyspec.lower.pipeline import PASSES
from tinyspec.rewrite import PatternMatcher, Rule
from tinyspec.uop import Ops, UOp


@dataclass(frozen=True)
class Variant:
  name: str
  rule: str           # the simplify rule it replaces
  fn: Callable
  description: str

  def matcher(self, base: PatternMatcher | None = None) -> PatternMatcher:
    """The simplify table (or base) with this variant in place of the real rule."""
    return (base or S.pm_simplify).replace_rule(self.rule, self.fn)

  def pipeline(self, passes: list[Pass] | None = None) -> list[Pass]:
    """passes (default: the reference pipeline) with this variant in place of the real rule in the simplify pass."""
    return [p.replace_rule(self.rule, self.fn) if p.name == "simplify" else p for p in (PASSES if passes is None else passes)]

  def rule_obj(self, base: PatternMatcher | None = None) -> Rule:
    return next(r for r in self.matcher(base).rules if r.name == self.rule)


def _mod_below_divisor_forgets_negative(x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  return x if x.vmax < abs(c.arg) else None


def _mod_split_no_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or S.divide_exact(x, c.arg) is None: return None
  return b.alu(Ops.MOD, c)


def _idiv_split_no_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or (q := S.divide_exact(x, c.arg)) is None: return None
  return q + b.alu(Ops.IDIV, c)


def _mod_constant_quotient_floor(m: UOp, x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  q = x.vmin // c.arg
  if q == 0 or q != x.vmax // c.arg: return None
  return x - UOp.const(x.dtype, q * c.arg)


def _max_by_bounds_wrong_side(m: UOp, a: UOp, b: UOp) -> UOp | None:
  return a if a.vmax >= b.vmax else None


VARIANTS: list[Variant] = [
  Variant("mod_below_divisor_off_by_one", "mod_below_divisor", mod_below_divisor_off_by_one,
          "x % c folds to x when x's bounds reach c itself"),
  Variant("mod_below_divisor_forgets_negative", "mod_below_divisor", _mod_below_divisor_forgets_negative,
          "x % c folds to x from x's upper bound alone, forgetting x may be below -c"),
  Variant("mod_split_no_sign", "mod_split_divisible", _mod_split_no_sign,
          "(k*c + b) % c folds to b % c without the condition that the sum and b have one sign"),
  Variant("idiv_split_no_sign", "idiv_split_divisible", _idiv_split_no_sign,
          "(k*c + b) // c splits into k + b // c without the sign condition"),
  Variant("mod_constant_quotient_floor", "mod_constant_quotient", _mod_constant_quotient_floor,
          "x % c as x - q*c with q from floor division, where C truncates"),
  Variant("max_by_bounds_wrong_side", "max_by_bounds", _max_by_bounds_wrong_side,
          "max(a, b) folds to a when a's upper bound reaches b's, not when a's lower bound does"),
]

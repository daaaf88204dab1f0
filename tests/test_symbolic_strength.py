"""The integer simplifier on the families it is measured on (bench/symbolic.py): what each family simplifies to, that
every result on the bench's case set keeps its meaning, and the interval bounds of XOR and AND."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzz.check.symbolic import SymbolicChecker
from fuzz.generate.symbolic import SymCase, leaves_of
from tinyspec.dtype import dtypes
from tinyspec.lower.simplify import pm_simplify
from tinyspec.ops.intervals import interval
from tinyspec.rewrite import graph_rewrite
from tinyspec.uop import Ops, UOp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from symbolic_cases import T, F, V, c, cases, idiv, lt, mod, xor  # noqa: E402

IDX = dtypes.index


def simp(e: UOp) -> UOp: return graph_rewrite(e, pm_simplify)


a1, a3, a7, a20 = V("a", 0, 1), V("a", 0, 3), V("a", 0, 7), V("a", 0, 20)
b3, d = V("b", 0, 3), V("d", 1, 9)
x = V("x", 0, 124)

FAMILIES = [
  ("congruence", idiv(c(3) + c(3) * a1, 4), a1),
  ("congruence_mod", mod(c(3) + c(3) * a3, 4), c(3) - a3),
  ("gcd", idiv(a7 * c(4) + b3 * c(4), 2), a7 * c(2) + b3 * c(2)),
  ("nested_div", idiv(idiv(V("a", 0, 1800), 10), 9), idiv(V("a", 0, 1800), 90)),
  ("div_into_mod", idiv(mod(V("i", 0, 16) * c(4), 8), 4), mod(V("i", 0, 16), 2)),
  ("recombine", mod(x, 4) + idiv(x, 4) * c(4), x),
  ("recombine_swapped", idiv(x, 4) * c(4) + mod(x, 4), x),
  ("recombine_scaled", mod(x, 4) * c(3) + idiv(x, 4) * c(12), x * c(3)),
  ("recombine_nested", mod(x, 4) + mod(idiv(x, 4), 8) * c(4), mod(x, 32)),
  ("lt_scale", lt(V("a", 0, 5) * c(4), 13), lt(V("a", 0, 5), 4)),
  ("lt_offset", lt(a7 + c(2), 3), lt(a7, 1)),
  ("lt_gcd", lt(a7 * c(4) + b3, 16), lt(a7, 4)),
  ("lt_bounds", lt(a7, 9), T),
  ("where_identity", lt(a3, 2).where(T, F), lt(a3, 2)),
  ("where_same_cond", lt(a3, 2).where(lt(a3, 2).where(a7, b3), c(3)), lt(a3, 2).where(a7, c(3))),
  ("var_divisor", idiv(d * a7 + b3, d), a7 + idiv(b3, d)),
  ("like_terms", (a7 * c(3) + b3) + a7, a7 * c(4) + b3),
  ("or_zero", a7 | c(0), a7),
  ("shl_zero", a7.alu(Ops.SHL, c(0)), a7),
  ("xor_twice", xor(xor(a7, 5), 5), a7),
  ("max_max", a20.maximum(c(10)).maximum(c(11)), a20.maximum(c(11))),
]


@pytest.mark.parametrize("name, expr, want", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_family_simplifies_to_the_expected_form(name, expr, want):
  assert simp(expr) is simp(want)


def test_the_bench_cases_keep_their_meaning():
  items = cases()
  assert len(items) >= 300
  chk = SymbolicChecker(z3_timeout_ms=2000)
  rng = np.random.default_rng(0)
  bad = [name for _, name, e in items if chk.check(SymCase(e, leaves_of(e)), rng)]
  assert bad == []


def test_xor_and_bounds_are_tight_and_sound():
  assert interval(Ops.XOR, dtypes.int32, (-9, 0), (-1, -1)) == (-1, 8)  # ~x, exactly
  assert interval(Ops.XOR, dtypes.int32, (-8, -1), (-4, -1)) == (0, 7)
  assert interval(Ops.AND, dtypes.int32, (-9, 12), (7, 7)) == (0, 7)
  r = random.Random(0)
  for _ in range(3000):
    lo1, lo2 = r.randint(-300, 300), r.randint(-300, 300)
    p, q = (lo1, lo1 + r.choice([0, 3, 40])), (lo2, lo2 + r.choice([0, 3, 40]))
    for op, fn in ((Ops.XOR, lambda u, v: u ^ v), (Ops.AND, lambda u, v: u & v), (Ops.OR, lambda u, v: u | v)):
      lo, hi = interval(op, dtypes.int32, p, q)
      vals = [fn(u, v) for u in range(p[0], p[1] + 1, 3) for v in range(q[0], q[1] + 1, 3)]
      assert lo <= min(vals) and max(vals) <= hi

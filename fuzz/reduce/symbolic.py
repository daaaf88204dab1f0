"""Shrinking a symbolic case (fuzz.generate.symbolic): subexpressions replaced by one of their operands or a constant
while the case still fails the same way."""
from __future__ import annotations

import time
from typing import Callable

from fuzz.generate.symbolic import IDX, SymCase, leaves_of
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp, substitute


def _candidates(u: UOp) -> list[UOp]:
  """What a subexpression may become: one of its operands of its dtype, else a deeper subexpression of it, else a
  small constant."""
  below = [x for x in reversed(u.toposort()) if x is not u and x.dtype is u.dtype]
  out = list(dict.fromkeys([x for x in u.src if x.dtype is u.dtype] + below))
  if u.op is not Ops.CONST:
    out += [UOp.const(u.dtype, v) for v in ((False, True) if u.dtype is dtypes.bool else (0, 1))]
  return out


def shrink_expr(case: SymCase, fails: Callable[[SymCase], bool], max_seconds: float = 10.0) -> SymCase:
  """A locally minimal case that still fails: each subexpression (outermost first) replaced by an operand or a
  constant while fails() holds, until no replacement keeps it failing or the time is up."""
  t0 = time.monotonic()
  cur = case
  progress = True
  while progress and time.monotonic() - t0 < max_seconds:
    progress = False
    for u in reversed(cur.expr.toposort()):
      if u.op in (Ops.RANGE, Ops.DEFINE_VAR): continue
      for c in _candidates(u):
        e = c if u is cur.expr else substitute(cur.expr, {u: c})
        if e.dtype is not IDX: continue
        cand = SymCase(e, leaves_of(e), cur.seed, cur.index)
        if fails(cand):
          cur, progress = cand, True
          break
      if progress or time.monotonic() - t0 >= max_seconds: break
  return cur

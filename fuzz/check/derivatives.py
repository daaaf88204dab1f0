"""Derivatives by hand: each primitive's vector-Jacobian product written in numpy, apart from the gradient rules.

The numeric gradient oracle (fuzz.check.numeric_grad) holds the rules to central differences, which say nothing where
the loss has a kink: at a MAX of equal operands the one-sided differences disagree and the point is skipped, although
the spec fixes what the gradient is there (half to each operand, and a REDUCE MAX shares its gradient equally among the
elements equal to the maximum), and they probe only some elements. This table is the chain rule written out once
more, per primitive, with those conventions; the oracle holds every node's rule to it at every element, so a rule
that is wrong only at a kink, or only at elements the differences did not probe, is still seen.

vjp(u, srcs, out, cot) takes the node, its sources' values and its own value (numpy, in u's shapes) and a cotangent of
u's shape; it gives one array per source in the source's shape, None for a source that gets no gradient (a
condition, an integer). A node the table has no entry for gives None.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from tinyspec.semantics.alu import movement
from tinyspec.uop import GroupOp, Ops, UOp

Arrays = list[np.ndarray]
LN2 = math.log(2.0)


def _max(u: UOp, s: Arrays, out: np.ndarray, c: np.ndarray) -> list:
  a, b = s
  tie = np.where(a == b, 0.5 * c, 0.0)
  return [np.where(a > b, c, tie), np.where(b > a, c, tie)]


def _where(u: UOp, s: Arrays, out: np.ndarray, c: np.ndarray) -> list:
  cond = s[0].astype(bool)
  return [None, np.where(cond, c, 0.0), np.where(cond, 0.0, c)]


ELEMENTWISE: dict[Ops, Callable[[UOp, Arrays, np.ndarray, np.ndarray], list]] = {
  Ops.NEG: lambda u, s, o, c: [-c],
  Ops.RECIP: lambda u, s, o, c: [-c * o * o],
  Ops.SQRT: lambda u, s, o, c: [c / (2.0 * o)],
  Ops.EXP2: lambda u, s, o, c: [c * o * LN2],
  Ops.LOG2: lambda u, s, o, c: [c / (s[0] * LN2)],
  Ops.SIN: lambda u, s, o, c: [c * np.cos(s[0])],
  Ops.TRUNC: lambda u, s, o, c: [np.zeros_like(c)],
  Ops.ADD: lambda u, s, o, c: [c, c],
  Ops.SUB: lambda u, s, o, c: [c, -c],
  Ops.MUL: lambda u, s, o, c: [c * s[1], c * s[0]],
  Ops.MAX: _max,
  Ops.WHERE: _where,
  Ops.CONTIGUOUS: lambda u, s, o, c: [c],
  Ops.CAST: lambda u, s, o, c: [c] if u.src[0].dtype.is_float else [None],
}


def _reduce(u: UOp, s: Arrays, out: np.ndarray, c: np.ndarray) -> list | None:
  op, n = u.arg
  x = s[0]
  axes = tuple(range(n))
  cb = np.broadcast_to(c.reshape((1,) * n + c.shape), x.shape)
  if op is Ops.ADD: return [np.array(cb)]
  if op is Ops.MAX:
    at = x == np.broadcast_to(out.reshape((1,) * n + out.shape), x.shape)
    share = np.sum(at, axis=axes, keepdims=True)
    return [np.where(at, cb / np.maximum(share, 1), 0.0)]
  if op is Ops.MUL:
    if np.any(x == 0): return None  # the product's derivative is not out / x there
    return [cb * np.broadcast_to(out.reshape((1,) * n + out.shape), x.shape) / x]
  return None


def _movement(u: UOp, s: Arrays, out: np.ndarray, c: np.ndarray) -> list:
  # a movement op is linear: its transpose sends each output element's cotangent to the source element it shows
  src = u.src[0]
  where = movement(u, np.arange(src.size, dtype=np.int64).reshape(src.shape), fill=-1)
  g = np.zeros(src.size)
  ok = where >= 0
  np.add.at(g, where[ok], np.broadcast_to(c, where.shape)[ok])
  return [g.reshape(src.shape)]


def vjp(u: UOp, srcs: Arrays, out: np.ndarray, cot: np.ndarray) -> list | None:
  """u's vector-Jacobian product for cotangent cot by the table, or None when the table has no entry for u."""
  if u.op in ELEMENTWISE:
    shp = out.shape
    return ELEMENTWISE[u.op](u, [np.broadcast_to(np.asarray(x, np.float64), shp) for x in srcs], np.asarray(out, np.float64),
                             np.asarray(cot, np.float64).reshape(shp))
  if u.op is Ops.REDUCE and isinstance(u.arg, tuple):
    return _reduce(u, [np.asarray(srcs[0], np.float64)], np.asarray(out, np.float64), np.asarray(cot, np.float64).reshape(out.shape))
  if u.op in GroupOp.Movement: return _movement(u, srcs, out, np.asarray(cot, np.float64).reshape(out.shape))
  return None

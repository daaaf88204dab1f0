"""One meaning per op: everything tinyspec knows about what an elementwise op means, in one registry.

Each aspect lives in its own module, keyed by op, and every other part of tinyspec reads it from there:

  classes    the dtype classes an op takes (the spec's alu.dtype_class, the frontend's TypeErrors)
  scalar     its meaning on one value, with C semantics and tinyspec's values at C's undefined points
  vector     its numpy meaning (the reference evaluator)
  smt        its z3 meaning for every integer dtype and bool (bounds proofs, the rule prover)
  intervals  its interval bounds on integers and bool (UOp.vmin / vmax, the simplifier's guards, the fuzzers' UB screens)
             and on floats (the fuzzers' UB and exactness screens)
  spelling   how C and OpenCL C write it (the renderers)

`REGISTRY[op]` gathers an op's entries from all of them, so one lookup shows the whole meaning of an op.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from tinyspec.opcodes import Ops
from tinyspec.ops import intervals, scalar, smt, spelling, vector
from tinyspec.ops.classes import DTYPE_CLASS, accepts, class_name, dtype_error


@dataclass(frozen=True)
class OpMeaning:
  """The registry entry of one op: each field is the aspect module's entry for it (None where the op has none)."""
  op: Ops
  takes: str                                # the dtype class, in words
  scalar: Callable                          # scalar.run for this op: (dtype, *values) -> value
  numpy: Callable | None                    # vector.ELEMENTWISE: (dtype, *arrays) -> array
  z3: Callable | None                       # smt.TERMS: (dtype, *terms, width) -> term
  interval: Callable | None                 # intervals.INTERVALS: (dtype, *ranges) -> (lo, hi)
  float_interval: Callable | None           # intervals.FLOAT_INTERVALS: (float dtype, *ranges) -> real (lo, hi)
  c: str | None                             # the C operator or math function


def _entry(op: Ops) -> OpMeaning:
  c = spelling.INFIX.get(op) or spelling.PREFIX.get(op) or spelling.MATH_FN.get(op)
  return OpMeaning(op, class_name(op), partial(scalar.run, op), vector.ELEMENTWISE.get(op), smt.TERMS.get(op), intervals.INTERVALS.get(op),
                   intervals.FLOAT_INTERVALS.get(op), c)


REGISTRY: dict[Ops, OpMeaning] = {op: _entry(op) for op in DTYPE_CLASS}

__all__ = ["REGISTRY", "OpMeaning", "DTYPE_CLASS", "accepts", "class_name", "dtype_error", "intervals", "scalar", "smt", "spelling", "vector"]

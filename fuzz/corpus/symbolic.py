"""Corpus entries of the symbolic target (KIND "symbolic"): graph() is the index expression, inputs() the failing
assignment {leaf number: [value]} (fuzz.generate.symbolic numbers the leaves)."""
from __future__ import annotations

import numpy as np

from fuzz.generate.case import Case
from fuzz.generate.symbolic import SymCase, leaf_name, leaf_number, leaves_of
from tinyspec.uop import UOp

KIND = "symbolic"


def entry_case(case: SymCase, assignment: dict[str, int] | None = None) -> Case:
  """The corpus form of a case (a Case of KIND "symbolic"): the expression as the graph, the failing assignment as the
  inputs {leaf number: [value]}."""
  assignment = assignment or {}
  inputs = {leaf_number(lf.node): np.array([assignment[leaf_name(lf.node)]], dtype=np.int64)
            for lf in case.leaves if leaf_name(lf.node) in assignment}
  return Case(case.expr, inputs, {}, KIND, case.seed, case.index)


def from_entry_case(c: Case) -> tuple[SymCase, dict[UOp, np.ndarray] | None]:
  """(the case, its stored assignment as one row per leaf, None when it stores none) of a corpus Case."""
  case = SymCase(c.root, leaves_of(c.root), c.seed, c.index)
  if not case.leaves or any(leaf_number(lf.node) not in c.inputs for lf in case.leaves): return case, None
  return case, {lf.node: np.asarray(c.inputs[leaf_number(lf.node)], dtype=np.int64).reshape(1) for lf in case.leaves}

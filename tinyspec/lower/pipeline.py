"""The reference lowering: the passes in order, and `lower`, which runs them and verifies every pass's output stage.

Each pass rewrites with the tables it holds (Pass.tables), so another pipeline (a seeded bug's, a test's) is another list
of passes handed to `lower(passes=...)`, e.g. one pass replaced by `pass_.with_table(table)`; PASSES is never changed."""
from __future__ import annotations

import inspect
from typing import Callable

from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.callify import CALLIFY
from tinyspec.lower.images import IMAGES
from tinyspec.lower.linearize import LINEARIZE
from tinyspec.lower.lower_reduce import LOWER_REDUCE
from tinyspec.lower.multi import MULTI
from tinyspec.lower.optimize import OPTIMIZE
from tinyspec.lower.rangeify import RANGEIFY
from tinyspec.lower.render import RENDER
from tinyspec.lower.scatter import SCATTER
from tinyspec.lower.simplify import SIMPLIFY
from tinyspec.spec import SpecError, verify
from tinyspec.uop import UOp

PASSES: list[Pass] = [MULTI, CALLIFY, RANGEIFY, SIMPLIFY, SCATTER, OPTIMIZE, LOWER_REDUCE, IMAGES, LINEARIZE, RENDER]


def describe_passes(passes: list[Pass] | None = None) -> str:
  """One line per pass (PASSES by default), in order: its name, its stages and the summary its module's docstring opens
  with ("name (IN -> OUT): summary"). tinyspec.lower's docstring lists the passes so, kept equal by a test."""
  lines = []
  for p in PASSES if passes is None else passes:
    head = ((inspect.getmodule(p.fn) or p.fn).__doc__ or "").strip().split("\n", 1)[0]
    stages = f"{p.stage_in.name} -> {p.stage_out.name}"
    lines.append(f"{p.name:<13} {stages:<19} {head.split('): ', 1)[-1]}")
  return "\n".join(lines)


def passes_through(name: str, passes: list[Pass] | None = None) -> list[Pass]:
  """The passes (PASSES by default) from the first up to and including the one named name."""
  passes = PASSES if passes is None else passes
  names = [p.name for p in passes]
  if name not in names: raise KeyError(f"no pass {name!r}; the passes are {names}")
  return passes[:names.index(name) + 1]


class PassError(Exception):
  """A pass failed: its output broke the spec of its stage, or the pass raised."""
  def __init__(self, pass_name: str, message: str, cause: Exception | None = None):
    self.pass_name, self.cause = pass_name, cause
    super().__init__(f"pass {pass_name}: {message}")


def make_options(**options) -> LowerOptions:
  """LowerOptions from keyword options, naming any that do not exist."""
  known = set(LowerOptions.__dataclass_fields__)
  if bad := sorted(set(options) - known): raise TypeError(f"unknown lowering option(s) {bad}; expected some of {sorted(known)}")
  return LowerOptions(**options)


def run_pass(pass_: Pass, root: UOp, options: LowerOptions, trace: Trace | None = None, check: bool = True) -> UOp:
  """One pass on root, then (check) verify the spec of its output stage; errors name the pass."""
  out = pass_.run(root, options, trace if trace is not None else Trace())
  if check:
    try: verify(out, pass_.stage_out)
    except SpecError as e: raise PassError(pass_.name, f"output breaks the {pass_.stage_out.name} spec\n{e}", e) from e
  return out


def lower(root: UOp, passes: list[Pass] | None = None, trace_for: Callable[[str], Trace | None] | None = None, **options) -> dict[str, UOp]:
  """The graph after each pass: {"input": root, "callify": ..., ...} in pass order. options are LowerOptions fields;
  trace_for(pass name) gives the Trace (observer, step limit) of that pass."""
  opts = make_options(**options)
  out = {"input": root}
  for p in PASSES if passes is None else passes:
    trace = trace_for(p.name) if trace_for is not None else None
    root = out[p.name] = run_pass(p, root, opts, trace)
  return out

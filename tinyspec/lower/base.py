"""What a pass is, the options of a lowering, and the rewrite driver that threads the fuzzer's hooks through passes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tinyspec.dtype import DType
from tinyspec.rewrite import Observer, PatternMatcher, Rule, graph_rewrite
from tinyspec.spec import Stage
from tinyspec.uop import UOp


@dataclass
class Trace:
  """The hooks of one pass run: an observer of every rule application and a step limit shared by all of the
  pass's graph_rewrite calls (so blame can bisect over the pass's rule applications as one sequence)."""
  observer: Observer | None = None
  max_steps: int | None = None
  steps: int = 0

  def rewrite(self, root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True) -> UOp:
    """graph_rewrite with this trace's observer, counting steps against the shared limit."""
    if self.max_steps is not None and self.steps >= self.max_steps: return root
    def obs(rule: Rule, before: UOp, after: UOp) -> None:
      self.steps += 1
      if self.observer is not None: self.observer(rule, before, after)
    left = None if self.max_steps is None else self.max_steps - self.steps
    return graph_rewrite(root, pm, ctx, bottom_up, observer=obs, max_steps=left)

  @property
  def exhausted(self) -> bool:
    return self.max_steps is not None and self.steps >= self.max_steps


@dataclass(frozen=True)
class LowerOptions:
  """Choices of a lowering. `opts` are optimize actions (None: the heuristic picks)."""
  callify: str = "inline"          # inline | precompile
  realize: str = "minimal"         # minimal | all
  opts: tuple | None = None        # optimize actions, e.g. (("split", axis, factor), ("unroll", axis), ("global", axis))
  backend: str = "c"               # c | opencl: which renderer the render pass uses
  int_dtype: DType | None = None   # what `index` becomes at linearize (None: int32 when bounds fit, else int64)


@dataclass(frozen=True)
class Pass:
  """One pass of the lowering: a named graph transformation from one stage to the next."""
  name: str
  stage_in: Stage
  stage_out: Stage
  run: Callable[[UOp, LowerOptions, Trace], UOp]
  matchers: tuple[PatternMatcher, ...] = ()  # the rule tables it rewrites with, for coverage and rule proofs

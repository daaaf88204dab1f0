"""The formal spec: which UOp shapes are legal at each stage of lowering."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tinyspec.uop import UOp


class Stage(Enum):
  TENSOR = "tensor"
  KERNEL_GRAPH = "kernel_graph"
  KERNEL = "kernel"
  PROGRAM = "program"

  def __repr__(self) -> str: return f"Stage.{self.name}"


@dataclass(frozen=True)
class Violation:
  """One broken rule: the node, its path from the root (source indices), the stage, the rule id and a sentence."""
  node: UOp
  path: tuple[int, ...]
  stage: Stage
  rule: str
  message: str

  def __str__(self) -> str:
    path = "root" + "".join(f".src[{i}]" for i in self.path)
    return f"[{self.stage.name}] {self.rule}: {self.message}\n    at {path} ({self.node.op.name} {self.node.dtype.name})"


class SpecError(Exception):
  """Raised by verify; holds every violation found."""
  def __init__(self, violations: list[Violation]):
    self.violations = violations
    super().__init__(f"{len(violations)} spec violation(s):\n" + "\n".join(str(v) for v in violations[:20]))


def check(root: UOp, stage: Stage) -> list[Violation]:
  """Every violation of stage's rules in the graph under root. Never raises on malformed input."""
  raise NotImplementedError


def verify(root: UOp, stage: Stage) -> UOp:
  """root, when it is legal at stage; SpecError with every violation otherwise."""
  if vs := check(root, stage): raise SpecError(vs)
  return root

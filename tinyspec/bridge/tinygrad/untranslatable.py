"""The one error of the translation: a tinygrad node with no tinyspec form (with `translate(cap, strict=False)` it is
recorded instead and counted in the stage's coverage)."""
from __future__ import annotations


class Untranslatable(Exception):
  """A tinygrad node with no tinyspec form: names the op, the stage and why."""
  def __init__(self, op: str, stage: str, why: str):
    self.op, self.stage, self.why = op, stage, why
    super().__init__(f"{op} at {stage}: {why}")

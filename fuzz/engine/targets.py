"""The targets by name (`tinyspec fuzz --target NAME`), and replaying a corpus entry by the target that stores its KIND.

Each target is a class with the Target protocol (fuzz.engine.protocol) that wires its own generator, checker, reducer
and corpus entries; the engine knows a target by this table alone. A new target is one row.
"""
from __future__ import annotations

from typing import Any, Sequence

from fuzz.engine.protocol import DEFAULT_TARGET, Target
from fuzz.engine.reference_target import ReferenceTarget
from fuzz.engine.symbolic_target import SymbolicTarget
from fuzz.engine.tinygrad_target import TinygradTarget

TARGETS: dict[str, type[Target]] = {t.name: t for t in (ReferenceTarget, SymbolicTarget, TinygradTarget)}  # type: ignore[misc]
TARGET_NAMES = tuple(TARGETS)


def get_target(target: str | Target | None, **options: Any) -> Target:
  """A target by name (options go to its constructor), or the target itself; None is the default target."""
  if target is None: target = DEFAULT_TARGET
  if not isinstance(target, str): return target
  if target not in TARGETS: raise ValueError(f"unknown fuzz target {target!r}; choose from {', '.join(TARGET_NAMES)}")
  return TARGETS[target](**options)


def target_for_kind(kind: str) -> Target:
  """The target whose corpus entries have this KIND (tensor and kernel: the reference pipeline)."""
  for name in TARGET_NAMES:
    t = get_target(name)
    if kind in t.kinds: return t
  raise ValueError(f"no fuzz target stores corpus entries of kind {kind!r}")


def replay(entry: Any, passes: Sequence | None = None) -> tuple[bool, list]:
  """(still fails, findings) of a corpus entry: every oracle of the target that stores entries of its KIND, on its case
  (the reference pipeline, or passes, for tensor and kernel graphs). It still fails when a finding has its signature, or
  the same oracle and stage (a renamed rule is still the same failure)."""
  return target_for_kind(entry.case.kind).replay(entry, passes)

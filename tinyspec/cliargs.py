"""Argument types of the command line: numbers argparse accepts only when they are finite and in range, so a bad
limit is refused in one line (exit 2) instead of reaching the code as nan, inf or a negative count."""
from __future__ import annotations

import argparse
import math
from typing import Callable


def number(kind: type, low: float, above: bool = False) -> Callable[[str], float]:
  """An argparse type: a kind (int or float) that is finite and at least low (above it, when above)."""
  def parse(text: str) -> float:
    try: v = kind(text)
    except ValueError: raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if kind is int else ''}number") from None
    if not math.isfinite(v) or v < low or (above and v == low):
      raise argparse.ArgumentTypeError(f"{text!r} must be a finite number {'above' if above else 'of at least'} {low:g}")
    return v
  parse.__name__ = kind.__name__  # what argparse names in "invalid int value"
  return parse

"""Rule coverage: firing counts per rewrite rule of every pass, and the generator weights that steer toward rare rules.

Steering is deterministic: weights change only between epochs (fixed blocks of case numbers), from the counts of
whole epochs, so the same seed gives the same cases however many workers ran them and wherever a campaign resumed.
A case whose lowering fired a rule seen at most RARE times in all earlier epochs makes each generator choice it
used (its features: ops, dtypes, steps, lowering choices) BOOST times more likely, up to MAX_WEIGHT times its default;
a `kind:` feature (the share of the case mix one generator gets) only up to MAX_SHARE_WEIGHT times: a generator
whose cases reach many rare rules (the frontend compositions do) would otherwise take over the campaign and starve the
others of the cases that find their bugs.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from fuzz.generate.case import default_weights

RARE = 2
BOOST = 1.25
MAX_WEIGHT = 8.0
MAX_SHARE_WEIGHT = 2.0


class Coverage:
  def __init__(self, all_rules: Iterable[str]):
    self.all_rules = sorted(set(all_rules))
    self.counts: Counter = Counter()

  def add(self, fired: dict) -> None:
    for k, n in fired.items():
      self.counts[k if isinstance(k, str) else "/".join(k)] += n

  @property
  def fired(self) -> list[str]: return [r for r in self.all_rules if self.counts.get(r)]

  @property
  def never_fired(self) -> list[str]: return [r for r in self.all_rules if not self.counts.get(r)]

  def ratio(self) -> str: return f"{len(self.fired)}/{len(self.all_rules)}"

  def to_json(self) -> dict[str, int]: return dict(sorted(self.counts.items()))

  def load(self, d: dict[str, int]) -> None: self.counts = Counter(d)


def steer(weights: dict[str, float], coverage: Coverage, epoch: list[tuple[frozenset, dict]]) -> dict[str, float]:
  """The weights of the next epoch: features of cases that fired a rare rule (counted before this epoch) get boosted.
  epoch: (features, fired rules) per case, in case order."""
  base = default_weights()
  new = dict(weights)
  for features, fired in epoch:
    keys = [k if isinstance(k, str) else "/".join(k) for k in fired]
    if any(coverage.counts.get(k, 0) <= RARE for k in keys):
      for f in features:
        if f in base: new[f] = min(base[f] * (MAX_SHARE_WEIGHT if f.startswith("kind:") else MAX_WEIGHT), new.get(f, base[f]) * BOOST)
  return new

"""The order a value rewrite must keep: a STORE (or ATOMIC) whose value reads storage AFTER some effects runs after them.

That order is carried only by the loads in the store's value. When simplify folds the value, those loads can vanish
(`acc | 0xFFFF` is 0xFFFF for uint16) and the store would be free to run before the effects it followed, e.g. an
accumulator's update before the accumulator's init. `pm_pin_order` puts that order on the store's target before a value
rewrite; `pm_unpin_order` takes off every pinned dependency that the rewritten value still implies, so a rewrite that
keeps the loads leaves the graph as it was and one that drops them keeps the order explicit.
"""
from __future__ import annotations

from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.uop import GroupOp, Ops, UOp


def chain_deps(s: UOp) -> list[UOp]:
  """The effects (not the RANGEs it is placed in) that storage s waits for along its chain of AFTERs."""
  out: list[UOp] = []
  while s.op is Ops.AFTER:
    out += [d for d in s.src[1:] if d.op is not Ops.RANGE]
    s = s.src[0]
  return out


def value_deps(v: UOp) -> list[UOp]:
  """The effects a value waits for through the storage its loads read (not walking into those effects), in order."""
  seen: dict[UOp, None] = {}
  for u in v.toposort(gate=lambda u: u.op is not Ops.AFTER):
    if u.op is Ops.AFTER: seen.update(dict.fromkeys(chain_deps(u)))
  return list(seen)


def _pin(t: UOp, v: UOp, st: UOp) -> UOp | None:
  have = set(chain_deps(t.src[0]))
  if not (missing := [d for d in value_deps(v) if d not in have]): return None
  return st.replace(src=(t.replace(src=(t.src[0].after(*missing), *t.src[1:])), *st.src[1:]))


def _unpin(s: UOp, v: UOp, st: UOp) -> UOp | None:
  t = st.src[0]
  if any(d.op is Ops.RANGE for d in t.src[0].src[1:]): return None  # placed in loops: the store's own placement
  implied = set(value_deps(v))
  if not all(d in implied for d in t.src[0].src[1:]): return None
  return st.replace(src=(t.replace(src=(s, *t.src[1:])), *st.src[1:]))


_target = UPat(Ops.INDEX, name="t", allow_any_len=True)
_WRITES = tuple(GroupOp.Writes)
pm_pin_order = PatternMatcher([
  ("pin_order", UPat(_WRITES, src=(_target, UPat.var("v")), allow_any_len=True, name="st"), _pin),
], name="pm_pin_order")
pm_unpin_order = PatternMatcher([
  ("unpin_order", UPat(_WRITES, src=(UPat(Ops.INDEX, src=(UPat(Ops.AFTER, src=(UPat.var("s"),), allow_any_len=True),),
                                            allow_any_len=True), UPat.var("v")), allow_any_len=True, name="st"), _unpin),
], name="pm_unpin_order")

ORDER_TABLES = frozenset(pm.name for pm in (pm_pin_order, pm_unpin_order))  # their names, for the prover

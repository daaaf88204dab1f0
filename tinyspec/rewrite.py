"""Pattern matching and graph rewriting: UPat, named rules, PatternMatcher, graph_rewrite with observer and step limit."""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from tinyspec.dtype import DType
from tinyspec.uop import GroupOp, Ops, UOp


class UPat:
  """A pattern over UOps. `src` as a tuple matches in order; as a list, in any order (for commutative ops).
  `name` binds the matched node for the rule function; `arg`, `dtype`, `op` filter; `pred` is a last check."""
  __slots__ = ("op", "dtype", "src", "arg", "name", "allow_any_len", "pred", "commutative")

  def __init__(self, op: Ops | Iterable[Ops] | None = None, dtype: DType | Iterable[DType] | None = None,
               src: UPat | Sequence[UPat] | None = None, arg: Any = None, name: str | None = None,
               allow_any_len: bool = False, pred: Callable[[UOp], bool] | None = None):
    self.op = None if op is None else (frozenset((op,)) if isinstance(op, Ops) else frozenset(op))
    self.dtype = None if dtype is None else (frozenset((dtype,)) if isinstance(dtype, DType) else frozenset(dtype))
    self.commutative = isinstance(src, list)
    self.src: tuple[UPat, ...] | UPat | None = src if isinstance(src, UPat) or src is None else tuple(src)
    self.arg, self.name, self.allow_any_len, self.pred = arg, name, allow_any_len, pred

  @staticmethod
  def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat:
    return UPat(dtype=dtype, name=name)

  @staticmethod
  def cvar(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat:
    return UPat(Ops.CONST, dtype, name=name)

  @staticmethod
  def const(dtype: DType | Iterable[DType] | None, value: Any) -> UPat:
    return UPat(Ops.CONST, dtype, arg=value)

  def __repr__(self) -> str:
    ops = "any" if self.op is None else "|".join(sorted(o.name for o in self.op))
    return f"UPat({ops}{', name=' + self.name if self.name else ''})"

  def match(self, u: UOp, store: dict[str, UOp]) -> list[dict[str, UOp]]:
    """Every binding under which u matches, each extending `store`."""
    if self.op is not None and u.op not in self.op: return []
    if self.dtype is not None and u.dtype not in self.dtype: return []
    if self.arg is not None and not (u.arg == self.arg and type(u.arg) is type(self.arg)): return []
    if self.name is not None:
      if self.name in store and store[self.name] is not u: return []
      store = {**store, self.name: u}
    if self.pred is not None and not self.pred(u): return []
    if self.src is None: return [store]
    if isinstance(self.src, UPat):  # one pattern for every source
      stores = [store]
      for s in u.src: stores = [st2 for st in stores for st2 in self.src.match(s, st)]
      return stores
    if len(u.src) != len(self.src) and not (self.allow_any_len and len(u.src) >= len(self.src)): return []
    orders = itertools.permutations(self.src) if self.commutative else (self.src,)
    out: list[dict[str, UOp]] = []
    for pats in orders:
      stores = [store]
      for p, s in zip(pats, u.src): stores = [st2 for st in stores for st2 in p.match(s, st)]
      out.extend(stores)
    return out


@dataclass(frozen=True)
class Rule:
  """A named rewrite rule. `fn(**bindings)` (and `ctx=` when it takes one) returns a new node or None."""
  name: str
  pat: UPat
  fn: Callable[..., UOp | None] = field(compare=False)

  @property
  def location(self) -> str:
    """file:line of the rule's function, so a report can point at the code."""
    code = getattr(self.fn, "__code__", None)
    if code is None: return "<unknown>"
    return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}"

  def __repr__(self) -> str: return f"Rule({self.name} @ {self.location})"

  def apply(self, u: UOp, ctx: Any) -> UOp | None:
    for store in self.pat.match(u, {}):
      kw = {**store, "ctx": ctx} if _takes_ctx(self.fn) else store
      if (ret := self.fn(**kw)) is not None and ret is not u: return ret
    return None


def _takes_ctx(fn: Callable) -> bool:
  code = getattr(fn, "__code__", None)
  return code is not None and "ctx" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


class PatternMatcher:
  """An ordered table of named rules, dispatched by the op of the node. Rules are (name, UPat, fn) or Rule."""

  def __init__(self, rules: Sequence[tuple[str, UPat, Callable] | Rule], name: str = ""):
    self.name = name
    self.rules: list[Rule] = [r if isinstance(r, Rule) else Rule(*r) for r in rules]
    names = [r.name for r in self.rules]
    if len(set(names)) != len(names): raise ValueError(f"duplicate rule names in {name}: {sorted(n for n in names if names.count(n) > 1)}")
    self.pdict: dict[Ops, list[Rule]] = {}
    for r in self.rules:
      for op in (r.pat.op if r.pat.op is not None else Ops):
        self.pdict.setdefault(op, []).append(r)

  def __add__(self, other: PatternMatcher) -> PatternMatcher:
    return PatternMatcher(self.rules + other.rules, f"{self.name}+{other.name}")

  def replace_rule(self, name: str, fn: Callable | None = None, pat: UPat | None = None) -> PatternMatcher:
    """A copy with one rule's function or pattern swapped (for seeding bugs and testing the tools that find them)."""
    if name not in {r.name for r in self.rules}: raise KeyError(f"no rule {name!r} in {self.name}")
    rules = [Rule(r.name, pat or r.pat, fn or r.fn) if r.name == name else r for r in self.rules]
    return PatternMatcher(rules, self.name)

  def rewrite(self, u: UOp, ctx: Any = None) -> tuple[Rule, UOp] | None:
    """The first rule that rewrites u, and its result."""
    for r in self.pdict.get(u.op, ()):
      if (ret := r.apply(u, ctx)) is not None: return r, ret
    return None


Observer = Callable[[Rule, UOp, UOp], None]


class RewriteCycle(RuntimeError):
  pass


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True,
                  observer: Observer | None = None, max_steps: int | None = None) -> UOp:
  """Rewrite the graph under root with pm until no rule applies.

  bottom_up: a node's sources are rewritten before the node (post-order). Otherwise top-down: rules are tried on a
  node before its sources, then again once its sources have changed. Either way a rule's result is itself rewritten.
  observer(rule, before, after) is called on every rule application; after max_steps applications no rule is applied
  any more and the partially rewritten graph is returned.
  """
  return _Rewriter(pm, ctx, bottom_up, observer, max_steps).run(root)


class _Rewriter:
  def __init__(self, pm: PatternMatcher, ctx: Any, bottom_up: bool, observer: Observer | None, max_steps: int | None):
    self.pm, self.ctx, self.bottom_up, self.observer, self.max_steps = pm, ctx, bottom_up, observer, max_steps
    self.steps = 0

  def _try(self, u: UOp) -> UOp | None:
    if self.max_steps is not None and self.steps >= self.max_steps: return None
    if (hit := self.pm.rewrite(u, self.ctx)) is None: return None
    rule, new = hit
    self.steps += 1
    if self.observer is not None: self.observer(rule, u, new)
    return new

  def run(self, root: UOp) -> UOp:
    done: dict[UOp, UOp] = {}
    busy: set[UOp] = set()
    # stack entries: (node, phase, link). phase 0: first visit; 1: sources done; 2: node is done when `link` is
    stack: list[tuple[UOp, int, UOp | None]] = [(root, 0, None)]
    while stack:
      u, phase, link = stack.pop()
      if u in done: continue
      if phase == 0:
        if u in busy: raise RewriteCycle(f"rewrite of {u.op.name} reached itself through a rule's result")
        if not self.bottom_up and (new := self._try(u)) is not None:
          stack.append((u, 2, new)); stack.append((new, 0, None))  # noqa: E702
          continue
        busy.add(u)
        stack.append((u, 1, None))
        stack.extend((s, 0, None) for s in reversed(u.src) if s not in done)
      elif phase == 1:
        new_src = tuple(done[s] for s in u.src)
        nu = u if all(a is b for a, b in zip(new_src, u.src)) else u.replace(src=new_src)
        if (new := self._try(nu)) is None:
          busy.discard(u)
          done[u] = nu
        else:
          stack.append((u, 2, new)); stack.append((new, 0, None))  # noqa: E702
      else:
        busy.discard(u)
        done[u] = done[link]
    return done[root]


def count_steps(root: UOp, pm: PatternMatcher, ctx_factory: Callable[[], Any] = lambda: None, bottom_up: bool = True) -> int:
  """How many rule applications a full rewrite of root takes."""
  n = 0
  def obs(rule, before, after):
    nonlocal n
    n += 1
  graph_rewrite(root, pm, ctx_factory(), bottom_up, observer=obs)
  return n


def is_const(u: UOp, value: Any | None = None) -> bool:
  return u.op is Ops.CONST and (value is None or u.arg == value)


__all__ = ["UPat", "Rule", "PatternMatcher", "graph_rewrite", "RewriteCycle", "count_steps", "GroupOp"]

"""Pattern matching and graph rewriting: UPat, named rules, PatternMatcher, graph_rewrite with observer and step limit."""
from __future__ import annotations

import itertools
import keyword
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from tinyspec.dtype import DType, dtypes
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
  """A named rewrite rule. `fn(**bindings)` (and `ctx=` when it takes one) returns a new node or None.

  examples: narrower patterns, each matched by `pat`, whose instances the rule rewrites: what `tinyspec prove` builds
  besides instances of `pat` when `pat` alone (an ADD, say) rarely builds what the rule looks for inside it."""
  name: str
  pat: UPat
  fn: Callable[..., UOp | None] = field(compare=False)
  examples: tuple[UPat, ...] = field(default=(), compare=False)
  # file:line of the rule's function, so a report can point at the code; taken where the rule is made and carried with
  # it, because a function sent to another process by value (cloudpickle) no longer knows its file
  location: str = field(default="", compare=False)

  def __post_init__(self):
    object.__setattr__(self, "takes_ctx", _takes_ctx(self.fn))
    if not self.location: object.__setattr__(self, "location", code_location(self.fn))

  def __repr__(self) -> str: return f"Rule({self.name} @ {self.location})"
  # pickled as what it is made of: its compiled functions are rebuilt where it is loaded (a table sent to another process)
  def __reduce__(self): return (Rule, (self.name, self.pat, self.fn, self.examples, self.location))

  def apply(self, u: UOp, ctx: Any) -> UOp | None:
    """fn on every binding under which the pattern matches u, in order; the first result that is not None nor u."""
    return self.compiled(False)(u, ctx)

  def compiled(self, op_known: bool) -> Callable[[UOp, Any], UOp | None]:
    """apply as one generated function (op_known: the caller has checked u.op is one of the pattern's ops)."""
    key = "_fast_op" if op_known else "_fast"
    if (f := self.__dict__.get(key)) is None:
      f = _compile_rule(self, op_known)
      object.__setattr__(self, key, f)
    return f


def code_location(fn: Any) -> str:
  """file:line of a function's code, the file relative to the working directory ("<unknown>" without code)."""
  code = getattr(fn, "__code__", None)
  if code is None: return "<unknown>"
  return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}"


def _takes_ctx(fn: Callable) -> bool:
  code = getattr(fn, "__code__", None)
  return code is not None and "ctx" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


# ---- rule compilation ----
# A rule's pattern becomes straight-line Python: nested ifs that test each pattern node on the node it is matched
# against, one block per order of a commutative source list, and a call of fn where every test passed. Enumerating
# bindings depth first, in the order UPat.match lists them, and stopping at the first result keeps apply's meaning
# without building a list of binding dicts per attempt.

# Ops and the dtype singletons are compared by identity first: Enum and dataclass hashing runs Python code
_DTYPE_SINGLETONS = {id(d): d for d in vars(dtypes).values() if isinstance(d, DType)}


def _names(p: UPat) -> bool:
  if p.name is not None: return True
  if isinstance(p.src, UPat): return _names(p.src)
  return p.src is not None and any(_names(s) for s in p.src)


class _RuleCompiler:
  def __init__(self, rule: Rule):
    self.rule, self.env, self.lines, self.nvar = rule, {"FN": rule.fn}, [], 0

  def const(self, v: Any, hint: str) -> str:
    name = f"{hint}{len(self.env)}"
    self.env[name] = v
    return name

  def var(self) -> str:
    self.nvar += 1
    return f"v{self.nvar}"

  def emit(self, ind: int, line: str) -> None: self.lines.append("  " * ind + line)

  def tests(self, p: UPat, v: str, bound: dict[str, str], check_op: bool) -> list[str]:
    """The conditions (in UPat.match's order) for pattern node p on variable v, and the new binding if any."""
    conds = []
    if check_op and p.op is not None:
      if len(p.op) == 1: conds.append(f"{v}.op is {self.const(next(iter(p.op)), 'OP')}")
      else: conds.append(f"id({v}.op) in {self.const(frozenset(id(o) for o in p.op), 'OPS')}")
    if p.dtype is not None:
      ds = p.dtype
      m = {i: d in ds for i, d in _DTYPE_SINGLETONS.items()}
      conds.append(f"({self.const(m, 'DTM')}.get(id({v}.dtype)) or (id({v}.dtype) not in {self.const(_DTYPE_SINGLETONS, 'DTS')} "
                   f"and {v}.dtype in {self.const(ds, 'DT')}))")
    if p.arg is not None:
      conds.append(f"{v}.arg == {self.const(p.arg, 'ARG')} and type({v}.arg) is {self.const(type(p.arg), 'T')}")
    if p.name is not None and p.name in bound: conds.append(f"{v} is {bound[p.name]}")
    if p.pred is not None: conds.append(f"{self.const(p.pred, 'PRED')}({v})")
    if isinstance(p.src, UPat):
      conds.append(f"all({self.const(_bool_matcher(p.src), 'ALL')}(s) for s in {v}.src)")
    elif p.src is not None:
      n = len(p.src)
      conds.append(f"len({v}.src) >= {n}" if p.allow_any_len else f"len({v}.src) == {n}")
    return conds

  def gen(self, items: list[tuple[UPat, str, bool]], bound: dict[str, str], ind: int) -> None:
    if not items:
      kw = [f"{k}={v}" for k, v in bound.items()]
      if self.rule.takes_ctx: kw.append("ctx=ctx")
      self.emit(ind, f"r = FN({', '.join(kw)})")
      self.emit(ind, "if r is not None and r is not u: return r")
      return
    (p, v, check_op), rest = items[0], items[1:]
    conds = self.tests(p, v, bound, check_op)
    if conds:
      self.emit(ind, f"if {' and '.join(conds)}:")
      ind += 1
    if p.name is not None and p.name not in bound: bound = {**bound, p.name: v}
    if p.src is None or isinstance(p.src, UPat):
      self.gen(rest, bound, ind)
      return
    svars = [self.var() for _ in p.src]
    if svars:
      self.emit(ind, f"{', '.join(svars)}{',' if len(svars) == 1 else ''} = {v}.src{'' if not p.allow_any_len else f'[:{len(svars)}]'}")
    orders = itertools.permutations(p.src) if p.commutative else (p.src,)
    for pats in orders:
      self.gen([(sp, sv, True) for sp, sv in zip(pats, svars)] + rest, bound, ind)


def _compile_rule(rule: Rule, op_known: bool) -> Callable[[UOp, Any], UOp | None]:
  if not _compilable(rule.pat):
    def slow(u: UOp, ctx: Any) -> UOp | None:
      for store in rule.pat.match(u, {}):
        if (ret := rule.fn(**({**store, "ctx": ctx} if rule.takes_ctx else store))) is not None and ret is not u: return ret
      return None
    return slow
  c = _RuleCompiler(rule)
  c.emit(0, "def match(u, ctx):")
  c.gen([(rule.pat, "u", not op_known)], {}, 1)
  c.emit(1, "return None")
  exec(compile("\n".join(c.lines), f"<rule {rule.name}>", "exec"), c.env)  # noqa: S102
  return c.env["match"]


def _compilable(p: UPat, top: bool = True) -> bool:
  # names must be keyword arguments; a pattern for every source binds nothing (bindings there are matched generically)
  if p.name is not None and (not p.name.isidentifier() or keyword.iskeyword(p.name) or p.name == "ctx"): return False
  if isinstance(p.src, UPat): return not _names(p.src)
  return p.src is None or all(_compilable(s, False) for s in p.src)


def _bool_matcher(p: UPat) -> Callable[[UOp], bool]:
  """Whether a pattern that binds no names matches u at all."""
  if p.src is None and p.dtype is None and p.arg is None and p.pred is None and p.op is not None and len(p.op) == 1:
    op = next(iter(p.op))
    return lambda u: u.op is op
  return lambda u: bool(p.match(u, {}))


class PatternMatcher:
  """An ordered table of named rules, dispatched by the op of the node. Rules are (name, UPat, fn) or Rule."""

  def __init__(self, rules: Sequence[tuple[str, UPat, Callable] | tuple[str, UPat, Callable, tuple[UPat, ...]] | Rule], name: str = ""):
    self.name = name
    self.rules: list[Rule] = [r if isinstance(r, Rule) else Rule(*r) for r in rules]
    names = [r.name for r in self.rules]
    if len(set(names)) != len(names): raise ValueError(f"duplicate rule names in {name}: {sorted(n for n in names if names.count(n) > 1)}")
    self.pdict: dict[Ops, list[Rule]] = {}
    for r in self.rules:
      for op in (r.pat.op if r.pat.op is not None else Ops):
        self.pdict.setdefault(op, []).append(r)
    self._fast: dict[int, tuple[tuple[Rule, Callable[[UOp, Any], UOp | None]], ...]] | None = None
    self.dispatch()  # compile now, not inside the first rewrite

  # pickled as its rules and name: its dispatch is keyed by id(op), another number in another process
  def __reduce__(self): return (PatternMatcher, (self.rules, self.name))

  def dispatch(self) -> dict[int, tuple[tuple[Rule, Callable[[UOp, Any], UOp | None]], ...]]:
    """id(op) -> the (rule, compiled apply) pairs to try on a node of that op, in table order."""
    if self._fast is None:
      self._fast = {id(op): tuple((r, r.compiled(True)) for r in rules) for op, rules in self.pdict.items()}
    return self._fast

  def __add__(self, other: PatternMatcher) -> PatternMatcher:
    return PatternMatcher(self.rules + other.rules, f"{self.name}+{other.name}")

  def replace_rule(self, name: str, fn: Callable | None = None, pat: UPat | None = None) -> PatternMatcher:
    """A copy with one rule's function or pattern swapped (for seeding bugs and testing the tools that find them)."""
    if name not in {r.name for r in self.rules}: raise KeyError(f"no rule {name!r} in {self.name}")
    rules = [Rule(r.name, pat or r.pat, fn or r.fn, r.examples) if r.name == name else r for r in self.rules]
    return PatternMatcher(rules, self.name)

  def rewrite(self, u: UOp, ctx: Any = None) -> tuple[Rule, UOp] | None:
    """The first rule that rewrites u, and its result."""
    for r, f in self.dispatch().get(id(u.op), ()):
      if (ret := f(u, ctx)) is not None: return r, ret
    return None


Observer = Callable[[Rule, UOp, UOp], None]
# called after every rule application with a function giving the whole graph as it stands then
Snapshot = Callable[[Callable[[], UOp]], None]


class RewriteCycle(RuntimeError):
  pass


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True,
                  observer: Observer | None = None, max_steps: int | None = None, snapshot: Snapshot | None = None) -> UOp:
  """Rewrite the graph under root with pm until no rule applies.

  bottom_up: a node's sources are rewritten before the node (post-order). Otherwise top-down: rules are tried on a
  node before its sources, then again once its sources have changed. Either way a rule's result is itself rewritten.
  observer(rule, before, after) is called on every rule application; after max_steps applications no rule is applied
  any more and the partially rewritten graph is returned.
  snapshot(current) is called after every rule application: current() is the graph this rewrite would return if it
  stopped there (what max_steps = the applications so far gives), built from the walk's own state, so checking every
  intermediate graph costs no rerun.
  """
  fast = pm.dispatch()
  steps = 0
  limit = (1 << 62) if max_steps is None else max_steps

  def step(n: UOp) -> UOp | None:
    """The result of the first rule that rewrites n (counted and observed), None when none does or no step is left."""
    nonlocal steps
    if steps >= limit: return None
    for rule, f in fast.get(id(n.op), ()):
      if (new := f(n, ctx)) is not None:
        steps += 1
        if observer is not None: observer(rule, n, new)
        return new
    return None

  done: dict[UOp, UOp] = {}
  busy: set[UOp] = set()
  pending: dict[UOp, UOp] = {}  # node -> the rule result it becomes, while that result is being rewritten (snapshots only)
  # stack entries: (node, phase, link). phase 0: first visit; 1: sources done; 2: node is done when `link` is
  stack: list[tuple[UOp, int, UOp | None]] = [(root, 0, None)]
  pop, push = stack.pop, stack.append

  def rewritten(u: UOp, new: UOp) -> None:
    push((u, 2, new)); push((new, 0, None))  # noqa: E702
    if snapshot is not None:
      pending[u] = new
      snapshot(lambda: _current(root, done, pending))

  while stack:
    u, phase, link = pop()
    if u in done: continue
    if phase == 0:
      if u in busy: raise RewriteCycle(f"rewrite of {u.op.name} reached itself through a rule's result")
      if not bottom_up and (new := step(u)) is not None:
        rewritten(u, new)
        continue
      busy.add(u)
      push((u, 1, None))
      for s in reversed(u.src):
        if s not in done: push((s, 0, None))
    elif phase == 1:
      src = u.src
      nu = u
      for s in src:
        if done[s] is not s:
          nu = u.replace(src=tuple(done[s] for s in src))
          break
      if (new := step(nu)) is not None: rewritten(u, new)
      else:
        busy.discard(u)
        done[u] = nu
    else:
      busy.discard(u)
      done[u] = done[link]
      if snapshot is not None: pending.pop(u, None)
  return done[root]


def _current(root: UOp, done: dict[UOp, UOp], pending: dict[UOp, UOp]) -> UOp:
  """The graph under root as a rewrite with this state would return it if no rule applied any more: a finished node
  is its result, a node being replaced is what its replacement becomes, any other node is rebuilt over its sources.
  Only the unfinished part above the finished nodes is walked."""
  if root in done: return done[root]
  memo: dict[UOp, UOp] = {}
  seen: set[UOp] = set()
  stack: list[UOp] = [root]
  while stack:
    u = stack[-1]
    if u not in seen:
      seen.add(u)
      for s in (to,) if (to := pending.get(u)) is not None else u.src:
        if s in done or s in memo: continue
        # a source seen but not finished is an ancestor: a rule's result that holds the node it replaces (the rewrite
        # itself reports that cycle); it stands for itself here
        if s in seen: memo[s] = s
        else: stack.append(s)
      continue
    stack.pop()
    if u in memo: continue
    if (to := pending.get(u)) is not None: memo[u] = memo[to] if to in memo else done[to]
    else:
      src = tuple([memo[s] if s in memo else done[s] for s in u.src])
      memo[u] = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
  return memo[root]


def count_steps(root: UOp, pm: PatternMatcher, ctx_factory: Callable[[], Any] = lambda: None, bottom_up: bool = True) -> int:
  """How many rule applications a full rewrite of root takes."""
  n = 0
  def obs(rule, before, after):
    nonlocal n
    n += 1
  graph_rewrite(root, pm, ctx_factory(), bottom_up, observer=obs)
  return n


__all__ = ["UPat", "Rule", "PatternMatcher", "graph_rewrite", "RewriteCycle", "count_steps", "GroupOp"]

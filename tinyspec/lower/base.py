"""What a pass is, the options of a lowering, and the rewrite driver that threads the fuzzer's hooks through passes."""
from __future__ import annotations

import keyword
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from tinyspec.dtype import DType
from tinyspec.rewrite import Observer, PatternMatcher, Rule, code_location, graph_rewrite
from tinyspec.spec import Stage
from tinyspec.uop import UOp


@dataclass
class Trace:
  """The hooks of one pass run: an observer of every rule application and a step limit shared by all of the
  pass's rewrites, those a rule makes inside its own application included (nested_rewrite), so blame can bisect over
  the pass's rule applications as one sequence.

  on_graph(k, current, body) sees every graph a rewrite of the pass holds: the graph handed to it (k = the applications
  made before it; what the pass built outside its rules) and the graph after each of its rule applications (k counts
  that one). current() builds the graph: the rewrite's root as it stands then, the whole graph or (body true) one CALL
  body the pass rewrites on its own. A nested rewrite holds no graph of the pass (its root is a part a rule is
  building), so it is not shown; its applications are counted in k all the same."""
  observer: Observer | None = None
  max_steps: int | None = None
  steps: int = 0
  on_graph: Callable[[int, Callable[[], UOp], bool], None] | None = None
  # rewrites of this trace in progress (an observer reads it): 2 or more while a rule's nested rewrite applies its rules
  depth: int = field(default=0, init=False, repr=False, compare=False)
  _limited: dict[int, _WithinLimit] = field(default_factory=dict, init=False, repr=False, compare=False)

  def rewrite(self, root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True, body: bool = False) -> UOp:
    """graph_rewrite with this trace's observer, counting steps against the shared limit. body: root is one CALL body
    (a kernel, or one being built), not the pass's whole graph."""
    if self.exhausted: return root
    def obs(rule: Rule, before: UOp, after: UOp) -> None:
      self.steps += 1
      if self.observer is not None: self.observer(rule, before, after)
    left = None if self.max_steps is None else self.max_steps - self.steps
    snap = None
    if (on_graph := self.on_graph) is not None and not self.depth:
      on_graph(self.steps, lambda: root, body)
      def snap(current: Callable[[], UOp]) -> None: on_graph(self.steps, current, body)
    table: Any = pm
    if self.max_steps is not None and (table := self._limited.get(id(pm))) is None: table = self._limited[id(pm)] = _WithinLimit(pm, self)
    self.depth += 1
    try: return graph_rewrite(root, table, ctx, bottom_up, observer=obs, max_steps=left, snapshot=snap)
    finally: self.depth -= 1

  @property
  def exhausted(self) -> bool:
    return self.max_steps is not None and self.steps >= self.max_steps


class _WithinLimit:
  """pm as graph_rewrite reads it (its dispatch), each rule applying only while the trace has steps left. A rewrite's
  own count cannot see the steps its rules' nested rewrites spend, so every rule asks the trace; and an application whose
  nested rewrites spent the last step is not made: it would be one past the limit, and the graph after the limit is the
  graph before it (a nested rewrite changes no graph of the pass)."""
  __slots__ = ("pm", "trace", "_fast")

  def __init__(self, pm: PatternMatcher, trace: Trace):
    self.pm, self.trace = pm, trace  # pm held: the trace's cache is keyed by its id
    self._fast = {op: tuple((r, self._limited(f)) for r, f in pairs) for op, pairs in pm.dispatch().items()}

  def dispatch(self) -> dict[int, tuple[tuple[Rule, Callable[[UOp, Any], UOp | None]], ...]]: return self._fast

  def _limited(self, f: Callable[[UOp, Any], UOp | None]) -> Callable[[UOp, Any], UOp | None]:
    trace = self.trace
    def apply(u: UOp, ctx: Any) -> UOp | None:
      if trace.exhausted: return None
      new = f(u, ctx)
      return None if new is not None and trace.exhausted else new
    return apply


@dataclass(frozen=True)
class LowerOptions:
  """Choices of a lowering. `opts` are optimize actions (None: the heuristic picks)."""
  callify: str = "inline"          # inline | precompile
  realize: str = "minimal"         # minimal | all
  opts: tuple | None = None        # optimize actions, e.g. (("split", axis, factor), ("unroll", axis), ("global", axis))
  backend: str = "c"               # c | opencl: which renderer the render pass uses
  int_dtype: DType | None = None   # what `index` becomes at linearize (None: int32 when bounds fit, else int64)
  scatter: str = "atomic"          # atomic | dense: whether a one-hot sum over data indices becomes an atomic scatter-add
  images: bool = False             # whether kernel args whose storage and accesses fit an RGBA image become images (the images pass)


class Tables(Mapping[str, PatternMatcher]):
  """The rule tables of a pass, each an attribute named by the table's own name (`tables.pm_simplify`), in order: what
  the pass's run rewrites with, the only tables it rewrites with. Frozen: `replace` and `replace_rule` give new Tables.
  As a Mapping (name -> table) it is what a tool that walks every table of a pass reads (the prover, changed_rules)."""
  __slots__ = ("_by_name",)

  def __init__(self, tables: Iterable[PatternMatcher] = ()):
    by_name: dict[str, PatternMatcher] = {}
    for t in tables:
      if not isinstance(t, PatternMatcher): raise TypeError(f"a pass's table must be a PatternMatcher, not {type(t).__name__}")
      if not t.name: raise ValueError("a pass's table needs a name: its run reaches it by name")
      if not t.name.isidentifier() or keyword.iskeyword(t.name) or t.name.startswith("_") or hasattr(Tables, t.name):
        raise ValueError(f"a pass's table is an attribute of its name: {t.name!r} cannot be one")
      if t.name in by_name: raise ValueError(f"two tables named {t.name!r} in one pass")
      by_name[t.name] = t
    object.__setattr__(self, "_by_name", by_name)

  def __getattr__(self, name: str) -> PatternMatcher:
    if name.startswith("_"): raise AttributeError(name)  # never a table: what pickle and copy probe for
    try: return self._by_name[name]
    except KeyError: raise AttributeError(f"no table {name!r}; the pass has {list(self._by_name)}") from None

  def __setattr__(self, name: str, value: Any) -> None: raise AttributeError("a pass's tables are frozen: Tables.replace gives new ones")
  def __delattr__(self, name: str) -> None: raise AttributeError("a pass's tables are frozen")
  def __dir__(self) -> list[str]: return [*super().__dir__(), *self._by_name]
  def __reduce__(self): return (Tables, (tuple(self._by_name.values()),))

  def __getitem__(self, name: str) -> PatternMatcher:
    try: return self._by_name[name]
    except KeyError: raise KeyError(f"no table {name!r}; the pass has {list(self._by_name)}") from None

  def __iter__(self) -> Iterator[str]: return iter(self._by_name)
  def __len__(self) -> int: return len(self._by_name)
  def __hash__(self) -> int: return hash(tuple((k, id(v)) for k, v in self._by_name.items()))
  def __eq__(self, other: object) -> bool:
    return isinstance(other, Tables) and list(self._by_name) == list(other._by_name) and \
      all(a is b for a, b in zip(self._by_name.values(), other._by_name.values()))
  def __repr__(self) -> str: return f"Tables({', '.join(self._by_name)})"

  def replace(self, table: PatternMatcher) -> Tables:
    """These tables with the one named table.name replaced by table (KeyError when there is none)."""
    if table.name not in self._by_name: raise KeyError(f"no table {table.name!r} to replace; the pass has {list(self._by_name)}")
    return Tables(table if k == table.name else t for k, t in self._by_name.items())

  def replace_rule(self, rule: str, fn: Callable | None = None, pat: Any = None) -> Tables:
    """These tables with rule's function (or pattern) swapped in every table that holds it (KeyError when none does)."""
    hit = [k for k, t in self._by_name.items() if any(r.name == rule for r in t.rules)]
    if not hit: raise KeyError(f"no rule {rule!r} in the tables {list(self._by_name)}")
    return Tables(t.replace_rule(rule, fn, pat) if k in hit else t for k, t in self._by_name.items())


@dataclass(frozen=True)
class PassRun:
  """One run of a pass: the Trace it counts and observes its rule applications with, and the tables it rewrites with."""
  trace: Trace
  tables: Tables


# the pass run in progress (Pass.run): where a rule finds the trace and the tables of the pass applying it, without a
# ctx argument (a rule that takes one is one the prover cannot run on a pattern instance alone)
_RUNNING: ContextVar[PassRun | None] = ContextVar("tinyspec_pass_run", default=None)


@contextmanager
def running(trace: Trace, tables: Tables) -> Iterator[PassRun]:
  """The pass run in progress while the block runs: nested_rewrite rewrites with its trace and tables."""
  run = PassRun(trace, tables)
  token = _RUNNING.set(run)
  try: yield run
  finally: _RUNNING.reset(token)


def nested_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True) -> UOp:
  """A rewrite a rule makes inside its own application (a part of its result simplified, a range replaced). Inside a
  pass run it rewrites with the pass's table named pm.name (the one with_table / replace_rule put there) through the
  pass's Trace: its applications are observed, counted and stopped by the step limit like the pass's own. Outside a
  pass run (a table used on its own: the prover, the symbolic fuzzer, a benchmark) it is pm itself, untraced."""
  run = _RUNNING.get()
  if run is None: return graph_rewrite(root, pm, ctx, bottom_up)
  if pm.name not in run.tables: raise KeyError(f"a rule rewrites with table {pm.name!r}, which the pass does not hold: {list(run.tables)}")
  return run.trace.rewrite(root, run.tables[pm.name], ctx, bottom_up)


RunFn = Callable[[UOp, LowerOptions, Trace, Tables], UOp]


@dataclass(frozen=True)
class Pass:
  """One pass of the lowering: a named graph transformation from one stage to the next.

  `fn` is the pass module's entry point `run(root, options, trace, tables)`; `tables` are the rule tables it rewrites
  with, passed to it on every run, so a pass with one table replaced (`with_table`, `replace_rule`) is a new Pass and
  the pass modules' own tables are never swapped."""
  name: str
  stage_in: Stage
  stage_out: Stage
  fn: RunFn
  tables: Tables = field(default_factory=Tables)
  # file:line of fn, taken here and carried with it when pickled, as Rule.location (not an argument: a Pass made with
  # another fn, dataclasses.replace included, takes that fn's)
  location: str = field(default="", init=False, compare=False)

  def __post_init__(self):
    if not isinstance(self.tables, Tables): object.__setattr__(self, "tables", Tables(self.tables))
    object.__setattr__(self, "location", code_location(self.fn))

  def run(self, root: UOp, options: LowerOptions, trace: Trace | None = None) -> UOp:
    """The pass on root, rewriting with this pass's tables (its rules' nested rewrites too)."""
    trace = trace if trace is not None else Trace()
    with running(trace, self.tables): return self.fn(root, options, trace, self.tables)

  def with_table(self, table: PatternMatcher) -> Pass:
    """This pass with its table named table.name replaced by table."""
    return Pass(self.name, self.stage_in, self.stage_out, self.fn, self.tables.replace(table))

  def replace_rule(self, rule: str, fn: Callable | None = None, pat: Any = None) -> Pass:
    """This pass with one rule's function (or pattern) swapped in every table of it that holds the rule."""
    return Pass(self.name, self.stage_in, self.stage_out, self.fn, self.tables.replace_rule(rule, fn, pat))

  def rules(self) -> list[Rule]:
    """Every rule of the pass's tables, in table order (a rule in two tables is listed once)."""
    seen: dict[int, Rule] = {}
    for t in self.tables.values():
      for r in t.rules: seen.setdefault(id(r), r)
    return list(seen.values())

"""What a pass is, the options of a lowering, and the rewrite driver that threads the fuzzer's hooks through passes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from tinyspec.dtype import DType
from tinyspec.rewrite import Observer, PatternMatcher, Rule, code_location, graph_rewrite
from tinyspec.spec import Stage
from tinyspec.uop import UOp


@dataclass
class Trace:
  """The hooks of one pass run: an observer of every rule application and a step limit shared by all of the
  pass's graph_rewrite calls (so blame can bisect over the pass's rule applications as one sequence).

  on_graph(k, current, body) sees every graph a rewrite of the pass holds: the graph handed to it (k = the applications
  made before it; what the pass built outside its rules) and the graph after each of its rule applications (k counts
  that one). current() builds the graph: the rewrite's root as it stands then, the whole graph or (body true) one CALL
  body the pass rewrites on its own."""
  observer: Observer | None = None
  max_steps: int | None = None
  steps: int = 0
  on_graph: Callable[[int, Callable[[], UOp], bool], None] | None = None

  def rewrite(self, root: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = True, body: bool = False) -> UOp:
    """graph_rewrite with this trace's observer, counting steps against the shared limit. body: root is one CALL body
    (a kernel, or one being built), not the pass's whole graph."""
    if self.max_steps is not None and self.steps >= self.max_steps: return root
    def obs(rule: Rule, before: UOp, after: UOp) -> None:
      self.steps += 1
      if self.observer is not None: self.observer(rule, before, after)
    left = None if self.max_steps is None else self.max_steps - self.steps
    snap = None
    if (on_graph := self.on_graph) is not None:
      on_graph(self.steps, lambda: root, body)
      def snap(current: Callable[[], UOp]) -> None: on_graph(self.steps, current, body)
    return graph_rewrite(root, pm, ctx, bottom_up, observer=obs, max_steps=left, snapshot=snap)

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
  scatter: str = "atomic"          # atomic | dense: whether a one-hot sum over data indices becomes an atomic scatter-add
  images: bool = False             # whether kernel args whose storage and accesses fit an RGBA image become images (the images pass)


class Tables(Mapping[str, PatternMatcher]):
  """The rule tables of a pass, by each table's own name, in order: what the pass's run rewrites with, the only tables
  it rewrites with. Immutable: `replace` and `replace_rule` give new Tables."""
  __slots__ = ("_by_name",)

  def __init__(self, tables: Iterable[PatternMatcher] = ()):
    by_name: dict[str, PatternMatcher] = {}
    for t in tables:
      if not isinstance(t, PatternMatcher): raise TypeError(f"a pass's table must be a PatternMatcher, not {type(t).__name__}")
      if not t.name: raise ValueError("a pass's table needs a name: its run looks it up by name")
      if t.name in by_name: raise ValueError(f"two tables named {t.name!r} in one pass")
      by_name[t.name] = t
    self._by_name = by_name

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
    """The pass on root, rewriting with this pass's tables."""
    return self.fn(root, options, trace if trace is not None else Trace(), self.tables)

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

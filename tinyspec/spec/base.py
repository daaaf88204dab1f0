"""The vocabulary of the spec: stages, violations, named rules and their registry, and the contexts rules run in."""
from __future__ import annotations

import reprlib
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Mapping

from tinyspec.dtype import DType
from tinyspec.uop import Ops, UOp


class Stage(Enum):
  TENSOR = "tensor"
  KERNEL_GRAPH = "kernel_graph"
  KERNEL = "kernel"
  PROGRAM = "program"

  def __repr__(self) -> str: return f"Stage.{self.name}"


def safe_repr(x: Any, limit: int = 80) -> str:
  """repr(x) for a message: never raises (a hostile __repr__, an int too long to print, a tuple nested past the
  recursion limit) and at most about `limit` characters."""
  if isinstance(x, int) and not isinstance(x, bool) and type(x) is int and x.bit_length() > 200: return f"<an int of {x.bit_length()} bits>"
  try:
    r = _REPR.repr(x)
  except BaseException as e:  # noqa: B036 -- anything a hostile object raises, RecursionError included
    if isinstance(e, (KeyboardInterrupt, SystemExit)): raise
    return f"<a {type(x).__name__} whose repr raises {type(e).__name__}>"
  return r if len(r) <= limit else r[:limit - 3] + "..."


def safe_str(x: Any, limit: int = 300) -> str:
  """str(x) (an exception's message) for a message: never raises, at most about `limit` characters."""
  try: r = str(x)
  except BaseException as e:  # noqa: B036
    if isinstance(e, (KeyboardInterrupt, SystemExit)): raise
    return f"<a {type(x).__name__} whose str raises {type(e).__name__}>"
  return r if len(r) <= limit else r[:limit - 3] + "..."


class _Repr(reprlib.Repr):
  def repr_int(self, x: int, level: int) -> str:
    return f"<an int of {x.bit_length()} bits>" if x.bit_length() > 200 else int.__repr__(x)


_REPR = _Repr()
_REPR.maxlevel, _REPR.maxtuple, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 4, 8, 8, 6, 60, 60


def _node_str(u: Any) -> str:
  if not isinstance(u, UOp): return type(u).__name__
  op = u.op.name if isinstance(u.op, Ops) else safe_repr(u.op, 40)
  dt = u.dtype.name if type(u.dtype) is DType and isinstance(u.dtype.name, str) else safe_repr(u.dtype, 40)
  return f"{op} {dt}"


PathLink = tuple  # (parent link or None, source index): a path from the root, shared by the paths below it


def link_path(link: PathLink | None, rel: tuple[int, ...] = ()) -> tuple[int, ...]:
  """The source indices of a path link, root first, then rel."""
  out: list[int] = []
  while link is not None:
    link, i = link
    out.append(i)
  out.reverse()
  return tuple(out) + tuple(rel)


class Violation:
  """One broken rule: the node, its path from the root (source indices), the stage, the rule id and a sentence.

  The checker gives the path as a link to its parent's (built in constant time per node, so checking is linear in the
  graph); the tuple is made when asked for."""
  __slots__ = ("node", "_path", "_link", "stage", "rule", "message")

  def __init__(self, node: UOp, path: tuple[int, ...] | None, stage: Stage, rule: str, message: str,
               link: tuple[PathLink | None, tuple[int, ...]] | None = None):
    self.node, self.stage, self.rule = node, stage, rule
    self.message = message if len(message) <= 2000 else message[:1997] + "..."
    self._path, self._link = (tuple(path) if path is not None else None), link

  @property
  def path(self) -> tuple[int, ...]:
    if self._path is None:
      link, rel = self._link or (None, ())
      self._path = link_path(link, rel)
    return self._path

  def __eq__(self, o: object) -> bool:
    return isinstance(o, Violation) and (self.node is o.node and self.stage is o.stage and self.rule == o.rule and self.message == o.message
                                         and self.path == o.path)

  def __hash__(self) -> int: return hash((id(self.node), self.rule, self.message))

  def __repr__(self) -> str: return f"Violation({self.rule}, {self.where}, {self.message[:60]!r})"

  @property
  def where(self) -> str:
    return "root" + "".join(f".src[{i}]" for i in self.path)

  def __str__(self) -> str:
    return f"[{self.stage.name}] {self.rule}: {self.message}\n    at {self.where} ({_node_str(self.node)})"


class SpecError(Exception):
  """Raised by verify; holds every violation found."""
  def __init__(self, violations: list[Violation]):
    self.violations = violations
    more = f"\n... and {len(violations) - 20} more" if len(violations) > 20 else ""
    super().__init__(f"{len(violations)} spec violation(s):\n" + "\n".join(str(v) for v in violations[:20]) + more)


# A rule function takes (node, ctx) and returns None when the node passes, a message (the node breaks the rule), or a
# list of Findings (breaks found at nodes below it, e.g. the STORE of a SINK whose range is never closed).
Finding = tuple[tuple[int, ...], UOp, str, str]  # (path relative to the checked node, node, rule id, message)
RuleFn = Callable[[UOp, "Ctx"], "str | list[Finding] | None"]


# ---- fast predicates: what a rule asks, as clauses a table compiles into the fused check of each op (spec/fast.py) ----

@dataclass(frozen=True)
class Code:
  """A clause: an expression that holds, or (text of several lines) a block that runs on into the rest of the check at its
  line "$" (a loop's else, an if). It reads the names of the op's frame (spec/frames.py) and consts."""
  text: str
  consts: tuple[tuple[str, Any], ...] = ()

  @staticmethod
  def of(text: str, **consts: Any) -> Code: return Code(text, tuple(sorted(consts.items())))


@dataclass(frozen=True)
class In:
  """A clause: the object a frame name holds is one of ids (by id). Clauses In on one name are merged into one test."""
  name: str
  ids: frozenset[int]


@dataclass(frozen=True)
class Same:
  """A clause: a frame name holds the very object another does (`a is b`); b may name a const. The compiler reads In
  clauses on a through b."""
  a: str
  b: str
  consts: tuple[tuple[str, Any], ...] = ()


Clause = Code | In | Same
# A fast predicate: for an op the rule is listed for, clauses that together imply the rule holds (a sufficient condition, no
# weaker than the rule), or None when there are none for that op: then a table leaves the op to the rules.
FastFn = Callable[[Ops], "tuple[Clause, ...] | None"]


@dataclass(frozen=True)
class Rule:
  """A named rule of the spec. `id` is stable (tests, corpus signatures and docs/spec.md refer to it); `fast`, its fast
  predicate, when it has one."""
  id: str
  doc: str
  fn: RuleFn
  fast: FastFn | None = None

  def __repr__(self) -> str: return f"Rule({self.id})"


RULES: dict[str, Rule] = {}


def rule(id: str, doc: str, fast: FastFn | None = None) -> Callable[[RuleFn], Rule]:
  """Register a rule function under a stable id; `doc` is the one-line statement docs/spec.md expands; `fast` its fast
  predicate (see FastFn)."""
  def deco(fn: RuleFn) -> Rule:
    if id in RULES: raise ValueError(f"rule id {id!r} registered twice")
    RULES[id] = r = Rule(id, doc, fn, fast)
    return r
  return deco


def forbid(id: str, doc: str, why: str) -> Rule:
  """Register a rule that every node of the ops its table lists it for breaks: the message is "<OP> " + why, with {stage}
  in why standing for the stage checked."""
  return rule(id, doc)(lambda u, cx: f"{u.op.name} " + why.format(stage=cx.sname))


def declare(id: str, doc: str) -> str:
  """Register a rule id that is enforced by the walk itself rather than by a rule function."""
  return rule(id, doc)(lambda u, cx: None).id


class _HoldsBind:
  """The verdict of a clean node whose subgraph holds a BIND (a clean BIND-free one's is True, an unclean one's False):
  truthy, so a verdict reads as clean or not, and distinct from True, so a SINK whose entries are all True has no BIND
  under it and bind.one_value has nothing to compare (spec/fast.py's SINK accept reads that)."""
  __slots__ = ()
  def __bool__(self) -> bool: return True
  def __repr__(self) -> str: return "HOLDS_BIND"


HOLDS_BIND = _HoldsBind()


class Ctx:
  """Where in a graph a node is checked: its stage's rule table and what its sources are checked as.

  top: reached from the root without entering a call body (a PARAM there is bound by nothing).
  body_stage: at KERNEL_GRAPH contexts, the stage every kernel body must be at (None: the stage its form says).
  view_ctx: where the tensor value x of a view INDEX(x, i0, ...) is checked (None: in this context itself).
  var_ctx: where the sources of a BIND (its DEFINE_VAR and CONST) are checked (None: in this context itself)."""
  __slots__ = ("name", "stage", "table", "top", "body_stage", "key", "lkey", "body_ctx", "view_ctx", "var_ctx", "run")

  def __init__(self, name: str, stage: Stage, tbl: Mapping[Ops, tuple[Rule, ...]], top: bool = False, body_stage: Stage | None = None):
    self.name, self.stage, self.table, self.top, self.body_stage = name, stage, tbl, top, body_stage
    self.key, self.lkey = f"spec:{name}", f"spec:{name}:local"
    self.body_ctx: Callable[[UOp], Ctx] = lambda body: self
    self.view_ctx: Ctx | None = None
    self.var_ctx: Ctx | None = None
    self.run: Callable | None = None  # the walk of this context, compiled from its table (the engine sets it on first use)

  def __repr__(self) -> str: return f"Ctx({self.name})"

  @property
  def sname(self) -> str:
    return self.stage.name

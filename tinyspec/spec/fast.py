"""The fused checks of a table, compiled from its rules when the table is built (as a pattern matcher compiles its patterns).

The rules of a stage are the spec; checking a node through them is a dispatch loop over several rule functions, a
well-formedness check and a shape derivation. Most nodes the checker sees are legal, so for an op whose rules all carry a
fast predicate (spec/base.py: clauses that imply the rule holds) the table compiles one fused check: the clauses of the
op's frame (spec/frames.py: well-formedness and the shape rule) and of every rule the table lists for the op, in one
function of straight-line Python. It reads the verdicts of the node's sources (already checked: the walk is post-order)
and returns
  True   the node is legal and so is its whole subgraph, which holds no BIND (its shape is cached on it, as the rules
         would derive it),
  False  a source's subgraph is not clean (so neither is the node's),
  None   it cannot tell: the rules decide, and write the messages. A source that is clean but holds a BIND (verdict
         engine.HOLDS_BIND) is such a case: the rules decide the node, so a verdict True always means BIND-free.
A fused check covers exactly the rules its table lists for the op: an op with a rule that carries no fast predicate (or
none for that op) has no fused check, and the rules decide each of its nodes; a rule with one is enforced by its clauses.
tests/test_spec_fast.py compares the two paths node by node on random legal and broken graphs.

The same clauses are compiled twice: into one function per op (Compiled.fused, by op value), and into the walk of a
context (Compiled.walk), where the checks of the frequent ops run written out in the loop rather than by a call: on a
fresh graph the calls, not the tests, were most of the time. Ops whose checks read the same apart from the dtype sets
they test share one branch of the loop, their sets read from the plan; the leading branches of one op each are tried on
the op itself. Up a chain a node's source is the node the walk accepted just before, whose verdict, shape, device and
dtype the walk knows: each branch is also written for that case (branch_source), with what holds of it left out. A
dtype set is a dict by name, its entry compared by identity (an id() test allocates an int per node).
"""
from __future__ import annotations

import builtins
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tinyspec.dtype import dtypes
from tinyspec.spec.base import Clause, Code, In, Rule, Same
from tinyspec.spec.devices import UNKNOWN
from tinyspec.spec.frames import FRAMES, Frame, shaped
from tinyspec.spec.shared import is_view_index
from tinyspec.uop import Ops, UOp

CheckFn = Callable[[UOp, str], "bool | None"]
_NAMES = re.compile(r"\b[A-Za-z_][A-Za-z_0-9]*\b")
_WORDS = re.compile(r"(?<![.\w])[A-Za-z_]\w*\b")  # names, not attributes
_BUILTINS = frozenset({"id", "type", "len", "tuple", "int", "isinstance", "list", "reversed", "zip", "bool", "str", "Exception"})


@dataclass(frozen=True)
class Member:
  """What the clauses say of one object: the frame names that hold it (Same), the ids it is among (In, or its const's), and
  the part that tests it (None: a const, tested when compiled)."""
  names: frozenset[str]
  ids: frozenset[int]
  part: str | None


@dataclass(frozen=True)
class OpCheck:
  """One op's fused check: its frame, its clauses as code (lines, "$" where the rest nests; c0.. name the dtype sets of
  `sets`, each as _member reads it), per source for a frame of any number of sources, the consts the code names, and what
  the clauses say of the objects they test by identity."""
  op: Ops
  frame: Frame
  parts: tuple[str, ...]
  sets: tuple[Mapping[str, Any] | frozenset[int], ...]
  consts: tuple[tuple[str, Any], ...]
  each: tuple[str, ...] = ()
  members: tuple[Member, ...] = ()

  @property
  def dtype_ids(self) -> frozenset[int] | None:
    """The ids the dtype of a node the check accepts is among (None: its clauses do not say)."""
    return next((m.ids for m in self.members if "dt" in m.names), None)


def _consts_of(c: Clause) -> tuple[tuple[str, Any], ...]:
  return () if isinstance(c, In) else c.consts


_DTYPES = {id(d): d for d in dtypes.all}


def _member(name: str, ids: frozenset[int], c: str) -> tuple[str, Mapping[str, Any] | frozenset[int]]:
  """The test that the object name holds is one of ids, as code reading the set c, and that set. Dtypes of distinct names are
  looked up by name, the object found compared by identity: one dict read (id() allocates an int at each call)."""
  objs = [_DTYPES.get(x) for x in ids]
  if None not in objs and len({d.name for d in objs}) == len(objs): return f"{c}[{name}.name] is {name}", {d.name: d for d in objs}
  return f"id({name}) in {c}", ids


def _normalize(clauses: list[Clause], consts: dict[str, Any], sets: list, members: list[Member]) -> list[str] | None:
  """The clauses as code, in order: Same first read as who is what (so In tests on names known to be one object merge into one
  test, of the intersection of their sets; a name known to be a const is tested now), duplicates once; what they say of each
  object added to members. None: never holds."""
  parent: dict[str, str] = {}

  def find(x: str) -> str:
    while x in parent: x = parent[x]
    return x
  for c in clauses:
    for k, v in _consts_of(c):
      if consts.setdefault(k, v) is not v: raise ValueError(f"fast predicates name two objects {k}")
    if isinstance(c, Same) and (ra := find(c.a)) != (rb := find(c.b)):
      if ra in consts: parent[rb] = ra
      else: parent[ra] = rb
  merged: dict[str, frozenset[int]] = {}
  for c in clauses:
    if isinstance(c, In): merged[find(c.name)] = merged.get(find(c.name), c.ids) & c.ids
  held: dict[str, set[str]] = {}
  for c in clauses:
    for x in (c.name,) if isinstance(c, In) else (c.a, c.b) if isinstance(c, Same) else (): held.setdefault(find(x), set()).add(x)
  out: list[str] = []
  for name in held:
    if name in consts:
      if name in merged and id(consts[name]) not in merged[name]: return None
      members.append(Member(frozenset(held[name]), frozenset({id(consts[name])}), None))
    elif name in merged:
      test, got = _member(name, merged[name], f"c{len(sets)}")
      out.append(test)
      sets.append(got)
      members.append(Member(frozenset(held[name]), merged[name], test))
  for c in clauses:
    text = f"{c.a} is {c.b}" if isinstance(c, Same) else c.text if isinstance(c, Code) else None
    if text is not None and text not in out: out.append(text)
  return out


def compile_op(op: Ops, rules: tuple[Rule, ...]) -> OpCheck | None:
  """op's fused check under rules (a table's for op), or None when one of them has no fast predicate for op."""
  frame = FRAMES.get(op)
  if frame is None: return None
  got: list[Clause] = []
  for r in rules:
    if r.fast is None or (cs := r.fast(op)) is None: return None
    got.extend(cs)
  consts: dict[str, Any] = {}
  sets: list[Mapping[str, Any] | frozenset[int]] = []
  each: list[str] | None = []
  members: list[Member] = []
  if frame.n is None:  # the rules' clauses read each source
    parts, each = _normalize(list(frame.clauses), consts, sets, members), _normalize(got, consts, sets, [])
  else: parts = _normalize([*frame.clauses, *got], consts, sets, members)
  if parts is None or each is None: return None
  return OpCheck(op, frame, tuple(parts), tuple(sets), tuple(sorted(consts.items())), tuple(each), tuple(members))


def nest(parts: tuple[str, ...], inner: list[str]) -> list[str]:
  """inner, run where every part holds: a run of expressions is one if; a block runs inner at its line "$"."""
  body, i = inner, len(parts)
  while i:
    j = i
    while j and "\n" not in parts[j - 1]: j -= 1
    if j < i:
      body = [f"if {' and '.join(f'({p})' for p in parts[j:i])}:"] + ["  " + x for x in body]
      i = j
      continue
    i -= 1
    out: list[str] = []
    for line in parts[i].split("\n"):
      if line.strip() == "$": out.extend(line[:-1] + x for x in body)
      else: out.append(line)
    body = out
  return body


def _bound(chk: OpCheck, body: list[str]) -> list[str]:
  """body after the frame names it reads beyond the sources' verdicts, shapes and devices: each bound to a local, or, read
  once, read where it is used."""
  reads = {**{f"d{i}": f"s{i}.dtype" for i in range(chk.frame.n or 0)}, "dt": "u.dtype", "a": "u.arg"}
  uses = Counter(_WORDS.findall("\n".join(body)))
  out = [f"{name} = {read}" for name, read in reads.items() if uses[name] > 1]
  if chk.frame.device is None and not any("dv = " in p for p in chk.parts): out.append("dv = UNKNOWN")
  return out + _renamed(body, {name: read for name, read in reads.items() if uses[name] == 1})


def function_source(chk: OpCheck, name: str) -> list[str]:
  """The check as a function name(u, k) (its sets c0.. bound as defaults by the caller)."""
  n, sets = chk.frame.n, "".join(f", c{i}=c{i}" for i in range(len(chk.sets)))
  head = [f"def {name}(u, k{sets}):", "  try:"]
  if n is None:  # a frame of any number of sources: node clauses, then each source's
    loop = ["for s in u.src:", "  v = s._cache[k]", "  if v is not True: return None if v else False", "  d = s.dtype"]
    loop += [f"  if not ({p}): return None" for p in chk.each]
    return head + ["    " + x for x in _bound(chk, nest(chk.parts, loop + ["return True"]))] + ["  except Exception: pass", "  return None"]
  srcs = "".join(f"s{i}, " for i in range(n))
  pro = [f"({srcs}) = u.src" if n else "if u.src: return None"]
  for i in range(n): pro += [f"f_c{i} = s{i}._cache", f"v{i}, sh{i}, dv{i} = f_c{i}[k], f_c{i}.get('shape'), UNKNOWN"]
  if n:
    pro.append(f"if {' or '.join(f'v{i} is not True' for i in range(n))}: return None if {' and '.join(f'v{i}' for i in range(n))} else False")
  accept = [f"u._cache['shape'] = {chk.frame.shape}", "return True"]
  return head + ["    " + x for x in pro + _bound(chk, nest(chk.parts, accept))] + ["  except Exception: pass", "  return None"]


def _renamed(code: list[str], names: dict[str, str]) -> list[str]:
  """code with the names (words, not attributes) replaced. The frame's names are never in the code's string literals."""
  if not names: return code
  pat = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, names)) + r")\b")
  return [pat.sub(lambda m: names[m.group(1)], line) for line in code]


def _read(i: int, last: bool) -> list[str]:
  """Source i's verdict, shape and device: from its cache, or (last: when it may be the node accepted last) at hand."""
  read = [f"f_c = s{i}._cache", f"v{i}, sh{i}, dv{i} = f_c[k], f_c.get('shape'), UNKNOWN"]
  return [f"if s{i} is last: v{i}, sh{i}, dv{i} = True, last_shape, last_dev", "else:", *["  " + x for x in read]] if last else read


def _gated(chk: OpCheck, parts: list[str], srcs: list[int], accept: list[str], not_last: tuple[int, ...] = ()) -> list[str]:
  """The reads of srcs (those of not_last are not the node accepted last), then the clauses where they are all clean and
  BIND-free, accepting; where one is not clean, False."""
  body = _bound(chk, nest(tuple(parts), accept))
  if not srcs: return body
  vs = [f"v{i}" for i in srcs]
  return ([x for i in srcs for x in _read(i, i not in not_last)] + [f"if {' and '.join(f'{v} is True' for v in vs)}:"] +
          ["  " + x for x in body] + [f"elif not ({' and '.join(vs)}):", "  uc[k] = False", "  continue"])


def _accept(shape: str, device: str) -> list[str]:
  return ["uc['shape'] = last_shape" if shape == "last_shape" else f"uc['shape'] = last_shape = {shape}", "uc[k] = True",
          "last = u" if device == "last_dev" else f"last, last_dev = u, {device}", "continue"]


_SAME = re.compile(r"(\w+) is \1( or |$)")  # a part that holds: "x is x", "x is x or ..."


def _at_hand(chk: OpCheck, srcs: list[int], last_ids: frozenset[int] | None) -> list[str]:
  """The check where sources srcs are the node accepted last (see branch_source), accepting: its parts with their names
  the walk's, less those that hold of that node (and so hold once renamed). The others are read, the last node's not
  when there are two sources and the first is it (where both are it is written before)."""
  names = {f"{p}{i}": r for i in srcs for p, r in (("sh", "last_shape"), ("dv", "last_dev"))}
  names |= {f"d{i}": f"d{srcs[0]}" for i in srcs[1:]}  # one node: one dtype
  held = {shaped(i).text for i in srcs}
  held |= {m.part for m in chk.members if last_ids is not None and last_ids <= m.ids and any(f"d{i}" in m.names for i in srcs)}
  shape, device = _renamed([chk.frame.shape, chk.frame.device or "dv"], names)
  rest = [i for i in range(chk.frame.n or 0) if i not in srcs]
  parts = [p for p in _renamed([p for p in chk.parts if p not in held], names) if not _SAME.match(p)]
  return _gated(chk, parts, rest, _accept(shape, device), not_last=tuple(rest) if len(rest) == 1 and chk.frame.n == 2 else ())


def branch_source(chk: OpCheck, last_ids: frozenset[int] | None = None) -> list[str]:
  """The check written out in the walk's loop, after the node u, its cache uc and op are read, accepting with continue.
  Up a chain a node's sources are often the node accepted last on the path, whose verdict is True, shape last_shape (a
  tuple: every frame of a fixed number of sources derives one), device last_dev and dtype one of last_ids (what the walk's
  checks accept). So the check is written where every source is it (x + x), where the first is, and where the first is not
  (each other source read from its cache, or from the last node when it is), the names of the sources that are it the
  walk's, and the clauses that hold of it (a shape, a dtype of a set that holds last_ids) left out."""
  n = chk.frame.n or 0
  if not n: return ["if u.src: raise ValueError"] + _gated(chk, list(chk.parts), [], _accept(chk.frame.shape, chk.frame.device or "dv"))
  out = [f"({''.join(f's{i}, ' for i in range(n))}) = u.src"]
  if n > 1: out += [f"if {' and '.join(f's{i} is last' for i in range(n))}:"] + ["  " + x for x in _at_hand(chk, list(range(n)), last_ids)]
  out += [f"{'elif' if n > 1 else 'if'} s0 is last:"] + ["  " + x for x in _at_hand(chk, [0], last_ids)]
  general = _gated(chk, list(chk.parts), list(range(n)), _accept(chk.frame.shape, chk.frame.device or "dv"), not_last=(0,))
  return out + ["else:"] + ["  " + x for x in general]


def _define(src: list[str], name: str, ns: dict[str, Any]) -> Any:
  """The function name of src, defined in ns; the globals and builtins it reads are bound as defaults of keyword-only
  parameters, so that each is a local (a global read costs a dict lookup, in a loop run once per node)."""
  text = "\n".join(src)
  head, rest = text.split("\n", 1)
  params = set(_NAMES.findall(head))
  names = sorted(n for n in set(_NAMES.findall(rest)) if (n in ns or n in _BUILTINS) and n not in params)
  if names: head = head[:-2] + ", *, " + ", ".join(f"{n}={n}" for n in names) + "):"
  exec(head + "\n" + rest, {**vars(builtins), **ns}, out := {})  # noqa: S102 -- code generated above from the table's rules
  return out[name]


def _namespace(checks: list[OpCheck]) -> dict[str, Any]:
  ns: dict[str, Any] = {"UNKNOWN": UNKNOWN}
  for chk in checks:
    for k, v in chk.consts:
      if ns.setdefault(k, v) is not v: raise ValueError(f"fast predicates name two objects {k}")
  return ns


@dataclass
class Compiled:
  """A table's fused checks: by op value, the function (None: the rules decide), and the walks built from them."""
  checks: list[OpCheck]
  fused: list[CheckFn | None]
  walks: dict[tuple, Callable] = field(default_factory=dict)

  def walk(self, views: bool, binds: bool, decide: Callable, push_children: Callable, fused: bool = True) -> Callable:
    """The walk of a context (see walk_source): views, binds say whether its view INDEXes and BINDs hold sources checked in
    another context; fused False: the rules decide every node."""
    key = (views, binds, decide, push_children, fused)
    if (ret := self.walks.get(key)) is None:
      ret = self.walks[key] = build_walk(self.checks if fused else [], self.fused, views, binds, decide, push_children)
    return ret


def compile_table(tbl: Mapping[Ops, tuple[Rule, ...]]) -> Compiled:
  checks = [chk for op in Ops if (chk := compile_op(op, tuple(tbl.get(op, ())))) is not None]
  fused: list[CheckFn | None] = [None] * (max(op.value for op in Ops) + 1)
  ns = _namespace(checks)
  for chk in checks:
    fused[chk.op.value] = _define(function_source(chk, "check"), "check", {**ns, **{f"c{i}": s for i, s in enumerate(chk.sets)}})
  return Compiled(checks, fused)


# The walk of one frame of the checker (spec/engine.py clean), decide and push_children its calls into the engine. Its stack
# holds nodes to visit and lists of nodes to decide. A visit goes down from an undecided node while it has exactly one
# undecided source (x + x has one: the same node twice), gathering the path; where the path ends on a node whose sources are
# all decided, the path is decided at once, bottom up; where it ends on a node with more undecided sources, or one checked
# in another context, the path goes on the stack to be decided after them. A chain costs one list append per node.
# No node is decided twice: what is pushed after a waiting path lies below the path's last node. It returns False when it
# stopped to run a frame it added first (it resumes after).
WALK = """def run(x, stack, frames):
  k = x.key
  pop, push = stack.pop, stack.append
  while stack:
    path = pop()
    if type(path) is not list:
      u = path
      if k in u._cache: continue
      path = [u]
      while True:
        if {special}:
          push(path)
          if push_children(u, x, push, frames): return False
          path = None
          break
        src = u.src
        if len(src) == 1:
          s = src[0]
          if (type(s) is not UOp and not isinstance(s, UOp)) or k in s._cache: break
          u = s
          path.append(u)
          continue
        if len(src) == 2:
          a, b = src
          if (type(a) is UOp or isinstance(a, UOp)) and k not in a._cache:
            if b is not a and (type(b) is UOp or isinstance(b, UOp)) and k not in b._cache:
              push(path)
              push(a)
              push(b)
              path = None
              break
            u = a
          elif b is not a and (type(b) is UOp or isinstance(b, UOp)) and k not in b._cache: u = b
          else: break
          path.append(u)
          continue
        nxt = None
        for s in src:
          if (type(s) is UOp or isinstance(s, UOp)) and k not in s._cache and s is not nxt:
            if nxt is not None:
              push(path)
              for s in src:
                if (type(s) is UOp or isinstance(s, UOp)) and k not in s._cache: push(s)
              path = None
              break
            nxt = s
        else:
          if nxt is None: break
          u = nxt
          path.append(u)
          continue
        break
      if path is None: continue
    last, last_shape, last_dev = NO_NODE, None, UNKNOWN
    for u in reversed(path):
      uc = u._cache
      op = u.op
      try:
{branches}
      except Exception: pass
      uc[k] = decide(u, x)
  return True
"""
_CALL = -1  # a branch that calls the op's function: its frame reads any number of sources


def _branches(inline: list[OpCheck]) -> tuple[list[tuple[OpCheck, list[str]]], list[tuple[list[OpCheck], list[str]]]]:
  """The branches of the walk's loop, in the order of their frames' ranks: the ops of one code share a branch. The leading
  branches of one op each (before the first shared one) are tested on the op itself, their sets named for it (no read of
  the plan); the rest by the plan, which gives each op its branch and its sets c0.."""
  ids = [c.dtype_ids for c in inline]
  last_ids = None if None in ids else frozenset().union(*ids)  # the dtypes of the nodes the branches accept
  groups: dict[tuple[str, ...], list[OpCheck]] = {}
  for chk in sorted(inline, key=lambda c: (c.frame.rank, c.op.value)): groups.setdefault(tuple(branch_source(chk, last_ids)), []).append(chk)
  items = list(groups.items())
  lead = next((i for i, (_, chks) in enumerate(items) if len(chks) > 1), len(items))
  direct = [(chks[0], _renamed(list(code), {f"c{i}": f"{chks[0].op.name}_c{i}" for i in range(len(chks[0].sets))})) for code, chks in items[:lead]]
  return direct, [(chks, list(code)) for code, chks in items[lead:]]


def build_walk(checks: list[OpCheck], fused: list[CheckFn | None], views: bool, binds: bool, decide: Callable,
               push_children: Callable) -> Callable:
  """The walk with checks written out (see _branches); a frame of any number of sources calls its op's function."""
  inline = [c for c in checks if c.frame.n is not None]
  direct, shared = _branches(inline)
  width = max([1, *(len(c.sets) for c in inline)])
  plan: list[tuple] = [()] * len(fused)  # by op value (only for an Ops: a member of another Enum may have an op's value)
  for br, (chks, _) in enumerate(shared, 1):
    for chk in chks: plan[chk.op.value] = (br, *chk.sets, *[None] * (width - len(chk.sets)))
  for chk in checks:
    if chk.frame.n is None: plan[chk.op.value] = (_CALL, fused[chk.op.value], *[None] * (width - 1))
  no_plan = (0, *[None] * width)
  plan = [p or no_plan for p in plan]
  by_plan = [f"br, {', '.join(f'c{i}' for i in range(width))} = plan[op._value_] if type(op) is Ops else NO_PLAN"]
  by_plan += [f"{'if' if br == 1 else 'elif'} br == {br}:\n" + "\n".join("  " + x for x in code) for br, (_, code) in enumerate(shared, 1)]
  by_plan.append(f"{'elif' if shared else 'if'} br == {_CALL} and (r := c0(u, k)) is not None:\n  uc[k] = r\n  continue")
  lines = [f"{'if' if i == 0 else 'elif'} op is {chk.op.name}_OP:\n" + "\n".join("  " + x for x in code) for i, (chk, code) in enumerate(direct)]
  if direct: by_plan = ["else:\n" + "\n".join("  " + x for code in by_plan for x in code.split("\n"))]
  special = "u.op is CALL_OP" if not binds else "(op := u.op) is CALL_OP or op is BIND_OP"
  src = WALK.format(special=special + (" or is_view_index(u)" if views else ""),
                    branches="\n".join("        " + x for code in lines + by_plan for x in code.split("\n")))
  ns = {**_namespace(checks), "plan": plan, "NO_PLAN": no_plan, "NO_NODE": object(), "decide": decide, "push_children": push_children,
        "is_view_index": is_view_index, "CALL_OP": Ops.CALL, "BIND_OP": Ops.BIND, "UOp": UOp, "Ops": Ops}
  for chk, _ in direct: ns |= {f"{chk.op.name}_OP": chk.op, **{f"{chk.op.name}_c{i}": st for i, st in enumerate(chk.sets)}}
  return _define(src.split("\n"), "run", ns)

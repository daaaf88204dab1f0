"""What a drawing shows: the graph split into call-body scopes, violations placed on it, single-use elementwise trees
collapsed into one box, and, above a node limit, only the part nearest the root plus the violations.

Every walk here is iterative, so a chain of a million nodes lays out without touching the recursion limit."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from tinyspec.uop import Ops, UOp, body_kind
from tinyspec.viz.style import group_of


@dataclass
class Scope:
  """A call body drawn as its own cluster (scope 0 is the graph itself). Bodies shared by several CALLs are one scope."""
  parent: int | None
  body: UOp | None
  name: str
  kind: str  # graph, kernel, function, copy, body


@dataclass
class Placed:
  """A violation located in the drawing: the drawn node it names and the drawn edges along its path from the root."""
  violation: Any
  node: int
  path_nodes: list[int]            # drawn nodes from the root to the violating node, when the path could be followed
  path_edges: list[tuple[int, int]]  # (user node, source index)


@dataclass
class Layout:
  scopes: list[Scope]
  nodes: list[tuple[int, UOp]]          # (scope, uop), breadth-first from the root: nearest first
  srcs: list[list[tuple[int, int]]]     # per node: (source index, source node)
  nusers: list[int] = field(default_factory=list)  # per node: distinct users other than a LINEAR listing it (2 means 2 or more)
  linear_pos: dict[int, list[int]] = field(default_factory=dict)  # node -> its positions in the LINEAR that lists it
  placed: list[Placed] = field(default_factory=list)
  unplaced: list[Any] = field(default_factory=list)  # violations whose node is not in this graph
  groups: dict[int, list[int]] = field(default_factory=dict)  # collapsed tree: its sink -> members, sources first
  unit: list[int] = field(default_factory=list)                # node -> the drawn unit holding it (itself or a tree sink)
  visible: set[int] = field(default_factory=set)              # drawn units
  keep: set[int] = field(default_factory=set)                 # nodes drawn whatever the limit (focus nodes)
  total_units: int = 0

  @property
  def limited(self) -> bool: return len(self.visible) < self.total_units

  def violations_at(self) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for p in self.placed: out.setdefault(p.node, []).append(p.violation)
    return out


# how a CALL body's scope is labelled, by what body_kind says it is (kernels, programs and nested kernel graphs are drawn
# as kernels)
_SCOPE_KIND = {"value": "function", "copy": "copy", "effect": "precompiled", "bad": "body"}


def _scope_of_body(call: UOp, body: UOp, n: int) -> tuple[str, str]:
  kind = _SCOPE_KIND.get(body_kind(body), "kernel")
  name = call.arg if isinstance(call.arg, str) and call.arg else body.arg if body.op is Ops.PROGRAM and isinstance(body.arg, str) else ""
  return (name or f"{kind} #{n}"), kind


def expand(root: UOp) -> Layout:
  """The drawn nodes: every (scope, uop) reachable from the root, where a CALL's body (src[0]) opens a nested scope."""
  scopes = [Scope(None, None, "graph", "graph")]
  scope_of: dict[tuple[int, UOp], int] = {}
  key: dict[tuple[int, UOp], int] = {(0, root): 0}
  nodes: list[tuple[int, UOp]] = [(0, root)]
  srcs: list[list[tuple[int, int]]] = []
  q = deque([0])
  while q:
    d = q.popleft()
    s, u = nodes[d]
    out = []
    for i, x in enumerate(u.src):
      if not isinstance(x, UOp): continue  # a malformed source list must still draw
      t = s
      if u.op is Ops.CALL and i == 0:
        if (t := scope_of.get((s, x))) is None:
          name, kind = _scope_of_body(u, x, len(scopes))
          t = scope_of[(s, x)] = len(scopes)
          scopes.append(Scope(s, x, name, kind))
      if (j := key.get((t, x))) is None:
        j = key[(t, x)] = len(nodes)
        nodes.append((t, x))
        q.append(j)
      out.append((i, j))
    srcs.append(out)
  lay = Layout(scopes, nodes, srcs)
  users: list[int | None] = [None] * len(nodes)
  lay.nusers = [0] * len(nodes)
  for d, out in enumerate(srcs):
    lin = nodes[d][1].op is Ops.LINEAR
    for i, j in out:
      if lin:
        lay.linear_pos.setdefault(j, []).append(i)
        continue
      if users[j] is None: users[j], lay.nusers[j] = d, 1
      elif users[j] != d: lay.nusers[j] = 2
  return lay


def place(lay: Layout, violations: Iterable[Any]) -> None:
  """Locate each violation by following its path from the root; by its node when the path does not lead there."""
  first: dict[UOp, int] | None = None
  for v in violations:
    d, nodes, edges = 0, [0], []
    for i in tuple(getattr(v, "path", ()) or ()):
      j = dict(lay.srcs[d]).get(i) if isinstance(i, int) else None
      if j is None: break
      edges.append((d, i))
      nodes.append(j)
      d = j
    else:
      if lay.nodes[d][1] is getattr(v, "node", None):
        lay.placed.append(Placed(v, d, nodes, edges))
        continue
    if first is None:
      first = {}
      for k, (_, u) in enumerate(lay.nodes): first.setdefault(u, k)
    if (k := first.get(getattr(v, "node", None))) is None: lay.unplaced.append(v)
    else: lay.placed.append(Placed(v, k, [], []))


def collapse(lay: Layout, min_size: int, pinned: set[int]) -> None:
  """Group trees of single-use elementwise nodes of at least min_size nodes into one unit each.

  A node joins the tree of its user when it is elementwise, used by exactly one node, and that user is elementwise
  too; every node but the tree's sink is then used only inside the tree, so the box has one output. Pinned nodes
  (violations, their paths, highlighted nodes) are never hidden in a box."""
  n = len(lay.nodes)
  lay.unit = list(range(n))
  if min_size < 2: return
  ew = [group_of(u) == "elementwise" and d not in pinned for d, (_, u) in enumerate(lay.nodes)]
  user: list[int] = [-1] * n
  for d, out in enumerate(lay.srcs):
    if lay.nodes[d][1].op is Ops.LINEAR: continue
    for _, j in out: user[j] = d
  nxt = {d: user[d] for d in range(n) if ew[d] and lay.nusers[d] == 1 and ew[user[d]]}
  sink: dict[int, int] = {}
  for d in nxt:
    chain = []
    while d in nxt and d not in sink:
      chain.append(d)
      d = nxt[d]
    r = sink.get(d, d)
    for c in chain: sink[c] = r
  members: dict[int, list[int]] = {}
  for d, r in sink.items(): members.setdefault(r, []).append(d)
  for r, ms in members.items():
    if len(ms) + 1 < min_size: continue
    # breadth-first index grows away from the root and a tree node is reached only through its user: descending is sources first
    lay.groups[r] = sorted(ms + [r], reverse=True)
    for m in ms: lay.unit[m] = r


def limit(lay: Layout, max_nodes: int) -> None:
  """Choose the drawn units: all of them, or the max_nodes nearest the root plus every violation and its path."""
  units = [d for d in range(len(lay.nodes)) if lay.unit[d] == d]
  lay.total_units = len(units)
  if max_nodes <= 0 or len(units) <= max_nodes:
    lay.visible = set(units)
    return
  vis = set(units[:max_nodes])
  budget = max_nodes
  # violations and focus nodes are drawn wherever they are, up to another max_nodes of them
  for d in ([p.node for p in lay.placed] + sorted(lay.keep))[:max_nodes]: vis.add(lay.unit[d])
  # path nodes nearest the violation first: the part near the root is usually drawn already
  for p in lay.placed:
    for d in reversed(p.path_nodes):
      if budget <= 0: break
      if (u := lay.unit[d]) not in vis:
        vis.add(u)
        budget -= 1
  lay.visible = vis


def build(root: UOp, violations: Iterable[Any] = (), focus: Iterable[UOp] = (), collapse_min: int = 6, max_nodes: int = 250) -> Layout:
  """The layout of one drawing. `focus` nodes (found by identity, the first drawn copy of each) stay uncollapsed."""
  lay = expand(root)
  place(lay, violations)
  # a path may run through a folded box (its edges in and out stay red); the violating node itself is never folded
  pinned = {p.node for p in lay.placed}
  focus = set(focus)
  if focus: lay.keep = {d for d, (_, u) in enumerate(lay.nodes) if u in focus}
  pinned |= lay.keep
  collapse(lay, collapse_min, pinned)
  limit(lay, max_nodes)
  return lay

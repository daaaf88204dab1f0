"""Graphviz drawings of graphs, their spec violations and single rewrite steps.

draw(root, violations, title) gives a graphviz.Digraph: ops coloured by group with a legend, call bodies (kernels,
functions) as clusters, each violating node outlined in red with its rule id and the edges of its path from the root
in red, long single-use elementwise trees folded into one box, and above a node limit only the nodes nearest the root
plus the violations. render() writes it as SVG, PNG, PDF or dot. draw_rewrite() puts the graph before and after one
rule application side by side.

In the SVG every drawn op is a `<g>` whose class lists "uop", "op-<NAME>", "group-<group>" and, when they apply,
"violation", "focus", "new" or "gone"; folded boxes have class "collapsed"; call-body clusters have class "scope"
and their kind ("kernel", "function", ...).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

import graphviz

from tinyspec.fileio import atomic_write
from tinyspec.uop import Ops, UOp
from tinyspec.viz.layout import Layout, build
from tinyspec.viz.style import (EDGE_COLOR, FOCUS_COLOR, FONT, GROUP_COLORS, LINEAR_EDGE_COLOR, NEW_COLOR, VIOLATION_COLOR, arg_lines, cap,
                                full_text, group_color, group_of, gv_text, h, html_label, legend_label, type_line)

__all__ = ["draw", "render", "draw_rewrite", "save", "output_format", "FORMATS", "MAX_NODES", "COLLAPSE_MIN"]

MAX_NODES = 250      # drawn boxes above which only the part nearest the root (and the violations) is drawn
COLLAPSE_MIN = 6     # single-use elementwise trees of this many ops or more become one box
LABEL_WIDTH = 40     # characters per label line
MAX_RULES = 3        # rule ids listed in one node's label
FORMATS = ("svg", "png", "pdf", "dot")
SCOPE_COLORS = {"kernel": ("#3949ab", "#f3f5ff"), "function": ("#8e24aa", "#fcf4fd"), "precompiled": ("#00897b", "#f0faf9")}


def _new_graph(title: str) -> graphviz.Digraph:
  g = graphviz.Digraph("tinyspec")
  g.attr(rankdir="TB", ranksep="0.3", nodesep="0.25", fontname=FONT, fontsize="12")
  if title: g.attr(label=f"<<B>{h(cap(title, 160))}</B>>", labelloc="t")
  g.attr("node", shape="box", style="rounded,filled", fontname=FONT, fontsize="10", margin="0.08,0.04", penwidth="1")
  g.attr("edge", fontname=FONT, fontsize="8", color=EDGE_COLOR, arrowsize="0.6")
  return g


class _Emitter:
  """Writes one Layout into a graph (or cluster) under a name prefix, so two drawings can share one picture."""

  def __init__(self, lay: Layout, prefix: str, focus: set[UOp] = frozenset(), new: set[UOp] | None = None,
               gone: set[UOp] | None = None):
    self.lay, self.prefix, self.focus, self.new, self.gone = lay, prefix, focus, new, gone
    self.groups_seen: set[str] = set()
    self.kinds_seen: set[str] = set()

  def name(self, d: int) -> str: return f"{self.prefix}n{d}"

  def emit(self, g: graphviz.Digraph) -> list[str]:
    """Draw the layout into g; returns the notes (hidden nodes, unplaced violations) for the caller to show."""
    lay = self.lay
    edges, hidden = self._edges()
    clusters: dict[int, graphviz.Digraph] = {}

    def container(sid: int) -> graphviz.Digraph:
      if sid == 0: return g
      if sid not in clusters:
        sc = lay.scopes[sid]
        line, fill = SCOPE_COLORS.get(sc.kind, ("#757575", "#fafafa"))
        clusters[sid] = graphviz.Digraph(name=f"cluster_{self.prefix}s{sid}", graph_attr={
          "label": f"<<B>{h(cap(sc.name, 60))}</B> <I>{h(sc.kind)}</I>>", "style": "rounded,filled", "color": line,
          "fillcolor": fill, "fontname": FONT, "fontsize": "11", "id": f"{self.prefix}s{sid}", "class": f"scope {sc.kind}"})
        if sc.parent: container(sc.parent)  # ancestors exist before they are nested, innermost first below
      return clusters[sid]

    by_node = lay.violations_at()
    for r in sorted(lay.visible):
      sid = lay.nodes[r][0]
      if r in lay.groups: self._group_node(container(sid), r, hidden.get(r, 0))
      else: self._uop_node(container(sid), r, by_node.get(r, []), hidden.get(r, 0))
    for sid in sorted(clusters, reverse=True):  # a child scope always has a larger id than its parent
      parent = lay.scopes[sid].parent
      (g if not parent else clusters[parent]).subgraph(clusters[sid])
    for tail, head, attrs in edges: g.edge(tail, head, **attrs)
    notes = []
    if lay.limited:
      notes.append(f"showing {len(lay.visible)} of {lay.total_units} boxes: the nearest the root, and every violation")
    if lay.unplaced: notes.append(f"{len(lay.unplaced)} violation(s) name nodes not in this graph")
    return notes

  def _edges(self) -> tuple[list[tuple[str, str, dict[str, str]]], dict[int, int]]:
    lay = self.lay
    path_edges = {e for p in lay.placed for e in p.path_edges}
    edges: list[tuple[str, str, dict[str, str]]] = []
    hidden: dict[int, int] = {}
    for r in sorted(lay.visible):
      members = lay.groups.get(r, [r])
      inputs: dict[int, bool] = {}  # a folded box's sources, and whether a violation path enters through them
      for d in members:
        u, srcs = lay.nodes[d][1], lay.srcs[d]
        for i, j in srcs:
          s = lay.unit[j]
          if s == r: continue
          if s not in lay.visible:
            hidden[r] = hidden.get(r, 0) + 1
            continue
          if r in lay.groups:
            inputs[s] = inputs.get(s, False) or (d, i) in path_edges
            continue
          on_path = (d, i) in path_edges
          # a LINEAR lists every node of its kernel: its order is shown as "#k" in each node, and an edge is drawn only
          # where it is on a violation path or the listed node would otherwise float unconnected
          if u.op is Ops.LINEAR and not on_path and lay.nusers[j] > 0: continue
          attrs = {"label": str(i)} if len(srcs) > 1 else {}
          if on_path: attrs.update(color=VIOLATION_COLOR, penwidth="2.5", fontcolor=VIOLATION_COLOR, **{"class": "path"})
          elif u.op is Ops.LINEAR: attrs.update(color=LINEAR_EDGE_COLOR, style="dashed", fontcolor=LINEAR_EDGE_COLOR)
          elif u.op is Ops.CALL and i == 0: attrs.update(style="bold", **{"class": "body"})
          edges.append((self.name(s), self.name(r), attrs))
      for s, on_path in inputs.items():
        attrs = {"color": VIOLATION_COLOR, "penwidth": "2.5", "class": "path input"} if on_path else {"class": "input"}
        edges.append((self.name(s), self.name(r), attrs))
    # a path running through nodes left out by the limit is drawn as one dashed edge over the gap
    for p in lay.placed:
      shown = [k for k, d in enumerate(p.path_nodes) if lay.unit[d] in lay.visible]
      for a, b in zip(shown, shown[1:]):
        if b - a > 1:
          edges.append((self.name(lay.unit[p.path_nodes[b]]), self.name(lay.unit[p.path_nodes[a]]),
                        {"label": f"{b - a - 1} hidden", "style": "dashed", "color": VIOLATION_COLOR, "fontcolor": VIOLATION_COLOR,
                         "penwidth": "2", "class": "path gap"}))
    return edges, hidden

  def _uop_node(self, g: graphviz.Digraph, d: int, vs: list[Any], hidden: int) -> None:
    u = self.lay.nodes[d][1]
    grp = group_of(u)
    self.groups_seen.add(grp)
    lines: list[tuple[str, str]] = [("op", u.op.name)]
    if tl := type_line(u): lines.append(("text", tl))
    lines += [("text", x) for x in arg_lines(u, LABEL_WIDTH)]
    if u.tag is not None: lines.append(("note", cap(f"tag={u.tag!r}", LABEL_WIDTH)))
    if u.op is Ops.LINEAR: lines.append(("note", f"{len(u.src)} uops, order as #k"))
    if (pos := self.lay.linear_pos.get(d)) is not None: lines.append(("note", cap("#" + ",".join(map(str, pos)), LABEL_WIDTH)))
    if hidden: lines.append(("note", f"+{hidden} hidden source(s)"))
    rules = list(dict.fromkeys(str(getattr(v, "rule", "?")) for v in vs))
    lines += [("rule", cap(r, LABEL_WIDTH)) for r in rules[:MAX_RULES]]
    if len(rules) > MAX_RULES: lines.append(("rule", f"+{len(rules) - MAX_RULES} more rules"))
    tip = full_text(u) + [f"{getattr(v, 'rule', '?')}: {cap(str(getattr(v, 'message', '')), 300)}" for v in vs[:10]]
    cls = ["uop", f"op-{u.op.name}", f"group-{grp}"]
    attrs = {"fillcolor": group_color(grp)}
    if self.gone is not None and u in self.gone:
      cls.append("gone"); self.kinds_seen.add("gone")  # noqa: E702
      attrs.update(style="rounded,filled,dashed", penwidth="2")
    # one border colour per node: a violation outranks the rewritten node, which outranks "made by the rewrite"
    marks = [("violation", bool(vs), VIOLATION_COLOR, "3.5"), ("focus", u in self.focus, FOCUS_COLOR, "3.5"),
             ("new", self.new is not None and u in self.new, NEW_COLOR, "2.5")]
    for i, (kind, _, color, width) in enumerate(m for m in marks if m[1]):
      cls.append(kind)
      if i == 0:
        self.kinds_seen.add(kind)
        attrs.update(color=color, penwidth=width)
    g.node(self.name(d), label=html_label(lines), tooltip=gv_text(tip), id=self.name(d), **{"class": " ".join(cls)}, **attrs)

  def _group_node(self, g: graphviz.Digraph, r: int, hidden: int) -> None:
    members = [self.lay.nodes[m][1] for m in self.lay.groups[r]]
    self.groups_seen.add("elementwise")
    self.kinds_seen.add("collapsed")
    ops = [u.op.name for u in members]
    text = cap(" ".join(ops), LABEL_WIDTH * 2)
    lines = [("op", f"{len(members)} elementwise ops"), ("text", cap(" ".join(ops[:6]), LABEL_WIDTH) + (" ..." if len(ops) > 6 else ""))]
    if tl := type_line(members[-1]): lines.append(("text", tl))
    if hidden: lines.append(("note", f"+{hidden} hidden source(s)"))
    g.node(self.name(r), label=html_label(lines), tooltip=gv_text([f"{len(members)} elementwise ops, sources first:", text]),
           id=self.name(r), shape="box3d", style="filled", fillcolor=GROUP_COLORS["elementwise"], **{"class": "collapsed group-elementwise"})


_EXTRAS = {"violation": ("violation (rule id in red)", "#ffffff", VIOLATION_COLOR),
           "collapsed": ("folded elementwise ops", GROUP_COLORS["elementwise"], "#000000"),
           "focus": ("rewritten node", "#ffffff", FOCUS_COLOR), "new": ("node made by the rewrite", "#ffffff", NEW_COLOR),
           "gone": ("node gone after the rewrite (dashed)", "#ffffff", "#000000")}


def _finish(g: graphviz.Digraph, emitters: list[_Emitter], notes: list[str], prefix: str = "") -> None:
  groups = [x for x in list(GROUP_COLORS) + ["unknown"] if any(x in e.groups_seen for e in emitters)]
  extras = [_EXTRAS[k] for k in _EXTRAS if any(k in e.kinds_seen for e in emitters)]
  g.node(f"{prefix}legend", label=legend_label(groups, extras), shape="plaintext", style="", id=f"{prefix}legend", **{"class": "legend"})
  if notes:
    g.node(f"{prefix}note", label=html_label([("note", n) for n in notes]), shape="note", style="filled", fillcolor="#fffde7",
           id=f"{prefix}note", **{"class": "note"})


def draw(root: UOp, violations: Iterable[Any] = (), title: str = "", *, max_nodes: int = MAX_NODES,
         collapse_min: int = COLLAPSE_MIN) -> graphviz.Digraph:
  """The drawing of the graph under root with its violations (anything with .node, .path, .rule, .message, like
  tinyspec.spec.Violation) highlighted. max_nodes <= 0 draws everything; collapse_min < 2 folds nothing."""
  if not isinstance(root, UOp): raise TypeError(f"draw takes a UOp, not {type(root).__name__}")
  lay = build(root, list(violations), (), collapse_min, max_nodes)
  g = _new_graph(title)
  e = _Emitter(lay, "")
  notes = e.emit(g)
  _finish(g, [e], notes)
  return g


def draw_rewrite(before: UOp, after: UOp, rule_name: str, location: str, *, before_node: UOp | None = None,
                 after_node: UOp | None = None, max_nodes: int = MAX_NODES, collapse_min: int = COLLAPSE_MIN) -> graphviz.Digraph:
  """One rule application side by side: the graph before (left) and after (right), titled with the rule's name and
  location. `before` and `after` are the node the rule matched and the node it returned, highlighted in each; when
  whole graphs are drawn instead, before_node and after_node name the rewritten nodes. Nodes the rewrite made are
  outlined in green, nodes it left behind are dashed."""
  for nm, x in (("before", before), ("after", after)):
    if not isinstance(x, UOp): raise TypeError(f"draw_rewrite: {nm} must be a UOp, not {type(x).__name__}")
  fb = before if before_node is None else before_node
  fa = after if after_node is None else after_node
  bset, aset = set(before.toposort()), set(after.toposort())
  g = _new_graph(f"{rule_name} @ {location}")
  emitters, notes = [], []
  for side, root, focus, prefix in (("before", before, fb, "b_"), ("after", after, fa, "a_")):
    lay = build(root, (), (focus,), collapse_min, max_nodes)
    e = _Emitter(lay, prefix, focus={focus}, new=(aset - bset) if side == "after" else None, gone=(bset - aset) if side == "before" else None)
    c = graphviz.Digraph(name=f"cluster_{side}", graph_attr={"label": f"<<B>{side}</B>>", "style": "rounded", "color": "#9e9e9e",
                                                             "fontname": FONT, "id": side, "class": f"side {side}"})
    notes += [f"{side}: {n}" for n in e.emit(c)]
    g.subgraph(c)
    emitters.append(e)
  _finish(g, emitters, notes)
  return g


def output_format(path: str | os.PathLike, fmt: str | None = None) -> str:
  """The drawing format for path (fmt, else the file's suffix); ValueError naming the path when it is not one of FORMATS."""
  path = Path(path)
  f = (fmt or path.suffix.lstrip(".")).lower()
  f = "dot" if f == "gv" else f
  if f not in FORMATS:
    raise ValueError(f"cannot draw to {str(path)!r}: format {f or '(none)'!r} is not one of {', '.join(FORMATS)}")
  return f


def save(g: graphviz.Digraph, path: str | os.PathLike, fmt: str | None = None) -> Path:
  """Write a drawing to path (format from fmt or the file's suffix: svg, png, pdf, dot); the file appears whole or not at all."""
  p = Path(path)
  f = output_format(p, fmt)
  data = g.source.encode() if f == "dot" else g.pipe(format=f)
  atomic_write(p, data)
  return p


def render(root: UOp, path: str | os.PathLike, violations: Iterable[Any] = (), fmt: str | None = None, *, title: str = "",
           max_nodes: int = MAX_NODES, collapse_min: int = COLLAPSE_MIN) -> Path:
  """Draw the graph under root and write it to path (svg, png, pdf or dot, from fmt or the suffix). Returns the path."""
  f = output_format(Path(path), fmt)
  return save(draw(root, violations, title, max_nodes=max_nodes, collapse_min=collapse_min), path, f)

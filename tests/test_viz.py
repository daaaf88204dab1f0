"""Drawings: every kind of graph gives valid SVG holding its ops, violations and their paths are the highlighted
parts, kernels are clusters, elementwise trees fold, big graphs are cut to a readable part, and the CLI verb works."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from svgread import SVG, classes, elems, op_of, text, title

from tinyspec.cli import main
from tinyspec.dtype import dtypes
from tinyspec.spec import Stage, Violation
from tinyspec.opcodes import op_group
from tinyspec.uop import AddrSpace, AxisType, Ops, SourceArg, UOp
from tinyspec.viz import draw, draw_rewrite, render, save

XLINK = "{http://www.w3.org/1999/xlink}"
RED = "#d50000"
ROOT = Path(__file__).resolve().parent.parent


# ---- reading the SVG ----
def svg_of(g) -> ET.Element:
  return ET.fromstring(g.pipe(format="svg"))


def lines(el: ET.Element) -> list[str]:
  return [t.text for t in el.iter(SVG + "text") if t.text]


def shape_el(el: ET.Element) -> ET.Element:
  return next(x for x in el.iter() if x.tag in (SVG + "polygon", SVG + "path", SVG + "ellipse"))


def bbox(el: ET.Element) -> tuple[float, float, float, float]:
  sh = shape_el(el)
  nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", sh.get("points") or sh.get("d"))]
  xs, ys = nums[0::2], nums[1::2]
  return min(xs), min(ys), max(xs), max(ys)


def center(el: ET.Element) -> tuple[float, float]:
  t = next(el.iter(SVG + "text"))
  return float(t.get("x")), float(t.get("y"))


def inside(pt: tuple[float, float], box: tuple[float, float, float, float]) -> bool:
  return box[0] <= pt[0] <= box[2] and box[1] <= pt[1] <= box[3]


def scoped_nodes(root: UOp) -> list[UOp]:
  """Every node as drawn: the graph's own nodes once, and each distinct CALL body's nodes once more in its scope."""
  out, todo, seen_bodies = [], [root], set()
  while todo:
    top = todo.pop()
    seen, stack = set(), [top]
    while stack:
      u = stack.pop()
      if u in seen: continue
      seen.add(u)
      out.append(u)
      for i, s in enumerate(u.src):
        if u.op is Ops.CALL and i == 0:
          if s not in seen_bodies: seen_bodies.add(s); todo.append(s)  # noqa: E702
        else: stack.append(s)
  return out


# ---- graphs of every kind ----
f32, idx = dtypes.float32, dtypes.index


def c(v, dt=f32) -> UOp: return UOp.const(dt, v)


def tensor_graph() -> UOp:
  a = UOp.buffer(f32, 12).reshape((3, 4))
  b = UOp.buffer(f32, 4).expand((3,))
  v = a.permute((1, 0)).permute((1, 0)).alu(Ops.ADD, b)
  v = v.pad(((1, 5), (0, 4))).shrink(((1, 3), (0, 4))).flip((True, False))
  m = v.alu(Ops.CMPLT, c(0.0).expand((3, 4)))
  w = m.where(v, v.alu(Ops.NEG)).cast(dtypes.float64).reduce(Ops.MAX, 1)
  p0 = UOp.param(0, dtypes.float64, 4)
  call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.TUPLE, dtypes.void, (p0.alu(Ops.SQRT), p0)), w), "f")
  out = UOp.buffer(dtypes.float64, 4)
  st = out.store(UOp(Ops.CONTIGUOUS, dtypes.float64, (call.gettuple(0),)))
  return UOp(Ops.SINK, dtypes.void, (out.after(st), UOp(Ops.DETACH, dtypes.float64, (call.gettuple(1),)),
                                     UOp(Ops.COPY, dtypes.float64, (call.gettuple(1),), "CL"), UOp(Ops.GROUP, dtypes.void, (st,))))


def kernel_body(k: float, size: int = 16, reduce: bool = False) -> UOp:
  """out[i] = in[i] * k, or with reduce out[0] = sum(in) * k."""
  p0, p1 = UOp.param(0, f32, 1 if reduce else size), UOp.param(1, f32, size)
  r = UOp.range(size, 0, AxisType.REDUCE if reduce else AxisType.LOOP)
  if reduce:
    val = UOp(Ops.REDUCE, f32, (p1.index(r).load(), r), Ops.ADD)
    return UOp(Ops.SINK, dtypes.void, (p0.index(c(0, idx)).store(val.alu(Ops.MUL, c(k))),))
  return UOp(Ops.SINK, dtypes.void, (p0.index(r).store(p1.index(r).load().alu(Ops.MUL, c(k))).end(r),))


def kernel_graph() -> tuple[UOp, dict[str, float]]:
  """Three kernels a -> b -> c, each named and each multiplying by its own constant."""
  consts = {"k_scale2": 2.0, "k_scale3": 3.0, "k_sum5": 5.0}
  x, t, y, z = UOp.buffer(f32, 16), UOp.buffer(f32, 16), UOp.buffer(f32, 16), UOp.buffer(f32, 1)
  ka = UOp(Ops.CALL, dtypes.void, (kernel_body(2.0), t, x), "k_scale2")
  kb = UOp(Ops.CALL, dtypes.void, (kernel_body(3.0), y, t.after(ka)), "k_scale3")
  kc = UOp(Ops.CALL, dtypes.void, (kernel_body(5.0, reduce=True), z, y.after(kb)), "k_sum5")
  return UOp(Ops.SINK, dtypes.void, (z.after(kc), y.after(kb))), consts


def program_graph() -> UOp:
  ks = kernel_body(7.0)
  lin = UOp(Ops.LINEAR, dtypes.void, tuple(ks.toposort()))
  src = SourceArg("c", "k_prog", 'void k_prog(float* restrict a, const float* b) {\n  /* "quoted" \\ <tag> & co */\n  a[0] = b[0];\n}\n')
  prog = UOp(Ops.PROGRAM, dtypes.void, (ks, lin, UOp(Ops.SOURCE, dtypes.void, (), src)), "k_prog")
  out, inp = UOp.buffer(f32, 16), UOp.buffer(f32, 16)
  return UOp(Ops.SINK, dtypes.void, (out.after(UOp(Ops.CALL, dtypes.void, (prog, out, inp), "k_prog")),))


def nested_graph() -> UOp:
  """A precompiled value call: the outer kernel-graph CALL's body is itself a kernel graph with one kernel."""
  pin, pout = UOp.param(0, f32, 16), UOp.param(1, f32, 16)
  inner = UOp(Ops.SINK, dtypes.void, (pout.after(UOp(Ops.CALL, dtypes.void, (kernel_body(11.0), pout, pin), "k_inner")),))
  x, o = UOp.buffer(f32, 16), UOp.buffer(f32, 16)
  return UOp(Ops.SINK, dtypes.void, (o.after(UOp(Ops.CALL, dtypes.void, (inner, x, o), "outer_fn")),))


def special_graph() -> UOp:
  p0 = UOp.param(0, f32, 8)
  g = UOp(Ops.SPECIAL, idx, (c(8, idx),), "gidx0")
  acc = UOp.buffer(f32, 1, addrspace=AddrSpace.REG)
  return UOp(Ops.SINK, dtypes.void, (p0.index(g).store(acc.index(c(0, idx)).load()),))


def chain(n: int, x: UOp | None = None) -> tuple[UOp, list[UOp]]:
  x = UOp.buffer(f32, 6).reshape((2, 3)) if x is None else x
  nodes = []
  for i in range(n):
    x = x.alu(Ops.NEG if i % 3 == 0 else Ops.EXP2 if i % 3 == 1 else Ops.SQRT)
    nodes.append(x)
  return x, nodes


KINDS = {"tensor": lambda: tensor_graph(), "kernel_graph": lambda: kernel_graph()[0], "program": program_graph,
         "nested": nested_graph, "special": special_graph, "value_root": lambda: chain(3)[0]}


# ---- every kind of graph ----
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_draws_every_node(kind):
  root = KINDS[kind]()
  svg = svg_of(draw(root, collapse_min=0, max_nodes=0))
  drawn = elems(svg, "uop")
  expect = scoped_nodes(root)
  assert len(drawn) == len(expect)
  assert Counter(op_of(e) for e in drawn) == Counter(u.op.name for u in expect)
  groups = Counter(next(c[6:] for c in classes(e) if c.startswith("group-")) for e in drawn)
  assert groups == Counter(op_group(u.op) for u in expect)
  for e in drawn: assert lines(e)[0] == op_of(e), "each box starts with its op's name"
  (legend,) = elems(svg, "legend")
  for grp in groups: assert {"range": "range form", "call": "calls", "effects": "effects, order"}.get(grp, grp) in text(legend)
  assert not elems(svg, "note")


def test_args_shapes_and_dtypes_in_labels():
  root = tensor_graph()
  svg = svg_of(draw(root, collapse_min=0))
  by_op: dict[str, list[str]] = {}
  for e in elems(svg, "uop"): by_op.setdefault(op_of(e), []).append(text(e))
  assert any("(3,4)" in t and "float32" in t for t in by_op["RESHAPE"])
  assert any("float32 (3,4)" in t and "(1,0)" in t for t in by_op["PERMUTE"])
  assert any("MAX first 1 axes" in t and "float64 (4,)" in t for t in by_op["REDUCE"])
  assert any("slot 0 size 4" in t for t in by_op["PARAM"])
  assert any("1:5 0:4" in t for t in by_op["PAD"])
  assert any("(T,F)" in t for t in by_op["FLIP"])
  assert any("[1]" in t for t in by_op["GETTUPLE"]) and any("[0]" in t for t in by_op["GETTUPLE"])
  assert by_op["CALL"] == ["CALL f"]


def test_source_text_is_abbreviated_and_escaped():
  svg = svg_of(draw(program_graph()))
  (src,) = [e for e in elems(svg, "uop") if op_of(e) == "SOURCE"]
  ls = lines(src)
  text_len = len('void k_prog(float* restrict a, const float* b) {\n  /* "quoted" \\ <tag> & co */\n  a[0] = b[0];\n}\n')
  assert ls[1] == f"c:k_prog ({text_len} chars)"
  assert ls[2].startswith("void k_prog(float* restrict") and ls[2].endswith("…") and len(ls[2]) == 40
  assert ls[3] == '/* "quoted" \\ <tag> & co */'
  assert len(ls) == 4, "only the first two lines of the text"
  tip = src.find(f".//{SVG}a").get(XLINK + "title")
  assert '/* "quoted" \\ <tag> & co */' in tip and "a[0] = b[0];" in tip, "the tooltip holds the text itself"


def test_long_args_are_capped():
  p = UOp.param(0, f32, 4)
  root = UOp(Ops.SINK, dtypes.void, (UOp(Ops.CALL, dtypes.void, (UOp(Ops.TUPLE, dtypes.void, (p,)), UOp.buffer(f32, 4)), "x" * 300).gettuple(0),))
  svg = svg_of(draw(root))
  (call,) = [e for e in elems(svg, "uop") if op_of(e) == "CALL"]
  assert lines(call)[1] == "x" * 39 + "…"
  (cluster,) = elems(svg, "scope")
  assert max(len(x) for x in lines(cluster)) <= 60


def test_program_order_shown_without_an_edge_per_instruction():
  root = program_graph()
  svg = svg_of(draw(root, collapse_min=0))
  lin = next(u for u in root.toposort() if u.op is Ops.LINEAR)
  marks = [ln for e in elems(svg, "uop") for ln in lines(e) if re.fullmatch(r"#\d+", ln)]
  assert sorted(int(m[1:]) for m in marks) == list(range(len(lin.src)))
  edges = elems(svg, "edge")
  assert len(edges) < sum(len(u.src) for u in scoped_nodes(root)), "LINEAR's listing is not drawn as edges"


# ---- violations ----
def test_violating_node_and_its_path_are_highlighted():
  root = tensor_graph()
  call = next(u for u in root.toposort() if u.op is Ops.CALL)
  sqrt = call.src[0].src[0]
  # root.src[1] is DETACH(GETTUPLE(call, 1)) ... reach the SQRT through src indices: SINK.0 AFTER.1 STORE.1 CONTIGUOUS.0 GETTUPLE.0 CALL.0 TUPLE.0
  path = (0, 1, 1, 0, 0, 0, 0)
  u = root
  for i in path: u = u.src[i]
  assert u is sqrt
  v = Violation(sqrt, path, Stage.TENSOR, "tensor.sqrt_of_param", "a message")
  svg = svg_of(draw(root, [v], title="one violation"))
  (bad,) = elems(svg, "violation")
  assert op_of(bad) == "SQRT" and "tensor.sqrt_of_param" in lines(bad)
  assert shape_el(bad).get("stroke") == RED
  assert "a message" in bad.find(f".//{SVG}a").get(XLINK + "title")
  ops = {title(e): op_of(e) for e in elems(svg, "uop")}
  pairs = [tuple(title(e).split("->")) for e in elems(svg, "path")]
  ops_on_path = ["SINK", "AFTER", "STORE", "CONTIGUOUS", "GETTUPLE", "CALL", "TUPLE", "SQRT"]
  assert sorted((ops[a], ops[b]) for a, b in pairs) == sorted(zip(ops_on_path[1:], ops_on_path[:-1]))
  for e in elems(svg, "path"): assert shape_el(e).get("stroke") == RED
  assert "one violation" in text(svg)
  assert "violation" in text(elems(svg, "legend")[0])


def test_violation_with_a_wrong_path_is_found_by_its_node():
  root, _ = kernel_graph()
  perm = UOp.buffer(f32, 16).reshape((4, 4)).permute((1, 0))
  bad_root = UOp(Ops.SINK, dtypes.void, (*root.src, perm))
  vs = [Violation(perm, (9, 9), Stage.KERNEL_GRAPH, "kg.no_views", "a view"),
        Violation(UOp.buffer(f32, 3), (), Stage.KERNEL_GRAPH, "kg.elsewhere", "not in this graph")]
  svg = svg_of(draw(bad_root, vs))
  (bad,) = elems(svg, "violation")
  assert op_of(bad) == "PERMUTE" and "kg.no_views" in lines(bad)
  assert not elems(svg, "path")
  assert "1 violation(s) name nodes not in this graph" in text(elems(svg, "note")[0])


def test_several_rules_on_one_node_are_listed():
  x, _ = chain(2)
  root = UOp(Ops.SINK, dtypes.void, (x,))
  vs = [Violation(x, (0,), Stage.TENSOR, f"rule{i}", "m") for i in range(5)]
  (bad,) = elems(svg_of(draw(root, vs)), "violation")
  assert [ln for ln in lines(bad) if ln.startswith(("rule", "+"))] == ["rule0", "rule1", "rule2", "+2 more rules"]


def test_real_spec_violations_are_highlighted():
  from tinyspec.spec import check
  a = UOp.buffer(f32, 4)
  bad = UOp(Ops.ADD, f32, (a, UOp.buffer(f32, 6)))  # sources of different shapes
  root = UOp(Ops.SINK, dtypes.void, (bad.alu(Ops.NEG),))
  vs = check(root, Stage.TENSOR)
  assert vs and {v.node for v in vs} == {bad}, "mismatched shapes are illegal at TENSOR, at the ADD"
  svg = svg_of(draw(root, vs))
  (marked,) = elems(svg, "violation")
  assert op_of(marked) == "ADD"
  for v in vs: assert v.rule in lines(marked)
  ops = {title(e): op_of(e) for e in elems(svg, "uop")}
  assert sorted((ops[a], ops[b]) for a, b in (title(e).split("->") for e in elems(svg, "path"))) == [("ADD", "NEG"), ("NEG", "SINK")]


def test_kernel_graph_view_arg_violations_and_paths():
  from tinyspec.spec import check
  x, t = UOp.buffer(f32, 16), UOp.buffer(f32, 16)
  inner = x.reshape((4, 4))
  view = inner.permute((1, 0)).reshape((16,))
  root = UOp(Ops.SINK, dtypes.void, (t.after(UOp(Ops.CALL, dtypes.void, (kernel_body(2.0), t, view), "k_view")),))
  vs = check(root, Stage.KERNEL_GRAPH)
  assert {v.node for v in vs} == {view, view.src[0], inner}, "every view in the kernel graph is a violation"
  svg = svg_of(draw(root, vs))
  marked = elems(svg, "violation")
  assert sorted(op_of(e) for e in marked) == ["PERMUTE", "RESHAPE", "RESHAPE"]
  for v in vs: assert any(v.rule in lines(e) for e in marked)
  ops = {title(e): op_of(e) for e in elems(svg, "uop")}
  pairs = sorted((ops[a], ops[b]) for a, b in (title(e).split("->") for e in elems(svg, "path")))
  assert pairs == sorted([("AFTER", "SINK"), ("CALL", "AFTER"), ("RESHAPE", "CALL"), ("PERMUTE", "RESHAPE"), ("RESHAPE", "PERMUTE")])


def test_program_violations_inside_the_kernel_cluster():
  from tinyspec.spec import check
  root = program_graph()
  vs = check(root, Stage.KERNEL_GRAPH)
  assert vs and all(v.path[:2] == (0, 1) for v in vs), "the PROGRAM body keeps the index dtype, which PROGRAM forbids"
  svg = svg_of(draw(root, vs))
  (kernel,) = elems(svg, "kernel")
  marked = elems(svg, "violation")
  assert {op_of(e) for e in marked} == {v.node.op.name for v in vs}
  for e in marked: assert inside(center(e), bbox(kernel))
  ops = {title(e): op_of(e) for e in elems(svg, "uop")}
  assert {(ops[a], ops[b]) for a, b in (title(e).split("->") for e in elems(svg, "path"))} >= {("LINEAR", "PROGRAM"), ("PROGRAM", "CALL")}
  assert any(ops[b] == "LINEAR" for a, b in (title(e).split("->") for e in elems(svg, "path"))), "the path enters through the LINEAR"


# ---- kernels as clusters ----
def test_kernel_graph_has_one_cluster_per_kernel():
  root, consts = kernel_graph()
  svg = svg_of(draw(root))
  kernels = elems(svg, "kernel")
  assert len(kernels) == 3
  names = {lines(k)[0]: k for k in kernels}
  assert set(names) == set(consts)
  consts_drawn = {e: text(e) for e in elems(svg, "uop") if op_of(e) == "CONST" and "float32" in text(e)}
  for name, k in consts.items():
    (box,) = [e for e, t in consts_drawn.items() if f"{k}" in t.split()]
    assert inside(center(box), bbox(names[name])), f"the constant of {name} is drawn inside its cluster"
    others = [kk for nn, kk in names.items() if nn != name]
    assert not any(inside(center(box), bbox(o)) for o in others)
  calls = [e for e in elems(svg, "uop") if op_of(e) == "CALL"]
  assert len(calls) == 3 and not any(inside(center(e), bbox(k)) for e in calls for k in kernels), "CALLs are outside their bodies"


def test_nested_kernel_graph_nests_clusters():
  svg = svg_of(draw(nested_graph()))
  scopes = {lines(s)[0]: s for s in elems(svg, "scope")}
  assert set(scopes) == {"outer_fn", "k_inner"}
  assert inside(center(scopes["k_inner"]), bbox(scopes["outer_fn"]))
  (k,) = [e for e in elems(svg, "uop") if op_of(e) == "CONST" and "11.0" in lines(e)]
  assert inside(center(k), bbox(scopes["k_inner"]))


def test_value_call_body_is_a_function_cluster():
  svg = svg_of(draw(tensor_graph()))
  (fn,) = elems(svg, "scope")
  assert "function" in classes(fn) and lines(fn)[0] == "f"
  (sqrt,) = [e for e in elems(svg, "uop") if op_of(e) == "SQRT"]
  assert inside(center(sqrt), bbox(fn))


# ---- readability of large graphs ----
def test_long_chain_collapses_into_one_box():
  x, _ = chain(10)
  svg = svg_of(draw(UOp(Ops.SINK, dtypes.void, (x,))))
  (box,) = elems(svg, "collapsed")
  assert lines(box)[0] == "10 elementwise ops"
  assert lines(box)[1] == "NEG EXP2 SQRT NEG EXP2 SQRT ..."
  assert sorted(op_of(e) for e in elems(svg, "uop")) == ["BUFFER", "RESHAPE", "SINK"]
  assert len(elems(svg, "edge")) == 3


def test_collapse_stops_at_shared_nodes_and_short_trees():
  x, nodes = chain(12)
  root = UOp(Ops.SINK, dtypes.void, (x, nodes[5]))  # the 6th op has two users: it ends one tree, the 7th starts another
  svg = svg_of(draw(root, collapse_min=6))
  assert sorted(lines(b)[0] for b in elems(svg, "collapsed")) == ["6 elementwise ops", "6 elementwise ops"]
  svg = svg_of(draw(root, collapse_min=7))
  assert not elems(svg, "collapsed")
  assert len([e for e in elems(svg, "uop") if "group-elementwise" in classes(e)]) == 12


def test_collapse_keeps_a_violating_node_visible():
  x, nodes = chain(20)
  root = UOp(Ops.SINK, dtypes.void, (x,))
  v = Violation(nodes[10], (0,) * 10, Stage.TENSOR, "r", "m")
  svg = svg_of(draw(root, [v]))
  (bad,) = elems(svg, "violation")
  assert op_of(bad) == nodes[10].op.name
  # the 9 ops between the root and the violation fold into one box the path runs through; the 10 below it into another
  boxes = {lines(b)[0]: title(b) for b in elems(svg, "collapsed")}
  assert set(boxes) == {"9 elementwise ops", "10 elementwise ops"}
  names = {op_of(e): title(e) for e in elems(svg, "uop") if op_of(e) in ("SINK", "RESHAPE")}
  pairs = sorted(tuple(title(e).split("->")) for e in elems(svg, "path"))
  assert pairs == sorted([(boxes["9 elementwise ops"], names["SINK"]), (title(bad), boxes["9 elementwise ops"])])


def test_node_limit_keeps_root_side_and_violations():
  x, nodes = chain(1000, UOp.buffer(f32, 4))
  root = UOp(Ops.SINK, dtypes.void, (x,))
  buf = nodes[0].src[0]
  v = Violation(buf, (0,) * 1001, Stage.TENSOR, "r.far", "deep")
  svg = svg_of(draw(root, [v], collapse_min=0, max_nodes=40))
  # 40 nearest the root (SINK and 39 ops), the BUFFER, and the 40 path nodes just above it
  assert len(elems(svg, "uop")) == 81
  (note,) = elems(svg, "note")
  assert "showing 81 of 1002 boxes" in text(note)
  (bad,) = elems(svg, "violation")
  assert op_of(bad) == "BUFFER"
  (gap,) = elems(svg, "gap")
  assert text(gap) == "921 hidden"
  assert any("+1 hidden source(s)" in lines(e) for e in elems(svg, "uop"))


def test_huge_chain_draws_without_recursion():
  x, _ = chain(100_000, UOp.buffer(f32, 4))
  svg = svg_of(draw(UOp(Ops.SINK, dtypes.void, (x,)), max_nodes=60))
  assert not elems(svg, "note")
  (box,) = elems(svg, "collapsed")
  assert lines(box)[0] == "100000 elementwise ops"


# ---- rewrite steps ----
def test_draw_rewrite_side_by_side():
  p = UOp.param(0, f32, 4)
  s = p.alu(Ops.ADD, p)
  before = s.alu(Ops.MUL, c(1.0).expand((4,)))
  after = s.alu(Ops.NEG)
  svg = svg_of(draw_rewrite(before, after, "mul_by_one", "tinyspec/lower/simplify.py:42"))
  assert "mul_by_one @ tinyspec/lower/simplify.py:42" in text(svg)
  sides = {lines(x)[0]: x for x in elems(svg, "side")}
  assert set(sides) == {"before", "after"}
  (bx, _, _, _), (ax, _, _, _) = bbox(sides["before"]), bbox(sides["after"])
  assert bx < ax, "before is drawn left of after"
  focus = {title(e)[:2]: op_of(e) for e in elems(svg, "focus")}
  assert focus == {"b_": "MUL", "a_": "NEG"}
  assert sorted(op_of(e) for e in elems(svg, "gone")) == ["CONST", "EXPAND", "MUL"]
  assert [op_of(e) for e in elems(svg, "new")] == ["NEG"]
  for side, x in sides.items():
    for e in elems(svg, "uop"):
      if title(e).startswith(side[0] + "_"): assert inside(center(e), bbox(x))


def test_draw_rewrite_in_whole_graphs():
  x = UOp.buffer(f32, 4)
  before_node, after_node = x.alu(Ops.NEG).alu(Ops.NEG), x
  before = UOp(Ops.SINK, dtypes.void, (before_node.alu(Ops.SQRT),))
  after = UOp(Ops.SINK, dtypes.void, (after_node.alu(Ops.SQRT),))
  svg = svg_of(draw_rewrite(before, after, "double_neg", "x.py:1", before_node=before_node, after_node=after_node))
  focus = sorted((title(e)[:2], op_of(e)) for e in elems(svg, "focus"))
  assert focus == [("a_", "BUFFER"), ("b_", "NEG")]


# ---- files ----
def test_render_writes_each_format(tmp_path):
  root = tensor_graph()
  svg = render(root, tmp_path / "g.svg")
  assert svg == tmp_path / "g.svg" and len(elems(ET.parse(svg).getroot(), "uop")) > 10
  assert render(root, tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert render(root, tmp_path / "g.dot").read_text().startswith("digraph")
  assert render(root, tmp_path / "noext", fmt="pdf").read_bytes()[:5] == b"%PDF-"
  with pytest.raises(ValueError, match="g.jpg"): render(root, tmp_path / "g.jpg")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["g.dot", "g.png", "g.svg", "noext"], "no temporary files left"
  save(draw_rewrite(root, root, "r", "l"), tmp_path / "rw.svg")
  assert elems(ET.parse(tmp_path / "rw.svg").getroot(), "side")


GRAPH_FILE = '''from tinyspec.uop import UOp, Ops
from tinyspec.dtype import dtypes


def graph():
  b = UOp.buffer(dtypes.float32, 6)
  return UOp(Ops.SINK, dtypes.void, (b.reshape((2, 3)).alu(Ops.NEG),))
'''


def test_cli_viz_writes_the_file(tmp_path, monkeypatch, capsys):
  f = tmp_path / "case.py"
  f.write_text(GRAPH_FILE)
  monkeypatch.chdir(tmp_path)
  assert main(["viz", str(f)]) == 0
  out = tmp_path / "case.svg"
  assert capsys.readouterr().out.strip() == "case.svg"
  assert sorted(op_of(e) for e in elems(ET.parse(out).getroot(), "uop")) == ["BUFFER", "NEG", "RESHAPE", "SINK"]
  assert main(["viz", str(f), "-o", str(tmp_path / "sub" / "x.png")]) == 0
  assert (tmp_path / "sub" / "x.png").read_bytes()[:4] == b"\x89PNG"


BAD_FILE = GRAPH_FILE.replace("b.reshape((2, 3)).alu(Ops.NEG)", "b.reshape((2, 3)).alu(Ops.ADD, b)")


def test_cli_viz_stage_highlights_violations(tmp_path, capsys):
  good, bad = tmp_path / "good.py", tmp_path / "bad.py"
  good.write_text(GRAPH_FILE)
  bad.write_text(BAD_FILE)
  assert main(["viz", str(good), "--stage", "tensor", "-o", str(tmp_path / "good.svg")]) == 0
  svg = ET.parse(tmp_path / "good.svg").getroot()
  assert not elems(svg, "violation") and "legal at TENSOR" in text(svg)
  capsys.readouterr()
  assert main(["viz", str(bad), "--stage", "tensor", "-o", str(tmp_path / "bad.svg")]) == 1
  out = capsys.readouterr().out
  assert "violation(s) at TENSOR" in out and out.strip().endswith("bad.svg")
  svg = ET.parse(tmp_path / "bad.svg").getroot()
  assert [op_of(e) for e in elems(svg, "violation")] == ["ADD"]
  assert any(ln.startswith("tensor.") for ln in lines(elems(svg, "violation")[0]))


def test_cli_viz_bad_input(tmp_path, capsys):
  assert main(["viz", str(tmp_path / "missing.py")]) == 2
  assert "missing.py" in capsys.readouterr().err
  broken = tmp_path / "broken.py"
  broken.write_text("def graph(:\n")
  assert main(["viz", str(broken), "-o", str(tmp_path / "b.svg")]) == 2
  assert "broken.py" in capsys.readouterr().err
  good = tmp_path / "good.py"
  good.write_text(GRAPH_FILE)
  assert main(["viz", str(good), "-o", str(tmp_path / "g.gif")]) == 2
  assert "g.gif" in capsys.readouterr().err
  assert not (tmp_path / "b.svg").exists() and not (tmp_path / "g.gif").exists()


@pytest.mark.parametrize("path", sorted((ROOT / "corpus").glob("*.py")), ids=lambda p: p.name)
def test_corpus_entries_draw(path, tmp_path):
  from tinyspec.loadfile import load_graph
  root = load_graph(path)
  out = render(root, tmp_path / "c.svg")
  drawn = elems(ET.parse(out).getroot(), "uop") + elems(ET.parse(out).getroot(), "collapsed")
  assert drawn and {op_of(e) for e in elems(ET.parse(out).getroot(), "uop")} <= {u.op.name for u in root.toposort()}


def test_malformed_nodes_still_draw():
  a = UOp.buffer(f32, 4)
  bad = [UOp(Ops.RESHAPE, f32, (a,), (3, 3)), UOp(Ops.ADD, f32, (a, UOp.buffer(dtypes.int32, 6))), UOp(Ops.CALL, dtypes.void, (), None),
         UOp(Ops.GETTUPLE, f32, (a,), 7), UOp(Ops.PARAM, f32, (), None), UOp(Ops.PERMUTE, f32, (a,), "nonsense"),
         UOp(Ops.CONST, f32, (), float("nan")), UOp(Ops.NEG, f32, (a,), None, tag="t1")]
  root = UOp(Ops.SINK, dtypes.void, tuple(bad))
  vs = [Violation(u, (i,), Stage.TENSOR, f"bad{i}", "m") for i, u in enumerate(bad)]
  svg = svg_of(draw(root, vs))
  assert sorted(op_of(e) for e in elems(svg, "violation")) == sorted(u.op.name for u in bad)
  texts = {op_of(e): lines(e) for e in elems(svg, "violation")}
  assert texts["RESHAPE"][:3] == ["RESHAPE", "float32 (bad shape)", "(3,3)"]
  assert texts["CONST"][:3] == ["CONST", "float32", "nan"]
  assert "tag='t1'" in texts["NEG"]


def _program_names() -> list[str]:
  from programs import PROGRAMS
  return sorted(PROGRAMS)


@pytest.mark.parametrize("name", _program_names())
def test_registry_programs_draw(name):
  from programs import PROGRAMS
  root = PROGRAMS[name]().root
  svg = svg_of(draw(root, max_nodes=0))
  drawn = elems(svg, "uop")
  folded = [int(lines(b)[0].split()[0]) for b in elems(svg, "collapsed")]
  expect = scoped_nodes(root)
  assert len(drawn) + sum(folded) == len(expect), "every node is drawn, on its own or inside one folded box"
  assert Counter(op_of(e) for e in drawn) <= Counter(u.op.name for u in expect)
  assert len(elems(svg, "scope")) == len({u.src[0] for u in expect if u.op is Ops.CALL})


@pytest.mark.parametrize("name", ["gemm", "call_nested", "assign_chain", "reductions_float"])
def test_every_stage_of_a_lowering_draws(name):
  from programs import PROGRAMS

  from tinyspec.lower.pipeline import lower
  stages = lower(PROGRAMS[name]().root)
  for stage, root in stages.items():
    svg = svg_of(draw(root, max_nodes=0))
    expect = scoped_nodes(root)
    folded = [int(lines(b)[0].split()[0]) for b in elems(svg, "collapsed")]
    assert len(elems(svg, "uop")) + sum(folded) == len(expect), stage
    kernels = {u.src[0] for u in expect if u.op is Ops.CALL and u.src[0].op in (Ops.SINK, Ops.PROGRAM)}
    assert len(elems(svg, "kernel")) == len(kernels), stage
    if stage in ("rangeify", "render"): assert kernels, f"{name} has kernels after {stage}"

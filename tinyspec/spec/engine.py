"""The checker: walks a graph in contexts (which stage's rules apply where) and collects violations.

Every verdict is cached on the interned node, per context: the local findings of the node, and whether its whole
subgraph is clean. Nodes are immutable, so a verdict never goes stale, and checking a graph after a rewrite only
evaluates the nodes the rewrite created. Rules are local to a node and its subgraph; what depends on where a node
sits (inside a call body or not, which stage a call body is at) is carried by the context, not by the node.
"""
from __future__ import annotations

from typing import Callable

from tinyspec.spec.base import HOLDS_BIND, Ctx, Finding, PathLink, SpecError, Stage, Violation, declare, safe_str
from tinyspec.spec.kernel import KERNEL_BUILD_TABLE, KERNEL_TABLE
from tinyspec.spec.kgraph import KGRAPH_TABLE
from tinyspec.spec.program import PROGRAM_TABLE
from tinyspec.spec.shared import is_kgraph_sink, is_view_index, shape_ok, srcs_shape_ok, wellformed
from tinyspec.spec.tensor import TENSOR_TABLE
from tinyspec.uop import Ops, UOp, body_kind

T_TOP = Ctx("tensor", Stage.TENSOR, TENSOR_TABLE, top=True)
T_BODY = Ctx("tensor_body", Stage.TENSOR, TENSOR_TABLE)
K = Ctx("kernel", Stage.KERNEL, KERNEL_TABLE)
# a kernel body inside a graph checked at TENSOR: it may still be under construction (view INDEXes of tensor values, checked at TENSOR)
K_T = Ctx("kernel_build", Stage.KERNEL, KERNEL_BUILD_TABLE)
P = Ctx("program", Stage.PROGRAM, PROGRAM_TABLE)
G_TOP = {bs: Ctx(f"kgraph_{bs.name if bs else 'any'}", Stage.KERNEL_GRAPH, KGRAPH_TABLE, top=True, body_stage=bs)
         for bs in (None, Stage.KERNEL, Stage.PROGRAM)}
G_BODY = {bs: Ctx(f"kgraph_body_{bs.name if bs else 'any'}", Stage.KERNEL_GRAPH, KGRAPH_TABLE, body_stage=bs)
          for bs in (None, Stage.KERNEL, Stage.PROGRAM)}
G_BODY_T = Ctx("kgraph_body_build", Stage.KERNEL_GRAPH, KGRAPH_TABLE)  # a nested kernel graph inside a graph checked at TENSOR


# at TENSOR a value call's TUPLE and a precompiled call's effects are tensor graphs; the other bodies are checked at their own stage
def _t_body(b: UOp) -> Ctx:
  return {"kernel": K_T, "program": P, "copy": G_BODY_T, "graph": G_BODY_T}.get(body_kind(b), T_BODY)


# in a kernel graph a CALL body is a kernel or a nested kernel graph: a SINK that is no kernel graph is checked as a
# (malformed) kernel, so its violations are the kernel rules'
def _gt_body(b: UOp) -> Ctx:
  return {"kernel": K_T, "program": P}.get(body_kind(b), G_BODY_T if is_kgraph_sink(b) or b.op is not Ops.SINK else K_T)


def _g_body(bs: Stage | None) -> Callable[[UOp], Ctx]:
  def fn(b: UOp) -> Ctx:
    return {"kernel": K, "program": P}.get(body_kind(b), G_BODY[bs] if is_kgraph_sink(b) or b.op is not Ops.SINK else K)
  return fn


CTXS = (T_TOP, T_BODY, K, K_T, P, *G_TOP.values(), *G_BODY.values(), G_BODY_T)
T_TOP.body_ctx = T_BODY.body_ctx = _t_body
G_BODY_T.body_ctx = _gt_body
K_T.view_ctx = T_BODY
for _bs in G_TOP:
  G_TOP[_bs].body_ctx = G_BODY[_bs].body_ctx = _g_body(_bs)
# a kernel graph holds a variable a CALL is passed as the BIND itself; its DEFINE_VAR and CONST are values, as in a kernel
for _g in (*G_TOP.values(), *G_BODY.values(), G_BODY_T): _g.var_ctx = K

ROOT_SINK = declare("kgraph.root_sink", "The root of a kernel graph is a SINK.")
KROOT_SINK = declare("kernel.root_sink", "A kernel body checked on its own is a SINK.")
PROOT = declare("program.root_form", "A program body checked on its own is a PROGRAM or a LINEAR.")
NODE_ROOT = declare("node.root", "check is given a UOp as the root.")


def _children(u: UOp, cx: Ctx) -> list[tuple[UOp, Ctx]]:
  src = u.src
  if u.op is Ops.CALL and src and isinstance(src[0], UOp):
    try: bcx = cx.body_ctx(src[0])
    except Exception: bcx = cx  # a body too malformed to classify is checked where it stands
    return [(src[0], bcx)] + [(s, cx) for s in src[1:] if isinstance(s, UOp)]
  if cx.view_ctx is not None and is_view_index(u) and src and isinstance(src[0], UOp):
    return [(src[0], cx.view_ctx)] + [(s, cx) for s in src[1:] if isinstance(s, UOp)]
  if cx.var_ctx is not None and u.op is Ops.BIND: return [(s, cx.var_ctx) for s in src if isinstance(s, UOp)]
  return [(s, cx) for s in src if isinstance(s, UOp)]


def local_findings(u: UOp, cx: Ctx) -> tuple[Finding, ...]:
  """The findings of u's own rules in cx (cached). Malformed sources silence u's rules: the cause is reported there."""
  c = u._cache
  ret = c.get(cx.lkey)
  if ret is not None: return ret
  try:
    wf = wellformed(u)
    bad_src = not wf and any(wellformed(s) for s in u.src)
  except Exception as e:  # well-formedness that cannot even be decided (a hostile arg): malformed
    wf, bad_src = (((), u, "node.malformed", f"the node could not be checked ({type(e).__name__}: {safe_str(e, 200)}); at {cx.sname} it is "
                    "malformed"),), False
  if wf:
    c[cx.lkey] = wf
    return wf
  if bad_src:
    c[cx.lkey] = ()
    return ()
  out: list[Finding] = []
  for r in cx.table.get(u.op, ()):
    try: res = r.fn(u, cx)
    except Exception as e:  # a rule that cannot evaluate on this node: the node is malformed in an unnamed way
      res = [((), u, "node.malformed", f"{u.op.name} could not be checked by {r.id} ({type(e).__name__}: {safe_str(e, 200)}); at {cx.sname} "
              "the node is malformed")]
    if res is None: continue
    if type(res) is str: out.append(((), u, r.id, res))
    else: out.extend(res)
  if not out and not shape_ok(u) and srcs_shape_ok(u):
    err = u._cache["shape"].err
    out.append(((), u, "node.shape", f"{u.op.name} has no valid shape ({err}); at {cx.sname} every value has a shape its shape rule accepts"))
  c[cx.lkey] = ret = tuple(out)
  return ret


_use_fused = True


def set_fused(on: bool) -> None:
  """Turn the fused checks (spec/fast.py) on or off. Off, the rules alone decide every node (verdicts are the same; tests
  compare the two paths)."""
  global _use_fused
  _use_fused = bool(on)
  for x in CTXS: x.run = None


def clean(root: UOp, cx: Ctx) -> bool:
  """Whether the subgraph of root, checked in cx, has no findings. Iterative; cached per node and context.

  A depth-first walk, deciding each node after its sources: the fused check of its op, compiled from cx's table
  (spec/fast.py), decides the common legal node in one step; anything it cannot accept goes through the table's rules. The
  walk runs in frames, one context each: a CALL body (or the tensor value of a view INDEX) checked in another context gets a
  frame of its own, run to the end before the node that holds it. A clean node's verdict is True when no BIND is under
  it, HOLDS_BIND when one is."""
  key = cx.key
  v = root._cache.get(key)
  if v is not None: return bool(v)
  frames: list[tuple[Ctx, list]] = [(cx, [root])]
  while frames:
    x, stack = frames[-1]
    if (run := x.run) is None: run = x.run = _walk(x)
    if run(x, stack, frames): frames.pop()
  return bool(root._cache[key])


def _walk(x: Ctx) -> Callable:
  """x's walk: its table's, for whether its view INDEXes and BINDs hold sources checked in another context."""
  return x.table.compiled.walk(x.view_ctx is not None, x.var_ctx is not None, _decide, _push_children, fused=_use_fused)


def _push_children(u: UOp, x: Ctx, push: Callable[[UOp], None], frames: list) -> bool:
  """Push u's undecided sources: those checked in x onto x's stack, each other one as a frame of its own. True when a
  frame was added."""
  added = False
  for s, sx in _children(u, x):
    if sx.key in s._cache: continue
    if sx is x: push(s)
    else:
      frames.append((sx, [s]))
      added = True
  return added


def _decide(u: UOp, x: Ctx) -> object:
  """u's verdict in x by the rules, its sources decided: False, or (clean) True / HOLDS_BIND by whether a BIND is under it."""
  if local_findings(u, x): return False
  v: object = HOLDS_BIND if u.op is Ops.BIND else True
  for s, sx in _children(u, x):
    if (sv := s._cache[sx.key]) is not True:
      if not sv: return False
      v = HOLDS_BIND
  return v


def collect(root: UOp, cx: Ctx) -> list[Violation]:
  """Every violation under root, each at its shortest path (breadth first, only into subgraphs that are not clean).
  A node's path is a link to its parent's (tinyspec.spec.base.PathLink): linear in the graph, however deep."""
  out: list[Violation] = []
  seen_pairs = {(root, cx)}
  reported: set[tuple[int, str, str]] = set()
  frontier: list[tuple[UOp, Ctx, PathLink | None]] = [(root, cx, None)]
  while frontier:
    nxt = []
    for u, x, link in frontier:
      for rel, node, rid, msg in local_findings(u, x):
        k = (id(node), rid, msg)
        if k not in reported:
          reported.add(k)
          out.append(Violation(node, None, x.stage, rid, msg, link=(link, rel)))
      for i, (s, sx) in enumerate(_children_indexed(u, x)):
        if s is None or (s, sx) in seen_pairs or s._cache.get(sx.key, False): continue
        seen_pairs.add((s, sx))
        nxt.append((s, sx, (link, i)))
    frontier = nxt
  return out


def _children_indexed(u: UOp, cx: Ctx) -> list[tuple[UOp | None, Ctx]]:
  kids = iter(_children(u, cx))
  return [next(kids) if isinstance(s, UOp) else (None, cx) for s in u.src]


def root_ctx(root: UOp, stage: Stage) -> Ctx:
  if stage is Stage.TENSOR: return T_TOP
  if stage is Stage.KERNEL_GRAPH: return G_TOP[None]
  # an empty SINK is an empty program: a kernel graph with no kernels, not a kernel that stores nothing
  kg = is_kgraph_sink(root) or (root.op is Ops.SINK and not root.src)
  if stage is Stage.KERNEL: return G_TOP[Stage.KERNEL] if kg else K
  return G_TOP[Stage.PROGRAM] if kg else P


def _root_rules(root: UOp, stage: Stage, cx: Ctx) -> list[Violation]:
  if root.op is Ops.SINK and cx is not P: return []
  op = root.op.name if isinstance(root.op, Ops) else repr(root.op)
  if cx.stage is Stage.KERNEL_GRAPH:
    return [Violation(root, (), stage, ROOT_SINK, f"the root is {op}; at KERNEL_GRAPH the root is a SINK of realized storage")]
  if cx is K: return [Violation(root, (), stage, KROOT_SINK, f"the root is {op}; at KERNEL a kernel body is a SINK of effects")]
  if cx is P and root.op not in (Ops.LINEAR, Ops.PROGRAM):
    return [Violation(root, (), stage, PROOT, f"the root is {op}; at PROGRAM a program body is a PROGRAM or a LINEAR")]
  return []


def check(root: UOp, stage: Stage | str) -> list[Violation]:
  """Every violation of stage's rules in the graph under root. Never raises on malformed input.

  TENSOR checks a tensor graph. KERNEL_GRAPH checks a kernel graph and each kernel body at the stage its form says.
  KERNEL and PROGRAM accept a single body, or a whole kernel graph whose bodies must then all be at that stage."""
  if isinstance(stage, str):
    if stage.upper() not in Stage.__members__:
      raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(s.name.lower() for s in Stage)}")
    stage = Stage[stage.upper()]
  if not isinstance(stage, Stage): raise TypeError(f"stage must be a Stage, not {type(stage).__name__}")
  if not isinstance(root, UOp):
    return [Violation(root, (), stage, NODE_ROOT, f"the root is {type(root).__name__}, not a UOp; check takes the root UOp of a graph")]
  try: cx = root_ctx(root, stage)
  except Exception: cx = {Stage.TENSOR: T_TOP, Stage.KERNEL_GRAPH: G_TOP[None], Stage.KERNEL: K, Stage.PROGRAM: P}[stage]
  return _check_in(root, stage, cx, root_rules=True)


def _check_in(root: UOp, stage: Stage, cx: Ctx, root_rules: bool) -> list[Violation]:
  vs: list[Violation] = []
  try:
    if root_rules and not wellformed(root): vs = _root_rules(root, stage, cx)
    if not clean(root, cx): vs += collect(root, cx)
  except Exception as e:  # the last guard of the contract: what no rule could judge is a violation, never an exception
    vs.append(Violation(root, (), stage, "node.malformed", f"the graph could not be checked ({type(e).__name__}: {safe_str(e, 200)}); at "
                        f"{stage.name} it is malformed in a way no rule names"))
  return vs


_TOPS = {Stage.TENSOR: T_TOP, Stage.KERNEL_GRAPH: G_TOP[None], Stage.KERNEL: G_TOP[Stage.KERNEL], Stage.PROGRAM: G_TOP[Stage.PROGRAM]}


def check_body(body: UOp, stage: Stage) -> list[Violation]:
  """Every violation of a CALL body checked on its own, as the body of a CALL in a graph at stage is checked: at
  TENSOR a kernel body may still be under construction, at KERNEL a kernel body is a kernel, and so on. For a pass that
  rewrites one body at a time (the fuzzer checks the body after each rule application)."""
  if not isinstance(body, UOp): return check(body, stage)
  try: cx = _TOPS[stage].body_ctx(body)
  except Exception: cx = root_ctx(body, stage)  # a body too malformed to classify is checked as a root
  return _check_in(body, stage, cx, root_rules=False)


def verify(root: UOp, stage: Stage | str) -> UOp:
  """root, when it is legal at stage; SpecError with every violation otherwise."""
  if vs := check(root, stage): raise SpecError(vs)
  return root


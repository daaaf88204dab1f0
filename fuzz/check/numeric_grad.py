"""The numeric gradient oracle: tinyspec.autograd.gradient against central differences, in float64.

The through-calls oracle (fuzz.check.gradient_oracle) compares two gradients built by the same per-op rules, so a wrong
local derivative agrees with itself there. This one needs no rule: it moves the inputs and watches the loss.

The case. The loss is sum_i sum(out_i * w_i) over the graph's float entries, with fixed random weights w_i (as the
through-calls oracle builds it). The graph is first rebuilt in float64, its float64 twin: every node of a float dtype
gets float64 (BUFFERs keep their ids and are fed their data as float64), so a CAST between float types becomes
float64 -> float64 and a float32 rounding step disappears; differentiating the twin is what is checked (the rule of a
CAST between float32 and float64 is held to central differences on its own, tests/test_autograd_numeric.py). A graph
that BITCASTs to or from a float has no float64 twin and is not checked. DETACH(x) is a constant to a gradient: in
the twin it is a BUFFER holding x's value, so moving an input does not move it either (a DETACH inside a value call's
body depends on the call's args: such a graph is not checked). Gradients are w.r.t. every float BUFFER the entries read
outside call bodies, evaluated with the reference evaluator; a graph with no gradient (a GradientError) is not checked.

The points. At most POINTS elements of those buffers (a random subset, from the seed) are each moved by
h = STEP * max(1, |x|) both ways (STEP 1e-6 in float64); with f0, f+ and f- the loss there,
    forward = (f+ - f0) / h,   backward = (f0 - f-) / h,   central = (f+ - f-) / (2h).
Where the loss is not differentiable (a MAX tie, a TRUNC step, a comparison or a WHERE condition that flips, a CAST to
an int) the one-sided differences disagree, or a float comparison or MAX under the loss (value calls seen through) goes
another way at x - h, x or x + h (a tie the loss is flat on both sides of, a sort of equal values): the point is
skipped. It is compared only where no comparison flips and
|forward - backward| <= tol, and is a mismatch where |central - symbolic| > tol, with
    tol = RTOL * (|forward| + |backward| + |symbolic|) + ATOL * (1 + G) + ROUNDING * eps * M / h
(RTOL 1e-4, ATOL 1e-6, ROUNDING 100), G the largest |symbolic| over the buffers, eps the float's machine epsilon and
M = 1 + |f0| + sum |out_i * w_i|, the magnitude the loss's rounding scales with. Every symbolic value a rule may
choose at a kink (either side, or a share between them) lies between backward and forward, so no kink that passes the
first test can fail the second. Edge values the generators draw are skipped too: an element that is not finite; one
larger than the screen's FLOAT_LIMIT (past 2**52 every float64 is an integer, so a step never leaves a kink of TRUNC
and the differences measure the float grid); and one nearer to 0 than the step but not 0, such as a denormal (the step
crosses 0, where SQRT, LOG2 and RECIP are singular).

Blame. After a mismatch, each node under the loss on a path from the buffers (value calls seen through: their bodies
with the args in place of the PARAMs) is taken alone: its sources become fresh BUFFERs holding their values (an assign
AFTER(s, STORE(s, v)) and a STORE are functions of v), its rule gives the vector-Jacobian product for a random
cotangent, and that is held against central differences of the node by itself at the largest and at random elements.
The first rule (sources first) whose local product disagrees is named; when none does and the graph has value calls,
grad_value_call (passing gradients through a call) is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from fuzz.check.derivatives import vjp
from fuzz.check.gradient_oracle import float_buffers, float_entries, weight_buffers, weighted_loss
from fuzz.generate.safety import FLOAT_LIMIT, pm_call_outputs
from tinyspec.autograd import GradientError, active_rules, gradient, graph_nodes
from tinyspec.dtype import DType, dtypes
from tinyspec.rewrite import PatternMatcher, graph_rewrite
from tinyspec.semantics import EvalError, evaluate
from tinyspec.uop import Ops, UOp, is_value_call, substitute, walk

RTOL = 1e-4        # of the derivatives compared
ATOL = 1e-6        # of the largest symbolic derivative
ROUNDING = 100     # float rounding of the loss, in machine epsilons of its magnitude, over the step
POINTS = 16        # perturbed elements per case
STEP = {"float64": 1e-6, "float32": 1e-2}  # relative step by the least precise float a function computes in


@dataclass(frozen=True)
class GradMismatch:
  """Element `element` of BUFFER `buffer`: d loss / d x is `numeric` by central differences but `symbolic` by the
  rules; `rule` is the gradient rule whose local product disagrees (None when none alone does), defined at `location`.
  buffer -1: the rule's local product at its node against the derivative by hand (fuzz.check.derivatives)."""
  buffer: int
  element: int
  numeric: float
  symbolic: float
  rule: str | None = None
  location: str | None = None

  def describe(self) -> str:
    by = f" (rule {self.rule}{' at ' + self.location if self.location else ''})" if self.rule else ""
    if self.buffer < 0:  # found by the derivatives by hand, not by moving an input
      return f"at its node the gradient by hand is {self.numeric!r} but the rules{by} give {self.symbolic!r}"
    return (f"gradient w.r.t. BUFFER {self.buffer} element {self.element}: central differences give {self.numeric!r} "
            f"but the rules{by} give {self.symbolic!r}")


@dataclass
class NumericCheck:
  """What one case gave: the mismatches, and how many perturbed elements were compared and skipped (not smooth)."""
  mismatches: list[GradMismatch] = field(default_factory=list)
  compared: int = 0
  skipped: int = 0


# ---- the float64 twin ----
def _f64(dt: DType) -> DType: return dtypes.float64 if dt.is_float else dt


def as_float64(root: UOp) -> UOp | None:
  """root with every float node in float64 (BUFFER ids kept); None when a BITCAST has a float on either side."""
  nodes = walk((root,))
  if any(u.op is Ops.BITCAST and (u.dtype.is_float or u.src[0].dtype.is_float) for u in nodes): return None
  new: dict[UOp, UOp] = {}
  for u in nodes:
    src = tuple(new[s] for s in u.src)
    new[u] = u if u.dtype is _f64(u.dtype) and all(a is b for a, b in zip(src, u.src)) else UOp(u.op, _f64(u.dtype), src, u.arg, u.tag)
  return new[root]


def float64_inputs(inputs: dict, bufs: Sequence[UOp]) -> dict:
  """The inputs with every float buffer's data (zeros when absent, as the evaluator reads it) in float64."""
  feed = dict(inputs)
  for b in bufs: feed[b.arg.id] = np.asarray(inputs.get(b.arg.id, np.zeros(b.arg.size)), np.float64).reshape(-1).copy()
  return feed


def _leaf_id(leaf: UOp) -> int: return (leaf.src[0] if leaf.op is Ops.RESHAPE else leaf).arg.id


def _leaf(value: Any, like: UOp) -> tuple[UOp, np.ndarray]:
  """A fresh BUFFER for value, seen in like's shape, and its flat data."""
  b = UOp.buffer(like.dtype, like.size, like.device or "CPU")
  v = b if like.shape == (like.size,) else b.reshape(like.shape)
  return v, np.asarray(value, like.dtype.np).reshape(-1).copy()


def freeze_detached(twin: UOp, feed: dict) -> UOp | None:
  """twin with each DETACH(x) replaced by a fresh BUFFER holding x's value at the feed (its data added to feed): what
  DETACH means to a gradient, a constant, spelled so that perturbed inputs do not move it either. None when a DETACH sits
  in a value call's body, where its value depends on the call's args."""
  detached = [u for u in graph_nodes(twin.src) if u.op is Ops.DETACH]
  if sum(u.op is Ops.DETACH for u in twin.toposort()) != len(detached): return None
  if not detached: return twin
  mapping = {}
  for d, v in zip(detached, _eval(UOp(Ops.SINK, src=tuple(detached)), feed)):
    leaf, data = _leaf(v, d)
    feed[_leaf_id(leaf)] = data
    mapping[d] = leaf
  return substitute(twin, mapping)


def _eval(root: UOp, feed: dict) -> Any:
  # the evaluator may write into the arrays it is given (a STORE into an input buffer): every call gets its own copy
  return evaluate(root, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in feed.items()})


# ---- central differences of one scalar function of the feed ----
@dataclass
class Probe:
  """f (feed -> float) at `feed`: f0 its value there, mag the magnitude its rounding scales with, dtype the least precise
  float it computes in."""
  f: Callable[[dict], float]
  feed: dict
  f0: float
  mag: float
  dtype: str = "float64"
  branches: Callable[[dict], bytes] | None = None  # which way every comparison and MAX of f goes at a feed

  def __post_init__(self) -> None:
    # the outcomes at the unmoved feed, which every point's moves are held to: computed once, not once per point
    self.branches0 = self.branches(self.feed) if self.branches is not None else None

  def differences(self, key: int, i: int) -> tuple[float, float, float, float, bool]:
    """(forward, backward, central, h, whether a comparison or MAX of f goes another way at x + h or x - h) at element
    i of feed[key]."""
    x = float(self.feed[key][i])
    h = STEP[self.dtype] * max(1.0, abs(x))
    def moved(v: float) -> dict:
      arr = self.feed[key].copy()
      arr[i] = v
      return {**self.feed, key: arr}
    fp, fm = self.f(moved(x + h)), self.f(moved(x - h))
    flips = self.branches is not None and any(self.branches(moved(v)) != self.branches0 for v in (x - h, x + h))
    return (fp - self.f0) / h, (self.f0 - fm) / h, (fp - fm) / (2 * h), h, flips

  def judge(self, key: int, i: int, symbolic: float, scale: float) -> tuple[str, float]:
    """("skip" | "ok" | "bad", the central difference) of the symbolic derivative at element i of feed[key]."""
    x = float(self.feed[key][i])
    if not math.isfinite(x) or abs(x) > FLOAT_LIMIT or 0 < abs(x) < STEP[self.dtype]: return "skip", math.nan
    fwd, bwd, central, h, flips = self.differences(key, i)
    # at a tie (x == y under a CMPEQ, a MAX of equal operands) the loss may be flat on both sides while the rule, at the
    # tie itself, picks a branch: the one-sided differences agree there and still say nothing about the rule
    if flips: return "skip", central
    if not all(math.isfinite(x) for x in (fwd, bwd, symbolic)): return "skip", central
    eps = float(np.finfo(self.dtype).eps)
    tol = RTOL * (abs(fwd) + abs(bwd) + abs(symbolic)) + ATOL * (1 + scale) + ROUNDING * eps * self.mag / h
    if abs(fwd - bwd) > tol: return "skip", central  # not differentiable there, or curved beyond what the step resolves
    return ("bad" if abs(central - symbolic) > tol else "ok"), central


def _branches(loss: UOp) -> Callable[[dict], bytes] | None:
  """feed -> the outcome of every float comparison under loss and of both orders of every float MAX's operands, as
  bytes (None when there is none; value calls seen through): where a move of one input changes it, the loss is at a
  tie or a step there."""
  flat = graph_rewrite(loss, pm_call_outputs).toposort()
  nodes = [u for u in flat if u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.MAX) and u.src[0].dtype.is_float]
  if not nodes: return None
  sides = [c for u in nodes for c in ((u.src[0].alu(Ops.CMPLT, u.src[1]), u.src[1].alu(Ops.CMPLT, u.src[0])) if u.op is Ops.MAX else (u,))]
  graph = UOp(Ops.SINK, src=tuple(sides))
  return lambda fd: b"".join(np.asarray(v, np.bool_).tobytes() for v in _eval(graph, fd))


def _magnitude(vals: Sequence[Any]) -> float:
  return 1 + sum(float(np.sum(np.abs(np.asarray(v, np.float64)))) for v in vals if v is not None)


def _scale(vals: Sequence[Any]) -> float:
  return max((float(np.max(np.abs(np.asarray(v, np.float64)), initial=0.0)) for v in vals if np.all(np.isfinite(v))), default=0.0)


# ---- the oracle ----
def numeric_gradient_check(root: UOp, inputs: dict | None = None, seed: int = 0, rules: PatternMatcher | None = None,
                           points: int = POINTS) -> NumericCheck:
  """gradient(loss, buffers) with this rule table (None: pm_gradient) against central differences of the float64 twin
  of root, at up to `points` random elements of its float buffers (the module docstring). Nothing is compared when root
  has no float output, reads no float buffer, has no float64 twin, or has no gradient (a GradientError)."""
  out = NumericCheck()
  entries = float_entries(root)
  twin = as_float64(UOp(Ops.SINK, src=tuple(entries))) if entries and float_buffers(entries) else None
  if twin is None: return out
  bufs = float_buffers(twin.src)
  rng = np.random.default_rng(seed)
  feed = float64_inputs(inputs or {}, bufs)
  if (twin := freeze_detached(twin, feed)) is None: return out
  weights = weight_buffers(twin.src, rng, feed)
  loss = weighted_loss(twin.src, weights)
  try: at0 = _eval(UOp(Ops.SINK, src=(loss, *(e.alu(Ops.MUL, w) for e, w in zip(twin.src, weights)))), feed)
  except EvalError: return out  # the twin has no value here (its float64 meaning left what the case was screened for)
  f0 = float(at0[0])
  if not math.isfinite(f0): return out
  # from here on an exception is the gradient's own: a rule that builds what cannot be evaluated
  try: grads = gradient(loss, bufs, rules)
  except GradientError: return out
  sym = [np.asarray(g, np.float64).reshape(-1) for g in _eval(UOp(Ops.SINK, src=tuple(grads)), feed)]
  probe = Probe(lambda fd: float(np.asarray(_eval(loss, fd))), feed, f0, _magnitude([f0, *at0[1:]]), branches=_branches(loss))
  scale = _scale(sym)
  cands = [(k, i) for k, b in enumerate(bufs) for i in range(b.arg.size)]
  for j in sorted(rng.choice(len(cands), size=min(points, len(cands)), replace=False)):
    k, i = cands[j]
    verdict, num = probe.judge(bufs[k].arg.id, i, float(sym[k][i]), scale)
    if verdict == "skip": out.skipped += 1
    else: out.compared += 1
    if verdict == "bad": out.mismatches.append(GradMismatch(bufs[k].arg.id, i, num, float(sym[k][i])))
  if not out.mismatches:
    # central differences probe some elements and skip kinks (where the spec still fixes the gradient: half to each of
    # a MAX's equal operands); the derivative by hand judges every element of every node
    pm = active_rules(rules)
    if (hit := hand_mismatch(_local_nodes(loss, bufs), feed, pm, rng)) is not None:
      name, want, got = hit
      where = next((r.location for r in pm.rules if r.name == name), None)
      out.mismatches.append(GradMismatch(-1, -1, want, got, name, where))
    return out
  pm = active_rules(rules)
  name = blame_rule(loss, feed, bufs, pm, rng)
  where = next((r.location for r in pm.rules if r.name == name), None)
  out.mismatches = [GradMismatch(m.buffer, m.element, m.numeric, m.symbolic, name, where) for m in out.mismatches]
  return out


def numeric_gradient_mismatches(root: UOp, inputs: dict | None = None, seed: int = 0, rules: PatternMatcher | None = None,
                                points: int = POINTS) -> list[GradMismatch]:
  """The mismatches of numeric_gradient_check."""
  return numeric_gradient_check(root, inputs, seed, rules, points).mismatches


# ---- blame: the rule whose local vector-Jacobian product is wrong ----
def _is_assign(u: UOp) -> bool:
  return u.op is Ops.AFTER and len(u.src) == 2 and u.src[1].op is Ops.STORE and len(u.src[1].src) == 2 and u.src[1].src[0] is u.src[0]


def _local_nodes(loss: UOp, bufs: Sequence[UOp]) -> list[UOp]:
  """The nodes under the loss, value calls seen through, on a path from the buffers, that a local check can take alone:
  float values of value sources, the assign AFTER(s, STORE(s, v)) and a STORE of a float value. Sources first."""
  flat = graph_rewrite(loss, pm_call_outputs)
  live: set[UOp] = set(bufs)
  out = []
  for u in flat.toposort():
    if not (u in live or any(s in live for s in u.src)): continue
    live.add(u)
    if u.op in (Ops.BUFFER, Ops.CONST, Ops.PARAM): continue
    if _is_assign(u) or (u.op is Ops.STORE and len(u.src) == 2 and u.src[1].dtype.is_float): out.append(u)
    elif u.dtype.is_float and all(s.dtype is not dtypes.void for s in u.src): out.append(u)
  return out


@dataclass
class Local:
  """u taken alone: `rule_node` (u over fresh leaves) is what its rule is given, `value` the function of the leaves it
  computes, `inputs` (leaf, index of the rule's gradient for it, the source it stands for), `data` the leaves' data."""
  rule_node: UOp
  value: UOp
  inputs: list[tuple[UOp, int, UOp]]
  data: dict


def localize(u: UOp, feed: dict) -> Local:
  """u over fresh BUFFERs holding its sources' values at the feed. An assign AFTER(s, STORE(s, v)) and a STORE are
  functions of the stored value v (their rules hand its gradient to the STORE, and on to v); any other node, of its
  sources."""
  data: dict = {}
  def leaf_of(x: UOp, v: Any) -> UOp:
    leaf, d = _leaf(v, x)
    data[_leaf_id(leaf)] = d
    return leaf
  if _is_assign(u) or u.op is Ops.STORE:
    st = u.src[1] if u.op is Ops.AFTER else u
    v = st.src[1]
    lv = leaf_of(v, _eval(v, feed))
    target = _leaf(np.zeros(st.src[0].size), st.src[0])[0]
    data[_leaf_id(target)] = np.zeros(st.src[0].size, st.src[0].dtype.np)
    store = target.store(lv)
    if u.op is Ops.STORE: return Local(store, lv, [(lv, 1, v)], data)
    after = UOp(Ops.AFTER, u.dtype, (target, store))
    return Local(after, after, [(lv, 1, v)], data)
  leaves = [leaf_of(s, v) for s, v in zip(u.src, _eval(UOp(Ops.SINK, src=u.src), feed))]
  node = u.replace(src=tuple(leaves))
  return Local(node, node, [(leaf, k, s) for k, (leaf, s) in enumerate(zip(leaves, u.src)) if s.dtype.is_float], data)


def _least_precise(dts: Sequence[DType]) -> str:
  return "float32" if any(d.is_float and d is not dtypes.float64 for d in dts) else "float64"


def _elements(sym: np.ndarray, rng: np.random.Generator, n: int) -> list[int]:
  """n elements to perturb: the largest symbolic values (a gradient put in the wrong place) and random ones."""
  top = [int(i) for i in np.argsort(-np.abs(sym), kind="stable")[:n // 2]]
  rest = [int(i) for i in rng.permutation(sym.size) if int(i) not in top]
  return sorted(top + rest[:n - len(top)])


def local_mismatch(u: UOp, feed: dict, pm: PatternMatcher, rng: np.random.Generator, per_source: int = 8) -> str | None:
  """The name of u's gradient rule in pm when its vector-Jacobian product at u's source values (from feed) disagrees with
  central differences of u alone, sum(u(x) * c) for a random cotangent c; None when it agrees or cannot be told (no rule,
  not smooth there, not finite)."""
  loc = localize(u, feed)
  cot, cot_data = _leaf(rng.uniform(-1.0, 1.0, size=loc.value.size), loc.value)
  local = {**loc.data, _leaf_id(cot): cot_data}
  if (hit := pm.rewrite(loc.rule_node, ctx=cot)) is None: return None
  rule, vjps = hit
  def phi(fd: dict) -> float: return float(np.sum(np.asarray(_eval(loc.value, fd), np.float64).reshape(-1) * cot_data))
  f0 = phi(local)
  if not math.isfinite(f0): return None
  terms = np.asarray(_eval(loc.value, local), np.float64).reshape(-1) * cot_data
  probe = Probe(phi, local, f0, _magnitude([f0, terms]), _least_precise([loc.value.dtype, *(s.dtype for _, _, s in loc.inputs)]))
  for leaf, k, s in loc.inputs:
    g = vjps[k] if k < len(vjps) else None
    sym = np.zeros(s.size) if g is None else np.asarray(_eval(g, local), np.float64).reshape(-1)
    for i in _elements(sym, rng, per_source):
      if probe.judge(_leaf_id(leaf), i, float(sym[i]), _scale([sym]))[0] == "bad": return rule.name
  return None


def hand_mismatch(nodes: Sequence[UOp], feed: dict, pm: PatternMatcher, rng: np.random.Generator) -> tuple[str, float, float] | None:
  """The first node, sources first, whose rule disagrees with the derivative by hand (table_mismatch)."""
  for u in nodes:
    try:
      if (hit := table_mismatch(u, feed, pm, rng)) is not None: return hit
    except (GradientError, EvalError, ValueError, TypeError, KeyError, IndexError):
      continue
  return None


def table_mismatch(u: UOp, feed: dict, pm: PatternMatcher, rng: np.random.Generator) -> tuple[str, float, float] | None:
  """(rule name, the table's value, the rule's value) at the worst element when u's gradient rule in pm disagrees with
  the primitive's derivative by hand (fuzz.check.derivatives) at u's source values from feed, for a random cotangent;
  None when they agree or the table has no entry."""
  loc = localize(u, feed)
  node = loc.rule_node
  if node.op in (Ops.AFTER, Ops.STORE): return None
  if not all(x.op in (Ops.BUFFER, Ops.RESHAPE) for x in node.src): return None
  srcs = [np.asarray(loc.data[_leaf_id(x)], np.float64).reshape(x.shape) for x in node.src]
  cot, cot_data = _leaf(rng.uniform(-1.0, 1.0, size=loc.value.size), loc.value)
  if (hit := pm.rewrite(node, ctx=cot)) is None: return None
  rule, vjps = hit
  out = np.asarray(_eval(node, loc.data), np.float64).reshape(node.shape)
  want = vjp(node, srcs, out, cot_data.reshape(node.shape))
  if want is None: return None
  local = {**loc.data, _leaf_id(cot): cot_data}
  for k, (w, s) in enumerate(zip(want, node.src)):
    if w is None or not s.dtype.is_float: continue
    g = vjps[k] if k < len(vjps) else None
    got = np.zeros(s.size) if g is None else np.asarray(_eval(g, local), np.float64).reshape(-1)
    w = np.asarray(w, np.float64).reshape(-1)
    ok = np.isfinite(w) & np.isfinite(got)
    bad = ok & (np.abs(got - w) > RTOL * (np.abs(got) + np.abs(w)) + ATOL * (1 + _scale([w])))
    if np.any(bad):
      i = int(np.argmax(np.where(bad, np.abs(got - w), -1)))
      return rule.name, float(w[i]), float(got[i])
  return None


def blame_rule(loss: UOp, feed: dict, bufs: Sequence[UOp], pm: PatternMatcher, rng: np.random.Generator) -> str | None:
  """The first gradient rule, sources first, whose local product disagrees with central differences of its node under
  the loss. When none does but the loss reads value calls, the call's own rule (grad_value_call, which builds the
  backward call) is named: every rule of the inlined body agrees, so the wrong step is in passing gradients through."""
  nodes = _local_nodes(loss, bufs)
  for u in nodes:
    try:
      if (name := local_mismatch(u, feed, pm, rng)) is not None: return name
    except (GradientError, ValueError, TypeError, KeyError, IndexError):
      continue  # a node the local check cannot take apart: the main oracle has already reported the case
  # no rule disagrees with central differences of its node: the wrong one may be wrong only at a kink of its node, or
  # at elements the differences did not probe
  if (hit := hand_mismatch(nodes, feed, pm, rng)) is not None: return hit[0]
  return "grad_value_call" if any(is_value_call(u) for u in loss.toposort()) else None

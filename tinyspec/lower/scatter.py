"""scatter (KERNEL -> KERNEL): a one-hot sum whose hot index is data becomes a scatter-add through ATOMICs.

The pass runs three steps, each a table:
  pm_count       a sum over one range of WHERE(a < b, t, f), b - a linear in the range with coefficient 1 or -1, t and f free
                 of it, is the count of iterations the condition holds for: f * n + (t - f) * count (integers: REDUCE ADD
                 wraps as this product does). The frontend's arange (a prefix sum of a constant) folds to its index.
  pm_inline      a kernel that stores into a buffer f(r) of its one range r alone (no load, no reduce: an arange) is
                 recomputed where it is read: a consumer's LOAD(INDEX(PARAM k, e)) becomes f(e), and arg k goes. The
                 one-hot mask then compares with the row index itself; the buffer's kernel is left unused.
  pm_scatter     the one-hot sum becomes a scatter-add, below.
Changed kernels are simplified again between the steps (pm_simplify, with its order pins).

A sum over the positions r of the rows a one-hot mask selects is how a tensor graph says scatter-add (tinygrad's
scatter_reduce, an embedding's backward): out[o] = base(o) + SUM_r WHERE(o == x(r), v(r), 0), the hot index x(r) loaded
from data. Written that way a kernel runs every (o, r) pair; the scatter runs each r once and adds v(r) where x(r)
points. The rule `one_hot_sum_to_scatter` rewrites a kernel CALL of the form

  SINK(END(STORE(INDEX(PARAM 0, e(o, rest)), base + REDUCE(ADD, WHERE(CMPEQ(o' , x), v, 0), rr...)), o, rest...))

(base optional, either operand order of the ADD and of the CMPEQ; o' is the output RANGE o, possibly plus a constant k
and cast to an integer dtype that holds it exactly) into two kernel CALLs run one after the other:

  init:    SINK(END(STORE(INDEX(PARAM 0, e(o, rest)), base or 0), o, rest...))
  scatter: SINK(END(ATOMIC(ADD, INDEX(PARAM 0, e(t, rest)), v, 0 <= t < bound(o)), rr..., rest...))   t = index(x) - k

The scatter kernel's slot 0 is AFTER(out, init), so it runs after the init. Its reduce ranges become LOOP ranges, and
an update that does not depend on one of its ranges (a constant x or v) has its target placed in it, AFTER(PARAM 0,
range), since every position adds (kernel.atomic_ranges). A value the simplifier wrote as a LOAD gated by the mask
becomes that LOAD gated by 0 <= t < bound(o). It is the same sum: each out element is
base plus the v(r) of exactly the r whose x(r) - k is its o, and an x(r) - k outside [0, bound) lands nowhere, as no o
equals it. The rule applies only where that reasoning holds: e is injective over (o, rest) (each element stored once,
shown by tinyspec.spec.kernel.injective_in per range), x and v do not depend on o, base does not depend on the reduce
ranges, nothing in the kernel reads the output's storage, the dtype is one tinyspec.ops.atomic
updates, and the STORE is the kernel's only effect. A float sum then adds in another order: within
tinyspec.ops.atomic.sum_tolerance of the one-hot kernel's sum.

options.scatter "dense" leaves every kernel as it is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.lower.ordering import pm_pin_order, pm_unpin_order
from tinyspec.lower.simplify import pm_simplify, simplify_body
from tinyspec.lower.sums import build, fits_exactly, lin
from tinyspec.ops.atomic import ATOMIC_DTYPES
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.spec.kernel import injective_in
from tinyspec.uop import AxisType, GroupOp, Ops, RangeArg, UOp, is_kernel_call, open_ranges, storage_of, substitute, walk


INJECTIVE_LIMIT = 1 << 20  # the longest output range whose store index is checked injective (one step per iteration)


# ---- pm_count ----
def _clamp(x: UOp, n: UOp) -> UOp:
  """min(max(x, 0), n) in `index`, from MAX alone (the IR has no MIN); the simplifier drops what the bounds decide."""
  return -((-x.maximum(UOp.const(dtypes.index, 0))).maximum(-n))


def linear_condition(red: UOp) -> tuple[int, UOp, UOp, UOp] | None:
  """(c, R, t, f) when red is a REDUCE(ADD) over one range r of WHERE(a < b, t, f) with b - a == c * r + R, c 1 or -1,
  R, t and f free of r (the count fold's form); None otherwise."""
  if red.arg is not Ops.ADD or len(red.src) != 2 or (v := red.src[0]).op is not Ops.WHERE or v.src[0].op is not Ops.CMPLT: return None
  r, (a, b), t, f = red.src[1], v.src[0].src, v.src[1], v.src[2]
  if not red.dtype.is_int or a.dtype is not dtypes.index or r in walk((t, f)): return None
  la, lb = lin(a), lin(b)
  if la is None or lb is None: return None
  diff = dict(lb.terms)  # b - a: the condition is 0 < diff
  for base, k in la.terms.items(): diff[base] = diff.get(base, 0) - k
  c = diff.pop(r, 0)
  rest = {base: k for base, k in diff.items() if k}
  if c not in (1, -1) or any(r in walk((base,)) for base in rest): return None
  return c, build(rest, lb.const - la.const, dtypes.index), t, f


def _count(red: UOp) -> UOp | None:
  if (lc := linear_condition(red)) is None: return None
  c, R, t, f = lc
  return sum_of_count(red, count_where(c, R, red.src[1].src[0]), t, f)


def count_where(c: int, R: UOp, n: UOp) -> UOp:
  """How many r in [0, n) have c * r + R > 0, c 1 or -1: for c == 1, r > -R, so r >= 1 - R holds for n - clamp(1 - R)
  of them; for c == -1, r < R holds for clamp(R) of them."""
  return n - _clamp(UOp.const(dtypes.index, 1) - R, n) if c == 1 else _clamp(R, n)


def sum_of_count(red: UOp, cnt: UOp, t: UOp, f: UOp) -> UOp:
  """REDUCE(ADD) of t on cnt of its n iterations and f on the others: f * n + (t - f) * cnt in red's dtype."""
  n = red.src[1].src[0]
  if red.dtype is not dtypes.index: cnt, n = cnt.cast(red.dtype), n.cast(red.dtype)
  if f.op is Ops.CONST and f.arg == 0: return t * cnt
  return (t - f) * cnt + f * n


pm_count = PatternMatcher([("reduce_count", UPat(Ops.REDUCE, name="red"), _count)], name="pm_count")


# ---- pm_inline ----
def _index_only(arg: UOp) -> tuple[UOp, UOp] | None:
  """(r, f) when arg is AFTER(BUFFER, CALL) of a kernel that stores f(r) at element r of all of that buffer, f computed
  from r and constants alone."""
  if arg.op is not Ops.AFTER or len(arg.src) != 2 or arg.src[0].op is not Ops.BUFFER or not is_kernel_call(k := arg.src[1]): return None
  body = k.src[0]
  if body.op is not Ops.SINK or len(body.src) != 1 or (end := body.src[0]).op is not Ops.END or len(end.src) != 2: return None
  st, r = end.src
  if st.op is not Ops.STORE or len(st.src) != 2 or (idx := st.src[0]).op is not Ops.INDEX or idx.src[1] is not r: return None
  if idx.src[0].op is not Ops.PARAM or idx.src[0].arg.slot != 0 or storage_of(k.src[1]) is not arg.src[0]: return None
  if r.op is not Ops.RANGE or r.src[0].op is not Ops.CONST or r.src[0].arg != arg.src[0].arg.size: return None
  f = st.src[1]
  if any(u.op not in _INDEX_ONLY and u is not r for u in walk((f,))): return None
  return r, f


_INDEX_ONLY = GroupOp.Elementwise | {Ops.CONST}


def _inline(call: UOp) -> UOp | None:
  if not is_kernel_call(call) or (body := call.src[0]).op is not Ops.SINK: return None
  for slot, arg in enumerate(call.src[1:]):
    if slot == 0 or (found := _index_only(arg)) is None: continue
    r, f = found
    nodes = walk((body,))
    params = {u for u in nodes if u.op is Ops.PARAM and u.arg.slot == slot}
    indexes = {u for u in nodes if any(s in params for s in u.src)}
    if not params or any(u.op is not Ops.INDEX or len(u.src) != 2 for u in indexes): continue
    readers = [u for u in nodes if any(s in indexes for s in u.src)]
    if any(u.op is not Ops.LOAD or u.src[0] not in indexes for u in readers): continue  # only LOADs read it
    # sources first (nodes is in walk order): a LOAD's index, gate or alternative may read the buffer too (a gate
    # testing the element it loads), so each is given the values of the LOADs below it before it is rebuilt
    values: dict[UOp, UOp] = {}
    for u in readers:
      x = substitute(f, {r: substitute(u.src[0].src[1], values)})
      values[u] = substitute(u.src[2], values).where(x, substitute(u.src[1], values)) if len(u.src) == 3 else x
    later = {p: p.replace(arg=dataclasses.replace(p.arg, slot=p.arg.slot - 1)) for p in nodes if p.op is Ops.PARAM and p.arg.slot > slot}
    new_body = substitute(substitute(body, values), later)
    return call.replace(src=(new_body, *call.src[1:1 + slot], *call.src[2 + slot:]))
  return None


pm_inline = PatternMatcher([("inline_index_buffer", UPat(Ops.CALL, name="call"), _inline)], name="pm_inline")


# ---- pm_scatter ----
def _hot_range(a: UOp, outs: tuple[UOp, ...]) -> tuple[UOp, int] | None:
  """(o, k) when a is o + k for an output RANGE o: additions of constants and casts between integer dtypes peeled off
  where each holds its exact value (so a == x means o == x - k as integers)."""
  k = 0
  while True:
    if a.op is Ops.RANGE: return (a, k) if a in outs and a.dtype is dtypes.index else None
    if a.op is Ops.CAST and a.dtype.is_int and a.src[0].dtype.is_int and a.dtype.min <= a.src[0].vmin and a.src[0].vmax <= a.dtype.max:
      a = a.src[0]
    elif a.op is Ops.ADD and a.src[1].op is Ops.CONST and isinstance(a.src[1].arg, int) and fits_exactly(a) is not None:
      a, k = a.src[0], k + a.src[1].arg
    else: return None


def _masked(hot: UOp) -> tuple[UOp, UOp] | None:
  """(the CMPEQ mask, the value it selects) of WHERE(CMPEQ, v, 0), or of a LOAD gated by a CMPEQ with alternative 0 (the
  simplifier's form of WHERE(CMPEQ, LOAD, 0)), whose value is then the LOAD ungated."""
  if hot.op is Ops.WHERE: eq, v, zero = hot.src
  elif hot.op is Ops.LOAD and len(hot.src) == 3: (_, zero, eq), v = hot.src, hot.src[0].load()
  else: return None
  return (eq, v) if eq.op is Ops.CMPEQ and zero.op is Ops.CONST and zero.arg == 0 else None


def _sum_parts(value: UOp) -> tuple[UOp | None, UOp] | None:
  """(base, REDUCE) of value = REDUCE or base + REDUCE (either order): the one-hot sum and what it is added to."""
  if value.op is Ops.REDUCE: return None, value
  if value.op is Ops.ADD:
    for red, base in (value.src, value.src[::-1]):
      if red.op is Ops.REDUCE and not any(r in walk((base,)) for r in red.src[1:]): return base, red
  return None


def _reads(nodes: tuple[UOp, ...]) -> set[int]:
  """The PARAM slots the LOADs under nodes read."""
  return {storage_of(u.src[0].src[0]).arg.slot for u in walk(nodes) if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX
          and storage_of(u.src[0].src[0]).op is Ops.PARAM}


@dataclass(frozen=True)
class OneHotSum:
  """A kernel CALL out[e(o, rest)] = base + SUM_rr WHERE(o + k == x, v, 0) the scatter rule may rewrite (one_hot_sum)."""
  call: UOp
  idx: UOp                 # INDEX(PARAM 0, e)
  outs: tuple[UOp, ...]    # the output ranges, o among them
  o: UOp
  k: int
  x: UOp                   # the hot index, loaded from data
  v: UOp                   # the value summed where it hits
  base: UOp | None
  rr: tuple[UOp, ...]      # the reduce ranges
  gated_load: bool         # v was a LOAD gated by the mask


def one_hot_sum(call: UOp) -> OneHotSum | None:
  """call as a one-hot sum the scatter rule may rewrite (the module doc says when), or None."""
  if not is_kernel_call(call) or (body := call.src[0]).op is not Ops.SINK or len(body.src) != 1: return None
  end = body.src[0]
  if end.op is not Ops.END or (st := end.src[0]).op is not Ops.STORE or len(st.src) != 2: return None
  idx, value = st.src
  outs = end.src[1:]
  if idx.op is not Ops.INDEX or len(idx.src) != 2 or idx.src[0].op is not Ops.PARAM or idx.src[0].arg.slot != 0: return None
  if value.dtype not in ATOMIC_DTYPES or (parts := _sum_parts(value)) is None: return None
  base, red = parts
  if red.arg is not Ops.ADD or (masked := _masked(red.src[0])) is None: return None
  eq, v = masked
  found = next(((h, x) for a, x in (eq.src, eq.src[::-1]) if (h := _hot_range(a, outs)) is not None), None)
  if found is None: return None
  (o, k), x = found
  if o in walk((x, v)) or not x.dtype.is_int: return None
  if not all(injective_in(idx.src[1], r, limit=INJECTIVE_LIMIT) for r in outs): return None
  # nothing reads the output's storage: the init would change what the sum reads
  out = storage_of(call.src[1])
  if any(storage_of(call.src[1 + s]) is out for s in _reads((value,)) if 1 + s < len(call.src)): return None
  return OneHotSum(call, idx, outs, o, k, x, v, base, red.src[1:], red.src[0].op is Ops.LOAD)


def hot_row(m: OneHotSum) -> UOp:
  """The output row a position's value belongs to: index(x) - k (the o with o + k == x)."""
  t = m.x.cast(dtypes.index) if m.x.dtype is not dtypes.index else m.x
  return t + UOp.const(dtypes.index, -m.k) if m.k else t


def init_call(m: OneHotSum, value: UOp) -> UOp:
  """The kernel storing value (the base, or 0) at every output element, over the call's args."""
  return m.call.replace(src=(UOp(Ops.SINK, src=(m.idx.store(value).end(*m.outs),)), *m.call.src[1:]))


def scatter_call(m: OneHotSum, t: UOp, init: UOp) -> UOp:
  """The kernel adding v into out[e(t, rest)] with an ATOMIC for every position whose row t lies in [0, bound(o)),
  the reduce ranges plain loops, its output arg ordered after init."""
  gate = (UOp.const(dtypes.index, -1) < t) & (t < m.o.src[0])
  loops = {r: r.replace(arg=RangeArg(r.arg.axis, AxisType.LOOP)) for r in m.rr}
  v = m.v.src[0].load(UOp.const(m.v.dtype, 0), gate) if m.gated_load else m.v  # a load gated as it was
  ranges = (*(loops[r] for r in m.rr), *(r for r in m.outs if r is not m.o))
  upd = substitute(m.idx.src[0].index(substitute(m.idx.src[1], {m.o: t})).atomic(Ops.ADD, v, gate), loops)
  # every position adds once: an update that does not depend on a range it runs in is placed in it (kernel.atomic_ranges)
  if missing := [r for r in ranges if r not in open_ranges(upd)]:
    upd = upd.replace(src=(upd.src[0].replace(src=(upd.src[0].src[0].after(*missing), *upd.src[0].src[1:])), *upd.src[1:]))
  body = UOp(Ops.SINK, src=(upd.end(*ranges),))
  return m.call.replace(src=(body, m.call.src[1].after(init), *m.call.src[2:]))


def _scatter(call: UOp) -> UOp | None:
  if (m := one_hot_sum(call)) is None: return None
  init = init_call(m, m.base if m.base is not None else UOp.const(m.v.dtype, 0))
  return scatter_call(m, hot_row(m), init)


pm_scatter = PatternMatcher([
  ("one_hot_sum_to_scatter", UPat(Ops.CALL, name="call"), _scatter),
], name="pm_scatter")


def _simplified(root: UOp, pm: PatternMatcher | None, trace: Trace, tables: Tables) -> UOp:
  """Every kernel body rewritten with pm (when given) and, where that or an earlier step changed it, simplified."""
  def one(call: UOp | None, body: UOp) -> UOp:
    new = trace.rewrite(body, pm, body=True) if pm is not None else body
    return new if new is body and pm is not None else simplify_body(new, tables, trace)
  return map_kernels(root, one)


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  if options.scatter not in ("atomic", "dense"): raise ValueError(f"scatter option {options.scatter!r} is not 'atomic' or 'dense'")
  if options.scatter == "dense": return root
  root = _simplified(root, tables.pm_count, trace, tables)
  inlined = trace.rewrite(root, tables.pm_inline)
  if inlined is not root: root = _simplified(inlined, None, trace, tables)
  return trace.rewrite(root, tables.pm_scatter)


SCATTER = Pass("scatter", Stage.KERNEL, Stage.KERNEL, run, (pm_count, pm_inline, pm_scatter, pm_pin_order, pm_simplify, pm_unpin_order))

"""optimize (KERNEL -> KERNEL): opts applied to the ranges of each kernel.

An opt is a tuple naming a RANGE by its axis id (RangeArg.axis, unique within a kernel):

  ("split", axis, factor)  RANGE r of bound n (n % factor == 0, 1 < factor < n) becomes ro * factor + ri with
                           ro = RANGE(n // factor) and ri = RANGE(factor) of the same kind, new axis ids max+1 and
                           max+2 (a GLOBAL range keeps GLOBAL on ro only); every END and REDUCE over r runs over
                           (ro, ri) instead.
  ("unroll", axis)         a RANGE of bound 1..UNROLL_LIMIT is replaced by its copies: an END over it becomes a GROUP
                           of the body with r = 0, 1, ...; a REDUCE over it combines the copies with its op.
  ("global", axis)         a LOOP range becomes GLOBAL (OpenCL runs it as get_global_id; C keeps it a loop). It must
                           enclose the whole kernel: every entry of the kernel SINK is an END over it; and its
                           iterations must be independent (kernel.thread_independent: no element of global storage
                           one iteration stores is touched by another), since they run as parallel threads. At most
                           MAX_GLOBALS per kernel.

Every opt is tried on every kernel of the graph. An opt that does not apply to a kernel (no such axis, a bound that
is not a constant or not divisible, a range too long to unroll, a range that does not enclose the kernel or whose
iterations depend on each other, a malformed tuple's numbers out of range) leaves that kernel unchanged, so a fuzzer may choose opts freely.
A tuple that is not an opt at all (unknown name, wrong length, non-integer fields) is a ValueError.

options.opts None runs the heuristic: unroll every reduce range of bound <= 4, then mark the leading (up to 3) LOOP
ranges of a kernel whose SINK holds a single END as GLOBAL (those whose iterations are independent).
After the opts, a kernel they changed is simplified again (unrolled copies index with constants).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace, nested_rewrite, running
from tinyspec.lower.kernel_map import map_kernels, max_axis
from tinyspec.lower.ordering import pm_pin_order, pm_unpin_order
from tinyspec.lower.simplify import pm_simplify, simplify_body
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.spec.kernel import iteration_conflicts
from tinyspec.uop import AxisType, Ops, RangeArg, UOp, substitute, walk

UNROLL_LIMIT = 32
MAX_GLOBALS = 3
HEURISTIC_UNROLL = 4
OPT_ARITY = {"split": 3, "unroll": 2, "global": 2}


def validate_opts(opts: tuple | list) -> list[tuple]:
  """The opts as a list of tuples; ValueError naming the first one that is not an opt."""
  out = []
  for o in opts:
    if not isinstance(o, (tuple, list)) or not o or o[0] not in OPT_ARITY:
      raise ValueError(f"opt {o!r} is not one of ('split', axis, factor), ('unroll', axis), ('global', axis)")
    if len(o) != OPT_ARITY[o[0]] or not all(isinstance(x, int) and not isinstance(x, bool) for x in o[1:]):
      raise ValueError(f"opt {o!r}: {o[0]!r} takes {OPT_ARITY[o[0]] - 1} integer argument(s)")
    out.append(tuple(o))
  return out


@dataclass
class OptCtx:
  axis: int
  factor: int = 0
  new_axis: int = 0
  split: dict | None = None  # the new ranges (ro, ri) and the expression ro*f+ri that stands for the split range


def _find_range(body: UOp, axis: int) -> UOp | None:
  return next((u for u in body.toposort() if u.op is Ops.RANGE and u.arg.axis == axis), None)


def _bound(r: UOp) -> int | None:
  return r.src[0].arg if r.src[0].op is Ops.CONST else None


def _place(ctx: tuple[UOp, tuple[UOp, ...]], u: UOp) -> UOp | None:
  r, placed = ctx
  if r not in u.src[1:]: return None
  deps = tuple(y for d in u.src[1:] for y in (placed if d is r else (d,)))
  return u.replace(src=(u.src[0], *deps)) if deps else u.src[0]


pm_place = PatternMatcher([("place_after", UPat(Ops.AFTER, name="u"), _place)], name="pm_place")


def replace_range(x: UOp, r: UOp, value: UOp, placed: tuple[UOp, ...]) -> UOp:
  """x with the range r gone: storage placed in r (an AFTER dependency) is placed in `placed` instead, or is bare
  storage when nothing is left to wait for; every other use of r, a value, becomes `value`. An AFTER's dependencies
  are effects and ranges, never values, so r cannot simply be substituted there. Called by the split and unroll rules:
  the placing is a nested rewrite, with the pass's pm_place."""
  return substitute(nested_rewrite(x, pm_place, (r, placed)), {r: value})


# ---- split ----
# A split is made where the range is closed: each END or REDUCE closing RANGE r (axis) closes ro, ri instead and its body
# uses ro*f+ri for r. Each application is a whole closure, so no graph between two of them has a range left unclosed.
def _split_closure(ctx: OptCtx, u: UOp) -> UOp | None:
  r = next((s for s in u.src[1:] if s.op is Ops.RANGE and s.arg.axis == ctx.axis), None)
  if r is None: return None
  if ctx.split is None:
    n = _bound(r)
    outer_kind = r.arg.kind
    inner_kind = AxisType.LOOP if outer_kind is AxisType.GLOBAL else outer_kind
    ro = UOp.range(n // ctx.factor, ctx.new_axis, outer_kind)
    ri = UOp.range(ctx.factor, ctx.new_axis + 1, inner_kind)
    ctx.split = {"ranges": (ro, ri), "expr": ro * UOp.const(r.dtype, ctx.factor) + ri}
  ro, ri = ctx.split["ranges"]
  rs = tuple(x for s in u.src[1:] for x in ((ro, ri) if s is r else (s,)))
  return u.replace(src=(replace_range(u.src[0], r, ctx.split["expr"], (ro, ri)), *rs))


pm_split = PatternMatcher([
  ("split_end_ranges", UPat(Ops.END, name="u"), _split_closure),
  ("split_reduce_ranges", UPat(Ops.REDUCE, name="u"), _split_closure),
], name="pm_split")


# ---- unroll ----
def _unrolled_range(ctx: OptCtx, u: UOp) -> UOp | None:
  return next((s for s in u.src[1:] if s.op is Ops.RANGE and s.arg.axis == ctx.axis), None)


def _copies(ctx: OptCtx, r: UOp, x: UOp, chained: bool) -> list[UOp]:
  """One copy of x per iteration of the unrolled range r. chained (effects): storage an iteration placed in r is placed
  after the previous copy instead, so a copy sees what the one before it wrote, as the loop's next iteration did."""
  # chained copies run their reduce loops apart too: copy i's REDUCE may read what copy i-1 stored after its own
  chained = chained and any(v.op is Ops.AFTER and r in v.src[1:] for v in _own(x))
  copies: list[UOp] = []
  for i in range(_bound(r)):
    y = _fresh_loops(ctx, x, (Ops.END, Ops.REDUCE) if chained else (Ops.END,)) if copies else x
    copies.append(replace_range(y, r, UOp.const(r.dtype, i), (copies[-1],) if chained and copies else ()))
  return copies


def _own(x: UOp) -> list[UOp]:
  """The nodes of x itself, not the earlier effects its storage waits for (an AFTER's dependencies)."""
  return walk((x,), lambda u: u.src[:1] if u.op is Ops.AFTER else u.src)


def _fresh_loops(ctx: OptCtx, x: UOp, closers: tuple[Ops, ...]) -> UOp:
  """x with every loop it opens and closes itself (the RANGEs of its ENDs, and of its REDUCEs when in closers) given a
  new axis: each copy of an unrolled body runs its own inner loops, as a RANGE is closed by one END. Unchained copies
  keep their reduce ranges shared: their REDUCEs are independent values that may run in one loop."""
  inner = dict.fromkeys(s for v in _own(x) if v.op in closers for s in v.src[1:] if s.op is Ops.RANGE)
  fresh = {}
  for ir in inner:
    fresh[ir] = ir.replace(arg=RangeArg(ctx.new_axis, ir.arg.kind))
    ctx.new_axis += 1
  return substitute(x, fresh) if fresh else x


def unroll_end(ctx: OptCtx, u: UOp) -> UOp | None:
  # END(x, outer..., r, inner...): each copy runs the whole inner loop nest, in the order of r's iterations
  if (r := _unrolled_range(ctx, u)) is None: return None
  at = u.src.index(r)
  outer, inner = u.src[1:at], u.src[at + 1:]
  copies = _copies(ctx, r, u.src[0].end(*inner) if inner else u.src[0], chained=True)
  group = UOp(Ops.GROUP, src=tuple(y for c in copies for y in (c.src if c.op is Ops.GROUP else (c,))))
  return group.end(*outer) if outer else group


def unroll_reduce(ctx: OptCtx, u: UOp) -> UOp | None:
  if (r := _unrolled_range(ctx, u)) is None: return None
  val = functools.reduce(lambda a, b: a.alu(u.arg, b), _copies(ctx, r, u.src[0], chained=False))
  rest = tuple(s for s in u.src[1:] if s is not r)
  return UOp(Ops.REDUCE, u.dtype, (val, *rest), u.arg) if rest else val


pm_unroll = PatternMatcher([
  ("unroll_end", UPat(Ops.END, name="u"), unroll_end),
  ("unroll_reduce", UPat(Ops.REDUCE, name="u"), unroll_reduce),
], name="pm_unroll")


# ---- global ----
def mark_global(ctx: OptCtx, r: UOp) -> UOp | None:
  if r.arg.axis != ctx.axis or r.arg.kind is not AxisType.LOOP: return None
  return r.replace(arg=RangeArg(r.arg.axis, AxisType.GLOBAL))


pm_global = PatternMatcher([("mark_global", UPat(Ops.RANGE, name="r"), mark_global)], name="pm_global")


# ---- applicability and driver ----
def _encloses_kernel(body: UOp, r: UOp) -> bool:
  return body.op is Ops.SINK and len(body.src) > 0 and all(s.op is Ops.END and r in s.src[1:] for s in body.src)


def _encloses_global(body: UOp, r: UOp) -> bool:
  """Whether r's loop is around a GLOBAL range (an END lists its ranges outer first): unrolling r would leave copies of
  the thread range one after another instead of one thread range around the whole kernel."""
  for s in body.src if body.op is Ops.SINK else ():
    if s.op is Ops.END and r in s.src[1:]:
      after = s.src[s.src.index(r) + 1:]
      if any(x.op is Ops.RANGE and x.arg.kind is AxisType.GLOBAL for x in after): return True
  return False


def apply_opt(body: UOp, opt: tuple, trace: Trace, tables: Tables) -> UOp:
  """body with one opt applied (with tables.pm_split, pm_unroll or pm_global), or body itself when the opt does not apply."""
  kind, axis = opt[0], opt[1]
  if (r := _find_range(body, axis)) is None or (n := _bound(r)) is None: return body
  if kind == "split":
    f = opt[2]
    if not (1 < f < n and n % f == 0): return body
    return trace.rewrite(body, tables.pm_split, OptCtx(axis, f, max_axis(body) + 1), body=True)
  if kind == "unroll":
    if not 1 <= n <= UNROLL_LIMIT or _encloses_global(body, r): return body
    return trace.rewrite(body, tables.pm_unroll, OptCtx(axis, new_axis=max_axis(body) + 1), body=True)
  if kind == "global":
    nglobal = sum(1 for u in body.toposort() if u.op is Ops.RANGE and u.arg.kind is AxisType.GLOBAL)
    if r.arg.kind is not AxisType.LOOP or nglobal >= MAX_GLOBALS or not _encloses_kernel(body, r): return body
    if iteration_conflicts(body, r): return body  # a loop whose iterations share data stays a loop
    return trace.rewrite(body, tables.pm_global, OptCtx(axis), body=True)
  raise ValueError(f"unknown opt {opt!r}")


def heuristic_opts(body: UOp) -> list[tuple]:
  """The opts the heuristic picks for one kernel body."""
  opts: list[tuple] = []
  nodes = body.toposort()
  reduce_ranges = {s for u in nodes if u.op is Ops.REDUCE for s in u.src[1:] if s.op is Ops.RANGE}
  for r in sorted(reduce_ranges, key=lambda r: r.arg.axis):
    if (n := _bound(r)) is not None and 1 <= n <= HEURISTIC_UNROLL: opts.append(("unroll", r.arg.axis))
  if body.op is Ops.SINK and len(body.src) == 1 and body.src[0].op is Ops.END:
    loops = [r for r in body.src[0].src[1:] if r.op is Ops.RANGE and r.arg.kind is AxisType.LOOP]
    opts += [("global", r.arg.axis) for r in loops[:MAX_GLOBALS]]
  return opts


def optimize_body(body: UOp, opts: list[tuple] | None, tables: Tables, trace: Trace | None = None) -> UOp:
  """One kernel body with opts (as validate_opts gives them; None: the heuristic's) applied, then simplified (with
  the tables of simplify_body). tables: a pass's Tables holding both sets and pm_place (OPTIMIZE.tables); the rules'
  nested rewrites use them too."""
  trace = trace or Trace()
  start = body
  with running(trace, tables):
    for opt in heuristic_opts(body) if opts is None else opts:
      body = apply_opt(body, opt, trace, tables)
  # unrolled copies hold constant indices: fold them now rather than render them
  return body if body is start else simplify_body(body, tables, trace)


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  # validated once for the graph, not per kernel, and even when the graph has no kernel
  opts = None if options.opts is None else validate_opts(options.opts)
  return map_kernels(root, lambda call, body: optimize_body(body, opts, tables, trace))


OPTIMIZE = Pass("optimize", Stage.KERNEL, Stage.KERNEL, run, (pm_split, pm_unroll, pm_place, pm_global, pm_pin_order, pm_simplify, pm_unpin_order))

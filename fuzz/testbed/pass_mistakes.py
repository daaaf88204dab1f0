"""Mistakes in the rules of the lowering's passes, for the "pass rule" mutants of fuzz.testbed.mutants: each function is
the broken replacement of one rule, the mistake marked by a comment on its line.

Many restate a few lines of the real rule with the mistake in them: they use only public names of the pass modules, so
the mistake is visible here and the real code is untouched.
"""
from __future__ import annotations

import functools
import math
from typing import Callable

from fuzz.testbed.seeded_bugs import clamped_through_pad
from tinyspec.dtype import dtypes
from tinyspec.lower.callify import inline_output, output_buffers, precompiled_output, substitute_params
from tinyspec.lower.images import image_index
from tinyspec.lower.indexing import flatten, iadd, iconst, imax, imin, isub_from, vindex, view_indices
from tinyspec.lower.linearize import index_to_int
from tinyspec.lower.lower_reduce import identity
from tinyspec.lower.multi import concat, gather, multi_reduce, multi_view, to_device
from tinyspec.lower.optimize import replace_range
from tinyspec.lower.rangeify import reshape_base
from tinyspec.lower.scatter import count_where, hot_row, init_call, linear_condition, one_hot_sum, scatter_call, sum_of_count
from tinyspec.lower.simplify import divide_exact, fold_const, op_range
from tinyspec.lower.sums import build, fits, fits_exactly, lin, lin_range
from tinyspec.ops.scalar import cdiv
from tinyspec.uop import AddrSpace, AxisType, GroupOp, Ops, RangeArg, UOp, is_value_call, open_ranges, storage_of, substitute, walk


# ================================================================ callify
def inline_call_body_as_slot0(g: UOp, call: UOp) -> UOp:
  return substitute_params(call.src[0].src[g.arg], call.src)  # call.src, not call.src[1:]: slot k binds source k (the body is 0)


def tuple_element_from_end(g: UOp, t: UOp) -> UOp:
  return t.src[len(t.src) - 1 - g.arg]  # counts from the end


def outputs_on_cpu(g: UOp, call: UOp) -> UOp:
  if call.src[0].src[g.arg].device is None: return inline_output(g, call)
  outs = [UOp.buffer(b.dtype, b.arg.size, "CPU", id=b.arg.id) for b in output_buffers(call)]  # "CPU", not where the body computes
  return precompiled_output(call, outs, g.arg)


# ================================================================ rangeify
def flip_off_by_one(v: UOp) -> UOp:
  x = v.src[0].src[0]
  return vindex(x, [isub_from(d, i) if f else i for i, f, d in zip(view_indices(v), v.src[0].arg, x.shape)])  # d, not d - 1


def shrink_subtracts_offset(v: UOp) -> UOp:
  return vindex(v.src[0].src[0], [iadd(i, -o) for i, (o, _) in zip(view_indices(v), v.src[0].arg)])  # -o: the window's start subtracted


def expand_keeps_leading(v: UOp) -> UOp:
  idx, n = view_indices(v), len(v.src[0].src[0].shape)
  return vindex(v.src[0].src[0], idx[:n])  # the first axes are the source's: EXPAND prepends, so they are the new ones


def pad_low_gate_off_by_one(v: UOp) -> UOp:
  x = v.src[0].src[0]
  zero = UOp.const(x.dtype, 0)
  if 0 in x.shape: return zero
  inner, valid = [], None
  for i, (o, n), d in zip(view_indices(v), v.src[0].arg, x.shape):
    j = iadd(i, -o)
    conds = []
    if o > 0: conds.append(iconst(o).alu(Ops.CMPLT, i)); j = imax(j, 0)  # noqa: E702  o < i: the first element inside is gated off
    if o + d < n: conds.append(i.alu(Ops.CMPLT, iconst(o + d))); j = imin(j, d - 1)  # noqa: E702
    for c in conds: valid = c if valid is None else valid.alu(Ops.AND, c)
    inner.append(j)
  return vindex(x, inner) if valid is None else valid.where(vindex(x, inner), zero)


def store_through_pad_ungated(st: UOp, v: UOp) -> UOp:
  return st.replace(src=(clamped_through_pad(v), *st.src[1:]))  # no gate: the padding's elements are stored at the clamped edge


def gate_into_load_or(g: UOp, ld: UOp, z: UOp) -> UOp | None:
  if len(ld.src) == 1: return ld.replace(src=(ld.src[0], z, g))
  if len(ld.src) == 3 and ld.src[1].op is Ops.CONST and not ld.src[1].arg:
    return ld.replace(src=(ld.src[0], ld.src[1], g.alu(Ops.OR, ld.src[2])))  # OR where both gates must hold
  return None


def call_arg_after_first_dep(call: UOp) -> UOp | None:
  if not call.src or is_value_call(call): return None
  new = []
  for a in call.src[1:]:
    b = reshape_base(a)
    if b.op is Ops.AFTER and storage_of(b).op in GroupOp.Storage and (a is not b or len(b.src) > 2):
      # every AFTER arg (the written one too) keeps only the first kernel it waits for: the later ones, the readers of
      # the old contents a write must wait for, are dropped
      a = b.replace(src=b.src[:2])
    new.append(a)
  if all(x is y for x, y in zip(new, call.src[1:])): return None
  return call.replace(src=(call.src[0], *new))


def leaf_reads_output(v: UOp, ctx) -> UOp | None:
  x = v.src[0]
  if (p := ctx.leaves.get(x)) is None: return None
  # a leaf of the same size and dtype as the buffer written is read from the output PARAM: an in-place decision taken
  # from the buffer's shape, not from whether it is the same storage
  out = next((q for q in ctx.leaves.values() if q.arg.slot == 0), None)
  if out is not None and out.arg.size == p.arg.size and out.dtype is p.dtype: p = out
  return UOp(Ops.INDEX, p.dtype, (p, flatten(view_indices(v), x.shape))).load()


# ================================================================ simplify: integer rules
def fold_const_floor(x: UOp) -> UOp | None:
  if x.op in (Ops.IDIV, Ops.MOD) and all(s.op is Ops.CONST for s in x.src) and x.dtype.kind in "ix" and x.src[1].arg != 0:
    a, b = x.src[0].arg, x.src[1].arg
    return UOp.const(x.dtype, a // b if x.op is Ops.IDIV else a % b)  # Python's floor division, where C truncates
  return fold_const(x)


def divmod_split_no_overflow_guard(d: UOp, x: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or (a := lin(x)) is None: return None
  if lin_range(list(a.terms.items()), a.const)[0] < 0: return None  # the sum's exact range, never checked to fit the dtype
  n = c.arg
  q = [(b, f // n) for b, f in a.terms.items() if f > 0 and f >= n]
  if not q and a.const < n: return None
  r = [(b, f % n if f > 0 else f) for b, f in a.terms.items()]
  r = [(b, f) for b, f in r if f]
  if lin_range(r, a.const % n)[0] < 0: return None
  rest = build(r, a.const % n, x.dtype)
  if d.op is Ops.MOD: return rest.alu(Ops.MOD, c)
  return build([*q, (rest.alu(Ops.IDIV, c), 1)], a.const // n, x.dtype)


def _same_sign_total_only(total: UOp) -> bool:
  r = op_range(total)
  return r is not None and fits(total.dtype, *r) and (r[0] >= 0 or r[1] <= 0)


def idiv_split_total_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or (q := divide_exact(x, c.arg)) is None or not _same_sign_total_only(s): return None
  return q + b.alu(Ops.IDIV, c)  # the sum has one sign, but b alone may have the other


def mod_split_part_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  if c.arg <= 0 or divide_exact(x, c.arg) is None or b.vmin < 0: return None
  return b.alu(Ops.MOD, c)  # b is non-negative, but the sum k*c + b may be negative


def divmod_negative_divisor_mod_negated(d: UOp, x: UOp, c: UOp) -> UOp | None:
  if c.arg >= -1 or not fits(x.dtype, -c.arg, -c.arg): return None
  nc = UOp.const(x.dtype, -c.arg)
  return x.alu(Ops.IDIV, nc).alu(Ops.NEG) if d.op is Ops.IDIV else x.alu(Ops.MOD, nc).alu(Ops.NEG)  # MOD keeps the dividend's sign


def and_mask_forgets_sign(x: UOp, c: UOp) -> UOp | None:
  m = c.arg
  return x if m > 0 and m & (m + 1) == 0 and x.vmax <= m else None  # a negative x has bits above the mask


def idiv_self_by_zero(x: UOp) -> UOp | None:
  return UOp.const(x.dtype, 1)  # x // x is 1, but 0 // 0 is 0 in the spec


def mod_constant_quotient_upper(m: UOp, x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  q = cdiv(x.vmax, c.arg)
  if q == 0: return None
  return x - UOp.const(x.dtype, q * c.arg)  # the quotient from the upper bound alone: the lower bound may give another


def lt_offset_unguarded(x: UOp, c: UOp) -> UOp | None:
  a = lin(x)
  if a is None or not a.terms or not a.const: return None
  # S + k < c as S < c - k without checking that S + k never wraps (nor that c - k is representable)
  return build(a.terms, 0, x.dtype).alu(Ops.CMPLT, UOp.const(x.dtype, c.arg - a.const))


def lt_scale_floor(x: UOp, c: UOp) -> UOp | None:
  a = lin(x)
  if a is None or not a.terms or a.const or fits_exactly(x) is None or (g := math.gcd(*a.terms.values())) <= 1: return None
  return build({b: f // g for b, f in a.terms.items()}, 0, x.dtype).alu(Ops.CMPLT, UOp.const(x.dtype, c.arg // g))  # floor, not ceil


def max_const_assoc_min(x: UOp, c1: UOp, c2: UOp) -> UOp | None:
  return x.alu(Ops.MAX, UOp.const(x.dtype, min(c1.arg, c2.arg)))  # max(max(x, c1), c2) is max(x, max(c1, c2))


# ================================================================ optimize
def split_closure_swapped(ctx, u: UOp) -> UOp | None:
  r = next((s for s in u.src[1:] if s.op is Ops.RANGE and s.arg.axis == ctx.axis), None)
  if r is None: return None
  if ctx.split is None:
    n, kind = r.src[0].arg, r.arg.kind
    ro = UOp.range(n // ctx.factor, ctx.new_axis, kind)
    ri = UOp.range(ctx.factor, ctx.new_axis + 1, AxisType.LOOP if kind is AxisType.GLOBAL else kind)
    ctx.split = {"ranges": (ro, ri), "expr": ri * UOp.const(r.dtype, ctx.factor) + ro}  # the factor scales the inner range, not the outer
  ro, ri = ctx.split["ranges"]
  rs = tuple(x for s in u.src[1:] for x in ((ro, ri) if s is r else (s,)))
  return u.replace(src=(replace_range(u.src[0], r, ctx.split["expr"], (ro, ri)), *rs))


def split_reduce_short(ctx, u: UOp) -> UOp | None:
  r = next((s for s in u.src[1:] if s.op is Ops.RANGE and s.arg.axis == ctx.axis), None)
  if r is None: return None
  if ctx.split is None:
    n = r.src[0].arg
    ro = UOp.range(n // ctx.factor - 1 if n // ctx.factor > 1 else 1, ctx.new_axis, r.arg.kind)  # one outer step short
    ri = UOp.range(ctx.factor, ctx.new_axis + 1, r.arg.kind)
    ctx.split = {"ranges": (ro, ri), "expr": ro * UOp.const(r.dtype, ctx.factor) + ri}
  ro, ri = ctx.split["ranges"]
  rs = tuple(x for s in u.src[1:] for x in ((ro, ri) if s is r else (s,)))
  return u.replace(src=(replace_range(u.src[0], r, ctx.split["expr"], (ro, ri)), *rs))


def _own(x: UOp) -> list[UOp]:
  return walk((x,), lambda u: u.src[:1] if u.op is Ops.AFTER else u.src)


def _unroll_copies(ctx, r: UOp, x: UOp, chained: bool, count: int) -> list[UOp]:
  """count copies of x for iterations 0.. of r, each running its own inner loops (optimize's copies, restated)."""
  chained = chained and any(v.op is Ops.AFTER and r in v.src[1:] for v in _own(x))
  closers = (Ops.END, Ops.REDUCE) if chained else (Ops.END,)
  copies: list[UOp] = []
  for i in range(count):
    y = x
    if copies:
      inner = dict.fromkeys(s for v in _own(x) if v.op in closers for s in v.src[1:] if s.op is Ops.RANGE)
      fresh = {}
      for ir in inner:
        fresh[ir] = ir.replace(arg=RangeArg(ctx.new_axis, ir.arg.kind))
        ctx.new_axis += 1
      y = substitute(x, fresh) if fresh else x
    copies.append(replace_range(y, r, UOp.const(r.dtype, i), (copies[-1],) if chained and copies else ()))
  return copies


def _unrolled(ctx, u: UOp) -> UOp | None:
  return next((s for s in u.src[1:] if s.op is Ops.RANGE and s.arg.axis == ctx.axis), None)


def unroll_end_drops_last(ctx, u: UOp) -> UOp | None:
  if (r := _unrolled(ctx, u)) is None or r.src[0].arg < 2: return None
  at = u.src.index(r)
  outer, inner = u.src[1:at], u.src[at + 1:]
  copies = _unroll_copies(ctx, r, u.src[0].end(*inner) if inner else u.src[0], True, r.src[0].arg - 1)  # range(n - 1)
  group = UOp(Ops.GROUP, src=tuple(y for c in copies for y in (c.src if c.op is Ops.GROUP else (c,))))
  return group.end(*outer) if outer else group


def unroll_reduce_adds(ctx, u: UOp) -> UOp | None:
  if (r := _unrolled(ctx, u)) is None: return None
  val = functools.reduce(lambda a, b: a.alu(Ops.ADD, b), _unroll_copies(ctx, r, u.src[0], False, r.src[0].arg))  # ADD, not u.arg
  rest = tuple(s for s in u.src[1:] if s is not r)
  return UOp(Ops.REDUCE, u.dtype, (val, *rest), u.arg) if rest else val


# ================================================================ lower_reduce
def _reduce_acc(red: UOp, identity_of: Callable, per_outer: bool = True) -> UOp | None:
  if isinstance(red.arg, tuple): return None
  value, rr = red.src[0], red.src[1:]
  outer = sorted(open_ranges(red), key=lambda r: r.arg.axis)
  acc = UOp.buffer(value.dtype, 1, red.device or "CPU", AddrSpace.REG)
  zero = UOp.const(dtypes.index, 0)
  init = (acc.after(*outer) if outer and per_outer else acc).index(zero).store(identity_of(red.arg, value.dtype))
  running = acc.after(init, *rr).index(zero).load()
  upd = acc.index(zero).store(running.alu(red.arg, value)).end(*rr)
  return acc.after(upd).index(zero).load()


def reduce_max_starts_at_zero(red: UOp) -> UOp | None:
  return _reduce_acc(red, lambda op, dt: UOp.const(dt, 0) if op is Ops.MAX else identity(op, dt))  # 0, not the dtype's minimum


def reduce_init_once(red: UOp) -> UOp | None:
  return _reduce_acc(red, identity, per_outer=False)  # initialized once, not per outer iteration: sums run on across outputs


# ================================================================ images
def image_channels_swapped(ctx: dict, sink: UOp) -> UOp | None:
  out = image_index(ctx, sink)
  if out is None: return None
  # every access through a view reads the neighbouring channel: i ^ 1 swaps channels 0 and 1, 2 and 3 of each pixel
  subs = {u: u.replace(src=(u.src[0], u.src[1].alu(Ops.XOR, UOp.const(u.src[1].dtype, 1)))) for u in out.toposort()
          if u.op is Ops.INDEX and len(u.src) == 2 and u.src[0].op is Ops.IMAGE}
  return substitute(out, subs, into_calls=False)


# ================================================================ multi
def gather_reversed(c: UOp, m: UOp) -> UOp:
  if m.arg is None: return gather(m, c.arg)
  return concat([to_device(s, c.arg) for s in reversed(m.src)], m.arg)  # the last shard first


def flip_per_shard(v: UOp, m: UOp) -> UOp:
  if v.op is Ops.FLIP and m.arg is not None and v.arg[m.arg]:
    return UOp.multi([v.replace(src=(s,)) for s in m.src], m.arg)  # each block flipped, the blocks left in their order
  return multi_view(v, m)


def all_reduce_drops_last(r: UOp, m: UOp) -> UOp:
  out = multi_reduce(r, m)
  if out.op is not Ops.MULTI or m.arg is None or m.arg >= r.arg[1]: return out  # not an all-reduce: as the real rule
  # each device combines the partial results of every shard but the last
  parts = [s.reduce(*r.arg) for s in m.src[:-1]]
  def combined(dev: str) -> UOp:
    acc = to_device(parts[0], dev)
    for p in parts[1:]: acc = acc.alu(r.arg[0], to_device(p, dev))
    return acc
  return UOp.multi([combined(s.device) for s in m.src], None)


# ================================================================ scatter
def count_misses_one(red: UOp) -> UOp | None:
  if (lc := linear_condition(red)) is None: return None
  c, R, t, f = lc
  n = red.src[1].src[0]
  # r > -R counted from -R, not from 1 - R: one iteration too many where the bound is inside the range
  return sum_of_count(red, count_where(c, R - 1 if c == 1 else R, n), t, f)


def scatter_row_plus_k(call: UOp) -> UOp | None:
  if (m := one_hot_sum(call)) is None: return None
  init = init_call(m, m.base if m.base is not None else UOp.const(m.v.dtype, 0))
  t = hot_row(m) + UOp.const(dtypes.index, 2 * m.k)  # the row of o + k == x taken as x + k, not x - k
  return scatter_call(m, t, init)


def scatter_init_drops_base(call: UOp) -> UOp | None:
  if (m := one_hot_sum(call)) is None: return None
  return scatter_call(m, hot_row(m), init_call(m, UOp.const(m.v.dtype, 0)))  # base + sum loses its base


# ================================================================ linearize
def drop_int_cast_same_size(c: UOp, x: UOp) -> UOp | None:
  if c.dtype is x.dtype: return x
  # a cast between integers of one width is taken as a no-op: the value's signedness is lost
  return x if c.dtype.kind in "iu" and x.dtype.kind in "iu" and c.dtype.itemsize == x.dtype.itemsize else None


def index_to_int32(ctx, sink: UOp) -> UOp | None:
  return index_to_int(dtypes.int32, sink)  # int32 whatever the kernel's index bounds need

"""Mutants of the lowering, the renderers and the gradient rules: how well the fuzzer finds and explains small mistakes.

Each mutant is one small, realistic mistake in one place, and is built from its name alone (`MUTANTS_BY_NAME[name]`),
so a worker process or a bench run can rebuild it. Nothing is swapped in any module: a mutant is a new list of passes
or a new rule table, and the reference pipeline, the renderers and autograd.pm_gradient stay as they are.

Three kinds, by where the mistake is:
- "pass rule": one rule of one pass of tinyspec.lower.pipeline.PASSES, replaced with `Pass.replace_rule(rule, fn)`,
  the mechanism of fuzz.testbed.seeded_bugs. `pipeline()` is the reference pipeline with that pass replaced.
- "renderer": one method of a renderer class (CStyleRenderer's methods reach both languages; an OpenCL-only mutant
  changes OpenCLRenderer alone). The mutant renderer is a subclass of the real one with that method replaced, and
  `pipeline()` is the reference pipeline with its render pass replaced by one that renders with the subclass: the
  runtimes run the SOURCE the render pass wrote (the CPU runtime every C PROGRAM, the OpenCL runtime every OpenCL
  one), so a campaign runs a mutant renderer through `CampaignConfig(passes=...)` alone, with no registry entry, no
  new backend name and no change to the campaign. The subclass keeps the language's name, so the runtimes accept it.
- "gradient rule": one rule of autograd.pm_gradient, replaced with `pm_gradient.replace_rule(rule, fn)`; `rules()`
  is that table, for an oracle's `gradient_rules` (fuzz.check.oracles.Config).

Many broken functions restate a few lines of the real one with the mistake in them: they use only public names of
the pass modules, so the mistake is visible here and the real code is untouched.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

from fuzz.testbed.seeded_bugs import clamped_through_pad
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.rewrite import PatternMatcher
from tinyspec.uop import AddrSpace, GroupOp, Ops, RangeArg, UOp, is_value_call, storage_of, substitute, walk

PASS_RULE, RENDERER, GRADIENT_RULE = "pass rule", "renderer", "gradient rule"


@dataclass(frozen=True)
class Mutant:
  name: str
  kind: str          # PASS_RULE, RENDERER or GRADIENT_RULE
  where: str         # the pass (a rule's), "render" (a renderer's) or "gradient" (a gradient rule's)
  rule: str          # the rule changed, or the renderer method ("CStyleRenderer.render_divmod")
  fn: Callable       # the broken rule function, or the broken method
  description: str

  @property
  def method(self) -> str:
    """The renderer method's own name (render_divmod), or "" for a rule."""
    return self.rule.split(".")[-1] if self.kind == RENDERER else ""

  def pipeline(self, passes: list[Pass] | None = None) -> list[Pass]:
    """passes (default: the reference pipeline) with this mutant in them; unchanged for a gradient-rule mutant."""
    from tinyspec.lower.pipeline import PASSES
    passes = list(PASSES if passes is None else passes)
    if self.kind == GRADIENT_RULE: return passes
    if self.where not in {p.name for p in passes}: raise KeyError(f"no pass {self.where!r} in the pipeline")
    if self.kind == RENDERER: return [render_pass(self.renderer) if p.name == "render" else p for p in passes]
    return [p.replace_rule(self.rule, self.fn) if p.name == self.where else p for p in passes]

  def rules(self) -> PatternMatcher | None:
    """The gradient rule table with this mutant's rule in it (None for the other kinds: the real table)."""
    if self.kind != GRADIENT_RULE: return None
    from tinyspec.autograd import pm_gradient
    return pm_gradient.replace_rule(self.rule, self.fn)

  def renderer(self, backend: str):
    """The renderer of backend with this mutant's method in it (the real one when the mutant's class is not in it)."""
    from tinyspec.render.program import get_renderer
    real = type(get_renderer(backend))
    owner = self.rule.split(".")[0]
    if owner not in {c.__name__ for c in real.__mro__}: return real()
    return _mutant_class(real, self.method, self.fn)()


@functools.lru_cache(maxsize=None)
def _mutant_class(real: type, method: str, fn: Callable) -> type:
  # one class per (renderer, method, fn): renderers are made per render pass run, the class once
  return type(f"Mutant{real.__name__}", (real,), {method: fn, "__module__": __name__})


def render_pass(renderer_for: Callable[[str], object]) -> Pass:
  """The render pass, rendering every kernel PROGRAM with renderer_for(options.backend) instead of the real renderer."""
  from tinyspec.lower.kernel_map import map_kernels
  from tinyspec.lower.render import RENDER, render_program

  def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
    r = renderer_for(options.backend)
    return map_kernels(root, lambda call, body: render_program(call, body, r))
  return Pass(RENDER.name, RENDER.stage_in, RENDER.stage_out, run, ())


# ================================================================ callify
def _inline_call_body_as_slot0(g: UOp, call: UOp) -> UOp:
  from tinyspec.lower.callify import substitute_params
  return substitute_params(call.src[0].src[g.arg], call.src)  # call.src, not call.src[1:]: slot k binds source k (the body is 0)


def _tuple_element_from_end(g: UOp, t: UOp) -> UOp:
  return t.src[len(t.src) - 1 - g.arg]  # counts from the end


def _outputs_on_cpu(g: UOp, call: UOp) -> UOp:
  from tinyspec.lower.callify import inline_output, output_buffers, precompiled_output
  if call.src[0].src[g.arg].device is None: return inline_output(g, call)
  outs = [UOp.buffer(b.dtype, b.arg.size, "CPU", id=b.arg.id) for b in output_buffers(call)]  # "CPU", not where the body computes
  return precompiled_output(call, outs, g.arg)


# ================================================================ rangeify
def _flip_off_by_one(v: UOp) -> UOp:
  from tinyspec.lower.indexing import isub_from, vindex, view_indices
  x = v.src[0].src[0]
  return vindex(x, [isub_from(d, i) if f else i for i, f, d in zip(view_indices(v), v.src[0].arg, x.shape)])  # d, not d - 1


def _shrink_subtracts_offset(v: UOp) -> UOp:
  from tinyspec.lower.indexing import iadd, vindex, view_indices
  return vindex(v.src[0].src[0], [iadd(i, -o) for i, (o, _) in zip(view_indices(v), v.src[0].arg)])  # -o: the window's start subtracted


def _expand_keeps_leading(v: UOp) -> UOp:
  from tinyspec.lower.indexing import vindex, view_indices
  idx, n = view_indices(v), len(v.src[0].src[0].shape)
  return vindex(v.src[0].src[0], idx[:n])  # the first axes are the source's: EXPAND prepends, so they are the new ones


def _pad_low_gate_off_by_one(v: UOp) -> UOp:
  from tinyspec.lower.indexing import iadd, iconst, imax, imin, vindex, view_indices
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


def _store_through_pad_ungated(st: UOp, v: UOp) -> UOp:
  return st.replace(src=(clamped_through_pad(v), *st.src[1:]))  # no gate: the padding's elements are stored at the clamped edge


def _gate_into_load_or(g: UOp, ld: UOp, z: UOp) -> UOp | None:
  if len(ld.src) == 1: return ld.replace(src=(ld.src[0], z, g))
  if len(ld.src) == 3 and ld.src[1].op is Ops.CONST and not ld.src[1].arg:
    return ld.replace(src=(ld.src[0], ld.src[1], g.alu(Ops.OR, ld.src[2])))  # OR where both gates must hold
  return None


def _call_arg_after_first_dep(call: UOp) -> UOp | None:
  from tinyspec.lower.rangeify import reshape_base
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


def _leaf_reads_output(v: UOp, ctx) -> UOp | None:
  from tinyspec.lower.indexing import flatten, view_indices
  x = v.src[0]
  if (p := ctx.leaves.get(x)) is None: return None
  # a leaf of the same size and dtype as the buffer written is read from the output PARAM: an in-place decision taken
  # from the buffer's shape, not from whether it is the same storage
  out = next((q for q in ctx.leaves.values() if q.arg.slot == 0), None)
  if out is not None and out.arg.size == p.arg.size and out.dtype is p.dtype: p = out
  return UOp(Ops.INDEX, p.dtype, (p, flatten(view_indices(v), x.shape))).load()


# ================================================================ simplify: integer rules
def _fold_const_floor(x: UOp) -> UOp | None:
  from tinyspec.lower.simplify import fold_const
  if x.op in (Ops.IDIV, Ops.MOD) and all(s.op is Ops.CONST for s in x.src) and x.dtype.kind in "ix" and x.src[1].arg != 0:
    a, b = x.src[0].arg, x.src[1].arg
    return UOp.const(x.dtype, a // b if x.op is Ops.IDIV else a % b)  # Python's floor division, where C truncates
  return fold_const(x)


def _divmod_split_no_overflow_guard(d: UOp, x: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.sums import build, lin, lin_range
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
  from tinyspec.lower.simplify import op_range
  from tinyspec.lower.sums import fits
  r = op_range(total)
  return r is not None and fits(total.dtype, *r) and (r[0] >= 0 or r[1] <= 0)


def _idiv_split_total_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.simplify import divide_exact
  if c.arg <= 0 or (q := divide_exact(x, c.arg)) is None or not _same_sign_total_only(s): return None
  return q + b.alu(Ops.IDIV, c)  # the sum has one sign, but b alone may have the other


def _mod_split_part_sign(d: UOp, s: UOp, x: UOp, b: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.simplify import divide_exact
  if c.arg <= 0 or divide_exact(x, c.arg) is None or b.vmin < 0: return None
  return b.alu(Ops.MOD, c)  # b is non-negative, but the sum k*c + b may be negative


def _divmod_negative_divisor_mod_negated(d: UOp, x: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.sums import fits
  if c.arg >= -1 or not fits(x.dtype, -c.arg, -c.arg): return None
  nc = UOp.const(x.dtype, -c.arg)
  return x.alu(Ops.IDIV, nc).alu(Ops.NEG) if d.op is Ops.IDIV else x.alu(Ops.MOD, nc).alu(Ops.NEG)  # MOD keeps the dividend's sign


def _and_mask_forgets_sign(x: UOp, c: UOp) -> UOp | None:
  m = c.arg
  return x if m > 0 and m & (m + 1) == 0 and x.vmax <= m else None  # a negative x has bits above the mask


def _idiv_self_by_zero(x: UOp) -> UOp | None:
  return UOp.const(x.dtype, 1)  # x // x is 1, but 0 // 0 is 0 in the spec


def _mod_constant_quotient_upper(m: UOp, x: UOp, c: UOp) -> UOp | None:
  from tinyspec.ops.scalar import cdiv
  if c.arg == 0: return None
  q = cdiv(x.vmax, c.arg)
  if q == 0: return None
  return x - UOp.const(x.dtype, q * c.arg)  # the quotient from the upper bound alone: the lower bound may give another


def _lt_offset_unguarded(x: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.sums import build, lin
  a = lin(x)
  if a is None or not a.terms or not a.const: return None
  # S + k < c as S < c - k without checking that S + k never wraps (nor that c - k is representable)
  return build(a.terms, 0, x.dtype).alu(Ops.CMPLT, UOp.const(x.dtype, c.arg - a.const))


def _lt_scale_floor(x: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.sums import build, fits_exactly, lin
  a = lin(x)
  if a is None or not a.terms or a.const or fits_exactly(x) is None or (g := math.gcd(*a.terms.values())) <= 1: return None
  return build({b: f // g for b, f in a.terms.items()}, 0, x.dtype).alu(Ops.CMPLT, UOp.const(x.dtype, c.arg // g))  # floor, not ceil


def _max_const_assoc_min(x: UOp, c1: UOp, c2: UOp) -> UOp | None:
  return x.alu(Ops.MAX, UOp.const(x.dtype, min(c1.arg, c2.arg)))  # max(max(x, c1), c2) is max(x, max(c1, c2))


# ================================================================ optimize
def _split_closure_swapped(ctx, u: UOp) -> UOp | None:
  from tinyspec.lower.optimize import replace_range
  from tinyspec.uop import AxisType
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


def _split_reduce_short(ctx, u: UOp) -> UOp | None:
  from tinyspec.lower.optimize import replace_range
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
  from tinyspec.lower.optimize import replace_range
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


def _unroll_end_drops_last(ctx, u: UOp) -> UOp | None:
  if (r := _unrolled(ctx, u)) is None or r.src[0].arg < 2: return None
  at = u.src.index(r)
  outer, inner = u.src[1:at], u.src[at + 1:]
  copies = _unroll_copies(ctx, r, u.src[0].end(*inner) if inner else u.src[0], True, r.src[0].arg - 1)  # range(n - 1)
  group = UOp(Ops.GROUP, src=tuple(y for c in copies for y in (c.src if c.op is Ops.GROUP else (c,))))
  return group.end(*outer) if outer else group


def _unroll_reduce_adds(ctx, u: UOp) -> UOp | None:
  if (r := _unrolled(ctx, u)) is None: return None
  val = functools.reduce(lambda a, b: a.alu(Ops.ADD, b), _unroll_copies(ctx, r, u.src[0], False, r.src[0].arg))  # ADD, not u.arg
  rest = tuple(s for s in u.src[1:] if s is not r)
  return UOp(Ops.REDUCE, u.dtype, (val, *rest), u.arg) if rest else val


# ================================================================ lower_reduce
def _reduce_acc(red: UOp, identity_of: Callable, per_outer: bool = True) -> UOp | None:
  from tinyspec.uop import open_ranges
  if isinstance(red.arg, tuple): return None
  value, rr = red.src[0], red.src[1:]
  outer = sorted(open_ranges(red), key=lambda r: r.arg.axis)
  acc = UOp.buffer(value.dtype, 1, red.device or "CPU", AddrSpace.REG)
  zero = UOp.const(dtypes.index, 0)
  init = (acc.after(*outer) if outer and per_outer else acc).index(zero).store(identity_of(red.arg, value.dtype))
  running = acc.after(init, *rr).index(zero).load()
  upd = acc.index(zero).store(running.alu(red.arg, value)).end(*rr)
  return acc.after(upd).index(zero).load()


def _reduce_max_starts_at_zero(red: UOp) -> UOp | None:
  from tinyspec.lower.lower_reduce import identity
  return _reduce_acc(red, lambda op, dt: UOp.const(dt, 0) if op is Ops.MAX else identity(op, dt))  # 0, not the dtype's minimum


def _reduce_init_once(red: UOp) -> UOp | None:
  from tinyspec.lower.lower_reduce import identity
  return _reduce_acc(red, identity, per_outer=False)  # initialized once, not per outer iteration: sums run on across outputs


# ================================================================ images
def _image_channels_swapped(ctx: dict, sink: UOp) -> UOp | None:
  from tinyspec.lower.images import image_index
  out = image_index(ctx, sink)
  if out is None: return None
  # every access through a view reads the neighbouring channel: i ^ 1 swaps channels 0 and 1, 2 and 3 of each pixel
  subs = {u: u.replace(src=(u.src[0], u.src[1].alu(Ops.XOR, UOp.const(u.src[1].dtype, 1)))) for u in out.toposort()
          if u.op is Ops.INDEX and len(u.src) == 2 and u.src[0].op is Ops.IMAGE}
  return substitute(out, subs, into_calls=False)


# ================================================================ multi
def _gather_reversed(c: UOp, m: UOp) -> UOp:
  from tinyspec.lower.multi import concat, gather, to_device
  if m.arg is None: return gather(m, c.arg)
  return concat([to_device(s, c.arg) for s in reversed(m.src)], m.arg)  # the last shard first


def _flip_per_shard(v: UOp, m: UOp) -> UOp:
  from tinyspec.lower.multi import multi_view
  if v.op is Ops.FLIP and m.arg is not None and v.arg[m.arg]:
    return UOp.multi([v.replace(src=(s,)) for s in m.src], m.arg)  # each block flipped, the blocks left in their order
  return multi_view(v, m)


# ================================================================ scatter
def _count_misses_one(red: UOp) -> UOp | None:
  from tinyspec.lower.scatter import count_where, linear_condition, sum_of_count
  if (lc := linear_condition(red)) is None: return None
  c, R, t, f = lc
  n = red.src[1].src[0]
  # r > -R counted from -R, not from 1 - R: one iteration too many where the bound is inside the range
  return sum_of_count(red, count_where(c, R - 1 if c == 1 else R, n), t, f)


def _scatter_row_plus_k(call: UOp) -> UOp | None:
  from tinyspec.lower.scatter import hot_row, init_call, one_hot_sum, scatter_call
  if (m := one_hot_sum(call)) is None: return None
  init = init_call(m, m.base if m.base is not None else UOp.const(m.v.dtype, 0))
  t = hot_row(m) + UOp.const(dtypes.index, 2 * m.k)  # the row of o + k == x taken as x + k, not x - k
  return scatter_call(m, t, init)


def _scatter_init_drops_base(call: UOp) -> UOp | None:
  from tinyspec.lower.scatter import hot_row, init_call, one_hot_sum, scatter_call
  if (m := one_hot_sum(call)) is None: return None
  return scatter_call(m, hot_row(m), init_call(m, UOp.const(m.v.dtype, 0)))  # base + sum loses its base


# ================================================================ linearize
def _drop_int_cast_same_size(c: UOp, x: UOp) -> UOp | None:
  if c.dtype is x.dtype: return x
  # a cast between integers of one width is taken as a no-op: the value's signedness is lost
  return x if c.dtype.kind in "iu" and x.dtype.kind in "iu" and c.dtype.itemsize == x.dtype.itemsize else None


def _index_to_int32(ctx, sink: UOp) -> UOp | None:
  from tinyspec.lower.linearize import index_to_int
  return index_to_int(dtypes.int32, sink)  # int32 whatever the kernel's index bounds need


# ================================================================ renderers
def _divmod_zero_gives_zero(self, u: UOp, s: list[str]) -> str:
  from tinyspec.ops.spelling import INFIX, PREFIX
  a, b = u.src
  dt = u.dtype
  ret = self.cast_expr(f"{s[0]} {INFIX[u.op]} {s[1]}", dt)
  if dt.kind == "i" and dt.bits >= 32 and b.vmin <= -1 <= b.vmax and a.vmin == dt.min:
    ret = f"({s[1]} == -1 ? {self.wrapping(PREFIX[Ops.NEG], dt, s[0]) if u.op is Ops.IDIV else '0'} : {ret})"
  if b.vmin <= 0 <= b.vmax: ret = f"({s[1]} == 0 ? 0 : {ret})"  # MOD by 0 is the dividend, not 0
  return ret


def _shift_count_unmasked(self, b: UOp, bs: str, dt) -> str:
  return bs  # the count taken as it is: a shift by the width or more is not taken modulo the width


def _float_max_drops_nan(self, u: UOp, s: list[str]) -> str:
  if u.op is Ops.MAX: return f"({s[0]} > {s[1]} ? {s[0]} : {s[1]})"  # NaN in a is lost: NaN > b is false
  return type(self).__mro__[1].render_float_alu(self, u, s)


def _const_loses_negative_zero(self, v, dt) -> str:
  if dt.is_float and v == 0 and not math.isnan(v): return "0.0" + self.float_suffix.get(dt, "")  # -0.0 rendered as 0.0
  return type(self).__mro__[1].render_const(self, v, dt)


def _cast_float_to_int_unguarded(self, x: str, src, dst) -> str:
  if src.is_float and dst.kind in "iu": return self.cast_expr(x, dst)  # a plain C cast: NaN and out-of-range values are undefined
  return type(self).__mro__[1].render_cast(self, x, src, dst)


def _float_fn_single(self, name: str, dt) -> str:
  return name + "f"  # the float32 function (sqrtf) for float64 too: the argument is rounded to float


def _opencl_cast_no_sat(self, x: str, src, dst) -> str:
  if src.is_float and dst.kind in "iu": return f"convert_{self.type_name(dst)}_rtz({x})"  # no _sat: out-of-range values wrap
  return type(self).__mro__[1].render_cast(self, x, src, dst)


def _opencl_signed_wraps_natively(self, op: str, dt, a: str, b: str | None = None) -> str:
  inner = f"{op}({a})" if b is None else f"{a} {op} {b}"  # signed overflow left to OpenCL C, where it is undefined
  return self.cast_expr(inner, dt) if dt.bits < 32 or dt.kind == "u" else f"({inner})"


# ================================================================ gradient rules
def _sin_grad_sign(ctx: UOp, x: UOp) -> tuple[UOp]:
  from tinyspec.autograd import full_like
  return (x.alu(Ops.SUB, full_like(x, math.pi / 2)).alu(Ops.SIN).alu(Ops.MUL, ctx),)  # sin(x - pi/2) = -cos(x)


def _max_grad_ties_full(ctx: UOp, ret: UOp) -> tuple[UOp, UOp]:
  from tinyspec.autograd import full_like
  a, b = ret.src
  zero = full_like(ctx, 0.0)
  return a.alu(Ops.CMPLT, b).where(zero, ctx), b.alu(Ops.CMPLT, a).where(zero, ctx)  # a tie gives the whole gradient to both


def _log2_grad_times_ln2(ctx: UOp, x: UOp) -> tuple[UOp]:
  from tinyspec.autograd import full_like
  return (ctx.alu(Ops.MUL, x.alu(Ops.MUL, full_like(x, math.log(2))).alu(Ops.RECIP)).alu(Ops.MUL, full_like(x, math.log(2) ** 2)),)  # ln2 twice


def _all_reduce_drops_last(r: UOp, m: UOp) -> UOp:
  from tinyspec.lower.multi import multi_reduce, to_device
  out = multi_reduce(r, m)
  if out.op is not Ops.MULTI or m.arg is None or m.arg >= r.arg[1]: return out  # not an all-reduce: as the real rule
  # each device combines the partial results of every shard but the last
  parts = [s.reduce(*r.arg) for s in m.src[:-1]]
  def combined(dev: str) -> UOp:
    acc = to_device(parts[0], dev)
    for p in parts[1:]: acc = acc.alu(r.arg[0], to_device(p, dev))
    return acc
  return UOp.multi([combined(s.device) for s in m.src], None)


def _reduce_max_grad_all(ctx: UOp, ret: UOp) -> tuple[UOp]:
  x = ret.src[0]
  n = ret.arg[1]
  if n == 0: return (ctx,)
  dims = x.shape[:n]
  return (x.eq(ret.expand(dims)).cast(x.dtype).alu(Ops.MUL, ctx.expand(dims)),)  # every maximum gets the whole gradient, not a share


def _sqrt_grad_no_half(ctx: UOp, ret: UOp) -> tuple[UOp]:
  return (ctx.alu(Ops.MUL, ret.alu(Ops.RECIP)),)  # 1 / sqrt(x), missing the 1/2


MUTANTS: list[Mutant] = [
  # multi
  Mutant("all_reduce_drops_last", PASS_RULE, "multi", "multi_reduce", _all_reduce_drops_last,
         "a reduction over the sharded axis combines every shard's partial result but the last one's"),
  # callify
  Mutant("inline_binds_body_as_slot0", PASS_RULE, "callify", "inline_gettuple_of_call", _inline_call_body_as_slot0,
         "inlining binds PARAM slot k to the call's source k, the body included, not to arg k"),
  Mutant("tuple_element_from_end", PASS_RULE, "callify", "gettuple_of_tuple", _tuple_element_from_end,
         "GETTUPLE(TUPLE, i) folds to the element i from the end"),
  Mutant("precompile_outputs_on_cpu", PASS_RULE, "callify", "precompile_gettuple_of_call", _outputs_on_cpu,
         "a precompiled value call's output buffers are on CPU, not on the device its body computes each output on"),
  # rangeify
  Mutant("flip_off_by_one", PASS_RULE, "rangeify", "index_through_flip", _flip_off_by_one, "FLIP indexes d - i, not d - 1 - i"),
  Mutant("shrink_subtracts_offset", PASS_RULE, "rangeify", "index_through_shrink", _shrink_subtracts_offset,
         "SHRINK subtracts the window's offset from the index instead of adding it"),
  Mutant("expand_keeps_leading", PASS_RULE, "rangeify", "index_through_expand", _expand_keeps_leading,
         "EXPAND keeps the leading indices (the new axes) for its source instead of the trailing ones"),
  Mutant("pad_low_gate_off_by_one", PASS_RULE, "rangeify", "index_through_pad", _pad_low_gate_off_by_one,
         "PAD's lower gate is o < i, not o - 1 < i: the first element of the source reads as padding"),
  Mutant("store_through_pad_ungated", PASS_RULE, "rangeify", "store_target_through_pad", _store_through_pad_ungated,
         "a STORE into a PAD view writes the padding's values at the clamped edge (its gate dropped)"),
  Mutant("pad_gate_merged_with_or", PASS_RULE, "rangeify", "pad_gate_into_load", _gate_into_load_or,
         "a PAD gate moved into a gated LOAD is combined with OR instead of AND"),
  Mutant("war_edge_dropped", PASS_RULE, "rangeify", "call_arg_after_view", _call_arg_after_first_dep,
         "a kernel arg AFTER(buf, k1, k2...) keeps only k1: a write no longer waits for the readers of the old contents"),
  Mutant("inplace_by_shape", PASS_RULE, "rangeify", "index_leaf_load", _leaf_reads_output,
         "a leaf of the written buffer's size and dtype is read from the output buffer: the kernel reads what it writes"),
  # simplify: integer rules
  Mutant("fold_divmod_floor", PASS_RULE, "simplify", "fold_const_alu", _fold_const_floor,
         "IDIV and MOD of constants fold with floor division, where C truncates toward zero (negative operands)"),
  Mutant("divmod_split_overflow", PASS_RULE, "simplify", "divmod_split", _divmod_split_no_overflow_guard,
         "(c*Q + R) // c splits into Q + R // c from the sum's exact range, without checking that the sum fits the dtype (it may wrap)"),
  Mutant("idiv_split_total_sign", PASS_RULE, "simplify", "idiv_split_divisible", _idiv_split_total_sign,
         "(k*c + b) // c splits into k + b // c when the sum has one sign, without checking that b has the same"),
  Mutant("mod_split_part_sign", PASS_RULE, "simplify", "mod_split_divisible", _mod_split_part_sign,
         "(k*c + b) % c folds to b % c when b >= 0, without checking the sign of the sum"),
  Mutant("negative_divisor_mod_negated", PASS_RULE, "simplify", "divmod_negative_divisor", _divmod_negative_divisor_mod_negated,
         "x % c for c < -1 becomes -(x % -c); C's MOD keeps the dividend's sign, so it is x % -c"),
  Mutant("and_mask_forgets_sign", PASS_RULE, "simplify", "and_mask_noop", _and_mask_forgets_sign,
         "x & (2**k - 1) folds to x from x's upper bound alone, forgetting a negative x"),
  Mutant("idiv_self_by_zero", PASS_RULE, "simplify", "idiv_self", _idiv_self_by_zero,
         "x // x folds to 1 even where x may be 0 (0 // 0 is 0)"),
  Mutant("mod_quotient_from_upper", PASS_RULE, "simplify", "mod_constant_quotient", _mod_constant_quotient_upper,
         "x % c as x - q*c with q taken from x's upper bound alone"),
  Mutant("lt_offset_unguarded", PASS_RULE, "simplify", "lt_offset", _lt_offset_unguarded,
         "S + k < c becomes S < c - k without the guard that S + k does not wrap"),
  Mutant("lt_scale_floor", PASS_RULE, "simplify", "lt_scale", _lt_scale_floor,
         "g*S < c becomes S < c // g (floor), where it is S < ceil(c / g)"),
  Mutant("max_const_assoc_min", PASS_RULE, "simplify", "max_const_assoc", _max_const_assoc_min,
         "max(max(x, c1), c2) folds with min(c1, c2)"),
  # optimize
  Mutant("split_inner_major", PASS_RULE, "optimize", "split_end_ranges", _split_closure_swapped,
         "a split range r becomes ri * f + ro, not ro * f + ri: the factor scales the wrong range"),
  Mutant("split_reduce_short", PASS_RULE, "optimize", "split_reduce_ranges", _split_reduce_short,
         "a split reduce range's outer loop runs one step short"),
  Mutant("unroll_end_drops_last", PASS_RULE, "optimize", "unroll_end", _unroll_end_drops_last,
         "unrolling a loop makes copies for iterations 0..n-2: the last one is lost"),
  Mutant("unroll_reduce_adds", PASS_RULE, "optimize", "unroll_reduce", _unroll_reduce_adds,
         "an unrolled REDUCE combines its copies with ADD whatever its op (MAX, MUL)"),
  # lower_reduce
  Mutant("max_acc_starts_at_zero", PASS_RULE, "lower_reduce", "reduce_to_accumulator", _reduce_max_starts_at_zero,
         "a MAX accumulator starts at 0, not at the dtype's minimum"),
  Mutant("acc_init_once", PASS_RULE, "lower_reduce", "reduce_to_accumulator", _reduce_init_once,
         "the accumulator is initialized once, not in every iteration of the outer ranges"),
  # images
  Mutant("image_channels_swapped", PASS_RULE, "images", "image_index", _image_channels_swapped,
         "an access through an image view addresses the neighbouring channel of its pixel (channels 0 and 1, 2 and 3 swapped)"),
  # multi
  Mutant("gather_reversed", PASS_RULE, "multi", "multi_copy_gather", _gather_reversed,
         "gathering a sharded tensor onto one device concatenates its shards last first"),
  Mutant("flip_per_shard", PASS_RULE, "multi", "multi_view", _flip_per_shard,
         "a FLIP of the sharded axis flips each shard in place and keeps the shards' order"),
  # scatter
  Mutant("count_misses_one", PASS_RULE, "scatter", "reduce_count", _count_misses_one,
         "a sum over the iterations where r > -R counts from -R, not from 1 - R: one iteration too many"),
  Mutant("scatter_row_plus_k", PASS_RULE, "scatter", "one_hot_sum_to_scatter", _scatter_row_plus_k,
         "the row of a one-hot mask o + k == x is taken as x + k, not x - k"),
  Mutant("scatter_init_drops_base", PASS_RULE, "scatter", "one_hot_sum_to_scatter", _scatter_init_drops_base,
         "a scatter-add into base + sum initializes its output to 0, losing the base"),
  # linearize
  Mutant("drop_sign_cast", PASS_RULE, "linearize", "drop_noop_cast", _drop_int_cast_same_size,
         "a CAST between integers of one width (int32 <-> uint32) is dropped as a no-op"),
  Mutant("index_always_int32", PASS_RULE, "linearize", "index_to_int", _index_to_int32,
         "index is lowered to int32 even when the kernel's index bounds need int64"),
  # renderers
  Mutant("render_mod_by_zero", RENDERER, "render", "CStyleRenderer.render_divmod", _divmod_zero_gives_zero,
         "MOD by a divisor that may be 0 renders the 0 case as 0, not the dividend"),
  Mutant("render_shift_unmasked", RENDERER, "render", "CStyleRenderer._count", _shift_count_unmasked,
         "a shift count that may reach the width is rendered unmasked"),
  Mutant("render_max_drops_nan", RENDERER, "render", "CStyleRenderer.render_float_alu", _float_max_drops_nan,
         "float MAX renders as a > b ? a : b, which loses a NaN in a"),
  Mutant("render_negative_zero", RENDERER, "render", "CStyleRenderer.render_const", _const_loses_negative_zero,
         "a -0.0 constant renders as 0.0"),
  Mutant("render_cast_unguarded", RENDERER, "render", "CStyleRenderer.render_cast", _cast_float_to_int_unguarded,
         "float -> int casts render as plain C casts: NaN and out-of-range values are undefined, not 0 and saturated"),
  Mutant("render_float64_math_single", RENDERER, "render", "CStyleRenderer.float_fn", _float_fn_single,
         "float64 math renders with the float32 function (sqrtf, exp2f...): the argument and result are rounded to float"),
  Mutant("opencl_cast_no_sat", RENDERER, "render", "OpenCLRenderer.render_cast", _opencl_cast_no_sat,
         "OpenCL float -> int casts use convert_T_rtz, without saturation"),
  Mutant("opencl_signed_overflow", RENDERER, "render", "OpenCLRenderer.wrapping", _opencl_signed_wraps_natively,
         "OpenCL signed add/sub/mul/neg are rendered in the signed type, where overflow is undefined"),
  # gradient rules
  Mutant("grad_sin_sign", GRADIENT_RULE, "gradient", "grad_sin", _sin_grad_sign, "d sin(x) is sin(x - pi/2) = -cos(x)"),
  Mutant("grad_max_ties_full", GRADIENT_RULE, "gradient", "grad_max_ties_half", _max_grad_ties_full,
         "on a tie of MAX each source gets the whole gradient, not half"),
  Mutant("grad_log2_ln2_squared", GRADIENT_RULE, "gradient", "grad_log2", _log2_grad_times_ln2,
         "d log2(x) is multiplied by ln2 squared"),
  Mutant("grad_reduce_max_all", GRADIENT_RULE, "gradient", "grad_reduce_max_split", _reduce_max_grad_all,
         "REDUCE MAX gives the whole gradient to every maximum instead of a share"),
  Mutant("grad_sqrt_no_half", GRADIENT_RULE, "gradient", "grad_sqrt", _sqrt_grad_no_half, "d sqrt(x) is 1 / sqrt(x), missing 1/2"),
]

MUTANTS_BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}
assert len(MUTANTS_BY_NAME) == len(MUTANTS), "two mutants share a name"

__all__ = ["Mutant", "MUTANTS", "MUTANTS_BY_NAME", "PASS_RULE", "RENDERER", "GRADIENT_RULE", "render_pass"]

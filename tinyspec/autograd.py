"""Reverse-mode gradients of tensor graphs, built as TENSOR-stage graphs.

    from tinyspec import gradient
    grads = gradient(loss, [x, w])           # UOps (or Tensors) with the shapes of x and w
    bundle = tinyspec.autograd.gradient_sink(loss, [x, w])   # the same gradients as a SINK of values

How it works. The graph under the loss is walked from the loss toward the targets, in reverse topological order,
and every node on a path to a target hands its gradient (`ctx`) to pm_gradient, a PatternMatcher of named per-op
rules; the rule returns one gradient (or None) per source, and gradients reaching one node are added. Only float
values carry gradients: integer and bool sources, and sources of integer or bool nodes, contribute nothing.
DETACH stops gradients.

Conventions (documented choices):
- Targets: a target that is a BUFFER seen through RESHAPEs (what a Tensor made from data is) gets the gradient of
  the buffer's data, reshaped: uses of the BUFFER itself (e.g. a buffer a @function captured) count too.
- MAX (elementwise): where a > b the gradient goes to a, where a < b to b, and on a tie each gets half.
- REDUCE MAX: the gradient is split evenly among the elements equal to the maximum.
- REDUCE MUL: exact with zeros: with no zero in the group d/dx_i = prod / x_i; with exactly one zero only that
  element gets the product of the others; with two or more zeros every gradient is 0.
- TRUNC has gradient 0; comparisons, IDIV, MOD, bit ops and BITCAST between different types carry none.
- An assign `AFTER(s, STORE(s, v))` (the whole storage overwritten) has the value v: its gradient goes to v and
  none to the old contents of s. Other AFTERs, opaque CALLs and STOREs into views are not differentiable and raise.

Value calls. The gradient of CALL(TUPLE(o_0..o_{m-1}), a_0..a_{n-1}) is a backward value call
    CALL(TUPLE(d_0..d_{n-1}), a_0..a_{n-1}, g_0..g_{m-1}, arg="<name>.grad")
whose body is the gradient of the forward body w.r.t. its PARAMs (the forward body is recomputed inside it): PARAM
slot k < n is forward arg k as in the forward body, PARAM slot n+j is the gradient of output j (flat, the size and
dtype of o_j). Slot k of the backward TUPLE is the gradient for forward arg k, flat (a_k's size and dtype): slots are
source positions and never shift. An arg without a gradient (not float, or no path from an output) gets zeros; an
output with no gradient from outside gets zeros as its g_j. A body may also read BUFFERs directly (nested bodies
included): those are inputs of the call too, after its args (call_inputs), so the backward call takes
a_0..a_{n-1}, B_0..B_{c-1}, g_0..g_{m-1} and returns n + c slots, slot n+i holding the gradient for B_i (its body
reads B_i directly, as the forward body does; the args only keep the slots aligned with source positions).

The backward body depends only on the forward body, so a function called on different args shares one backward
body, and identical constructions intern to one node. Several gradients travelling together (the outputs of one
CALL, the result of gradient_sink) are a SINK of values, never a GROUP.
"""
from __future__ import annotations

import math
from contextvars import ContextVar
from typing import Any, Iterable, Sequence

from tinyspec.dtype import DType
from tinyspec.rewrite import PatternMatcher, UPat
# a backward call is named "<forward name>" + GRAD_SUFFIX; the TENSOR table checks its form (spec/gradient.py)
from tinyspec.spec.gradient import GRAD_SUFFIX
from tinyspec.uop import GroupOp, Ops, UOp, home_device, is_value_call, shard_blocks, walk


class GradientError(ValueError):
  """The graph has something on a gradient path that has no gradient (an opaque CALL, a partial assign, ...)."""


# ---- small graph builders (no implicit broadcasting at TENSOR: constants are expanded to the shape) ----

def full_like(u: UOp, value: Any, dtype: DType | None = None) -> UOp:
  """A constant of u's shape (and dtype, unless given), built as EXPAND(CONST)."""
  c = UOp.const(dtype or u.dtype, value)
  return c.expand(u.shape) if u.shape else c


def zeros(shape: tuple[int, ...], dtype: DType) -> UOp:
  c = UOp.const(dtype, 0)
  return c.expand(tuple(shape)) if shape else c


def is_zero(u: UOp) -> bool:
  """Whether u is a constant 0 seen through views (how a missing gradient is spelled)."""
  while u.op in (Ops.EXPAND, Ops.RESHAPE): u = u.src[0]
  return u.op is Ops.CONST and u.arg == 0


def add(a: UOp | None, b: UOp) -> UOp:
  """a + b for gradients: None and zeros are dropped, bundles (SINKs) add slot by slot."""
  if a is None or is_zero(a) and a.op is not Ops.SINK: return b
  if b.op is Ops.SINK: return UOp(Ops.SINK, src=tuple(add(x, y) for x, y in zip(a.src, b.src)))
  if is_zero(b): return a
  if a.dtype.storage_only: return (a.cast(a.dtype.compute_dtype) + b.cast(a.dtype.compute_dtype)).cast(a.dtype)  # no fp8 ADD
  return a + b


def _first(u: UOp, dims: tuple[int, ...]) -> UOp:
  return u.expand(dims) if dims else u


def _mul(a: UOp, b: UOp) -> UOp: return a.alu(Ops.MUL, b)
def _recip(a: UOp) -> UOp: return a.alu(Ops.RECIP)


def flat_storage_base(u: UOp) -> UOp | None:
  """The BUFFER under a chain of RESHAPEs (a Tensor made from data), or None."""
  while u.op is Ops.RESHAPE: u = u.src[0]
  return u if u.op is Ops.BUFFER else None


# ---- per-op gradient rules: fn(ctx=output gradient, ret=node, ...) -> one gradient or None per source ----

def _max_grad(ctx: UOp, ret: UOp) -> tuple[UOp, UOp]:
  a, b = ret.src
  zero, half = full_like(ctx, 0.0), full_like(ctx, 0.5)
  tie = a.alu(Ops.CMPNE, b).where(zero, _mul(ctx, half))
  return b.alu(Ops.CMPLT, a).where(ctx, tie), a.alu(Ops.CMPLT, b).where(ctx, tie)


def _where_grad(ctx: UOp, ret: UOp) -> tuple[None, UOp, UOp]:
  c = ret.src[0]
  zero = full_like(ctx, 0.0)
  return None, c.where(ctx, zero), c.where(zero, ctx)


def _cast_grad(ctx: UOp, ret: UOp) -> tuple[UOp | None]:
  s = ret.src[0]
  return (ctx.cast(s.dtype) if s.dtype.is_float else None,)


def _sum_leading(ctx: UOp, n: int) -> UOp:
  """The gradient summed over its n leading axes. A small float sums in float32 and is cast back, as tinygrad's
  gradient of an expand does (and fp8 has no REDUCE)."""
  if not ctx.dtype.is_small_float: return ctx.reduce(Ops.ADD, n)
  return ctx.cast(ctx.dtype.compute_dtype).reduce(Ops.ADD, n).cast(ctx.dtype)


def _permute_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  inv = [0] * len(ret.arg)
  for i, p in enumerate(ret.arg): inv[p] = i
  return (ctx.permute(tuple(inv)),)


def _reduce_axes(ret: UOp) -> tuple[tuple[int, ...], int]:
  n = ret.arg[1]
  return ret.src[0].shape[:n], n


def _reduce_add_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  dims, _ = _reduce_axes(ret)
  return (_first(ctx, dims),)


def _reduce_max_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  x = ret.src[0]
  dims, n = _reduce_axes(ret)
  if n == 0: return (ctx,)
  is_max = x.eq(_first(ret, dims)).cast(x.dtype)
  share = _mul(is_max, _recip(_first(is_max.reduce(Ops.ADD, n), dims)))
  return (_mul(share, _first(ctx, dims)),)


def _reduce_mul_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  x = ret.src[0]
  dims, n = _reduce_axes(ret)
  if n == 0: return (ctx,)
  zero, one = full_like(x, 0.0), full_like(x, 1.0)
  is0 = x.eq(zero)
  nonzero = is0.where(one, x)
  prod_nz = _first(nonzero.reduce(Ops.MUL, n), dims)
  zeros_in_group = _first(is0.cast(x.dtype).reduce(Ops.ADD, n), dims)
  others = zeros_in_group.eq(zero).where(_mul(prod_nz, _recip(nonzero)), (is0 & zeros_in_group.eq(one)).where(prod_nz, zero))
  return (_mul(_first(ctx, dims), others),)


_BIJECTIVE_VIEWS = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.FLIP})


def _after_grad(ctx: UOp, ret: UOp, st: UOp) -> tuple[None, UOp]:
  s, target = ret.src[0], st.src[0]
  view = s
  while view.op in GroupOp.Movement and view.op in _BIJECTIVE_VIEWS: view = view.src[0]
  # through a view that drops (PAD), repeats (EXPAND) or skips (SHRINK) elements, what is read back is not v
  if target is not s or len(st.src) != 2 or view.op in GroupOp.Movement:
    raise GradientError(f"AFTER of a {'gated ' if len(st.src) > 2 else ''}STORE into {target.op.name} on a gradient path: only an assign "
                        "that overwrites the whole storage through RESHAPE/PERMUTE/FLIP views, AFTER(s, STORE(s, v)), is differentiable")
  return None, ctx


def _call_grad(ctx: UOp, ret: UOp) -> tuple[UOp | None, ...]:
  """One gradient per input of the call (call_inputs: its args, then the BUFFERs its body reads), not per source."""
  bwd = backward_call(ret, ctx.src)
  out: list[UOp | None] = []
  for k, a in enumerate(call_inputs(ret)):
    # a slot the backward body left zero carries nothing: zeros pushed on through the arg's producer could meet an
    # infinite local derivative there (0 * inf = NaN) where the inlined graph has no path at all
    if not a.dtype.is_float or is_zero(bwd.src[0].src[k]): out.append(None)
    else:
      d = bwd.gettuple(k)
      out.append(d if d.shape == a.shape else d.reshape(a.shape))
  return tuple(out)


def _gettuple_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  s = ret.src[0]
  outs = s.src[0].src if s.op is Ops.CALL else s.src
  return (UOp(Ops.SINK, src=tuple(ctx if i == ret.arg else zeros(o.shape, o.dtype) for i, o in enumerate(outs))),)


def _after_other(ret: UOp) -> None:
  deps = ", ".join(d.op.name for d in ret.src[1:])
  raise GradientError(f"AFTER waiting for {deps} on a gradient path: only an assign AFTER(s, STORE(s, v)) is differentiable")


def _copy_grad(ctx: UOp, x: UOp) -> tuple[UOp]:
  """Back to the source's device; to a tensor over several devices, replicated on each (the gradient's value is what
  matters, not how the source was split: an op combining it with the source's shards takes their blocks of it)."""
  if isinstance(d := x.device, tuple): return (UOp.multi([ctx.copy_to(dev) for dev in d], None),)
  return (ctx.copy_to(d or "CPU"),)


def _multi_grad(ctx: UOp, ret: UOp) -> tuple:
  """Shard i of a sharded MULTI gets its block of the gradient, on its device. A replicated MULTI is the value of any
  replica: the gradient goes to replica 0 (its copy on that device) and the others get none."""
  if ret.arg is None: return (ctx.copy_to(ret.src[0].device), *(None for _ in ret.src[1:]))
  a = ret.arg
  return tuple(ctx.shrink(tuple(blk if j == a else (0, d) for j, d in enumerate(ctx.shape))).copy_to(s.device)
               for s, blk in zip(ret.src, shard_blocks(ret)))


def _no_grad(ret: UOp) -> tuple[None, ...]: return (None,) * len(ret.src)


def _opaque(ret: UOp) -> None:
  raise GradientError(f"{ret.op.name} with a {ret.src[0].op.name} body on a gradient path: only value calls (a TUPLE body) are differentiable")


LN2 = math.log(2)
pm_gradient = PatternMatcher([
  # elementwise
  ("grad_neg", UPat(Ops.NEG), lambda ctx: (-ctx,)),
  ("grad_recip", UPat(Ops.RECIP, name="ret"), lambda ctx, ret: (_mul(_mul(-ctx, ret), ret),)),
  ("grad_sqrt", UPat(Ops.SQRT, name="ret"), lambda ctx, ret: (_mul(ctx, _recip(_mul(ret, full_like(ret, 2.0)))),)),
  ("grad_exp2", UPat(Ops.EXP2, name="ret"), lambda ctx, ret: (_mul(_mul(ret, ctx), full_like(ret, LN2)),)),
  ("grad_log2", UPat(Ops.LOG2, src=(UPat.var("x"),)), lambda ctx, x: (_mul(ctx, _recip(_mul(x, full_like(x, LN2)))),)),
  ("grad_sin", UPat(Ops.SIN, src=(UPat.var("x"),)), lambda ctx, x: (_mul(full_like(x, math.pi / 2).alu(Ops.SUB, x).alu(Ops.SIN), ctx),)),
  ("grad_trunc_zero", UPat(Ops.TRUNC), lambda: (None,)),
  ("grad_add", UPat(Ops.ADD), lambda ctx: (ctx, ctx)),
  ("grad_sub", UPat(Ops.SUB), lambda ctx: (ctx, -ctx)),
  ("grad_mul", UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), lambda ctx, a, b: (_mul(b, ctx), _mul(a, ctx))),
  ("grad_max_ties_half", UPat(Ops.MAX, name="ret"), _max_grad),
  ("grad_where", UPat(Ops.WHERE, name="ret"), _where_grad),
  ("grad_cast", UPat(Ops.CAST, name="ret"), _cast_grad),
  ("grad_bitcast_same", UPat(Ops.BITCAST, name="ret", pred=lambda u: u.dtype is u.src[0].dtype), lambda ctx: (ctx,)),
  ("grad_none", UPat(GroupOp.Comparison | {Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.BITCAST}, name="ret"), _no_grad),
  # movement: each one's inverse
  ("grad_reshape", UPat(Ops.RESHAPE, src=(UPat.var("x"),)), lambda ctx, x: (ctx if ctx.shape == x.shape else ctx.reshape(x.shape),)),
  ("grad_permute", UPat(Ops.PERMUTE, name="ret"), _permute_grad),
  ("grad_expand", UPat(Ops.EXPAND, name="ret"), lambda ctx, ret: (_sum_leading(ctx, len(ret.arg)) if ret.arg else ctx,)),
  ("grad_pad", UPat(Ops.PAD, src=(UPat.var("x"),), name="ret"),
   lambda ctx, ret, x: (ctx.shrink(tuple((o, d) for (o, _), d in zip(ret.arg, x.shape))),)),
  ("grad_shrink", UPat(Ops.SHRINK, src=(UPat.var("x"),), name="ret"),
   lambda ctx, ret, x: (ctx.pad(tuple((o, d) for (o, _), d in zip(ret.arg, x.shape))),)),
  ("grad_flip", UPat(Ops.FLIP, name="ret"), lambda ctx, ret: (ctx.flip(ret.arg),)),
  # reduce
  ("grad_reduce_add", UPat(Ops.REDUCE, name="ret", pred=lambda u: u.arg[0] is Ops.ADD), _reduce_add_grad),
  ("grad_reduce_max_split", UPat(Ops.REDUCE, name="ret", pred=lambda u: u.arg[0] is Ops.MAX), _reduce_max_grad),
  ("grad_reduce_mul", UPat(Ops.REDUCE, name="ret", pred=lambda u: u.arg[0] is Ops.MUL), _reduce_mul_grad),
  # order and realization
  ("grad_contiguous", UPat(Ops.CONTIGUOUS), lambda ctx: (ctx,)),
  ("grad_copy", UPat(Ops.COPY, src=(UPat.var("x"),)), _copy_grad),
  ("grad_detach_stop", UPat(Ops.DETACH), lambda: (None,)),
  ("grad_multi", UPat(Ops.MULTI, name="ret"), _multi_grad),
  ("grad_assign", UPat(Ops.AFTER, src=(UPat.var(), UPat(Ops.STORE, name="st")), name="ret"), _after_grad),
  ("grad_after_other", UPat(Ops.AFTER, name="ret"), _after_other),
  ("grad_store_value", UPat(Ops.STORE, name="ret"), lambda ctx, ret: (None, ctx, *_no_grad(ret)[2:])),
  # value calls
  ("grad_gettuple", UPat(Ops.GETTUPLE, name="ret"), _gettuple_grad),
  ("grad_tuple", UPat(Ops.TUPLE), lambda ctx: ctx.src),
  ("grad_value_call", UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="ret"), _call_grad),
  ("grad_opaque_call", UPat(Ops.CALL, name="ret"), _opaque),
], "gradient")


# ---- the walk ----



def captured(body: UOp) -> tuple[UOp, ...]:
  """The BUFFERs a call body reads directly (nested call bodies included), in first-seen order. Cached on the body."""
  key = "gradient.captured"
  if (ret := body._cache.get(key)) is None: body._cache[key] = ret = tuple(u for u in body.toposort() if u.op is Ops.BUFFER)
  return ret


def call_inputs(call: UOp) -> tuple[UOp, ...]:
  """What a value call's result depends on: its args, then the BUFFERs its body reads directly. A backward call takes
  and returns these in this order (a call built by @function captures no BUFFER: they are args already)."""
  return (*call.src[1:], *captured(call.src[0]))


def _inputs(u: UOp) -> tuple[UOp, ...]:
  """The nodes the gradient rule of u returns one gradient each for: its sources, or a value call's inputs."""
  return call_inputs(u) if is_value_call(u) else u.src


def _kids(u: UOp) -> tuple[UOp, ...]:
  """The nodes a gradient can flow into from u: a CALL's body is not one (its PARAMs are its own), DETACH has none."""
  if u.op is Ops.DETACH: return ()
  if u.op is Ops.CALL: return call_inputs(u) if is_value_call(u) else u.src[1:]
  return u.src


def _carries(u: UOp) -> bool:
  """Whether u can hold a gradient: a float value, a value CALL (a bundle), or a STORE (its value's gradient)."""
  if u.dtype.is_float: return True
  return u.op in (Ops.STORE, Ops.TUPLE) or is_value_call(u)


def graph_nodes(roots: Iterable[UOp]) -> list[UOp]:
  """Every node the gradient walk reaches from roots, sources first: a value call's inputs (args and the buffers its
  body captures), never a call body."""
  return walk(roots, _kids)


# the rule table of the gradient being built: a value call's rule builds its backward body with the table its caller
# was given, so a swapped table (a test's broken rule) reaches into call bodies too
_RULES: ContextVar[PatternMatcher | None] = ContextVar("gradient_rules", default=None)


def active_rules(rules: PatternMatcher | None = None) -> PatternMatcher:
  """The gradient rule table in force: rules when given, else the one of the gradient being built, else pm_gradient."""
  return rules if rules is not None else (_RULES.get() or pm_gradient)


def backprop(seeds: Sequence[tuple[UOp, UOp]], targets: Iterable[UOp], rules: PatternMatcher | None = None) -> dict[UOp, UOp]:
  """Gradients of every node on a path from the seeded nodes to a target. seeds: (node, its gradient); a node seeded
  twice gets the sum. Call bodies are not entered here: a value CALL's gradient is a backward call (pm_gradient).
  rules: the per-op rule table (None: active_rules())."""
  pm = active_rules(rules)
  token = _RULES.set(pm)
  try: return _backprop(seeds, targets, pm)
  finally: _RULES.reset(token)


def _backprop(seeds: Sequence[tuple[UOp, UOp]], targets: Iterable[UOp], pm: PatternMatcher) -> dict[UOp, UOp]:
  targets = set(targets)
  order = graph_nodes(s for s, _ in seeds)
  live: set[UOp] = set()
  for u in order:
    if u in targets or any(s in live for s in _kids(u)): live.add(u)
  grads: dict[UOp, UOp] = {}
  for node, g in seeds:
    if node in live and _carries(node): grads[node] = add(grads.get(node), g)
  for u in reversed(order):
    if (g := grads.get(u)) is None or not any(s in live for s in _kids(u)): continue
    hit = pm.rewrite(u, ctx=g)
    if hit is None: raise GradientError(f"no gradient rule for {u.op.name} {u.dtype.name} on a gradient path")
    _, src_grads = hit
    ins = _inputs(u)
    if len(src_grads) != len(ins): raise GradientError(f"gradient rule for {u.op.name} gave {len(src_grads)} gradients for {len(ins)} inputs")
    for s, gs in zip(ins, src_grads):
      if gs is None or s not in live or not _carries(s) or is_zero(gs): continue
      grads[s] = add(grads.get(s), gs)
  return grads


# ---- value calls ----

def _owned_params(body: UOp) -> list[UOp]:
  """The PARAMs a CALL body owns: reached from it without entering a nested CALL's body."""
  return [u for u in graph_nodes([body]) if u.op is Ops.PARAM]


def backward_body(body: UOp, arg_dtypes: Sequence[DType], arg_sizes: Sequence[int], live: Sequence[bool] | None = None,
                  rules: PatternMatcher | None = None) -> UOp:
  """The TUPLE body of the backward call of a call with this TUPLE body and args of these dtypes and sizes: slot k < n
  is the flat gradient for arg k, slot n + i the one for the i-th BUFFER the body reads (captured(body)); PARAM
  slot n + len(captured) + j is the gradient of output j. live[j] False: output j has no gradient, so nothing flows
  back from it (its PARAM stays in place, unread): a zero gradient pushed through would make 0 * inf = NaN where the
  inlined graph has no path at all. rules: the per-op rule table (None: active_rules())."""
  live = tuple(live) if live is not None else (True,) * len(body.src)
  pm = active_rules(rules)
  # cached on the body node (nodes are immutable, so the cached backward body never goes stale); keyed by the rule
  # table itself (not its id, which a new table may reuse), so a swapped table is not hidden by bodies built with another
  key = ("gradient.backward_body", pm, tuple(arg_dtypes), tuple(arg_sizes), live)
  if (ret := body._cache.get(key)) is not None: return ret
  n, outs, caps = len(arg_dtypes), body.src, captured(body)
  first_out = n + len(caps)
  seeds = [(o, UOp.param(first_out + j, o.dtype, o.size, home_device(o)).reshape(o.shape)) for j, o in enumerate(outs)
           if o.dtype.is_float and live[j]]
  params = [p for p in _owned_params(body) if p.dtype.is_float]
  grads = backprop(seeds, params + [b for b in caps if b.dtype.is_float], pm)
  by_slot: dict[int, UOp] = {}
  for p in params:
    if (g := grads.get(p)) is not None: by_slot[p.arg.slot] = add(by_slot.get(p.arg.slot), g)
  for i, b in enumerate(caps):
    if (g := grads.get(b)) is not None: by_slot[n + i] = g
  dts, sizes = (*arg_dtypes, *(b.dtype for b in caps)), (*arg_sizes, *(b.size for b in caps))
  slots = tuple(by_slot[k] if k in by_slot and dts[k].is_float and not is_zero(by_slot[k]) else zeros((sizes[k],), dts[k]) for k in range(first_out))
  body._cache[key] = ret = UOp(Ops.TUPLE, src=slots)
  return ret


def backward_call(call: UOp, out_grads: Sequence[UOp], rules: PatternMatcher | None = None) -> UOp:
  """The backward CALL of value call `call` given one gradient per output (zeros where an output has none)."""
  body, args = call.src[0], call.src[1:]
  if len(out_grads) != len(body.src): raise GradientError(f"{len(out_grads)} output gradients for a call with {len(body.src)} outputs")
  bbody = backward_body(body, [a.dtype for a in args], [a.size for a in args], [not is_zero(g) for g in out_grads], rules)
  return UOp(Ops.CALL, src=(bbody, *call_inputs(call), *out_grads), arg=(call.arg or "call") + GRAD_SUFFIX)


def is_backward_call(u: UOp) -> bool:
  """A value CALL built by backward_call (its name ends with GRAD_SUFFIX)."""
  return is_value_call(u) and isinstance(u.arg, str) and u.arg.endswith(GRAD_SUFFIX)


# ---- the public API ----

def _as_uop(x: Any, what: str) -> UOp:
  if isinstance(x, UOp): return x
  if isinstance(getattr(x, "uop", None), UOp): return x.uop
  raise TypeError(f"{what} must be a UOp or a Tensor, not {type(x).__name__}")


def _gradients(loss: UOp, wrt: Sequence[UOp], rules: PatternMatcher | None = None) -> list[UOp]:
  if not loss.shape_ok or loss.shape != ():
    raise ValueError(f"loss must be a scalar (shape ()), got {loss.op.name} of shape {loss.shape if loss.shape_ok else '<invalid>'}")
  if not loss.dtype.is_float: raise TypeError(f"loss must be a float value, got {loss.dtype.name}")
  resolved: list[UOp] = []
  for i, t in enumerate(wrt):
    if not t.shape_ok or t.shape is None: raise ValueError(f"wrt[{i}] is {t.op.name}, which has no shape; gradients are taken w.r.t. values")
    if not t.dtype.is_float: raise TypeError(f"wrt[{i}] is {t.dtype.name}; gradients are defined for float values only")
    resolved.append(flat_storage_base(t) or t)
  grads = backprop([(loss, UOp.const(loss.dtype, 1.0))], resolved, rules)
  out = []
  for t, r in zip(wrt, resolved):
    g = grads.get(r)
    if g is None or is_zero(g): g = zeros(t.shape, t.dtype)
    out.append(g if g.shape == t.shape else g.reshape(t.shape))
  return out


def gradient(loss: Any, wrt: Sequence[Any], rules: PatternMatcher | None = None) -> list[Any]:
  """d loss / d w for each w in wrt: UOps of w's shape and dtype (Tensors when wrt holds Tensors).

  loss is a scalar float UOp or Tensor. A w that is a BUFFER seen through RESHAPEs gets the gradient of the buffer's
  data (all its uses); any other w gets the gradient of that node. A w the loss does not depend on gets zeros.
  rules: the per-op gradient rule table, pm_gradient when None (a checker holds a changed table to the same oracles)."""
  if not isinstance(wrt, (list, tuple)): raise TypeError(f"wrt must be a list of UOps or Tensors, not {type(wrt).__name__}")
  loss_u = _as_uop(loss, "loss")
  grads = _gradients(loss_u, [_as_uop(w, f"wrt[{i}]") for i, w in enumerate(wrt)], rules)
  if any(not isinstance(w, UOp) for w in wrt):
    # a Tensor (or any wrapper with .uop) gets its gradient in its own type: autograd knows no frontend
    return [g if isinstance(w, UOp) else type(w)(g) for w, g in zip(wrt, grads)]
  return grads


def gradient_sink(loss: Any, wrt: Sequence[Any]) -> UOp:
  """The gradients of gradient(loss, wrt) as one bundle: a SINK of values, in the order of wrt."""
  return UOp(Ops.SINK, src=tuple(_as_uop(g, "gradient") for g in gradient(loss, wrt)))


# ---- Tensor.backward / Tensor.grad ----

# a Tensor made from data keeps its gradient on its BUFFER node, accumulated over backward calls as tinygrad and torch
# do (assign .grad = None to clear it)
_GRAD_KEY = "gradient.tensor_grad"


def tensor_backward(loss: Any, wrt: Sequence[Any] = ()) -> None:
  """loss.backward(): accumulate d loss / d data into the .grad of every float BUFFER the loss reads outside call bodies
  (buffers a @function captured are call args, so they count), or only of the tensors in wrt when given."""
  loss_u = _as_uop(loss, "loss")
  if wrt: bufs = [flat_storage_base(_as_uop(w, "wrt")) for w in wrt]
  else: bufs = [u for u in graph_nodes([loss_u]) if u.op is Ops.BUFFER and u.dtype.is_float]
  if any(b is None for b in bufs): raise ValueError("backward(*wrt): every tensor in wrt must be made from data (a BUFFER seen through RESHAPEs)")
  for b, g in zip(bufs, _gradients(loss_u, bufs)):
    b._cache[_GRAD_KEY] = add(b._cache.get(_GRAD_KEY), g)


def tensor_grad(t: Any) -> UOp | None:
  """The accumulated gradient of a Tensor made from data, in its shape; None when no backward reached it."""
  u = _as_uop(t, "tensor")
  b = flat_storage_base(u)
  g = None if b is None else b._cache.get(_GRAD_KEY)
  if g is None: return None
  return g if g.shape == u.shape else g.reshape(u.shape)


def set_tensor_grad(t: Any, g: Any) -> None:
  """Set (or, with None, clear) the gradient a Tensor made from data accumulates into."""
  u = _as_uop(t, "tensor")
  if (b := flat_storage_base(u)) is None: raise ValueError(f"only a Tensor made from data has a .grad, not a {u.op.name}")
  if g is None: b._cache.pop(_GRAD_KEY, None)
  else:
    gu = _as_uop(g, "grad")
    if gu.size != b.size or gu.dtype is not b.dtype:
      raise ValueError(f"grad of {gu.dtype.name} {gu.shape} for a {b.dtype.name} tensor of shape {u.shape}")
    b._cache[_GRAD_KEY] = gu if gu.shape == b.shape else gu.reshape(b.shape)


__all__ = ["gradient", "gradient_sink", "backprop", "active_rules", "backward_call", "backward_body", "call_inputs", "captured", "is_backward_call",
           "pm_gradient", "GradientError", "GRAD_SUFFIX", "graph_nodes", "tensor_backward", "tensor_grad", "set_tensor_grad"]

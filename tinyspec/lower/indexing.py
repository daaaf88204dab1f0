"""View-to-index arithmetic: the rules that turn a tensor value, addressed at one index per axis, into a scalar
expression over RANGEs and LOADs of kernel PARAMs.

The transient form is the view INDEX of docs/ir.md: `INDEX(x, i0, ..., in-1)` with arg VIEW, one index per axis of the
tensor node x. It exists only while rangeify builds a kernel body: the table pm_indexing pushes it through movement and
elementwise ops (top-down) until it reaches a leaf (storage, or a realized value), where it becomes
`LOAD(INDEX(PARAM(k), flat))`. Per-axis indices stay inside [0, dim) by interval arithmetic alone (PAD clamps), so
every INDEX of a kernel is in bounds without a solver; PAD's gate only selects the value.

The target of a STORE kernel is a view INDEX of a view of the output storage. Its rules act on the STORE (tried before
its sources, top-down), so the target is an address at every step and never passes through a LOAD: through each view,
a PAD adding its validity to the STORE's gate, down to `STORE(INDEX(PARAM(0), flat), value[, gate])`.
"""
from __future__ import annotations

import math
from typing import Sequence

from tinyspec.dtype import dtypes
from tinyspec.ops.scalar import cdiv, cmod
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec.shared import VIEW_INDEX
from tinyspec.uop import GroupOp, Ops, UOp

VIEW = VIEW_INDEX  # arg of the transient multi-axis INDEX


def vindex(x: UOp, idx: Sequence[UOp]) -> UOp:
  """x addressed at one index per axis (the transient form the pm_indexing table rewrites)."""
  return UOp(Ops.INDEX, x.dtype, (x, *idx), VIEW)


def iconst(v: int) -> UOp: return UOp.const(dtypes.index, v)


# ---- index arithmetic with the trivial folds, so expressions stay small without the simplifier ----
def _isc(u: UOp, v: int | None = None) -> bool: return u.op is Ops.CONST and (v is None or u.arg == v)


def iadd(a: UOp, b: UOp | int) -> UOp:
  b = b if isinstance(b, UOp) else iconst(b)
  if _isc(a) and _isc(b): return iconst(a.arg + b.arg)
  if _isc(b, 0): return a
  if _isc(a, 0): return b
  if _isc(a): a, b = b, a  # the constant last, as the simplifier writes a sum (tinyspec.lower.sums)
  return a.alu(Ops.ADD, b)


def imul(a: UOp, b: int) -> UOp:
  if _isc(a): return iconst(a.arg * b)
  if b == 0: return iconst(0)
  return a if b == 1 else a.alu(Ops.MUL, iconst(b))


def idiv(a: UOp, b: int) -> UOp:
  if _isc(a): return iconst(cdiv(a.arg, b))  # IDIV's own meaning (tinyspec.ops.scalar), whatever the signs
  return a if b == 1 else a.alu(Ops.IDIV, iconst(b))


def imod(a: UOp, b: int) -> UOp:
  if _isc(a): return iconst(cmod(a.arg, b))
  if b == 1: return iconst(0)
  if a.vmin >= 0 and a.vmax < b: return a
  return a.alu(Ops.MOD, iconst(b))


def isub_from(c: int, a: UOp) -> UOp:
  """c - a."""
  return iconst(c - a.arg) if _isc(a) else iconst(c).alu(Ops.SUB, a)


def imax(a: UOp, b: int) -> UOp:
  if a.vmin >= b: return a
  return a.alu(Ops.MAX, iconst(b))


def imin(a: UOp, b: int) -> UOp:
  # there is no MIN op: min(a, b) = -max(-a, -b), which keeps interval bounds exact
  if a.vmax <= b: return a
  return a.alu(Ops.NEG).alu(Ops.MAX, iconst(-b)).alu(Ops.NEG)


def flatten(idx: Sequence[UOp], shape: Sequence[int]) -> UOp:
  """The row-major flat offset of a multi-index into shape (axes of size 1 contribute nothing), summed outermost axis
  first, left to right: the order the simplifier writes a sum in, so it need not rewrite every index."""
  strides, stride = [], 1
  for d in reversed(shape):
    strides.append(stride)
    stride *= d
  ret = iconst(0)
  for i, d, st in zip(idx, shape, reversed(strides)):
    if d != 1: ret = iadd(ret, imul(i, st))
  return ret


def unflatten(flat: UOp, shape: Sequence[int]) -> list[UOp]:
  """The multi-index of a flat row-major offset into shape."""
  out, stride = [], math.prod(shape)
  for j, d in enumerate(shape):
    stride //= d if d else 1
    if d == 1: out.append(iconst(0))
    elif j == 0: out.append(idiv(flat, stride))  # flat < size, so the leading quotient needs no MOD
    else: out.append(imod(idiv(flat, stride), d))
  return out


def reshape_index(idx: Sequence[UOp], out_shape: tuple, in_shape: tuple) -> list[UOp]:
  """The index into in_shape of the element at idx of its reshape to out_shape."""
  # a reshape that only adds or removes axes of size 1 maps axes one to one
  if [d for d in out_shape if d != 1] == [d for d in in_shape if d != 1]:
    moved = iter([i for i, d in zip(idx, out_shape) if d != 1])
    return [iconst(0) if d == 1 else next(moved) for d in in_shape]
  return unflatten(flatten(idx, out_shape), in_shape)


# ---- the rule functions: each takes the transient INDEX `v` (and the ctx) ----
def view_indices(v: UOp) -> tuple[UOp, ...]: return v.src[1:]


def _reshape(v: UOp) -> UOp:
  x = v.src[0].src[0]
  return vindex(x, reshape_index(view_indices(v), v.src[0].shape, x.shape))


def _permute(v: UOp) -> UOp:
  x, perm = v.src[0].src[0], v.src[0].arg
  new = [None] * len(perm)
  for i, p in enumerate(perm): new[p] = view_indices(v)[i]
  return vindex(x, new)


def _expand(v: UOp) -> UOp: return vindex(v.src[0].src[0], view_indices(v)[len(v.src[0].arg):])


def _shrink(v: UOp) -> UOp:
  return vindex(v.src[0].src[0], [iadd(i, o) for i, (o, _) in zip(view_indices(v), v.src[0].arg)])


def _flip(v: UOp) -> UOp:
  x = v.src[0].src[0]
  return vindex(x, [isub_from(d - 1, i) if f else i for i, f, d in zip(view_indices(v), v.src[0].arg, x.shape)])


def _pad_parts(v: UOp) -> tuple[list[UOp], UOp | None]:
  """The clamped index into the PAD's source and the condition (None: always) under which it is inside the source."""
  x = v.src[0].src[0]
  inner, valid = [], None
  for i, (o, n), d in zip(view_indices(v), v.src[0].arg, x.shape):
    j = iadd(i, -o)
    conds = []
    if o > 0: conds.append(iconst(o - 1).alu(Ops.CMPLT, i)); j = imax(j, 0)  # noqa: E702
    if o + d < n: conds.append(i.alu(Ops.CMPLT, iconst(o + d))); j = imin(j, d - 1)  # noqa: E702
    for c in conds: valid = c if valid is None else valid.alu(Ops.AND, c)
    inner.append(j)
  return inner, valid


def _pad(v: UOp) -> UOp:
  x = v.src[0].src[0]
  zero = UOp.const(x.dtype, 0)
  if 0 in x.shape: return zero  # nothing of x survives: the padded tensor is all zeros
  inner, valid = _pad_parts(v)
  return vindex(x, inner) if valid is None else valid.where(vindex(x, inner), zero)


def _elementwise(v: UOp) -> UOp:
  e = v.src[0]
  return e.replace(src=tuple(vindex(s, view_indices(v)) for s in e.src))


def _leaf_address(v: UOp, ctx) -> UOp | None:
  """INDEX(PARAM, flat) of the view INDEX v when its tensor is a leaf of the kernel; None when it is not one."""
  x = v.src[0]
  if (p := ctx.leaves.get(x)) is None: return None
  return UOp(Ops.INDEX, p.dtype, (p, flatten(view_indices(v), x.shape)))


def _leaf(v: UOp, ctx) -> UOp | None:
  return None if (a := _leaf_address(v, ctx)) is None else a.load()


def _gate_into_load(g: UOp, ld: UOp, z: UOp) -> UOp | None:
  if len(ld.src) == 1: return ld.replace(src=(ld.src[0], z, g))
  if len(ld.src) == 3 and _isc(ld.src[1], 0): return ld.replace(src=(ld.src[0], ld.src[1], g.alu(Ops.AND, ld.src[2])))
  return None


# ---- the target of a STORE kernel: rules on the STORE, so the target stays an address ----
_TARGET_VIEWS = {Ops.RESHAPE: _reshape, Ops.PERMUTE: _permute, Ops.EXPAND: _expand, Ops.SHRINK: _shrink, Ops.FLIP: _flip}


def _and(a: UOp | None, b: UOp | None) -> UOp | None:
  return b if a is None else a if b is None else a.alu(Ops.AND, b)


def _target_through_view(st: UOp, v: UOp) -> UOp | None:
  if (fn := _TARGET_VIEWS.get(v.src[0].op)) is None: return None
  return st.replace(src=(fn(v), *st.src[1:]))


def _target_through_pad(st: UOp, v: UOp) -> UOp:
  x = v.src[0].src[0]
  if 0 in x.shape:  # no element of the target is storage: the STORE writes nothing
    return st.replace(src=(vindex(x, [iconst(0)] * len(x.shape)), st.src[1], UOp.const(dtypes.bool, False)))
  inner, valid = _pad_parts(v)
  gate = _and(st.src[2] if len(st.src) == 3 else None, valid)
  return st.replace(src=(vindex(x, inner), st.src[1], *(() if gate is None else (gate,))))


def _target_leaf(st: UOp, v: UOp, ctx) -> UOp | None:
  return None if (a := _leaf_address(v, ctx)) is None else st.replace(src=(a, *st.src[1:]))


_V = dict(op=Ops.INDEX, arg=VIEW, allow_any_len=True)


def _on(ops) -> UPat: return UPat(**_V, src=(UPat(ops),), name="v")


def _target(ops=None) -> UPat:
  return UPat(Ops.STORE, src=(UPat(**_V, src=(UPat(ops),), name="v"),), allow_any_len=True, name="st")


pm_indexing = PatternMatcher([
  ("store_target_leaf", _target(), _target_leaf),
  ("store_target_through_view", _target(tuple(_TARGET_VIEWS)), _target_through_view),
  ("store_target_through_pad", _target(Ops.PAD), _target_through_pad),
  # a leaf (storage, or a value another kernel realizes) is loaded: it must win over every rule below
  ("index_leaf_load", UPat(**_V, src=(UPat(),), name="v"), _leaf),
  ("index_through_reshape", _on(Ops.RESHAPE), _reshape),
  ("index_through_permute", _on(Ops.PERMUTE), _permute),
  ("index_through_expand", _on(Ops.EXPAND), _expand),
  ("index_through_shrink", _on(Ops.SHRINK), _shrink),
  ("index_through_flip", _on(Ops.FLIP), _flip),
  ("index_through_pad", _on(Ops.PAD), _pad),
  ("index_through_elementwise", _on(GroupOp.Elementwise), _elementwise),
  ("index_through_detach", _on(Ops.DETACH), lambda v: vindex(v.src[0].src[0], view_indices(v))),
  ("index_of_const", _on(Ops.CONST), lambda v: v.src[0]),
  # a kernel reads a variable as its DEFINE_VAR; the CALL that runs the kernel binds it (rangeify passes the BIND as an arg)
  ("index_of_variable", _on(GroupOp.Variable), lambda v: v.src[0] if v.src[0].op is Ops.DEFINE_VAR else v.src[0].src[0]),
  ("pad_gate_into_load", UPat(Ops.WHERE, src=(UPat.var("g"), UPat(Ops.LOAD, name="ld"), UPat(Ops.CONST, name="z", pred=lambda z: not z.arg))),
   _gate_into_load),
], "pm_indexing")

"""Fused accepts: for the common ops of a stage, one function that decides in a single pass that a node is legal.

The rules of a stage are the spec; checking a node through them is a dispatch loop over several rule functions, a
well-formedness check and a shape derivation. Most nodes the checker sees are legal, so for the frequent ops a fused
test runs first. It reads the verdicts of the node's sources (already checked: the walk is post-order) and returns
  True   the node is legal and so is its whole subgraph, which holds no BIND (its shape is cached on it, as the rules
         would derive it),
  False  a source's subgraph is not clean (so neither is the node's),
  None   it cannot tell: the rules decide, and write the messages. A source that is clean but holds a BIND (verdict
         engine.HOLDS_BIND) is such a case: the rules decide the node, so a verdict True always means BIND-free.
A fused test only ever accepts what every rule of the op accepts: it is a conjunction of sufficient conditions, each
no weaker than the rule it stands for, and it declares the exact rule tuple it covers. When a stage's table holds
other rules for that op (a rule added later), the fused test is not used. tests/test_spec_fast.py compares the two
paths node by node on random legal and broken graphs.

The walk (engine._run_frame) runs the tests _single and _binary make written out in its loop, not by a call (plan_for
says which form each op's test has): what each test accepts is the same either way, and tests/test_spec_fast.py checks
the walk against the rules alone.

TENSOR's binary and WHERE tests stand for tensor.one_device too: the same node twice agrees with itself (x + x costs
nothing), other sources agree when their devices are equal or one has none. A device is read where it is cheap: the
walk passes it up a chain of single-source nodes (a view's device is its source's), a binary's test caches its own,
and device_of derives one down a chain of single-source nodes to a cached one; only where none is cached is it
derived in full (UOp.device).

A source with a True verdict is well formed (its local findings, which start with well-formedness, were empty), so a
source of a non-void dtype is a value (not a void op) with a known dtype, and a dtype shared with it by identity is
known too.
"""
from __future__ import annotations

import itertools
import math
from operator import itemgetter
from typing import Callable

from tinyspec.dtype import dtypes
from tinyspec.spec.base import Ctx, Rule, Stage, Table
from tinyspec.ops.classes import reduce_accepts
from tinyspec.spec.shared import (alu_dtype_class, alu_dtype_match, bind_one_value, cast_rule, dtype_passthrough, reduce_dtype, value_source,
                                  where_cond)
from tinyspec.spec.kernel import STORAGE_OPS, scalar_values
from tinyspec.spec.kernel import image_param
from tinyspec.spec.program import no_index_dtype
from tinyspec.spec.tensor import elementwise_shape, movement_arg, one_device, reduce_axes, reduce_form, sink_entry
from tinyspec.spec.tensor import image_buffer as tensor_image_buffer
from tinyspec.uop import AddrSpace, BufferArg, GroupOp, Malformed, Ops, OWN_DEVICE, ParamArg, UOp

FastFn = Callable[[UOp, str], "bool | None"]

# how the walk (engine.clean) runs an op's fused test: the forms of _single and _binary it runs inline (RESHAPE and PERMUTE,
# _single's most frequent, with the shape written out too), any other by a call
# (numbered so that one comparison, form <= SINGLE, tells the forms of _single)
RESHAPE, PERMUTE, SINGLE, BINARY, CALL = 1, 2, 3, 4, 5
NO_PLAN = (6, None, None)

_BOOL, _VOID = dtypes.bool, dtypes.void
_VALUE_DTYPES = tuple(d for d in dtypes.all if d is not _VOID)
_VALUE_IDS = frozenset(id(d) for d in _VALUE_DTYPES)
_REDUCIBLE = frozenset(id(d) for d in _VALUE_DTYPES if reduce_accepts(d))  # reduce.dtype, by id
# CONST args: (python type, min, max) per dtype; ints are range-checked, bool and float only type-checked
# (small float CONSTs have none: wf.arg checks their value is one of the dtype's)
_CONST_FORM = {id(d): (bool, None, None) if d.kind == "b" else (float, None, None) if d.kind == "f" else (int, d.min, d.max)
               for d in _VALUE_DTYPES if not d.is_small_float}
_REDUCE_OPS = (Ops.ADD, Ops.MAX, Ops.MUL)


def _taken(op: Ops) -> frozenset[int]:
  """The dtypes (by id) alu.dtype_class lets op compute on, asked of the rule itself on one node per value dtype."""
  out = set()
  for d in _VALUE_DTYPES:
    c = UOp(Ops.CONST, d, (), False if d.kind == "b" else 0.0 if d.kind == "f" else 0)
    n = 3 if op is Ops.WHERE else 1 if op in GroupOp.Unary else 2
    srcs = (UOp(Ops.CONST, _BOOL, (), False),) + (c,) * 2 if op is Ops.WHERE else (c,) * n
    u = UOp(op, _BOOL if op in GroupOp.Comparison else d, srcs)
    if alu_dtype_class.fn(u, _PROBE) is None: out.add(id(d))
  return frozenset(out)


_PROBE = Ctx("probe", Stage.TENSOR, Table())


# ---- elementwise ----

UNKNOWN = object()  # a device not known yet (none cached on the node)
MIXED = object()    # what same_device gives sources on two devices


def device_of(u: UOp) -> object:
  """u.device, cheaply above a node whose device is cached: down a chain of ops of one source (views, unary ALUs, casts,
  REDUCE...), whose device is their source's, as the device rule derives it; each node of the chain gets it cached. Only
  what the chain ends on, when nothing below it has a device cached yet, is derived in full (UOp.device)."""
  d = u._cache.get("device", UNKNOWN)
  if d is UNKNOWN:
    chain = []
    while len(u.src) == 1 and u.op not in OWN_DEVICE:  # storage has no source; a COPY's device is its arg, a GETTUPLE's its body output's
      chain.append(u)
      u = u.src[0]
      if (d := u._cache.get("device", UNKNOWN)) is not UNKNOWN: break
    d = u.device if d is UNKNOWN or isinstance(d, Malformed) else d
    for x in chain: x._cache["device"] = d
  return None if isinstance(d, Malformed) else d


def same_device(u: UOp, a: UOp, b: UOp, da: object = UNKNOWN, db: object = UNKNOWN) -> object:
  """tensor.one_device of two sources: u's device (the first source's that has one, as the device rule derives it, cached
  on u for the tests of its users) when a and b are on one device or one of them has none, else MIXED. da and db are
  their devices when the caller knows them."""
  if da is UNKNOWN: da = device_of(a)
  if db is UNKNOWN: db = device_of(b)
  if da is None: d = db
  elif db is None or da == db: d = da
  else: return MIXED
  u._cache["device"] = d
  return d


def _one_device3(u: UOp, c: UOp, a: UOp, b: UOp) -> bool:
  """tensor.one_device for WHERE's three sources (u's device cached, as same_device does)."""
  ds = [d for d in (device_of(c), device_of(a), device_of(b)) if d is not None]
  for d in ds[1:]:
    if d != ds[0]: return False
  u._cache["device"] = ds[0] if ds else None
  return True


def _binary(kinds: frozenset[int], cmp: bool, devices: bool = False) -> FastFn:
  """A binary ALU's test; devices: its sources are held to one device too (TENSOR's tensor.one_device: a kernel's values
  need no such check). The walk runs inline only the form with the device check, TENSOR's."""

  def fn(u: UOp, k: str) -> bool | None:
    a, b = u.src
    ac, bc = a._cache, b._cache
    va, vb = ac[k], bc[k]
    if va is not True or vb is not True: return None if va and vb else False
    d = a.dtype
    if b.dtype is not d or u.arg is not None or id(d) not in kinds or u.dtype is not (_BOOL if cmp else d): return None
    sh = ac.get("shape")
    if type(sh) is not tuple or (sh is not (sb := bc.get("shape")) and sh != sb): return None
    if devices and a is not b and same_device(u, a, b) is MIXED: return None
    u._cache["shape"] = sh
    return True
  if devices: fn.form = (BINARY, kinds, cmp)  # type: ignore[attr-defined]
  return fn


def _where(kinds: frozenset[int], devices: bool = False) -> FastFn:
  def fn(u: UOp, k: str) -> bool | None:
    c, a, b = u.src
    cc, ac, bc = c._cache, a._cache, b._cache
    vc, va, vb = cc[k], ac[k], bc[k]
    if vc is not True or va is not True or vb is not True: return None if vc and va and vb else False
    d = a.dtype
    if c.dtype is not _BOOL or b.dtype is not d or u.dtype is not d or u.arg is not None or id(d) not in kinds: return None
    sh = ac.get("shape")
    if type(sh) is not tuple or sh != bc.get("shape") or sh != cc.get("shape"): return None
    if devices and not _one_device3(u, c, a, b): return None
    u._cache["shape"] = sh
    return True
  return fn


def _cast(u: UOp, k: str) -> bool | None:
  (s,) = u.src
  sc = s._cache
  if (v := sc[k]) is not True: return None if v else False
  d, sd = u.dtype, s.dtype
  if u.arg is not None or id(d) not in _VALUE_IDS or sd.kind == "v": return None
  if u.op is Ops.BITCAST and (d.kind in "bx" or sd.kind in "bx" or d.itemsize != sd.itemsize): return None
  sh = sc.get("shape")
  if type(sh) is not tuple: return None
  u._cache["shape"] = sh
  return True


# ---- one value source of the same dtype: views, REDUCE, CONTIGUOUS, DETACH, COPY, and unary ALUs ----

def _single(shape_of: Callable[[object, tuple], "tuple | None"], kinds: frozenset[int] = _VALUE_IDS) -> FastFn:
  """A fused test for an op of one source whose dtype it keeps; shape_of(arg, source shape) is the node's shape, or None unless
  the arg is well formed and fits (for views: node.arg, tensor.movement_arg and the derived shape, in one pass over the arg)."""
  def fn(u: UOp, k: str) -> bool | None:
    (s,) = u.src
    sc = s._cache
    if (v := sc[k]) is not True: return None if v else False
    d = s.dtype
    if u.dtype is not d or id(d) not in kinds: return None
    sh = sc.get("shape")
    if type(sh) is not tuple or (out := shape_of(u.arg, sh)) is None: return None
    u._cache["shape"] = out
    return True
  fn.form = (SINGLE, shape_of, kinds)  # type: ignore[attr-defined]
  return fn


def _copy(u: UOp, k: str) -> bool | None:
  """COPY's test, _single's called rather than run inline by the walk: the walk passes a node's device up a chain of
  single-source ops as its source's, and a COPY's device is its arg."""
  return _copy_single(u, k)


def _no_arg(a: object, sh: tuple) -> tuple | None:
  return sh if a is None else None


def _device_arg(a: object, sh: tuple) -> tuple | None:
  return sh if type(a) is str else None


def _reduce(a: object, sh: tuple) -> tuple | None:
  if type(a) is not tuple or len(a) != 2: return None
  op, n = a
  if op not in _REDUCE_OPS or type(n) is not int or not 0 <= n <= len(sh): return None
  return sh[n:]


def _reshape(a: object, sh: tuple) -> tuple | None:
  if type(a) is not tuple: return None
  for x in a:
    if type(x) is not int or x < 0: return None
  return a if math.prod(a) == math.prod(sh) else None


# the permutations of up to 6 axes, each with the getter that applies it to a shape (an itemgetter of one item returns the
# item, not a tuple: tuple stands in for ranks 0 and 1, where the permutation is the identity)
_PERMS = {p: itemgetter(*p) if len(p) > 1 else tuple for r in range(7) for p in itertools.permutations(range(r))}


def _permute(a: object, sh: tuple) -> tuple | None:
  if type(a) is not tuple or len(a) != len(sh): return None
  get = _PERMS.get(a)
  if get is None: return _permute_any(a, sh)
  for x in a:
    if type(x) is not int: return None  # (True, False) and (1.0, 0) are equal to (1, 0), and are no axis numbers
  return get(sh)


def _permute_any(a: tuple, sh: tuple) -> tuple | None:
  r = len(sh)
  seen = 0
  for x in a:
    if type(x) is not int or not 0 <= x < r: return None
    seen |= 1 << x
  return tuple(map(sh.__getitem__, a)) if seen == (1 << r) - 1 else None


def _expand(a: object, sh: tuple) -> tuple | None:
  if type(a) is not tuple: return None
  for x in a:
    if type(x) is not int or x < 0: return None
  return a + sh


def _flip(a: object, sh: tuple) -> tuple | None:
  if type(a) is not tuple or len(a) != len(sh): return None
  for x in a:
    if type(x) is not bool: return None
  return sh


def _window(pad: bool) -> Callable[[object, tuple], "tuple | None"]:
  def shape_of(a: object, sh: tuple) -> tuple | None:
    if type(a) is not tuple or len(a) != len(sh): return None
    out = []
    for p, d in zip(a, sh):
      if type(p) is not tuple or len(p) != 2: return None
      o, n = p
      if type(o) is not int or type(n) is not int or o < 0: return None
      if (o + d > n) if pad else (n < 0 or o + n > d): return None
      out.append(n)
    return tuple(out)
  return shape_of


_copy_single = _single(_device_arg)
_VIEW_SHAPES = {Ops.RESHAPE: _reshape, Ops.PERMUTE: _permute, Ops.EXPAND: _expand, Ops.FLIP: _flip, Ops.PAD: _window(True),
                Ops.SHRINK: _window(False)}


# ---- the rest of TENSOR's frequent ops ----

def _const(u: UOp, k: str) -> bool | None:
  if u.src: return None
  form = _CONST_FORM.get(id(u.dtype))
  if form is None: return None
  t, lo, hi = form
  a = u.arg
  if type(a) is not t or (lo is not None and not lo <= a <= hi): return None
  u._cache["shape"] = ()
  return True


def _buffer(u: UOp, k: str) -> bool | None:
  a = u.arg
  if u.src or type(a) is not BufferArg or id(u.dtype) not in _VALUE_IDS: return None
  n = a.size
  if type(a.id) is not int or type(n) is not int or n < 0 or type(a.device) is not str or type(a.addrspace) is not AddrSpace: return None
  if a.image is not None: return None  # an image BUFFER: tensor.image_buffer decides
  u._cache["shape"] = (n,)
  return True


def _sink(u: UOp, k: str) -> bool | None:
  """A SINK of values: every entry clean with a value dtype (so, being well formed, a value), and no BIND under any (so
  bind.one_value has no two BINDs to compare)."""
  if u.dtype is not _VOID or u.arg is not None: return None
  for s in u.src:
    if (v := s._cache[k]) is not True: return None if v else False
    if s.dtype is _VOID: return None
  return True


# ---- per stage: op -> (the exact rules the fused test covers, the test) ----

def _tensor() -> dict[Ops, tuple[tuple[Rule, ...], FastFn]]:
  alu = (value_source, alu_dtype_match, alu_dtype_class, elementwise_shape)
  out: dict[Ops, tuple[tuple[Rule, ...], FastFn]] = {}
  for op in GroupOp.Unary: out[op] = (alu, _single(_no_arg, _taken(op)))
  for op in GroupOp.Binary: out[op] = ((*alu, one_device), _binary(_taken(op), op in GroupOp.Comparison, devices=True))
  out[Ops.WHERE] = ((*alu, one_device, where_cond), _where(_taken(Ops.WHERE), devices=True))
  for op in GroupOp.Cast: out[op] = ((value_source, cast_rule, elementwise_shape), _cast)
  for op in GroupOp.Movement: out[op] = ((value_source, movement_arg, dtype_passthrough), _single(_VIEW_SHAPES[op]))
  out[Ops.REDUCE] = ((value_source, reduce_form, reduce_axes, dtype_passthrough, reduce_dtype), _single(_reduce, _REDUCIBLE))
  for op in (Ops.CONTIGUOUS, Ops.DETACH): out[op] = ((value_source, dtype_passthrough), _single(_no_arg))
  out[Ops.COPY] = ((value_source, dtype_passthrough), _copy)
  out[Ops.CONST] = ((), _const)
  out[Ops.BUFFER] = ((tensor_image_buffer,), _buffer)
  out[Ops.SINK] = ((sink_entry, bind_one_value), _sink)
  return out


def _param(u: UOp, k: str) -> bool | None:
  a = u.arg
  if u.src or type(a) is not ParamArg or id(u.dtype) not in _VALUE_IDS: return None
  n, slot = a.size, a.slot
  if type(slot) is not int or slot < 0 or type(n) is not int or n < 0 or type(a.device) is not str or type(a.addrspace) is not AddrSpace:
    return None
  if a.image is not None: return None  # an image PARAM: kernel.image_param decides
  u._cache["shape"] = (n,)
  return True


def _scalar_srcs(fn: FastFn) -> FastFn:
  """fn, for a kernel: no source is storage (kernel.scalar_values, which rejects only storage ops used as values)."""
  def scalar(u: UOp, k: str) -> bool | None:
    for s in u.src:
      if s.op in STORAGE_OPS: return None
    return fn(u, k)
  return scalar


def _concrete(fn: FastFn) -> FastFn:
  """fn, for a program: the node's dtype is not index (program.no_index_dtype)."""
  def concrete(u: UOp, k: str) -> bool | None:
    return None if u.dtype is dtypes.index else fn(u, k)
  return concrete


def _kernel() -> dict[Ops, tuple[tuple[Rule, ...], FastFn]]:
  """KERNEL's scalar ALUs, casts and sources. SHL and SHR also have kernel.shift_count (a bounds question), so their rules
  differ from the declared tuple and fused_for leaves them to the rules."""
  alu = (value_source, alu_dtype_match, alu_dtype_class, scalar_values)
  out: dict[Ops, tuple[tuple[Rule, ...], FastFn]] = {}
  for op in GroupOp.Unary: out[op] = (alu, _scalar_srcs(_single(_no_arg, _taken(op))))
  for op in GroupOp.Binary: out[op] = (alu, _scalar_srcs(_binary(_taken(op), op in GroupOp.Comparison)))
  out[Ops.WHERE] = ((*alu, where_cond), _scalar_srcs(_where(_taken(Ops.WHERE))))
  for op in GroupOp.Cast: out[op] = ((value_source, cast_rule, scalar_values), _scalar_srcs(_cast))
  out[Ops.CONST] = ((), _const)
  out[Ops.PARAM] = ((image_param,), _param)
  return out


def _program(kernel: dict[Ops, tuple[tuple[Rule, ...], FastFn]]) -> dict[Ops, tuple[tuple[Rule, ...], FastFn]]:
  """PROGRAM's: the kernel's, each with program.no_index_dtype, the rule PROGRAM adds to every op."""
  out = {op: ((*rules, no_index_dtype), _concrete(fn)) for op, (rules, fn) in kernel.items()}
  out[Ops.PARAM] = ((image_param, no_index_dtype), _concrete(_param))
  return out


_KERNEL = _kernel()
FUSED: dict[Stage, dict[Ops, tuple[tuple[Rule, ...], FastFn]]] = {Stage.TENSOR: _tensor(), Stage.KERNEL: _KERNEL, Stage.PROGRAM: _program(_KERNEL)}
# a verdict True says no BIND is under the node (engine.clean): a fused accept never decides a BIND
assert all(Ops.BIND not in f for f in FUSED.values())


def plan_for(fused: list[FastFn | None]) -> list[tuple]:
  """Per op value, how the walk runs the op's fused test: (SINGLE, shape_of, kinds) and (BINARY, kinds, is_comparison) are
  the tests _single and _binary make, which the walk runs inline, with no call per node; (RESHAPE, _reshape, kinds) and
  (PERMUTE, _PERMS, kinds) are _single's with the shape of _reshape / _permute inline too; (CALL, fn, None) calls fn;
  NO_PLAN leaves the node to the rules."""
  return [_plan(fn) for fn in fused]


def _plan(fn: FastFn | None) -> tuple:
  if fn is None: return NO_PLAN
  form = getattr(fn, "form", None)
  if form is None: return (CALL, fn, None)
  if form[0] == SINGLE and form[1] is _reshape: return (RESHAPE, _reshape, form[2])
  if form[0] == SINGLE and form[1] is _permute: return (PERMUTE, _PERMS, form[2])
  return form


def fused_for(cx: Ctx | None) -> list[FastFn | None]:
  """The fused tests usable in cx (none for None), indexed by op value: those whose covered rules are exactly cx's rules for the op."""
  out: list[FastFn | None] = [None] * (max(op.value for op in Ops) + 1)
  if cx is None: return out
  for op, (rules, fn) in FUSED.get(cx.stage, {}).items():
    if cx.table.get(op, ()) == rules: out[op.value] = fn
  return out

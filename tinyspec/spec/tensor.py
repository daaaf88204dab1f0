"""The TENSOR stage: tensor graphs of values, views, value calls and assigns."""
from __future__ import annotations

import math

from tinyspec.dtype import dtypes
from tinyspec.spec.base import Clause, Code, Ctx, Finding, In, forbid, rule, safe_repr
from tinyspec.spec.devices import MIXED, one_device3, same_device
from tinyspec.spec.gradient import backward_slots
from tinyspec.spec.kgraph import one_device as kernel_call_device
from tinyspec.spec.shared import (VALUE_IDS, alu_dtype_class, alu_dtype_match, arity, bind_form, bind_in_bounds, bind_one_value, cast_rule,
                                  device_str, dtype_passthrough, find_paths, group_effects, image_storage_rule, is_effect, var_dtype,
                                  is_value, param_device, param_dtype, param_outside, param_size, param_slot, shape_ok, shape_str,
                                  srcs_shape_ok, storage_base, reduce_dtype, value_source, what, where_cond)
from tinyspec.spec.table import table
from tinyspec.uop import GroupOp, Ops, UOp, body_kind, device_conflict, is_precompiled_call, is_value_call, walk

T_STORAGE = frozenset({Ops.BUFFER, Ops.PARAM, Ops.AFTER, Ops.CONTIGUOUS})
T_STORAGE_WORDS = "storage (BUFFER, PARAM, AFTER, CONTIGUOUS, or a view of one)"


_BANNED = GroupOp.RangeForm | GroupOp.Program  # reported by their own rules wherever they stand


def tensor_storage(u: UOp) -> bool:
  """BUFFER, PARAM, AFTER, CONTIGUOUS, or a chain of views of one: what can be stored into and ordered with AFTER."""
  while u.op in GroupOp.Movement and u.src: u = u.src[0]
  return u.op in T_STORAGE


no_range_ops = forbid("tensor.no_range_ops", "No range-form ops (RANGE, END, INDEX, LOAD, SPECIAL, ATOMIC) in a tensor graph; they appear only in "
                      "kernel bodies.", "in a tensor graph; at TENSOR range-form ops (RANGE, END, INDEX, LOAD, SPECIAL, ATOMIC) do not exist yet, "
                      "only in kernel bodies")
no_program_ops = forbid("tensor.no_program_ops", "No LINEAR, PROGRAM or SOURCE in a tensor graph except as (part of) the body of an opaque CALL.",
                        "outside a CALL body; at TENSOR program ops appear only as the body of an opaque CALL")


# what it asks is what the shape rule of a view asks (uop._movement_shape), which the frame of every view derives: nothing to add
@rule("tensor.movement_arg", "A view's arg fits its source's shape: RESHAPE keeps the element count, PERMUTE is a permutation of the axes, "
      "PAD and SHRINK give one (offset, size) per axis inside bounds, FLIP one bool per axis.", fast=lambda op: ())
def movement_arg(u: UOp, cx: Ctx) -> str | None:
  s = u.src[0]
  if not shape_ok(s) or s.shape is None: return None
  shp, a, op = s.shape, u.arg, u.op
  if op is Ops.RESHAPE:
    if math.prod(a) != math.prod(shp):
      return f"RESHAPE from {shp} to {a} changes the element count ({math.prod(shp)} -> {math.prod(a)}); at TENSOR RESHAPE keeps the count"
    return None
  if op is Ops.EXPAND: return None
  if op is Ops.PERMUTE:
    if sorted(a) != list(range(len(shp))):
      return f"PERMUTE {a} of shape {shp} is not a permutation of its {len(shp)} axes; at TENSOR PERMUTE reorders every axis once"
    return None
  if len(a) != len(shp):
    return f"{op.name} arg {a} has {len(a)} entries for shape {shp} of {len(shp)} axes; at TENSOR {op.name} gives one entry per axis"
  if op is Ops.FLIP: return None
  for ax, ((o, n), d) in enumerate(zip(a, shp)):
    if op is Ops.PAD and (o < 0 or o + d > n):
      return (f"PAD axis {ax} places {d} elements at offset {o} inside size {n}; at TENSOR PAD needs 0 <= offset and "
              f"offset + dim <= size")
    if op is Ops.SHRINK and (o < 0 or n < 0 or o + n > d):
      return f"SHRINK axis {ax} keeps [{o}, {o + n}) of {d}; at TENSOR SHRINK keeps a window inside the axis"
  return None


@rule("tensor.elementwise_shape", "The sources of an elementwise op have identical shapes (no implicit broadcasting: EXPAND first).",
      fast=lambda op: tuple(Code.of(f"sh{i} is sh0 or sh{i} == sh0") for i in range(1, arity(op))))
def elementwise_shape(u: UOp, cx: Ctx) -> str | None:
  if not srcs_shape_ok(u): return None
  shapes = [s.shape for s in u.src]
  if all(x == shapes[0] for x in shapes): return None
  return f"{u.op.name} of shapes {', '.join(map(str, shapes))}; at TENSOR elementwise sources have identical shapes (EXPAND/RESHAPE first)"


def _fast_one_device(op: Ops) -> tuple[Clause, ...] | None:
  if op is Ops.WHERE: return (Code.of("one_device3(u, s0, s1, s2)", one_device3=one_device3),)
  if op not in GroupOp.Binary: return None
  # the same node twice agrees with itself (x + x costs nothing); the node's device is learnt, for the users above it
  return (Code.of("""dv = dv0 if s0 is s1 else same_device(u, s0, s1, dv0, dv1)
if dv is not MIXED:
  $""", same_device=same_device, MIXED=MIXED),)


@rule("tensor.one_device", "The sources of an op that combines values (a binary ALU, WHERE, a STORE's target, value and gate) are on "
      "one device, those that have one (a CONST has none): COPY moves a value to another device first. An AFTER may wait for effects "
      "on any device, and a CALL's args may be on several (its body, checked on its own, is held to this rule).", fast=_fast_one_device)
def one_device(u: UOp, cx: Ctx) -> str | None:
  if (clash := device_conflict(u.src)) is None: return None
  return (f"{u.op.name} combines values on {device_str(clash[0])} and {device_str(clash[1])} (COPY one first); at {cx.sname} the sources of "
          f"{'a STORE' if u.op is Ops.STORE else 'an elementwise op'} are on one device")


@rule("tensor.reduce_form", "At TENSOR a REDUCE is in tensor form: one source and arg (op, n).", fast=lambda op: (Code.of("type(a) is tuple"),))
def reduce_form(u: UOp, cx: Ctx) -> str | None:
  if isinstance(u.arg, tuple): return None
  return f"REDUCE in range form (arg {safe_repr(u.arg)}, {len(u.src) - 1} range(s)); at TENSOR a REDUCE has arg (op, n) and reduces its first n axes"


@rule("tensor.reduce_axes", "A tensor REDUCE (op, n) reduces at most as many axes as its source has.",
      fast=lambda op: (Code.of("type(a) is tuple and a[1] <= len(sh0)"),))
def reduce_axes(u: UOp, cx: Ctx) -> str | None:
  if not isinstance(u.arg, tuple): return None
  s = u.src[0]
  if not s.shape_ok or s.shape is None: return None
  n = u.arg[1]
  if n <= len(s.shape): return None
  return f"REDUCE of the first {n} axes of shape {s.shape}; at TENSOR n is at most the number of axes ({len(s.shape)})"


@rule("tensor.call_body", "A CALL's body is a TUPLE (a value call), a SINK of tensor-level effects (a precompiled call) or an opaque body: a "
      "kernel SINK, a nested kernel graph, LINEAR, PROGRAM or COPY.")
def call_body(u: UOp, cx: Ctx) -> str | None:
  b = u.src[0]
  if body_kind(b) != "bad": return None
  return (f"CALL body is {what(b)}; at TENSOR a CALL body is a TUPLE (value call), a SINK of effects (precompiled call) or a kernel SINK, "
          "LINEAR, PROGRAM or COPY (opaque call)")


# ---- precompiled calls: CALL(SINK(effects...), args...), the body storing tensor values into the call's PARAMs ----

def _param_under(u: UOp) -> UOp | None:
  """The PARAM under a chain of views and AFTERs (what a precompiled body stores into or returns), or None."""
  return storage_base(u, GroupOp.Movement | {Ops.AFTER})


def _body_stores(body: UOp) -> list[UOp]:
  """The STOREs of a precompiled body, not entering nested call bodies (their PARAMs are their own call's)."""
  return [x for x in walk((body,), lambda x: x.src[1:] if x.op is Ops.CALL else x.src) if x.op is Ops.STORE]


def written_slots(body: UOp) -> set[int]:
  """The PARAM slots a precompiled body stores into: its outputs (every other slot is an input)."""
  return {p.arg.slot for s in _body_stores(body) if (p := _param_under(s.src[0])) is not None and p.op is Ops.PARAM}


@rule("tensor.precompiled_entry", "An entry of a precompiled call's body (a SINK of tensor-level effects) is an effect (STORE, GROUP, an "
      "opaque CALL) or the call's storage (a PARAM, or an AFTER or view of one): the body gives nothing back but what it stores into its "
      "PARAMs.")
def precompiled_entry(u: UOp, cx: Ctx) -> list[Finding] | None:
  if not is_precompiled_call(u): return None
  out = [((0, i), e, "tensor.precompiled_entry", f"entry {i} of a precompiled body is {what(e)}; at TENSOR a precompiled body holds effects "
          "and its PARAMs (its results are what it stores into the call's storage)")
         for i, e in enumerate(u.src[0].src) if not is_effect(e) and ((p := _param_under(e)) is None or p.op is not Ops.PARAM)]
  return out or None


@rule("tensor.precompiled_store_target", "Every STORE of a precompiled call's body (outside nested call bodies) writes into a PARAM of the "
      "call, a view of one or an AFTER of one: the call's results go only to the storage it is given.")
def precompiled_store_target(u: UOp, cx: Ctx) -> list[Finding] | None:
  if not is_precompiled_call(u): return None
  body = u.src[0]
  bad = [s for s in _body_stores(body) if s.src and ((p := _param_under(s.src[0])) is None or p.op is not Ops.PARAM)]
  if not bad: return None
  paths = find_paths(body, set(bad))
  return [((0, *paths.get(s, ())), s, "tensor.precompiled_store_target", f"a precompiled body stores into {what(s.src[0])}; at TENSOR a "
           "precompiled body stores only into the PARAMs of its call (or views of them)") for s in bad]


@rule("tensor.precompiled_arg_storage", "The args of a precompiled call are storage (BUFFER, PARAM, AFTER, CONTIGUOUS, or a view of one): "
      "it reads and writes them in place, as a kernel does; or variables (a BIND, or a DEFINE_VAR passed on), which its body reads as "
      "DEFINE_VARs, as a kernel's does.")
def precompiled_arg_storage(u: UOp, cx: Ctx) -> list[Finding] | None:
  if not is_precompiled_call(u): return None
  out = [((i,), a, "tensor.precompiled_arg_storage", f"arg {i - 1} of a precompiled CALL is {what(a)}; at TENSOR a precompiled call "
          f"takes {T_STORAGE_WORDS} or a variable (CONTIGUOUS realizes a value)") for i, a in enumerate(u.src) if i > 0 and is_value(a) and
         not tensor_storage(a) and a.op not in GroupOp.Variable]
  return out or None


_FLAT = frozenset({Ops.AFTER, Ops.RESHAPE})  # a RESHAPE of storage holds its elements in their order: it is that storage


@rule("tensor.precompiled_output", "An arg whose PARAM a precompiled call's body stores into is flat storage: a BUFFER, a PARAM, or an "
      "AFTER or RESHAPE of one (never another view, never CONTIGUOUS); the call writes it in place and the caller reads it as "
      "AFTER(storage, CALL).")
def precompiled_output(u: UOp, cx: Ctx) -> list[Finding] | None:
  if not is_precompiled_call(u): return None
  args = u.src[1:]
  out = [((k + 1,), args[k], "tensor.precompiled_output", f"arg {k} of a precompiled CALL is {what(args[k])} but its body stores into PARAM "
          f"slot {k}; at TENSOR an output arg is flat storage (BUFFER, PARAM, or an AFTER or RESHAPE of one) written in place")
         for k in sorted(written_slots(u.src[0])) if k < len(args) and is_value(args[k]) and tensor_storage(args[k])
         and storage_base(args[k], _FLAT) is None]
  return out or None


@rule("tensor.call_arg_value", "The args of a CALL (src[1:]) are values.")
def call_arg_value(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), a, "tensor.call_arg_value", f"CALL arg {i - 1} is {what(a)}; at TENSOR call args are values")
         for i, a in enumerate(u.src) if i > 0 and not is_value(a) and a.op not in _BANNED]
  return out or None


@rule("tensor.tuple_values", "A TUPLE holds values (each with a shape and a non-void dtype).")
def tuple_values(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), s, "tensor.tuple_values", f"TUPLE entry {i} is {what(s)}; at TENSOR a TUPLE returns values")
         for i, s in enumerate(u.src) if not is_value(s) and s.op not in _BANNED]
  return out or None


def _tuple_of(g: UOp) -> UOp | None:
  s = g.src[0]
  if s.op is Ops.TUPLE: return s
  if is_value_call(s): return s.src[0]
  return None


@rule("tensor.gettuple_source", "GETTUPLE reads a TUPLE or a CALL whose body is a TUPLE, nothing else.")
def gettuple_source(u: UOp, cx: Ctx) -> str | None:
  if _tuple_of(u) is not None: return None
  s = u.src[0]
  extra = f" with a {s.src[0].op.name} body" if s.op is Ops.CALL and s.src else ""
  return f"GETTUPLE of {what(s)}{extra}; at TENSOR GETTUPLE reads an output of a TUPLE or of a CALL of a TUPLE"


@rule("tensor.gettuple_index", "The index of a GETTUPLE is in range of its TUPLE: 0 <= i < number of outputs.")
def gettuple_index(u: UOp, cx: Ctx) -> str | None:
  t = _tuple_of(u)
  if t is None or 0 <= u.arg < len(t.src): return None
  return f"GETTUPLE index {u.arg} of a TUPLE of {len(t.src)} output(s); at TENSOR the index is 0..{len(t.src) - 1}"


@rule("tensor.gettuple_dtype", "A GETTUPLE has the dtype of the TUPLE element it reads.")
def gettuple_dtype(u: UOp, cx: Ctx) -> str | None:
  t = _tuple_of(u)
  if t is None or not 0 <= u.arg < len(t.src): return None
  e = t.src[u.arg]
  if e.dtype == u.dtype or not is_value(e): return None  # a non-value element is tensor.tuple_values' finding
  return f"GETTUPLE {u.arg} is {u.dtype.name} but element {u.arg} is {e.dtype.name}; at TENSOR GETTUPLE has the dtype of its element"


@rule("tensor.store_target", "A STORE's target is storage: BUFFER, PARAM, AFTER, CONTIGUOUS, or a view of one.")
def store_target(u: UOp, cx: Ctx) -> str | None:
  t = u.src[0]
  if tensor_storage(t): return None
  return f"STORE into {what(t)}; at TENSOR a STORE target is {T_STORAGE_WORDS}"


@rule("tensor.store_shape", "A STORE's target and value have equal shapes.")
def store_shape(u: UOp, cx: Ctx) -> str | None:
  t, v = u.src[0], u.src[1]
  if not (t.shape_ok and v.shape_ok) or v.shape is None: return None
  if t.shape == v.shape: return None
  return f"STORE of shape {v.shape} into a target of shape {t.shape}; at TENSOR target and value shapes are equal"


@rule("tensor.store_dtype", "A STORE's value has the dtype of its target.")
def store_dtype(u: UOp, cx: Ctx) -> str | None:
  t, v = u.src[0], u.src[1]
  if t.dtype == v.dtype: return None
  return f"STORE of {v.dtype.name} into a {t.dtype.name} target; at TENSOR the value has the target's dtype"


@rule("tensor.store_gate", "The gate of a tensor STORE, when present, is bool with the shape of the value.")
def store_gate(u: UOp, cx: Ctx) -> str | None:
  if len(u.src) < 3: return None
  g, v = u.src[2], u.src[1]
  if g.dtype is not dtypes.bool:
    return f"STORE gate is {g.dtype.name}; at TENSOR a gate is bool"
  if g.shape_ok and v.shape_ok and g.shape != v.shape:
    return f"STORE gate has shape {shape_str(g)} and value {shape_str(v)}; at TENSOR the gate has the value's shape"
  return None


@rule("tensor.after_storage", "AFTER orders storage: its first source is BUFFER, PARAM, AFTER, CONTIGUOUS, or a view of one; never a computed value.")
def after_storage(u: UOp, cx: Ctx) -> str | None:
  s = u.src[0]
  if tensor_storage(s): return None
  return f"AFTER on {what(s)}; at TENSOR AFTER is on {T_STORAGE_WORDS}"


@rule("tensor.after_deps", "The dependencies of an AFTER (src[1:]) are effects: STORE, GROUP, or an opaque CALL.")
def after_deps(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), d, "tensor.after_deps", f"AFTER dependency {i - 1} is {what(d)}; at TENSOR AFTER waits for effects (STORE, GROUP, opaque CALL)")
         for i, d in enumerate(u.src) if i > 0 and not is_effect(d)]
  return out or None


# of each entry (d: its dtype): a clean entry of a value dtype is a value
@rule("tensor.sink_entry", "A tensor SINK holds values and effects (not TUPLEs, value CALLs or other containers).",
      fast=lambda op: (In("d", VALUE_IDS),))
def sink_entry(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), s, "tensor.sink_entry", f"SINK entry {i} is {what(s)}; at TENSOR a SINK holds values and effects")
         for i, s in enumerate(u.src) if not (is_effect(s) or is_value(s) or s.op in _BANNED)]
  return out or None


@rule("tensor.multi_shards", "A MULTI (a tensor over several devices) holds values of its dtype, one per device, on distinct devices "
      "named by a string each (a shard is a single-device value, never another MULTI); with an axis the shards agree off that axis "
      "(their sizes along it are the split), replicated (arg None) they have one shape.")
def multi_shards(u: UOp, cx: Ctx) -> str | None:
  devs = [s.device for s in u.src]
  if (bad := next((i for i, d in enumerate(devs) if not isinstance(d, str)), None)) is not None:
    return (f"MULTI shard {bad} is {what(u.src[bad])} on {safe_repr(devs[bad])}; at {cx.sname} each shard of a MULTI is a value on "
            "one device (COPY it to one)")
  if len(set(devs)) != len(devs): return f"MULTI shards on devices {devs}; at {cx.sname} the shards of a MULTI are on distinct devices"
  if (bad := next((i for i, s in enumerate(u.src) if s.dtype != u.dtype), None)) is not None:
    return f"MULTI {u.dtype.name} with shard {bad} of {u.src[bad].dtype.name}; at {cx.sname} the shards have the MULTI's dtype"
  if not srcs_shape_ok(u) or shape_ok(u): return None
  shapes = [s.shape for s in u.src]
  form = "replicas have one shape" if u.arg is None else f"shards agree off axis {u.arg}, an axis of theirs"
  return f"MULTI arg {u.arg!r} over shards of shapes {shapes}; at {cx.sname} the {form}"


image_buffer = image_storage_rule("tensor.image_buffer", "A BUFFER may carry an image arg (BufferArg.image, (height, width)): it is then GLOBAL "
                                  "float32 or float16 storage of height * width * 4 elements, both dims in 1..IMAGE_MAX_DIM (8192), element i "
                                  "being channel i % 4 of pixel i // 4 (ops.image.image_coords); its value is its flat elements all the same.")


_VIEW = (value_source, movement_arg, dtype_passthrough)
_ALU = (value_source, alu_dtype_match, alu_dtype_class, elementwise_shape)
# a unary op or a cast has one source, which agrees with itself: one_device is for the ops of two sources or more
_COMBINE = (*_ALU, one_device)

TENSOR_TABLE = table(
  (Ops.PARAM, [param_outside]),
  (GroupOp.Movement, _VIEW),
  (GroupOp.Unary, _ALU), (GroupOp.Binary, _COMBINE), (Ops.WHERE, (*_COMBINE, where_cond)),
  (GroupOp.Cast, (value_source, cast_rule, elementwise_shape)),
  (Ops.REDUCE, (value_source, reduce_form, reduce_axes, dtype_passthrough, reduce_dtype)),
  (Ops.CALL, (call_body, call_arg_value, param_slot, param_size, param_dtype, backward_slots, precompiled_entry, precompiled_store_target,
              precompiled_arg_storage, precompiled_output, kernel_call_device, param_device)),
  (Ops.TUPLE, (tuple_values,)),
  (Ops.GETTUPLE, (gettuple_source, gettuple_index, gettuple_dtype)),
  (Ops.STORE, (store_target, store_shape, store_dtype, store_gate, one_device)),
  (Ops.AFTER, (after_storage, after_deps, dtype_passthrough)),
  (Ops.GROUP, (group_effects,)), (Ops.SINK, (sink_entry, bind_one_value)),
  (Ops.DEFINE_VAR, (var_dtype,)), (Ops.BIND, (bind_form, bind_in_bounds)),
  ((Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY), (value_source, dtype_passthrough)),
  (Ops.MULTI, (value_source, multi_shards)),
  (GroupOp.RangeForm, (no_range_ops,)), (GroupOp.Program, (no_program_ops,)),
  (Ops.BUFFER, (image_buffer,)), (Ops.CONST, ()),
)

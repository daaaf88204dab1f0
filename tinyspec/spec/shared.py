"""Rules shared by several stages: node well-formedness, elementwise typing, GROUP, PARAM binding; and helpers."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tinyspec.dtype import DType, dtypes, round_float
from tinyspec.ops.classes import accepts, class_name, class_summary, dtype_error, reduce_accepts, var_accepts
from tinyspec.ops.image import image_dims_error
from tinyspec.spec.base import Clause, Code, Ctx, Finding, In, Rule, Same, Stage, declare, link_path, rule, safe_repr
from tinyspec.uop import (Malformed, AddrSpace, AxisType, BufferArg, GroupOp, Ops, ParamArg, RangeArg, SourceArg, UOp, VarArg, fold,
                          home_device, is_kernel_call, is_precompiled_call, is_value_call, union_of)

KNOWN_DTYPES = frozenset(dtypes.all)
VOID_OPS = frozenset({Ops.CALL, Ops.TUPLE, Ops.STORE, Ops.ATOMIC, Ops.GROUP, Ops.SINK, Ops.END, Ops.LINEAR, Ops.PROGRAM, Ops.SOURCE})
STORAGE = GroupOp.Storage
# arg of the view INDEX(x, i0, ..., in-1): element (i0, ...) of the tensor value x (docs/ir.md, "rangeify's view INDEX")
VIEW_INDEX = "view"


def is_view_index(u: UOp) -> bool:
  return u.op is Ops.INDEX and type(u.arg) is str and u.arg == VIEW_INDEX

# ---- describing nodes in messages ----

def _a(word: str) -> str:
  return ("an " if word[:1] in "AEIOU" else "a ") + word


def device_str(d: Any) -> str:
  """A device for a message: its name, or the repr of another kind of device (a tuple of names for a sharded value)."""
  return d if isinstance(d, str) else safe_repr(d, 60)


# Host-visible memory: storage on a host device lives in the host's own memory (NPY: the numpy array a tinygrad Tensor
# was made from), which a kernel running in that memory addresses directly: tinygrad 0.14's CPU kernels, and those of its
# PYTHON emulator, read NPY buffers with no COPY. DISK is no host memory: tinygrad copies from it into a real buffer first.
HOST_DEVICES = frozenset({"NPY"})
HOST_FAMILIES = frozenset({"CPU", "PYTHON"})


def device_family(d: object) -> object:
  """The family of a device: "CPU" of "CPU", "CPU:0" and "CPU:1" (a device that is no name is its own family)."""
  return d.split(":", 1)[0] if isinstance(d, str) else d


def is_host(d: object) -> bool:
  return isinstance(d, str) and d in HOST_DEVICES


def reads_host(d: object) -> bool:
  """A kernel on device d may take host memory among its args."""
  return isinstance(fam := device_family(d), str) and fam in HOST_FAMILIES


def kernel_device_clash(devs: list[tuple[Any, Any]]) -> tuple[tuple[Any, Any], tuple[Any, Any], bool] | None:
  """Of (label, device) pairs of the storage one kernel touches, the first two that put it on two devices, and whether
  the second is host memory a kernel of the first's family cannot read; None when one device runs it."""
  own = [(k, d) for k, d in devs if not is_host(d)]
  for k, d in own[1:]:
    if d != own[0][1]: return own[0], (k, d), False  # == whatever the devices are: a sharded value's device is a tuple of names
  if own and not reads_host(own[0][1]) and (host := next((kd for kd in devs if is_host(kd[1])), None)) is not None:
    return own[0], host, True
  return None


def what(u: Any) -> str:
  """A short noun phrase for a node: 'a PERMUTE view', 'BUFFER storage', 'an ADD value', 'a STORE effect'."""
  if not isinstance(u, UOp): return f"{_a(type(u).__name__)} (not a UOp)"
  op = u.op
  if not isinstance(op, Ops): return f"a node of unknown op {safe_repr(op, 40)}"
  if op in GroupOp.Movement: return f"{_a(op.name)} view"
  if op is Ops.IMAGE: return "an IMAGE view"
  if op in STORAGE: return f"{op.name} storage"
  if op in GroupOp.Variable: return f"{_a(op.name)} variable"
  if op is Ops.AFTER: return f"an AFTER of {what(u.src[0])}" if u.src else "an AFTER"
  if is_effect(u): return f"{_a(op.name)} effect"
  if op in GroupOp.Elementwise or op in (Ops.CONST, Ops.REDUCE, Ops.LOAD, Ops.GETTUPLE): return f"{_a(op.name)} value"
  return _a(op.name)


def is_effect(u: UOp) -> bool:
  """STORE, ATOMIC, GROUP, END, and opaque (non-TUPLE body) CALLs: what a GROUP may hold."""
  op = u.op
  if op in GroupOp.Effect: return True
  return op is Ops.CALL and len(u.src) > 0 and not is_value_call(u)


def is_value(u: UOp) -> bool:
  """A node with a value: not a void op and a non-void dtype (whether its shape holds up is checked at the node)."""
  return u.op not in VOID_OPS and u.dtype is not dtypes.void


def storage_base(u: UOp, through: frozenset = frozenset({Ops.AFTER, Ops.IMAGE})) -> UOp | None:
  """The BUFFER or PARAM under a chain of `through` ops (first source), or None. By default through AFTERs and IMAGE
  views: an image in a kernel is its PARAM's storage seen as pixels, addressed by the same flat index."""
  while True:
    if u.op in STORAGE: return u
    if u.op not in through or not u.src: return None
    u = u.src[0]


def is_kgraph_sink(u: UOp) -> bool:
  """A SINK whose entries are all storage (a kernel graph) rather than effects (a kernel)."""
  return u.op is Ops.SINK and len(u.src) > 0 and all(s.op in (Ops.AFTER, Ops.BUFFER, Ops.PARAM) for s in u.src)


def shape_str(u: UOp) -> str:
  return str(u.shape) if u.shape_ok else "<invalid>"


_NO = object()


def shape_ok(u: UOp) -> bool:
  """u.shape_ok, reading the cached verdict directly when there is one (this is on the hot path of every check)."""
  r = u._cache.get("shape", _NO)
  if r is _NO: return u.shape_ok
  return type(r) is not Malformed


def srcs_shape_ok(u: UOp) -> bool:
  for s in u.src:
    if not shape_ok(s): return False
  return True


# ---- well-formedness: the same at every stage, checked before any stage rule ----

declare("node.op", "The op is a member of Ops.")
declare("node.src_type", "Every source is a UOp.")
declare("node.dtype", "The dtype is one of the dtypes of tinyspec.dtype (bool, the ints, the floats, void, index).")
declare("node.dtype_void", "Effects and containers (CALL TUPLE STORE ATOMIC GROUP SINK END LINEAR PROGRAM SOURCE) are void; every other op "
        "has a value dtype.")
declare("node.src_count", "The number of sources fits the op (e.g. 2 for a binary ALU, 1 or 3 for LOAD).")
declare("node.arg", "The arg has the form of the op (None for ALUs, a shape tuple for RESHAPE, ParamArg for PARAM, ...).")
declare("node.shape", "The shape rule of the op accepts the sources (reported at the first node whose sources all have shapes).")
declare("node.malformed", "A rule could not be evaluated on the node; the node is malformed in a way no rule names.")

_ANY = (0, None)
SRC_COUNT: dict[Ops, tuple[int, int | None]] = {
  **{op: (0, 0) for op in (Ops.CONST, Ops.PARAM, Ops.BUFFER, Ops.SOURCE, Ops.DEFINE_VAR)}, Ops.BIND: (2, 2),
  **{op: (1, 1) for op in GroupOp.Movement | GroupOp.Unary | GroupOp.Cast},
  **{op: (1, 1) for op in (Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY, Ops.RANGE, Ops.SPECIAL, Ops.GETTUPLE)},
  **{op: (2, 2) for op in GroupOp.Binary}, Ops.INDEX: (1, None), Ops.WHERE: (3, 3),
  Ops.REDUCE: (1, None), Ops.CALL: (1, None), Ops.TUPLE: _ANY, Ops.STORE: (2, 3), Ops.ATOMIC: (2, 3), Ops.AFTER: (2, None),
  Ops.GROUP: _ANY, Ops.SINK: _ANY, Ops.END: (2, None), Ops.LOAD: (1, 3), Ops.LINEAR: _ANY, Ops.PROGRAM: (2, 3),
  Ops.MULTI: (2, None), Ops.IMAGE: (1, 1),
}


def _is_int(x: Any) -> bool: return isinstance(x, int) and not isinstance(x, bool)
def _ints(a: Any) -> bool: return isinstance(a, tuple) and all(_is_int(x) for x in a)


def _const_arg(u: UOp) -> str | None:
  dt, a = u.dtype, u.arg
  if not isinstance(dt, DType): return None
  if dt.kind == "b": ok = isinstance(a, bool)
  elif dt.kind in "iux": ok = _is_int(a) and dt.min <= a <= dt.max
  elif dt.kind == "f": ok = isinstance(a, float)
  else: ok = False
  if not ok:
    return (f"CONST {dt.name} holds {safe_repr(a)} ({type(a).__name__}); a CONST holds a Python scalar of its dtype's kind, "
            "already wrapped into its range")
  if dt.is_small_float and not _is_value_of(a, dt):
    # a literal between two values of a small float would be rounded differently by each backend's parser
    return f"CONST {dt.name} holds {a!r}, which is no {dt.name} value; a small float CONST holds a value of its dtype (UOp.const rounds it)"
  return None


def _is_value_of(a: float, dt: DType) -> bool:
  """a is a value of dt: rounding keeps it, the sign of a zero too (the fnuz fp8 dtypes have no -0.0)."""
  r = float(round_float(np.float64(a), dt))
  return (r == a and math.copysign(1.0, r) == math.copysign(1.0, a)) or (math.isnan(r) and math.isnan(a))


def _dims(a: Any) -> bool: return type(a) is tuple and len(a) == 2 and _ints(a)


def _param_ok(a: Any) -> bool:
  return isinstance(a, ParamArg) and _is_int(a.slot) and a.slot >= 0 and _is_int(a.size) and a.size >= 0 and isinstance(a.device, str) \
    and isinstance(a.addrspace, AddrSpace) and (a.image is None or _dims(a.image))


def _buffer_ok(a: Any) -> bool:
  return isinstance(a, BufferArg) and _is_int(a.id) and _is_int(a.size) and a.size >= 0 and isinstance(a.device, str) \
    and isinstance(a.addrspace, AddrSpace) and (a.image is None or _dims(a.image))


def image_storage_error(u: UOp, dims: Any) -> str | None:
  """Why storage u (a PARAM or BUFFER) cannot be an image of dims (height, width), or None: GLOBAL storage whose size and
  dtype an image of those dims holds (ops.image.image_dims_error)."""
  if getattr(u.arg, "addrspace", None) is not AddrSpace.GLOBAL: return f"{u.op.name} is kernel-local, an image is GLOBAL storage"
  return image_dims_error(dims, u.arg.size, u.dtype)


def image_storage_rule(id: str, doc: str) -> Rule:
  """Register a rule that storage (a BUFFER or PARAM) whose arg carries image dims is storage an image of them holds
  (image_storage_error): the one check of an image arg, at each stage that names it. Storage with no image passes."""
  def fn(u: UOp, cx: Ctx) -> str | None:
    dims = getattr(u.arg, "image", None)
    if dims is None or (why := image_storage_error(u, dims)) is None: return None
    name = f"BUFFER {u.arg.id}" if u.op is Ops.BUFFER else f"{u.op.name} slot {getattr(u.arg, 'slot', '?')}"
    return f"{name} with image {safe_repr(dims)}: {why}; at {cx.sname} an image {u.op.name} is float32 or float16 storage an image of its dims holds"
  return rule(id, doc, fast=lambda op: (Code.of("a.image is None"),))(fn)


def _var_arg_ok(a: Any) -> bool:
  return isinstance(a, VarArg) and isinstance(a.name, str) and a.name.isidentifier() and a.name.isascii() and _is_int(a.min) \
    and _is_int(a.max) and a.min <= a.max


def _reduce_arg(u: UOp) -> str | None:
  a = u.arg
  if isinstance(a, tuple):
    if len(a) == 2 and a[0] in GroupOp.ReduceOps and _is_int(a[1]) and a[1] >= 0:
      return None if len(u.src) == 1 else f"tensor-form REDUCE has {len(u.src)} sources; a tensor-form REDUCE reduces one source"
  elif a in GroupOp.ReduceOps: return None
  return f"REDUCE arg {safe_repr(a)} is malformed; REDUCE takes (op, n) with op in ADD/MAX/MUL and n >= 0 (tensor form) or the op alone (range form)"


def _none_arg(u: UOp) -> str | None:
  return None if u.arg is None else f"{u.op.name} carries arg {safe_repr(u.arg)}; {u.op.name} takes no arg (None)"


def _arg(pred: Callable[[Any], bool], want: str) -> Callable[[UOp], str | None]:
  return lambda u: None if pred(u.arg) else f"{u.op.name} arg {safe_repr(u.arg)} is malformed; {u.op.name} takes {want}"


_sizes = lambda a: _ints(a) and all(x >= 0 for x in a)
_pairs = lambda a: isinstance(a, tuple) and all(isinstance(p, tuple) and len(p) == 2 and _ints(p) for p in a)
_ARG_RULES: dict[Ops, Callable[[UOp], str | None]] = {
  Ops.CONST: _const_arg, Ops.REDUCE: _reduce_arg,
  Ops.PARAM: _arg(_param_ok, "ParamArg(slot >= 0, size >= 0, device str, addrspace AddrSpace, image None or (height, width) ints)"),
  Ops.BUFFER: _arg(_buffer_ok, "BufferArg(id int, size >= 0, device str, addrspace AddrSpace, image None or (height, width) ints)"),
  Ops.IMAGE: _arg(_dims, "the image's (height, width): two ints"),
  Ops.RESHAPE: _arg(_sizes, "a shape: a tuple of ints >= 0"), Ops.EXPAND: _arg(_sizes, "the prepended dims: a tuple of ints >= 0"),
  Ops.PERMUTE: _arg(_ints, "a tuple of axis numbers"), Ops.PAD: _arg(_pairs, "a tuple of (offset, size) int pairs"),
  Ops.SHRINK: _arg(_pairs, "a tuple of (offset, size) int pairs"),
  Ops.FLIP: _arg(lambda a: isinstance(a, tuple) and all(isinstance(x, bool) for x in a), "a tuple of bools, one per axis"),
  Ops.CALL: _arg(lambda a: a is None or isinstance(a, str), "a name (str) or None"),
  Ops.GETTUPLE: _arg(_is_int, "an int index"), Ops.COPY: _arg(lambda a: isinstance(a, str), "a device name (str)"),
  Ops.SPECIAL: _arg(lambda a: isinstance(a, str), "a name (str)"),
  Ops.INDEX: _arg(lambda a: a is None or (type(a) is str and a == VIEW_INDEX), f"None (an address) or {VIEW_INDEX!r} (a view of a tensor value)"),
  Ops.PROGRAM: _arg(lambda a: a is None or isinstance(a, str), "a name (str)"),
  Ops.RANGE: _arg(lambda a: isinstance(a, RangeArg) and _is_int(a.axis) and isinstance(a.kind, AxisType), "RangeArg(axis int, kind AxisType)"),
  Ops.SOURCE: _arg(lambda a: isinstance(a, SourceArg) and all(isinstance(x, str) for x in (a.lang, a.name, a.text)), "SourceArg(lang, name, text)"),
  Ops.ATOMIC: _arg(lambda a: isinstance(a, Ops) and a in GroupOp.AtomicOps, "its combining op, ADD or MAX"),
  Ops.MULTI: _arg(lambda a: a is None or (_is_int(a) and a >= 0), "the sharded axis (an int >= 0) or None (replicated)"),
  Ops.DEFINE_VAR: _arg(_var_arg_ok, "VarArg(name, min, max): an ASCII identifier and int bounds with min <= max"),
}


_KNOWN_IDS = frozenset(id(d) for d in dtypes.all)
VALUE_IDS = frozenset(id(d) for d in dtypes.all if d is not dtypes.void)  # the value dtypes, by id (the fast predicates test identity)
# per op: (min sources, max sources or None, arg check or None for "arg is None", is void)
_WF: dict[Ops, tuple[int, int | None, Callable[[UOp], str | None] | None, bool]] = {
  op: (*SRC_COUNT.get(op, _ANY), _ARG_RULES.get(op), op in VOID_OPS) for op in Ops}


def wellformed(u: UOp) -> tuple[Finding, ...]:
  """The well-formedness findings of u (empty when well formed), cached on the node: they do not depend on the stage."""
  c = u._cache
  ret = c.get("spec:wf")
  if ret is None: c["spec:wf"] = ret = _wellformed(u)
  return ret


def _known_dtype(dt: Any) -> bool:
  if id(dt) in _KNOWN_IDS: return True
  # an equal copy of a known dtype (e.g. built field by field) means the same type
  return isinstance(dt, DType) and dtypes.by_name.get(dt.name) == dt


def _wellformed(u: UOp) -> tuple[Finding, ...]:
  op, src = u.op, u.src
  spec = _WF.get(op) if isinstance(op, Ops) else None
  if spec is None: return (((), u, "node.op", f"op {safe_repr(op, 40)} is not one of Ops; every node's op is a member of Ops"),)
  for i, s in enumerate(src):
    if not isinstance(s, UOp):
      return (((), u, "node.src_type", f"{op.name} source {i} is {what(s)}; every source of a node is a UOp"),)
  lo, hi, argfn, void = spec
  if op is Ops.INDEX and u.arg is None: lo = hi = 2  # the address form; the view form takes one index per axis
  dt = u.dtype
  n = len(src)
  if (dt is dtypes.void) is void and lo <= n and (hi is None or n <= hi) and not (n == 2 and op is Ops.LOAD) \
     and (u.arg is None if argfn is None else argfn(u) is None) and id(dt) in _KNOWN_IDS:
    return ()  # the common case, decided without building messages
  out: list[Finding] = []
  dt_ok = _known_dtype(dt)
  if not dt_ok:
    out.append(((), u, "node.dtype", f"{op.name} has dtype {safe_repr(dt, 60)}, which is not a tinyspec dtype; dtypes are "
                f"{', '.join(dtypes.by_name)}"))
  elif void != (dt == dtypes.void):
    out.append(((), u, "node.dtype_void", f"{op.name} has dtype {dt.name}; " +
                ("it is an effect or container and is void" if void else "it is a value and needs a non-void dtype")))
  if n < lo or (hi is not None and n > hi) or (op is Ops.LOAD and n == 2):
    want = "1 or 3" if op is Ops.LOAD else (str(lo) if lo == hi else (f"{lo} or more" if hi is None else f"{lo} to {hi}"))
    out.append(((), u, "node.src_count", f"{op.name} has {n} source(s); {op.name} takes {want}"))
  if dt_ok or op is not Ops.CONST:
    msg = (argfn or _none_arg)(u)
    if msg is not None: out.append(((), u, "node.arg", msg))
  return tuple(out)


# ---- values and dtypes shared by every stage that has values ----

def arity(op: Ops) -> int:
  """The number of sources of an elementwise op, or of an op of one value source (a view, REDUCE, CONTIGUOUS...)."""
  return 3 if op is Ops.WHERE else 2 if op in GroupOp.Binary else 1


def _fast_values(op: Ops) -> tuple[Clause, ...]:
  # a clean source of a value dtype (by identity) is a value: being well formed, it is no void op
  return tuple(In(f"d{i}", VALUE_IDS) for i in range(1 if op is Ops.REDUCE else arity(op)))


@rule("value.source", "Ops that compute on values (ALUs, views, REDUCE, CONTIGUOUS, DETACH, COPY) take values, never effects or containers.",
      fast=_fast_values)
def value_source(u: UOp, cx: Ctx) -> str | None:
  srcs = u.src[:1] if u.op is Ops.REDUCE else u.src
  void = dtypes.void
  for i, s in enumerate(srcs):
    if s.op in VOID_OPS or s.dtype is void:
      return f"{u.op.name} source {i} is {what(s)}; at {cx.sname} {u.op.name} computes on values"
  return None


@rule("value.dtype_passthrough", "Views, REDUCE, AFTER, CONTIGUOUS, DETACH and COPY have the dtype of their (first) source.",
      fast=lambda op: (Same("dt", "d0"),))
def dtype_passthrough(u: UOp, cx: Ctx) -> str | None:
  s = u.src[0]
  if u.dtype is s.dtype or u.dtype == s.dtype: return None
  return f"{u.op.name} has dtype {u.dtype.name} but its source is {s.dtype.name}; at {cx.sname} {u.op.name} keeps its source's dtype"


def _fast_match(op: Ops) -> tuple[Clause, ...]:
  first = 1 if op is Ops.WHERE else 0
  out = [Same(f"d{i}", f"d{first}") for i in range(first + 1, arity(op))]
  return (*out, Same("dt", "BOOL_DT", (("BOOL_DT", dtypes.bool),)) if op in GroupOp.Comparison else Same("dt", f"d{first}"))


@rule("alu.dtype_match", "ALU sources share one dtype (WHERE: its two value sources); the result has that dtype, bool for comparisons.",
      fast=_fast_match)
def alu_dtype_match(u: UOp, cx: Ctx) -> str | None:
  op = u.op
  vals = u.src[1:] if op is Ops.WHERE else u.src
  dts = [s.dtype for s in vals]
  d0 = dts[0]
  if any(s.dtype is dtypes.void for s in u.src): return None  # value.source reports it
  if all(d is d0 for d in dts) and u.dtype is (dtypes.bool if op in GroupOp.Comparison else d0): return None
  if any(d != d0 for d in dts):
    return f"{op.name} mixes dtypes {', '.join(d.name for d in dts)}; at {cx.sname} the sources of {op.name} have one dtype (CAST first)"
  want = dtypes.bool if op in GroupOp.Comparison else dts[0]
  if u.dtype != want:
    return f"{op.name} of {dts[0].name} has dtype {u.dtype.name}; at {cx.sname} it gives {want.name}"
  return None


def taken(op: Ops) -> frozenset[int]:
  """The dtypes (by id) alu.dtype_class lets op compute on, asked of the rule itself on one node per value dtype."""
  out = set()
  for d in dtypes.all:
    if d is dtypes.void: continue
    c = UOp(Ops.CONST, d, (), False if d.kind == "b" else 0.0 if d.kind == "f" else 0)
    srcs = (UOp(Ops.CONST, dtypes.bool, (), False), c, c) if op is Ops.WHERE else (c,) * arity(op)
    if alu_dtype_class.fn(UOp(op, dtypes.bool if op in GroupOp.Comparison else d, srcs), _PROBE) is None: out.add(id(d))
  return frozenset(out)


@rule("alu.dtype_class", f"Each ALU computes on the dtype class the op registry (tinyspec.ops.classes) gives it: {class_summary()}.",
      fast=lambda op: (In(f"d{arity(op) - 1}", taken(op)),))
def alu_dtype_class(u: UOp, cx: Ctx) -> str | None:
  op, dt = u.op, u.src[-1].dtype
  if accepts(op, dt) or dt is dtypes.void: return None  # a void source is value.source's to report
  if dt.storage_only: return f"{dtype_error(op, dt)} (at {cx.sname})"
  return f"{op.name} on {dt.name}; at {cx.sname} {op.name} takes {class_name(op)}"


_PROBE = Ctx("probe", Stage.TENSOR, {})


@rule("reduce.dtype", "A REDUCE combines values of any value dtype but the fp8 dtypes, which are storage only.",
      fast=lambda op: (In("dt", frozenset(id(d) for d in dtypes.all if reduce_accepts(d))),))
def reduce_dtype(u: UOp, cx: Ctx) -> str | None:
  dt = u.dtype
  if reduce_accepts(dt) or not isinstance(dt, DType) or dt.kind == "v": return None  # void is value.source's to report
  return f"REDUCE on {dt.name}; at {cx.sname} {dt.name} is storage only: cast it to a wider float before reducing"


@rule("alu.where_cond", "The condition of WHERE (source 0) is bool.", fast=lambda op: (Same("d0", "BOOL_DT", (("BOOL_DT", dtypes.bool),)),))
def where_cond(u: UOp, cx: Ctx) -> str | None:
  c = u.src[0]
  return None if c.dtype is dtypes.bool else f"WHERE condition is {c.dtype.name}; at {cx.sname} a WHERE condition is bool"


def _fast_cast(op: Ops) -> tuple[Clause, ...]:
  if op is not Ops.BITCAST: return ()
  ids = frozenset(id(d) for d in dtypes.all if accepts(Ops.BITCAST, d))
  return In("dt", ids), In("d0", ids), Code.of("dt.itemsize == d0.itemsize")


@rule("alu.cast", "CAST and BITCAST convert to and from value dtypes; BITCAST keeps the itemsize and takes neither bool nor index.",
      fast=_fast_cast)
def cast_rule(u: UOp, cx: Ctx) -> str | None:
  s = u.src[0]
  if u.op is Ops.BITCAST:
    bad = [d.name for d in (s.dtype, u.dtype) if not accepts(Ops.BITCAST, d)]
    if bad: return f"BITCAST involves {bad[0]}; at {cx.sname} BITCAST reinterprets the bits of fixed-width ints and floats"
    if s.dtype.itemsize != u.dtype.itemsize:
      return (f"BITCAST from {s.dtype.name} ({s.dtype.itemsize} bytes) to {u.dtype.name} ({u.dtype.itemsize} bytes); "
              f"at {cx.sname} BITCAST keeps the itemsize")
  return None


@rule("group.effects", "GROUP holds only effects (STORE, ATOMIC, GROUP, END, or an opaque CALL), never values.")
def group_effects(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), s, "group.effects", f"GROUP entry {i} is {what(s)}; at {cx.sname} a GROUP holds only effects (STORE, ATOMIC, GROUP, END, opaque CALL)"
          " and values go in a SINK") for i, s in enumerate(u.src) if not is_effect(s)]
  return out or None


# ---- bounded variables: shared by every stage ----

@rule("var.dtype", "A DEFINE_VAR is an integer scalar (index or a fixed-width int) whose bounds [min, max] fit its dtype.")
def var_dtype(u: UOp, cx: Ctx) -> str | None:
  a, dt = u.arg, u.dtype
  if not var_accepts(dt): return f"DEFINE_VAR {a.name} is {dt.name}; at {cx.sname} a variable is an integer scalar (index or a fixed-width int)"
  if dt.min <= a.min and a.max <= dt.max: return None
  return f"DEFINE_VAR {a.name} has bounds [{a.min}, {a.max}], outside {dt.name}; at {cx.sname} a variable's bounds fit its dtype"


@rule("bind.form", "BIND(DEFINE_VAR, CONST): a variable bound to a constant of its dtype; the BIND has the variable's dtype.")
def bind_form(u: UOp, cx: Ctx) -> str | None:
  v, c = u.src
  if v.op is not Ops.DEFINE_VAR: return f"BIND of {what(v)}; at {cx.sname} a BIND binds a DEFINE_VAR"
  if c.op is not Ops.CONST: return f"BIND of {v.arg.name} to {what(c)}; at {cx.sname} a variable is bound to a CONST"
  if c.dtype is not v.dtype or u.dtype is not v.dtype:
    return (f"BIND of {v.dtype.name} variable {v.arg.name} is {u.dtype.name} to a {c.dtype.name} CONST; at {cx.sname} the BIND and its "
            "value have the variable's dtype")
  return None


@rule("bind.in_bounds", "The value a BIND gives its variable lies within the variable's bounds [min, max].")
def bind_in_bounds(u: UOp, cx: Ctx) -> str | None:
  v, c = u.src
  if v.op is not Ops.DEFINE_VAR or c.op is not Ops.CONST or v.arg.min <= c.arg <= v.arg.max: return None
  return f"BIND of {v.arg.name} to {c.arg}, outside its bounds [{v.arg.min}, {v.arg.max}]; at {cx.sname} a binding holds the variable's bounds"


def _binds(u: UOp) -> frozenset:
  """The BINDs reachable from u (call bodies included). Cached."""
  return fold(u, "spec:binds", lambda x: [s for s in x.src if isinstance(s, UOp)],
              lambda x, srcs: frozenset((x,)) if x.op is Ops.BIND else union_of(srcs, "spec:binds"))


# a fused check runs only on sources whose verdict is True, which says no BIND is under them: there is nothing to compare
@rule("bind.one_value", "One graph binds a variable (by name) to one value: two BINDs of one name with different values contradict.",
      fast=lambda op: ())
def bind_one_value(u: UOp, cx: Ctx) -> list[Finding] | None:
  binds = _binds(u)
  if len(binds) < 2: return None
  first: dict[str, UOp] = {}
  bad = []
  for b in sorted(binds, key=lambda b: (str(getattr(b.src[0].arg, "name", "")), repr(b.src[1].arg))):
    if b.src[0].op is not Ops.DEFINE_VAR or b.src[1].op is not Ops.CONST: continue
    name = b.src[0].arg.name
    f = first.setdefault(name, b)
    if f.src[1].arg != b.src[1].arg: bad.append((b, f))
  if not bad: return None
  paths = find_paths(u, {b for b, _ in bad})
  return [(paths.get(b, ()), b, "bind.one_value", f"{b.src[0].arg.name} is bound to {b.src[1].arg} and to {f.src[1].arg}; at {cx.sname} one "
           "graph binds a variable to one value") for b, f in bad]


def free_vars(u: UOp) -> frozenset:
  """The names of the DEFINE_VARs u reads that nothing below it binds: not under a BIND, not inside a call body (a CALL's
  args are read, a nested call passes its own). Cached."""
  def srcs(x: UOp) -> list[UOp]:
    if x.op is Ops.BIND: return []
    return [s for s in (x.src[1:] if x.op is Ops.CALL else x.src) if isinstance(s, UOp)]
  return fold(u, "spec:fv", srcs, lambda x, ss: frozenset((x.arg.name,)) if x.op is Ops.DEFINE_VAR and isinstance(x.arg, VarArg)
              else union_of(ss, "spec:fv"))


# ---- PARAM binding: shared by value calls (TENSOR) and kernel calls (KERNEL_GRAPH) ----

def _binding_srcs(x: UOp) -> list[UOp]:
  # a view INDEX addresses a tensor value of the scope the kernel is built in: its PARAMs are not the kernel's
  return [s for s in (x.src[1:] if x.op is Ops.CALL or is_view_index(x) else x.src) if isinstance(s, UOp)]


def free_params(u: UOp) -> frozenset:
  """The PARAMs reachable from u without entering a CALL's body (src[0]) or the tensor value of a view INDEX (src[0]): those an
  enclosing CALL binds. Cached."""
  return fold(u, "spec:fp", _binding_srcs, lambda x, srcs: frozenset((x,)) if x.op is Ops.PARAM else union_of(srcs, "spec:fp"))


def find_paths(root: UOp, targets: set[UOp]) -> dict[UOp, tuple[int, ...]]:
  """Shortest source-index paths from root to each target (not entering call bodies below root). Each node keeps a
  link to its parent's path, so the search is linear in the graph; only the targets' paths are made."""
  out: dict[UOp, tuple[int, ...]] = {}
  seen = {root}
  frontier: list[tuple[UOp, tuple | None]] = [(root, None)]
  while frontier and len(out) < len(targets):
    nxt = []
    for u, link in frontier:
      if u in targets and u not in out: out[u] = link_path(link)
      for i, s in enumerate(u.src):
        if u.op is Ops.CALL and i == 0: continue
        if isinstance(s, UOp) and s not in seen:
          seen.add(s)
          nxt.append((s, (link, i)))
    frontier = nxt
  return out


@rule("call.param_outside", "A PARAM appears only inside a call body (reached through a CALL's src[0]); outside one it is bound to nothing.")
def param_outside(u: UOp, cx: Ctx) -> str | None:
  if not cx.top: return None
  return (f"PARAM slot {u.arg.slot} is not inside any CALL body; at {cx.sname} a PARAM stands for an arg of the CALL whose body it is in "
          "(use a BUFFER for an input of the graph)")


@rule("call.param_slot", "Every PARAM of a CALL's body (not inside a nested call's body) has a slot below the CALL's arg count; in a "
      "kernel graph and in a precompiled call its arg is storage, not a variable (a kernel or a precompiled body reads a variable as its "
      "DEFINE_VAR).")
def param_slot(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _bind(u, cx, "slot")


@rule("call.param_size", "PARAM slot k of a CALL body has the size (element count) of the CALL's arg k.")
def param_size(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _bind(u, cx, "size")


@rule("call.param_dtype", "PARAM slot k of a CALL body has the dtype of the CALL's arg k.")
def param_dtype(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _bind(u, cx, "dtype")


@rule("call.param_device", "At TENSOR, PARAM slot k of a value or precompiled call's body is on the device of the CALL's arg k (a MULTI "
      "arg: its first device, uop.home_device), where the body reads it; an arg with no device (a constant) may be read on any.")
def param_device(u: UOp, cx: Ctx) -> list[Finding] | None:
  if is_kernel_call(u): return None  # a kernel's args are held to kgraph.one_device (host memory may be read from a CPU kernel)
  return _bind(u, cx, "device")


def _bind(u: UOp, cx: Ctx, part: str) -> list[Finding] | None:
  body, args = u.src[0], u.src[1:]
  params = [p for p in free_params(body) if not wellformed(p)]
  if not params: return None
  bad: list[tuple[UOp, str, str]] = []
  for p in params:
    k = p.arg.slot
    if part == "slot":
      if k >= len(args):
        bad.append((p, "call.param_slot", f"PARAM slot {k} in the body of a CALL with {len(args)} arg(s); at {cx.sname} a PARAM slot is "
                    f"below the arg count of its innermost CALL"))
      elif (cx.stage is Stage.KERNEL_GRAPH or is_precompiled_call(u)) and args[k].op in GroupOp.Variable:
        who = "a kernel" if cx.stage is Stage.KERNEL_GRAPH else "a precompiled body"
        bad.append((p, "call.param_slot", f"PARAM slot {k} stands for CALL arg {k}, a variable ({args[k].op.name}); at {cx.sname} {who} "
                    "reads a variable as its DEFINE_VAR, and PARAMs stand for storage args"))
      continue
    if k >= len(args): continue
    a = args[k]
    if a.op in VOID_OPS or a.dtype is dtypes.void: continue  # not a value: the stage's call-arg rule reports it
    if cx.stage is Stage.KERNEL_GRAPH and storage_base(a) is None: continue  # not storage: kgraph.call_arg_storage reports it
    if part == "size":
      if not a.shape_ok or a.shape is None: continue
      n = math.prod(a.shape)
      if n != p.arg.size:
        bad.append((p, "call.param_size", f"PARAM slot {k} has size {p.arg.size} but CALL arg {k} has {n} elements (shape {a.shape}); "
                    f"at {cx.sname} PARAM k is flat storage of the size of arg k"))
    elif part == "device":
      if (d := a.device) is not None and p.arg.device != (home := home_device(a)):
        bad.append((p, "call.param_device", f"PARAM slot {k} is on {device_str(p.arg.device)} but CALL arg {k} is on {device_str(d)}; at "
                    f"{cx.sname} PARAM k is on {device_str(home)}, the device of arg k (COPY the arg there first)"))
    elif p.dtype != a.dtype:
      bad.append((p, "call.param_dtype", f"PARAM slot {k} is {p.dtype.name} but CALL arg {k} is {a.dtype.name}; at {cx.sname} PARAM k has "
                  f"the dtype of arg k"))
  if not bad: return None
  paths = find_paths(body, {p for p, _, _ in bad})
  return [((0,) + paths.get(p, ()), p, rid, msg) for p, rid, msg in bad]

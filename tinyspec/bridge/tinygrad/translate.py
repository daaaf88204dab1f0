"""Translate: tinygrad UOps of every captured stage to tinyspec UOps.

Every decision (a tinygrad op or form -> its tinyspec form) is one entry of `RULES`, the table in table.py; docs/tinygrad.md
holds the same table (`rules_markdown()` writes it, a test holds the two word for word). This module holds the machinery
the rules run in (`Tr`, one graph of one stage; `Translation`, every stage of a capture) and the helpers they share. A node no rule covers, or a
form a rule refuses, raises `Untranslatable(op, stage, why)`; with `strict=False` it is recorded instead (and stands
as a CONST 0 placeholder, so the rest of the stage is still counted), so coverage = translated / all nodes per stage.
A stage with any untranslatable node is never checked or evaluated: placeholders are for counting only.
"""
from __future__ import annotations

import contextlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from tinyspec.dtype import DType, dtypes
from tinyspec.spec.shared import free_vars
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp, walk

STAGES = ("tensor", "callified", "kernel_graph", "kernel", "program")


class Untranslatable(Exception):
  """A tinygrad node with no tinyspec form: names the op, the stage and why."""
  def __init__(self, op: str, stage: str, why: str):
    self.op, self.stage, self.why = op, stage, why
    super().__init__(f"{op} at {stage}: {why}")


# ---- dtypes ----
DTYPES: dict[str, DType] = {"bool": dtypes.bool, "char": dtypes.int8, "signed char": dtypes.int8, "short": dtypes.int16,
                            "int": dtypes.int32, "long": dtypes.int64, "uchar": dtypes.uint8, "unsigned char": dtypes.uint8,
                            "ushort": dtypes.uint16, "unsigned short": dtypes.uint16, "uint": dtypes.uint32,
                            "unsigned int": dtypes.uint32, "ulong": dtypes.uint64, "unsigned long": dtypes.uint64,
                            "float": dtypes.float32, "double": dtypes.float64, "void": dtypes.void, "index": dtypes.index,
                            # the small floats by tinygrad's names; its float8_e4m3 has no infinity (float_to_fp8 gives NaN
                            # for one), which is float8_e4m3fn; its fnuz fp8 dtypes are named as ml_dtypes names them
                            "half": dtypes.float16, "__bf16": dtypes.bfloat16, "float8_e4m3": dtypes.float8_e4m3fn,
                            "float8_e5m2": dtypes.float8_e5m2, "float8_e4m3fnuz": dtypes.float8_e4m3fnuz,
                            "float8_e5m2fnuz": dtypes.float8_e5m2fnuz}
WEAK_DEFAULT = {"weakint": dtypes.index, "weakfloat": dtypes.float32}
AXIS = {"LOOP": AxisType.LOOP, "WEAK": AxisType.LOOP, "GLOBAL": AxisType.GLOBAL, "REDUCE": AxisType.REDUCE,
        "UPCAST": AxisType.UNROLL, "UNROLL": AxisType.UNROLL, "GROUP_REDUCE": AxisType.REDUCE}
SAME_NAME_ALU = ("NEG", "EXP2", "LOG2", "SIN", "SQRT", "TRUNC", "ADD", "SUB", "MUL", "MAX", "CMPLT", "CMPNE", "CMPEQ",
                 "AND", "OR", "XOR", "SHL", "SHR", "WHERE")


def is_weak(dt: Any) -> bool: return dt.name in WEAK_DEFAULT


def rules() -> dict:
  """The rule table (table.py imports this module's machinery, so it is looked up when first needed)."""
  from tinyspec.bridge.tinygrad.table import RULES
  return RULES


@dataclass
class Rule:
  """One translation decision: the tinygrad form it covers, the tinyspec form it gives, and the function."""
  tinygrad: str
  tinyspec: str
  fn: Callable[[Any, Any, Any], UOp]


class Tr:
  """Translates one graph of one stage. `kernel` is True inside a kernel body (range form, shape () values)."""
  def __init__(self, t: Translation, stage: str, kernel: bool = False, bind: dict[int, UOp] | None = None,
               bodies: dict[Any, UOp] | None = None, shard: int | None = None, slots: dict[int, int] | None = None,
               value_body: bool = False):
    self.t, self.stage, self.kernel, self.bind, self.bodies = t, stage, kernel, bind or {}, bodies or {}
    # True in a value call's body (a FUNCTION's TUPLE): its PARAMs stand for the call's args whole, a MULTI one too
    self.value_body = value_body
    # None, or the device (its number in a device tuple) that multi-device storage, kernels and kernel-graph entries are
    # translated as launched on: tinygrad keeps them one node over the tuple, tinyspec one per device
    self.shard = shard
    # a call body's PARAM slot k over a device tuple -> the first of its per-device slots (slots[k] + device number): the
    # call's arg over the tuple is one arg per device (expanded_slots)
    self.slots = slots
    # the slots (as tinygrad numbers them) of those args when only some args over a device tuple are one per device (a
    # value call's storage its body unshards, per_device_slots); None: every arg over a device tuple is (a precompiled call)
    self.split: set[int] | None = None
    # a call body's (renumbered) slot -> the shape of that device's arg: a PARAM standing for a sharded arg has the
    # logical shape in tinygrad, its shard's on each device in tinyspec
    self.slot_shapes: dict[int, tuple[int, ...]] = {}
    self.shared: dict[Any, UOp] = {}   # translations the same whichever device is being translated for (a call over all of them)
    self.memo: dict[tuple, UOp] = {}
    self.local_buffers: dict[Any, UOp] = {}
    self.axes: dict[Any, int] = {}
    # the variables this graph's CALL binds, by the name its body and kernels read them as (`pk`): variables.py
    self.scope: dict[str, tuple[Any, int | None]] = t.var_scope

  def fail(self, u: Any, why: str) -> UOp:
    if self.t.strict: raise Untranslatable(u.op.name, self.stage, why)
    self.t.failed.setdefault(self.stage, {})[u] = why
    self.t.failures += 1
    return UOp.const(dtypes.int32, 0)

  def dtype(self, u: Any, want: DType | None = None) -> DType:
    if is_weak(u.dtype): return want if want is not None else WEAK_DEFAULT[u.dtype.name]
    if type(u.dtype).__name__ != "DType" or u.dtype.name not in DTYPES:
      raise Untranslatable(u.op.name, self.stage, f"dtype {u.dtype} has no tinyspec form")
    return DTYPES[u.dtype.name]

  def __call__(self, u: Any, want: DType | None = None) -> UOp:
    key = (u, want if is_weak(u.dtype) else None, self.shard)
    if (ret := self.memo.get(key)) is not None: return ret
    rule = rules().get(u.op.name)
    if rule is None: ret = self.fail(u, "no rule: tinyspec has no form for this op")
    else:
      try:
        ret = rule.fn(self, u, want)
        self.seen(u)
      except Untranslatable as e:
        if self.t.strict: raise
        ret = self.fail(u, e.why)
      except (ValueError, AttributeError, TypeError, LookupError) as e:
        # a source that did not translate is a CONST placeholder, whose shape a view's rule cannot take: this node does
        # not translate either. With no placeholder made, the rule met an arg or source of a form it was not written for
        # (another tinygrad version's, say): named like an op with no rule (counted, with strict=False, and the rest of
        # the graph still translated)
        failed = self.t.failed.get(self.stage, {})
        if isinstance(e, ValueError) and not self.t.strict and failed and any(x in failed for x in u.toposort()):
          ret = self.fail(u, f"a source did not translate ({e})")
        else:
          why = f"a form its rule does not know ({type(e).__name__}: {e})"
          if self.t.strict: raise Untranslatable(u.op.name, self.stage, why) from e
          self.t.rule_errors.append((u.op.name, self.stage, e))
          ret = self.fail(u, why)
    self.memo[key] = ret
    return ret

  @contextlib.contextmanager
  def on(self, shard: int | None) -> Iterator[None]:
    """Translate as on device `shard` of a device tuple (a kernel graph's multi-device entries, one per device)."""
    saved, self.shard = self.shard, shard
    try: yield
    finally: self.shard = saved

  def per_device(self, n: int, make: Callable[[], UOp]) -> list[UOp]:
    """make() once as on each of n devices: a node over a device tuple translated per device, as tinyspec has it."""
    out = []
    for j in range(n):
      with self.on(j): out.append(make())
    return out

  def seen(self, *us: Any) -> None:
    self.t.visited.setdefault(self.stage, set()).update(us)

  def value(self, u: Any, want: DType | None = None) -> UOp:
    """A source used as a value: in a kernel an INDEX read becomes LOAD(INDEX) (tinygrad adds its LOADs late)."""
    if self.kernel and u.op.name == "INDEX": return self.load(u, want)
    return self(u, want)

  def load(self, u: Any, want: DType | None = None) -> UOp:
    idx, gate = index_and_gate(self, u)
    if gate is None: return UOp(Ops.LOAD, idx.dtype, (idx,))
    return UOp(Ops.LOAD, idx.dtype, (idx, UOp.const(idx.dtype, 0), gate))

  def shape(self, u: Any) -> tuple[int, ...]:
    shp = u.shape
    if all(isinstance(s, int) for s in shp): return tuple(shp)
    from tinyspec.bridge.tinygrad.variables import concrete   # a shape over a bound variable: the number it binds
    return tuple(concrete(self, s, u.op.name) for s in shp)


@dataclass
class Translation:
  """tinyspec graphs of a capture's stages. `graphs[stage]` lists (tinygrad root, tinyspec root or None when untranslatable)."""
  strict: bool = True
  graphs: dict[str, list[tuple[Any, UOp | None]]] = field(default_factory=lambda: {s: [] for s in STAGES})
  totals: dict[str, int] = field(default_factory=lambda: {s: 0 for s in STAGES})
  failed: dict[str, dict[Any, str]] = field(default_factory=dict)
  failures: int = 0   # every placeholder made; `failed` is keyed by node, so a node two graphs share is one entry there
  rule_errors: list[tuple[str, str, Exception]] = field(default_factory=list)  # (op, stage, what its rule raised) per node a
  # rule met in a form it does not know: counted as untranslatable; a fuzzer reports each (on its own programs, a bug)
  buffers: dict[Any, UOp] = field(default_factory=dict)   # tinygrad BUFFER of the tensor graph -> tinyspec BUFFER; one over a
  # device tuple is keyed (BUFFER, device number): a BUFFER per device
  inputs: dict[int, Any] = field(default_factory=dict)     # tinyspec buffer id -> contents
  programs: dict[Any, UOp] = field(default_factory=dict)   # tinygrad kernel AST -> translated PROGRAM
  outputs: list[UOp | None] = field(default_factory=list)  # per output: the tinyspec BUFFER it was realized into
  output_views: list[UOp | None] = field(default_factory=list)  # per output left a view of storage: that view, over its BUFFER
  output_shards: list[tuple[tuple[UOp, ...], int | None] | None] = field(default_factory=list)  # per output over a device
  # tuple: its per-device BUFFERs and the axis tinygrad concatenates them along (None: replicated, device 0's is read)
  output_shapes: list[tuple[int, ...]] = field(default_factory=list)  # per output: the shape tinygrad gave it
  bound_graphs: list[tuple[Any, Any]] = field(default_factory=list)  # (tinygrad kernel graph, callified CALL binding its PARAMs)
  lowered: dict[Any, Any] = field(default_factory=dict)   # a call body tinygrad lowered on its own (its all-reduce) -> that kernel graph
  missed: dict[str, int] = field(default_factory=dict)     # per stage: nodes no rule translated (failed, or under a failed node)
  visited: dict[str, set] = field(default_factory=dict)    # per stage: the tinygrad nodes a rule translated
  device: str = "CPU"
  unknown: dict[int, str] = field(default_factory=dict)    # tinyspec buffer id -> tinygrad's BUFFER, for storage that held data
  # before the run whose contents the capture does not have: a graph reading it is not evaluated (never read as zeros)
  var_scope: dict[str, tuple[Any, int | None]] = field(default_factory=dict)  # the variables the callified CALLs bind, by the name
  # (`pk`, arg k) their bodies and kernels read them as: (tinygrad variable, value); see variables.py
  launch_vars: dict[str, int] = field(default_factory=dict)  # tinygrad's values of the variables at launch (Capture.var_vals)

  def coverage(self) -> dict[str, tuple[int, int]]:
    """Per stage: (translated nodes, all nodes)."""
    return {s: (self.totals[s] - self.missed.get(s, 0), self.totals[s]) for s in STAGES}

  def untranslatable(self, stage: str) -> dict[str, str]:
    """op name -> why (the first node's), for the nodes of stage that did not translate."""
    out: dict[str, str] = {}
    for u, why in self.failed.get(stage, {}).items(): out.setdefault(u.op.name, why)
    return out

  def untranslatable_counts(self, stage: str) -> dict[str, int]:
    """op name -> how many nodes of stage with that op did not translate (a node two graphs share counts once)."""
    return dict(Counter(u.op.name for u in self.failed.get(stage, {})))

  @property
  def main_kernel_graph(self) -> int | None:
    """The index of the program's own kernel graph: the one whose PARAMs the callified CALL binds."""
    return next((i for i, (_, call) in enumerate(self.bound_graphs) if call is not None), None)

  def kernel_graph(self, with_programs: bool = False, index: int | None = None) -> UOp:
    """The kernel graph `index` (default: the program's own), its PARAMs bound to the callified CALL's args;
    with_programs: each kernel whose program translated runs as that PROGRAM instead of its AST."""
    kg, call = self.bound_graphs[self.main_kernel_graph if index is None else index]
    bind = {} if call is None else {i: self.storage(a) for i, a in enumerate(call.src[1:])}
    tr = Tr(self, "kernel_graph", bind=bind, bodies=self.programs if with_programs else None, slots=None if call is not None else graph_slots(kg))
    return tr(kg)

  def kernel(self, body: Any, stage: str, shard: int | None = None) -> UOp:
    """A kernel body (a SINK with KernelInfo) in range form, with its own kernel-local buffers (as launched on device
    `shard` of its device tuple, when it has one)."""
    return Tr(self, stage, kernel=True, shard=shard if launches(body) != (None,) else None)(body)

  def storage(self, u: Any) -> Any:
    """A callified CALL's arg: its tinyspec BUFFER; for a BUFFER over a device tuple, a tuple of one BUFFER per device
    (a kernel graph's PARAM bound to it picks its launch's)."""
    tr = Tr(self, "callified")
    n = multi_count(u)
    return tr(u) if n is None else tuple(tr.per_device(n, lambda: tr(u)))


# ---- helpers used by rules ----
def param_size(tr: Tr, u: Any) -> int:
  return math.prod(tr.shape(u))


def device_of(tr: Tr, arg: Any) -> str:
  """The device of storage; multi-device storage (a device tuple) has one only in a kernel as launched on one device, or
  in a value call's body, where a PARAM over a tuple stands for the whole MULTI arg and is on its first device
  (tinyspec's form, uop.home_device: the multi pass gives each shard a PARAM of its own device)."""
  dev = getattr(arg, "device", None)
  if isinstance(dev, tuple) and tr.value_body and tr.shard is None: return dev[0]
  if isinstance(dev, tuple):
    if tr.shard is None: raise Untranslatable("PARAM", tr.stage, f"multi-device storage {dev}")
    return dev[tr.shard]
  return dev if dev else tr.t.device


def multi_count(u: Any) -> int | None:
  """The number of devices of a kernel-graph node over a device tuple (multi-device storage, an MSTACK of per-device
  storage, an AFTER or CALL of them), else None."""
  while u.op.name == "AFTER": u = u.src[0]
  if u.op.name == "MSTACK": return len(u.src)
  if u.op.name == "CALL": return next((n for a in u.src[1:] if (n := multi_count(a)) is not None), None)
  d = getattr(u.arg, "device", None) if u.op.name in ("PARAM", "BUFFER") else None
  return len(d) if isinstance(d, tuple) else None


def expanded_slots(counts: list[int | None]) -> dict[int, int]:
  """Arg k of a call over n_k devices (None: one) -> its first slot once every arg over a device tuple is one arg per
  device, in order (arg k's device j at slot expanded[k] + j)."""
  out, nxt = {}, 0
  for k, n in enumerate(counts):
    out[k], nxt = nxt, nxt + (n or 1)
  return out


def graph_slots(kg: Any) -> dict[int, int] | None:
  """expanded_slots of a kernel graph's own top-level PARAMs (outside kernel bodies), when one is over a device tuple
  and its slots are 0..n-1: the graph of a call checked on its own (tinygrad's all-reduce), its args not at hand."""
  counts: dict[int, int | None] = {}
  for u in kg.toposort(gate=lambda x: not (x.op.name == "SINK" and type(x.arg).__name__ == "KernelInfo")):
    if u.op.name == "PARAM" and getattr(u.arg, "slot", -1) >= 0: counts[u.arg.slot] = multi_count(u)
  if not any(n is not None for n in counts.values()) or sorted(counts) != list(range(len(counts))): return None
  return expanded_slots([counts[k] for k in range(len(counts))])


def launches(root: Any) -> tuple[int | None, ...]:
  """The devices a kernel AST or PROGRAM runs on, as Tr's shard: (None,) for one device; for storage over a device tuple
  one number per device. tinygrad 0.14 keeps such a kernel one AST over multi-device PARAMs, and its runtime launches it
  once per device on that device's buffers (tinygrad.engine.realize.unwrap_multi), which is what each translation is."""
  devs = {len(d) for x in root.toposort() if x.op.name in ("PARAM", "BUFFER") and isinstance(d := getattr(x.arg, "device", None), tuple)}
  return tuple(range(devs.pop())) if len(devs) == 1 else (None,)


def addrspace_of(arg: Any) -> AddrSpace:
  name = getattr(getattr(arg, "addrspace", None), "name", "GLOBAL")
  return {"GLOBAL": AddrSpace.GLOBAL, "LOCAL": AddrSpace.LOCAL, "REG": AddrSpace.REG}.get(name, None)


def index_and_gate(tr: Tr, u: Any) -> tuple[UOp, UOp | None]:
  """INDEX(buf, idx) or INDEX(buf, WHERE(cond, idx, Invalid)) -> (tinyspec INDEX, gate or None)."""
  from tinyspec.bridge.tinygrad.composite import is_vector_load, lane_read   # composite's rules use this module
  if len(u.src) == 2 and is_vector_load(u.src[0]): return lane_read(tr, u), None
  if tr.kernel and u.src[0].op.name in KERNEL_VIEWS and (folded := view_index(tr, u)) is not None: return folded
  if len(u.src) > 2 or (len(u.src) == 1 and tr.shape(u.src[0]) == ()): return multi_index(tr, u), None
  if len(u.src) != 2: return tr.fail(u, "INDEX with no index source"), None
  buf, idx = u.src
  gate = None
  tr.seen(u)
  if idx.op.name == "WHERE" and is_invalid(idx.src[2]):
    tr.seen(idx, idx.src[2])
    gate, idx = tr.value(idx.src[0], dtypes.bool), idx.src[1]
  elif is_invalid(idx):
    return tr.fail(u, "an INDEX whose index is Invalid everywhere"), None
  # the index (and gate) are values: a read used as one directly (a program's lane of a vector load, buf[lane] with no
  # arithmetic on it; a kernel's INDEX read) is LOAD(INDEX), not the INDEX itself, which is a place, not a number
  return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), tr.value(idx, dtypes.index))), gate


# the views of storage a kernel body may index through (tinygrad's codegen folds them into the index first, pm_mops:
# debuf's SHRINK of a max-sized PARAM to a symbolic shape, a custom kernel's flatten); PAD and EXPAND are not folded
KERNEL_VIEWS = ("RESHAPE", "SHRINK", "PERMUTE", "FLIP")


def view_index(tr: Tr, u: Any) -> tuple[UOp, UOp | None] | None:
  """INDEX(view(...view(storage)), idx...) in a kernel body: INDEX(storage, flat index), the index carried back
  through each view as tinygrad's codegen does before anything else (`pm_mops`, apply_movement_op): a SHRINK adds its
  offsets (its sizes only bound what is read: a symbolic one need not be known), PERMUTE reorders, FLIP mirrors, a
  RESHAPE keeps the row-major flat index. The flat index into the storage is row-major over its shape (kernel storage
  is flat). A gate (WHERE(cond, idx, Invalid), one index) stays the gate. None when a view on the way is another."""
  chain, x = [], u.src[0]
  while x.op.name in KERNEL_VIEWS:
    chain.append(x)
    x = x.src[0]
  if x.op.name in ("PAD", "EXPAND"): return None
  idxs, gate = list(u.src[1:]), None
  gated = len(idxs) == 1 and idxs[0].op.name == "WHERE" and is_invalid(idxs[0].src[2])
  if any(is_invalid(i) or (i.op.name == "WHERE" and not gated) for i in idxs): return None
  if gated:
    tr.seen(idxs[0], idxs[0].src[2])
    gate, idxs = tr.value(idxs[0].src[0], dtypes.bool), [idxs[0].src[1]]
  # the index over the view being walked: per axis (a list), or one row-major flat index over its shape; values, as
  # index_and_gate's (a read used as an index is its LOAD)
  at: list[UOp] | UOp = [tr.value(i, dtypes.index) for i in idxs]
  for v in chain:
    n = v.op.name
    tr.seen(v, *(y for s in v.src[1:] for y in s.toposort()))
    if n == "RESHAPE":
      at = _flat(tr, at, v)
      continue
    axes = _axes(tr, at, v)
    if n == "SHRINK":
      offs = v.src[1].src if v.src[1].op.name == "STACK" else (v.src[1],)
      axes = [a if o.op.name == "CONST" and o.arg == 0 else a + tr.value(o, dtypes.index) for a, o in zip(axes, offs)]
    elif n == "PERMUTE":
      axes = [axes[v.marg.index(k)] for k in range(len(axes))]
    else:   # FLIP: axis k reads from the end where flipped
      src_shape = v.src[0].shape
      axes = [UOp.const(dtypes.index, _dim(tr, src_shape[k], v) - 1) - a if f else a
              for k, (a, f) in enumerate(zip(axes, v.marg))]
    at = axes
  tr.seen(u)
  return UOp(Ops.INDEX, tr.dtype(u), (tr(x), _flat(tr, at, x))), gate


def _dim(tr: Tr, d: Any, v: Any) -> int:
  if isinstance(d, int): return d
  from tinyspec.bridge.tinygrad.variables import concrete   # a dim over a bound variable: the number it binds
  return concrete(tr, d, v.op.name)


def _flat(tr: Tr, at: list[UOp] | UOp, v: Any) -> UOp:
  """The row-major flat index over v's shape of per-axis indices (a flat index as it is); of no axes, 0."""
  if not isinstance(at, list): return at
  if not at: return UOp.const(dtypes.index, 0)
  shape, flat = v.shape, at[0]
  for a, d in zip(at[1:], shape[1:]): flat = flat * UOp.const(dtypes.index, _dim(tr, d, v)) + a
  return flat


def _axes(tr: Tr, at: list[UOp] | UOp, v: Any) -> list[UOp]:
  """Per-axis indices over v's shape (v the view being walked, its shape the indexed one) of a flat index."""
  if isinstance(at, list): return at
  shape = v.shape
  out, rest = [], at
  for k in range(len(shape) - 1, 0, -1):
    d = UOp.const(dtypes.index, _dim(tr, shape[k], v))
    out.append(rest % d)
    rest = rest // d
  return [rest, *reversed(out)]


def multi_index(tr: Tr, u: Any) -> UOp:
  """INDEX(buf, i0, ..., in-1) on a shaped buffer (a precompiled function's PARAM): one flat row-major index; INDEX(buf)
  on a buffer of shape () (a scalar viewed as RESHAPE(PARAM, ()), as a copy kernel of one element reads it): index 0."""
  buf, idxs = u.src[0], u.src[1:]
  shape = tr.shape(buf)
  if buf.op.name == "RESHAPE" and buf.src[0].op.name in ("PARAM", "BUFFER"):
    tr.seen(buf)
    buf = buf.src[0]   # a row-major view of flat storage: index the storage itself
  if len(idxs) != len(shape) or any(i.op.name == "WHERE" for i in idxs):
    raise Untranslatable("INDEX", tr.stage, f"INDEX with {len(idxs)} index sources on a buffer of shape {shape}")
  if not idxs:
    tr.seen(u)
    return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), UOp.const(dtypes.index, 0)))
  flat = tr.value(idxs[0], dtypes.index)
  for i, d in zip(idxs[1:], shape[1:]):
    flat = UOp(Ops.ADD, dtypes.index, (UOp(Ops.MUL, dtypes.index, (flat, UOp.const(dtypes.index, d))), tr.value(i, dtypes.index)))
  tr.seen(u)
  return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), flat))


def is_invalid(u: Any) -> bool: return u.op.name == "CONST" and type(u.arg).__name__ == "InvalidType"


def broadcast(tr: Tr, x: UOp, shape: tuple[int, ...]) -> UOp:
  """tinygrad broadcasts elementwise sources implicitly (numpy's rule); tinyspec needs explicit RESHAPE/EXPAND/PERMUTE."""
  if tr.kernel or x.shape == shape or x.shape is None: return x
  xs = (1,) * (len(shape) - len(x.shape)) + tuple(x.shape)
  if len(xs) != len(shape) or any(a not in (1, b) for a, b in zip(xs, shape)):
    raise Untranslatable("broadcast", tr.stage, f"shape {x.shape} does not broadcast to {shape}")
  keep = [i for i, (a, b) in enumerate(zip(xs, shape)) if a == b]
  new = [i for i in range(len(shape)) if i not in keep]
  y = x if tuple(x.shape) == tuple(shape[i] for i in keep) else x.reshape(tuple(shape[i] for i in keep))
  y = y.expand(tuple(shape[i] for i in new))   # tinyspec EXPAND prepends: axes new..., keep...
  order = new + keep
  perm = tuple(order.index(i) for i in range(len(shape)))
  return y if perm == tuple(range(len(shape))) else y.permute(perm)


def alu(tr: Tr, u: Any, op: Ops, srcs: tuple[UOp, ...], dt: DType) -> UOp:
  if not tr.kernel:
    shape = tr.shape(u)
    srcs = tuple(broadcast(tr, s, shape) for s in srcs)
  return UOp(op, dt, srcs)


def operand_dtype(tr: Tr, u: Any, want: DType | None) -> DType:
  """The dtype weak sources resolve to: the op's own (resolved from the consumer when weak itself); for comparisons the
  first non-weak source's."""
  srcs = u.src[1:] if u.op.name == "WHERE" else u.src
  if u.dtype.name == "bool" or u.op.name in ("CMPLT", "CMPNE", "CMPEQ"):
    strong = [s for s in srcs if not is_weak(s.dtype)]
    return tr.dtype(strong[0]) if strong else WEAK_DEFAULT[srcs[0].dtype.name]
  return tr.dtype(u, want)


# ---- whole captures ----
def _folded(root: Any) -> set:
  """Shape/offset/size sources (STACK and CONST under a movement op's, PARAM's or BUFFER's shape sources)."""
  out = set()
  for u in root.toposort():
    n = u.op.name
    start = 1 if n in ("RESHAPE", "EXPAND", "PAD", "SHRINK") else 0 if n in ("PARAM", "BUFFER") else None
    if start is None: continue
    for s in u.src[start:]:
      for x in s.toposort():
        if x.op.name in ("STACK", "CONST", "CAST"): out.add(x)
  return out


def callified(t: Translation, call: Any) -> UOp:
  """tinygrad's callified graph CALL(SINK(assigns...), buffers...) stores tensor values into its PARAMs: tinyspec's
  precompiled call at TENSOR (a CALL of tensor-level effects over storage args), translated as it is."""
  return Tr(t, "callified")(call)


def called(kg: UOp) -> UOp:
  """A precompiled function's own kernel graph has PARAMs for its args: it is the body of a CALL, so it is checked as
  SINK(CALL(kg, BUFFER per PARAM slot)) with fresh BUFFERs of the PARAMs' sizes and dtypes."""
  params: dict[int, UOp] = {}
  # the graph's own PARAMs: everywhere but inside a call's body (a kernel's PARAMs are its own), the args of a call
  # (however deep) included
  for u in walk((kg,), lambda x: x.src[1:] if x.op is Ops.CALL else x.src):
    if u.op is Ops.PARAM: params.setdefault(u.arg.slot, u)
  if not params: return kg
  # a slot no PARAM stands for is a variable arg (the kernels read it as DEFINE_VAR pk, passed on unbound): passed on
  passed = {int(v.arg.name[1:]): v for v in kg.toposort() if v.op is Ops.DEFINE_VAR and v.arg.name[:1] == "p" and v.arg.name[1:].isdigit()}
  slots = {**passed, **params}
  # any other slot is an arg the function never reads (`def f(a, b, c): return a * c`): any storage binds it, so it
  # gets a one-byte BUFFER on the device of the graph's first PARAM
  dev = next(iter(params.values())).arg.device
  def bound(p: UOp | None) -> UOp:
    if p is None: return UOp.buffer(dtypes.uint8, 1, dev)
    return UOp.buffer(p.dtype, p.arg.size, p.arg.device) if p.op is Ops.PARAM else p
  bufs = [bound(slots.get(k)) for k in range(max(slots) + 1)]
  # a variable the graph reads by its caller's name (inherited, not one of its own pk args: the all-reduce of a symbolic
  # shape, CALL's rule) is passed on unbound too, after the slots
  own = {v.arg.name for v in passed.values()}
  inherited = {v.arg.name: v for v in kg.toposort() if v.op is Ops.DEFINE_VAR and v.arg.name in free_vars(kg) and v.arg.name not in own}
  call = UOp(Ops.CALL, dtypes.void, (kg, *bufs, *(inherited[n] for n in sorted(inherited))))
  outs = []
  for e in kg.src:   # the graph's realized outputs: AFTER(PARAM k, ...) entries
    while e.op is Ops.AFTER: e = e.src[0]
    if e.op is Ops.PARAM and e.arg.slot not in outs: outs.append(e.arg.slot)
  return UOp(Ops.SINK, dtypes.void, tuple(UOp(Ops.AFTER, bufs[k].dtype, (bufs[k], call)) for k in outs) or (call,))


def _fits(kg: Any, call: Any) -> bool:
  """Every top-level PARAM of kernel graph kg (outside kernel bodies) names an arg of call with its dtype."""
  args = call.src[1:]
  seen, todo = set(), [kg]
  while todo:
    u = todo.pop()
    if u in seen: continue
    seen.add(u)
    if u.op.name == "PARAM":
      if u.arg.slot >= len(args) or args[u.arg.slot].dtype != u.dtype: return False
      continue
    todo.extend(u.src[1:] if u.op.name == "CALL" else u.src)
  return True


def translate(cap: Any, strict: bool = True) -> Translation:
  """Translate every captured stage. strict: raise Untranslatable on the first node with no tinyspec form; else record
  it (see `Translation.coverage`, `Translation.untranslatable`) and give that graph as None."""
  t = Translation(strict=strict, device=cap.device)
  from tinyspec.bridge.tinygrad.variables import scope
  t.var_scope = scope([c for _, c, _ in cap.callified])
  t.launch_vars = dict(getattr(cap, "var_vals", {}))

  def one(stage: str, root: Any, make: Callable[[], UOp]) -> UOp | None:
    # counted by placeholders made, not by entries of `failed`: a node an earlier graph already failed on (the same
    # multi-device PARAM in every program of a sharded run) adds no entry there but leaves a placeholder in this graph
    before = t.failures
    out = make()
    ok = t.failures == before
    nodes = set(root.toposort())
    done = nodes & (t.visited.get(stage, set()) | _folded(root))
    t.totals[stage] += len(nodes)
    t.missed[stage] = t.missed.get(stage, 0) + len(nodes - done)
    t.graphs[stage].append((root, out if ok else None))
    return out if ok else None

  if cap.tensor is not None: one("tensor", cap.tensor, lambda: Tr(t, "tensor")(cap.tensor))  # None: a recording's graphs made outside a schedule
  calls = [c for _, c, _ in cap.callified]
  t.lowered = {kg_in: kg for kg_in, kg in cap.kernel_graphs}
  for c in calls: one("callified", c, lambda c=c: callified(t, c))
  # the kernel graph of a callified body binds its PARAMs to that CALL's args
  for kg_in, kg in cap.kernel_graphs:
    call = next((c for c in calls if c.src[0] is kg_in), None)
    t.bound_graphs.append((kg, call))
  # with precompiled functions tinygrad lowers their bodies first and schedules the program's own graph last, from a
  # sink rewritten on the way: bind that last graph to the callified CALL when its top-level PARAMs fit the CALL's args.
  # A graph lowered while another was (an all-reduce's, its input inside that graph) or a function body's (its input
  # inside the callified CALL) is not the program's own, though it may come later and fit too.
  if calls and t.bound_graphs and all(c is None for _, c in t.bound_graphs):
    inner = {u for _, kg in cap.kernel_graphs for u in kg.toposort()} | {u for c in calls for u in c.toposort()}
    own = [i for i, (kg_in, _) in enumerate(cap.kernel_graphs) if kg_in not in inner] or [len(t.bound_graphs) - 1]
    if _fits(t.bound_graphs[own[-1]][0], calls[-1]): t.bound_graphs[own[-1]] = (t.bound_graphs[own[-1]][0], calls[-1])
  for i, (kg, call) in enumerate(t.bound_graphs):
    one("kernel_graph", kg, lambda i=i, call=call: t.kernel_graph(index=i) if call is not None else called(t.kernel_graph(index=i)))
  for k in cap.kernels:
    for j in launches(k): one("kernel", k, lambda k=k, j=j: Tr(t, "kernel", kernel=True, shard=j)(k))
  for ast, prg in cap.programs:
    for j in launches(prg):
      out = one("program", prg, lambda prg=prg, j=j: Tr(t, "program", shard=j)(prg))
      if out is not None: t.programs[ast if j is None else (ast, j)] = out  # a kernel graph's body (per launch)
  for data_of, data in cap.inputs.items():
    if data_of in t.buffers: t.inputs[t.buffers[data_of].arg.id] = data.reshape(-1)
    for j in range(multi_count(data_of) or 0):   # storage over a device tuple: device j's row, into its BUFFER
      if (data_of, j) in t.buffers: t.inputs[t.buffers[data_of, j].arg.id] = data[j].reshape(-1)
  t.unknown = unknown_contents(t, cap)
  t.outputs = [t.buffers.get(s) for s in cap.output_storage]
  t.output_shards = [_shards_of(t, u) for u in cap.realized]
  t.output_shapes = [tuple(np.shape(o)) for o in cap.outputs]
  t.output_views = [None if s is not None or m is not None else _view_of(t, u)
                    for s, m, u in zip(cap.output_storage, t.output_shards, cap.realized)]
  return t


def unknown_contents(t: Translation, cap: Any) -> dict[int, str]:
  """The program's BUFFERs (as translated) whose contents before the run the capture has not got, though tinygrad had
  allocated them (not among `cap.fresh`, the storage the run itself allocates): tinyspec id -> a sentence naming
  tinygrad's BUFFER. Their contents are unknown, so a graph that holds one cannot be evaluated against tinygrad."""
  out = {}
  for key, b in t.buffers.items():
    u = key[0] if isinstance(key, tuple) else key
    if u in cap.inputs or u in getattr(cap, "fresh", ()): continue
    out[b.arg.id] = f"BUFFER {b.arg.id} (tinygrad's {u.dtype} BUFFER of {b.arg.size} on {u.arg.device}, slot {getattr(u.arg, 'slot', '?')})"
  return out


def _shards_of(t: Translation, u: Any) -> tuple[tuple[UOp, ...], int | None] | None:
  """A realized output over a device tuple: (its per-device BUFFERs, as the kernel graph's translation made them, and the
  axis tinygrad concatenates them along: UNSHARD(RESHAPE(BUFFER), DEVICE range) arg (axis,); a bare BUFFER is
  replicated, None), or None when the output is not over a device tuple or its BUFFERs were not translated."""
  axis = None
  if u.op.name == "UNSHARD" and isinstance(u.arg, tuple) and len(u.arg) == 1: axis, u = u.arg[0], u.src[0]
  while u.op.name == "RESHAPE": u = u.src[0]
  if u.op.name != "BUFFER" or (n := multi_count(u)) is None: return None
  bufs = tuple(t.buffers.get((u, j)) for j in range(n))
  return None if None in bufs else (bufs, axis)


def _view_of(t: Translation, u: Any) -> UOp | None:
  """A realized output that tinygrad left a view (movement ops over the BUFFER it realized), translated over the same
  BUFFER as the stages use; None when it does not translate. It is no stage: nothing of it counts in coverage."""
  strict, t.strict = t.strict, True
  try: return Tr(t, "tensor")(u)
  except Untranslatable: return None
  finally: t.strict = strict

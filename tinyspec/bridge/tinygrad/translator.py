"""The machinery every translation rule runs in: a `Translator` translates one graph of one stage, looking each tinygrad
op up in the rule table its `Translation` holds (table.RULES), memoizing by node, and recording a node no rule covers;
a `Translation` holds every stage of a capture, what translated and what did not.

A node no rule covers, or a form a rule refuses, raises `Untranslatable(op, stage, why)`; with `strict=False` it is
recorded instead (and stands as a CONST 0 placeholder, so the rest of the stage is still counted), so coverage =
translated / all nodes per stage. A stage with any untranslatable node is never checked or evaluated: placeholders are
for counting only.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from tinyspec.bridge.tinygrad.devices import graph_slots, launches, multi_count
from tinyspec.bridge.tinygrad.dtype_names import DTYPES, WEAK_DEFAULT, is_weak
from tinyspec.bridge.tinygrad.indexing import index_and_gate
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import concrete
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp

STAGES = ("tensor", "callified", "kernel_graph", "kernel", "program")


@dataclass
class Rule:
  """One translation decision: the tinygrad form it covers, the tinyspec form it gives, and the function."""
  tinygrad: str
  tinyspec: str
  fn: Callable[[Any, Any, Any], UOp]


class Translator:
  """Translates one graph of one stage. `kernel` is True inside a kernel body (range form, shape () values)."""
  def __init__(self, translation: Translation, stage: str, kernel: bool = False, bind: dict[int, UOp] | None = None,
               bodies: dict[Any, UOp] | None = None, shard: int | None = None, slots: dict[int, int] | None = None,
               value_body: bool = False, scope: dict[str, tuple[Any, int | None]] | None = None):
    self.translation, self.stage, self.kernel, self.bind, self.bodies = translation, stage, kernel, bind or {}, bodies or {}
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
    # the variables this graph's CALL binds, by the name its body and kernels read them as (`pk`): variables.py; a call's
    # body is given its own (the names it reads its variable args as), anything else reads the callified CALLs'
    self.scope: dict[str, tuple[Any, int | None]] = translation.var_scope if scope is None else scope

  def fail(self, u: Any, why: str) -> UOp:
    if self.translation.strict: raise Untranslatable(u.op.name, self.stage, why)
    self.translation.failed.setdefault(self.stage, {})[u] = why
    self.translation.failures += 1
    return UOp.const(dtypes.int32, 0)

  def dtype(self, u: Any, want: DType | None = None) -> DType:
    if is_weak(u.dtype): return want if want is not None else WEAK_DEFAULT[u.dtype.name]
    if type(u.dtype).__name__ != "DType" or u.dtype.name not in DTYPES:
      raise Untranslatable(u.op.name, self.stage, f"dtype {u.dtype} has no tinyspec form")
    return DTYPES[u.dtype.name]

  def __call__(self, u: Any, want: DType | None = None) -> UOp:
    key = (u, want if is_weak(u.dtype) else None, self.shard)
    if (ret := self.memo.get(key)) is not None: return ret
    rule = self.translation.rules.get(u.op.name)
    if rule is None: ret = self.fail(u, "no rule: tinyspec has no form for this op")
    else:
      try:
        ret = rule.fn(self, u, want)
        self.seen(u)
      except Untranslatable as e:
        if self.translation.strict: raise
        ret = self.fail(u, e.why)
      except (ValueError, AttributeError, TypeError, LookupError) as e:
        # a source that did not translate is a CONST placeholder, whose shape a view's rule cannot take: this node does
        # not translate either. With no placeholder made, the rule met an arg or source of a form it was not written for
        # (another tinygrad version's, say): named like an op with no rule (counted, with strict=False, and the rest of
        # the graph still translated)
        failed = self.translation.failed.get(self.stage, {})
        if isinstance(e, ValueError) and not self.translation.strict and failed and any(x in failed for x in u.toposort()):
          ret = self.fail(u, f"a source did not translate ({e})")
        else:
          why = f"a form its rule does not know ({type(e).__name__}: {e})"
          if self.translation.strict: raise Untranslatable(u.op.name, self.stage, why) from e
          self.translation.rule_errors.append((u.op.name, self.stage, e))
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
    self.translation.visited.setdefault(self.stage, set()).update(us)

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
    return tuple(concrete(self, s, u.op.name) for s in shp)   # a shape over a bound variable: the number it binds


@dataclass
class Translation:
  """tinyspec graphs of a capture's stages. `graphs[stage]` lists (tinygrad root, tinyspec root or None when untranslatable)."""
  rules: dict[str, Rule]   # tinygrad op name -> its Rule: the translation table (table.RULES) every Translator of it looks up
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
    tr = Translator(self, "kernel_graph", bind=bind, bodies=self.programs if with_programs else None,
                    slots=None if call is not None else graph_slots(kg))
    return tr(kg)

  def kernel(self, body: Any, stage: str, shard: int | None = None) -> UOp:
    """A kernel body (a SINK with KernelInfo) in range form, with its own kernel-local buffers (as launched on device
    `shard` of its device tuple, when it has one)."""
    return Translator(self, stage, kernel=True, shard=shard if launches(body) != (None,) else None)(body)

  def storage(self, u: Any) -> Any:
    """A callified CALL's arg: its tinyspec BUFFER; for a BUFFER over a device tuple, a tuple of one BUFFER per device
    (a kernel graph's PARAM bound to it picks its launch's)."""
    tr = Translator(self, "callified")
    n = multi_count(u)
    return tr(u) if n is None else tuple(tr.per_device(n, lambda: tr(u)))

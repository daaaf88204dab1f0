"""rangeify (TENSOR -> KERNEL): realize, allocate, index: a kernel graph whose CALL bodies are kernel SINKs.

1. pm_prepare (rule table): DETACH is dropped, AFTER is moved under views (AFTER(view(x), d) -> view(AFTER(x, d))) so an
   AFTER always sits on storage and names one version of it, GETTUPLE of a bare TUPLE is folded.
2. schedule.Schedule (plain Python) chooses what is realized and the kernels, their storage versions and their order.
   Realized (realize="minimal"): SINK values that are not exactly a flat leaf, CONTIGUOUS, COPY, REDUCE, value-call
   outputs and their args that are not flat storage, the storage under an AFTER; STORE becomes a kernel writing its
   target in place. realize="all" also realizes every elementwise value.
3. Every kernel becomes CALL(body, args...): slot 0 is the buffer it writes (for a precompiled call: the inputs, then
   one output buffer per TUPLE element), then one slot per storage version it reads. Its storage is BUFFER/PARAM, or
   AFTER(BUFFER, calls...) naming every kernel it must run after: the writer of the version read (RAW); for the
   written arg, the previous writer (WAW) and every reader of the old contents (WAR). A read arg is bound first as
   the value the kernel reads when that is a RESHAPE chain of the storage (a zero-offset view in the storage's element
   order: RESHAPE(BUFFER), RESHAPE(AFTER(BUFFER, calls...))); the pm_call_args table then binds every arg to the storage
   it views (4.). Written args (slot 0, opaque calls, outputs) and the args of a nested kernel graph, which is checked
   by the KERNEL_GRAPH rules even inside a graph checked at TENSOR, are storage from the start. The body
     SINK(END(STORE(INDEX(PARAM(0), flat(r0..rn)), value), r0..rn))
   comes from the pm_indexing table (indexing.py) rewriting the value addressed at the output RANGEs (view INDEXes, the
   transient form of docs/ir.md, stand in a kernel whose rewrite a Trace's step limit stopped); a REDUCE is
   REDUCE(value, reduce RANGEs) with AxisType.REDUCE ranges. A value call left at rangeify is lowered on its own into a
   nested kernel graph whose output storage is PARAMs after its input PARAMs; GETTUPLE(call, i) reads
   AFTER(out_buf_i, CALL). A precompiled call (a SINK of STOREs into its PARAMs, docs/ir.md) is an opaque call writing
   the args its body stores into; its body is lowered into a nested kernel graph whose STOREs write those PARAMs. A COPY
   is CALL(COPY(PARAM(1), device), out BUFFER on the device, source storage). Every kernel is on one device: a fresh
   buffer is on its node's device, and a node computed from constants alone, which has none, is on its readers' (the
   schedule's Devices).
4. pm_call_args (rule table) turns every view arg into its storage: call_arg_view_to_storage strips the RESHAPEs of a
   BUFFER/PARAM, call_arg_after_view those of an AFTER. Between two of its applications some CALLs still take views:
   legal at TENSOR (a view of storage is a value), flagged at KERNEL (kgraph.call_arg_storage), so legal at the union.
5. The root is SINK of one entry per tensor SINK entry, in order:
   - a value: AFTER(BUFFER, writer CALL) of its buffer, or the input BUFFER itself when it is exactly an unwritten input
     (seen through RESHAPEs only). A version of storage that a later kernel overwrites is copied first.
   - an effect (STORE, GROUP, END, opaque CALL): AFTER(BUFFER written by its first kernel, every kernel performing it).
     It evaluates to that buffer's contents; the tensor graph gives None there.
6. Variables: a kernel reads a bounded variable as its DEFINE_VAR (the indexing rule index_of_variable strips a BIND), and
   every CALL gets, after its other args, one arg per variable its body reads, by name: the BIND of it the tensor graph
   holds, or the DEFINE_VAR itself when the graph leaves it unbound (a caller binds it, or the run's inputs give it).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.callify import tuple_element
from tinyspec.lower.indexing import VIEW, pm_indexing, flatten, iconst, vindex
from tinyspec.lower.schedule import Kernel, Read, Schedule
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.spec.shared import free_vars
from tinyspec.uop import AxisType, GroupOp, Ops, UOp, graph_binds, is_precompiled_call, is_value_call, next_buffer_id, storage_of, walk


def _after_through_view(a: UOp, v: UOp) -> UOp:
  return v.replace(src=(a.replace(src=(v.src[0], *a.src[1:])),))


pm_prepare = PatternMatcher([
  ("strip_detach", UPat(Ops.DETACH, src=(UPat.var("x"),)), lambda x: x),
  ("after_through_view", UPat(Ops.AFTER, src=(UPat(GroupOp.Movement, name="v"),), allow_any_len=True, name="a"), _after_through_view),
  ("prepare_gettuple_of_tuple", UPat(Ops.GETTUPLE, src=(UPat(Ops.TUPLE, name="t"),), name="g"), tuple_element),
], "pm_prepare")


@dataclass
class KernelCtx:
  """What the indexing rules need: the PARAM each leaf of the kernel is loaded from; and the kernel's args (PARAM slot k
  is bound to args[k]), which give a PARAM's meaning to whoever judges a rewrite inside the kernel."""
  leaves: dict[UOp, UOp]
  args: tuple[UOp, ...] = ()


# ---- call args: bound as the views a kernel reads, then to the storage under them ----
def reshape_base(a: UOp) -> UOp:
  while a.op is Ops.RESHAPE: a = a.src[0]
  return a


def _args_to_storage(call: UOp, base_ops: frozenset) -> UOp | None:
  """The CALL with each arg that is a RESHAPE chain of storage (its base op in base_ops) bound to that storage."""
  if not call.src or is_value_call(call): return None  # a value call's args are tensor values
  new = []
  for a in call.src[1:]:
    b = reshape_base(a)
    new.append(b if a.op is Ops.RESHAPE and b.op in base_ops and storage_of(b).op in GroupOp.Storage else a)
  if all(x is y for x, y in zip(new, call.src[1:])): return None
  return call.replace(src=(call.src[0], *new))


def _call_arg_view_to_storage(call: UOp) -> UOp | None: return _args_to_storage(call, GroupOp.Storage)
def _call_arg_after_view(call: UOp) -> UOp | None: return _args_to_storage(call, frozenset({Ops.AFTER}))


pm_call_args = PatternMatcher([
  # a zero-offset view of flat storage in its element order reads exactly the storage: the arg is the storage itself
  ("call_arg_view_to_storage", UPat(Ops.CALL, name="call"), _call_arg_view_to_storage),
  # the view of a version of storage: the arg is that version, AFTER(storage, writers...) with the view dropped
  ("call_arg_after_view", UPat(Ops.CALL, name="call"), _call_arg_after_view),
], "pm_call_args")


def _read_views(roots: list[UOp], reads: dict) -> dict[UOp, UOp]:
  """For each leaf a kernel reads: the longest RESHAPE chain of it the kernel's expression holds (first found on ties)."""
  best: dict[UOp, tuple[UOp, int]] = {}
  for u in UOp(Ops.SINK, dtypes.void, tuple(roots)).toposort(gate=lambda u: u not in reads):
    if u.op is not Ops.RESHAPE or u in reads: continue
    b, n = u, 0
    while b.op is Ops.RESHAPE and b not in reads: b, n = b.src[0], n + 1  # noqa: E702
    if b in reads and n > best.get(b, (None, 0))[1]: best[b] = (u, n)
  return {leaf: v for leaf, (v, _) in best.items()}


def _node_of(key) -> UOp:
  return key if isinstance(key, UOp) else key[-1]


def _param(slot: int, storage: UOp) -> UOp:
  a = storage.arg
  return UOp.param(slot, storage.dtype, a.size, a.device, a.addrspace)


def _dedupe(xs: list) -> list: return list(dict.fromkeys(xs))


def with_var_args(call: UOp, binds: dict[str, UOp]) -> UOp:
  """call with one more arg per variable its body reads that no arg names yet, in name order: its BIND in binds, or the
  DEFINE_VAR itself (passed on, for a caller or the run's inputs to bind)."""
  need = free_vars(call.src[0])
  have = {(a.src[0] if a.op is Ops.BIND else a).arg.name for a in call.src[1:] if a.op in GroupOp.Variable}
  if not need - have: return call
  vars_of = {u.arg.name: u for u in walk((call.src[0],)) if u.op is Ops.DEFINE_VAR}
  extra = [binds.get(n, vars_of[n]) for n in sorted(need - have)]
  return call.replace(src=(*call.src, *extra))


# the id of each fresh BUFFER, per graph lowered: lowering a graph again gives the same kernel graph, node for node (blame
# re-runs a pass and finds the node that broke the spec by identity), while a new graph still gets ids never used before.
# Keyed by the pass's input root, which its caller holds while it runs the pass again: the prepared SINK and the SINK of
# a nested graph are made by the pass itself and die with it, so ids keyed by them would be allocated afresh every run.
_BUFFER_IDS: weakref.WeakKeyDictionary[UOp, dict] = weakref.WeakKeyDictionary()


class _Builder:
  def __init__(self, sched: Schedule, options: LowerOptions, trace: Trace, tables: Tables, out_params: list[UOp] | None, ids: dict,
               views: bool = True):
    self.s, self.options, self.trace, self.tables = sched, options, trace, tables
    self.ids = ids
    self.binds = graph_binds(sched.sink)
    self.buffers: dict = {}
    self.nested: dict[UOp, UOp] = {}
    self.empty: set[Kernel] = set()  # kernels with no iterations: nothing runs, so no CALL is made
    self.views = views and out_params is None  # read args bound as views first (the call_args table turns them into storage)
    if out_params is not None:
      if len(out_params) != len(sched.entries): raise ValueError("a nested graph needs one output PARAM per value")
      for p, (kind, r) in zip(out_params, sched.entries):
        if kind == "effect": raise ValueError("a value call returns an effect; TUPLE elements must be values")
        self.buffers[r.key] = p

  # ---- storage and args ----
  def storage(self, key: Any) -> UOp:
    if (b := self.buffers.get(key)) is not None: return b
    if isinstance(key, UOp) and key.op in GroupOp.Storage: return key
    n = _node_of(key)
    if (bid := self.ids.get(key)) is None: bid = self.ids[key] = next_buffer_id()
    b = self.buffers[key] = UOp.buffer(n.dtype, n.size, self.s.device_of(key), id=bid)  # a node of constants: where its readers are
    return b

  def _after(self, b: UOp, ks: list[Kernel]) -> UOp:
    if any(k.call is None and k not in self.empty for k in ks): raise RuntimeError("a kernel was built before one it depends on")
    deps = _dedupe([k.call for k in ks if k.call is not None])
    return b.after(*deps) if deps else b

  def read_arg(self, r: Read) -> UOp:
    ks = ([self.s.writer[(r.key, r.version)]] if r.version >= 1 else []) + list(r.extras)
    return self._after(self.storage(r.key), ks)

  def bind(self, arg: UOp, value: UOp, leaf: UOp) -> UOp:
    """The read arg `arg` (storage) bound as `value`, the kernel's view of `leaf`, when value is a RESHAPE chain of it:
    the chain applied to the storage shaped as the leaf."""
    if not self.views: return arg
    chain = []
    while value is not leaf and value.op is Ops.RESHAPE: chain.append(value); value = value.src[0]  # noqa: E702
    if value is not leaf or leaf.shape is None or leaf.size != arg.size: return arg
    v = arg if leaf.shape == arg.shape else arg.reshape(leaf.shape)
    for r in reversed(chain): v = r.replace(src=(v,))
    return v

  def write_arg(self, k: Kernel, key: Any, ver: int) -> UOp:
    ks = [self.s.writer[(key, ver - 1)]] if ver >= 2 else []
    ks += [rk for kk, rk in k.war if kk == key]
    if k.target is not None: ks += list(k.target_ref.extras)
    return self._after(self.storage(key), ks)

  # ---- kernels ----
  def build(self) -> UOp:
    for k in self.s.order: self.build_kernel(k)
    out = []
    for kind, r in self.s.entries:
      if kind == "effect":
        first = next((w for k in r for w in k.writes), None)
        if first is None: raise ValueError("an effect entry whose kernels write no storage")
        out.append(self._after(self.storage(first[0]), list(r)))
      else: out.append(self.read_arg(r))
    return UOp(Ops.SINK, dtypes.void, tuple(out))

  def build_kernel(self, k: Kernel) -> None:
    self._build_kernel(k)
    if k.call is not None: k.call = with_var_args(k.call, self.binds)

  def _build_kernel(self, k: Kernel) -> None:
    if k.kind == "call": k.call = self.build_call(k)
    elif k.kind == "copy":
      (key, ver), r = k.writes[0], next(iter(k.reads.values()))
      src = self.storage(r.key)
      body = UOp(Ops.COPY, src.dtype, (_param(1, src),), k.node.arg)
      leaf = next(iter(k.reads))
      k.call = UOp(Ops.CALL, dtypes.void, (body, self.write_arg(k, key, ver), self.bind(self.read_arg(r), k.expr, leaf)))
    elif k.kind == "opaque":
      written = {key: self.write_arg(k, key, v) for key, v in k.writes}
      reads = [k.reads[self.s.flat_base(a)] for a in k.node.src[1:]]
      body = self.effects_graph(k.node.src[0]) if is_precompiled_call(k.node) else k.node.src[0]
      k.call = k.node.replace(src=(body, *[written[r.key] if r.key in written else self.read_arg(r) for r in reads]))
    elif (k.target if k.kind == "store" else k.expr).size == 0: self.empty.add(k)
    else: k.call = self.build_body(k)

  def build_body(self, k: Kernel) -> UOp:
    key, ver = k.writes[0]
    args = [self.write_arg(k, key, ver)]
    p0 = _param(0, self.storage(key))
    leaves: dict[UOp, UOp] = {}
    inplace = []
    slot = {args[0]: 0}
    views = _read_views([x for x in (k.expr, k.gate) if x is not None], k.reads) if self.views else {}
    for leaf, r in k.reads.items():
      if r.key == key and r.version == ver - 1: leaves[leaf] = p0; inplace.append(leaf)  # noqa: E702
      else:
        a = self.read_arg(r)
        if a not in slot:
          slot[a] = len(args)
          args.append(self.bind(a, views.get(leaf, leaf), leaf))
        leaves[leaf] = _param(slot[a], self.storage(r.key))
    if k.kind == "store":
      # the target is addressed through its own views, based on a marker so it never shares a leaf with the value
      marker = p0.replace(tag="store_target")
      leaves[marker] = p0
      target = _rebase(k.target, marker)
      shape = target.shape
      if k.expr.shape != shape: raise ValueError(f"STORE of a {k.expr.shape} value into a {shape} target")
      ro = _ranges(shape)
      st = vindex(target, ro).store(vindex(k.expr, ro), *(() if k.gate is None else (vindex(k.gate, ro),)))
    else:
      own = k.own
      shape = own.shape if own is not None else k.expr.shape
      ro = _ranges(shape)
      if own is not None and own.op is Ops.REDUCE:
        x, (op, n) = own.src[0], own.arg
        rr = _ranges(x.shape[:n], len(ro), AxisType.REDUCE)
        loops = [r for r in rr if r.op is Ops.RANGE]
        val = UOp(Ops.REDUCE, x.dtype, (vindex(x, rr + ro), *loops), op) if loops else vindex(x, rr + ro)
      else: val = vindex(k.expr, ro)
      st = UOp(Ops.INDEX, p0.dtype, (p0, flatten(ro, shape))).store(val)
    loops = [r for r in ro if r.op is Ops.RANGE]
    sink = UOp(Ops.SINK, dtypes.void, (st.end(*loops) if loops else st,))
    body = self.trace.rewrite(sink, self.tables.pm_indexing, KernelCtx(leaves, tuple(args)), bottom_up=False, body=True)
    if inplace and _pointwise(body, p0) is False:
      # the value reads what this kernel overwrites at other elements: read a copy of the old contents instead
      for leaf in inplace:
        s = self.s.snapshot(leaf)
        if s.call is None: self.build_kernel(s)
        k.reads[leaf] = Read(s.writes[0][0], 1)
      return self.build_body(k)
    return UOp(Ops.CALL, dtypes.void, (body, *args))

  def effects_graph(self, body: UOp) -> UOp:
    """The nested kernel graph of a precompiled call's effect body: its STOREs into the call's PARAMs become kernels
    writing those PARAMs, its entries AFTER(PARAM, kernels...). Its args are storage from the start (no view args)."""
    if (g := self.nested.get(body)) is None:
      g = self.nested[body] = lower_graph(body, self.options, self.trace, self.tables, ids=self.ids.setdefault(("nested", body), {}),
                                          views=False)
    return g

  def build_call(self, k: Kernel) -> UOp:
    call = k.node
    leaves = [self.s.flat_base(a) for a in call.src[1:]]
    ins = [self.bind(self.read_arg(k.reads[leaf]), a, leaf) for a, leaf in zip(call.src[1:], leaves)]
    outs = [self.write_arg(k, key, v) for key, v in k.writes]
    if (g := self.nested.get(call.src[0])) is None:
      body, n_in = call.src[0], len(ins)
      params = [_param(n_in + i, self.storage(key)) for i, (key, _) in enumerate(k.writes)]
      g = self.nested[body] = lower_graph(UOp(Ops.SINK, dtypes.void, body.src), self.options, self.trace, self.tables, params,
                                          self.ids.setdefault(("nested", body), {}))
    return UOp(Ops.CALL, dtypes.void, (g, *ins, *outs), call.arg)


def _ranges(shape: tuple, first_axis: int = 0, kind: AxisType = AxisType.LOOP) -> list[UOp]:
  """One index per axis: a RANGE, or CONST 0 for an axis of size 1 (a loop of one iteration is no loop)."""
  return [iconst(0) if d == 1 else UOp.range(d, first_axis + i, kind) for i, d in enumerate(shape)]


def _rebase(view: UOp, base: UOp) -> UOp:
  """The chain of movement ops `view` applied to `base` instead of the storage it is on."""
  chain = []
  while view.op in GroupOp.Movement: chain.append(view); view = view.src[0]  # noqa: E702
  if base.shape != view.shape: base = base.reshape(view.shape)
  for v in reversed(chain): base = v.replace(src=(base,))
  return base


def _pointwise(body: UOp, p0: UOp) -> bool | None:
  """Every load of the output PARAM reads the element the kernel stores at that point. None while a view INDEX is left
  (a Trace's step limit stopped the indexing rewrite of the body): it cannot be told yet."""
  nodes = body.toposort()
  if any(u.op is Ops.INDEX and u.arg == VIEW for u in nodes): return None
  stores = [u.src[0] for u in nodes if u.op is Ops.STORE]
  loads = [u.src[0] for u in nodes if u.op is Ops.LOAD and u.src[0].src[0] is p0]
  return len(stores) == 1 and all(i is stores[0] for i in loads)


def lower_graph(sink: UOp, options: LowerOptions, trace: Trace, tables: Tables, out_params: list[UOp] | None = None,
                ids: dict | None = None, views: bool = True) -> UOp:
  """The kernel graph of a prepared tensor SINK, its kernel bodies indexed with tables.pm_indexing. With out_params,
  entry i is written into out_params[i]. ids maps what needs a fresh BUFFER to its id (kept by the caller to give the
  same ids when the same graph is lowered again). views False binds every read arg as storage at once."""
  if sink.op is not Ops.SINK: raise ValueError(f"rangeify needs a SINK root, got {sink.op.name}")
  if ids is None: ids = _BUFFER_IDS.setdefault(sink, {})
  sched = Schedule(sink, options.realize, nested_outputs=out_params is not None,
                   out_devices=None if out_params is None else [p.arg.device for p in out_params])
  return _Builder(sched, options, trace, tables, out_params, ids, views).build()


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  prepare = tables.pm_prepare
  prepared = trace.rewrite(root, prepare, bottom_up=True)
  # stopped by a step limit before the prepare table is done, the graph is a tensor graph the schedule may not take yet (a GETTUPLE
  # of a TUPLE): it is the pass's result as it stands (asked of every node, not by a rewrite: no rule is applied)
  if trace.exhausted and any(prepare.rewrite(u) is not None for u in prepared.toposort()): return prepared
  # stopped inside a kernel body, the trace is exhausted and this leaves the view args as they are (legal at TENSOR)
  graph = lower_graph(prepared, options, trace, tables, ids=_BUFFER_IDS.setdefault(root, {}))
  return trace.rewrite(graph, tables.pm_call_args, bottom_up=True)


RANGEIFY = Pass("rangeify", Stage.TENSOR, Stage.KERNEL, run, (pm_prepare, pm_indexing, pm_call_args))

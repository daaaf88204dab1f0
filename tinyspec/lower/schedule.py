"""The kernel schedule of a tensor graph: what is realized, which kernels exist, what each reads and writes, and the
order between them. Plain Python over the graph; rangeify turns the schedule into UOps.

Storage model. A storage key is a BUFFER or PARAM (an input), or a realized tensor node (a fresh buffer). Every kernel
that writes a key makes a new version of it: version 0 is an input's initial contents, version 1 of a realized node is
written by its own kernel, and every STORE adds one. A tensor node that reads storage (a leaf: BUFFER, PARAM, AFTER, or
a realized node) reads one version:
  BUFFER/PARAM -> 0; a realized node -> 1; AFTER(s, deps...) -> the latest version of s's key written by a STORE in deps.
Order between kernels: a reader of version v runs after the writer of v (RAW) and before the writer of v+1 (WAR);
writers of one key run in version order (WAW). When a WAR edge would close a cycle (a kernel that must read an old
version also depends on its overwrite), the old version is first copied into a snapshot buffer, which the reader
reads instead.

Devices. A kernel runs on one device: the device of the storage it writes. A realized node has its own device (derived
from its storage or COPY sources) unless it computes from constants and variables alone (a REDUCE of a CONST): such a
node is placed on the device of the kernels that read it, so a kernel on CPU:1 reads its sum of constants from CPU:1
memory, not from the "CPU" default, which only a node no kernel reads gets. When kernels on two devices read one such
node, it is computed again on each other device (its value kernel repeated there, `_on`); only a node of constants no
value kernel writes is copied (a copy kernel, COPY of the placed storage).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from tinyspec.spec.tensor import written_slots
from tinyspec.uop import GroupOp, Ops, UOp, is_precompiled_call, is_value_call
from tinyspec.uop import walk as walk_from

STORAGE_OPS = frozenset({Ops.BUFFER, Ops.PARAM, Ops.AFTER})
# ops a kernel computes in place (it indexes through them); everything else is realized or storage
COMPUTED = GroupOp.Movement | GroupOp.Elementwise | GroupOp.Variable | {Ops.CONST, Ops.DETACH}


@dataclass(frozen=True)
class Read:
  """A version of a storage key, plus kernels that must have run first for ordering only (AFTER deps that wrote
  other storage)."""
  key: Any
  version: int
  extras: tuple = ()


@dataclass(eq=False)
class Kernel:
  """One kernel of the schedule.
  kind: value (realize `expr` into the key's buffer), store (write `value` through the `target` view), copy (a COPY
        of flat storage to another device),
        call (a precompiled value call; writes one key per output), opaque (a void call: a precompiled call of effects writes
        the args its body stores into, another any of its args).
  own: the realized node this kernel computes, indexed through rather than loaded (None for copies)."""
  kind: str
  order: int
  writes: list[tuple[Any, int]]
  expr: UOp | None = None
  own: UOp | None = None
  target: UOp | None = None
  gate: UOp | None = None
  node: UOp | None = None
  reads: dict[UOp, Read] = field(default_factory=dict)
  deps: set = field(default_factory=set)
  war: list = field(default_factory=list)  # (key, reader) for each reader of a version this kernel overwrites
  target_ref: Read | None = None
  call: UOp | None = None

  def __lt__(self, other: Kernel) -> bool: return self.order < other.order
  def __hash__(self) -> int: return id(self)


def strip_views(u: UOp, ops: frozenset[Ops] = GroupOp.Movement) -> UOp:
  while u.op in ops: u = u.src[0]
  return u




DEFAULT_DEVICE = "CPU"  # where a realized node of constants goes when no kernel reads it


def _node_of(key: Any) -> UOp:
  """The tensor node a storage key stands for: the key itself, or the node a tuple key ends with."""
  return key if isinstance(key, UOp) else key[-1]


def walk(root: UOp) -> list[UOp]:
  """Toposort without entering any CALL's body (src[0]); call args are walked."""
  return walk_from((root,), lambda u: u.src[1:] if u.op is Ops.CALL else u.src)


class Schedule:
  """The kernels of one (tensor-stage, call-free or precompile) graph: build with `Schedule(sink, realize)`."""

  def __init__(self, sink: UOp, realize: str = "minimal", nested_outputs: bool = False, out_devices: list | None = None):
    """out_devices: of a nested graph, the device of the output storage each SINK entry is written into."""
    if realize not in ("minimal", "all"): raise ValueError(f"unknown realize mode {realize!r}; expected 'minimal' or 'all'")
    self.sink, self.mode, self.nested = sink, realize, nested_outputs
    self.nodes = walk(sink)
    self.kernels: list[Kernel] = []
    self.writer: dict[tuple[Any, int], Kernel] = {}
    self.nversions: dict[Any, int] = {}
    self.store_kernel: dict[UOp, Kernel] = {}
    self.refs: dict[UOp, Read] = {}
    self.snapshots: dict[UOp, Kernel] = {}
    self.entries: list[tuple[str, Any]] = []
    self.realized = self._choose_realized()
    self._make_kernels()
    self._make_entries()
    self.placed: dict[Any, Any] = {}
    self._place(out_devices)
    self._order()

  # ---- what is realized ----
  def _leafish(self, u: UOp, realized: set) -> bool:
    return u.op in STORAGE_OPS or u in realized

  def _flat_leaf(self, u: UOp, realized: set) -> bool:
    """u is a leaf seen through RESHAPEs only, so its row-major elements are exactly the leaf's storage."""
    return self._leafish(self.flat_base(u, realized), realized)

  def flat_base(self, u: UOp, realized: set | None = None) -> UOp:
    """The first leaf under u's RESHAPEs (or the first node that is not a RESHAPE)."""
    realized = self.realized if realized is None else realized
    while u.op is Ops.RESHAPE and not self._leafish(u, realized): u = u.src[0]
    return u

  def _choose_realized(self) -> set:
    r: set[UOp] = set()
    for u in self.nodes:
      if u.op in (Ops.CONTIGUOUS, Ops.COPY, Ops.REDUCE): r.add(u)
      elif u.op is Ops.GETTUPLE:
        if not is_value_call(u.src[0]): raise ValueError(f"GETTUPLE of {u.src[0].op.name} left at rangeify; expected a value CALL")
        r.add(u)
      elif self.mode == "all" and u.op in GroupOp.Elementwise: r.add(u)
      if u.op is Ops.CALL:  # call args are storage: realize those that are not exactly a flat leaf
        r.update(a for a in u.src[1:] if not self._flat_leaf(a, r))
      elif u.op is Ops.COPY and not self._flat_leaf(u.src[0], r): r.add(u.src[0])  # a COPY moves storage
      elif u.op is Ops.AFTER and not self._leafish(u.src[0], r): r.add(u.src[0])
    for e in self.sink.src:
      if e.shape is not None and not self._flat_leaf(e, r): r.add(e)
    return r

  # ---- storage versions ----
  def ref(self, leaf: UOp) -> Read:
    """The storage version a leaf node reads."""
    if (ret := self.refs.get(leaf)) is not None: return ret
    if leaf.op in GroupOp.Storage: ret = Read(leaf, 0)
    elif leaf.op is Ops.AFTER:
      base = self.ref(strip_views(leaf.src[0]))
      ver, extras = base.version, list(base.extras)
      for k in self.effect_kernels(leaf.src[1:]):
        hit = [v for key, v in k.writes if key is base.key]
        if hit: ver = max(ver, *hit)
        elif k not in extras: extras.append(k)
      ret = Read(base.key, ver, tuple(extras))
    elif leaf in self.realized: ret = Read(leaf, 1)
    else: raise ValueError(f"{leaf.op.name} is not storage; expected BUFFER, PARAM, AFTER or a realized value")
    self.refs[leaf] = ret
    return ret

  def effect_kernels(self, effects: tuple[UOp, ...]) -> list[Kernel]:
    """The kernels that perform these effects (STOREs, calls, and what GROUP/END/SINK/AFTER hold)."""
    out: list[Kernel] = []
    stack, seen = list(reversed(effects)), set()
    while stack:
      u = stack.pop()
      if u in seen: continue
      seen.add(u)
      if (k := self.store_kernel.get(u)) is not None: out.append(k)
      elif u.op in (Ops.GROUP, Ops.SINK, Ops.END): stack.extend(reversed(u.src))
      elif u.op is Ops.AFTER: stack.extend(reversed(u.src[1:]))
    return out

  def leaves(self, expr: UOp, own: UOp | None = None) -> dict[UOp, Read]:
    """The leaves a kernel computing expr loads (expr itself is indexed through when it is `own`)."""
    out: dict[UOp, Read] = {}
    stack, seen = [expr], set()
    while stack:
      u = stack.pop()
      if u in seen: continue
      seen.add(u)
      if u is not own and self._leafish(u, self.realized): out[u] = self.ref(u)
      elif u.op in COMPUTED or (u is own and u.op in GroupOp.Elementwise): stack.extend(u.src)
      elif u is own and u.op is Ops.REDUCE: stack.append(u.src[0])
      else: raise ValueError(f"{u.op.name} cannot be computed inside a kernel at rangeify")
    return out

  # ---- the kernels ----
  def _new(self, kind: str, writes: list, **kw) -> Kernel:
    k = Kernel(kind, len(self.kernels), [], **kw)
    self.kernels.append(k)
    for w in writes: self._add_write(k, w)
    return k

  def _add_write(self, k: Kernel, w: tuple[Any, int]) -> None:
    k.writes.append(w)
    self.writer[w] = k
    self.nversions[w[0]] = w[1]

  def _next_version(self, key: Any) -> int:
    return self.nversions.get(key, 0) + 1

  def _make_kernels(self) -> None:
    for u in self.nodes:
      if u.op is Ops.COPY:
        leaf = self.flat_base(u.src[0])
        k = self._new("copy", [(u, 1)], expr=u.src[0], node=u)
        k.reads = {leaf: self.ref(leaf)}
      elif u in self.realized and u.op is not Ops.GETTUPLE:
        expr = u.src[0] if u.op in (Ops.CONTIGUOUS, Ops.COPY) else u
        k = self._new("value", [(u, 1)], expr=expr, own=u if expr is u else None, node=u)
        k.reads = self.leaves(expr, k.own)
      elif u.op is Ops.STORE:
        if len(u.src) not in (2, 3): raise ValueError(f"STORE with {len(u.src)} sources; expected target, value[, gate]")
        base = strip_views(u.src[0])
        if not self._leafish(base, self.realized):
          raise ValueError(f"STORE target is a view of {base.op.name}; expected storage (BUFFER, PARAM, AFTER, CONTIGUOUS)")
        tref = self.ref(base)
        k = self._new("store", [(tref.key, self._next_version(tref.key))], expr=u.src[1], target=u.src[0],
                      gate=u.src[2] if len(u.src) == 3 else None, node=u)
        k.reads = {**self.leaves(u.src[1]), **(self.leaves(k.gate) if k.gate is not None else {})}
        k.target_ref = tref
        self.store_kernel[u] = k
      elif u.op is Ops.CALL:
        args = u.src[1:]
        if is_value_call(u):
          outs = [(UOp(Ops.GETTUPLE, v.dtype, (u,), i), 1) for i, v in enumerate(u.src[0].src)]
          k = self._new("call", outs, node=u)
        else:  # an opaque call may write any of its args: each gets a new version
          k = self._new("opaque", [], node=u)
        for a in args:
          leaf = self.flat_base(a)
          k.reads[leaf] = self.ref(leaf)
        if k.kind == "opaque":
          # a precompiled call writes the slots its body stores into; of another opaque call any arg may be written
          written = sorted(written_slots(u.src[0])) if is_precompiled_call(u) else range(len(args))
          for leaf in dict.fromkeys(self.flat_base(args[i]) for i in written if i < len(args)):
            self._add_write(k, (k.reads[leaf].key, self._next_version(k.reads[leaf].key)))
        self.store_kernel[u] = k

  def _make_entries(self) -> None:
    for i, e in enumerate(self.sink.src):
      if e.shape is None:
        ks = self.effect_kernels((e,))
        if not ks: raise ValueError(f"SINK entry {i} ({e.op.name}) is neither a value nor an effect with a kernel")
        self.entries.append(("effect", ks))
        continue
      base = self.flat_base(e)
      r = self.ref(base) if self._leafish(base, self.realized) else None
      final = r is not None and r.version == self.nversions.get(r.key, 0)
      if final and not self.nested: self.entries.append(("ref", r))
      elif final and r.key in self.realized and r.key not in self.out_keys_taken():
        self.entries.append(("out", r))
      else:  # a copy: of a version that is overwritten later, or into the output PARAM of a nested graph
        k = self._new("value", [(("entry", i, e), 1)], expr=e, node=e)
        k.reads = self.leaves(e)
        self.entries.append(("ref", Read(("entry", i, e), 1)))

  def out_keys_taken(self) -> set:
    return {r.key for kind, r in self.entries if kind == "out"}

  # ---- devices ----
  def device_of(self, key: Any) -> Any:
    """The device of a storage key: its node's own, the one _place chose for a node of constants, else "CPU"."""
    if isinstance(key, tuple) and key[0] == "snapshot": return self.device_of(self.ref(key[1]).key)  # beside what it copies
    if (d := _node_of(key).device) is not None: return d
    return self.placed.get(key, DEFAULT_DEVICE)

  def _own_device(self, key: Any) -> Any:
    return None if isinstance(key, tuple) and key[0] == "snapshot" else _node_of(key).device

  def _kernel_device(self, k: Kernel) -> Any:
    """The device k runs on, None for the kernels that pin none: a COPY (it crosses devices) and a value call (its nested
    graph's kernels have devices of their own). An opaque call runs where the storage it is given is."""
    if k.kind in ("copy", "call"): return None
    if k.kind == "opaque":
      return next((d for key in (*(r.key for r in k.reads.values()), *(w for w, _ in k.writes)) if (d := self._own_device(key)) is not None), None)
    return self.device_of(k.writes[0][0])

  def _place(self, out_devices: list | None) -> None:
    """Place each realized node of constants on the device of a kernel that reads it (readers first: kernels are made in
    graph order, a reader after what it reads, so a chain of such nodes takes its device from the end that has one);
    a reader on another device reads a copy on its own (_copy_to). A nested graph's output goes where its storage is."""
    for (kind, r), d in zip(self.entries, out_devices or ()):
      if kind != "effect" and self._own_device(r.key) is None: self.placed[r.key] = d
    for k in reversed(self.kernels):
      if (d := self._kernel_device(k)) is None: continue
      for r in k.reads.values():
        if self._own_device(r.key) is None and r.key not in self.placed: self.placed[r.key] = d
    for k in list(self.kernels):
      if k.kind not in ("value", "store") or (d := self._kernel_device(k)) is None: continue
      for leaf, r in list(k.reads.items()):
        if self._own_device(r.key) is None and self.device_of(r.key) != d: k.reads[leaf] = self._on(leaf, r, d)

  def _on(self, leaf: UOp, r: Read, device: Any) -> Read:
    """The version r of a node of constants on another device: computed again there when its writer is a value kernel
    (what it reads, constants too, is then read there in turn), so a value any device can compute never crosses
    devices and every device's kernels see the same constant expression (an arange stays an index expression the
    scatter pass can inline); copied otherwise."""
    w = self.writer.get((r.key, r.version))
    if w is None or w.kind != "value": return self._copy_to(leaf, r, device)
    key = ("on", device, r.key, r.version, _node_of(r.key))
    if (key, 1) not in self.writer:
      k = self._new("value", [(key, 1)], expr=w.expr, own=w.own, node=w.node)
      self.placed[key] = device
      k.reads = {lf: self._on(lf, rr, device) if self._own_device(rr.key) is None and self.device_of(rr.key) != device else rr
                 for lf, rr in w.reads.items()}
    return Read(key, 1)

  def _copy_to(self, leaf: UOp, r: Read, device: Any) -> Read:
    """The version r of a node of constants, copied to device (one copy kernel per version and device)."""
    node = UOp(Ops.COPY, leaf.dtype, (leaf,), device)
    key = ("copy", r.key, r.version, node)
    if (key, 1) not in self.writer:
      k = self._new("copy", [(key, 1)], expr=leaf, node=node)
      k.reads = {leaf: r}
    return Read(key, 1)

  # ---- order ----
  def _reaches(self, a: Kernel, b: Kernel) -> bool:
    """a depends on b, directly or through other kernels."""
    stack, seen = [a], set()
    while stack:
      k = stack.pop()
      if k is b: return True
      if k in seen: continue
      seen.add(k)
      stack.extend(k.deps)
    return False

  def _raw_deps(self, k: Kernel) -> None:
    for r in k.reads.values():
      if r.version >= 1:
        if (w := self.writer.get((r.key, r.version))) is None: raise ValueError(f"no kernel writes version {r.version} of {r.key}")
        if w is not k: k.deps.add(w)
      k.deps.update(x for x in r.extras if x is not k)
    for key, v in k.writes:
      if v >= 2: k.deps.add(self.writer[(key, v - 1)])
    if k.target is not None: k.deps.update(self.ref(strip_views(k.target)).extras)

  def snapshot(self, leaf: UOp) -> Kernel:
    """A kernel copying the version `leaf` reads into a buffer of its own."""
    if (s := self.snapshots.get(leaf)) is None:
      s = self.snapshots[leaf] = self._new("value", [(("snapshot", leaf), 1)], expr=leaf, node=leaf)
      s.reads = {leaf: self.ref(leaf)}
      self._raw_deps(s)
    return s

  def _order(self) -> None:
    for k in self.kernels: self._raw_deps(k)
    readers: dict[tuple[Any, int], list[Kernel]] = {}
    for k in self.kernels:
      for r in k.reads.values(): readers.setdefault((r.key, r.version), []).append(k)
    for w in list(self.kernels):
      for key, v in w.writes:
        rs = readers.get((key, v - 1), [])
        i = 0
        while i < len(rs):
          rk = rs[i]; i += 1  # noqa: E702
          if rk is w or (key, rk) in w.war: continue
          if not self._reaches(rk, w):
            w.war.append((key, rk)); w.deps.add(rk)  # noqa: E702
            continue
          if rk in self.snapshots.values(): raise ValueError("cannot order a snapshot before its overwrite")
          for leaf, r in list(rk.reads.items()):
            if (r.key, r.version) != (key, v - 1): continue
            s = self.snapshot(leaf)
            rk.reads[leaf] = Read(s.writes[0][0], 1)
            rk.deps.add(s)
            if s not in rs: rs.append(s)
    # kernels in an order that respects every dep, earliest-made first
    indeg = {k: len(k.deps) for k in self.kernels}
    users: dict[Kernel, list[Kernel]] = {k: [] for k in self.kernels}
    for k in self.kernels:
      for d in k.deps: users[d].append(k)
    heap = [k for k in self.kernels if indeg[k] == 0]
    heapq.heapify(heap)
    self.order: list[Kernel] = []
    while heap:
      k = heapq.heappop(heap)
      self.order.append(k)
      for u in users[k]:
        indeg[u] -= 1
        if indeg[u] == 0: heapq.heappush(heap, u)
    if len(self.order) != len(self.kernels): raise ValueError("the kernels of this graph have no order (a dependency cycle)")

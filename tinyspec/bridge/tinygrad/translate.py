"""Translate: tinygrad UOps of every captured stage to tinyspec UOps.

Every decision (a tinygrad op or form -> its tinyspec form) is one entry of `RULES`, the table in table.py; docs/tinygrad.md
holds the same table (`rules_markdown()` writes it, a test holds the two word for word). The rules run in the machinery
of translator.py (`Translator`, one graph of one stage; `Translation`, every stage of a capture). This module takes a
whole capture through it: each stage's graphs, the kernel graphs bound to the callified CALL, the inputs' contents and
the outputs, as the checks and evaluations read them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinyspec.bridge.tinygrad import table
from tinyspec.bridge.tinygrad.devices import launches, multi_count
from tinyspec.bridge.tinygrad.translator import Translation, Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import scope
from tinyspec.dtype import dtypes
from tinyspec.spec.shared import free_vars
from tinyspec.uop import Ops, UOp, walk


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
  return Translator(t, "callified")(call)


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
  t = Translation(table.RULES, strict=strict, device=cap.device)   # the table as it is now (a test may swap it)
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

  # no tensor graph: a recording's graphs made outside a schedule
  if cap.tensor is not None: one("tensor", cap.tensor, lambda: Translator(t, "tensor")(cap.tensor))
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
    for j in launches(k): one("kernel", k, lambda k=k, j=j: Translator(t, "kernel", kernel=True, shard=j)(k))
  for ast, prg in cap.programs:
    for j in launches(prg):
      out = one("program", prg, lambda prg=prg, j=j: Translator(t, "program", shard=j)(prg))
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
  try: return Translator(t, "tensor")(u)
  except Untranslatable: return None
  finally: t.strict = strict

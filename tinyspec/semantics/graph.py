"""Evaluation of TENSOR and KERNEL_GRAPH graphs: values, storage and effects, value calls and kernel calls."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tinyspec.semantics.alu import EvalError, elementwise, movement, np_dtype, reduce_axes
from tinyspec.semantics.kernel import guard, evaluate_kernel, var_value
from tinyspec.uop import GroupOp, Ops, UOp, graph_binds, is_kernel_body, walk

KernelRunner = Callable[[UOp, list[np.ndarray]], None]  # (kernel CALL, its args: flat arrays, a 0-d array for a variable arg)
_KERNEL_OPS = frozenset({Ops.INDEX, Ops.LOAD, Ops.RANGE, Ops.SPECIAL, Ops.END})  # meaningful only inside a kernel body


class Storage:
  """The BUFFERs of one evaluation: each id's flat mutable contents and its contents as given."""

  def __init__(self, inputs: dict | None, kernel_runner: KernelRunner | None):
    inputs = dict(inputs or {})
    # a str key names a variable: the value of a DEFINE_VAR that no CALL binds
    self.var_vals: dict[str, int] = {k: int(v) for k, v in inputs.items() if isinstance(k, str)}
    self.inputs = {k: v for k, v in inputs.items() if not isinstance(k, str)}
    self.kernel_runner = kernel_runner
    self.cells: dict[int, np.ndarray] = {}
    self.initial: dict[int, np.ndarray] = {}
    self.nodes: dict[int, UOp] = {}

  def cell(self, u: UOp) -> np.ndarray:
    bid = u.arg.id
    if bid in self.cells:
      seen = self.nodes[bid]
      if seen.arg.size != u.arg.size or seen.dtype is not u.dtype:
        raise EvalError(u, f"BUFFER id {bid} appears with size {u.arg.size} {u.dtype.name} and size {seen.arg.size} {seen.dtype.name}")
      return self.cells[bid]
    dt = np_dtype(u)
    if bid in self.inputs:
      data = np.asarray(self.inputs[bid])
      if data.size != u.arg.size: raise EvalError(u, f"input for BUFFER id {bid} has {data.size} elements, the buffer has {u.arg.size}")
      with np.errstate(all="ignore"): data = np.array(data.reshape(-1), dtype=dt)
    else: data = np.zeros(u.arg.size, dtype=dt)
    self.cells[bid], self.nodes[bid] = data, u
    self.initial[bid] = data.copy()
    return data


def _children(u: UOp) -> tuple[UOp, ...]:
  # a CALL's body is evaluated by the call, in its own scope; a BIND's value is its CONST, whatever binds its variable here
  if u.op is Ops.BIND: return ()
  return u.src[1:] if u.op is Ops.CALL else u.src


def topo(root: UOp) -> list[UOp]:
  """Every node reachable from root without entering a CALL body, sources before users (iterative)."""
  return walk((root,), _children)


def _view_chain(u: UOp) -> tuple[list[UOp], UOp]:
  """The movement ops from u down to what is under them (AFTERs passed through), outermost first, and that node."""
  chain: list[UOp] = []
  while u.op in GroupOp.Movement or u.op is Ops.AFTER:
    if u.op in GroupOp.Movement: chain.append(u)
    u = u.src[0]
  return chain, u


_EFFECT = object()


def _flat_storage(u: UOp) -> bool:
  """u is storage seen through AFTERs and RESHAPEs only: its elements are the storage's, in their order, so a call given u
  reads and writes the storage itself."""
  while u.op in (Ops.AFTER, Ops.RESHAPE) and u.src: u = u.src[0]
  return u.op in (Ops.BUFFER, Ops.PARAM, Ops.CONTIGUOUS)


class GraphEval:
  """One scope: the top-level graph, or a CALL body with its PARAM slots bound to `params` (flat arrays)."""

  def __init__(self, storage: Storage, params: list[np.ndarray] | None = None, call: UOp | None = None,
               var_vals: dict[str, int] | None = None):
    self.storage, self.params, self.call = storage, params, call
    self.var_vals = storage.var_vals if var_vals is None else var_vals  # the variables of this scope, by name
    self.memo: dict[UOp, object] = {}
    self.contig: dict[UOp, np.ndarray] = {}

  def run(self, root: UOp) -> object:
    with np.errstate(all="ignore"):
      for u in topo(root):
        if u in self.memo: continue
        fn = _HANDLERS.get(u.op)
        if fn is None:
          if u.op in GroupOp.Elementwise: fn = GraphEval._elementwise
          elif u.op in GroupOp.Movement: fn = GraphEval._movement
          elif u.op in _KERNEL_OPS: raise EvalError(u, "is a kernel-body op outside a kernel CALL; run kernel bodies with evaluate_kernel")
          else: raise EvalError(u, "has no meaning in a tensor or kernel graph")
        # a kernel runner's own errors (compilers, devices) pass through unchanged
        self.memo[u] = fn(self, u) if u.op is Ops.CALL else guard(u, fn, self, u)
    return self.memo[root]

  # ---- helpers ----
  def value(self, u: UOp, s: UOp) -> np.ndarray:
    v = self.memo[s]
    if not isinstance(v, np.ndarray): raise EvalError(u, f"source {s.op.name} is not a value")
    return v

  def base_cell(self, u: UOp) -> np.ndarray | None:
    """The flat mutable storage under a view chain / AFTER chain, or None when u is not storage."""
    _, u = _view_chain(u)
    if u.op is Ops.BUFFER: return self.storage.cell(u)
    if u.op is Ops.PARAM: return self._param_cell(u)
    if u.op is Ops.CONTIGUOUS:
      if u not in self.contig: self.contig[u] = np.array(self.value(u, u.src[0]).reshape(-1))
      return self.contig[u]
    return None

  def current(self, u: UOp) -> np.ndarray:
    """The value of a storage view as of now (a copy)."""
    chain, u = _view_chain(u)
    cell = self.base_cell(u)
    if cell is None: x = self.value(u, u)
    else: x = cell.reshape(u.shape)
    for m in reversed(chain): x = movement(m, x)
    return np.array(x)

  def index_map(self, u: UOp) -> tuple[np.ndarray, np.ndarray]:
    """For a view of storage: the flat storage position of every element (-1 in PAD regions), and the storage."""
    chain, u = _view_chain(u)
    cell = self.base_cell(u)
    if cell is None: raise EvalError(u, "is not storage (BUFFER, PARAM, AFTER, CONTIGUOUS or a view of one)")
    x = np.arange(cell.size, dtype=np.int64).reshape(u.shape)
    for m in reversed(chain): x = movement(m, x, fill=-1)
    return x, cell

  def _param_cell(self, u: UOp) -> np.ndarray:
    if self.params is None: raise EvalError(u, f"PARAM slot {u.arg.slot} outside any CALL body")
    slot = u.arg.slot
    if not 0 <= slot < len(self.params): raise EvalError(u, f"slot {slot} is not bound: the CALL has {len(self.params)} args")
    a = self.params[slot]
    if a.size != u.arg.size: raise EvalError(u, f"slot {slot} has size {u.arg.size} but its arg has {a.size} elements")
    if a.dtype != np_dtype(u): raise EvalError(u, f"slot {slot} has dtype {u.dtype.name} but its arg has numpy dtype {a.dtype}")
    return a

  # ---- handlers ----
  def _const(self, u: UOp) -> np.ndarray:
    return np.array(u.arg, dtype=np_dtype(u))

  def _var(self, u: UOp) -> np.ndarray:
    return np.array(var_value(u, self.var_vals), dtype=np_dtype(u))

  def _bind(self, u: UOp) -> np.ndarray:
    v, c = u.src
    if v.op is not Ops.DEFINE_VAR or c.op is not Ops.CONST: raise EvalError(u, "is not BIND(DEFINE_VAR, CONST)")
    return np.array(var_value(v, {v.arg.name: c.arg}), dtype=np_dtype(u))

  def call_vars(self, u: UOp) -> dict[str, int]:
    """The variables a kernel or nested graph CALL gives its body: those its BIND args bind and its DEFINE_VAR args pass on."""
    out: dict[str, int] = {}
    for a in u.src[1:]:
      if a.op in GroupOp.Variable: out[(a.src[0] if a.op is Ops.BIND else a).arg.name] = int(self.memo[a])
    return out

  def _buffer(self, u: UOp) -> np.ndarray:
    self.storage.cell(u)
    return self.storage.initial[u.arg.id]

  def _param(self, u: UOp) -> np.ndarray:
    return self._param_cell(u).copy()

  def _movement(self, u: UOp) -> np.ndarray:
    if len(u.src) != 1: raise EvalError(u, f"takes one source, has {len(u.src)}")
    return movement(u, self.value(u, u.src[0]))

  def _elementwise(self, u: UOp) -> np.ndarray:
    vals = [self.value(u, s) for s in u.src]
    shapes = {v.shape for v in vals[1:]} if u.op is Ops.WHERE and len(vals) == 3 and vals[0].shape == vals[1].shape else {v.shape for v in vals}
    if len(shapes) > 1: raise EvalError(u, f"sources have different shapes {sorted(map(str, shapes))}; EXPAND first")
    return elementwise(u, vals)

  def _reduce(self, u: UOp) -> np.ndarray:
    if not isinstance(u.arg, tuple): raise EvalError(u, "range-form REDUCE outside a kernel body")
    op, n = u.arg
    x = self.value(u, u.src[0])
    if not 0 <= n <= x.ndim: raise EvalError(u, f"cannot reduce {n} axes of shape {x.shape}")
    return reduce_axes(u, op, x, tuple(range(n)))

  def _pass(self, u: UOp) -> np.ndarray:
    if len(u.src) != 1: raise EvalError(u, f"takes one source, has {len(u.src)}")
    return self.value(u, u.src[0])

  def _multi(self, u: UOp) -> np.ndarray:
    """A sharded tensor is its shards side by side along the axis; a replicated one is the value its replicas all hold
    (replicas that differ are an error: no program on one device could give that value)."""
    shards = [self.value(u, s) for s in u.src]
    if u.arg is not None: return np.concatenate(shards, axis=u.arg)
    for i, x in enumerate(shards[1:], 1):
      # NaN equals NaN in every float dtype (bfloat16 and fp8 arrays are ml_dtypes', whose numpy kind is "V", not "f")
      if x.shape != shards[0].shape or not np.array_equal(x, shards[0], equal_nan=u.dtype.is_float):
        raise EvalError(u, f"replica {i} differs from replica 0: a replicated MULTI holds one value on every device")
    return shards[0]

  def _tuple(self, u: UOp) -> list:
    return [self.memo[s] for s in u.src]

  def _gettuple(self, u: UOp) -> object:
    t = self.memo[u.src[0]]
    if not isinstance(t, list): raise EvalError(u, f"source is a {u.src[0].op.name}, not a TUPLE or a CALL of one")
    if not isinstance(u.arg, int) or not 0 <= u.arg < len(t): raise EvalError(u, f"index {u.arg!r} out of range for {len(t)} outputs")
    return t[u.arg]

  def _store(self, u: UOp) -> object:
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (target, value[, gate]), has {len(u.src)} sources")
    if u.src[0].op is Ops.INDEX: raise EvalError(u, "STORE into an INDEX outside a kernel body")
    idx, cell = self.index_map(u.src[0])
    val = self.value(u, u.src[1])
    if val.shape != idx.shape: raise EvalError(u, f"value shape {val.shape} differs from target shape {idx.shape}")
    if val.dtype != cell.dtype: raise EvalError(u, f"value dtype {u.src[1].dtype.name} differs from the storage's ({cell.dtype})")
    mask = idx >= 0  # PAD regions of the target view are not written
    if len(u.src) == 3: mask &= np.broadcast_to(self.value(u, u.src[2]), idx.shape).astype(bool)
    cell[idx[mask]] = val[mask]
    return _EFFECT

  def _after(self, u: UOp) -> object:
    if not u.src: raise EvalError(u, "has no sources")
    if self._storage_like(u.src[0]): return self.current(u.src[0])
    return self.memo[u.src[0]]

  def _storage_like(self, u: UOp) -> bool:
    return _view_chain(u)[1].op in (Ops.BUFFER, Ops.PARAM, Ops.CONTIGUOUS)

  def _effect(self, u: UOp) -> object:
    return _EFFECT

  def _sink(self, u: UOp) -> list:
    return [None if self.memo[s] is _EFFECT or isinstance(self.memo[s], list) and s.op is Ops.CALL else self.memo[s] for s in u.src]

  def _call(self, u: UOp) -> object:
    if not u.src: raise EvalError(u, "has no body")
    body, args = u.src[0], u.src[1:]
    if body.op is Ops.TUPLE:
      params = []
      for k, a in enumerate(args):
        v = self.memo[a]
        if not isinstance(v, np.ndarray): raise EvalError(u, f"arg {k} ({a.op.name}) is not a value")
        params.append(np.array(v.reshape(-1)))
      return GraphEval(self.storage, params, u, self.var_vals).run(body)  # a value call's body reads the caller's variables
    cells = []
    for k, a in enumerate(args):
      if a.op in GroupOp.Variable:  # a scalar arg: its value, which the body reads as the DEFINE_VAR
        cells.append(np.array(self.memo[a]))
        continue
      c = self.base_cell(a) if _flat_storage(a) else None
      if c is None:
        v = self.memo[a]
        if not isinstance(v, np.ndarray): raise EvalError(u, f"arg {k} ({a.op.name}) is neither storage nor a value")
        c = np.array(v.reshape(-1))  # a computed value gets a scratch copy: writes to it are not seen
      cells.append(c)
    var_vals = self.call_vars(u)
    if is_kernel_body(body):
      if self.storage.kernel_runner is not None: self.storage.kernel_runner(u, cells)
      else: evaluate_kernel(body, cells, var_vals)
    elif body.op is Ops.SINK: GraphEval(self.storage, cells, u, var_vals).run(body)
    elif body.op is Ops.COPY:
      if not cells: raise EvalError(u, "a COPY call needs its destination as arg 0")
      v = GraphEval(self.storage, cells, u, var_vals).run(body)
      if not isinstance(v, np.ndarray) or v.size != cells[0].size: raise EvalError(u, "COPY body value does not fit arg 0")
      cells[0][:] = v.reshape(-1)
    else: raise EvalError(u, f"body {body.op.name} is none of TUPLE, kernel SINK, LINEAR, PROGRAM, kernel-graph SINK or COPY")
    return _EFFECT


_HANDLERS = {
  Ops.CONST: GraphEval._const, Ops.BUFFER: GraphEval._buffer, Ops.PARAM: GraphEval._param, Ops.REDUCE: GraphEval._reduce,
  Ops.CONTIGUOUS: GraphEval._pass, Ops.DETACH: GraphEval._pass, Ops.COPY: GraphEval._pass, Ops.MULTI: GraphEval._multi,
  Ops.TUPLE: GraphEval._tuple, Ops.GETTUPLE: GraphEval._gettuple, Ops.CALL: GraphEval._call,
  Ops.STORE: GraphEval._store, Ops.AFTER: GraphEval._after, Ops.GROUP: GraphEval._effect, Ops.SINK: GraphEval._sink,
  Ops.SOURCE: GraphEval._effect, Ops.DEFINE_VAR: GraphEval._var, Ops.BIND: GraphEval._bind,
}


def evaluate(root: UOp, inputs: dict | None = None, kernel_runner: KernelRunner | None = None) -> list | np.ndarray:
  """The numpy meaning of a graph. A SINK root gives one entry per source (None for effects); a value root, one array.
  inputs maps a BUFFER id to its contents, and a variable's name (str) to the value of a DEFINE_VAR no CALL binds."""
  if not isinstance(root, UOp): raise TypeError(f"evaluate takes a UOp, not {type(root).__name__}")
  storage = Storage(inputs, kernel_runner)
  # a DEFINE_VAR the graph binds elsewhere has that value; one no BIND names, the inputs' value of its name
  for name, b in graph_binds(root).items():
    v = b.src[1].arg
    if storage.var_vals.setdefault(name, v) != v: raise EvalError(b, f"variable {name} is bound to {v} but the inputs give {storage.var_vals[name]}")
  out = GraphEval(storage).run(root)
  if out is _EFFECT: return None
  if isinstance(out, list): return [None if x is None or not isinstance(x, np.ndarray) else np.array(x) for x in out]
  if not isinstance(out, np.ndarray): raise EvalError(root, "has no value")
  return np.array(out)

"""Evaluation of one kernel body (KERNEL-stage kernel SINK, or a PROGRAM / LINEAR) with the memory semantics of C.

The body runs as its generated C code does: tinyspec.semantics.loops gives the loops and the statement order (a
LINEAR's own order; for a kernel SINK the order linearize gives it, with every REDUCE as lower_reduce's accumulator
loop). Every LOAD sees every store that ran before it; nothing is merged or guessed.

Values and vectorization. A value is an `LArr`: a numpy array over the loop axes it depends on. A loop runs either
sequentially (one pass over its body per iteration, its range a scalar) or vectorized (its range an axis, every
statement of its body run for all iterations at once); tinyspec.semantics.dependence decides which, each time a loop
is about to run, and proves the vectorized run gives C's result. A sequential loop still computes, once for all its
iterations, the arithmetic and the loads of storage it does not write, and hands each iteration its slice.

Storage is a `Cell`: a PARAM binds the caller's flat array (written in place; two slots given the same array share
it); a BUFFER in the body is fresh zeros each time its declaration runs. A private copy adds a leading axis
("label") to a cell for each vectorized loop it is private to.
"""
from __future__ import annotations

import os

import numpy as np

from tinyspec.ops import atomic
from tinyspec.ops.image import image_dims_error
from tinyspec.semantics.alu import EvalError, elementwise
from tinyspec.semantics.dependence import GUARDED, HOIST_FROM, SMALL_LOOP, Cell, LArr, LoopAnalysis, LoopInfo, Ptr, at_iteration, union_axes
from tinyspec.semantics.loops import Item, Loop, kernel_items
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, walk

# the most iterations one loop nest (its loops' bounds times the kernel's threads) may run: past it the evaluator
# refuses the kernel with an EvalError rather than run for hours or allocate arrays of that many elements (a
# vectorized loop holds its values for every iteration at once). $TINYSPEC_MAX_ITERATIONS overrides it.
MAX_ITERATIONS = int(os.environ.get("TINYSPEC_MAX_ITERATIONS") or 1 << 26)


class KernelEval(LoopAnalysis):
  """Runs one kernel body on flat argument arrays, writing PARAM-bound arrays in place."""

  def __init__(self, body: UOp, args: list[np.ndarray], var_vals: dict[str, int] | None = None):
    self.items = kernel_items(body)
    self.args = args
    self.var_vals = dict(var_vals or {})
    self.env: dict[UOp, object] = {}
    self.keys: dict[UOp, int] = {}
    self.bounds: dict[int, int] = {}
    self.vec: list[int] = []      # the axes of the vectorized loops now running, outermost first
    self.threads: tuple[int, ...] = ()
    self.cells: list[Cell] = []
    self.param_cells: dict[int, Cell] = {}
    self.array_cells: dict[int, Cell] = {}
    self.ahead: dict[UOp, object] | None = None  # the analysis' own values while it computes a loop's indices ahead
    self.ahead_info: LoopInfo | None = None
    self.written: set[UOp] = set()
    self.nest = 1                 # iterations of the loops (and threads) around the statement now running

  # ---- running ----
  def run(self) -> None:
    with np.errstate(all="ignore"):
      self._threads()
      self._block(self.items)

  def _block(self, items: list[Item], skip: dict | None = None) -> None:
    env, it = self.env, None
    try:  # one handler for the whole block: a guard per node costs more than most nodes of a loop body
      for it in items:
        if isinstance(it, Loop): self._loop(it)
        elif skip is not None and it in skip: continue
        elif it.op is not Ops.SPECIAL: env[it] = _HANDLERS.get(it.op, KernelEval._other)(self, it)  # a SPECIAL is bound once
    except GUARDED as e:
      raise EvalError(it.range if isinstance(it, Loop) else it, f"cannot be evaluated: {type(e).__name__}: {e}") from e

  def _loop(self, loop: Loop) -> None:
    r = loop.range
    n = guard(r, self._bound, r)
    if n <= 0: return
    if self.nest * n > MAX_ITERATIONS:
      raise EvalError(r, f"runs a loop nest of {self.nest * n:,} iterations, past the evaluator's limit of {MAX_ITERATIONS:,} "
                      "(tinyspec.semantics.kernel.MAX_ITERATIONS, $TINYSPEC_MAX_ITERATIONS)")
    outer, self.nest = self.nest, self.nest * n
    try: self._run_loop(loop, r, n)
    finally: self.nest = outer

  def _run_loop(self, loop: Loop, r: UOp, n: int) -> None:
    key = self.keys.setdefault(r, len(self.keys))
    self.bounds[key] = n
    info = loop.info = loop.info or LoopInfo(loop)
    small = n * len(info.nodes) <= SMALL_LOOP  # running it costs less than analysing it
    private = self._plan(loop, key, n) if n > 1 and not small else None
    if private is None:
      dt, env = r.dtype.np, self.env
      pre, frontier = self._hoist(loop, key, n) if n >= HOIST_FROM and not small else (None, [])
      for v in range(n):
        env[r] = LArr(np.array(v, dtype=dt), ())
        for u in frontier: env[u] = at_iteration(pre[u], key, v)
        self._block(loop.body, pre)
      return
    self.env[r] = LArr(np.arange(n, dtype=r.dtype.np), (key,))
    for c in private: self._add_label(c, key)
    self.vec.append(key)
    try: self._block(loop.body)
    finally: self.vec.pop()
    for c in self.cells:
      if key in c.labels: self._drop_label(c, key)

  def _bound(self, r: UOp, b: LArr | None = None) -> int:
    if len(r.src) != 1: raise EvalError(r, f"takes one source (its bound), has {len(r.src)}")
    if not r.dtype.is_int: raise EvalError(r, f"dtype {r.dtype.name} is not an integer")
    if any(u.op is Ops.LOAD for u in walk((r.src[0],))): raise EvalError(r, "has a loop bound that depends on a loaded value")
    if b is None: b = self._val(r, r.src[0])
    if not isinstance(b, LArr): raise EvalError(r, f"bound {r.src[0].op.name} is not a value")
    if b.axes: raise EvalError(r, "bound depends on another range")
    return max(int(b.data), 0)

  def _threads(self) -> None:
    """SPECIALs (GPU thread indices) become axes of the whole kernel; their threads must not conflict."""
    specials, stack = [], list(self.items)
    while stack:
      it = stack.pop()
      if isinstance(it, Loop): stack.extend(it.body)
      elif it.op is Ops.SPECIAL and it not in specials: specials.append(it)
    if not specials: return
    for s in specials:
      if len(s.src) != 1 or s.src[0].op is not Ops.CONST: raise EvalError(s, "thread count is not a constant")
      key = self.keys.setdefault(s, len(self.keys))
      self.bounds[key] = max(int(s.src[0].arg), 0)
      self.nest *= max(self.bounds[key], 1)
      if self.nest > MAX_ITERATIONS:
        raise EvalError(s, f"runs {self.nest:,} threads, past the evaluator's limit of {MAX_ITERATIONS:,} iterations (MAX_ITERATIONS)")
      self.env[s] = LArr(np.arange(self.bounds[key], dtype=s.dtype.np), (key,))
    self.threads = tuple(self.keys[s] for s in specials)
    info = LoopInfo(Loop(specials[0], self.items))  # the kernel as one loop over its threads, for the analysis
    if info.opaque or not self._independent(info, self.threads, list({b for _, _, b, w in info.accesses if w} - info.declared)):
      raise EvalError(specials[0], "threads write elements other threads read or write, or their indices cannot be computed ahead")

  # ---- cells ----
  def _add_label(self, c: Cell, key: int) -> None:
    labels = union_axes(c.labels, (key,))
    c.data = np.broadcast_to(LArr(c.data, c.labels + (1 << 62,)).to(labels + (1 << 62,)), self._shape(labels) + (c.size,)).copy()
    c.labels = labels

  def _drop_label(self, c: Cell, key: int) -> None:
    """Keep the copy of the last iteration of key's loop: what C's one buffer holds after the loop."""
    pos = c.labels.index(key)
    c.data = np.ascontiguousarray(c.data[(slice(None),) * pos + (-1,)])
    c.labels = tuple(k for k in c.labels if k != key)

  # ---- helpers ----
  def _get(self, u: UOp, s: UOp) -> object:
    if self.ahead is not None and s in self.ahead: return self.ahead[s]
    if s in self.env: return self.env[s]
    raise EvalError(u, f"source {s.op.name} ({s.dtype.name}) has not run before it")

  def _val(self, u: UOp, s: UOp) -> LArr:
    v = self._get(u, s)
    if not isinstance(v, LArr): raise EvalError(u, f"source {s.op.name} is not a value")
    return v

  def _shape(self, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(self.bounds[a] for a in axes)

  def _and(self, a: LArr | None, b: LArr | None) -> LArr | None:
    if a is None or b is None: return a if b is None else b
    axes = union_axes(a.axes, b.axes)
    return LArr(np.logical_and(a.to(axes), b.to(axes)), axes)

  def _eval(self, u: UOp) -> object:
    return _HANDLERS.get(u.op, KernelEval._other)(self, u)

  def _other(self, u: UOp) -> object:
    if u.op in GroupOp.Elementwise: return self._elementwise(u)
    raise EvalError(u, "has no meaning inside a kernel body")

  # ---- handlers ----
  def _const(self, u: UOp) -> LArr:
    if u.src: raise EvalError(u, "CONST takes no sources")
    return LArr(np.array(u.arg, dtype=u.dtype.np), ())

  def _var(self, u: UOp) -> LArr:
    return LArr(np.array(var_value(u, self.var_vals), dtype=u.dtype.np), ())

  def _range(self, u: UOp) -> LArr:
    raise EvalError(u, "is used outside the loop it opens")

  def _elementwise(self, u: UOp) -> LArr:
    vals = [self._val(u, s) for s in u.src]
    axes = vals[0].axes
    if any(v.axes != axes for v in vals):
      axes = union_axes(*(v.axes for v in vals))
      if u.op in _BROADCASTS: datas = [v.to(axes) for v in vals]  # the ufunc broadcasts: no copy of the operands
      else:
        shape = self._shape(axes)
        datas = [np.broadcast_to(v.to(axes), shape) for v in vals]
    else: datas = [v.data for v in vals]
    return LArr(elementwise(u, datas), axes)

  def _param(self, u: UOp) -> Cell:
    slot = u.arg.slot
    if not 0 <= slot < len(self.args): raise EvalError(u, f"slot {slot} is not bound: the kernel has {len(self.args)} args")
    if slot in self.param_cells: return self.param_cells[slot]
    a = self.args[slot]
    if not isinstance(a, np.ndarray) or a.ndim != 1: raise EvalError(u, f"arg {slot} is not a flat numpy array")
    if a.size != u.arg.size: raise EvalError(u, f"slot {slot} has size {u.arg.size} but its arg has {a.size} elements")
    if a.dtype != u.dtype.np: raise EvalError(u, f"slot {slot} has dtype {u.dtype.name} but its arg has numpy dtype {a.dtype}")
    # a PROGRAM's image PARAM means its flat elements, as an IMAGE view does
    if (dims := getattr(u.arg, "image", None)) is not None and (why := image_dims_error(dims, a.size, u.dtype)) is not None: raise EvalError(u, why)
    c = self.array_cells.get(id(a))  # one array bound to two slots is one storage
    if c is None:
      c = self.array_cells[id(a)] = Cell(a, (), u)
      self.cells.append(c)
    self.param_cells[slot] = c
    return c

  def _image(self, u: UOp) -> Cell:
    """An IMAGE view: its PARAM's cell itself (an image is a layout of the flat storage, not another value), once the
    dims are checked to hold exactly the storage's elements."""
    cell = self._get(u, u.src[0]) if len(u.src) == 1 else None
    if not isinstance(cell, Cell): raise EvalError(u, "views no storage")
    if (why := image_dims_error(u.arg, cell.size, u.dtype)) is not None: raise EvalError(u, why)
    return cell

  def _buffer(self, u: UOp) -> Cell:
    # a REG buffer is per thread; any buffer declared inside a vectorized loop is per iteration
    labels = union_axes(tuple(self.vec), self.threads if u.arg.addrspace is AddrSpace.REG else ())
    c = Cell(np.zeros(self._shape(labels) + (u.arg.size,), dtype=u.dtype.np), labels, u)
    self.cells.append(c)
    return c

  def _after(self, u: UOp) -> object:
    if not u.src: raise EvalError(u, "has no sources")
    return self._get(u, u.src[0])

  def _pass(self, u: UOp) -> object:
    return self._get(u, u.src[0])

  def _index(self, u: UOp) -> Ptr:
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (storage, index[, gate]), has {len(u.src)} sources")
    cell = self._get(u, u.src[0])
    if not isinstance(cell, Cell): raise EvalError(u, f"source 0 ({u.src[0].op.name}) is not storage")
    idx = self._val(u, u.src[1])
    if not u.src[1].dtype.is_int: raise EvalError(u, f"index has dtype {u.src[1].dtype.name}, not an integer")
    gate = self._val(u, u.src[2]) if len(u.src) == 3 else None
    return Ptr(cell, idx, gate)

  def _ptr(self, u: UOp) -> Ptr:
    if not u.src or u.src[0].op is not Ops.INDEX: raise EvalError(u, f"target {u.src[0].op.name if u.src else 'missing'} is not an INDEX")
    p = self._get(u, u.src[0])
    if not isinstance(p, Ptr): raise EvalError(u, f"source 0 ({u.src[0].op.name}) is not an INDEX")
    return p

  def _check_bounds(self, u: UOp, cell: Cell, idx: np.ndarray, mask: np.ndarray | None) -> None:
    if np.ndim(idx) == 0 and (mask is None or np.ndim(mask) == 0):  # one element: plain ints are much cheaper
      if (mask is None or bool(mask)) and not 0 <= int(idx) < cell.size:
        raise EvalError(u, f"index {int(idx)} is out of bounds for {cell.node.op.name} of {cell.size} elements")
      return
    bad = (idx < 0) | (idx >= cell.size)
    if mask is not None: bad = bad & mask
    if bad.any():
      v = int(np.asarray(idx)[np.nonzero(bad)][0]) if np.ndim(idx) else int(idx)
      raise EvalError(u, f"index {v} is out of bounds for {cell.node.op.name} of {cell.size} elements")

  def _load(self, u: UOp) -> LArr:
    if len(u.src) not in (1, 3): raise EvalError(u, f"takes (index[, alt, gate]), has {len(u.src)} sources")
    p = self._ptr(u)
    gate, alt, cell = p.gate, None, p.cell
    if len(u.src) == 3:
      alt = self._val(u, u.src[1])
      gate = self._and(gate, self._val(u, u.src[2]))
    if cell.data.dtype != u.dtype.np: raise EvalError(u, f"loads {u.dtype.name} from storage of numpy dtype {cell.data.dtype}")
    if gate is None and not p.idx.axes:  # one element (per private copy): a plain slice
      self._check_bounds(u, cell, p.idx.data, None)
      return LArr(cell.data[..., int(p.idx.data)].copy(), cell.labels)
    axes = union_axes(cell.labels, p.idx.axes, gate.axes if gate is not None else (), alt.axes if alt is not None else ())
    shape = self._shape(axes)
    idx = np.broadcast_to(p.idx.to(axes), shape)
    g = np.broadcast_to(gate.to(axes), shape) if gate is not None else None
    self._check_bounds(u, cell, idx, g)
    if g is not None: idx = np.where(g, idx, 0)
    data = cell.data[(*(self._grid(k, axes) for k in cell.labels), idx)] if cell.size else np.zeros(shape, cell.data.dtype)
    if g is not None:
      a = alt.to(axes) if alt is not None else np.zeros((), dtype=data.dtype)
      data = np.where(g, data, a).astype(data.dtype, copy=False)
    return LArr(np.broadcast_to(data, shape), axes)

  def _store(self, u: UOp) -> None:
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (index, value[, gate]), has {len(u.src)} sources")
    p = self._ptr(u)
    gate, cell, value = p.gate, p.cell, self._val(u, u.src[1])
    if len(u.src) == 3: gate = self._and(gate, self._val(u, u.src[2]))
    if u.src[1].dtype.np != cell.data.dtype: raise EvalError(u, f"stores {u.src[1].dtype.name} into storage of numpy dtype {cell.data.dtype}")
    where = set(cell.labels) | set(p.idx.axes)
    if gate is None and not p.idx.axes and set(value.axes) <= where:
      self._check_bounds(u, cell, p.idx.data, None)
      cell.data[..., int(p.idx.data)] = value.to(cell.labels) if value.axes != cell.labels else value.data
      return None
    if not set(value.axes) <= where and gate is None:
      raise EvalError(u, "is run for several iterations that write one element at once (an evaluator fault)")
    at, val = self._written(u, p, gate, value)
    cell.data[at] = val
    return None

  def _written(self, u: UOp, p: Ptr, gate: LArr | None, value: LArr, every: tuple[int, ...] = ()) -> tuple[tuple, np.ndarray]:
    """(where in p's cell, values) of a write of value through p for every iteration now running where gate holds, its
    indices checked in bounds: the copy axes of the cell and the element index, each flat over the iterations. A write
    is listed once per iteration of the axes it depends on, and of the axes `every` besides."""
    cell = p.cell
    axes = union_axes(cell.labels, p.idx.axes, value.axes, gate.axes if gate is not None else (), every)
    shape = self._shape(axes)
    idx = np.broadcast_to(p.idx.to(axes), shape)
    g = np.broadcast_to(gate.to(axes), shape) if gate is not None else None
    self._check_bounds(u, cell, idx, g)
    grids = [np.broadcast_to(self._grid(k, axes), shape) for k in cell.labels]
    val = np.broadcast_to(value.to(axes), shape)
    if g is not None: grids, idx, val = [x[g] for x in grids], idx[g], val[g]
    return (*grids, idx), val

  def _atomic(self, u: UOp) -> None:
    """ATOMIC: where its gate holds, storage[idx] = op(storage[idx], value), every iteration's update applied in turn (one
    order of the ones the threads may take; tinyspec.ops.atomic)."""
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (index, value[, gate]), has {len(u.src)} sources")
    p = self._ptr(u)
    gate, cell, value = p.gate, p.cell, self._val(u, u.src[1])
    if len(u.src) == 3: gate = self._and(gate, self._val(u, u.src[2]))
    if u.src[1].dtype.np != cell.data.dtype: raise EvalError(u, f"updates storage of numpy dtype {cell.data.dtype} with {u.src[1].dtype.name}")
    if (why := atomic.atomic_error(u.arg, u.src[1].dtype)) is not None: raise EvalError(u, why)
    # one update per iteration of every vectorized loop and thread it runs in, whatever it depends on: each adds
    at, val = self._written(u, p, gate, value, union_axes(tuple(self.vec), self.threads))
    atomic.apply(u.arg, u.src[1].dtype, cell.data, at, val)
    return None

  def _effect(self, u: UOp) -> None:
    return None


# ops whose numpy meaning is a plain ufunc (or np.where) that broadcasts its operands itself
_BROADCASTS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.WHERE})

_HANDLERS = {
  Ops.CONST: KernelEval._const, Ops.DEFINE_VAR: KernelEval._var, Ops.RANGE: KernelEval._range, Ops.PARAM: KernelEval._param,
  Ops.BUFFER: KernelEval._buffer, Ops.IMAGE: KernelEval._image,
  Ops.AFTER: KernelEval._after, Ops.INDEX: KernelEval._index, Ops.LOAD: KernelEval._load, Ops.STORE: KernelEval._store,
  Ops.ATOMIC: KernelEval._atomic,
  Ops.END: KernelEval._effect, Ops.GROUP: KernelEval._effect, Ops.SINK: KernelEval._effect,
  Ops.CONTIGUOUS: KernelEval._pass, Ops.DETACH: KernelEval._pass,
}


def guard(u: UOp, fn, *args):
  """fn(*args), with any failure other than EvalError reported as an EvalError naming u."""
  try: return fn(*args)
  except EvalError: raise
  except GUARDED as e:
    raise EvalError(u, f"cannot be evaluated: {type(e).__name__}: {e}") from e


def var_value(u: UOp, var_vals: dict[str, int]) -> int:
  """The value of DEFINE_VAR u in var_vals (by name); EvalError when it is unbound or outside the variable's bounds."""
  a = u.arg
  if a.name not in var_vals: raise EvalError(u, f"variable {a.name} is not bound (bound here: {', '.join(sorted(var_vals)) or 'none'})")
  v = int(var_vals[a.name])
  if not a.min <= v <= a.max: raise EvalError(u, f"variable {a.name} is bound to {v}, outside its bounds [{a.min}, {a.max}]")
  return v


def evaluate_kernel(body: UOp, args: list[np.ndarray], var_vals: dict[str, int] | None = None) -> None:
  """Run one kernel body (a kernel SINK, a LINEAR or a PROGRAM) on flat arrays; PARAM slot k is args[k], written in place. A
  DEFINE_VAR of the body reads its value from var_vals, by name (what the CALL running the kernel binds)."""
  KernelEval(body, list(args), var_vals).run()

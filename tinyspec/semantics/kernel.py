"""Vectorized evaluation of one kernel body (KERNEL stage kernel SINK, or a PROGRAM / LINEAR).

Every RANGE (and SPECIAL) is an axis. A value is a `LArr`: a numpy array plus the sorted tuple of the axes it
depends on, so a value costs only the product of the bounds of the ranges it actually uses. Ops broadcast their
sources over the union of their axes. Storage is a `Cell`: a PARAM binds the caller's flat array (written in place);
a BUFFER inside the body (REG or LOCAL) is private, and its contents may depend on the ranges of the loops around
it, which become extra leading axes of the cell ("labels").

Effects run in topological order (sources first): AFTER, INDEX and the sources of a STORE order them. A STORE runs
once for all iterations of its ranges at once; see the package docstring for what that means when several
iterations write the same element.
"""
from __future__ import annotations

import numpy as np

from tinyspec.semantics.alu import EvalError, elementwise, reduce_identity, reduce_ufunc
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp


class LArr:
  """A value in a kernel: `data` has one dimension per axis in `axes` (sorted axis keys), size 1 or the bound."""
  __slots__ = ("data", "axes")

  def __init__(self, data: np.ndarray, axes: tuple[int, ...]):
    self.data, self.axes = data, axes

  def to(self, axes: tuple[int, ...]) -> np.ndarray:
    """data laid out over `axes` (a sorted superset of self.axes), size-1 where self does not depend on an axis."""
    if axes == self.axes: return self.data
    shape, it = [], iter(self.data.shape)
    for a in axes: shape.append(next(it) if a in self.axes else 1)
    return self.data.reshape(shape)


def _union(*axs: tuple[int, ...]) -> tuple[int, ...]:
  return tuple(sorted(set().union(*axs)))


class Cell:
  """Storage in a kernel. data has shape (bounds of labels..., size); only private cells gain labels."""
  __slots__ = ("data", "labels", "private", "node")

  def __init__(self, data: np.ndarray, labels: tuple[int, ...], private: bool, node: UOp):
    self.data, self.labels, self.private, self.node = data, labels, private, node

  @property
  def size(self) -> int: return self.data.shape[-1]


class Ptr:
  """The value of INDEX: an element address of a cell, with an optional gate from the INDEX itself."""
  __slots__ = ("cell", "idx", "gate")

  def __init__(self, cell: Cell, idx: LArr, gate: LArr | None):
    self.cell, self.idx, self.gate = cell, idx, gate


def _strip_after(u: UOp) -> UOp:
  while u.op is Ops.AFTER: u = u.src[0]
  return u


def kernel_sink(body: UOp) -> UOp:
  """The SINK of effects a kernel body runs: the body itself, a LINEAR's last node, or a PROGRAM's LINEAR/kernel sink."""
  if body.op is Ops.PROGRAM:
    if len(body.src) >= 2 and body.src[1].op is Ops.LINEAR and body.src[1].src: return kernel_sink(body.src[1])
    if not body.src: raise EvalError(body, "has no kernel sink")
    return kernel_sink(body.src[0])
  if body.op is Ops.LINEAR:
    if not body.src: raise EvalError(body, "is empty")
    last = body.src[-1]
    return last if last.op is Ops.SINK else UOp(Ops.SINK, src=tuple(u for u in body.src if u.op in GroupOp.Effect))
  if body.op is Ops.SINK: return body
  raise EvalError(body, "is not a kernel body (a SINK of effects, a LINEAR or a PROGRAM)")


class KernelEval:
  """Runs one kernel body on flat argument arrays, writing PARAM-bound arrays in place."""

  def __init__(self, body: UOp, args: list[np.ndarray]):
    self.sink = kernel_sink(body)
    self.args = args
    self.keys: dict[UOp, int] = {}
    self.bounds: dict[int, int] = {}
    self.memo: dict[UOp, object] = {}
    self.param_cells: dict[int, Cell] = {}

  # ---- helpers ----
  def _val(self, u: UOp, s: UOp) -> LArr:
    v = self.memo[s]
    if not isinstance(v, LArr): raise EvalError(u, f"source {s.op.name} is not a value")
    return v

  def _shape(self, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(self.bounds[a] for a in axes)

  def _reduce(self, u: UOp, op, x: LArr, keys: set[int]) -> LArr:
    """x reduced over the iterations of `keys`; an axis x does not depend on still counts its iterations."""
    data, axes = x.data, x.axes
    fn = reduce_ufunc(u, op, data.dtype)
    present = tuple(i for i, a in enumerate(axes) if a in keys)
    if present:
      data = np.asarray(fn.reduce(data, axis=present, dtype=data.dtype, initial=reduce_identity(op, data.dtype)))
      axes = tuple(a for a in axes if a not in keys)
    count = 1
    for k in keys - set(x.axes): count *= self.bounds[k]
    if count == 0: data = np.full(data.shape, reduce_identity(op, data.dtype), dtype=data.dtype)
    elif count > 1 and op is not Ops.MAX:
      if data.dtype == np.bool_: pass  # OR / AND of one value repeated is that value
      elif op is Ops.ADD: data = np.asarray(data * data.dtype.type(count) if data.dtype.kind == "f" else data * np.array(count).astype(data.dtype))
      else: data = np.asarray(np.power(data, count, dtype=data.dtype))
    return LArr(data, axes)

  # ---- run ----
  def run(self) -> None:
    order = _topo(self.sink)
    direct: dict[UOp, set[UOp]] = {}  # the ranges of the ENDs that enclose each effect through END/GROUP nesting
    for u in reversed(order):
      if u.op is Ops.END and u.src:
        direct.setdefault(u.src[0], set()).update(direct.get(u, set()), u.src[1:])
      elif u.op in (Ops.GROUP, Ops.SINK):
        for s in u.src: direct.setdefault(s, set()).update(direct.get(u, set()))
    with np.errstate(all="ignore"):
      for u in order:
        if u in self.memo: continue
        if u.op is Ops.STORE:
          # the ranges of the ENDs around a store come after it in topological order; their bounds are needed now
          for r in direct.get(u, ()): self._ensure(r)
          self.memo[u] = guard(u, self._store, u, direct.get(u, set()))
        else: self.memo[u] = guard(u, self._eval, u)

  def _eval(self, u: UOp) -> object:
    fn = _HANDLERS.get(u.op)
    if fn is None:
      if u.op in GroupOp.Elementwise: fn = KernelEval._elementwise
      else: raise EvalError(u, "has no meaning inside a kernel body")
    return fn(self, u)

  def _ensure(self, r: UOp) -> None:
    if r in self.memo: return
    if r.op is not Ops.RANGE: raise EvalError(r, "END closes something that is not a RANGE")
    for n in _topo(r):
      if n not in self.memo:
        if n.op is Ops.STORE: raise EvalError(r, "a range bound depends on a STORE")
        self.memo[n] = self._eval(n)

  # ---- handlers ----
  def _const(self, u: UOp) -> LArr:
    if u.src: raise EvalError(u, "CONST takes no sources")
    return LArr(np.array(u.arg, dtype=u.dtype.np), ())

  def _range(self, u: UOp) -> LArr:
    if len(u.src) != 1: raise EvalError(u, f"takes one source (its bound), has {len(u.src)}")
    b = self._val(u, u.src[0])
    if b.axes: raise EvalError(u, "bound depends on another range")
    if not u.dtype.is_int: raise EvalError(u, f"dtype {u.dtype.name} is not an integer")
    n = max(int(b.data), 0)
    key = self.keys.setdefault(u, len(self.keys))
    self.bounds[key] = n
    return LArr(np.arange(n, dtype=u.dtype.np), (key,))

  def _elementwise(self, u: UOp) -> LArr:
    vals = [self._val(u, s) for s in u.src]
    axes = _union(*(v.axes for v in vals))
    shape = self._shape(axes)
    datas = [np.broadcast_to(v.to(axes), shape) for v in vals]
    return LArr(elementwise(u, datas), axes)

  def _param(self, u: UOp) -> Cell:
    slot = u.arg.slot
    if not 0 <= slot < len(self.args): raise EvalError(u, f"slot {slot} is not bound: the kernel has {len(self.args)} args")
    if slot in self.param_cells: return self.param_cells[slot]
    a = self.args[slot]
    if not isinstance(a, np.ndarray) or a.ndim != 1: raise EvalError(u, f"arg {slot} is not a flat numpy array")
    if a.size != u.arg.size: raise EvalError(u, f"slot {slot} has size {u.arg.size} but its arg has {a.size} elements")
    if a.dtype != u.dtype.np: raise EvalError(u, f"slot {slot} has dtype {u.dtype.name} but its arg has numpy dtype {a.dtype}")
    c = self.param_cells[slot] = Cell(a, (), False, u)
    return c

  def _buffer(self, u: UOp) -> Cell:
    private = u.arg.addrspace in (AddrSpace.REG, AddrSpace.LOCAL)
    return Cell(np.zeros(u.arg.size, dtype=u.dtype.np), (), private, u)

  def _after(self, u: UOp) -> object:
    if not u.src: raise EvalError(u, "has no sources")
    return self.memo[u.src[0]]

  def _pass(self, u: UOp) -> object:
    return self.memo[u.src[0]]

  def _index(self, u: UOp) -> Ptr:
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (storage, index[, gate]), has {len(u.src)} sources")
    cell = self.memo[u.src[0]]
    if not isinstance(cell, Cell): raise EvalError(u, f"source 0 ({u.src[0].op.name}) is not storage")
    idx = self._val(u, u.src[1])
    if not u.src[1].dtype.is_int: raise EvalError(u, f"index has dtype {u.src[1].dtype.name}, not an integer")
    gate = self._val(u, u.src[2]) if len(u.src) == 3 else None
    return Ptr(cell, idx, gate)

  def _ptr(self, u: UOp) -> tuple[Ptr, LArr | None]:
    p = self.memo[u.src[0]]
    if not isinstance(p, Ptr): raise EvalError(u, f"source 0 ({u.src[0].op.name}) is not an INDEX")
    return p, p.gate

  def _and(self, u: UOp, a: LArr | None, b: LArr | None) -> LArr | None:
    if a is None or b is None: return a if b is None else b
    axes = _union(a.axes, b.axes)
    return LArr(np.logical_and(a.to(axes), b.to(axes)), axes)

  def _grids(self, cell: Cell, axes: tuple[int, ...]) -> list[np.ndarray]:
    out = []
    for lab in cell.labels:
      shape = [1] * len(axes)
      shape[axes.index(lab)] = self.bounds[lab]
      out.append(np.arange(self.bounds[lab]).reshape(shape))
    return out

  def _check_bounds(self, u: UOp, cell: Cell, idx: np.ndarray, mask: np.ndarray | None) -> None:
    bad = (idx < 0) | (idx >= cell.size)
    if mask is not None: bad = bad & mask
    if bad.any():
      v = int(np.asarray(idx)[np.nonzero(bad)][0]) if np.ndim(idx) else int(idx)
      raise EvalError(u, f"index {v} is out of bounds for {cell.node.op.name} of {cell.size} elements")

  def _load(self, u: UOp) -> LArr:
    if len(u.src) not in (1, 3): raise EvalError(u, f"takes (index[, alt, gate]), has {len(u.src)} sources")
    p, gate = self._ptr(u)
    alt = None
    if len(u.src) == 3:
      alt = self._val(u, u.src[1])
      gate = self._and(u, gate, self._val(u, u.src[2]))
    cell = p.cell
    if cell.data.dtype != u.dtype.np: raise EvalError(u, f"loads {u.dtype.name} from storage of numpy dtype {cell.data.dtype}")
    axes = _union(cell.labels, p.idx.axes, gate.axes if gate is not None else (), alt.axes if alt is not None else ())
    shape = self._shape(axes)
    idx = np.broadcast_to(p.idx.to(axes), shape)
    g = np.broadcast_to(gate.to(axes), shape) if gate is not None else None
    self._check_bounds(u, cell, idx, g)
    if g is not None: idx = np.where(g, idx, 0)
    data = cell.data[(*self._grids(cell, axes), idx)]
    if g is not None:
      a = alt.to(axes) if alt is not None else np.zeros((), dtype=data.dtype)
      data = np.where(g, data, a).astype(data.dtype, copy=False)
    return LArr(np.broadcast_to(data, shape), axes)

  def _accumulator(self, u: UOp) -> tuple[Ops, UOp] | None:
    """(op, x) when u's value is op(LOAD(the element u writes), x) and x does not read the stored buffer."""
    target, value = u.src[0], u.src[1]
    if value.op not in (Ops.ADD, Ops.MUL, Ops.MAX) or len(value.src) != 2 or target.op is not Ops.INDEX: return None
    base = _strip_after(target.src[0])
    for i in (0, 1):
      ld, x = value.src[i], value.src[1 - i]
      if ld.op is Ops.LOAD and len(ld.src) == 1 and ld.src[0].op is Ops.INDEX and ld.src[0].src[1:] == target.src[1:] \
         and _strip_after(ld.src[0].src[0]) is base:
        reads = x.toposort(lambda n: n.op is not Ops.CALL)
        if not any(n.op is Ops.INDEX and _strip_after(n.src[0]) is base for n in reads): return value.op, x
    return None

  def _store(self, u: UOp, direct: set[UOp]) -> None:
    if len(u.src) not in (2, 3): raise EvalError(u, f"takes (index, value[, gate]), has {len(u.src)} sources")
    p, gate = self._ptr(u)
    if len(u.src) == 3: gate = self._and(u, gate, self._val(u, u.src[2]))
    cell = p.cell
    if u.src[1].dtype.np != cell.data.dtype: raise EvalError(u, f"stores {u.src[1].dtype.name} into storage of numpy dtype {cell.data.dtype}")
    dkeys = {self.keys[r] for r in direct if r in self.keys}
    acc = self._accumulator(u)
    value = self._val(u, acc[1] if acc else u.src[1])
    iaxes = set(p.idx.axes)
    vaxes = set(value.axes) | set(gate.axes if gate is not None else ())
    # the iterations that write one element: on kernel-private storage only the ranges of the ENDs right around this
    # store (outer loops get their own copy of a register); on global storage every range the index does not use
    red = ((vaxes | dkeys) if acc else vaxes) - iaxes
    if cell.private: red &= dkeys
    if acc:
      op = acc[0]
      if gate is not None:
        axes = _union(value.axes, gate.axes)
        ident = reduce_identity(op, value.data.dtype)
        value = LArr(np.where(gate.to(axes), value.to(axes), ident).astype(value.data.dtype, copy=False), axes)
        gate = self._any(gate, red)
      value = self._reduce(u, op, value, red)
    else:
      value, gate = self._last(value, gate, red)
    keep = set(value.axes) - iaxes
    labels = _union(cell.labels, tuple(keep)) if cell.private else cell.labels
    if keep - set(labels):
      raise EvalError(u, "writes global storage at an index that does not depend on every range its value uses")
    if labels != cell.labels:
      cell.data = np.broadcast_to(LArr(cell.data, cell.labels + (-1,)).to(labels + (-1,)), self._shape(labels) + (cell.size,)).copy()
      cell.labels = labels
    axes = _union(labels, p.idx.axes, value.axes, gate.axes if gate is not None else ())
    shape = self._shape(axes)
    idx = np.broadcast_to(p.idx.to(axes), shape)
    g = np.broadcast_to(gate.to(axes), shape) if gate is not None else None
    self._check_bounds(u, cell, idx, g)
    grids = [np.broadcast_to(x, shape) for x in self._grids(cell, axes)]
    val = np.broadcast_to(value.to(axes), shape)
    if g is not None: grids, idx, val = [x[g] for x in grids], idx[g], val[g]
    if acc: reduce_ufunc(u, acc[0], cell.data.dtype).at(cell.data, (*grids, idx), val)
    else: cell.data[(*grids, idx)] = val
    return None

  def _any(self, gate: LArr, keys: set[int]) -> LArr:
    pos = tuple(i for i, a in enumerate(gate.axes) if a in keys)
    if not pos: return gate
    return LArr(np.logical_or.reduce(gate.data, axis=pos), tuple(a for a in gate.axes if a not in keys))

  def _last(self, value: LArr, gate: LArr | None, keys: set[int]) -> tuple[LArr, LArr | None]:
    """The value of the last iteration over `keys` (in axis order) whose gate holds, and whether any held."""
    if gate is None:
      pos = tuple(i for i, a in enumerate(value.axes) if a in keys)
      if not pos: return value, None
      sl = tuple(-1 if i in pos else slice(None) for i in range(len(value.axes)))
      return LArr(value.data[sl], tuple(a for a in value.axes if a not in keys)), None
    axes = _union(value.axes, gate.axes)
    rk = tuple(a for a in axes if a in keys)
    if not rk: return value, gate
    rest = tuple(a for a in axes if a not in keys)
    shape = self._shape(axes)
    perm = tuple(axes.index(a) for a in rest + rk)
    g = np.broadcast_to(gate.to(axes), shape).transpose(perm).reshape(self._shape(rest) + (-1,))
    v = np.broadcast_to(value.to(axes), shape).transpose(perm).reshape(self._shape(rest) + (-1,))
    m = g.shape[-1]
    if m == 0: return LArr(np.zeros(self._shape(rest), dtype=v.dtype), rest), LArr(np.zeros(self._shape(rest), dtype=bool), rest)
    last = m - 1 - np.argmax(g[..., ::-1], axis=-1)
    sel = np.take_along_axis(v, last[..., None], axis=-1)[..., 0]
    return LArr(sel, rest), LArr(g.any(axis=-1), rest)

  def _reduce_range(self, u: UOp) -> LArr:
    if isinstance(u.arg, tuple): raise EvalError(u, "tensor-form REDUCE (op, n) inside a kernel body; kernels use REDUCE(value, ranges...)")
    if not u.src: raise EvalError(u, "has no value")
    for r in u.src[1:]:
      if r.op is not Ops.RANGE: raise EvalError(u, f"reduces over a {r.op.name}, not a RANGE")
    return self._reduce(u, u.arg, self._val(u, u.src[0]), {self.keys[r] for r in u.src[1:]})

  def _effect(self, u: UOp) -> None:
    return None


_HANDLERS = {
  Ops.CONST: KernelEval._const, Ops.RANGE: KernelEval._range, Ops.SPECIAL: KernelEval._range, Ops.PARAM: KernelEval._param,
  Ops.BUFFER: KernelEval._buffer, Ops.AFTER: KernelEval._after, Ops.INDEX: KernelEval._index, Ops.LOAD: KernelEval._load,
  Ops.END: KernelEval._effect, Ops.GROUP: KernelEval._effect, Ops.SINK: KernelEval._effect,
  Ops.REDUCE: KernelEval._reduce_range, Ops.CONTIGUOUS: KernelEval._pass, Ops.DETACH: KernelEval._pass,
}


def guard(u: UOp, fn, *args):
  """fn(*args), with any failure other than EvalError reported as an EvalError naming u."""
  try: return fn(*args)
  except EvalError: raise
  except (TypeError, ValueError, IndexError, AttributeError, KeyError, OverflowError) as e:
    raise EvalError(u, f"cannot be evaluated: {type(e).__name__}: {e}") from e


def _topo(root: UOp) -> list[UOp]:
  """Sources before users; never enters a CALL's body."""
  return root.toposort(lambda n: n.op is not Ops.CALL)


def evaluate_kernel(body: UOp, args: list[np.ndarray]) -> None:
  """Run one kernel body (a kernel SINK, a LINEAR or a PROGRAM) on flat arrays; PARAM slot k is args[k], written in place."""
  KernelEval(body, list(args)).run()

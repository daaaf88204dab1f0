"""The IR: interned UOps, their derived shape, device and bounds, what a CALL body is, walks, printing and rows.

The op codes (Ops, GroupOp) and the node args (ParamArg, BufferArg, ...) are tinyspec.opcodes' and tinyspec.args';
a UOp is built of them, so they are imported here and read from here as well."""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Iterable, Sequence

from tinyspec.args import AddrSpace, AxisType, BufferArg, ParamArg, RangeArg, SourceArg, VarArg, next_buffer_id
from tinyspec.dtype import DType, dtypes, truncate
from tinyspec.opcodes import GroupOp, Ops


def _argkey(arg: Any) -> Any:
  # floats are keyed by repr so 0.0 and -0.0 stay two nodes and NaN interns to one; the type keeps 1, 1.0 and True apart
  if type(arg) is float: return (float, repr(arg))
  return (type(arg), arg)


# A node's bounds (UOp.vmin / vmax) are the intervals of its ops, and what an op means is the op registry's
# (tinyspec.ops.intervals, a layer above the IR): the registry installs its rule here when it is imported. Importing
# tinyspec (as `from tinyspec.uop import UOp` does first) imports the registry, so a built graph always has it.
_bounds_rule: Callable[[UOp], tuple] | None = None


def install_bounds_rule(rule: Callable[[UOp], tuple]) -> None:
  """Make rule(u) -> (vmin, vmax) of u from its sources' bounds the rule of every UOp's vmin and vmax."""
  global _bounds_rule
  _bounds_rule = rule


class UOpMetaClass(type):
  ucache: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

  def __call__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple = (), arg: Any = None, tag: Any = None) -> UOp:
    key = (op, dtype, src, _argkey(arg), tag)
    if (ret := UOpMetaClass.ucache.get(key)) is not None: return ret
    ret = super().__call__(op, dtype, src, arg, tag)
    UOpMetaClass.ucache[key] = ret
    return ret


class UOp(metaclass=UOpMetaClass):
  """An immutable, interned IR node. Same fields -> same object, so `is` is structural equality."""
  __slots__ = ("op", "dtype", "src", "arg", "tag", "_cache", "__weakref__")

  def __init__(self, op: Ops, dtype: DType = dtypes.void, src: tuple = (), arg: Any = None, tag: Any = None):
    object.__setattr__(self, "op", op); object.__setattr__(self, "dtype", dtype)  # noqa: E702
    object.__setattr__(self, "src", tuple(src)); object.__setattr__(self, "arg", arg)  # noqa: E702
    object.__setattr__(self, "tag", tag); object.__setattr__(self, "_cache", {})  # noqa: E702

  def __setattr__(self, name, value): raise AttributeError("UOp is immutable")
  def __reduce__(self): return (UOp, (self.op, self.dtype, self.src, self.arg, self.tag))

  def replace(self, **kw) -> UOp:
    """A node like this one with some fields changed."""
    return UOp(kw.get("op", self.op), kw.get("dtype", self.dtype), kw.get("src", self.src), kw.get("arg", self.arg), kw.get("tag", self.tag))

  def __repr__(self) -> str:
    return f"<UOp {self.op.name} {self.dtype.name} arg={self.arg!r} srcs={len(self.src)}>"

  # ---- graph walks (iterative: a chain of a million nodes must not recurse) ----
  def toposort(self, gate: Callable[[UOp], bool] | None = None) -> list[UOp]:
    """Every node reachable from self, sources before users. `gate(u)` False stops the walk below u (u is kept)."""
    return walk((self,), None if gate is None else (lambda u: u.src if gate(u) else ()))

  def _derive(self, key: str, fn: Callable[[UOp], Any]) -> Any:
    """A property computed from the sources' values of the same property, cached per node (fold); a node fn raises on
    gets a Malformed marker, never an exception here."""
    if key in self._cache: return self._cache[key]
    def combine(u: UOp, srcs: list[UOp]) -> Any:
      try: return fn(u)
      except Exception as e: return Malformed(e.with_traceback(None))  # no frames kept alive by a marker
    return fold(self, key, uop_srcs, combine)

  # ---- derived properties ----
  @property
  def shape(self) -> tuple[int, ...] | None:
    """The tensor shape, None for effects and other shapeless nodes. Raises ValueError on a malformed node."""
    ret = self._derive("shape", _shape_rule)
    if isinstance(ret, Malformed):  # the cause, shortened: down a chain of malformed nodes it would nest once per node
      err = str(ret.err)
      raise ValueError(f"{self.op.name} has no valid shape: {err if len(err) <= 200 else err[:197] + '...'}")
    return ret

  @property
  def shape_ok(self) -> bool:
    return not isinstance(self._derive("shape", _shape_rule), Malformed)

  @property
  def size(self) -> int:
    return math.prod(self.shape or ())

  @property
  def device(self) -> str | tuple[str, ...] | None:
    ret = self._derive("device", _device_rule)
    return None if isinstance(ret, Malformed) else ret

  @property
  def vmin(self) -> int | float | bool:
    """The least value the node can take: its interval from the op registry's rule (install_bounds_rule)."""
    return self._bounds()[0]

  @property
  def vmax(self) -> int | float | bool:
    """The greatest value the node can take (vmin)."""
    return self._bounds()[1]

  def _bounds(self) -> tuple:
    if (ret := self._cache.get("bounds")) is None:  # the cached case first: the simplifier asks for bounds on every node
      if _bounds_rule is None: raise RuntimeError("no interval rule installed for UOp bounds: tinyspec.ops.intervals installs it when imported")
      ret = self._derive("bounds", _bounds_rule)
    return (self.dtype.min, self.dtype.max) if isinstance(ret, Malformed) else ret

  # ---- constructors ----
  @staticmethod
  def const(dtype: DType, value: Any) -> UOp:
    return UOp(Ops.CONST, dtype, (), truncate(value, dtype))

  @staticmethod
  def buffer(dtype: DType, size: int, device: str = "CPU", addrspace: AddrSpace = AddrSpace.GLOBAL, id: int | None = None) -> UOp:
    return UOp(Ops.BUFFER, dtype, (), BufferArg(next_buffer_id() if id is None else id, size, device, addrspace))

  @staticmethod
  def param(slot: int, dtype: DType, size: int, device: str = "CPU", addrspace: AddrSpace = AddrSpace.GLOBAL) -> UOp:
    return UOp(Ops.PARAM, dtype, (), ParamArg(slot, size, device, addrspace))

  @staticmethod
  def range(bound: int | UOp, axis: int, kind: AxisType = AxisType.LOOP) -> UOp:
    if not isinstance(bound, UOp): bound = UOp.const(dtypes.index, bound)
    return UOp(Ops.RANGE, dtypes.index, (bound,), RangeArg(axis, kind))

  @staticmethod
  def variable(name: str, vmin: int, vmax: int, dtype: DType = dtypes.index) -> UOp:
    """DEFINE_VAR: an integer scalar whose value is known only to lie in [vmin, vmax]."""
    return UOp(Ops.DEFINE_VAR, dtype, (), VarArg(name, vmin, vmax))

  def bind(self, value: int) -> UOp:
    """BIND of this DEFINE_VAR to value: the variable's value at a call site (the spec holds value within its bounds)."""
    if self.op is not Ops.DEFINE_VAR: raise ValueError(f"bind takes a DEFINE_VAR, not {self.op.name}")
    return UOp(Ops.BIND, self.dtype, (self, UOp.const(self.dtype, value)))

  def alu(self, op: Ops, *srcs: UOp) -> UOp:
    dt = dtypes.bool if op in GroupOp.Comparison else (srcs[-1].dtype if op is Ops.WHERE else self.dtype)
    return UOp(op, dt, (self, *srcs))

  def cast(self, dtype: DType) -> UOp: return UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype: DType) -> UOp: return UOp(Ops.BITCAST, dtype, (self,))
  def reshape(self, shape: tuple[int, ...]) -> UOp: return UOp(Ops.RESHAPE, self.dtype, (self,), tuple(shape))
  def permute(self, perm: tuple[int, ...]) -> UOp: return UOp(Ops.PERMUTE, self.dtype, (self,), tuple(perm))
  def expand(self, dims: tuple[int, ...]) -> UOp: return UOp(Ops.EXPAND, self.dtype, (self,), tuple(dims))
  def pad(self, arg: tuple[tuple[int, int], ...]) -> UOp: return UOp(Ops.PAD, self.dtype, (self,), tuple(map(tuple, arg)))
  def shrink(self, arg: tuple[tuple[int, int], ...]) -> UOp: return UOp(Ops.SHRINK, self.dtype, (self,), tuple(map(tuple, arg)))
  def flip(self, arg: tuple[bool, ...]) -> UOp: return UOp(Ops.FLIP, self.dtype, (self,), tuple(arg))
  def reduce(self, op: Ops, n: int) -> UOp: return UOp(Ops.REDUCE, self.dtype, (self,), (op, n))
  def index(self, idx: UOp) -> UOp: return UOp(Ops.INDEX, self.dtype, (self, idx))
  def load(self, *rest: UOp) -> UOp: return UOp(Ops.LOAD, self.dtype, (self, *rest))
  def store(self, value: UOp, *gate: UOp) -> UOp: return UOp(Ops.STORE, dtypes.void, (self, value, *gate))
  def atomic(self, op: Ops, value: UOp, *gate: UOp) -> UOp: return UOp(Ops.ATOMIC, dtypes.void, (self, value, *gate), op)
  def after(self, *deps: UOp) -> UOp: return UOp(Ops.AFTER, self.dtype, (self, *deps))
  def image(self, dims: tuple[int, int]) -> UOp: return UOp(Ops.IMAGE, self.dtype, (self,), tuple(dims))
  def copy_to(self, device: str) -> UOp: return UOp(Ops.COPY, self.dtype, (self,), device)

  @staticmethod
  def multi(shards: Sequence[UOp], axis: int | None) -> UOp:
    """One tensor over the shards' devices: split along axis (shard i is the i-th block), or replicated (axis None)."""
    return UOp(Ops.MULTI, shards[0].dtype, tuple(shards), axis)
  def end(self, *ranges: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (self, *ranges))
  def gettuple(self, i: int) -> UOp:
    return UOp(Ops.GETTUPLE, self.src[0].src[i].dtype, (self,), i)

  def __add__(self, x: UOp | int) -> UOp: return self.alu(Ops.ADD, self._c(x))
  def __radd__(self, x: int) -> UOp: return self._c(x).alu(Ops.ADD, self)
  def __sub__(self, x: UOp | int) -> UOp: return self.alu(Ops.SUB, self._c(x))
  def __mul__(self, x: UOp | int) -> UOp: return self.alu(Ops.MUL, self._c(x))
  def __rmul__(self, x: int) -> UOp: return self._c(x).alu(Ops.MUL, self)
  def __floordiv__(self, x: UOp | int) -> UOp: return self.alu(Ops.IDIV, self._c(x))  # truncating, as C
  def __mod__(self, x: UOp | int) -> UOp: return self.alu(Ops.MOD, self._c(x))
  def __neg__(self) -> UOp: return self.alu(Ops.NEG)
  def __lt__(self, x: UOp | int) -> UOp: return self.alu(Ops.CMPLT, self._c(x))
  def ne(self, x: UOp | int) -> UOp: return self.alu(Ops.CMPNE, self._c(x))
  def eq(self, x: UOp | int) -> UOp: return self.alu(Ops.CMPEQ, self._c(x))
  def maximum(self, x: UOp | int) -> UOp: return self.alu(Ops.MAX, self._c(x))
  def where(self, a: UOp, b: UOp) -> UOp: return self.alu(Ops.WHERE, a, b)
  def __and__(self, x: UOp | int) -> UOp: return self.alu(Ops.AND, self._c(x))
  def __or__(self, x: UOp | int) -> UOp: return self.alu(Ops.OR, self._c(x))
  def _c(self, x: UOp | int | float) -> UOp: return x if isinstance(x, UOp) else UOp.const(self.dtype, x)
  # identity is equality for interned nodes; comparison operators above build nodes, so keep hashing by id
  __hash__ = object.__hash__
  def __eq__(self, other: object) -> bool: return self is other

  def __bool__(self) -> bool: return True


# ---- what a CALL body is: the one classification the spec, the evaluator, the lowering and the runtimes share ----
_KERNEL_EFFECTS = frozenset({Ops.STORE, Ops.ATOMIC, Ops.END, Ops.GROUP})
_GRAPH_ENTRIES = frozenset({Ops.AFTER, Ops.BUFFER, Ops.PARAM})


def _stores_into_index(sink: UOp) -> bool:
  # every STORE (or ATOMIC) reached through GROUP and END addresses an element (INDEX): a kernel, not a tensor-level assign
  stack = list(sink.src)
  while stack:
    u = stack.pop()
    if u.op in GroupOp.Writes:
      if not u.src or u.src[0].op is not Ops.INDEX: return False
    elif u.op in (Ops.GROUP, Ops.END): stack.extend(u.src[:1] if u.op is Ops.END else u.src)
    else: return False
  return True


def _waits_for_calls(sink: UOp) -> bool:
  # every entry is storage, and every AFTER under it waits only for CALLs that are no precompiled tensor-level call: a kernel
  # graph (its order is AFTER(storage, CALL...)), not a body of tensor-level effects (AFTER(PARAM, STORE...), tinygrad's spelling)
  stack = list(sink.src)
  while stack:
    u = stack.pop()
    if u.op is Ops.AFTER and u.src:
      stack.append(u.src[0])
      if any(d.op is not Ops.CALL or not d.src or body_kind(d.src[0]) == "effect" for d in u.src[1:]): return False
    elif u.op not in _GRAPH_ENTRIES: return False
  return True


def body_kind(body: UOp) -> str:
  """What a CALL body is, by its form (cached on the body):
    "value"    a TUPLE: a value-producing, differentiable call read through GETTUPLE
    "kernel"   a SINK of effects whose STOREs address elements (INDEX); an empty SINK is a kernel that stores nothing, and a
               SINK holding range-form ops is a kernel (a malformed one when it holds more than effects)
    "program"  a PROGRAM or a LINEAR: a linearized kernel
    "copy"     a COPY
    "graph"    a SINK of storage entries, each AFTER the CALLs that write it: a nested kernel graph (a precompiled call at
               KERNEL_GRAPH)
    "effect"   any other SINK: tensor-level effects, STOREs of tensor values into the call's PARAMs (a precompiled call at
               TENSOR); its entries are STOREs, GROUPs, calls, or AFTER(PARAM, effects...), and no range-form op
    "bad"      anything else"""
  if (ret := body._cache.get("body_kind")) is None: ret = body._cache["body_kind"] = _body_kind(body)
  return ret


def _body_kind(body: UOp) -> str:
  op = body.op
  if op is Ops.TUPLE: return "value"
  if op in (Ops.PROGRAM, Ops.LINEAR): return "program"
  if op is Ops.COPY: return "copy"
  if op is not Ops.SINK: return "bad"
  if body.src and _waits_for_calls(body): return "graph"
  return "kernel" if _stores_into_index(body) or _holds_range_ops(body) else "effect"


def _holds_range_ops(sink: UOp) -> bool:
  # a SINK addressing elements (INDEX, LOAD, RANGE...) is a kernel, however malformed; tensor-level effects never do
  return any(u.op in GroupOp.RangeForm for u in walk((sink,), lambda u: u.src[1:] if u.op is Ops.CALL else u.src))


def is_precompiled_call(u: UOp) -> bool:
  """A CALL of tensor-level effects (body_kind "effect"): a precompiled call at TENSOR, read through AFTER(its storage, CALL)."""
  return u.op is Ops.CALL and len(u.src) > 0 and body_kind(u.src[0]) == "effect"


def is_kernel_body(body: UOp) -> bool:
  """A kernel body: a kernel SINK, a PROGRAM or a LINEAR (body_kind "kernel" or "program")."""
  return body_kind(body) in ("kernel", "program")


def is_kernel_call(u: UOp) -> bool:
  """A CALL whose body is a kernel (is_kernel_body)."""
  return u.op is Ops.CALL and len(u.src) > 0 and is_kernel_body(u.src[0])


def kernel_calls(root: UOp) -> list[UOp]:
  """Every kernel CALL of the graph (nested kernel graphs included), in execution-compatible order; none when root is
  itself a kernel body (an empty SINK is an empty graph, not a body). The walk stops at kernel bodies: their insides
  can be large and hold no call."""
  if is_kernel_body(root) and not (root.op is Ops.SINK and not root.src): return []
  return [u for u in root.toposort(gate=lambda u: not is_kernel_body(u)) if is_kernel_call(u)]


def is_value_call(u: UOp) -> bool:
  """A CALL of a TUPLE: a value call, read through GETTUPLE."""
  return u.op is Ops.CALL and len(u.src) > 0 and u.src[0].op is Ops.TUPLE


def is_opaque_call(u: UOp) -> bool:
  """A CALL of anything but a TUPLE (a kernel, a program, a COPY, precompiled effects): a void call, ordered by AFTER."""
  return u.op is Ops.CALL and len(u.src) > 0 and u.src[0].op is not Ops.TUPLE


def storage_of(u: UOp) -> UOp:
  """The storage under a chain of AFTERs and IMAGE views (u itself when it is neither)."""
  while u.op in (Ops.AFTER, Ops.IMAGE) and u.src: u = u.src[0]
  return u


def graph_binds(root: UOp) -> dict[str, UOp]:
  """The BIND of each variable name in the graph under root (call bodies included). A graph binds a variable to one
  value (the spec's bind.one_value), and that value is what every DEFINE_VAR of the name in it means."""
  return {u.src[0].arg.name: u for u in walk((root,)) if u.op is Ops.BIND and len(u.src) == 2 and u.src[0].op is Ops.DEFINE_VAR}


def uop_srcs(x: UOp) -> list[UOp]:
  """x's sources that are UOps (a malformed node may hold something else; a walk passes over it)."""
  return [s for s in x.src if isinstance(s, UOp)]


def fold(u: UOp, key: str, srcs_of: Callable[[UOp], list[UOp]], combine: Callable[[UOp, list[UOp]], Any]) -> Any:
  """combine(x, srcs_of(x)) for u and every node below it (through srcs_of), sources first, each cached on its node under
  key: how every derived fact of a graph (shape, bounds, open ranges, free PARAMs) is computed. Iterative, so deep
  graphs do not recurse."""
  c = u._cache
  if key in c: return c[key]
  stack: list[tuple[UOp, bool]] = [(u, False)]
  while stack:
    x, ready = stack.pop()
    if key in x._cache: continue
    srcs = srcs_of(x)
    if not ready:
      stack.append((x, True))
      stack.extend((s, False) for s in srcs if key not in s._cache)
      continue
    x._cache[key] = combine(x, srcs)
  return c[key]


def union_of(srcs: list[UOp], key: str) -> frozenset:
  """The union of the sets cached under key on srcs, sharing a source's set when it is the only non-empty one."""
  sets = [s._cache[key] for s in srcs if s._cache[key]]
  if not sets: return frozenset()
  return sets[0] if len(sets) == 1 else frozenset().union(*sets)


def _open_ranges(x: UOp, srcs: list[UOp]) -> frozenset:
  res = union_of(srcs, "open_ranges")
  if x.op is Ops.RANGE: return res | {x}
  if (x.op is Ops.END or (x.op is Ops.REDUCE and not isinstance(x.arg, tuple))) and res: return res - frozenset(srcs[1:])
  return res


def open_ranges(u: UOp) -> frozenset:
  """The RANGEs u depends on that no END or range-form REDUCE between u and them closes. Cached on every node it
  visits (fold)."""
  return fold(u, "open_ranges", uop_srcs, _open_ranges)


def walk(roots: Iterable[UOp], children: Callable[[UOp], Sequence[UOp]] | None = None) -> list[UOp]:
  """Every node reachable from roots through `children` (default: the sources), sources before users, each once.
  Iterative, so a chain of a million nodes does not reach Python's recursion limit."""
  out: list[UOp] = []
  seen: set[int] = set()
  stack: list[tuple[UOp, bool]] = [(r, False) for r in reversed(tuple(roots))]
  while stack:
    u, done = stack.pop()
    if done:
      out.append(u)
      continue
    if id(u) in seen: continue
    seen.add(id(u))
    stack.append((u, True))
    for s in reversed(u.src if children is None else children(u)):
      if id(s) not in seen: stack.append((s, False))
  return out


def substitute(root: UOp, mapping: dict[UOp, UOp], into_calls: bool = True) -> UOp:
  """root with every node in mapping replaced by its image and every user of one rebuilt. Iterative. into_calls
  False keeps each CALL body (src[0]) as it is: the PARAMs of a body are its own, not the caller's."""
  if not mapping: return root
  def kids(u: UOp) -> Sequence[UOp]:
    if u in mapping: return ()
    return u.src[1:] if not into_calls and u.op is Ops.CALL else u.src
  new: dict[UOp, UOp] = {}
  for u in walk((root,), kids):
    if u in mapping:
      new[u] = mapping[u]
      continue
    ks = kids(u)
    src = (*u.src[:len(u.src) - len(ks)], *(new[s] for s in ks))
    new[u] = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
  return new[root]


class Malformed:
  """The cached result of a derived property on a malformed node."""
  __slots__ = ("err",)
  def __init__(self, err: Exception): self.err = err


# ---- shape rules ----
def _same_shape(u: UOp) -> tuple | None:
  shapes = {s.shape for s in u.src[1:]} if u.op is Ops.WHERE else {s.shape for s in u.src}
  if len(shapes) != 1: raise ValueError(f"sources have different shapes {sorted(map(str, shapes))}")
  return shapes.pop()


def _movement_shape(u: UOp) -> tuple:
  (s,), a = u.src, u.arg
  shp = s.shape
  if shp is None: raise ValueError("movement op on a shapeless source")
  if u.op is Ops.RESHAPE:
    if math.prod(a) != math.prod(shp) or any(x < 0 for x in a): raise ValueError(f"cannot reshape {shp} to {a}")
    return tuple(a)
  if u.op is Ops.PERMUTE:
    if sorted(a) != list(range(len(shp))): raise ValueError(f"{a} is not a permutation of {len(shp)} axes")
    return tuple(shp[i] for i in a)
  if u.op is Ops.EXPAND:
    if any(x < 0 for x in a): raise ValueError(f"negative expand {a}")
    return tuple(a) + shp
  if u.op is Ops.FLIP:
    if len(a) != len(shp) or not all(isinstance(x, bool) for x in a): raise ValueError(f"flip {a} does not fit {shp}")
    return shp
  if len(a) != len(shp): raise ValueError(f"{u.op.name} arg {a} has {len(a)} axes, source has {len(shp)}")
  for (o, n), d in zip(a, shp):
    bad = (o < 0 or n < d + o) if u.op is Ops.PAD else (o < 0 or n < 0 or o + n > d)
    if bad: raise ValueError(f"{u.op.name} arg {a} does not fit shape {shp}")
  return tuple(n for _, n in a)


def _reduce_shape(u: UOp) -> tuple:
  if isinstance(u.arg, tuple):
    op, n = u.arg
    shp = u.src[0].shape
    if shp is None or not 0 <= n <= len(shp): raise ValueError(f"cannot reduce {n} axes of {shp}")
    return shp[n:]
  return ()


def _multi_shape(u: UOp) -> tuple:
  """MULTI(s_0..s_n-1) with arg axis: the shards side by side along axis (their sizes may differ), other axes equal;
  arg None: the shape of every replica."""
  shapes = [s.shape for s in u.src]
  if not shapes or any(sh is None for sh in shapes): raise ValueError("MULTI holds values, at least one")
  a, first = u.arg, shapes[0]
  if a is None:
    if any(sh != first for sh in shapes): raise ValueError(f"replicas of different shapes {shapes}")
    return first
  if not isinstance(a, int) or isinstance(a, bool) or not 0 <= a < len(first): raise ValueError(f"axis {a!r} is not an axis of {first}")
  if any(len(sh) != len(first) or sh[:a] + sh[a + 1:] != first[:a] + first[a + 1:] for sh in shapes):
    raise ValueError(f"shards {shapes} differ off axis {a}")
  return first[:a] + (sum(sh[a] for sh in shapes),) + first[a + 1:]


def shard_blocks(m: UOp) -> tuple[tuple[int, int], ...] | None:
  """(offset, size) of every shard's block along a MULTI's sharded axis; None for a replicated MULTI."""
  if m.arg is None: return None
  sizes = [s.shape[m.arg] for s in m.src]
  return tuple((sum(sizes[:i]), n) for i, n in enumerate(sizes))


def _gettuple_shape(u: UOp) -> tuple | None:
  t = u.src[0].src[0] if u.src[0].op is Ops.CALL else u.src[0]
  return t.src[u.arg].shape


_shape_rules: dict[Ops, Callable[[UOp], tuple | None]] = {
  Ops.CONST: lambda u: (), Ops.PARAM: lambda u: (u.arg.size,), Ops.BUFFER: lambda u: (u.arg.size,),
  **{op: _movement_shape for op in GroupOp.Movement}, **{op: _same_shape for op in GroupOp.Elementwise},
  Ops.REDUCE: _reduce_shape, Ops.GETTUPLE: _gettuple_shape, Ops.MULTI: _multi_shape,
  **{op: (lambda u: u.src[0].shape) for op in (Ops.AFTER, Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY, Ops.IMAGE)},
  **{op: (lambda u: ()) for op in (Ops.RANGE, Ops.INDEX, Ops.LOAD, Ops.SPECIAL, Ops.DEFINE_VAR, Ops.BIND)},
}


def _shape_rule(u: UOp) -> tuple | None:
  fn = _shape_rules.get(u.op)
  return None if fn is None else fn(u)


def home_device(u: UOp) -> str:
  """The one device a PARAM or BUFFER standing for u's value names: u's device; the first of a MULTI's devices (in a
  call body the multi pass gives each shard a PARAM of its own device); CPU for a device-less value (a constant)."""
  d = u.device
  return d if isinstance(d, str) else d[0] if d else "CPU"


def device_conflict(srcs: Iterable[UOp]) -> tuple[Any, Any] | None:
  """The first two devices that differ among the sources that have one (compared with ==: a device may be a tuple of
  names), or None when they agree: what an op combining values must not have."""
  first = None
  for s in srcs:
    if (d := s.device) is None: continue
    if first is None: first = d
    elif d != first: return first, d
  return None


# single-source ops whose device is not their source's: what a walk passing devices up a chain of views stops at
OWN_DEVICE = frozenset({Ops.COPY, Ops.GETTUPLE})


def _gettuple_device(u: UOp) -> str | tuple[str, ...] | None:
  """A value call's output is where its body computes it (the TUPLE element GETTUPLE reads: a PARAM names its arg's
  device), not where the call's other outputs are; a call over several devices gives tensors over them."""
  c = u.src[0]
  if c.op is Ops.CALL:
    if isinstance(d := c.device, tuple): return d
    c = c.src[0]
  return c.src[u.arg].device


def _device_rule(u: UOp) -> str | tuple[str, ...] | None:
  if u.op in GroupOp.Storage: return u.arg.device
  if u.op is Ops.COPY: return u.arg
  if u.op is Ops.GETTUPLE: return _gettuple_device(u)
  if u.op is Ops.MULTI: return tuple(s.device for s in u.src)  # a multi-device value is on the tuple of its shards' devices
  # a call on tensors over several devices gives tensors over them (the multi pass runs it per device, or gathers its
  # args and replicates its outputs); its body's PARAMs name only the first of the devices
  if u.op is Ops.CALL and (d := next((t for s in u.src[1:] if isinstance(t := s.device, tuple)), None)) is not None: return d
  for s in u.src:
    if (d := s.device) is not None: return d
  return None


# ---- printing ----
def _arg_str(u: UOp) -> str:
  a = u.arg
  if isinstance(a, SourceArg): return f"{a.lang}:{a.name} ({len(a.text)} chars)"
  return "" if a is None else repr(a)


def print_graph(root: UOp, limit: int | None = None) -> str:
  """A numbered listing of the graph, one node a line: `%3 = ADD float32 (4,) [%1, %2] arg`."""
  nodes = root.toposort()
  num = {u: i for i, u in enumerate(nodes)}
  lines = []
  for u in nodes[-limit:] if limit else nodes:
    shp = str(u.shape) if u.shape_ok and u.shape is not None else ""
    srcs = ", ".join(f"%{num[s]}" for s in u.src)
    lines.append(f"%{num[u]} = {u.op.name} {u.dtype.name} {shp} [{srcs}] {_arg_str(u)}".rstrip())
  return "\n".join(lines)


Rows = list[tuple[str, str, tuple[int, ...], Any, Any]]


def to_rows(root: UOp) -> Rows:
  """The graph as flat rows (op name, dtype name, source row numbers, arg, tag), sources first and root last: what
  goes to another process of tinyspec's own by pickle (a UOp pickles recursively, which a deep graph cannot)."""
  nodes = root.toposort()
  num = {u: i for i, u in enumerate(nodes)}
  return [(u.op.name, u.dtype.name, tuple(num[s] for s in u.src), u.arg, u.tag) for u in nodes]


def from_rows(rows: Rows) -> UOp:
  """The graph of to_rows' rows (the identical, interned nodes)."""
  built: list[UOp] = []
  for op, dt, src, arg, tag in rows: built.append(UOp(Ops[op], dtypes.by_name[dt], tuple(built[i] for i in src), arg, tag))
  return built[-1]


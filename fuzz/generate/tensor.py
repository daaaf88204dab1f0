"""The tensor-graph generator: TENSOR graphs legal by construction, their inputs and their lowering choices.

TensorGen draws every choice from a `random.Random`: fuzz.generate.kinds hands it one seeded per case, the Hypothesis
strategies (fuzz.generate.strategies) one Hypothesis controls, so Hypothesis can shrink it. Its choices are weighted by
the weights of fuzz.generate.case (step:*, op:*, dtype:*, ...).

Programs stay free of undefined behaviour: fuzz.generate.safety checks every node as it is built and the generator wraps an
operand (MAX with 1 before a division, AND with width-1 before a shift, MAX with 0.5 before LOG2...) or picks another
op when a precondition does not hold.
"""
from __future__ import annotations

import math
import random
from typing import Any, Callable

import numpy as np

from fuzz.generate.case import (COMPARE, ELEMENTWISE, MOVEMENT, NUM_DTYPES, SIDE_STEP_WEIGHTS, SMALL_FLOATS, STEP_WEIGHTS, UNARY_FLOAT,
                                VALUE_DTYPES, Case, default_weights)
from fuzz.generate.draws import lowering_options, pick_weighted, side_random
from fuzz.generate.safety import Analysis, Facts, Unsafe, opaque_race, storage_base
from fuzz.generate.values import edge_values, input_values, special_values
from tinyspec.dtype import DType, dtypes
from tinyspec.ops.classes import accepts, reduce_accepts
from tinyspec.uop import Ops, UOp

MAX_SIZE = 32        # elements of any value
MAX_DIM = 4
MAX_RANK = 3
# the small floats (float16, bfloat16, the fp8 dtypes) take a float's place in some cases: weight "dtype:small" scales the
# share of tensor cases that hold them, and in such a case each float dtype drawn becomes one with chance SMALL_FLOAT_DRAW
# (which one: weights dtype:<name>; only those the op at hand accepts, so fp8 only where it is loaded, moved, selected
# and converted). They are drawn from a Random of their own: a case without them is the case it was before.
SMALL_FLOAT_SHARE = 0.08
SMALL_FLOAT_DRAW = 0.8
SMALL_CASE_FLOATS = 4.0
GEN_DTYPES = (*VALUE_DTYPES, *SMALL_FLOATS)  # every dtype a tensor case's values may have

VAR_SHARE = 0.12  # of tensor cases that hold bounded variables (BIND, cast and expanded) where constants would be
# edge values (TensorGen.edge_value): the chance that an input array holds some, and that a constant is one; weights
# "value:edge" (int wrap points, -0.0, denormals, the largest finite floats) and "value:special" (NaN, +inf, -inf) scale them
EDGE_INPUT_SHARE, EDGE_CONST_SHARE = 0.05, 0.025
# the most the two weights together scale those chances by (2 unsteered): a NaN or an infinity takes over every value
# computed from it, so however far steering boosts them edge values stay a minority of the draws
EDGE_WEIGHT_CAP = 5.0


def operand_dtypes(op: Ops) -> tuple[DType, ...]:
  """The value dtypes an elementwise op takes, by the registry's dtype class (index is for shapes and indices only), the
  small floats included: TensorGen.dtype draws those only in the cases that hold them."""
  return tuple(d for d in GEN_DTYPES if accepts(op, d))


class _Scope:
  def __init__(self, an: Analysis, depth: int):
    self.an, self.depth = an, depth
    self.pool: list[UOp] = []


def _agrees(u: UOp, device: Any) -> bool:
  """u may be combined with a value on device (None: a value of constants, which goes with any): tensor.one_device."""
  return device is None or (d := u.device) is None or d == device


def _device(*us: UOp) -> Any:
  """The device of values combined in one op: the first of theirs that has one."""
  return next((d for u in us if (d := u.device) is not None), None)


class TensorGen:
  """Builds one TENSOR graph, legal by construction, and its inputs, from a Random.

  The side steps (COPY, opaque kernel calls) draw every choice from `side`, a Random of their own: the main Random
  makes the same draws whether they happen or not, so a case without one is the case the same (seed, index) gave
  before they existed, and the case numbers of a campaign keep naming the same graphs."""

  def __init__(self, rng: random.Random, weights: dict[str, float] | None = None, max_nodes: int = 48, max_steps: int = 7,
               side: random.Random | None = None):
    self.rng, self.max_nodes, self.max_steps = rng, max_nodes, max_steps
    self.side = rng if side is None else side
    self.w = default_weights()
    if weights: self.w.update(weights)
    self.inputs: dict[int, np.ndarray] = {}
    self.facts = Facts()                # what the analysis of this graph's scopes learns, shared by them
    self.features: set[str] = set()
    self.next_id = 1
    self.nodes = 0
    self.outer: _Scope | None = None
    self.buffers: list[UOp] = []        # input buffers (flat), for captures
    self.assigned: list[UOp] = []       # ends of assign chains, kept for the SINK
    # some cases hold bounded variables where constants would be, chosen by a Random of their own (drawing from neither rng
    # nor side), so every other case is the one the same (seed, index) gave before
    self.vars: dict[str, UOp] = {}      # name -> its BIND: a graph binds a name to one value
    self.vrng = side_random(rng)
    self.with_vars = self.vrng.random() < VAR_SHARE * self.w.get("var:bound", 1.0)
    # edge values are drawn from a Random of their own too, after the value they replace: a case that draws none is
    # the case it was without them
    self.erng = random.Random(f"tinyspec-fuzz-edge:{side_random(rng).getrandbits(64)}")
    # and so are the small floats: whether the case holds them, and which float draws become one
    self.frng = random.Random(f"tinyspec-fuzz-small:{side_random(rng).getrandbits(64)}")
    self.with_small = self.frng.random() < SMALL_FLOAT_SHARE * self.w.get("dtype:small", 1.0)
    if self.with_small: self.features.add("dtype:small")

  # ---- choices ----
  def choose(self, prefix: str, items: list) -> Any:
    ws = [self.w.get(f"{prefix}:{getattr(i, 'name', i)}", 1.0) for i in items]
    it = pick_weighted(self.rng, items, ws)
    self.features.add(f"{prefix}:{getattr(it, 'name', it)}")
    return it

  def chance(self, feature: str, base: float) -> bool:
    p = min(0.95, base * self.w.get(feature, 1.0))
    if self.rng.random() < p:
      self.features.add(feature)
      return True
    return False

  def dtype(self, among: tuple = GEN_DTYPES) -> DType:
    """A dtype of among: drawn from the main Random among the dtypes other than the small floats, and in a case that
    holds small floats (with_small) a float drawn may become one of among's, chosen by the small-float Random."""
    items = [d for d in among if not d.is_small_float]
    # in a case that holds small floats, floats are drawn SMALL_CASE_FLOATS times as often: the small floats replace them
    ws = [self.w.get(f"dtype:{d.name}", 1.0) * (SMALL_CASE_FLOATS if self.with_small and d.is_float else 1.0) for d in items]
    dt = pick_weighted(self.rng, items, ws)
    self.features.add(f"dtype:{dt.name}")
    return self.small_float(dt, among) if self.with_small and dt.is_float else dt

  def small_float(self, dt: DType, among: tuple = GEN_DTYPES) -> DType:
    """dt, or with chance SMALL_FLOAT_DRAW one of the small floats among holds (weights dtype:<name>)."""
    f = self.frng
    small = [d for d in among if d.is_small_float]
    if not small or f.random() >= SMALL_FLOAT_DRAW: return dt
    ws = [self.w.get(f"dtype:{d.name}", 1.0) for d in small]
    if sum(ws) <= 0: return dt
    out = pick_weighted(f, small, ws)
    self.features.add(f"dtype:{out.name}")
    return out

  def shape(self, rank: int | None = None) -> tuple[int, ...]:
    r = self.rng.choice([0, 1, 1, 2, 2, 2, 3]) if rank is None else rank
    shp: list[int] = []
    for _ in range(r):
      left = MAX_SIZE // max(1, math.prod(shp))
      shp.append(self.rng.randint(1, max(1, min(MAX_DIM, left))))
    return tuple(shp)

  # ---- values ----
  def values(self, dt: DType, n: int) -> np.ndarray:
    return input_values(self.rng, dt, n)

  def edge_value(self, dt: DType, share: float) -> Any:
    """With chance share (scaled by the weights), an edge or special value of dt, drawn from the edge Random; else None."""
    e = self.erng
    kinds = [(k, self.w.get(f"value:{k}", 1.0)) for k, vals in (("edge", edge_values(dt)), ("special", special_values(dt))) if vals]
    if not kinds or e.random() >= share * min(EDGE_WEIGHT_CAP, sum(w for _, w in kinds)): return None
    kind = pick_weighted(e, [k for k, _ in kinds], [w for _, w in kinds])
    self.features.add(f"value:{kind}")
    return e.choice(edge_values(dt) if kind == "edge" else special_values(dt))

  def with_edges(self, dt: DType, vals: np.ndarray) -> np.ndarray:
    """vals with some elements replaced by edge values, for an input array that draws them."""
    if (v := self.edge_value(dt, EDGE_INPUT_SHARE)) is None: return vals
    out = vals.copy()
    for _ in range(self.erng.randint(1, max(1, out.size // 2))):
      out[self.erng.randrange(out.size)] = v
      if (w := self.edge_value(dt, 1.0)) is not None: v = w
    return out

  def new_buffer(self, dt: DType, shape: tuple[int, ...], fill: bool = True, device: str = "CPU") -> tuple[UOp, UOp]:
    n = math.prod(shape)
    buf = UOp.buffer(dt, n, device, id=self.next_id)
    self.next_id += 1
    if fill: self.inputs[buf.arg.id] = self.with_edges(dt, self.values(dt, n))
    view = buf if len(shape) == 1 else buf.reshape(shape)
    return buf, view

  def new_input(self, scope: _Scope, dt: DType | None = None, shape: tuple[int, ...] | None = None) -> UOp:
    dt = dt or self.dtype()
    shape = self.shape() if shape is None else shape
    buf, view = self.new_buffer(dt, shape)
    self.buffers.append(buf)
    if self.outer is not None: self.outer.pool.append(view)
    if scope is not self.outer: scope.pool.append(view)
    return view

  def const(self, dt: DType, shape: tuple[int, ...], value: Any = None) -> UOp:
    if value is None:
      r = self.rng
      if dt.is_bool: value = r.random() < 0.5
      elif dt.is_float: value = r.choice([0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 0.25])
      else: value = r.choice([0, 1, 2, 3, 5, 7, -1, -3, dt.max, dt.min, 8, 16])
      if (e := self.edge_value(dt, EDGE_CONST_SHARE)) is not None: return self.expanded(UOp.const(dt, e), shape)
      if self.with_vars and (v := self.variable(dt, value)) is not None: return v if shape == () else v.expand(shape)
    return self.expanded(UOp.const(dt, value), shape)

  @staticmethod
  def expanded(c: UOp, shape: tuple[int, ...]) -> UOp: return c if shape == () else c.expand(shape)

  def variable(self, dt: DType, value: Any) -> UOp | None:
    """Sometimes, a bounded variable bound to value (cast to dt) in place of the constant; None otherwise."""
    s = self.vrng
    if dt.is_bool or s.random() >= 0.5 or int(value) != value: return None
    value = int(value)
    vdt = dt if dt.is_int and s.random() < 0.4 else dtypes.index
    lo, hi = value - s.choice([0, 0, 1, 3]), value + s.choice([0, 1, 2, 5])
    if not (vdt.min <= lo and hi <= vdt.max): return None
    name = f"v{len(self.vars)}"
    b = UOp.variable(name, lo, hi, vdt).bind(value)
    self.vars[name] = b
    self.features.add("var:bound")
    return b if vdt is dt else b.cast(dt)

  # ---- pool access ----
  def pick(self, scope: _Scope, pred: Callable[[UOp], bool]) -> UOp | None:
    cands = [u for u in scope.pool if pred(u)]
    if not cands: return None
    ws = [1.0 + i for i in range(len(cands))]  # favour recent values: deeper graphs
    return pick_weighted(self.rng, cands, ws)

  def operand(self, scope: _Scope, dt: DType, shape: tuple[int, ...], avoid: UOp | None = None, device: Any = None) -> UOp:
    """A value of this dtype and shape that goes with values on device: from the pool, adapted from one, a constant or a
    new input (inputs are on CPU)."""
    r = self.rng.random()
    if r < 0.55 and (u := self.pick(scope, lambda x: x.dtype is dt and x.shape == shape and x is not avoid and _agrees(x, device))) is not None:
      return u
    if r < 0.7:
      n = math.prod(shape)
      if (u := self.pick(scope, lambda x: x.dtype is dt and x.size == n and x.shape != shape and _agrees(x, device))) is not None:
        return u.reshape(shape)
    if r < 0.8:
      if (u := self.pick(scope, lambda x: x.dtype is dt and len(x.shape) < len(shape) and shape[len(shape) - len(x.shape):] == x.shape
                         and _agrees(x, device))) is not None:
        return u.expand(shape[:len(shape) - len(u.shape)])
    if r < 0.92 or self.outer is None or device not in (None, "CPU"): return self.const(dt, shape)
    return self.new_input(scope, dt, shape)

  def add(self, scope: _Scope, u: UOp) -> UOp | None:
    """Keep u when it is safe; the pool gets it."""
    try:
      scope.an.info(u)
    except Unsafe:
      return None
    scope.pool.append(u)
    return u

  def safe(self, scope: _Scope, u: UOp) -> bool:
    try:
      scope.an.info(u)
      return True
    except Unsafe:
      return False

  # ---- steps ----
  def step(self, scope: _Scope) -> None:
    if scope is self.outer: self.side_step(scope)
    kinds = list(STEP_WEIGHTS)
    if scope.depth >= 2: kinds.remove("call")
    if scope is not self.outer: kinds.remove("assign")
    kind = self.choose("step", kinds)
    getattr(self, f"step_{kind}")(scope)

  def side_step(self, scope: _Scope) -> None:
    """Maybe a COPY or an opaque call step (outer graph only: device moves and effects on fresh storage), every choice
    drawn from the side Random."""
    main, self.rng = self.rng, self.side
    try:
      x = self.rng.random()
      for kind in SIDE_STEP_WEIGHTS:
        x -= self.w.get(f"step:{kind}", 0.0)
        if x < 0:
          self.features.add(f"step:{kind}")
          getattr(self, f"step_{kind}")(scope)
          return
    finally:
      self.rng = main

  def step_input(self, scope: _Scope) -> None:
    self.new_input(scope)

  def step_contiguous(self, scope: _Scope) -> None:
    if (x := self.pick(scope, lambda u: u.shape is not None)) is not None: self.add(scope, UOp(Ops.CONTIGUOUS, x.dtype, (x,)))

  def step_tuple(self, scope: _Scope) -> None:
    # GETTUPLE of a bare TUPLE (no call): legal at TENSOR, folded by callify
    vals = [u for u in scope.pool if u.shape is not None][-3:]
    if not vals: return
    i = self.rng.randrange(len(vals))
    self.add(scope, UOp(Ops.GETTUPLE, vals[i].dtype, (UOp(Ops.TUPLE, src=tuple(vals)),), i))

  def step_detach(self, scope: _Scope) -> None:
    if (x := self.pick(scope, lambda u: u.shape is not None)) is not None: self.add(scope, UOp(Ops.DETACH, x.dtype, (x,)))

  def movement(self, x: UOp, op: Ops) -> UOp | None:
    r, shp = self.rng, x.shape
    if op is Ops.RESHAPE:
      n = x.size
      new = self._factor(n)
      return x.reshape(new) if new != shp else None
    if op is Ops.PERMUTE:
      if len(shp) < 2: return None
      perm = list(range(len(shp)))
      while perm == list(range(len(shp))): r.shuffle(perm)
      return x.permute(tuple(perm))
    if op is Ops.EXPAND:
      if len(shp) >= MAX_RANK + 1: return None
      k = r.randint(1, max(1, MAX_SIZE // max(1, x.size)))
      if x.size * k > MAX_SIZE: return None
      return x.expand((k,))
    if op is Ops.PAD:
      if not shp: return None
      arg = []
      for d in shp:
        o = r.randint(0, 2)
        arg.append((o, d + o + r.randint(0, 2)))
      if math.prod(s for _, s in arg) > MAX_SIZE or all(s == d for (_, s), d in zip(arg, shp)): return None
      return x.pad(tuple(arg))
    if op is Ops.SHRINK:
      if not shp or x.size <= 1: return None
      arg = []
      for d in shp:
        s = r.randint(1, d)
        arg.append((r.randint(0, d - s), s))
      return x.shrink(tuple(arg))
    if op is Ops.FLIP:
      if not shp: return None
      return x.flip(tuple(r.random() < 0.6 for _ in shp))
    raise ValueError(op)

  def _factor(self, n: int) -> tuple[int, ...]:
    r, out = self.rng, []
    while n > 1 and len(out) < MAX_RANK:
      divs = [d for d in range(2, n + 1) if n % d == 0]
      d = r.choice(divs) if len(out) < MAX_RANK - 1 else n
      out.append(d)
      n //= d
    if r.random() < 0.2: out.insert(r.randint(0, len(out)), 1)
    return tuple(out)

  def step_movement(self, scope: _Scope) -> None:
    x = self.pick(scope, lambda u: u.shape is not None)
    if x is None: return
    for _ in range(self.rng.randint(1, 4)):
      op = self.choose("op", list(MOVEMENT))
      if (y := self.movement(x, op)) is not None and y.size <= MAX_SIZE: x = y
    self.add(scope, x)

  def step_reduce(self, scope: _Scope) -> None:
    x = self.pick(scope, lambda u: u.shape is not None and len(u.shape) >= 1 and not u.dtype.is_bool and reduce_accepts(u.dtype))
    if x is None: return
    rank = len(x.shape)
    if rank >= 2 and self.rng.random() < 0.4:
      perm = list(range(rank))
      self.rng.shuffle(perm)
      x = x.permute(tuple(perm))
    rop = self.choose("reduce", [Ops.ADD, Ops.MAX, Ops.MUL])
    n = self.rng.randint(1, rank)
    y = x.reduce(rop, n)
    if self.add(scope, y) is None and rop is not Ops.MAX: self.add(scope, x.reduce(Ops.MAX, n))

  def step_elementwise(self, scope: _Scope) -> None:
    op = self.choose("op", list(ELEMENTWISE))
    fn = getattr(self, f"_ew_{op.name.lower()}", None)
    if fn is not None:
      fn(scope, op)
      return
    among = operand_dtypes(op)
    if op in UNARY_FLOAT or op is Ops.NEG:
      a = self.pick(scope, lambda u: u.dtype in among and u.shape is not None)
      if a is None: a = self.new_input(scope, self.dtype(among))
      u = a.alu(op)
      if not self.safe(scope, u) and op in (Ops.RECIP, Ops.LOG2, Ops.SQRT):
        u = a.maximum(self.const(a.dtype, a.shape, 0.0 if op is Ops.SQRT else 0.5)).alu(op)
      self.add(scope, u)
      return
    a = self.pick(scope, lambda u: u.dtype in among and u.shape is not None)
    if a is None: a = self.new_input(scope, self.dtype(among))
    if op in (Ops.IDIV, Ops.MOD) and self.chance("divmod:bounded", 0.3):
      # a dividend with small known bounds, as index arithmetic has: the bounds-based div/mod folds apply to it
      m = self.rng.choice([3, 4, 7, 8, 15])
      if a.dtype.is_signed: a = a.maximum(self.const(a.dtype, a.shape, 0))
      a = a & self.const(a.dtype, a.shape, m)
      b = self.const(a.dtype, a.shape, self.rng.choice([m, m, m, m + 1, m - 1, 2, 4]))
    elif op in (Ops.IDIV, Ops.MOD) and self.rng.random() < 0.5:
      d = self.rng.choice([2, 3, 4, 5, 7, 8, 16, -2, -3] if a.dtype.is_signed else [1, 2, 3, 4, 5, 7, 8, 16])
      b = self.const(a.dtype, a.shape, d)
    elif op in (Ops.SHL, Ops.SHR) and self.rng.random() < 0.5:
      b = self.const(a.dtype, a.shape, self.rng.randint(0, a.dtype.bits - 1))
    else:
      b = self.operand(scope, a.dtype, a.shape, device=a.device)
    if self.rng.random() < 0.5 and op is not Ops.IDIV and op is not Ops.MOD and op not in (Ops.SHL, Ops.SHR, Ops.SUB, Ops.CMPLT): a, b = b, a
    u = a.alu(op, b)
    if not self.safe(scope, u):
      if op in (Ops.IDIV, Ops.MOD): u = a.alu(op, b.maximum(self.const(a.dtype, a.shape, 1)))
      elif op in (Ops.SHL, Ops.SHR): u = a.alu(op, b & self.const(a.dtype, a.shape, a.dtype.bits - 1))
    self.add(scope, u)

  def _ew_where(self, scope: _Scope, op: Ops) -> None:
    a = self.pick(scope, lambda u: u.shape is not None and u.dtype is not dtypes.bool)
    if a is None: a = self.new_input(scope)
    c = self.operand(scope, dtypes.bool, a.shape, device=a.device)
    if c.op is Ops.EXPAND and c.src[0].op is Ops.CONST and self.rng.random() < 0.7:
      # a comparison makes a more interesting condition than a constant
      x = self.pick(scope, lambda u: u.shape == a.shape and u.dtype in NUM_DTYPES and _agrees(u, a.device))
      if x is not None:
        cmp = x.alu(self.rng.choice(COMPARE), self.operand(scope, x.dtype, x.shape, device=_device(x, a)))
        if self.safe(scope, cmp): c = cmp
    b = self.operand(scope, a.dtype, a.shape, avoid=a, device=_device(a, c))
    self.add(scope, c.where(a, b))

  def _ew_cast(self, scope: _Scope, op: Ops) -> None:
    a = self.pick(scope, lambda u: u.shape is not None)
    if a is None: return
    if self.rng.random() < 0.25: a = self.const(self.dtype(), a.shape)  # a cast of a constant: folded by simplify
    dt = self.dtype()
    if dt is a.dtype: return
    u = a.cast(dt)
    if not self.safe(scope, u) and a.dtype.is_float and not dt.is_bool:
      # bring the floats to exact small values first: trunc after clamping, when the source is exact (an fp8 value is
      # converted to float32 to be clamped: it is never computed on)
      if a.dtype.storage_only: a = a.cast(dtypes.float32)
      lo, hi = (0.0, 100.0) if dt.kind == "u" else (-100.0, 100.0)
      lo, hi = max(lo, float(dt.min)), min(hi, float(dt.max))
      cl = (-((-a.maximum(self.const(a.dtype, a.shape, lo))).maximum(self.const(a.dtype, a.shape, -hi))))
      u = cl.cast(dt)
    self.add(scope, u)

  def _ew_bitcast(self, scope: _Scope, op: Ops) -> None:
    a = self.pick(scope, lambda u: u.shape is not None and not u.dtype.is_bool)
    if a is None: return
    same = [d for d in NUM_DTYPES if d.itemsize == a.dtype.itemsize and d is not a.dtype and (a.dtype.is_float or not d.is_float)]
    if not same: return
    dt = self.rng.choice(same)
    u = a.bitcast(dt)
    if dt.is_int and a.dtype.is_float and self.rng.random() < 0.3: u = u.bitcast(a.dtype)  # round trip
    self.add(scope, u)

  def step_assign(self, scope: _Scope) -> None:
    v = self.pick(scope, lambda u: u.shape is not None)
    if v is None: return
    # the target on the value's device: a STORE's target and value are on one device
    _, target = self.new_buffer(v.dtype, v.shape if v.shape else (1,), fill=self.rng.random() < 0.5, device=v.device or "CPU")
    if v.shape == (): target = target.reshape(())
    x = UOp(Ops.AFTER, v.dtype, (target, target.store(v)))
    if self.add(scope, x) is None: return
    while not v.dtype.storage_only and self.chance("assign:chain", 0.5):  # an fp8 value is stored, never computed on
      w = self.operand(scope, v.dtype, v.shape, avoid=x, device=x.device)
      if w is x or x in w.toposort(): w = self.const(v.dtype, v.shape)
      op = self.rng.choice([Ops.XOR, Ops.OR, Ops.AND] if v.dtype.is_bool else [Ops.ADD, Ops.MUL, Ops.MAX, Ops.SUB])
      nv = x.alu(op, w)
      nx = UOp(Ops.AFTER, v.dtype, (x, x.store(nv)))
      if self.add(scope, nx) is None: break
      x = nx
    self.assigned.append(x)

  def step_copy(self, scope: _Scope) -> None:
    x = self.pick(scope, lambda u: u.shape is not None and u.device == "CPU")
    if x is None: return
    y = UOp(Ops.COPY, x.dtype, (x,), "CPU:1")
    if self.add(scope, y) is None: return
    if self.chance("copy:back", 0.5): self.add(scope, UOp(Ops.COPY, x.dtype, (y,), "CPU"))

  def step_opaque(self, scope: _Scope) -> None:
    """An opaque kernel call writing a fresh buffer in place, read back through AFTER(buffer, call)."""
    x = self.pick(scope, lambda u: u.shape is not None and u.size >= 1 and u.device == "CPU")
    if x is None: return
    dt, n = x.dtype, x.size
    buf, target = self.new_buffer(dt, x.shape if x.shape else (1,), fill=self.rng.random() < 0.5)
    args = [buf, x]
    if (y := self.pick(scope, lambda u: u.dtype is dt and u.shape is not None and u.size >= 1 and u.device == "CPU" and
                       storage_base(u) is not storage_base(x))) is not None and self.chance("opaque:two_reads", 0.5):
      args.append(y)
    # axis 0, the id rangeify also gives its first output axis: a kernel rangeify builds around this call's result must
    # not take the call's own loop for a second loop of its axis (kernel.range_axis_unique stops at CALL bodies)
    r = UOp.range(n, 0)
    ops = [Ops.AND, Ops.OR, Ops.XOR] if dt.is_bool else [Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX]
    val: UOp | None = None
    if dt.storage_only: args = args[:2]  # an fp8 value is copied, never combined
    for k, a in enumerate(args[1:], 1):
      p = UOp.param(k, dt, a.size)
      idx = self._opaque_index(r, n, a.size)
      ld = p.index(idx).load()
      val = ld if val is None else val.alu(self.rng.choice(ops), ld)
    assert val is not None
    p0 = UOp.param(0, dt, n)
    if not dt.storage_only and self.chance("opaque:inplace", 0.5):
      # the old contents, read at the element this iteration writes: no other iteration touches it
      val = p0.index(r).load().alu(self.rng.choice(ops), val)
    body = UOp(Ops.SINK, src=(p0.index(r).store(val).end(r),))
    call = UOp(Ops.CALL, src=(body, *args), arg=None)
    if target.shape != x.shape: target = target.reshape(x.shape)
    if opaque_race(UOp(Ops.SINK, src=(*scope.pool, *self.assigned, call))) is not None: return
    if (written := self.add(scope, target.after(call))) is None: return
    self.assigned.append(written)
    if self.chance("opaque:effect_entry", 0.2): self.assigned.append(call)

  def _opaque_index(self, r: UOp, n: int, size: int) -> UOp:
    """The element of a read arg of `size` elements that iteration r of n reads: itself, or in reverse order, clamped
    to the last element. Plain on purpose: index arithmetic is what kernel cases and index_exprs explore; here the
    subject is the call as an effect."""
    last = UOp.const(dtypes.index, size - 1)
    idx = last.alu(Ops.SUB, r) if self.rng.random() < 0.3 and size >= n else r
    return idx if size >= n else (r < UOp.const(dtypes.index, size)).where(r, last)

  def step_call(self, scope: _Scope) -> None:
    cands = [u for u in scope.pool if u.shape is not None]
    if not cands: return
    nargs = self.rng.randint(1, min(3, len(cands)))
    args: list[UOp] = []
    for _ in range(nargs):
      a = self.pick(scope, lambda u: u.shape is not None and u not in args)
      if a is not None: args.append(a)
    try: arg_infos = [scope.an.info(a) for a in args]
    except Unsafe: return
    body = _Scope(Analysis(self.inputs, {k: i for k, i in enumerate(arg_infos) if i is not None}, self.facts), scope.depth + 1)
    for k, a in enumerate(args):
      p = UOp.param(k, a.dtype, max(1, a.size), a.device or "CPU")  # on its arg's device: inlined, the body computes there
      body.pool.append(p if len(a.shape) == 1 else p.reshape(a.shape))
    if self.buffers and self.chance("call:capture", 0.3):
      buf = self.rng.choice(self.buffers)
      body.pool.append(buf)
    params = list(body.pool)
    steps = self.rng.randint(1, 4)
    if self.chance("call:nested", 0.3) and scope.depth + 1 < 2:
      self.step_call(body)
      steps -= 1
    for _ in range(steps): self.step(body)
    fresh = [u for u in body.pool if u not in params] or params
    k = self.rng.randint(1, min(3, len(fresh)))
    outs = list(dict.fromkeys(self.rng.sample(fresh[-4:], min(k, len(fresh[-4:])))))
    tup = UOp(Ops.TUPLE, src=tuple(outs))
    call = UOp(Ops.CALL, src=(tup, *args), arg=f"f{self.next_id}")
    self.next_id += 1
    for i in range(len(outs)): self.add(scope, call.gettuple(i))
    if self.chance("call:reuse", 0.3):
      # the same body called again, with other args of the same sizes and dtypes
      other = []
      for a in args:
        o = self.pick(scope, lambda u, a=a: u.dtype is a.dtype and u.shape == a.shape and u is not a and _agrees(u, a.device or "CPU"))
        other.append(o if o is not None else self.const(a.dtype, a.shape))
      call2 = UOp(Ops.CALL, src=(tup, *other), arg=call.arg)
      self.add(scope, call2.gettuple(self.rng.randrange(len(outs))))

  # ---- the case ----
  def options(self, root: UOp) -> dict[str, Any]:
    return lowering_options(self.rng, self.w, self.features, root)

  def graph(self) -> UOp:
    self.outer = _Scope(Analysis(self.inputs, facts=self.facts), 0)
    for _ in range(self.rng.randint(1, 2)): self.new_input(self.outer)
    for _ in range(self.rng.randint(1, self.max_steps)):
      self.step(self.outer)
    pool = self.outer.pool
    used = {s for u in pool for s in u.toposort() if s is not u}
    leaves = [u for u in pool if u not in used and u.op is not Ops.RESHAPE and u.op is not Ops.BUFFER]
    outs = list(dict.fromkeys([*self.assigned, *leaves[-2:]])) or [pool[-1]]
    if self.rng.random() < 0.2 and len(pool) > 1: outs.append(self.rng.choice(pool))
    return UOp(Ops.SINK, src=tuple(dict.fromkeys(outs)))

  def case(self) -> Case:
    root = self.graph()
    return Case(root, self.inputs, self.options(root), "tensor", features=frozenset(self.features))


"""Arbitrary read-modify-write kernels: KERNEL_GRAPH cases whose loops read what they, or earlier kernels, wrote.

Rangeify only ever writes an element once per kernel (and accumulates through REDUCE), so a fuzzer driven by tensor
graphs never builds a loop whose iterations feed each other. This generator does: accumulators in global buffers and
in REG buffers (the form lower_reduce produces, with any update op), prefix sums (out[i] = out[i-1] op x[i]), several
stores to one buffer in one loop, gated stores and gated loads, nested loops, range-form REDUCEs, and kernels that read
earlier kernels' outputs through AFTER.

The meaning of each kernel is fixed by its dependencies, not by an order the lowering happens to choose: every access
to storage the kernel writes goes through AFTER(storage, the last effect that touched it, the open RANGEs), so a read
runs inside its loops and after the effects before it, and a write after the reads before it; loops nest as their
ENDs list them (outer first); kernels touching one buffer are ordered by AFTER on it. Values stay free of undefined
behaviour and of float rounding (fuzz.generate.kernel_safety screens every case): ints wrap, divisors are nonzero constants,
shift counts are masked, floats are short dyadic rationals combined so that a loop adds at most one written value.

    @given(fuzz.generate.strategies.rmw_kernels())
    def test_my_kernel_pass(case): ...
"""
from __future__ import annotations

import math
import random
import numpy as np

from fuzz.generate.case import IMAGE_SHARE, Case
from fuzz.generate.draws import side_random
from fuzz.generate.index_kernels import bind_variables, in_bounds, index_expr, new_variables, variable_values
from fuzz.generate.kernel_safety import first_screened
from fuzz.generate.opts import kernel_opts
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp, storage_of

MAX_BUFFER = 64          # elements of a buffer
MAX_ITERS = 64           # iterations of one loop nest
MAX_LOOP_DEPTH = 3
MAX_KERNELS = 3
ATTEMPTS = 20            # graphs drawn before falling back to ints when the screen rejects one

INT_UPDATES = ("ADD", "SUB", "RSUB", "MUL", "MAX", "MIN", "WMAX", "AND", "OR", "XOR", "SHL", "SHR", "IDIV", "MOD", "GATED", "CAST", "SELECT")
FLOAT_UPDATES = ("ADD", "SUB", "RSUB", "MAX", "MIN", "WMAX", "SIGN", "GATED", "SELECT")
BOOL_UPDATES = ("AND", "OR", "XOR", "NE", "SELECT")
# value dtypes, by weight: int32 and float32 most, every other width too
DTYPE_WEIGHTS = {dtypes.int32: 4, dtypes.float32: 3, dtypes.int8: 1, dtypes.uint8: 1, dtypes.int16: 1, dtypes.uint16: 1, dtypes.uint32: 1,
                 dtypes.int64: 1.5, dtypes.uint64: 1, dtypes.float64: 1.5, dtypes.bool: 0.7}
# the small floats, as the dtype of a buffer beside the first: read (cast to float32) and written by a store of a float32
# value cast into them, or of an update computed in float32 (fp8 has no arithmetic; a float16 sum would round)
SMALL_WEIGHTS = {dtypes.float16: 1.0, dtypes.bfloat16: 1.0, **{d: 0.6 for d in dtypes.fp8s}}
IDX = dtypes.index


def _c(v: int) -> UOp: return UOp.const(IDX, v)


def _pick(rng: random.Random, weights: dict) -> object:
  items = list(weights)
  x = rng.random() * sum(weights.values())
  for it in items:
    x -= weights[it]
    if x <= 0: return it
  return items[-1]


def _accessed(eff: UOp) -> set[UOp]:
  """The storage an effect reads or writes itself: not what the effects it waits for (AFTER dependencies) access."""
  out: set[UOp] = set()
  seen, stack = {eff}, [eff]
  while stack:
    u = stack.pop()
    if u.op is Ops.INDEX: out.add(storage_of(u.src[0]))
    for x in (u.src[:1] if u.op is Ops.AFTER else u.src):
      if x not in seen:
        seen.add(x)
        stack.append(x)
  return out


class _Block:
  """The open loops of the place a statement is built, and what the statements of the innermost loop touched."""
  def __init__(self, ranges: list[UOp]):
    self.ranges = ranges
    self.touched: set[UOp] = set()


class KernelBuilder:
  """One kernel body over PARAMs: slots `written` may be stored to (and get AFTERs), the others are only read."""

  def __init__(self, gen: RmwGen, params: list[UOp], written: list[UOp]):
    self.g, self.rng = gen, gen.rng
    self.params, self.written = params, list(written)
    self.last: dict[UOp, UOp] = {}     # storage -> the last effect that read or wrote it
    self.axis = 0
    self.stack: list[_Block] = [_Block([])]

  # ---- storage and indices ----
  @property
  def rs(self) -> list[UOp]: return self.stack[-1].ranges

  def iters(self) -> int: return math.prod(int(r.src[0].arg) for r in self.rs)

  def storage(self, p: UOp) -> UOp:
    """p as this access sees it: after the last effect on it and inside the open loops, when the kernel writes p."""
    for b in self.stack: b.touched.add(p)
    if p not in self.written: return p
    deps = ([self.last[p]] if p in self.last else []) + self.rs
    return p.after(*deps) if deps else p

  def new_range(self, bound: int) -> UOp:
    r = UOp.range(bound, self.axis)
    self.axis += 1
    return r

  def index(self, size: int, ranges: list[UOp] | None = None) -> tuple[UOp, UOp | None, str]:
    """(an index into [0, size), a gate it needs or None, its kind) over the open ranges."""
    rng, rs = self.rng, self.rs if ranges is None else ranges
    if not rs or rng.random() < 0.08: return _c(rng.randrange(size)), None, "const"
    kind = rng.choice(["affine", "affine", "affine", "rev", "shift", "shift", "mod", "wrap"])
    e, hi = self.affine(size, rs)
    if kind == "rev" and hi < size:
      return _c(hi).alu(Ops.SUB, e), None, "rev"
    if kind == "shift" and hi >= 1:
      k = rng.choice([1, 1, 1, 2])
      if rng.random() < 0.5: return e.alu(Ops.SUB, _c(k)), _c(k - 1) < e, "shift"
      if hi + k < size: return e + _c(k), None, "shift"
      return e + _c(k), e < _c(size - k), "shift"
    if kind == "mod":
      r = rng.choice(rs)
      m = r * _c(rng.randint(1, 5)) + _c(rng.randint(0, 3))
      return m % _c(size), None, "mod"
    if kind == "wrap": return in_bounds(index_expr(rng, rs, 2, self.g.variables), size), None, "wrap"
    if self.g.variables and hi < size - 1 and self.g.side.random() < 0.3:  # an offset by a variable: v + affine, v in [0, size-1-hi]
      v = self.g.side.choice(self.g.variables)
      if v.arg.max <= size - 1 - hi:
        self.g.features.add("rmw:var_index")
        return e + v, None, "affine"
    return e, None, "affine"

  def affine(self, size: int, rs: list[UOp]) -> tuple[UOp, int]:
    """sum of stride * range + offset over a subset of the ranges, with its maximum below size."""
    rng = self.rng
    sub = [r for r in rs if rng.random() < 0.7] or [rng.choice(rs)]
    e: UOp | None = None
    hi = 0
    for r in sub:
      b = int(r.src[0].arg)
      room = (size - 1 - hi) // max(1, b - 1) if b > 1 else size
      if room < 1: continue
      stride = rng.choice([s for s in (1, 1, 1, 2, 3, 4, b) if s <= room])
      t = r if stride == 1 else r * _c(stride)
      e = t if e is None else e + t
      hi += stride * (b - 1)
    if e is None: return _c(0), 0
    if hi < size - 1 and rng.random() < 0.3:
      off = rng.randint(1, size - 1 - hi)
      e, hi = e + _c(off), hi + off
    return e, hi

  # ---- values ----
  def load(self, p: UOp, ranges: list[UOp] | None = None, storage: UOp | None = None) -> UOp:
    idx, gate, kind = self.index(p.arg.size, ranges)
    if kind == "shift": self.g.features.add("rmw:shifted_read")
    ix = (storage if storage is not None else self.storage(p)).index(idx)
    if gate is None and self.rng.random() < 0.1 and self.rs:
      gate = self.rs[-1] < _c(self.rng.randint(1, int(self.rs[-1].src[0].arg)))
    if gate is None: return ix.load()
    self.g.features.add("rmw:gated_load")
    return ix.load(self.const(p.dtype), gate)

  def const(self, dt: DType) -> UOp:
    r = self.rng
    if dt.is_bool: return UOp.const(dt, r.random() < 0.5)
    if dt.is_float: return UOp.const(dt, r.choice([0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 0.25, -0.75]))
    return UOp.const(dt, r.choice([0, 1, 2, 3, 5, 7, -1, -3, 8, 16, dt.max, dt.min, dt.max - 1]))

  def readable(self, dt: DType, pure: bool) -> list[UOp]:
    """PARAMs of dtype dt a value may load (pure: none the kernel writes)."""
    return [p for p in self.params if p.dtype is dt and not (pure and p in self.written)]

  def leaf(self, dt: DType, pure: bool, ranges: list[UOp] | None = None) -> UOp:
    rng = self.rng
    rs = self.rs if ranges is None else ranges
    x = rng.random()
    if x < 0.6 and (ps := self.readable(dt, pure)): return self.load(rng.choice(ps), ranges)
    if x < 0.72 and rs and not dt.is_bool:
      if self.g.variables and self.g.side.random() < 0.3:
        self.g.features.add("rmw:var_value")
        return self.g.side.choice(self.g.variables).cast(dt)
      self.g.features.add("rmw:range_value")
      return rng.choice(rs).cast(dt)
    if x < 0.82:
      others = [p for p in self.params if p.dtype is not dt and not (pure and p in self.written)]
      if others: return self.cast_to(self.load(rng.choice(others), ranges), dt)
    return self.const(dt)

  def cast_to(self, v: UOp, dt: DType) -> UOp:
    """v cast to dt without undefined behaviour or rounding: floats are clamped before they become ints, ints that
    may be wide become floats only through int8."""
    sd = v.dtype
    self.g.features.add("rmw:cast")
    if sd.is_small_float and dt is not sd and not dt.is_bool:  # widen exactly first: fp8 has no MAX to clamp with
      v, sd = v.cast(dtypes.float32), dtypes.float32
    if dt.is_bool or sd is dt: return v if sd is dt else v.cast(dt)
    if sd.is_float and dt.is_int:
      lo, hi = (0.0, 100.0) if not dt.is_signed else (-100.0, 100.0)
      return (-((-v.maximum(UOp.const(sd, lo))).maximum(UOp.const(sd, -hi)))).cast(dt)
    if sd.is_int and dt.is_float and sd.itemsize > 2: return v.cast(dtypes.int8).cast(dt)
    return v.cast(dt)

  def expr(self, dt: DType, depth: int, pure: bool, ranges: list[UOp] | None = None) -> UOp:
    """A value of dtype dt over the open ranges; pure: it loads nothing the kernel writes."""
    rng = self.rng
    if depth <= 0 or rng.random() < 0.3: return self.leaf(dt, pure, ranges)
    kind = rng.choice(["bin", "bin", "bin", "where", "cast", "reduce"])
    if kind == "reduce" and not dt.is_bool and (red := self.reduce(dt, depth, pure, ranges)) is not None: return red
    if kind == "cast" and not dt.is_bool:
      sd = rng.choice([d for d in DTYPE_WEIGHTS if d is not dt and not d.is_bool])
      return self.cast_to(self.expr(sd, depth - 1, pure, ranges), dt)
    if kind == "where":
      cd = rng.choice([dt, dtypes.int32, dtypes.float32]) if not dt.is_bool else dtypes.int32
      a, b = self.expr(cd, depth - 1, pure, ranges), self.expr(cd, depth - 1, pure, ranges)
      cond = a.alu(rng.choice([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ]), b)
      return cond.where(self.expr(dt, depth - 1, pure, ranges), self.expr(dt, depth - 1, pure, ranges))
    a, b = self.expr(dt, depth - 1, pure, ranges), self.expr(dt, depth - 1, pure, ranges)
    return self.binary(dt, a, b)

  def binary(self, dt: DType, a: UOp, b: UOp) -> UOp:
    rng = self.rng
    if dt.is_bool: return a.alu(rng.choice([Ops.AND, Ops.OR, Ops.XOR, Ops.CMPNE]), b)
    if dt.is_float:
      op = rng.choice([Ops.ADD, Ops.SUB, Ops.MAX, Ops.MUL, Ops.NEG])
      if op is Ops.NEG: return -a
      if op is Ops.MUL and rng.random() < 0.5: b = UOp.const(dt, rng.choice([-1.0, 1.0, 2.0, 0.5]))
      return a.alu(op, b)
    op = rng.choice([Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR, Ops.NEG])
    if op is Ops.NEG: return -a
    if op in (Ops.IDIV, Ops.MOD): return a.alu(op, UOp.const(dt, rng.choice([2, 3, 5, 7, -3] if dt.is_signed else [2, 3, 5, 7, 16])))
    if op in (Ops.SHL, Ops.SHR): return a.alu(op, b & UOp.const(dt, dt.bits - 1))
    return a.alu(op, b)

  def reduce(self, dt: DType, depth: int, pure: bool, ranges: list[UOp] | None) -> UOp | None:
    """REDUCE(value, rr...) over new ranges (range form, before lower_reduce)."""
    rng = self.rng
    outer = self.rs if ranges is None else ranges
    left = MAX_ITERS // max(1, math.prod(int(r.src[0].arg) for r in outer))
    if len(outer) >= MAX_LOOP_DEPTH or left < 2: return None
    rr = [self.new_range(rng.randint(1, min(6, left)))]
    if rng.random() < 0.2 and len(outer) + 1 < MAX_LOOP_DEPTH and left // int(rr[0].src[0].arg) >= 2:
      rr.append(self.new_range(rng.randint(1, min(4, left // int(rr[0].src[0].arg)))))
    rr = [UOp.range(r.src[0], r.arg.axis, AxisType.REDUCE) for r in rr]
    op = rng.choice([Ops.ADD, Ops.ADD, Ops.MAX] + ([Ops.MUL] if dt.is_int else []))
    # loads inside see the storage of the loops outside: nothing in the reduction writes
    val = self.expr(dt, depth - 1, pure or dt.is_float, [*outer, *rr])
    self.g.features.add(f"rmw:reduce:{op.name}")
    return UOp(Ops.REDUCE, dt, (val, *rr), op)

  # ---- statements ----
  def update(self, name: str, acc: UOp, x: UOp) -> UOp:
    """acc combined with x by the update `name`."""
    dt, rng = acc.dtype, self.rng
    self.g.features.add(f"rmw:op:{name}")
    if name == "ADD": return acc + x
    if name == "SUB": return acc.alu(Ops.SUB, x)
    if name == "RSUB": return x.alu(Ops.SUB, acc)
    if name == "MUL": return acc * x
    if name == "MAX": return acc.maximum(x)
    if name == "MIN": return (acc < x).where(acc, x)
    if name == "WMAX": return (acc < x).where(x, acc)
    if name in ("AND", "OR", "XOR"): return acc.alu(Ops[name], x)
    if name == "NE": return acc.ne(x)
    if name in ("SHL", "SHR"): return acc.alu(Ops[name], x & UOp.const(dt, dt.bits - 1))
    if name in ("IDIV", "MOD"): return (acc + x).alu(Ops[name], UOp.const(dt, rng.choice([2, 3, 5, 7])))
    if name == "GATED": return (x < self.const(dt)).where(acc + x, acc)
    if name == "SIGN": return acc * (x < self.const(dt)).where(UOp.const(dt, -1.0), UOp.const(dt, 1.0))
    if name == "SELECT": return x.ne(self.const(dt)).where(acc, x) if not dt.is_bool else x.where(acc, x.ne(acc))
    if name == "CAST":
      other = rng.choice([d for d in dtypes.ints if d is not dt])
      return (acc.cast(other) + x.cast(other)).cast(dt)
    raise ValueError(name)

  def update_name(self, dt: DType) -> str:
    if dt.is_bool: return self.rng.choice(BOOL_UPDATES)
    return self.rng.choice(FLOAT_UPDATES if dt.is_float else INT_UPDATES)

  def statement(self, target: UOp) -> UOp:
    """One STORE into target (a written PARAM or a REG buffer): plain, an update of the element it writes, an update
    from another element (a prefix), or from another written buffer."""
    rng, g = self.rng, self.g
    dt, size = target.dtype, target.arg.size
    if dt.is_small_float: return self.small_statement(target)
    st = self.storage(target)
    idx, gate, ikind = self.index(size)
    if ikind == "shift" and gate is not None: g.features.add("rmw:gated_store")
    pure = dt.is_float
    x = self.expr(dt, rng.randint(0, 2), pure)
    kind = rng.choice(["same", "same", "same", "other", "other", "cross", "plain"])
    if kind == "same":
      acc = st.index(idx).load() if gate is None else st.index(idx).load(self.const(dt), gate)
      if len(self.rs) > len([r for r in self.rs if r in idx.toposort()]): g.features.add("rmw:accumulate")
      val = self.update(self.update_name(dt), acc, x)
    elif kind == "other":
      val = self.update(self.update_name(dt), self.load(target, storage=st), x)
      g.features.add("rmw:other_element")
      if self.rs: g.features.add("rmw:prefix")
    elif kind == "cross" and (ps := [p for p in self.written if p.dtype is dt and p is not target and p.op is Ops.PARAM]):
      val = self.update(self.update_name(dt), self.load(rng.choice(ps)), x)
      g.features.add("rmw:cross")
    else:
      val = x
    if gate is None and rng.random() < 0.2:
      gate = self.gate()
      g.features.add("rmw:gated_store")
    ix = st.index(idx)
    return ix.store(val) if gate is None else ix.store(val, gate)

  def small_statement(self, target: UOp) -> UOp:
    """One STORE into a small float target: a float32 value cast into it, or an update of the element it writes
    computed in float32 (the element widened, combined, cast back)."""
    rng, dt, f32 = self.rng, target.dtype, dtypes.float32
    self.g.features.add(f"rmw:small:{dt.name}")
    st = self.storage(target)
    idx, gate, _ = self.index(target.arg.size)
    x = self.expr(f32, rng.randint(0, 2), True)
    if rng.random() < 0.5:
      acc = (st.index(idx).load() if gate is None else st.index(idx).load(UOp.const(dt, 0.0), gate)).cast(f32)
      x = self.update(self.update_name(f32), acc, x)
    ix = st.index(idx)
    return ix.store(x.cast(dt)) if gate is None else ix.store(x.cast(dt), gate)

  def gate(self) -> UOp:
    rng = self.rng
    if self.rs and rng.random() < 0.6:
      r = rng.choice(self.rs)
      return (r < _c(rng.randint(0, int(r.src[0].arg)))) if rng.random() < 0.5 else (r % _c(2)).ne(_c(0))
    a = self.expr(dtypes.int32, 1, False)
    return a < self.const(dtypes.int32)

  def done(self, eff: UOp) -> UOp:
    """eff becomes the last effect on what the innermost block touched since its last statement and eff accesses (a
    value built and then dropped touched storage that eff never reaches: the chain of effects must not skip it)."""
    accessed = _accessed(eff)
    for p in self.stack[-1].touched & accessed: self.last[p] = eff
    self.stack[-1].touched = set()
    return eff

  def block(self, depth: int) -> list[UOp]:
    """The effects of one loop body at the current depth, in order."""
    rng = self.rng
    items: list[UOp] = []
    for _ in range(rng.randint(1, 3)):
      x = rng.random()
      if x < 0.25 and depth < MAX_LOOP_DEPTH and (nest := self.nest(depth)) is not None: items.append(nest)
      elif x < 0.45 and depth < MAX_LOOP_DEPTH and (reg := self.reg_accumulator(depth)) is not None: items.extend(reg)
      else:
        target = rng.choice(self.written)
        if items and rng.random() < 0.4:
          # a second store to a buffer this loop already stored to
          prev = [b for s in items if s.op is Ops.STORE and (b := storage_of(s.src[0].src[0])).op is Ops.PARAM]
          if prev: target = rng.choice(prev)
        items.append(self.done(self.statement(target)))
    if self.rs and len([s for s in items if s.op is Ops.STORE]) > len({storage_of(s.src[0].src[0]) for s in items if s.op is Ops.STORE}):
      self.g.features.add("rmw:two_stores")
    return items

  def nest(self, depth: int) -> UOp | None:
    """END(body, new ranges...): a loop nest inside the open loops."""
    rng = self.rng
    left = MAX_ITERS // self.iters()
    if left < 1: return None
    new: list[UOp] = []
    for _ in range(rng.choice([1, 1, 1, 2]) if depth + 2 <= MAX_LOOP_DEPTH else 1):
      b = rng.randint(1 if left < 2 or rng.random() < 0.05 else 2, min(8, left))
      if b > left: break
      new.append(self.new_range(b))
      left //= b
    if not new: return None
    if depth + len(new) >= 2: self.g.features.add("rmw:nested")
    self.stack.append(_Block(self.rs + new))
    items = self.block(depth + len(new))
    inner = self.stack.pop()
    body = items[0] if len(items) == 1 else UOp(Ops.GROUP, src=tuple(items))
    end = body.end(*new)
    self.stack[-1].touched |= inner.touched
    return self.done(end)

  def reg_accumulator(self, depth: int) -> list[UOp] | None:
    """A REG accumulator in lower_reduce's form (init in the open loops, update in new loops, read after them) with
    any update op and init value; the result goes to a global buffer."""
    rng = self.rng
    left = MAX_ITERS // self.iters()
    if left < 2: return None
    wide = [w for w in self.written if not w.dtype.is_small_float]  # an accumulator computes in its target's dtype
    if not wide: return None
    target = rng.choice(wide)
    dt = target.dtype
    acc = UOp.buffer(dt, 1, addrspace=AddrSpace.REG, id=self.g.next_reg())
    zero = _c(0)
    init_val = self.const(dt) if rng.random() < 0.6 else self.expr(dt, 1, True)
    init = (acc.after(*self.rs) if self.rs else acc).index(zero).store(init_val)
    rr = [self.new_range(rng.randint(2, min(8, left)))]
    self.stack.append(_Block(self.rs + rr))
    x = self.expr(dt, rng.randint(0, 2), dt.is_float)
    name = self.update_name(dt)
    running = acc.after(init, *rr).index(zero).load()
    upd_store = self.done(acc.index(zero).store(self.update(name, running, x)))
    extra: list[UOp] = []
    if rng.random() < 0.3:
      # another statement in the accumulating loop (it may read the globals the kernel writes)
      extra.append(self.done(self.statement(rng.choice(self.written))))
    inner = self.stack.pop()
    upd = (UOp(Ops.GROUP, src=(upd_store, *extra)) if extra else upd_store).end(*rr)
    self.stack[-1].touched |= inner.touched - {acc}
    self.done(upd)
    read = acc.after(upd).index(zero).load()
    st = self.storage(target)
    idx, gate, _ = self.index(target.arg.size)
    if rng.random() < 0.4:
      cur = st.index(idx).load() if gate is None else st.index(idx).load(self.const(dt), gate)
      val = self.update(self.update_name(dt), cur, read)
    else: val = read
    out = st.index(idx).store(val) if gate is None else st.index(idx).store(val, gate)
    self.g.features.add("rmw:reg")
    return [init, upd, self.done(out)]

  def body(self) -> UOp:
    entries = []
    for _ in range(self.rng.choice([1, 1, 2])):
      if self.rng.random() < 0.1: entries.extend(self.block(0))
      elif (n := self.nest(0)) is not None: entries.append(n)
    if not entries: entries = self.block(0)
    return UOp(Ops.SINK, src=tuple(entries))


class RmwGen:
  """Builds one KERNEL_GRAPH case of read-modify-write kernels from a Random."""

  def __init__(self, rng: random.Random, dtype: DType | None = None):
    self.rng = rng
    self.features: set[str] = {"kind:kernel", "kind:rmw"}
    self.inputs: dict[int, np.ndarray] = {}
    self.reg_next = 1000
    self.dtype = dtype
    # bounded variables in index and value expressions, bound at each kernel's CALL; chosen from a Random of their own
    self.side = side_random(rng)
    self.variables = new_variables(self.side, self.side.randint(1, 2)) if self.side.random() < 0.25 else []
    self.var_values = variable_values(self.side, self.variables)

  def next_reg(self) -> int:
    self.reg_next += 1
    return self.reg_next

  def values(self, dt: DType, n: int) -> np.ndarray:
    r = self.rng
    if dt.is_bool: return np.array([r.random() < 0.5 for _ in range(n)], dtype=np.bool_)
    if dt.is_float: return np.array([r.randint(-16, 16) / 4 for _ in range(n)], dtype=dt.np)
    prof = r.choice(["small", "small", "positive", "wide"])
    if prof == "wide":
      edges = [dt.min, dt.max, dt.min + 1, dt.max - 1, 0, 1]
      return np.array([r.choice(edges) if r.random() < 0.4 else r.randint(dt.min, dt.max) for _ in range(n)], dtype=dt.np)
    lo, hi = (1, 9) if prof == "positive" else (max(dt.min, -8), min(dt.max, 8))
    return np.array([r.randint(lo, hi) for _ in range(n)], dtype=dt.np)

  def buffers(self) -> list[UOp]:
    r = self.rng
    base = self.dtype or _pick(r, DTYPE_WEIGHTS)
    out = []
    for i in range(r.randint(2, 4)):
      dt = base if (i == 0 or r.random() < 0.7) else _pick(r, {**DTYPE_WEIGHTS, **SMALL_WEIGHTS})
      size = r.choice([1, 2, 3, 4, 4, 6, 8, 8, 12, 16, 16, 24, 32, 64])
      b = UOp.buffer(dt, size, id=i + 1)
      if r.random() < 0.8: self.inputs[b.arg.id] = self.values(dt, size)
      out.append(b)
    return out

  def graph(self) -> UOp:
    r = self.rng
    bufs = self.buffers()
    version = {b: b for b in bufs}          # buffer -> itself or AFTER(itself, the calls that touched it)
    touched_by: dict[UOp, list[UOp]] = {}
    written_any: list[UOp] = []
    nk = r.choice([1, 1, 1, 2, 2, 3])
    for k in range(nk):
      ws = r.sample(bufs, r.choice([1, 1, 2]) if len(bufs) > 1 else 1)
      if k > 0 and written_any and r.random() < 0.5:
        self.features.add("rmw:reads_earlier_kernel")
      reads = [b for b in bufs if b not in ws and (b in written_any or r.random() < 0.7)]
      args = list(dict.fromkeys([*ws, *reads]))
      r.shuffle(args)
      params = [UOp.param(i, b.dtype, b.arg.size) for i, b in enumerate(args)]
      written = [params[args.index(b)] for b in ws]
      body = KernelBuilder(self, params, written).body()
      call = bind_variables(UOp(Ops.CALL, src=(body, *[version[b] for b in args]), arg=f"rmw{k}"), self.var_values)
      for b in args:
        if b in written_any and b not in ws: self.features.add("rmw:reads_earlier_kernel")
        touched_by.setdefault(b, []).append(call)
        version[b] = b.after(*touched_by[b])
      written_any.extend(b for b in ws if b not in written_any)
    if nk > 1: self.features.add("rmw:multi_kernel")
    return UOp(Ops.SINK, src=tuple(version[b] for b in written_any))

  def opts(self, root: UOp) -> tuple | None:
    """The optimize choices: the heuristic's (None), none, or splits and unrolls over the ranges the kernels hold
    (fuzz.generate.opts), loops that may carry a value from one iteration to the next and reductions alike."""
    return kernel_opts(self.rng, root, self.features)

  def case(self) -> Case:
    root = self.graph()
    opts = self.opts(root)
    # drawn last, so every other choice stays the one it was
    images = self.rng.random() < IMAGE_SHARE["on"] / sum(IMAGE_SHARE.values())
    self.features.add(f"images:{'on' if images else 'off'}")
    return Case(root, self.inputs, {"callify": "inline", "realize": "minimal", "opts": opts, "images": images}, "kernel",
                features=frozenset(self.features))


def rmw_kernel_case(rng: random.Random, dtype: DType | None = None) -> Case:
  """A KERNEL_GRAPH case of read-modify-write kernels (kind "kernel"), free of undefined behaviour and float rounding.
  Graphs the screen rejects are drawn again (from the same Random); after ATTEMPTS the case is drawn in int32."""
  return first_screened(lambda i: RmwGen(rng, dtype if i < ATTEMPTS else dtypes.int32).case(), ATTEMPTS + 1)

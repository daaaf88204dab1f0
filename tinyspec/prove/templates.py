"""Concrete instances of a rule's pattern whose leaves are symbolic: what `tinyspec prove` runs a rule on.

An instance is a UOp tree built from the rule's UPat: each pattern node becomes a node of one of its ops and dtypes,
named patterns become one shared node, CONST patterns become constants (the pattern's value, or one drawn from a set
of representative values and values next to the bounds of the leaves built so far). A pattern that matches any node
becomes a leaf: a symbolic variable (a slot), a constant, or a small expression over slots (a product or sum with
constants, a quotient, a remainder, a comparison), since many rules look one level into their operands.

A slot is DETACH(RANGE(n) + lo) (cast to the dtype): its bounds are exactly [lo, hi] and no rule pattern looks inside
a DETACH, so the rule sees a node with those bounds and nothing else. The prover gives each slot a z3 variable
constrained to [lo, hi]; that is the precondition the rule's guard read through vmin and vmax.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tinyspec.dtype import DType, dtypes, truncate
from tinyspec.rewrite import UPat
from tinyspec.uop import AxisType, GroupOp, Ops, RangeArg, UOp

SLOT_AXIS = 1000  # RANGE axis ids of slots start here, clear of any kernel's own axes

# the ops a pattern of "any ALU op" is instantiated with: integer and bool meaning only
INT_OPS = (Ops.NEG, Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.IDIV, Ops.MOD, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ,
           Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.CAST)
CAST_DTYPES = (dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.index, dtypes.bool)
ARITY = {**{o: (1,) for o in GroupOp.Unary | GroupOp.Cast}, **{o: (2,) for o in GroupOp.Binary}, Ops.WHERE: (3,),
         Ops.LOAD: (1, 3), Ops.STORE: (2, 3), Ops.INDEX: (2,)}
BUFFER_SIZE = 16


class NoInstance(Exception):
  """The pattern cannot be built into a node (the reason says why)."""


@dataclass(frozen=True)
class Slot:
  """A symbolic leaf: a value of dtype in [lo, hi] (bools: lo = 0, hi = 1)."""
  k: int
  dtype: DType
  lo: int
  hi: int
  node: UOp


def boxes(dt: DType) -> list[tuple[int, int]]:
  """Bounds configurations of a slot: non-negative, negative, mixed, small, large, touching the dtype's ends."""
  lo, hi = (dtypes.int64.min, dtypes.int64.max) if dt is dtypes.index else (dt.min, dt.max)
  out = [(0, 0), (0, 1), (0, 3), (0, 7), (0, 15), (1, 16), (3, 9), (0, 255), (5, 5), (-1, -1), (-8, -1), (-7, 7), (-16, 5),
         (-3, 12), (-100, 100), (-255, 0), (0, hi), (lo, -1), (lo, hi), (hi - 15, hi), (lo, lo + 15), (-(2 ** 20), 2 ** 20),
         (1, 2 ** 24), (0, 2 ** 30), (-(2 ** 30), 0)]
  return [(a, b) for a, b in out if lo <= a <= b <= hi]


def representative_consts(dt: DType) -> list[int]:
  if dt.kind == "b": return [0, 1]
  lo, hi = (dtypes.int64.min, dtypes.int64.max) if dt is dtypes.index else (dt.min, dt.max)
  vals = [0, 1, -1, 2, -2, 3, -3, 4, 5, 7, 8, 9, 16, -8, 15, 17, 31, 32, 100, -100, 255, 256, 2 ** 20, 2 ** 30, hi, lo, hi - 1, lo + 1]
  return [v for v in vals if lo <= v <= hi]


def slot_node(k: int, dt: DType, lo: int, hi: int) -> UOp:
  """DETACH of a node of dtype dt whose bounds are exactly [lo, hi]."""
  if dt.kind == "b":
    inner = UOp.range(2, SLOT_AXIS + k).ne(0)
  else:
    r = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, hi - lo + 1),), RangeArg(SLOT_AXIS + k, AxisType.LOOP))
    inner = r if lo == 0 else r + UOp.const(dtypes.index, lo)
    if dt is not dtypes.index: inner = inner.cast(dt)
  return UOp(Ops.DETACH, dt, (inner,))


@dataclass
class Instance:
  root: UOp
  slots: list[Slot] = field(default_factory=list)


class Builder:
  """Builds one random instance of a pattern at a template dtype."""

  def __init__(self, rng: random.Random, dt: DType):
    self.rng, self.dt = rng, dt
    self.slots: list[Slot] = []
    self.bind: dict[str, UOp] = {}
    self.consts: list[int] = []

  # ---- choices ----
  def pick_dtype(self, allowed: frozenset | None, default: DType | None = None) -> DType:
    default = default or self.dt
    if allowed is None or default in allowed: return default
    if self.dt in allowed: return self.dt
    opts = sorted(allowed, key=lambda d: d.name)
    ints = [d for d in opts if d.kind in "iux"]
    return self.rng.choice(ints or opts)

  def const_value(self, dt: DType) -> Any:
    r = self.rng
    if dt.kind == "b": return r.random() < 0.5
    if self.consts and r.random() < 0.3:  # divisors and multiples of constants already used: where div/mod folds fire
      k = r.choice(self.consts)
      divs = [d for d in (2, 3, 4, 8) if k % d == 0]
      v = r.choice([k, -k, 2 * k, k + 1, k - 1, *([k // r.choice(divs)] if divs else []), *[d for d in divs]])
    elif self.slots and r.random() < 0.45:  # next to a leaf's bounds: where off-by-one guards go wrong
      s = r.choice([s for s in self.slots if s.dtype.kind != "b"] or self.slots)
      v = r.choice([s.lo, s.hi, s.hi + 1, s.lo - 1, -s.hi, -s.lo, s.hi - s.lo + 1, -s.hi - 1, s.hi // 2 + 1])
    elif r.random() < 0.15:
      v = r.randint(-1000, 1000)
    else:
      v = r.choice(representative_consts(dt))
    v = truncate(v, dt)
    if v: self.consts.append(v)
    return v

  # ---- leaves ----
  def new_slot(self, dt: DType) -> UOp:
    k = len(self.slots)
    lo, hi = (0, 1) if dt.kind == "b" else self.rng.choice(boxes(dt))
    node = slot_node(k, dt, lo, hi)
    self.slots.append(Slot(k, dt, lo, hi, node))
    return node

  def leaf(self, dt: DType) -> UOp:
    # now and then a slot built already: like terms, a divisor that divides its own multiple, one condition twice
    same = [s for s in self.slots if s.dtype is dt]
    if same and self.rng.random() < 0.15: return self.rng.choice(same).node
    r = self.rng.random()
    if dt.kind == "b":
      if r < 0.6: return self.new_slot(dt)
      if r < 0.75: return UOp.const(dt, self.rng.random() < 0.5)
      idt = self.dt if self.dt.kind != "b" else dtypes.int32
      return self.new_slot(idt).alu(Ops.CMPLT, self.leaf(idt))
    if dt.kind not in "iux": return self.new_slot(self.dt)
    c = lambda: UOp.const(dt, self.const_value(dt))
    if r < 0.45: return self.new_slot(dt)
    if r < 0.58: return c()
    if r < 0.68: return self.new_slot(dt) * c()
    if r < 0.78: return self.new_slot(dt) * c() + (self.new_slot(dt) * c() if self.rng.random() < 0.5 else self.new_slot(dt))
    if r < 0.84: return self.new_slot(dt) + c()
    if r < 0.92: return self.new_slot(dt).alu(Ops.IDIV, c())
    return self.new_slot(dt).alu(Ops.MOD, c())

  def storage_index(self, dt: DType) -> UOp:
    p = UOp.param(0, dt, BUFFER_SIZE)
    k = len(self.slots)
    idx = slot_node(k, dtypes.index, 0, BUFFER_SIZE - 1)
    self.slots.append(Slot(k, dtypes.index, 0, BUFFER_SIZE - 1, idx))
    return p.index(idx)

  # ---- patterns ----
  def build(self, pat: UPat, dt_hint: DType | None = None, parent: Ops | None = None, pos: int = 0) -> UOp:
    if pat.name is not None and pat.name in self.bind:
      u = self.bind[pat.name]
      if not self.fits(pat, u): raise NoInstance(f"pattern {pat.name!r} is used twice with incompatible filters")
      return u
    u = self._build(pat, dt_hint, parent, pos)
    if not self.fits(pat, u): raise NoInstance(f"built {u.op.name} {u.dtype.name} does not fit {pat!r}")
    if pat.name is not None: self.bind[pat.name] = u
    return u

  @staticmethod
  def fits(pat: UPat, u: UOp) -> bool:
    if pat.op is not None and u.op not in pat.op: return False
    if pat.dtype is not None and u.dtype not in pat.dtype: return False
    if pat.arg is not None and not (u.arg == pat.arg and type(u.arg) is type(pat.arg)): return False
    return pat.pred is None or bool(pat.pred(u))

  def _build(self, pat: UPat, dt_hint: DType | None, parent: Ops | None, pos: int) -> UOp:
    dt = self.pick_dtype(pat.dtype, dt_hint)
    if pat.op is None:
      if pat.src is not None: raise NoInstance(f"{pat!r} has sources but no op")
      if parent in (Ops.LOAD, Ops.STORE) and pos == 0: return self.storage_index(self.dt)
      return self.leaf(dt)
    ops = [o for o in pat.op if o in INT_OPS or o in (Ops.CONST, Ops.LOAD, Ops.STORE, Ops.INDEX)]
    if not ops: raise NoInstance(f"pattern ops {sorted(o.name for o in pat.op)} have no integer or bool meaning")
    op = self.rng.choice(sorted(ops, key=lambda o: o.value))
    if op is Ops.CONST:
      if pat.src: raise NoInstance("a CONST pattern with sources")
      if pat.arg is not None:
        dt = self.pick_dtype(pat.dtype, dtypes.bool if isinstance(pat.arg, bool) else dt)
        return UOp.const(dt, pat.arg)
      return UOp.const(dt, self.const_value(dt))
    return self.node(op, pat, dt)

  def src_dtypes(self, op: Ops, dt: DType, n: int) -> list[DType]:
    if op is Ops.WHERE: return [dtypes.bool, dt, dt]
    if op in GroupOp.Comparison:
      x = self.dt if self.rng.random() < 0.8 or self.dt.kind == "b" else dtypes.bool
      return [x, x]
    if op is Ops.CAST: return [self.rng.choice(CAST_DTYPES)]
    if op is Ops.LOAD: return [dt, dt, dtypes.bool][:n]
    if op is Ops.STORE: return [dt, dt, dtypes.bool][:n]
    if op in (Ops.AND, Ops.OR, Ops.XOR, Ops.MAX, Ops.ADD, Ops.MUL, Ops.SUB, Ops.NEG) and self.dt.kind != "b" and dt.kind == "b":
      return [dtypes.bool] * n
    return [dt if dt.kind != "b" or op in (Ops.AND, Ops.OR, Ops.XOR) else self.dt] * n

  def node(self, op: Ops, pat: UPat, dt: DType) -> UOp:
    psrc = pat.src
    if isinstance(psrc, tuple): arities = [len(psrc)] if not pat.allow_any_len else [n for n in ARITY.get(op, (len(psrc),)) if n >= len(psrc)]
    else: arities = list(ARITY.get(op, (2,)))
    if not arities: raise NoInstance(f"{op.name} cannot take {len(psrc or ())} sources")
    n = self.rng.choice(arities)
    if op is Ops.CAST: out_dt = self.pick_dtype(pat.dtype, self.dt if self.rng.random() < 0.7 else self.rng.choice(CAST_DTYPES))
    elif op in GroupOp.Comparison: out_dt = dtypes.bool
    elif op is Ops.STORE: out_dt = dtypes.void
    else: out_dt = dt
    sdts = self.src_dtypes(op, out_dt if op is not Ops.STORE else self.dt, n)
    srcs: list[UOp] = []
    for i in range(n):
      sp = psrc[i] if isinstance(psrc, tuple) and i < len(psrc) else (psrc if isinstance(psrc, UPat) else None)
      sd = sdts[i] if i < len(sdts) else out_dt
      if op is Ops.WHERE and i == 2 and srcs: sd = srcs[1].dtype
      elif op not in (Ops.WHERE, Ops.CAST, Ops.LOAD, Ops.STORE) and i > 0 and srcs: sd = srcs[0].dtype
      if sp is not None: srcs.append(self.build(sp, sd, op, i))
      else: srcs.append(self.storage_index(self.dt) if op in (Ops.LOAD, Ops.STORE) and i == 0 else self.leaf(sd))
    return self.make(op, out_dt, srcs)

  @staticmethod
  def make(op: Ops, out_dt: DType, srcs: list[UOp]) -> UOp:
    if op is Ops.CAST: return UOp(Ops.CAST, out_dt, tuple(srcs))
    if op is Ops.LOAD: return UOp(Ops.LOAD, srcs[0].dtype, tuple(srcs))
    if op is Ops.STORE: return UOp(Ops.STORE, dtypes.void, tuple(srcs))
    if op in GroupOp.Comparison: return UOp(op, dtypes.bool, tuple(srcs))
    if op is Ops.WHERE: return UOp(op, srcs[1].dtype, tuple(srcs))
    if op in GroupOp.ALU and len({s.dtype for s in srcs}) != 1: raise NoInstance(f"{op.name} sources of different dtypes")
    return UOp(op, srcs[0].dtype, tuple(srcs))


def instantiate(pat: UPat, dt: DType, rng: random.Random) -> Instance:
  b = Builder(rng, dt)
  root = b.build(pat)
  return Instance(root, b.slots)

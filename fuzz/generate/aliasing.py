"""Fuzz cases about aliasing: one buffer read and written by the same kernel, through views, in versions.

The tensor generator stores only into fresh buffers of the value's shape, so the lowering's decisions about storage that
is read and written at once are rarely put to the test. A case here starts from an input buffer `b` and writes it one
to three times, each write one form (feature alias:<form>):

  inplace      b[view] = g(b[view'])   the kernel reads the buffer it writes: at the element it writes (view' = view)
                                       or at another (view' a flip, permutation or shift of it), so the old contents
                                       must be read before they are overwritten
  target_view  the STORE's target is a chain of views of b (SHRINK, PAD, FLIP, PERMUTE, RESHAPE): a PAD target drops
                                       the padding's elements, a SHRINK target leaves the rest of b as it was
  two_versions a value reads b before and after a write in one expression
  old_read     a read of b as it was given, with no order to the writes (it must see the initial contents)
  call         a value call given b (as given or as written so far), its result stored back into b: an assign chain
               across calls; a call given b as given while a write to b has no order to it (a precompiled call must
               not read the overwritten storage)

Every write after the first targets the latest version (AFTER chain), so the writes are ordered; the reads of plain b
are not, which is the point. Values are small whole numbers in [-3, 3] of int32 or float32 and the ops ADD, SUB, MAX
and MUL by a small constant, so every backend computes them exactly and no screen has anything to refuse.
"""
from __future__ import annotations

import random

import numpy as np

from fuzz.generate.case import ALIAS_FORMS, Case
from fuzz.generate.draws import lowering_options
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp

LO, HI = -3, 3
DTYPES = (dtypes.int32, dtypes.float32)
MAX_WRITES = 3


class AliasGen:
  """One aliasing case, every choice drawn from rng and weighted by the alias:<form> and dtype:<name> features."""

  def __init__(self, rng: random.Random, weights: dict[str, float]):
    self.rng, self.w = rng, weights
    self.features: set[str] = {"kind:alias"}
    self.inputs: dict[int, np.ndarray] = {}
    self.next_id = 1
    self.dt: DType = rng.choices(DTYPES, [weights.get(f"dtype:{d.name}", 1.0) for d in DTYPES])[0]
    self.features.add(f"dtype:{self.dt.name}")

  # ---- leaves ----
  def buffer(self, shape: tuple[int, ...]) -> UOp:
    """A fresh input buffer of small whole numbers, viewed in shape."""
    n = int(np.prod(shape))
    b = UOp.buffer(self.dt, n, id=self.next_id)
    self.next_id += 1
    self.inputs[b.arg.id] = np.array([self.rng.randint(LO, HI) for _ in range(n)], self.dt.np)
    return b

  def const(self, shape: tuple[int, ...]) -> UOp:
    c = UOp.const(self.dt, float(self.rng.randint(LO, HI)) if self.dt.is_float else self.rng.randint(LO, HI))
    return c if shape == () else c.expand(shape)

  # ---- views ----
  def target_chain(self, shape: tuple[int, ...]) -> list[tuple[Ops, object]]:
    """One to three view ops a STORE may write through (no EXPAND: two elements of the view on one of storage)."""
    out, cur = [], shape
    for _ in range(self.rng.randint(1, 3)):
      op = self.rng.choice([Ops.SHRINK, Ops.PAD, Ops.PAD, Ops.FLIP, Ops.PERMUTE, Ops.RESHAPE])
      if (step := self.view_step(op, cur)) is None: continue
      out.append(step)
      cur = apply_view(UOp.const(self.dt, 0).expand(cur), [step]).shape
    return out

  def view_step(self, op: Ops, shape: tuple[int, ...]) -> tuple[Ops, object] | None:
    r = self.rng
    if op is Ops.SHRINK:
      arg = []
      for d in shape:
        s = r.randint(1, d)
        arg.append((r.randint(0, d - s), s))
      return (op, tuple(arg)) if tuple(arg) != tuple((0, d) for d in shape) else None
    if op is Ops.PAD:
      arg = tuple((o, d + o + r.randint(0, 1)) for d in shape for o in [r.randint(0, 1)])
      return (op, arg) if any(s != d for (_, s), d in zip(arg, shape)) else None
    if op is Ops.FLIP: return (op, tuple(r.random() < 0.6 for _ in shape)) if shape else None
    if op is Ops.PERMUTE:
      if len(shape) < 2: return None
      perm = list(range(len(shape)))
      while perm == sorted(perm): r.shuffle(perm)
      return (op, tuple(perm))
    if op is Ops.RESHAPE:
      n = int(np.prod(shape))
      divs = [d for d in range(2, n) if n % d == 0]
      new = (d, n // d) if divs and (d := r.choice(divs)) else (n,)
      return (op, new) if new != shape else None
    raise ValueError(op)

  def other_view(self, shape: tuple[int, ...]) -> list[tuple[Ops, object]]:
    """A view of the same shape that maps elements elsewhere: a flip, a permutation of equal axes, a shift by one
    (SHRINK then PAD), or nothing (the element itself)."""
    r, kinds = self.rng, ["same", "flip", "shift"]
    if len(shape) >= 2 and len(set(shape)) < len(shape): kinds.append("permute")
    kind = r.choice(kinds)
    if kind == "flip" and shape: return [(Ops.FLIP, tuple(r.random() < 0.7 for _ in shape))]
    if kind == "shift" and shape and max(shape) > 1:
      ax = r.choice([i for i, d in enumerate(shape) if d > 1])
      lo = r.random() < 0.5
      shrink = tuple((1 if lo and i == ax else 0, d - 1 if i == ax else d) for i, d in enumerate(shape))
      pad = tuple((0 if lo else 1, d) if i == ax else (0, d) for i, d in enumerate(shape))
      return [(Ops.SHRINK, shrink), (Ops.PAD, pad)]
    if kind == "permute":
      i, j = next((i, j) for i in range(len(shape)) for j in range(i + 1, len(shape)) if shape[i] == shape[j])
      perm = list(range(len(shape)))
      perm[i], perm[j] = j, i
      return [(Ops.PERMUTE, tuple(perm))]
    return []

  # ---- values ----
  def combine(self, reads: list[UOp]) -> UOp:
    """A small exact expression of the reads (all of one shape)."""
    v = reads[0]
    for x in reads[1:]: v = v.alu(self.rng.choice([Ops.ADD, Ops.SUB, Ops.MAX]), x)
    if self.rng.random() < 0.5: v = v.alu(self.rng.choice([Ops.ADD, Ops.MUL, Ops.MAX]), self.const(v.shape))
    return v

  def form(self) -> str:
    f = self.rng.choices(ALIAS_FORMS, [self.w.get(f"alias:{f}", 1.0) for f in ALIAS_FORMS])[0]
    self.features.add(f"alias:{f}")
    return f

  # ---- the case ----
  def graph(self) -> UOp:
    r = self.rng
    shape = tuple(r.randint(2, 4) for _ in range(r.randint(1, 3)))
    b = self.buffer(shape)
    base = b if len(shape) == 1 else b.reshape(shape)  # b as given, in shape
    cur: UOp = b        # the latest version of b's storage
    entries: list[UOp] = []
    for _ in range(r.randint(1, MAX_WRITES)):
      form = self.form()
      now = cur if len(shape) == 1 else cur.reshape(shape)
      if form == "old_read":
        entries.append(self.combine([apply_view(base, self.other_view(shape))]))
        continue
      if form == "call":
        cur = self.call_write(cur, now, base, raced=r.random() < 0.5, entries=entries)
        continue
      chain = self.target_chain(shape) if form == "target_view" or r.random() < 0.3 else []
      target = apply_view(now, chain)
      src = base if form == "two_versions" or r.random() < 0.3 else now
      reads = [apply_view(apply_view(src, self.other_view(shape) if form == "inplace" else []), chain)]
      if form == "two_versions": reads.append(apply_view(apply_view(now, self.other_view(shape)), chain))
      cur = UOp(Ops.AFTER, self.dt, (cur, target.store(self.combine(reads))))
    final = cur if len(shape) == 1 else cur.reshape(shape)
    entries.insert(0, apply_view(final, self.other_view(shape)) if r.random() < 0.5 else final)
    if r.random() < 0.3: entries.append(self.combine([final, base]))
    return UOp(Ops.SINK, src=tuple(entries))

  def call_write(self, cur: UOp, now: UOp, base: UOp, raced: bool, entries: list[UOp]) -> UOp:
    """b = f(b) through a value call. raced: the call is given b as given and its result is a SINK entry of its own,
    while a write to b follows with no order to the call (the callify race); else it is given the latest version
    and its result is stored back into b (an assign chain across calls)."""
    shape = base.shape
    p = UOp.param(0, self.dt, base.size)
    body = UOp(Ops.TUPLE, src=(self.combine([apply_view(p if len(shape) == 1 else p.reshape(shape), self.other_view(shape))]),))
    given = base if raced else now
    out = UOp(Ops.CALL, src=(body, given), arg=f"a{self.next_id}").gettuple(0)
    self.next_id += 1
    if raced:
      self.features.add("alias:call_raced")
      entries.append(out)
      return UOp(Ops.AFTER, self.dt, (cur, now.store(self.combine([now]))))
    return UOp(Ops.AFTER, self.dt, (cur, now.store(out)))

  def case(self) -> Case:
    root = self.graph()
    return Case(root, self.inputs, lowering_options(self.rng, self.w, self.features, root), "tensor", features=frozenset(self.features))


def apply_view(x: UOp, chain: list[tuple[Ops, object]]) -> UOp:
  for op, arg in chain: x = UOp(op, x.dtype, (x,), arg)
  return x


def aliasing_case(rng: random.Random, weights: dict[str, float]) -> Case:
  """An aliasing case (see the module docstring)."""
  return AliasGen(rng, weights).case()

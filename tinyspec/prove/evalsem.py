"""z3 terms with exactly the reference evaluator's meaning, for the rule prover and the symbolic fuzzer.

The meaning of every op is the registry's (tinyspec.ops.smt), with tinyspec's values at the points C leaves
undefined (a Translator with `defined=True`), so that a counterexample z3 finds is one the evaluator confirms. This
module adds a memory model: loads read a z3 array per storage node; a STORE's meaning is its (gate, storage, index,
value) effect.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from tinyspec.dtype import DType
from tinyspec.ops.smt import undefined
from tinyspec.smt import Translator
from tinyspec.uop import GroupOp, Ops, UOp, storage_of

_MEMORY = frozenset({Ops.LOAD, Ops.INDEX})


@dataclass(frozen=True)
class Effect:
  """The meaning of a STORE: where the gate holds, value goes to element idx of storage."""
  gate: z3.BoolRef
  storage: UOp
  idx: z3.ArithRef
  value: z3.ExprRef


class EvalTranslator(Translator):
  """A Translator whose division, modulo and shifts are the evaluator's, with a memory model for LOAD."""

  def __init__(self):
    super().__init__(interval_hints=True, defined=True)
    self.arrays: dict[UOp, z3.ArrayRef] = {}

  def _descends(self, u: UOp) -> bool:
    if u.op in _MEMORY: return all(isinstance(s, UOp) for s in u.src)
    return super()._descends(u)

  def _translate(self, u: UOp) -> z3.ExprRef:
    if u.op is Ops.INDEX: return self._index(u)
    if u.op is Ops.LOAD: return self._load(u)
    return super()._translate(u)

  def array(self, storage: UOp) -> z3.ArrayRef:
    if storage not in self.arrays:
      self._n += 1
      srt = self.sort(storage.dtype)
      self.arrays[storage] = z3.Array(f"mem{self._n}", z3.IntSort(), z3.IntSort() if srt is None else srt)
    return self.arrays[storage]

  def _index(self, u: UOp) -> z3.ExprRef:
    if len(u.src) != 2: return self._opaque(u)
    return self.as_int(self.memo[u.src[1]], u.src[1].dtype)

  def _load(self, u: UOp) -> z3.ExprRef:
    ix = u.src[0] if u.src else None
    if ix is None or ix.op is not Ops.INDEX or len(ix.src) != 2 or self.sort(u.dtype) is None or u.dtype.kind == "f": return self._opaque(u)
    val = z3.Select(self.array(storage_of(ix.src[0])), self.memo[ix])
    if len(u.src) == 3: return z3.If(self.memo[u.src[2]], val, self.memo[u.src[1]])
    return val

  def effect(self, st: UOp) -> Effect | None:
    """The effect of a STORE(INDEX(storage, i), value[, gate]); None for other forms."""
    if st.op is not Ops.STORE or len(st.src) not in (2, 3) or st.src[0].op is not Ops.INDEX or len(st.src[0].src) != 2: return None
    gate = self(st.src[2]) if len(st.src) == 3 else z3.BoolVal(True)
    return Effect(gate, storage_of(st.src[0].src[0]), self(st.src[0]), self(st.src[1]))


def defined(t: EvalTranslator, root: UOp) -> z3.BoolRef:
  """Where root's value is defined in C: no division by zero and no signed MIN / -1 on the path its value takes
  (a WHERE only needs the branch it selects). Shift counts are taken modulo the width as the renderers do."""
  ok: dict[UOp, z3.BoolRef] = {}
  for u in root.toposort():
    srcs = [ok[s] for s in u.src if s in ok]
    if u.op is Ops.WHERE and len(u.src) == 3 and z3.is_bool(t(u.src[0])):
      ok[u] = z3.And(ok[u.src[0]], z3.If(t(u.src[0]), ok[u.src[1]], ok[u.src[2]]))
      continue
    if u.op is Ops.LOAD and len(u.src) == 3 and z3.is_bool(t(u.src[2])):
      ok[u] = z3.And(ok[u.src[2]], ok[u.src[1]], z3.Implies(t(u.src[2]), ok[u.src[0]]))
      continue
    conds = list(srcs)
    if u.op in (Ops.IDIV, Ops.MOD) and isinstance(u.dtype, DType) and (undef := undefined(u.op, u.dtype, [t(u.src[0]), t(u.src[1])])) is not None:
      conds.append(z3.Not(undef))
    ok[u] = z3.And(*conds) if conds else z3.BoolVal(True)
  return ok[root]


def differ(t: EvalTranslator, a: UOp, b: UOp) -> z3.BoolRef | None:
  """A z3 formula that holds exactly where a and b mean different things; None when they cannot be compared."""
  if a.op is Ops.STORE or b.op is Ops.STORE:
    ea, eb = t.effect(a), t.effect(b)
    if ea is None or eb is None: return None
    if ea.storage is not eb.storage: return z3.Or(ea.gate, eb.gate)
    same = z3.And(ea.gate == eb.gate, z3.Implies(ea.gate, z3.And(ea.idx == eb.idx, ea.value == eb.value)))
    return z3.Not(same)
  if a.dtype is not b.dtype: return z3.BoolVal(True)  # a rule must keep the dtype of the node it replaces
  if not isinstance(a.dtype, DType) or a.dtype.kind not in "iuxb": return None
  return t(a) != t(b)


def model_int(m: z3.ModelRef, e: z3.ExprRef, dt: DType) -> int | bool | None:
  """The value of e in the model m, as a Python int (signed or unsigned by dt) or bool."""
  v = m.eval(e, model_completion=True)
  if z3.is_true(v): return True
  if z3.is_false(v): return False
  if z3.is_bv_value(v):
    x = v.as_long()
    return x - (1 << dt.bits) if dt.kind == "i" and x >= (1 << (dt.bits - 1)) else x
  if z3.is_int_value(v): return v.as_long()
  return None


VALUE_OPS = GroupOp.ALU | {Ops.CAST, Ops.BITCAST}

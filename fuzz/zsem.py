"""z3 terms with exactly the reference evaluator's meaning, for the rule prover and the symbolic fuzzer.

tinyspec.smt.Translator leaves the points C leaves undefined (division by zero, shift counts outside the width) as
fresh variables, which is right for bounds proofs. A rewrite rule must keep the meaning tinyspec.semantics gives
those points (a IDIV 0 == 0, a MOD 0 == a, shift counts taken modulo the width), so that a counterexample z3 finds
is one the evaluator confirms. Loads read a z3 array per storage node; a STORE's meaning is its (gate, storage,
index, value) effect.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from tinyspec.dtype import DType, dtypes
from tinyspec.smt import Translator, c_idiv_int, c_mod_int
from tinyspec.uop import GroupOp, Ops, UOp

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
    super().__init__(interval_hints=True)
    self.arrays: dict[UOp, z3.ArrayRef] = {}

  def _descends(self, u: UOp) -> bool:
    if u.op in _MEMORY: return all(isinstance(s, UOp) for s in u.src)
    return super()._descends(u)

  def _translate(self, u: UOp) -> z3.ExprRef:
    dt = u.dtype
    if isinstance(dt, DType) and dt.kind in "iux" and u.op in (Ops.IDIV, Ops.MOD): return self._eval_divmod(u)
    if isinstance(dt, DType) and dt.kind in "iu" and u.op in (Ops.SHL, Ops.SHR): return self._eval_shift(u)
    if dt is dtypes.index and u.op in (Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR): return self._index_bitwise(u)
    if u.op is Ops.INDEX: return self._index(u)
    if u.op is Ops.LOAD: return self._load(u)
    return super()._translate(u)

  def _eval_divmod(self, u: UOp) -> z3.ExprRef:
    a, b = (self.memo[s] for s in u.src)
    dt, zero = u.dtype, self.const(u.dtype, 0)
    if z3.is_bv(a):
      signed = dt.kind == "i"
      q = (a / b if signed else z3.UDiv(a, b)) if u.op is Ops.IDIV else (z3.SRem(a, b) if signed else z3.URem(a, b))
    else:
      q = c_idiv_int(a, b) if u.op is Ops.IDIV else c_mod_int(a, b)
    return z3.If(b == zero, zero if u.op is Ops.IDIV else a, q)

  def _index_bitwise(self, u: UOp) -> z3.ExprRef:
    # index is unbounded: 128 bits hold every value an instance of a rule reaches, as two's complement
    a, b = (z3.Int2BV(self.memo[s], 128) for s in u.src)
    if u.op in (Ops.SHL, Ops.SHR):  # the evaluator takes the count modulo 64, index being stored as int64
      cnt = b & z3.BitVecVal(63, 128)
      return z3.BV2Int(a << cnt if u.op is Ops.SHL else a >> cnt, is_signed=True)
    return z3.BV2Int({Ops.AND: a & b, Ops.OR: a | b, Ops.XOR: a ^ b}[u.op], is_signed=True)

  def _eval_shift(self, u: UOp) -> z3.ExprRef:
    a, b = (self.memo[s] for s in u.src)
    cnt = b & z3.BitVecVal(u.dtype.bits - 1, u.dtype.bits)
    if u.op is Ops.SHL: return a << cnt
    return a >> cnt if u.dtype.kind == "i" else z3.LShR(a, cnt)

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
    val = z3.Select(self.array(_storage(ix.src[0])), self.memo[ix])
    if len(u.src) == 3: return z3.If(self.memo[u.src[2]], val, self.memo[u.src[1]])
    return val

  def effect(self, st: UOp) -> Effect | None:
    """The effect of a STORE(INDEX(storage, i), value[, gate]); None for other forms."""
    if st.op is not Ops.STORE or len(st.src) not in (2, 3) or st.src[0].op is not Ops.INDEX or len(st.src[0].src) != 2: return None
    gate = self(st.src[2]) if len(st.src) == 3 else z3.BoolVal(True)
    return Effect(gate, _storage(st.src[0].src[0]), self(st.src[0]), self(st.src[1]))


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
    if u.op in (Ops.IDIV, Ops.MOD) and isinstance(u.dtype, DType) and u.dtype.kind in "iux":
      a, b = t(u.src[0]), t(u.src[1])
      conds.append(b != t.const(u.dtype, 0))
      if u.dtype.kind == "i": conds.append(z3.Not(z3.And(a == t.const(u.dtype, u.dtype.min), b == t.const(u.dtype, -1))))
    ok[u] = z3.And(*conds) if conds else z3.BoolVal(True)
  return ok[root]


def _storage(u: UOp) -> UOp:
  while u.op is Ops.AFTER: u = u.src[0]
  return u


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


INT_LIKE = frozenset({*dtypes.ints, dtypes.index})
VALUE_OPS = GroupOp.ALU | {Ops.CAST, Ops.BITCAST}


# ---- bit-vector form for bounded index expressions ----
# The symbolic fuzzer's expressions are over leaves with small ranges. Where interval arithmetic (computed here,
# independently of tinyspec.bounds, which the fuzzer checks) shows every node of both expressions fits in w bits,
# the same question asked over w-bit vectors has the same answer: nothing wraps, and bvsdiv / bvsrem truncate as C.
# Bit-blasting then often decides in milliseconds what nonlinear integer reasoning times out on.
_BV_INT_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.MAX, Ops.IDIV, Ops.MOD, Ops.WHERE, Ops.DETACH, Ops.CONST})
_BV_BOOL_OPS = frozenset({Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR, Ops.WHERE, Ops.CONST, Ops.DETACH})


def _tdiv(a: int, b: int) -> int:
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def _interval(u: UOp, s: list) -> tuple[int, int] | None:
  """Exact-integer interval of index node u from its sources' intervals (None for bool nodes)."""
  op = u.op
  if op is Ops.CONST: return (int(u.arg), int(u.arg))
  if op is Ops.DETACH: return s[0]
  if op is Ops.ADD: return (s[0][0] + s[1][0], s[0][1] + s[1][1])
  if op is Ops.SUB: return (s[0][0] - s[1][1], s[0][1] - s[1][0])
  if op is Ops.NEG: return (-s[0][1], -s[0][0])
  if op is Ops.MUL:
    v = [a * b for a in s[0] for b in s[1]]
    return (min(v), max(v))
  if op is Ops.MAX: return (max(s[0][0], s[1][0]), max(s[0][1], s[1][1]))
  if op is Ops.WHERE: return (min(s[1][0], s[2][0]), max(s[1][1], s[2][1]))
  (alo, ahi), c = s[0], u.src[1].arg
  if op is Ops.IDIV: return tuple(sorted((_tdiv(alo, c), _tdiv(ahi, c))))  # type: ignore[return-value]  # monotone in a
  m = min(abs(c) - 1, max(abs(alo), abs(ahi)))  # MOD: |a % c| < |c| and <= |a|
  return (-m, m)


def bv_difference(roots: tuple[UOp, UOp], leaves: dict[UOp, tuple[str, int, int]]) -> tuple[z3.BoolRef, dict[UOp, z3.BitVecRef], int] | None:
  """(constraints and a != b, the leaf variables, the width) over bit vectors for index expressions a, b whose only
  free nodes are `leaves` (node -> (name, lo, hi)) and whose divisors are nonzero constants; None when they are not
  of that form (the caller asks the integer form then)."""
  iv: dict[UOp, tuple[int, int] | None] = {k: (lo, hi) for k, (_, lo, hi) in leaves.items()}
  order: list[UOp] = []
  for r in roots:
    for u in r.toposort(gate=lambda x: x not in leaves):
      if u in iv: continue
      srcs = [x.dtype for x in u.src]
      if u.dtype is dtypes.index:
        vals = srcs[1:] if u.op is Ops.WHERE else srcs
        if u.op not in _BV_INT_OPS or vals != [dtypes.index] * len(vals): return None
        if u.op in (Ops.IDIV, Ops.MOD) and (u.src[1].op is not Ops.CONST or u.src[1].arg == 0): return None
      elif u.dtype is dtypes.bool:
        if u.op not in _BV_BOOL_OPS: return None
        if u.op in GroupOp.Comparison and srcs != [dtypes.index, dtypes.index]: return None
        if u.op in (Ops.AND, Ops.OR, Ops.XOR) and srcs != [dtypes.bool, dtypes.bool]: return None
        if u.op is Ops.WHERE and srcs[1:] != [dtypes.bool, dtypes.bool]: return None
      else: return None
      if u.op is Ops.WHERE and srcs[0] is not dtypes.bool: return None
      if any(s not in iv for s in u.src): return None
      iv[u] = _interval(u, [iv[s] for s in u.src]) if u.dtype is dtypes.index else None
      order.append(u)
  w = max(max(abs(lo), abs(hi)) for lo, hi in (x for x in iv.values() if x is not None)).bit_length() + 2
  memo: dict[UOp, z3.ExprRef] = {}
  cons = []
  for k, (name, lo, hi) in leaves.items():
    memo[k] = v = z3.BitVec(name, w)
    cons += [v >= lo, v <= hi]
  for u in order:
    a = [memo[s] for s in u.src]
    op = u.op
    if op is Ops.CONST: memo[u] = z3.BoolVal(bool(u.arg)) if u.dtype is dtypes.bool else z3.BitVecVal(int(u.arg), w)
    elif op is Ops.DETACH: memo[u] = a[0]
    elif op is Ops.ADD: memo[u] = a[0] + a[1]
    elif op is Ops.SUB: memo[u] = a[0] - a[1]
    elif op is Ops.MUL: memo[u] = a[0] * a[1]
    elif op is Ops.NEG: memo[u] = -a[0]
    elif op is Ops.MAX: memo[u] = z3.If(a[0] < a[1], a[1], a[0])
    elif op is Ops.IDIV: memo[u] = a[0] / a[1]  # bvsdiv: truncates toward zero
    elif op is Ops.MOD: memo[u] = z3.SRem(a[0], a[1])  # the sign of the dividend, as C
    elif op is Ops.WHERE: memo[u] = z3.If(a[0], a[1], a[2])
    elif op is Ops.CMPLT: memo[u] = a[0] < a[1]
    elif op is Ops.CMPNE: memo[u] = a[0] != a[1]
    elif op is Ops.CMPEQ: memo[u] = a[0] == a[1]
    elif op is Ops.AND: memo[u] = z3.And(a[0], a[1])
    elif op is Ops.OR: memo[u] = z3.Or(a[0], a[1])
    else: memo[u] = z3.Xor(a[0], a[1])
  return z3.And(*cons, memo[roots[0]] != memo[roots[1]]), {k: memo[k] for k in leaves}, w

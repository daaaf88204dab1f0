"""UOp integer expressions as z3 terms, shared by the KERNEL bounds proofs and the rewrite-rule prover.

The meaning of every op is the registry's (tinyspec.ops.smt): `index` is an unbounded z3 Int, a fixed-width integer
dtype a BitVec of its width (wrap-around exact), bool a z3 Bool; bitwise ops and shifts on `index` are exact (their
width comes from the operands' interval bounds). This module walks graphs: RANGE and SPECIAL become bounded
variables, and a node with no integer meaning (LOAD, floats, ...) a fresh variable bounded by its interval bounds
(u.vmin, u.vmax), which are sound.

At the points C leaves undefined and tinyspec defines by choice (division by zero, shift counts outside the width:
`tinyspec.ops.smt.undefined`), a Translator built with `defined=False` (bounds proofs) gives a fresh unconstrained
variable, so no proof depends on that choice; `defined=True` (the rule prover) keeps tinyspec's value, so that a
counterexample z3 finds is one the evaluator confirms.
"""
from __future__ import annotations

from typing import Any

import z3

from tinyspec.dtype import DType, dtypes
from tinyspec.ops import smt as zsem
from tinyspec.uop import Ops, UOp

TIMEOUT_MS = 5000  # per bounds proof; an unknown result is reported as a timeout


def is_int_sort_dtype(dt: Any) -> bool:
  return isinstance(dt, DType) and dt.kind in "iux"


class Translator:
  """A memoized translation of UOps to z3 terms. The same node always gives the same term (and the same variable
  for RANGE, SPECIAL and every opaque node), so terms of two expressions over shared nodes can be compared.

  `constraints` collects what the variables are known to satisfy: 0 <= r < bound for RANGE and SPECIAL, the bounds of a
  DEFINE_VAR, and the
  interval bounds of opaque nodes. A rule prover builds terms for both sides of a rule and asks z3 whether they can
  differ under `constraints`."""

  def __init__(self, interval_hints: bool = True, defined: bool = False, prefix: str = ""):
    self.defined = defined
    self.prefix = prefix  # of every variable name: two translators with different prefixes share no variable
    self.memo: dict[UOp, z3.ExprRef] = {}
    self.constraints: list[z3.BoolRef] = []
    self.vars: dict[UOp, z3.ExprRef] = {}  # the variable of every RANGE, SPECIAL and opaque node
    self.interval_hints = interval_hints
    self._n = 0

  # ---- sorts and conversions (the registry's) ----
  @staticmethod
  def sort(dt: DType) -> z3.SortRef | None:
    if not isinstance(dt, DType): return None
    return z3.RealSort() if dt.kind == "f" else zsem.sort(dt)

  def const(self, dt: DType, v: Any) -> z3.ExprRef:
    return self.fresh(dt, "f") if dt.kind == "f" else zsem.const(dt, v)

  def as_int(self, e: z3.ExprRef, dt: DType) -> z3.ArithRef:
    """The mathematical integer value of a term of dtype dt (BitVecs read signed or unsigned by dt)."""
    return zsem.as_int(dt, e)

  def lt(self, a: z3.ExprRef, b: z3.ExprRef, dt: DType) -> z3.BoolRef:
    return zsem.lt(dt, a, b)

  def fresh(self, dt: DType, hint: str = "v", u: UOp | None = None) -> z3.ExprRef:
    """A new variable of dt's sort; bounded by u's interval bounds when u is given."""
    self._n += 1
    name = f"{self.prefix}{hint}{self._n}"
    srt = self.sort(dt)
    if srt is None: srt = z3.IntSort()
    v = z3.Const(name, srt)
    if u is not None and self.interval_hints and is_int_sort_dtype(dt):
      lo, hi = u.vmin, u.vmax
      if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool):
        iv = self.as_int(v, dt)
        self.constraints += [iv >= lo, iv <= hi]
    return v

  # ---- translation ----
  def __call__(self, u: UOp) -> z3.ExprRef:
    """The z3 term of u. Iterative: deep expressions do not recurse."""
    if u in self.memo: return self.memo[u]
    stack: list[tuple[UOp, bool]] = [(u, False)]
    while stack:
      x, ready = stack.pop()
      if x in self.memo: continue
      if not ready and self._descends(x):
        stack.append((x, True))
        stack.extend((s, False) for s in x.src if isinstance(s, UOp) and s not in self.memo)
        continue
      self.memo[x] = self._translate(x)
    return self.memo[u]

  def _descends(self, u: UOp) -> bool:
    return u.op in _EXACT and isinstance(u.dtype, DType) and all(isinstance(s, UOp) for s in u.src)

  def _translate(self, u: UOp) -> z3.ExprRef:
    dt = u.dtype
    if not isinstance(dt, DType) or dt.kind in "vf" or u.op not in _EXACT: return self._opaque(u)
    try: ret = _EXACT[u.op](self, u, [self.memo[s] for s in u.src])
    except (z3.Z3Exception, KeyError, IndexError, TypeError, ValueError, AttributeError): ret = None
    if ret is None or ret.sort() != self.sort(dt): return self._opaque(u)
    return ret

  def _opaque(self, u: UOp) -> z3.ExprRef:
    if u not in self.vars:
      dt = u.dtype if isinstance(u.dtype, DType) else dtypes.index
      self.vars[u] = self.fresh(dt, "v", u if isinstance(u.dtype, DType) else None)
    return self.vars[u]

  def _range(self, u: UOp, srcs: list) -> z3.ExprRef:
    (bound,), dt = srcs, u.dtype
    name = f"r{u.arg.axis}" if u.op is Ops.RANGE and hasattr(u.arg, "axis") else str(u.arg)
    self._n += 1
    v = z3.Const(f"{self.prefix}{name}_{self._n}", self.sort(dt))
    self.vars[u] = v
    lo = self.const(dt, 0)
    self.constraints += [z3.Not(self.lt(v, lo, dt)), self.lt(v, bound, dt)]
    return v

  def _var(self, u: UOp, srcs: list) -> z3.ExprRef:
    # named by the variable alone, never the prefix: every thread (and every translator) of a kernel sees one value of it
    dt, a = u.dtype, u.arg
    v = z3.Const(f"var_{a.name}", self.sort(dt))
    self.vars[u] = v
    self.constraints += [z3.Not(self.lt(v, self.const(dt, a.min), dt)), z3.Not(self.lt(self.const(dt, a.max), v, dt))]
    return v

  def _alu(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    dt = u.src[-1].dtype  # the operands' dtype (a comparison's own is bool; WHERE's values come last)
    width = zsem.index_width(*((s.vmin, s.vmax) for s in u.src[-2:])) + self._shl_extra(u) if dt is dtypes.index else zsem.INDEX_WIDTH
    ret = _natural_divmod(u, srcs) if dt is dtypes.index else None
    if ret is None: ret = zsem.term(u.op, dt, srcs, width)
    if ret is None or self.defined: return ret
    undef = zsem.undefined(u.op, dt, srcs)
    if undef is None or z3.is_false(z3.simplify(undef)): return ret
    return z3.If(undef, self.fresh(u.dtype, "undef"), ret)

  @staticmethod
  def _shl_extra(u: UOp) -> int:
    # SHL of an index widens its result by the largest count
    return max(0, min(int(u.src[1].vmax), zsem.INDEX_WIDTH - 1)) if u.op is Ops.SHL else 0

  def _cast(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    return zsem.cast(u.src[0].dtype, u.dtype, srcs[0]) if isinstance(u.src[0].dtype, DType) else None

  def _bitcast(self, u: UOp, srcs: list) -> z3.ExprRef | None:
    return zsem.bitcast(u.src[0].dtype, u.dtype, srcs[0]) if isinstance(u.src[0].dtype, DType) else None


_EXACT: dict[Ops, Any] = {
  Ops.CONST: lambda t, u, s: t.const(u.dtype, u.arg),
  Ops.RANGE: Translator._range, Ops.SPECIAL: Translator._range,
  Ops.DEFINE_VAR: Translator._var, Ops.BIND: lambda t, u, s: s[1],  # a bound variable is its value
  **{op: Translator._alu for op in zsem.TERMS},
  Ops.CAST: Translator._cast, Ops.BITCAST: Translator._bitcast,
  Ops.DETACH: lambda t, u, s: s[0], Ops.CONTIGUOUS: lambda t, u, s: s[0],
}


def _natural_divmod(u: UOp, srcs: list) -> z3.ExprRef | None:
  """IDIV or MOD of an `index` whose bounds say it is never negative by a positive constant: z3's own div and mod,
  which agree with C's there. The registry's term holds for every sign, as ite terms z3 decides far more slowly; view
  index arithmetic (a range divided and taken modulo by constants) is almost always of this kind."""
  if u.op not in (Ops.IDIV, Ops.MOD) or len(u.src) != 2: return None
  a, b = u.src
  if b.op is not Ops.CONST or not isinstance(b.arg, int) or b.arg <= 0 or not isinstance(a.vmin, int) or a.vmin < 0: return None
  x, c = srcs
  if not (z3.is_int(x) and z3.is_int(c)): return None
  return x / c if u.op is Ops.IDIV else x % c


class BoundsResult:
  """The outcome of an in-bounds proof: status is "proved", "violated" (with an example) or "unknown"."""
  __slots__ = ("status", "example", "value")

  def __init__(self, status: str, example: dict[str, int] | None = None, value: int | None = None):
    self.status, self.example, self.value = status, example, value

  def __repr__(self) -> str: return f"BoundsResult({self.status}, {self.example}, {self.value})"


def prove_in_bounds(idx: UOp, size: int, gate: UOp | None = None, timeout_ms: int | None = None) -> BoundsResult:
  """Whether 0 <= idx < size holds for every value of the ranges (and loaded values) where gate is true."""
  t = Translator()
  e = t(idx)
  ie = t.as_int(e, idx.dtype) if isinstance(idx.dtype, DType) else e
  s = z3.Solver()
  s.set(timeout=TIMEOUT_MS if timeout_ms is None else timeout_ms)
  if gate is not None:
    g = t(gate)
    if z3.is_bool(g): s.add(g)
  s.add(*t.constraints)
  s.add(z3.Or(ie < 0, ie >= size))
  r = s.check()
  if r == z3.unsat: return BoundsResult("proved")
  if r == z3.unknown: return BoundsResult("unknown")
  m = s.model()
  example: dict[str, int] = {}
  for node, v in t.vars.items():
    if node.op in (Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR):
      val = m.eval(t.as_int(v, node.dtype), model_completion=True)
      name = str(v).rsplit("_", 1)[0] if node.op is Ops.RANGE else node.arg.name if node.op is Ops.DEFINE_VAR else str(node.arg)
      if z3.is_int_value(val): example[name] = val.as_long()
  val = m.eval(ie, model_completion=True)
  return BoundsResult("violated", example, val.as_long() if z3.is_int_value(val) else None)


def prove_iterations_apart(r: UOp, a: tuple[UOp, UOp | None], b: tuple[UOp, UOp | None], timeout_ms: int | None = None) -> BoundsResult:
  """Whether accesses a and b, each (index, gate), never reach one element from two different iterations of range r.
  Each iteration gets its own values of every other range and of every loaded value (another thread is anywhere in
  its own loops). "violated" gives the two iterations and the element; "proved" means no two iterations share one.
  A decided answer is kept on r (nodes are interned, so the same question asked after another pass is not re-solved)."""
  memo = r._cache.setdefault("smt:apart", {})
  key = (a, b, timeout_ms)
  if (res := memo.get(key)) is None:
    res = _iterations_apart(r, a, b, timeout_ms)
    if res.status != "unknown": memo[key] = res
  return res


def _iterations_apart(r: UOp, a: tuple[UOp, UOp | None], b: tuple[UOp, UOp | None], timeout_ms: int | None) -> BoundsResult:
  t1, t2 = Translator(prefix="p_"), Translator(prefix="q_")
  s = z3.Solver()
  s.set(timeout=TIMEOUT_MS if timeout_ms is None else timeout_ms)
  terms = []
  for t, (idx, gate) in ((t1, a), (t2, b)):
    terms.append(t.as_int(t(idx), idx.dtype))
    if gate is not None and z3.is_bool(g := t(gate)): s.add(g)
  r1, r2 = t1.as_int(t1(r), r.dtype), t2.as_int(t2(r), r.dtype)
  s.add(*t1.constraints, *t2.constraints, r1 != r2, terms[0] == terms[1])
  res = s.check()
  if res == z3.unsat: return BoundsResult("proved")
  if res == z3.unknown: return BoundsResult("unknown")
  m = s.model()
  ev = lambda e: m.eval(e, model_completion=True).as_long()
  return BoundsResult("violated", {"first": ev(r1), "second": ev(r2)}, ev(terms[0]))

"""tinygrad integer expressions both ways, for `tinyspec prove --target tinygrad` (tinyspec.bridge.tinygrad.rules):

  instantiate    a tinygrad UPat built into concrete tinygrad UOps: op sets, dtype sets, src tuples (a commutative list
                 in a random order), named vars bound once, const patterns and `cvar`s (sample values near the wrap points
                 and the leaves' bounds; weak `weakint` consts as tinygrad writes them, or strong ones); a free var is a
                 tinygrad variable (an ALU PARAM with bounds) or a small expression over such variables. Every value
                 node is legal by tinygrad's own spec_shared.
  to_tinyspec    a tinygrad expression as tinyspec UOps: CDIV/CMOD are IDIV/MOD, FLOORDIV/FLOORMOD their floor forms,
                 MULACC a*b+c, bool MUL/ADD/MAX/SUB are AND/OR/OR/XOR, a weak operand committed at its consumer's dtype
                 (a const that fits as a const, anything else as a CAST from index), as tinygrad's pm_commit_weak does.
  tinygrad_value tinygrad's own value of an expression: its exec_alu node by node, each result truncated to its dtype,
                 operands committed to the consumer's dtype first (a CONST's arg as the renderer emits it).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from tinygrad.dtype import Invalid, least_upper_dtype
from tinygrad.dtype import dtypes as tdt
from tinygrad.dtype import truncate as tg_truncate
from tinygrad.uop.ops import GroupOp as TGroup
from tinygrad.uop.ops import Ops as TOps
from tinygrad.uop.ops import UOp as TUOp
from tinygrad.uop.ops import UPat, exec_alu
from tinygrad.uop.spec import spec_shared

from tinyspec.dtype import DType, dtypes, truncate
from tinyspec.prove.prover import canonical_slot
from tinyspec.prove.templates import Slot, boxes, representative_consts
from tinyspec.uop import Ops, UOp

# tinygrad dtype <-> tinyspec dtype (weakint is tinygrad's unbounded index integer)
TG_DTYPE: dict[Any, DType] = {tdt.bool: dtypes.bool, tdt.int8: dtypes.int8, tdt.int16: dtypes.int16, tdt.int32: dtypes.int32,
                              tdt.int64: dtypes.int64, tdt.uint8: dtypes.uint8, tdt.uint16: dtypes.uint16, tdt.uint32: dtypes.uint32,
                              tdt.uint64: dtypes.uint64, tdt.weakint: dtypes.index}
TS_DTYPE = {v: k for k, v in TG_DTYPE.items()}

# ops with a one-to-one tinyspec meaning; the others are translated by hand below
_SAME = {TOps.ADD: Ops.ADD, TOps.SUB: Ops.SUB, TOps.MUL: Ops.MUL, TOps.NEG: Ops.NEG, TOps.MAX: Ops.MAX, TOps.CDIV: Ops.IDIV,
         TOps.CMOD: Ops.MOD, TOps.AND: Ops.AND, TOps.OR: Ops.OR, TOps.XOR: Ops.XOR, TOps.SHL: Ops.SHL, TOps.SHR: Ops.SHR,
         TOps.CMPLT: Ops.CMPLT, TOps.CMPNE: Ops.CMPNE, TOps.CMPEQ: Ops.CMPEQ, TOps.WHERE: Ops.WHERE}
# bool arithmetic in tinygrad is Python's on 0/1, truncated to bool: MUL is AND, ADD and MAX are OR, SUB is XOR
_BOOL_AS = {TOps.MUL: Ops.AND, TOps.ADD: Ops.OR, TOps.MAX: Ops.OR, TOps.SUB: Ops.XOR}
# the ops a pattern instance is built from: integer and bool meaning only
INT_OPS = frozenset({*_SAME, TOps.FLOORDIV, TOps.FLOORMOD, TOps.MULACC, TOps.CAST, TOps.TRUNC, TOps.CONST})
ARITY = {TOps.NEG: 1, TOps.TRUNC: 1, TOps.CAST: 1, TOps.WHERE: 3, TOps.MULACC: 3}
CAST_DTYPES = (tdt.int8, tdt.int32, tdt.int64, tdt.uint8, tdt.uint32, tdt.weakint, tdt.bool)


class Unsupported(Exception):
  """A node with no tinyspec integer meaning (a float, Invalid, memory, a vector)."""


class NoInstance(Exception):
  """The pattern cannot be built into a node."""


# ---- building a pattern into tinygrad UOps ----
@dataclass
class TgInstance:
  root: TUOp
  slots: list[tuple[TUOp, Slot]] = field(default_factory=list)


class TgBuilder:
  """One random instance of a tinygrad UPat at a template dtype (a tinygrad dtype)."""

  def __init__(self, rng: random.Random, dt):
    self.rng, self.template_dtype = rng, dt
    self.slots: list[tuple[TUOp, Slot]] = []
    self.bind: dict[str, TUOp] = {}
    self.consts: list[int] = []

  def pick_dtype(self, allowed, hint):
    if allowed is None: return hint
    if hint in allowed: return hint
    if self.template_dtype in allowed: return self.template_dtype
    ints = [d for d in allowed if d in TG_DTYPE]
    if not ints: raise NoInstance(f"dtypes {sorted(d.name for d in allowed)} have no integer meaning")
    if tdt.weakint in ints and self.template_dtype is tdt.weakint: return tdt.weakint
    # the nearest width to the template's (int32 for uint32 where only signed ints match)
    bits = 64 if self.template_dtype is tdt.weakint else self.template_dtype.itemsize * 8
    return min(ints, key=lambda d: (abs((64 if d is tdt.weakint else d.itemsize * 8) - bits), d is tdt.weakint, d in tdt.uints, d.name))

  def const_value(self, dt) -> Any:
    r = self.rng
    if dt is tdt.bool: return r.random() < 0.5
    ts = TG_DTYPE.get(dt, dtypes.index)
    if self.consts and r.random() < 0.3:
      k = r.choice(self.consts)
      divs = [d for d in (2, 3, 4, 8) if k % d == 0]
      v = r.choice([k, -k, 2 * k, k + 1, k - 1, *([k // r.choice(divs)] if divs else []), *divs])
    elif self.slots and r.random() < 0.4:
      s = r.choice([s for _, s in self.slots if s.dtype.kind != "b"] or [s for _, s in self.slots])
      v = r.choice([s.lo, s.hi, s.hi + 1, s.lo - 1, -s.hi, -s.lo, s.hi - s.lo + 1, -s.hi - 1, s.hi // 2 + 1])
    elif r.random() < 0.15: v = r.randint(-1000, 1000)
    else: v = r.choice(representative_consts(TG_DTYPE.get(self.template_dtype, ts) if dt is tdt.weakint else ts))
    v = int(truncate(v, TG_DTYPE.get(self.template_dtype, ts) if dt is tdt.weakint else ts))
    if v: self.consts.append(v)
    return v

  def const(self, dt, value=None) -> TUOp:
    """A CONST: at a concrete int dtype, tinygrad writes it weak (weakint) as often as strong."""
    if dt is not tdt.bool and dt is not tdt.weakint and dt in TG_DTYPE and self.rng.random() < 0.5: cdt = tdt.weakint
    else: cdt = dt
    return TUOp.const(self.const_value(dt) if value is None else value, cdt)

  def new_slot(self, dt) -> TUOp:
    k = len(self.slots)
    ts = TG_DTYPE[dt]
    lo, hi = (0, 1) if ts.kind == "b" else self.rng.choice(boxes(ts))
    var = TUOp.variable(f"s{k}", bool(lo) if ts.kind == "b" else lo, bool(hi) if ts.kind == "b" else hi, dt, param=True)
    self.slots.append((var, Slot(k, ts, lo, hi, canonical_slot(Slot(k, ts, lo, hi, None)))))  # type: ignore[arg-type]
    return var

  def leaf(self, dt) -> TUOp:
    r = self.rng.random()
    if dt is tdt.bool:
      if r < 0.6: return self.new_slot(dt)
      if r < 0.75: return TUOp.const(self.rng.random() < 0.5, tdt.bool)
      idt = self.template_dtype if self.template_dtype is not tdt.bool else tdt.int32
      return self.new_slot(idt) < self.leaf(idt)
    if dt not in TG_DTYPE: raise NoInstance(f"a leaf of {dt.name}")
    if r < 0.45: return self.new_slot(dt)
    if r < 0.58: return self.const(dt)
    if r < 0.68: return self.new_slot(dt) * self.const(dt)
    if r < 0.78: return self.new_slot(dt) * self.const(dt) + (self.new_slot(dt) * self.const(dt) if self.rng.random() < 0.5 else self.new_slot(dt))
    if r < 0.84: return self.new_slot(dt) + self.const(dt)
    div, mod = (TOps.FLOORDIV, TOps.FLOORMOD) if dt is tdt.weakint or self.rng.random() < 0.5 else (TOps.CDIV, TOps.CMOD)
    c = self.const(dt, self.rng.choice([2, 3, 4, 5, 8, 16, 7]))
    if r < 0.92: return self.new_slot(dt).alu(div, c)
    return self.new_slot(dt).alu(mod, c)

  def build(self, pat: UPat, hint=None) -> TUOp:
    hint = self.template_dtype if hint is None else hint
    if pat.is_any: return self.build(self.rng.choice(list(pat.src[0])), hint)
    if pat.name is not None and pat.name in self.bind:
      u = self.bind[pat.name]
      if not pat.match(u, {}): raise NoInstance(f"pattern {pat.name!r} is used twice with incompatible filters")
      return u
    u = self._build(pat, hint)
    if not pat.match(u, {}): raise NoInstance(f"built {u.op.name} {u.dtype.name} does not fit the pattern")
    if pat.name is not None: self.bind[pat.name] = u
    return u

  def _build(self, pat: UPat, hint) -> TUOp:
    dt = self.pick_dtype(pat.match_dtype, hint)
    if pat.op is None:
      if pat._in_src is not None: raise NoInstance("a pattern with sources but no op")
      return self.leaf(dt)
    ops = sorted((o for o in pat.op if o in INT_OPS), key=lambda o: o.value)
    if not ops: raise NoInstance(f"pattern ops {sorted(o.name for o in pat.op)} have no integer meaning")
    op = self.rng.choice(ops)
    if op is TOps.CONST:
      if pat._in_src: raise NoInstance("a CONST pattern with sources")
      if pat.arg is not None:
        if isinstance(pat.arg, bool): dt = tdt.bool
        if pat.match_dtype is None and dt is not tdt.bool and self.rng.random() < 0.5: return TUOp.const(pat.arg, tdt.weakint)
        return TUOp.const(pat.arg, dt)
      return self.const(dt) if pat.match_dtype is None else TUOp.const(self.const_value(dt), dt)
    return self.node(op, pat, dt)

  def node(self, op, pat: UPat, dt) -> TUOp:
    psrc = pat._in_src
    if isinstance(psrc, list): psrc = tuple(self.rng.sample(psrc, len(psrc)))
    n = len(psrc) if isinstance(psrc, tuple) else ARITY.get(op, 2)
    if isinstance(psrc, tuple) and len(psrc) != ARITY.get(op, 2) and not (op is TOps.CAST and len(psrc) == 1):
      if len(psrc) > ARITY.get(op, 2) or pat.strict_length: raise NoInstance(f"{op.name} with {len(psrc)} sources")
      n = ARITY.get(op, 2)
    sp = lambda i: psrc[i] if isinstance(psrc, tuple) and i < len(psrc) else (psrc if isinstance(psrc, UPat) else None)  # noqa: E731
    def src(i: int, hint) -> TUOp:
      p = sp(i)
      return self.build(p, hint) if p is not None else self.leaf(hint)
    if op is TOps.CAST:
      out = self.pick_dtype(pat.match_dtype, self.template_dtype if self.rng.random() < 0.6 else self.rng.choice(CAST_DTYPES))
      x = src(0, self.rng.choice(CAST_DTYPES) if self.rng.random() < 0.7 else self.template_dtype)
      if x.dtype is out: raise NoInstance("a CAST to its own dtype")
      return x.cast(out)
    if op is TOps.TRUNC: return TUOp(TOps.TRUNC, src=(src(0, dt),))
    if op is TOps.WHERE:
      c = src(0, tdt.bool)
      a = src(1, dt)
      return TUOp(TOps.WHERE, src=(c, a, src(2, a.dtype)))
    if op in TGroup.Comparison:
      x = self.template_dtype if self.template_dtype is not tdt.bool and self.rng.random() < 0.8 else tdt.bool
      a = src(0, x)
      return TUOp(op, src=(a, src(1, a.dtype if a.dtype is not tdt.weakint else x)))
    if op is TOps.MULACC:
      a = src(0, dt)
      return TUOp(op, src=(a, src(1, a.dtype), src(2, a.dtype)))
    if n == 1: return TUOp(op, src=(src(0, dt),))
    a = src(0, dt)
    b = src(1, a.dtype if a.dtype is not tdt.weakint or op in (TOps.SHL, TOps.SHR) else dt)
    try: return TUOp(op, src=(a, b))
    except Exception as e: raise NoInstance(f"{op.name} of {a.dtype.name} and {b.dtype.name}: {e}") from None


def instantiate(pat: UPat, dt, rng: random.Random) -> TgInstance:
  """One instance of pat at template dtype dt, legal by tinygrad's own spec (spec_shared) at every value node."""
  b = TgBuilder(rng, dt)
  root = b.build(pat)
  for u in root.toposort():
    if u.op in INT_OPS and spec_shared.rewrite(u) is not True:
      raise NoInstance(f"tinygrad's spec rejects {u.op.name} {u.dtype.name} of {', '.join(s.dtype.name for s in u.src)}")
  return TgInstance(root, b.slots)


# ---- tinygrad UOps as tinyspec UOps ----
def _operand_dtype(u: TUOp):
  """The dtype u's operands compute in: a weak operand commits to it (tinygrad's pm_commit_weak)."""
  if u.op is TOps.WHERE: return u.dtype
  if u.op in (TOps.SHL, TOps.SHR): return u.src[0].dtype
  if u.op in TGroup.Comparison: return least_upper_dtype(*(s.dtype for s in u.src))
  return u.dtype


def _ts_dtype(dt) -> DType:
  if dt not in TG_DTYPE: raise Unsupported(f"{dt.name} has no integer meaning")
  return TG_DTYPE[dt]


def _const(v: Any, dt: DType) -> UOp:
  if v is Invalid: raise Unsupported("Invalid")
  if isinstance(v, float): raise Unsupported("a float constant")
  return UOp.const(dt, truncate(v, dt))


def to_tinyspec(root: TUOp, leaves: dict[TUOp, UOp]) -> UOp:
  """root as a tinyspec UOp; leaves maps tinygrad variables to tinyspec nodes. Raises Unsupported."""
  memo: dict[TUOp, UOp] = dict(leaves)

  def commit(s: TUOp, dt) -> UOp:
    """s as an operand of dtype dt: a const becomes a const of dt (truncated, as emitted), another node a CAST."""
    if s.dtype is dt: return memo[s]
    ts = _ts_dtype(dt)
    # a weak const that does not fit: the CAST of its exact value, so the policy check sees the value change
    if s.op is TOps.CONST and (s.dtype is not tdt.weakint or ts.kind not in "iu" or ts.min <= s.arg <= ts.max): return _const(s.arg, ts)
    return memo[s].cast(ts)

  stack: list[tuple[TUOp, bool]] = [(root, False)]
  while stack:
    u, ready = stack.pop()
    if u in memo: continue
    if u.op is TOps.CONST:
      memo[u] = _const(u.arg, _ts_dtype(u.dtype))
      continue
    if u.op in (TOps.PARAM, TOps.BUFFER): raise Unsupported("a variable that is not a pattern slot")
    if not ready:
      stack.append((u, True))
      stack.extend((s, False) for s in u.src if s not in memo)
      continue
    memo[u] = _translate(u, commit)
  return memo[root]


def _translate(u: TUOp, commit: Callable[[TUOp, Any], UOp]) -> UOp:
  dt = _ts_dtype(u.dtype)
  if u.op is TOps.CAST:
    src = commit(u.src[0], u.src[0].dtype)
    _ts_dtype(u.src[0].dtype)
    return src if src.dtype is dt else src.cast(dt)
  if u.op is TOps.BITCAST:
    s = _ts_dtype(u.src[0].dtype)
    if s.kind not in "iu" or dt.kind not in "iu" or s.bits != dt.bits: raise Unsupported("a BITCAST between different widths")
    return commit(u.src[0], u.src[0].dtype).bitcast(dt)
  if u.op is TOps.TRUNC: return commit(u.src[0], u.dtype)
  odt = _operand_dtype(u)
  ots = _ts_dtype(odt)
  if u.op is TOps.WHERE:
    c = commit(u.src[0], u.src[0].dtype)
    return UOp(Ops.WHERE, dt, (c, commit(u.src[1], odt), commit(u.src[2], odt)))
  srcs = [commit(s, odt) for s in u.src]
  if u.op is TOps.MULACC: return UOp(Ops.ADD, dt, (UOp(Ops.MUL, dt, tuple(srcs[:2])), srcs[2]))
  if u.op in (TOps.FLOORDIV, TOps.FLOORMOD): return _floor(u.op, srcs[0], srcs[1])
  if ots.kind == "b" and u.op in _BOOL_AS: return UOp(_BOOL_AS[u.op], dtypes.bool, tuple(srcs))
  if u.op not in _SAME: raise Unsupported(f"{u.op.name} has no integer meaning here")
  op = _SAME[u.op]
  if ots.kind == "b" and op in (Ops.NEG,): raise Unsupported("NEG of a bool")
  if op in (Ops.SHL, Ops.SHR) and srcs[1].dtype is not srcs[0].dtype: srcs[1] = srcs[1].cast(srcs[0].dtype)
  return UOp(op, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt, tuple(srcs))


def _floor(op, a: UOp, b: UOp) -> UOp:
  """Python's floor division and modulo from C's truncating ones: q - 1 and r + b where r != 0 and r, b differ in sign."""
  dt = a.dtype
  q, r = UOp(Ops.IDIV, dt, (a, b)), UOp(Ops.MOD, dt, (a, b))
  if dt.kind == "b": raise Unsupported("floor division of bools")
  zero = UOp.const(dt, 0)
  adjust = r.alu(Ops.CMPNE, zero).alu(Ops.AND, r.alu(Ops.CMPLT, zero).alu(Ops.CMPNE, b.alu(Ops.CMPLT, zero)))
  if op is TOps.FLOORDIV: return adjust.alu(Ops.WHERE, q.alu(Ops.SUB, UOp.const(dt, 1)), q)
  return adjust.alu(Ops.WHERE, r.alu(Ops.ADD, b), r)


# ---- tinygrad's own values ----
def tinygrad_value(root: TUOp, env: dict[TUOp, Any]) -> Any:
  """root's value as tinygrad computes it (its python emulator's exec_alu, each result truncated to its dtype; a weak
  operand committed to the consumer's dtype first), with each variable of env at its value."""
  memo: dict[TUOp, Any] = dict(env)

  def val(s: TUOp, dt) -> Any:
    v = memo[s]
    if s.dtype is not dt and (f := tg_truncate.get(dt)) is not None: return f(v)
    return int(v) if dt is tdt.weakint else v

  for u in root.toposort():
    if u in memo or u.op is TOps.STACK: continue
    if u.op is TOps.CONST:
      memo[u] = tg_truncate[u.dtype](u.arg) if u.dtype in tg_truncate else u.arg
    elif u.op is TOps.CAST:
      v = val(u.src[0], u.src[0].dtype)
      memo[u] = tg_truncate[u.dtype](v) if u.dtype in tg_truncate else int(v)
    elif u.op is TOps.TRUNC: memo[u] = val(u.src[0], u.dtype)
    elif u.op in TGroup.ALU:
      odt = _operand_dtype(u)
      ops = [val(s, u.src[0].dtype if (u.op is TOps.WHERE and i == 0) else odt) for i, s in enumerate(u.src)]
      memo[u] = exec_alu(u.op, u.dtype, ops)
    else: raise Unsupported(f"tinygrad cannot evaluate {u.op.name} here")
  return memo[root]


def tinygrad_fold(root: TUOp, env: dict[TUOp, Any]) -> Any:
  """What tinygrad's own simplifier makes of root with the variables replaced by constants (a CONST's value, or None)."""
  try:
    out = root.substitute({k: TUOp.const(v, k.dtype) for k, v in env.items()}).simplify()
  except Exception: return None
  return out.arg if out.op is TOps.CONST else None


_INFIX = {TOps.ADD: "+", TOps.SUB: "-", TOps.MUL: "*", TOps.CDIV: "/", TOps.CMOD: "%", TOps.FLOORDIV: "//", TOps.FLOORMOD: "%%",
          TOps.CMPLT: "<", TOps.CMPNE: "!=", TOps.CMPEQ: "==", TOps.AND: "&", TOps.OR: "|", TOps.XOR: "^", TOps.SHL: "<<", TOps.SHR: ">>"}


def render(u: TUOp, env: dict[TUOp, Any] | None = None, depth: int = 8) -> str:
  """A short infix rendering of a tinygrad expression (CDIV as /, FLOORDIV as //, FLOORMOD as %%), variables by name."""
  env = env or {}
  if depth == 0: return "..."
  if u.op in (TOps.PARAM, TOps.BUFFER):
    name = u.arg.name if u.arg.name is not None else "var"
    return f"{name}:{u.dtype.name}" if u not in env else f"{name}={env[u]}:{u.dtype.name}"
  if u.op is TOps.CONST: return f"{u.arg!r}" + ("" if u.dtype in (tdt.weakint, tdt.bool) else f":{u.dtype.name}")
  if u.op in _INFIX and len(u.src) == 2: return f"({render(u.src[0], env, depth - 1)} {_INFIX[u.op]} {render(u.src[1], env, depth - 1)})"
  if u.op is TOps.CAST: return f"({u.dtype.name})({render(u.src[0], env, depth - 1)})"
  return f"{u.op.name}({', '.join(render(s, env, depth - 1) for s in u.src)})"

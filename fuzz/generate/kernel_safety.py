"""The UB and exactness screen of KERNEL_GRAPH cases (fuzz.generate.safety does the same for TENSOR graphs).

Kernels of a kernel-level case may read what they wrote: a loop's iterations feed each other, so a value range is a
bound over every execution, not over one expression. The screen runs the kernels in graph order and, per kernel:

- every value gets an `Abs`: |v| <= c * W + m, v in [lo, hi], d denominator bits (floats). W bounds the float storage
  the kernel writes (a load of it is c=1, m=0); storage the kernel only reads has the bound the kernels before it left.
- every float STORE into written storage has c <= 1, so each store execution raises W by at most its m: after the
  kernel's T store executions W <= W0 + T * max m. An ATOMIC is a STORE of op(element, value): its value has c == 0
  (it loads nothing the kernel writes), so the element it updates is the one written value in it. Every float value,
  with that W, is exact (its bits fit the mantissa, so any summation order gives the same result) and far from
  overflow.
- a point C leaves undefined is unsafe only where tinyspec leaves it open too (tinyspec.ops.scalar.left_open): a
  division or modulo by a range holding 0, MIN by -1, a shift by a count past the width and a cast of NaN, an infinity
  or an out-of-range float to an int have the registry's values, which the renderers must implement, so cases reach
  them. Floats may hold NaN and infinities (`special`): every op the screen admits on floats gives one result on them
  whatever the order (IEEE), and agree compares NaN with NaN. A BITCAST of a float is admitted for a value moved
  uncomputed from an input or a constant (`raw`: its zero keeps its sign) that holds no NaN (a NaN's bits are open).
- an op whose result is rounded (SQRT, RECIP, EXP2, LOG2, SIN: `rounded`) may only be stored into storage no kernel
  loads again, since the comparison's tolerance covers one rounding, not a rounded value computed on; RECIP of a range
  holding 0 only on a raw operand (the sign of a computed zero is open).
- a REG load no ungated STORE of that register came before, and two args of one call on the same storage (C pointers
  are `restrict`) are unsafe.
- the order of the accesses to storage a kernel writes is fixed by dependencies (check_order), not left to the schedule.

Generators screen the cases they make with it; the oracles skip a kernel case it rejects, so a reducer move that
brings in undefined behaviour or rounding never counts as still failing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tinyspec.dtype import DType, dtypes, significand_bits
from tinyspec.ops.atomic import commute
from tinyspec.ops.classes import dtype_error, reduce_accepts
from tinyspec.ops.intervals import cast_interval, float_interval, interval, reduce_interval, undefined_in
from tinyspec.ops.scalar import cast_undefined, left_open
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, is_kernel_body, kernel_calls, storage_of

INF = float("inf")
STORED_DBITS = 4        # denominator bits a stored float may carry (inputs and constants carry at most 2)
FLOAT_LIMIT = 1e6       # magnitude any float value may reach


class KernelUnsafe(Exception):
  """A kernel whose values may hit undefined behaviour or depend on float rounding order."""


@dataclass(frozen=True)
class Abs:
  """|v| <= c * W + m and lo <= v <= hi for the finite values; d: denominator bits of a float (0 for ints and bools);
  special: may also be NaN or an infinity; raw: moved uncomputed from an input or a constant; rounded: the result of an
  op that rounds (module docstring)."""
  c: float
  m: float
  lo: float
  hi: float
  d: int = 0
  special: bool = False
  raw: bool = False
  rounded: bool = False


BOOL = Abs(0, 1, 0, 1)




def dbits(v: float) -> int:
  """Denominator bits of a float (99 when it is no short dyadic rational)."""
  if not math.isfinite(v): return 99
  for d in range(13):
    if float(v) * (1 << d) == int(float(v) * (1 << d)): return d
  return 99


def full(dt: DType) -> Abs:
  if dt.is_bool: return BOOL
  if dt.is_int: return Abs(0, max(abs(dt.min), abs(dt.max)), dt.min, dt.max)
  return Abs(1, 0, -INF, INF, STORED_DBITS)


def of_interval(dt: DType, lo: float, hi: float, c: float = 0, d: int = 0) -> Abs:
  """An int interval, wrapped to the whole dtype when it leaves it; a float Abs as given."""
  if dt.is_bool: return BOOL
  if dt.is_int or dt is dtypes.index:
    if dt is not dtypes.index and (lo < dt.min or hi > dt.max): return full(dt)
    return Abs(0, max(abs(lo), abs(hi)), lo, hi)
  return Abs(c, max(abs(lo), abs(hi)) if c == 0 else INF, lo, hi, d)


def array_abs(dt: DType, a: np.ndarray | None) -> Abs:
  """The Abs of a buffer's contents (None: zeros)."""
  if a is None or a.size == 0: return Abs(0, 0, 0, 0)
  a = np.asarray(a)
  if dt.is_bool: return BOOL
  if dt.is_float:
    fin = a[np.isfinite(a)]
    special = fin.size < a.size  # NaN and infinities have the registry's meaning (module docstring)
    if fin.size == 0: return Abs(0, 0, 0, 0, 0, special, raw=True)
    return Abs(0, float(np.max(np.abs(fin))), float(fin.min()), float(fin.max()), max(dbits(float(v)) for v in np.unique(fin)), special, raw=True)
  lo, hi = int(a.min()), int(a.max())
  return Abs(0, max(abs(lo), abs(hi)), lo, hi)


def join(a: Abs, b: Abs) -> Abs:
  return Abs(max(a.c, b.c), max(a.m, b.m), min(a.lo, b.lo), max(a.hi, b.hi), max(a.d, b.d), a.special or b.special,
             a.raw and b.raw, a.rounded or b.rounded)


ROUNDED = (Ops.SQRT, Ops.RECIP, Ops.EXP2, Ops.LOG2, Ops.SIN)  # float ops whose result is not exact
# ops that pass one operand's value on (or its negation) uncomputed: no rounding, whatever its magnitude
PASSED_ON = (Ops.LOAD, Ops.CONST, Ops.WHERE, Ops.MAX, Ops.NEG, Ops.TRUNC)


# ---- one value ----
class KernelAbs:
  """Abs of the values of one kernel body: `written` storage (PARAMs and REG BUFFERs it stores to) loads as c=1 floats
  or whole-dtype ints; `read` gives the Abs of every other PARAM slot."""

  def __init__(self, written: set[UOp], read: dict[int, Abs]):
    self.written, self.read = written, read
    self.memo: dict[UOp, Abs] = {}

  def of(self, root: UOp) -> Abs:
    if root not in self.memo:
      for u in root.toposort(lambda n: n.op is not Ops.CALL):
        if u not in self.memo: self.memo[u] = self._node(u)
    return self.memo[root]

  def run(self, nodes: list[UOp]) -> None:
    """The Abs of every node of a topologically sorted list."""
    for u in nodes:
      if u not in self.memo: self.memo[u] = self._node(u)

  def _node(self, u: UOp) -> Abs:
    op, dt = u.op, u.dtype
    if dt is dtypes.index or op in (Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR):  # a variable: any value of its bounds
      return Abs(0, max(abs(u.vmin), abs(u.vmax)), u.vmin, u.vmax)
    if op in (Ops.STORE, Ops.END, Ops.GROUP, Ops.SINK, Ops.AFTER, Ops.PARAM, Ops.BUFFER, Ops.INDEX) or dt is dtypes.void:
      return Abs(0, 0, 0, 0)
    if op is Ops.CONST:
      v = u.arg
      if dt.is_float:
        if not math.isfinite(v): return Abs(0, 0, 0, 0, 0, True, raw=True)
        return Abs(0, abs(v), v, v, dbits(v), raw=True)
      return Abs(0, abs(int(v)), int(v), int(v))
    if op is Ops.LOAD: return self._load(u)
    if op is Ops.REDUCE: return self._reduce(u)
    if op in GroupOp.Elementwise: return self._alu(u, [self.memo[s] for s in u.src])
    raise KernelUnsafe(f"{op.name} is not analysed")

  def _load(self, u: UOp) -> Abs:
    base = storage_of(u.src[0].src[0])
    if base in self.written: a = full(u.dtype)
    elif base.op is Ops.PARAM: a = self.read.get(base.arg.slot, full(u.dtype))
    else: a = full(u.dtype)
    if a.rounded and u.dtype.is_float: raise KernelUnsafe("a load of a rounded result: the tolerance covers one rounding")
    return join(a, self.memo[u.src[1]]) if len(u.src) == 3 else a

  def _reduce(self, u: UOp) -> Abs:
    if not reduce_accepts(u.dtype): raise KernelUnsafe(f"REDUCE of {u.dtype.name}, which is storage only")  # the spec's reduce.dtype
    a, n = self.memo[u.src[0]], 1
    for r in u.src[1:]:
      if r.op is not Ops.RANGE or r.src[0].op is not Ops.CONST: raise KernelUnsafe("REDUCE over a range without a constant bound")
      n *= max(int(r.src[0].arg), 0)
    if u.arg is Ops.MAX or n == 1: return a
    dt = u.dtype
    if dt.is_float and u.arg is Ops.MUL and (a.c > 0 or a.m > 1): raise KernelUnsafe("float MUL reduction may grow")
    lo, hi = reduce_interval(u.arg, dt, (a.lo, a.hi), n)  # the registry's range of the reduction
    if not dt.is_float: return of_interval(dt, lo, hi)
    if u.arg is Ops.ADD: return Abs(a.c * n, a.m * n, lo, hi, a.d)
    return Abs(0, 1, lo, hi, a.d * n)

  def _alu(self, u: UOp, s: list[Abs]) -> Abs:
    op, dt = u.op, u.dtype
    sd = u.src[0].dtype
    if op is Ops.CAST: return self._cast(dt, sd, s[0])
    if any(x.rounded for x in s): raise KernelUnsafe(f"{op.name} of a rounded result: the tolerance covers one rounding")
    if op is Ops.BITCAST:
      if dt.is_float or sd.is_bool: raise KernelUnsafe("BITCAST to a float or from a bool")
      if sd.is_float and not (s[0].raw and not s[0].special):
        raise KernelUnsafe("BITCAST of a float that is computed or may be NaN: its bits are open")
      return full(dt)
    if (msg := dtype_error(op, u.src[-1].dtype)) is not None: raise KernelUnsafe(msg)  # an op outside its dtype class has no meaning
    if op in GroupOp.Comparison or dt.is_bool: return BOOL
    if op is Ops.WHERE: return join(s[1], s[2])  # raw when both are
    if dt.is_float: return self._float(u, s)
    ivs = [(int(x.lo), int(x.hi)) for x in s]
    if (why := left_open(undefined_in(op, dt, *ivs))) is not None: raise KernelUnsafe(why)
    return of_interval(dt, *interval(op, dt, *ivs))  # the registry's bounds (the whole dtype where the result may wrap)

  def _cast(self, dt: DType, sd: DType, a: Abs) -> Abs:
    if dt.is_bool: return BOOL
    if dt.is_float and not sd.is_float and (a.lo < -(2 ** 24) or a.hi > 2 ** 24):
      raise KernelUnsafe(f"cast of ints in [{a.lo}, {a.hi}] to {dt.name} may round")
    if sd.is_float and not dt.is_float and (why := left_open(cast_undefined(a.lo, sd, dt) or cast_undefined(a.hi, sd, dt))) is not None:
      raise KernelUnsafe(f"cast of floats in [{a.lo}, {a.hi}] to {dt.name}: {why}")
    lo, hi = cast_interval(sd, dt, (a.lo, a.hi))  # the registry's range of the conversion
    if dt.is_float: return Abs(a.c, a.m, lo, hi, a.d, a.special) if sd.is_float else Abs(0, a.m, lo, hi, 0)
    return of_interval(dt, lo, hi)

  def _float(self, u: UOp, s: list[Abs]) -> Abs:
    op, dt = u.op, u.dtype
    a, b = s[0], (s[1] if len(s) > 1 else None)
    sp = any(x.special for x in s)
    if op in ROUNDED: return self._rounded(u, a)
    if op not in (Ops.NEG, Ops.TRUNC, Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX): raise KernelUnsafe(f"{op.name} on floats is not exact")
    lo, hi = float_interval(op, dt, *((x.lo, x.hi) for x in s))  # the registry's range of the exact result
    if op is Ops.NEG: return Abs(a.c, a.m, lo, hi, a.d, sp)
    if op is Ops.TRUNC: return Abs(a.c, a.m, lo, hi, 0, sp)
    assert b is not None
    d = max(a.d, b.d)
    if op in (Ops.ADD, Ops.SUB): return Abs(a.c + b.c, a.m + b.m, lo, hi, d, sp)
    if op is Ops.MAX: return Abs(max(a.c, b.c), max(a.m, b.m), lo, hi, d, sp)
    if a.c > 0 and b.c > 0: raise KernelUnsafe("product of two values the kernel writes")
    # a factor of a written value must be an integer of magnitude <= 1, or repeated products grow or lose bits
    for x, y in ((a, b), (b, a)):
      if x.c > 0 and (y.m > 1 or y.d > 0): raise KernelUnsafe("a written value multiplied by more than a sign")
    return Abs(a.c * b.m + b.c * a.m, a.m * b.m, lo, hi, a.d + b.d, sp)

  def _rounded(self, u: UOp, a: Abs) -> Abs:
    """A rounded result of the math library or a correctly rounded SQRT / RECIP: any finite or special value."""
    if a.c > 0: raise KernelUnsafe(f"{u.op.name} of a value the kernel writes")
    if u.op is Ops.RECIP and a.lo <= 0 <= a.hi and not a.raw:
      raise KernelUnsafe("RECIP of a computed value that may be 0: the sign of its zero is open")
    return Abs(0, INF, -INF, INF, 0, True, rounded=True)


# ---- a kernel, a graph ----
def _multiplicities(body: UOp) -> dict[UOp, int]:
  """How often each STORE (or ATOMIC) of a kernel body runs: the product of the bounds of the ENDs around it."""
  out: dict[UOp, int] = {}
  stack: list[tuple[UOp, int]] = [(s, 1) for s in body.src]
  seen: set[tuple[UOp, int]] = set()
  while stack:
    u, k = stack.pop()
    if (u, k) in seen: continue
    seen.add((u, k))
    if u.op in GroupOp.Writes: out[u] = max(out.get(u, 0), k)
    elif u.op is Ops.GROUP: stack.extend((s, k) for s in u.src)
    elif u.op is Ops.END and u.src:
      n = k
      for r in u.src[1:]: n *= int(r.src[0].arg) if r.op is Ops.RANGE and r.src[0].op is Ops.CONST else 1
      stack.append((u.src[0], n))
  return out


def _check_reg_loads(nodes: list[UOp]) -> None:
  """Every LOAD of a REG buffer waits (through its AFTERs) for an ungated STORE of it that does not read it."""
  loads = [u for u in nodes if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and (a := storage_of(u.src[0].src[0])).op is Ops.BUFFER
           and a.arg.addrspace is AddrSpace.REG]
  if not loads: return
  inits = {x for x in nodes if x.op is Ops.STORE and len(x.src) == 2 and x.src[0].op is Ops.INDEX and
           (acc := storage_of(x.src[0].src[0])).op is Ops.BUFFER and not _reads(x.src[1], acc)}
  for u in loads:
    st = u.src[0].src[0]
    acc = storage_of(st)
    deps = [d for a in _afters(st) for d in a.src[1:] if d.op is not Ops.RANGE]
    ok = any(x in inits and storage_of(x.src[0].src[0]) is acc for d in deps for x in d.toposort(lambda n: n.op is not Ops.CALL))
    if not ok: raise KernelUnsafe(f"a LOAD of REG buffer {acc.arg.id} may run before any STORE initialises it")


def _afters(u: UOp) -> list[UOp]:
  out = []
  while u.op is Ops.AFTER and u.src:
    out.append(u)
    u = u.src[0]
  return out


def _reads(v: UOp, acc: UOp) -> bool:
  return any(n.op is Ops.INDEX and storage_of(n.src[0]) is acc for n in v.toposort(lambda n: n.op is not Ops.CALL))


def _enclosing(body: UOp) -> dict[UOp, set[UOp]]:
  """The RANGEs of the ENDs around each STORE (through SINK, GROUP and END nesting)."""
  out: dict[UOp, set[UOp]] = {}
  stack: list[tuple[UOp, frozenset]] = [(s, frozenset()) for s in body.src]
  while stack:
    u, rs = stack.pop()
    if u.op in GroupOp.Writes: out.setdefault(u, set()).update(rs)
    elif u.op is Ops.GROUP: stack.extend((x, rs) for x in u.src)
    elif u.op is Ops.END and u.src: stack.append((u.src[0], rs | frozenset(u.src[1:])))
  return out


def check_order(body: UOp, stores: list[UOp]) -> None:
  """The meaning of a kernel does not hang on an order the lowering picks: a STORE depends on every range of the ENDs
  around it (linearize hoists it out of a loop it does not depend on), and of two accesses to one storage, one a
  STORE or an ATOMIC, one depends on the other (the schedule orders nothing else), except two ATOMICs of one op: they
  commute."""
  deps = {s: set(s.toposort(lambda n: n.op is not Ops.CALL)) for s in stores}
  for s, rs in _enclosing(body).items():
    if not rs <= deps[s]:
      raise KernelUnsafe(f"a STORE under an END over axis {min(r.arg.axis for r in rs - deps[s])} does not depend on that range")
  by_base: dict[UOp, list[UOp]] = {}
  for s in stores: by_base.setdefault(storage_of(s.src[0].src[0]), []).append(s)
  below: dict[UOp, set[UOp]] = {}  # each LOAD's own sources, walked once however many stores share its storage
  for s in stores:
    for ld in (x for x in deps[s] if x.op is Ops.LOAD and x.src[0].op is Ops.INDEX):
      for w in by_base.get(storage_of(ld.src[0].src[0]), ()):
        if w is s or ld in deps[w]: continue
        if ld not in below: below[ld] = set(ld.toposort())
        if w not in below[ld]:
          raise KernelUnsafe("a LOAD and a STORE of one storage with no dependency ordering them")
  for ws in by_base.values():
    for i, a in enumerate(ws):
      for b in ws[i + 1:]:
        if commute(a, b): continue
        if a not in deps[b] and b not in deps[a]: raise KernelUnsafe("two STOREs to one storage with no dependency ordering them")


def check_kernel(body: UOp, bounds: dict[int, Abs]) -> dict[int, Abs]:
  """Screen one kernel body whose PARAM slot k holds values with bounds[k]; the bounds of the slots it writes after it."""
  if body.op is not Ops.SINK: raise KernelUnsafe(f"kernel body {body.op.name} is not analysed")
  nodes = body.toposort(lambda n: n.op is not Ops.CALL)
  stores = [u for u in nodes if u.op in GroupOp.Writes]
  if any(s.src[0].op is not Ops.INDEX for s in stores): raise KernelUnsafe("STORE not through an INDEX")
  written = {storage_of(s.src[0].src[0]) for s in stores}
  _check_reg_loads(nodes)
  check_order(body, stores)
  ka = KernelAbs(written, {k: v for k, v in bounds.items() if not any(w.op is Ops.PARAM and w.arg.slot == k for w in written)})
  ka.run(nodes)
  mult = _multiplicities(body)
  t = 0
  max_m = 0.0
  loaded = {storage_of(u.src[0].src[0]) for u in nodes if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX}
  special: set[UOp] = set()
  rounded: set[UOp] = set()
  dbits_of: dict[UOp, int] = {}
  for s in stores:
    dt = s.src[1].dtype
    a = ka.of(s.src[1])
    if len(s.src) == 3: ka.of(s.src[2])
    target = storage_of(s.src[0].src[0])
    if a.special: special.add(target)
    if a.rounded:
      if target in loaded: raise KernelUnsafe("a rounded result stored into storage the kernel loads")
      rounded.add(target)
      continue
    if dt.is_float:
      if s.op is Ops.ATOMIC and a.c > 0: raise KernelUnsafe("a float ATOMIC's value loads storage the kernel writes")
      if a.c > 1: raise KernelUnsafe(f"a float STORE adds {a.c:g} copies of written values: repeated runs may grow past exactness")
      # storage the kernel loads again must stay short dyadic; other storage carries the stored values' bits on
      if a.d > STORED_DBITS and target in loaded: raise KernelUnsafe(f"a float STORE of values with {a.d} denominator bits")
      dbits_of[target] = max(dbits_of.get(target, 0), a.d)
      t += mult.get(s, 1)
      max_m = max(max_m, a.m)
  w0 = max([0.0] + [bounds[w.arg.slot].m for w in written if w.op is Ops.PARAM and w.arg.slot in bounds and w.dtype.is_float])
  w = w0 + t * max_m
  for u, a in ka.memo.items():
    if not u.dtype.is_float or u.op in (Ops.STORE, Ops.INDEX, Ops.AFTER, Ops.PARAM, Ops.BUFFER, *PASSED_ON) or a.rounded: continue
    # a conversion between floats rounds once, to the one value tinyspec.dtype.round_float defines: no order to depend on
    # (the ops computing on its result meet the check with its operand's denominator bits)
    if u.op is Ops.CAST and u.src[0].dtype.is_float: continue
    mag = a.c * w + a.m if a.c > 0 else a.m
    if mag > FLOAT_LIMIT or mag * (1 << min(a.d, 60)) >= 2 ** significand_bits(u.dtype):
      raise KernelUnsafe(f"{u.op.name} of {u.dtype.name} may reach {mag:.3g} with {a.d} denominator bits: not exact")
  out: dict[int, Abs] = {}
  for p in written:
    if p.op is not Ops.PARAM: continue
    old = bounds.get(p.arg.slot, Abs(0, 0, 0, 0))
    # the kernel's writes join what the buffer held before (its stores may leave elements untouched)
    wb = max(w, old.m)
    d = max(STORED_DBITS, old.d, dbits_of.get(p, 0))
    out[p.arg.slot] = Abs(0, wb, -wb, wb, d, p in special or old.special, rounded=p in rounded or old.rounded) if p.dtype.is_float else full(p.dtype)
  return out


def kernel_unsafe_reason(root: UOp, inputs: dict[int, Any]) -> str | None:
  """Why a KERNEL_GRAPH case may hit undefined behaviour or float rounding on these inputs, or None when it cannot."""
  try:
    bufs: dict[int, Abs] = {}
    for call in kernel_calls(root):
      body = call.src[0]
      if not is_kernel_body(body) or body.op is not Ops.SINK: raise KernelUnsafe(f"a CALL body {body.op.name} is not analysed")
      args = [storage_of(a) for a in call.src[1:] if a.op not in GroupOp.Variable]  # variable args come last: slots stay positions
      if any(a.op is not Ops.BUFFER for a in args): raise KernelUnsafe("a kernel arg that is not a BUFFER")
      if len({a.arg.id for a in args}) != len(args): raise KernelUnsafe("two args of one kernel on the same BUFFER (its pointers are restrict)")
      for a in args:
        if a.arg.id not in bufs: bufs[a.arg.id] = array_abs(a.dtype, inputs.get(a.arg.id))
      after = check_kernel(body, {k: bufs[a.arg.id] for k, a in enumerate(args)})
      for k, ab in after.items(): bufs[args[k].arg.id] = ab
    return None
  except KernelUnsafe as e:
    return str(e)
  except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as e:
    return f"malformed: {type(e).__name__}: {e}"


def first_screened(draw: Callable[[int], Any], attempts: int) -> Any:
  """The first case draw(i) makes, for i = 0, 1, ..., attempts - 1, that the screen accepts; else the last one drawn (the
  oracles skip it then). A generator's draws come from its own Random, so a rejected draw only moves it on."""
  for i in range(attempts):
    c = draw(i)
    if kernel_unsafe_reason(c.root, c.inputs) is None: return c
  return c

"""Value-range analysis of TENSOR graphs that keeps fuzz cases free of undefined behaviour.

Every node gets an Info: an interval [lo, hi] of the values it can take (given the case's inputs), whether a float
value is exact (a dyadic rational that float arithmetic computes without rounding, in any order), and whether its bits
are raw (an input or constant moved around, never computed: only those may be bitcast to ints, since -0.0 and +0.0
compare equal but differ in bits). An op whose precondition fails (division by a range holding 0, a shift past the
width, a log of a non-positive value, a float to int cast out of range or of an inexact value, a comparison of
inexact floats, a float that may overflow) makes the graph unsafe. Floats may also hold the special values the spec
defines the ops on (NaN, +inf, -inf: IEEE results, docs/spec.md): an Info says which of them a value may hold besides
its finite range, and an op consuming them is safe wherever the registry's meaning is defined there; a conversion of
one to an integer (undefined, tinyspec.ops.scalar.cast_undefined) and a bitcast of a NaN (its payload bits are open)
make the graph unsafe. An opaque kernel CALL (a kernel SINK body over
PARAMs) is analysed by its STOREs: what it writes joins the Info of AFTER(arg, call); an index that may leave its arg,
two args on one storage, or another effect on an arg's storage with no AFTER ordering the two makes it unsafe.
Generators build with it and reducers keep to it, so that no difference a fuzz campaign finds is an artefact of
undefined behaviour or float rounding.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tinyspec.dtype import DType, dtypes, finfo, significand_bits
from tinyspec.ops.classes import dtype_error, reduce_accepts
from tinyspec.ops.intervals import INTERVALS, cast_interval, float_interval, interval, reduce_interval, undefined_in
from tinyspec.ops.scalar import cast_undefined, run
from tinyspec.rewrite import PatternMatcher, UPat, graph_rewrite
from tinyspec.uop import GroupOp, Ops, UOp, is_opaque_call, is_value_call, substitute, walk

FLOAT_LIMIT = 1e6          # magnitude a float value may reach; beyond it sums of rounded terms lose too much
MAX_DBITS = 12             # denominator bits an exact float may carry


class Unsafe(Exception):
  """An op whose operands' ranges allow undefined behaviour or a rounding-dependent result."""


@dataclass(frozen=True)
class Info:
  lo: float              # the finite values lie in [lo, hi] (a float value holding no finite one has [0, 0])
  hi: float
  exact: bool = True
  dbits: int = 0
  raw: bool = False
  nan: bool = False      # a float value may also be NaN, +inf, -inf
  pinf: bool = False
  ninf: bool = False

  def specials(self) -> tuple[float, ...]:
    """The non-finite values this value may hold."""
    return tuple(v for v, f in ((math.nan, self.nan), (math.inf, self.pinf), (-math.inf, self.ninf)) if f)


def float_limit(dt: DType) -> float:
  """The magnitude a computed value of float dt may reach: FLOAT_LIMIT, and for float16 and bfloat16 half their largest
  finite value, so no rounding of a result within it overflows to inf; the fp8 dtypes are never computed on (storage
  only), so a value converted into them may reach their largest finite value, where casts saturate."""
  m = float(finfo(dt).max)
  return m if dt.storage_only else min(FLOAT_LIMIT, m / 2)


def _full(dt: DType) -> Info:
  if dt.is_bool: return Info(0, 1, True, 0, False)
  if dt.is_int: return Info(dt.min, dt.max, True, 0, False)
  return Info(-FLOAT_LIMIT, FLOAT_LIMIT, False, 0, False)


def _dbits(v: float) -> int | None:
  """The smallest d with v * 2**d an integer, None when above MAX_DBITS or v is inf or NaN."""
  if not math.isfinite(float(v)): return None
  for d in range(MAX_DBITS + 1):
    if float(v) * (1 << d) == int(float(v) * (1 << d)): return d
  return None


def _float(dt: DType, lo: float, hi: float, exact: bool, dbits: int, raw: bool = False, passed: bool = False) -> Info:
  """The Info of a finite float range. passed: the values are operands' own values passed on uncomputed (an input, a
  constant, MAX, WHERE, NEG): they may exceed FLOAT_LIMIT (the largest finite value is an edge value the generators
  draw), since no arithmetic rounds them; any op computing from them meets the limit again."""
  limit = float_limit(dt)
  if not (math.isfinite(lo) and math.isfinite(hi)) or (max(abs(lo), abs(hi)) > limit and not passed):
    raise Unsafe(f"float values may reach {max(abs(lo), abs(hi)):.3g}")
  big = max(abs(lo), abs(hi)) > limit
  # a computed result is exact when its bits fit dt's mantissa; raw values (an input's, a constant's) are dt's own values,
  # exact whatever their spread (an fp8 input holding 448 and 0.5 converts exactly to float32)
  if exact and not big and not raw and (dbits > MAX_DBITS or max(abs(lo), abs(hi)) * (1 << dbits) >= (1 << significand_bits(dt))): exact = False
  return Info(lo, hi, exact, dbits if exact else 0, raw)


def _flags(i: Info, vals: list[float]) -> Info:
  """i, also holding the non-finite values among vals and with its finite range widened to the finite ones."""
  fin = [v for v in vals if math.isfinite(v)]
  if fin: i = replace(i, lo=min(i.lo, *fin), hi=max(i.hi, *fin))
  return replace(i, nan=i.nan or any(math.isnan(v) for v in vals), pinf=i.pinf or math.inf in vals, ninf=i.ninf or -math.inf in vals)


def _points(i: Info) -> list[float]:
  """Values standing for every sign class of i: its ends, 0 when inside, and its special values."""
  return [i.lo, i.hi, *([0.0] if i.lo <= 0 <= i.hi else []), *i.specials()]


def special_results(op: Ops, dt: DType, ins: list[Info]) -> list[float]:
  """The registry's values of float op where an operand is special (NaN, +-inf), at the points of each operand's sign
  classes: IEEE gives one result per class (inf + finite is inf, inf * a negative is -inf, inf * 0 is NaN, RECIP(inf)
  is 0), and the finite ones are ends of the operands' ranges or 0."""
  if not any(i.specials() for i in ins): return []
  pts = itertools.product(*(_points(i) for i in ins))
  return [float(run(op, dt, *p)) for p in pts if not all(math.isfinite(v) for v in p)]


def _int(dt: DType, lo: int, hi: int) -> Info:
  if dt.is_bool: return Info(0, 1)
  if lo < dt.min or hi > dt.max: return _full(dt)  # wraps: any value of the dtype
  return Info(int(lo), int(hi))


def _join(a: Info, b: Info) -> Info:
  return Info(min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact, max(a.dbits, b.dbits), a.raw and b.raw,
              a.nan or b.nan, a.pinf or b.pinf, a.ninf or b.ninf)


def array_info(dt: DType, arr: np.ndarray | None) -> Info:
  """The Info of an input array (a missing input is zeros)."""
  if arr is None or arr.size == 0: return Info(0, 0, True, 0, True)
  a = np.asarray(arr)
  if dt.is_float:
    fin = a[np.isfinite(a)]
    specials = [float(v) for v in np.unique(a[~np.isfinite(a)])]
    if fin.size == 0: return _flags(Info(0, 0, True, 0, True), specials)
    ds = [_dbits(v) for v in np.unique(fin)]
    exact = all(d is not None for d in ds)
    return _flags(_float(dt, float(fin.min()), float(fin.max()), exact, max((d or 0) for d in ds) if exact else 0, True, True), specials)
  return Info(int(a.min()), int(a.max()), True, 0, True)


@dataclass
class Facts:
  """What a walk over one graph has learned beyond each node's own Info, shared by the Analyses of its scopes (the outer
  graph and every call body): the Info of each value met as a source (a STORE's value, reached again through its AFTER;
  a BITCAST's operand, for a round trip), and per opaque CALL the Info of what it writes into each arg slot. A generator
  run or a screen makes one; nothing outlives it."""
  values: dict[UOp, Info] = field(default_factory=dict)
  call_writes: dict[UOp, dict[int, Info]] = field(default_factory=dict)


def node_info(u: UOp, s: list[Info | None], params: dict[int, Info], inputs: dict[int, Any], facts: Facts | None = None) -> Info | None:
  """The Info of u from its sources' Infos (and the facts of the walk it is part of: none known when not given). Raises
  Unsafe when u's operands allow undefined behaviour."""
  op, dt = u.op, u.dtype
  if facts is None: facts = Facts()
  if op is Ops.CONST:
    v = u.arg
    if dt.is_float:
      if not math.isfinite(v): return _flags(Info(0, 0, True, 0, True), [v])
      d = _dbits(v)
      return _float(dt, v, v, d is not None, d or 0, True, True)
    return Info(int(v), int(v), True, 0, True)
  if op is Ops.BUFFER: return array_info(dt, inputs.get(u.arg.id))
  # a variable takes any value of its bounds (a BIND's value among them): the screen holds for every binding
  if op in (Ops.DEFINE_VAR, Ops.BIND): return Info(int(u.vmin), int(u.vmax), True, 0, False)
  if op is Ops.PARAM:
    if u.arg.slot in params: return params[u.arg.slot]
    raise Unsafe(f"PARAM slot {u.arg.slot} outside any call")
  if op in (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.SHRINK, Ops.FLIP, Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY): return s[0]
  if op is Ops.PAD: return _join(s[0], Info(0, 0, True, 0, True))
  if op is Ops.MULTI: return functools.reduce(_join, s)  # a tensor over devices holds its shards' values (side by side, or one replica's)
  if op is Ops.AFTER:
    ret = s[0]
    for dep in u.src[1:]:
      for e in _stores(dep):
        if e.op is Ops.STORE and (vi := facts.values.get(e.src[1])) is not None: ret = _join(ret, vi)
        elif e.op is Ops.CALL:
          base = storage_base(u.src[0])
          for slot, wi in facts.call_writes.get(e, {}).items():
            if storage_base(e.src[1 + slot]) is base: ret = _join(ret, wi)
    return ret
  if op in (Ops.STORE, Ops.GROUP, Ops.SINK, Ops.TUPLE, Ops.CALL): return None
  if op is Ops.GETTUPLE: return s[0]  # the walker puts the element's info here
  if op is Ops.REDUCE: return _reduce(u, s[0])
  if op in GroupOp.Elementwise: return _alu(u, s, facts)
  raise Unsafe(f"{op.name} is not analysed")


def _stores(dep: UOp) -> list[UOp]:
  """The STOREs and opaque CALLs an AFTER dependency performs."""
  out, stack = [], [dep]
  while stack:
    e = stack.pop()
    if e.op is Ops.STORE or is_opaque_call(e): out.append(e)
    elif e.op is Ops.GROUP: stack.extend(e.src)
  return out


def storage_base(u: UOp) -> UOp:
  """The storage node under views and AFTERs: what an opaque call's arg and an AFTER's storage are compared by."""
  while u.op in GroupOp.Movement or u.op in (Ops.AFTER, Ops.DETACH): u = u.src[0]
  return u


def kernel_writes(body: UOp, args: list[UOp], arg_infos: list[Info | None], inputs: dict[int, Any], facts: Facts) -> dict[int, Info]:
  """The Info of what an opaque kernel body (a kernel SINK over PARAMs) stores into each arg slot, its args having these
  Infos. Raises Unsafe for an index that may fall outside its arg, two args on one storage, a read of a written arg at an element other than the one
  the same STORE writes, and any op the analysis does not know."""
  if body.op is not Ops.SINK: raise Unsafe(f"opaque call body {body.op.name} is not analysed")
  nodes = body.toposort()
  written = {u.src[0].src[0].arg.slot for u in nodes if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.PARAM}
  bases = [storage_base(a) for a in args]
  if any(k >= len(args) for k in written): raise Unsafe(f"opaque call writes a PARAM past its {len(args)} args")
  # lowering lets an opaque call write any of its args: two args on one storage (two versions of it, or one twice) leave
  # the order of its reads and writes undefined
  if len(set(bases)) != len(bases): raise Unsafe("two args of an opaque call are on the same storage")
  store_idx = {u.src[0].src[1] for u in nodes if u.op is Ops.STORE}
  info: dict[UOp, Info | None] = {}
  out: dict[int, Info] = {}
  for u in nodes:
    if u.op in (Ops.SINK, Ops.END, Ops.RANGE) or u.dtype is dtypes.index:
      info[u] = None
    elif u.op is Ops.PARAM:
      if u.arg.slot >= len(args) or u.arg.size != args[u.arg.slot].size or u.dtype is not args[u.arg.slot].dtype:
        raise Unsafe(f"PARAM {u.arg.slot} does not match the opaque call's args")
      if (ai := arg_infos[u.arg.slot]) is None: raise Unsafe(f"arg {u.arg.slot} of an opaque call has no value info")
      info[u] = ai
    elif u.op is Ops.INDEX:
      if len(u.src) != 2 or u.src[0].op is not Ops.PARAM: raise Unsafe("opaque kernel INDEX is not INDEX(PARAM, idx)")
      i = u.src[1]
      if i.vmin < 0 or i.vmax >= u.src[0].arg.size: raise Unsafe(f"opaque kernel index in [{i.vmin}, {i.vmax}] outside PARAM {u.src[0].arg.slot}")
      info[u] = info[u.src[0]]
    elif u.op is Ops.LOAD:
      if len(u.src) != 1: raise Unsafe("gated LOAD in an opaque kernel is not analysed")
      ix = u.src[0]
      if ix.src[0].arg.slot in written and ix.src[1] not in store_idx: raise Unsafe("opaque kernel reads a written arg at another element")
      info[u] = info[ix]
    elif u.op is Ops.STORE:
      if len(u.src) != 2: raise Unsafe("gated STORE in an opaque kernel is not analysed")
      slot, vi = u.src[0].src[0].arg.slot, info[u.src[1]]
      if vi is None: raise Unsafe("opaque kernel stores a value without info")
      out[slot] = _join(out[slot], vi) if slot in out else vi
      info[u] = None
    elif u.op is Ops.CONST or u.op in GroupOp.Elementwise:
      si = [info[x] for x in u.src]
      if u.src and all(x is None for x in si):  # index arithmetic (a comparison of indexes, a WHERE of them)
        info[u] = None
        continue
      if any(x is None for x in si): raise Unsafe(f"{u.op.name} of an index in an opaque kernel is not analysed")
      for x, xi in zip(u.src, si): facts.values[x] = xi  # type: ignore[assignment]
      info[u] = node_info(u, si, {}, inputs, facts)
    else: raise Unsafe(f"{u.op.name} in an opaque kernel is not analysed")
  return out


def _reduce(u: UOp, a: Info) -> Info:
  if not reduce_accepts(u.dtype): raise Unsafe(f"REDUCE of {u.dtype.name}, which is storage only")  # the spec's reduce.dtype
  rop, n = u.arg
  cnt = math.prod(u.src[0].shape[:n])
  dt = u.dtype
  if rop is Ops.MAX: return a  # the largest of the values, NaN propagating (the registry's MAX)
  m = max(abs(a.lo), abs(a.hi))
  if rop is Ops.MUL and dt.is_float and m > 1 and cnt * math.log2(m) > math.log2(float_limit(dt)): raise Unsafe("float product may overflow")
  lo, hi = reduce_interval(rop, dt, (a.lo, a.hi), cnt)  # the registry's range of the reduction
  if dt.is_float:
    out = _float(dt, lo, hi, a.exact, a.dbits * cnt if rop is Ops.MUL else a.dbits)
    # a reduction combines its values pairwise by the registry's op: the special results of a pair of values (and the
    # values themselves, for one) are those of the whole, in any order (inf + -inf is NaN wherever they meet)
    return _flags(out, [*a.specials(), *special_results(rop, dt, [a, a])])
  return _int(dt, lo, hi)


def _alu(u: UOp, s: list[Info | None], facts: Facts) -> Info:
  op, dt = u.op, u.dtype
  a = s[0]
  sd = u.src[0].dtype
  assert a is not None
  if op is Ops.CAST: return _cast(dt, sd, a)
  if op is Ops.BITCAST:
    if sd.is_float:
      if not a.raw: raise Unsafe("bitcast of a computed float (signed zeros)")
      if a.nan: raise Unsafe("bitcast of a float that may be NaN (the spec leaves a NaN's payload bits open)")
      return _full(dt)
    if dt.is_float:
      inner = u.src[0]
      if inner.op is Ops.BITCAST and inner.src[0].dtype is dt and (ii := facts.values.get(inner.src[0])) is not None: return ii
      raise Unsafe("bitcast of an int to a float (denormals, NaN)")
    if dt.is_bool or sd.is_bool: raise Unsafe("bitcast of bool")
    return a if dt.min <= a.lo and a.hi <= dt.max else _full(dt)
  if (msg := dtype_error(op, u.src[-1].dtype)) is not None: raise Unsafe(msg)  # an op outside its dtype class has no meaning
  if dt.is_float or (op in GroupOp.Comparison and sd.is_float):
    return _float_alu(u, s)
  if op in GroupOp.Comparison: return Info(0, 1)
  if op is Ops.WHERE: return _join(s[1], s[2])
  if dt.is_bool: return Info(0, 1)
  ivs = [(x.lo, x.hi) for x in s if x is not None]
  if (why := undefined_in(op, dt, *ivs)) is not None: raise Unsafe(why)
  # the screen keeps shift counts inside the dtype's own width too: past it, a narrow int's value is tinyspec's choice
  if op in (Ops.SHL, Ops.SHR) and ivs[1][1] >= dt.bits: raise Unsafe(f"{op.name} by a range [{ivs[1][0]}, {ivs[1][1]}] past the width {dt.bits}")
  if op not in INTERVALS: raise Unsafe(f"{op.name} on {dt.name}")
  lo, hi = interval(op, dt, *ivs)  # the registry's bounds of the op's meaning (full range where it may wrap)
  return Info(int(lo), int(hi))


def _cast(dt: DType, sd: DType, a: Info) -> Info:
  lo, hi = cast_interval(sd, dt, (a.lo, a.hi))  # the registry's range of the conversion
  if dt.is_float:
    out = _float(dt, lo, hi, a.exact if sd.is_float else True, a.dbits if sd.is_float else 0)
    return _flags(out, [run(Ops.CAST, dt, v, sd) for v in a.specials()])  # NaN and infinities convert to themselves
  if sd.is_float:
    for v in a.specials():
      if (why := cast_undefined(v, sd, dt)) is not None: raise Unsafe(f"cast of {v} to {dt.name}: {why}")
    if a.specials(): return Info(0, 1)  # to bool: NaN and infinities are nonzero
    if not a.exact: raise Unsafe("cast of an inexact float to an integer")
    if (why := cast_undefined(a.lo, sd, dt) or cast_undefined(a.hi, sd, dt)) is not None:
      raise Unsafe(f"cast of floats in [{a.lo}, {a.hi}] to {dt.name}: {why}")
  if dt.is_bool or sd.is_float: return Info(int(lo), int(hi))
  return a if (lo, hi) == (a.lo, a.hi) else _full(dt)


def _float_alu(u: UOp, s: list[Info | None]) -> Info:
  op, dt = u.op, u.dtype
  a = s[0]
  b = s[1] if len(s) > 1 else None
  assert a is not None
  if op in GroupOp.Comparison:
    assert b is not None
    if not (a.exact and b.exact): raise Unsafe("comparison of inexact floats")
    return Info(0, 1)
  if op is Ops.WHERE:
    x, y = s[1], s[2]
    assert x is not None and y is not None
    out = _float(dt, min(x.lo, y.lo), max(x.hi, y.hi), x.exact and y.exact, max(x.dbits, y.dbits), x.raw and y.raw, passed=True)
    return _flags(out, [*x.specials(), *y.specials()])
  # the screen's margins: ranges near the points where an op's value is unbounded, NaN or far from exact
  if op is Ops.RECIP and a.lo <= 1e-3 and a.hi >= -1e-3: raise Unsafe("RECIP of a range near 0")
  if op is Ops.FDIV and b is not None and b.lo <= 1e-3 and b.hi >= -1e-3: raise Unsafe("FDIV by a range near 0")
  if op is Ops.SQRT and a.lo < 0: raise Unsafe("SQRT of a negative range")
  if op is Ops.LOG2 and a.lo < 1e-3: raise Unsafe("LOG2 of a range reaching below 1e-3")
  if op is Ops.EXP2 and (a.hi > 16 or a.lo < -30): raise Unsafe("EXP2 of a range past [-30, 16]")
  if op is Ops.SIN and max(abs(a.lo), abs(a.hi)) > 100: raise Unsafe("SIN of a large range")
  lo, hi = float_interval(op, dt, *((x.lo, x.hi) for x in s if x is not None))  # the registry's range of the exact result
  specials = special_results(op, dt, [x for x in s if x is not None])
  passed = op in (Ops.NEG, Ops.TRUNC, Ops.MAX)  # the result is an operand's value (negated, or an integer truncated)
  if op in GroupOp.Unary:
    return _flags(_float(dt, lo, hi, a.exact and op in (Ops.NEG, Ops.TRUNC), a.dbits if op is Ops.NEG else 0, passed=passed), specials)
  assert b is not None
  ex = a.exact and b.exact and op is not Ops.FDIV   # a quotient of exact values is rounded (1 / 3)
  return _flags(_float(dt, lo, hi, ex, a.dbits + b.dbits if op is Ops.MUL else max(a.dbits, b.dbits), passed=passed), specials)


class Analysis:
  """Infos of the nodes of one scope (the outer graph, or one call body bound to its args' Infos); facts: those of the
  walk the scope is part of (a new one when not given)."""

  def __init__(self, inputs: dict[int, Any], params: dict[int, Info] | None = None, facts: Facts | None = None):
    self.inputs, self.params = inputs, params or {}
    self.facts = Facts() if facts is None else facts
    self.cache: dict[UOp, Info | None] = {}

  def info(self, root: UOp) -> Info | None:
    """The Info of root; raises Unsafe for the first unsafe node under it."""
    if root in self.cache: return self.cache[root]
    stack: list[tuple[UOp, bool]] = [(root, False)]
    while stack:
      u, ready = stack.pop()
      if u in self.cache: continue
      srcs = u.src[1:] if u.op is Ops.CALL else u.src
      if not ready:
        stack.append((u, True))
        stack.extend((x, False) for x in srcs if x not in self.cache)
        continue
      if u.op is Ops.CALL:
        if is_opaque_call(u):
          self.facts.call_writes[u] = kernel_writes(u.src[0], list(u.src[1:]), [self.cache[x] for x in u.src[1:]], self.inputs, self.facts)
        self.cache[u] = None
        continue
      if u.op is Ops.GETTUPLE:
        self.cache[u] = self._gettuple(u)
        continue
      si = [self.cache[x] for x in u.src]
      for x, i in zip(u.src, si):
        if i is not None: self.facts.values[x] = i
      self.cache[u] = node_info(u, si, self.params, self.inputs, self.facts)
    return self.cache[root]

  def _gettuple(self, u: UOp) -> Info | None:
    c = u.src[0]
    if c.op is Ops.TUPLE: return self.info(c.src[u.arg])
    if not is_value_call(c): raise Unsafe("GETTUPLE of a non-call")
    key = ("body", c)
    if key not in self.cache:  # type: ignore[comparison-overlap]
      args = [self.info(a) for a in c.src[1:]]
      self.cache[key] = Analysis(self.inputs, {k: a for k, a in enumerate(args) if a is not None}, self.facts)  # type: ignore[index]
    return self.cache[key].info(c.src[0].src[u.arg])  # type: ignore[index, union-attr]


# ---- races of opaque calls, decided on the TENSOR graph ----
# Which storage an effect touches is a question about the graph's values, not about how a pipeline lowers it: a value
# is realized once per node, so two spellings of one value (x and DETACH(x); AFTER(view(s), d) and view(AFTER(s, d));
# GETTUPLE(TUPLE(.., v, ..), i) and v) share storage, and a value call's output is its body's output with the args in
# place of the PARAMs (docs/ir.md), so an output may be the very storage it was given. These tables write each value
# in that one spelling with IR rewrites only: a broken pass cannot change what the generator decides.

def _bind_params(body: UOp, args: tuple[UOp, ...]) -> UOp | None:
  """body with each PARAM slot k it owns (not those of a nested call's body) replaced by args[k], flat; None when a
  PARAM has no arg of its size (a malformed call: left as it is, the spec check names it)."""
  mapping: dict[UOp, UOp] = {}
  for u in walk((body,), lambda u: u.src[1:] if u.op is Ops.CALL else u.src):
    if u.op is not Ops.PARAM: continue
    if u.arg.slot >= len(args) or args[u.arg.slot].size != u.arg.size: return None
    a = args[u.arg.slot]
    mapping[u] = a if a.shape == (u.arg.size,) else a.reshape((u.arg.size,))
  return substitute(body, mapping, into_calls=False)


def _output_of(g: UOp, call: UOp) -> UOp | None:
  outs = call.src[0].src
  return _bind_params(outs[g.arg], call.src[1:]) if 0 <= g.arg < len(outs) else None


pm_one_spelling = PatternMatcher([
  ("drop_detach", UPat(Ops.DETACH, src=(UPat.var("x"),)), lambda x: x),
  ("after_under_view", UPat(Ops.AFTER, src=(UPat(GroupOp.Movement, name="v"),), allow_any_len=True, name="a"),
   lambda a, v: v.replace(src=(a.replace(src=(v.src[0], *a.src[1:])),))),
  ("element_of_tuple", UPat(Ops.GETTUPLE, src=(UPat(Ops.TUPLE, name="t"),), name="g"),
   lambda g, t: t.src[g.arg] if 0 <= g.arg < len(t.src) else None),
], "pm_one_spelling")
pm_call_outputs = PatternMatcher([
  ("output_of_value_call", UPat(Ops.GETTUPLE, src=(UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call"),), name="g"),
   _output_of),
], "pm_call_outputs")
pm_through_calls = pm_one_spelling + pm_call_outputs


def opaque_race(root: UOp) -> str | None:
  """unordered_effects of the graph in its one spelling (pm_one_spelling), once with its value calls kept and once seen
  through them (pm_through_calls): through a call, its output may be the very storage it was given, and two args on
  distinct nodes may be one value there."""
  if not any(is_opaque_call(u) for u in root.toposort()): return None
  if (r := unordered_effects(graph_rewrite(root, pm_one_spelling))) is not None: return r
  return unordered_effects(graph_rewrite(root, pm_through_calls))


def unordered_effects(root: UOp) -> str | None:
  """An opaque CALL and another effect (a STORE, another opaque CALL) on the same storage with no order between them.
  Lowering lets an opaque call write any of its args, so each effect on that storage must read the version the other
  leaves: an AFTER of the other must stand in the arg (or STORE target) on that storage of one of the two. A value an
  arg computes counts as storage of its own (it is realized into a buffer that the call may write)."""
  nodes = root.toposort()
  calls = [u for u in nodes if is_opaque_call(u)]
  if not calls: return None
  touched: dict[UOp, list[tuple[UOp, UOp]]] = {}  # storage -> (effect, its operand on that storage)
  for u in nodes:
    if u.op is Ops.STORE and u.src: touched.setdefault(storage_base(u.src[0]), []).append((u, u.src[0]))
    elif u in calls:
      for a in u.src[1:]: touched.setdefault(storage_base(a), []).append((u, a))
  for c in calls:
    for a in c.src[1:]:
      for e, ea in touched.get(storage_base(a), []):
        if e is c or e in a.toposort() or c in ea.toposort(): continue
        return f"an opaque CALL and a {e.op.name} on {storage_base(a).op.name} have no order between them"
  return None


def unsafe_reason(root: UOp, inputs: dict[int, Any]) -> str | None:
  """Why the TENSOR graph may hit undefined behaviour on these inputs, or None when it cannot. (Kernel-level cases,
  whose loops may read what they write, are screened by fuzz.generate.kernel_safety.kernel_unsafe_reason.)"""
  try:
    if (race := opaque_race(root)) is not None: return race
    an = Analysis(inputs)
    for u in ([root] if root.op is not Ops.SINK else list(root.src)):
      an.info(u)
      for x in u.src if u.op in (Ops.STORE, Ops.GROUP) else ():
        an.info(x)
    return None
  except Unsafe as e:
    return str(e)
  except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
    return f"malformed: {type(e).__name__}: {e}"

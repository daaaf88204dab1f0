"""Rules of kernel bodies and programs: RANGE, INDEX and LOAD (a kernel's INDEX read as a value is its LOAD), a
program's LINEAR (sizes and folded vector loads not listed, IF blocks as gated STOREs), PROGRAM and SPECIAL."""
from __future__ import annotations

from typing import Any

from tinyspec.bridge.tinygrad.dtype_names import is_weak
from tinyspec.bridge.tinygrad.indexing import folded_vector_part, index_and_gate, vector_length
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.dtype import dtypes
from tinyspec.uop import AxisType, Ops, RangeArg, SourceArg, UOp


AXIS = {"LOOP": AxisType.LOOP, "WEAK": AxisType.LOOP, "GLOBAL": AxisType.GLOBAL, "REDUCE": AxisType.REDUCE,
        "UPCAST": AxisType.UNROLL, "UNROLL": AxisType.UNROLL, "GROUP_REDUCE": AxisType.REDUCE}


def r_range(tr: Translator, u: Any, want: Any) -> UOp:
  *axis, kind = u.arg
  if kind.name == "DEVICE" and tr.shard is not None:   # a launch on one device: the runtime binds the axis to its number
    tr.seen(*(x for b in u.src for x in b.toposort()))   # the device count, folded with it
    return UOp.const(dtypes.index if is_weak(u.dtype) else tr.dtype(u), tr.shard)
  k = AXIS.get(kind.name)
  if k is None: raise Untranslatable("RANGE", tr.stage, f"axis type {kind.name}")
  # a9069c17's UOp.loop: RANGE(NOOP), dtype void, a do-while loop header with no induction variable (its END carries the
  # condition); tinyspec's RANGE counts from 0 to a bound, and a void one would be an ill-formed graph, not this loop
  if u.dtype.name == "void": raise Untranslatable("RANGE", tr.stage, "a loop header with no bound (void RANGE(NOOP), UOp.loop)")
  key = tuple(axis)
  if key not in tr.axes: tr.axes[key] = axis[0] if len(axis) == 1 and axis[0] not in tr.axes.values() else len(tr.axes) + 1000
  dt = dtypes.index if is_weak(u.dtype) else tr.dtype(u)
  return UOp(Ops.RANGE, dt, (tr(u.src[0], dt),), RangeArg(tr.axes[key], k))


def r_index(tr: Translator, u: Any, want: Any) -> UOp:
  idx, gate = index_and_gate(tr, u)
  if gate is not None: raise Untranslatable("INDEX", tr.stage, "a gated INDEX whose user is neither a LOAD nor a STORE")
  return idx


def r_load(tr: Translator, u: Any, want: Any) -> UOp:
  idx, gate = index_and_gate(tr, u.src[0])
  rest = tuple(tr.value(s, idx.dtype if i == 0 else dtypes.bool) for i, s in enumerate(u.src[1:]))
  if gate is not None and not rest: rest = (UOp.const(idx.dtype, 0), gate)
  return UOp(Ops.LOAD, idx.dtype, (idx, *rest))


def r_linear(tr: Translator, u: Any, want: Any) -> UOp:
  """A program's instruction list. A weak CONST every user of which is a CAST is folded into those CASTs (each becomes a
  CONST of its target dtype, listed where the CAST was), so it is not listed itself; duplicates after folding go."""
  users: dict[Any, list] = {}
  for x in u.src:
    for s in x.src: users.setdefault(s, []).append(x)
  size_only: set = set()   # a PARAM's or BUFFER's size (and the weak CONST under its CAST): folded into their args
  for s in reversed(u.src):
    us = users.get(s, [])
    if us and all(x.op.name in ("PARAM", "BUFFER") or x in size_only or vector_length(x, s, users) for x in us): size_only.add(s)
  gate_blocks(tr, u)
  out: dict[UOp, None] = {}
  for s in u.src:
    if s.op.name in ("IF", "ENDIF"):   # their meaning is in the gates of the STOREs they enclose
      tr.seen(s)
      continue
    if s in size_only:
      tr.seen(s)
      continue
    if folded_vector_part(s, users):   # a vector load read lane by lane: each lane read is a load of its element
      tr.seen(s)
      continue
    if s.op.name == "CONST" and is_weak(s.dtype) and users.get(s) and all(x.op.name == "CAST" for x in users[s]):
      tr.seen(s)
      continue
    want = tr.dtype(users[s][0]) if s.op.name == "CONST" and is_weak(s.dtype) and users.get(s) else None
    x = tr(s, want)
    # a rule that spells one tinygrad op with several tinyspec ops (MULACC, FLOORDIV, ...) lists its inner nodes first
    for y in x.toposort(gate=lambda y: y not in out):
      if y is not x and y not in out and y.op not in (Ops.SINK,): out[y] = None
    out[x] = None
  return UOp(Ops.LINEAR, dtypes.void, tuple(out))


def gate_blocks(tr: Translator, linear: Any) -> None:
  """IF(cond, ...) ... ENDIF(IF) in a program's LINEAR: the instructions between them run only where cond holds (tinygrad's
  linearizer wraps a STORE whose gate it cannot put in its index so). tinyspec's program has no IF: each STORE in a block
  is that STORE gated by the AND of the conditions of the blocks it is in, STORE(INDEX, value, cond), set as the
  STORE's translation before anything reads it. A value in a block is computed whether or not the gate holds, which
  only a LOAD (it may read out of bounds) or another effect could tell: those are refused."""
  conds: list[Any] = []
  for s in linear.src:
    name = s.op.name
    if name == "IF": conds.append(s.src[0])
    elif name == "ENDIF":
      if not conds: raise Untranslatable("ENDIF", tr.stage, "an ENDIF with no IF open")
      conds.pop()
    elif conds and name == "STORE":
      st = tr(s)
      gate = None
      for c in conds:
        g = tr.value(c, dtypes.bool)
        gate = g if gate is None else UOp(Ops.AND, dtypes.bool, (gate, g))
      if len(st.src) > 2: gate = UOp(Ops.AND, dtypes.bool, (st.src[2], gate))
      tr.memo[(s, None, tr.shard)] = UOp(Ops.STORE, dtypes.void, (st.src[0], st.src[1], gate))
    elif conds and name in ("LOAD", "ATOMIC", "BARRIER", "CUSTOM", "CUSTOMI"):
      raise Untranslatable(name, tr.stage, f"a {name} inside an IF block (only STOREs are gated by it)")
  if conds: raise Untranslatable("IF", tr.stage, "an IF with no ENDIF")


def r_if(tr: Translator, u: Any, want: Any) -> UOp:
  raise Untranslatable(u.op.name, tr.stage, f"{u.op.name} outside a program's LINEAR")


def r_program(tr: Translator, u: Any, want: Any) -> UOp:
  """PROGRAM(sink, LINEAR, SOURCE[, BINARY]) with a ProgramInfo -> PROGRAM(sink, LINEAR, SOURCE(c)) named; BINARY dropped
  (it is the compiled SOURCE)."""
  inner = Translator(tr.translation, tr.stage, kernel=True, shard=tr.shard, scope=tr.scope)
  sink, lin = inner(u.src[0]), inner(u.src[1])
  tr.seen(*u.src[2:])
  name = u.arg.name
  src = [UOp(Ops.SOURCE, dtypes.void, (), SourceArg("c", name, s.arg)) for s in u.src[2:] if s.op.name == "SOURCE"]
  return UOp(Ops.PROGRAM, dtypes.void, (sink, lin, *src[:1]), name)


def r_special(tr: Translator, u: Any, want: Any) -> UOp:
  dt = dtypes.index if is_weak(u.dtype) else tr.dtype(u)
  return UOp(Ops.SPECIAL, dt, (tr(u.src[0], dt),), str(u.arg))

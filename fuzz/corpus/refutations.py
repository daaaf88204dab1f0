"""Refuted rewrite rules as corpus entries: a counterexample of tinyspec prove becomes a one-kernel KERNEL_GRAPH case
whose lowering through the rule changes the stored value, replayed like any fuzz finding."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fuzz.corpus.store import write_entry
from fuzz.generate.case import Case
from tinyspec.dtype import DType, dtypes
from tinyspec.prove.prover import GATE_OPS, Counterexample, RuleRef, canonical_slot
from tinyspec.uop import Ops, UOp, substitute


def _storage_dtype(dt: DType) -> DType: return dtypes.int64 if dt is dtypes.index else dt


def counterexample_case(ref: RuleRef, cx: Counterexample) -> Case:
  """A one-kernel KERNEL_GRAPH that loads the slot values, clamps each to its bounds (so the guard sees the same
  vmin and vmax) and stores the rewritten expression: lowering it through the rule changes the stored value."""
  params, bufs, inputs, consts = [], [], {}, {}
  out_dt = _storage_dtype(cx.before.dtype)
  params.append(UOp.param(0, out_dt, 1))
  bufs.append(UOp.buffer(out_dt, 1, id=1))
  zero = UOp.const(dtypes.index, 0)
  for i, (s, v) in enumerate(cx.slots):
    sdt = _storage_dtype(s.dtype)
    p = UOp.param(i + 1, sdt, 1)
    params.append(p)
    bufs.append(UOp.buffer(sdt, 1, id=i + 2))
    inputs[i + 2] = np.array([v], dtype=sdt.np)
    x = p.index(zero).load()
    if s.dtype is dtypes.index: x = x.cast(dtypes.index)
    if s.dtype.kind != "b":
      c = lambda n, d=s.dtype: UOp.const(d, n)
      x = x.maximum(c(s.lo)).alu(Ops.NEG).maximum(c(-s.hi)).alu(Ops.NEG) if (s.lo, s.hi) != (s.dtype.min, s.dtype.max) else x
    # each slot's own node is replaced when the counterexample keeps them: a slot valued like a constant of the rule
    # (x % c at x == c) must not take the constant's place too
    consts[canonical_slot(s) if cx.over_slots is not None else UOp.const(s.dtype, v)] = x
  expr = substitute(cx.before if cx.over_slots is None else cx.over_slots, consts)
  if expr.dtype is dtypes.index: expr = expr.cast(dtypes.int64)
  ksink = UOp(Ops.SINK, src=(params[0].index(zero).store(expr),))
  call = UOp(Ops.CALL, src=(ksink, *bufs), arg="k")
  root = UOp(Ops.SINK, src=(bufs[0].after(call),))
  return Case(root, inputs, {"callify": "inline", "realize": "minimal", "opts": None}, "kernel")


def write_counterexample(corpus: str | Path, ref: RuleRef, cx: Counterexample) -> str | None:
  """Store a value counterexample as a corpus entry (signature parity/<pass>/<rule>); None for effects and loads."""
  if cx.before.op is Ops.STORE or any(u.op in GATE_OPS for u in cx.before.toposort()): return None
  try: case = counterexample_case(ref, cx)
  except Exception: return None  # the counterexample is still printed; only its kernel form failed to build
  msg = f"{ref.qualname} ({ref.rule.location}) is unsound, found by tinyspec prove:\n{cx.describe()}"
  path, _ = write_entry(corpus, case, ("parity", ref.pass_name, ref.rule.name), message=msg)
  return str(path)

"""The metamorphic gradient oracle: gradients through value calls equal gradients of the callify-inlined graph."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fuzz.check.agree import float_tolerance, floats_agree, output_errors, scale_of
from tinyspec.autograd import GradientError, gradient, graph_nodes
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Trace
from tinyspec.lower.callify import CALLIFY
from tinyspec.rewrite import PatternMatcher
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp


def float_entries(root: UOp) -> list[UOp]:
  """The float values a loss is built from: root's SINK entries (or root) that have a shape."""
  return [e for e in (root.src if root.op is Ops.SINK else (root,)) if e.dtype.is_float and e.shape_ok and e.shape is not None]


def float_buffers(entries: Sequence[UOp]) -> list[UOp]:
  """The float BUFFERs the entries read outside call bodies: what gradients are taken w.r.t."""
  return [u for u in graph_nodes(entries) if u.op is Ops.BUFFER and u.dtype.is_float]


def loss_term(e: UOp) -> UOp:
  """The value an entry enters the loss as: itself, or an fp8 entry converted to float32 (fp8 is storage only: the loss
  cannot multiply it, and its gradient flows back through the CAST)."""
  return e.cast(dtypes.float32) if e.dtype.storage_only else e


def weight_buffers(entries: Sequence[UOp], rng: np.random.Generator, feed: dict) -> list[UOp]:
  """One fresh BUFFER of weights per entry, in its shape and its loss_term's dtype, uniform in [-1, 1) from rng, their
  data put in feed."""
  out = []
  for e in entries:
    dt = loss_term(e).dtype
    wb = UOp.buffer(dt, e.size, e.device or "CPU")
    feed[wb.arg.id] = rng.uniform(-1.0, 1.0, size=e.size).astype(dt.np)
    out.append(wb.reshape(e.shape) if e.shape != (e.size,) else wb)
  return out


def weighted_loss(entries: Sequence[UOp], weights: Sequence[UOp]) -> UOp:
  """sum_i sum(entry_i * weight_i), in float64: entries of several float types add up there."""
  total = None
  for e, w in zip(entries, weights):
    t = loss_term(e).alu(Ops.MUL, w)
    t = t.reduce(Ops.ADD, len(e.shape)) if e.shape else t
    t = t if t.dtype is dtypes.float64 else t.cast(dtypes.float64)
    total = t if total is None else total + t
  assert total is not None, "a loss needs at least one entry"
  return total


def call_gradient_mismatches(root: UOp, inputs: dict | None = None, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6,
                             rules: PatternMatcher | None = None) -> list[str]:
  """Metamorphic oracle: gradients through value calls equal gradients of the callify-inlined graph.

  root is a tensor graph (a SINK or a value); inputs are its {BUFFER id: array}. The loss is sum(out_i * w_i) over
  root's float value entries, with fixed random weights (from seed) read from fresh BUFFERs; gradients are taken
  w.r.t. every float BUFFER the entries read outside call bodies, once on root and once on callify's inlined root,
  and both are evaluated with the reference evaluator. Returns the mismatches in plain words (empty when they
  agree, and when root has no float output or reads no float buffer). A graph with something on a gradient path that
  has no gradient (a partial assign, an opaque CALL's effect) gives [] when both sides say so, and a mismatch when
  only one side does. rules: the gradient rule table (None: tinyspec.autograd.pm_gradient); both sides use it, so
  a wrong local derivative agrees with itself here (fuzz.check.numeric_grad is the oracle for that)."""
  entries = float_entries(root)
  bufs = float_buffers(entries)
  if not entries or not bufs: return []
  feed = dict(inputs or {})
  wbufs = weight_buffers(entries, np.random.default_rng(seed), feed)
  inlined = CALLIFY.run(UOp(Ops.SINK, src=tuple(entries)), LowerOptions(callify="inline"), Trace())
  sides: list[Any] = []
  for ents in (entries, inlined.src):
    try: sides.append(gradient(weighted_loss(ents, wbufs), bufs, rules))
    except GradientError as e: sides.append(e)
  errs = [isinstance(x, GradientError) for x in sides]
  if all(errs): return []
  if any(errs):
    return [f"{'through calls' if errs[0] else 'inlined'} the gradient is undefined ({sides[errs.index(True)]}) but "
            f"{'inlined' if errs[0] else 'through calls'} it is defined"]
  sinks = [UOp(Ops.SINK, src=tuple(gs)) for gs in sides]
  out_call, out_inl = (evaluate(g, feed) for g in sinks)
  # the two sides sum a buffer's contributions in their own order: each within the roundings its gradient graph counts
  # (fuzz.check.agree), so a float16 gradient is compared at float16's precision, never tighter than rtol and atol
  errs = [max(a, b) for a, b in zip(*(output_errors(g) for g in sinks))]
  bad = []
  for b, x, y, err in zip(bufs, out_call, out_inl, errs):
    x, y = np.asarray(x, np.float64).reshape(-1), np.asarray(y, np.float64).reshape(-1)
    # where both sides are inf or NaN the gradient is undefined there (sqrt at 0 times a zero from the other side of a
    # WHERE is NaN one way and inf the other): only a finite side disagreeing is a mismatch
    undefined = ~np.isfinite(x) & ~np.isfinite(y)
    x, y = np.where(undefined, 0.0, x), np.where(undefined, 0.0, y)
    tol = float_tolerance(b.dtype, err)
    rt, at = (rtol, atol) if tol <= rtol else (tol, max(atol, tol * (1 + scale_of(x))))
    if not bool(np.all(floats_agree(x, y, rt, at))):
      i = int(np.nanargmax(np.where(np.isnan(x) != np.isnan(y), np.inf, np.abs(x - y))))
      bad.append(f"gradient w.r.t. BUFFER {b.arg.id}: through calls {x[i]!r} but inlined {y[i]!r} at element {i}")
  return bad

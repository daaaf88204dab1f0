"""Deliberately broken copies of the reference pipeline, one real rule changed in each: the fuzzer's own test bed.

`broken_pipeline(bug)` is the reference pipeline with one rule of one pass swapped (PatternMatcher.replace_rule).
The pass's run is wrapped so that, while it runs, the module-level table it rewrites with is the broken copy; the
original table is back when the pass returns, so other pipelines in the same process are untouched.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.rewrite import PatternMatcher
from tinyspec.uop import GroupOp, Ops, UOp


@dataclass(frozen=True)
class SeededBug:
  name: str
  pass_name: str
  module: str        # the module whose global table the pass rewrites with
  table: str         # that global's name
  rule: str          # the rule changed
  fn: Callable       # its broken function
  description: str


def reference_passes() -> list[Pass]:
  from tinyspec.lower.pipeline import PASSES
  return list(PASSES)


def swap_rule(p: Pass, module: str, table: str, rule: str, fn: Callable) -> Pass:
  """A copy of pass p whose run rewrites with `module.table` where `rule` has function fn."""
  mod = importlib.import_module(module)
  old: PatternMatcher = getattr(mod, table)
  new = old.replace_rule(rule, fn)
  def run(root: UOp, options: LowerOptions, trace: Trace) -> UOp:
    saved = getattr(mod, table)
    setattr(mod, table, new)
    try: return p.run(root, options, trace)
    finally: setattr(mod, table, saved)
  matchers = tuple(new if any(r.name == rule for r in m.rules) else m for m in p.matchers)
  return Pass(p.name, p.stage_in, p.stage_out, run, matchers)


def broken_pipeline(bug: SeededBug, passes: list[Pass] | None = None) -> list[Pass]:
  passes = reference_passes() if passes is None else passes
  if bug.pass_name not in {p.name for p in passes}: raise KeyError(f"no pass {bug.pass_name!r} in the pipeline")
  return [swap_rule(p, bug.module, bug.table, bug.rule, bug.fn) if p.name == bug.pass_name else p for p in passes]


# ---- the broken rule functions ----
def mod_below_divisor_off_by_one(x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  return x if -abs(c.arg) < x.vmin and x.vmax <= abs(c.arg) else None  # <= : x == c is folded to x, not 0


def _fold_cast_source_dtype(x: UOp, c: UOp) -> UOp | None:
  from tinyspec.lower.simplify import is_int_or_bool
  if not (is_int_or_bool(x) and is_int_or_bool(c)): return None
  return UOp.const(c.dtype, c.arg)  # the constant keeps the dtype it is cast from


def _pad_without_gate(v: UOp) -> UOp:
  from tinyspec.lower.indexing import view_indices, imax, imin, iadd, vindex
  x = v.src[0].src[0]
  inner = []
  for i, (o, n), d in zip(view_indices(v), v.src[0].arg, x.shape):
    j = iadd(i, -o)
    if o > 0: j = imax(j, 0)
    if o + d < n: j = imin(j, d - 1)
    inner.append(j)
  return vindex(x, inner)  # reads the clamped element where the padded tensor is zero


def _permute_forward_map(v: UOp) -> UOp:
  from tinyspec.lower.indexing import view_indices, vindex
  x, perm = v.src[0].src[0], v.src[0].arg
  idx = view_indices(v)
  new = [None] * len(perm)
  for i, p in enumerate(perm): new[i] = idx[p]  # the permutation where its inverse belongs
  return vindex(x, new)


def _gettuple_next_output(g: UOp, call: UOp) -> UOp:
  from tinyspec.lower.callify import substitute_params
  body = call.src[0]
  return substitute_params(body.src[(g.arg + 1) % len(body.src)], call.src[1:])


def _reduce_skips_last(red: UOp) -> UOp | None:
  from tinyspec.uop import substitute
  from tinyspec.lower.lower_reduce import reduce_to_acc
  if isinstance(red.arg, tuple): return None
  rr = red.src[1:]
  short = {r: UOp.range(max(0, r.src[0].arg - 1), r.arg.axis, r.arg.kind) for r in rr if r.op is Ops.RANGE and r.src[0].op is Ops.CONST}
  if not short: return reduce_to_acc(red)
  body = substitute(red.src[0], short)
  return reduce_to_acc(red.replace(src=(body, *(short.get(r, r) for r in rr))))


def _after_kept_over_view(call: UOp) -> UOp | None:
  from tinyspec.uop import storage_of
  from tinyspec.lower.rangeify import reshape_base
  if call.src[0].op is Ops.TUPLE: return None
  new = []
  for a in call.src[1:]:
    b = reshape_base(a)
    if a.op is Ops.RESHAPE and b.op is Ops.AFTER and storage_of(b).op in GroupOp.Storage:
      chain = []
      while a is not b: chain.append(a); a = a.src[0]  # noqa: E702
      v = b.src[0]
      for r in reversed(chain): v = r.replace(src=(v,))
      a = b.replace(src=(v, *b.src[1:]))  # the AFTER moves above the view instead of replacing it: the arg is still a view
    new.append(a)
  if all(x is y for x, y in zip(new, call.src[1:])): return None
  return call.replace(src=(call.src[0], *new))


def _after_dropped(a: UOp, v: UOp) -> UOp:
  return v  # the view without the AFTER: reads of it no longer wait for the assign


SEEDED_BUGS: list[SeededBug] = [
  SeededBug("mod_off_by_one", "simplify", "tinyspec.lower.simplify", "SIMPLIFY_PM", "mod_below_divisor", mod_below_divisor_off_by_one,
            "x % c folds to x when x's bounds reach c (an off-by-one in a div/mod fold)"),
  SeededBug("pad_gate_dropped", "rangeify", "tinyspec.lower.rangeify", "INDEXING", "index_through_pad", _pad_without_gate,
            "PAD loads the clamped element instead of zero (a dropped PAD gate)"),
  SeededBug("permute_wrong_map", "rangeify", "tinyspec.lower.rangeify", "INDEXING", "index_through_permute", _permute_forward_map,
            "PERMUTE indexes with the permutation instead of its inverse"),
  SeededBug("gettuple_wrong_output", "callify", "tinyspec.lower.callify", "INLINE", "inline_gettuple_of_call", _gettuple_next_output,
            "GETTUPLE(call, i) inlines output i + 1"),
  SeededBug("reduce_skips_last", "lower_reduce", "tinyspec.lower.lower_reduce", "lower_reduce_pm", "reduce_to_accumulator", _reduce_skips_last,
            "the accumulator loop stops one element early"),
  SeededBug("after_dependency_dropped", "rangeify", "tinyspec.lower.rangeify", "PREPARE", "after_through_view", _after_dropped,
            "AFTER(view(x), store) becomes view(x): the assign is lost"),
  SeededBug("view_as_kernel_arg", "rangeify", "tinyspec.lower.rangeify", "CALL_ARGS", "call_arg_after_view", _after_kept_over_view,
            "a kernel arg RESHAPE(AFTER(buf, kernels)) becomes AFTER(RESHAPE(buf), kernels): the view is left as a call arg"),
  SeededBug("cast_fold_wrong_dtype", "simplify", "tinyspec.lower.simplify", "SIMPLIFY_PM", "fold_const_cast", _fold_cast_source_dtype,
            "CAST(CONST) folds to a constant of the source dtype"),
]

BUGS_BY_NAME = {b.name: b for b in SEEDED_BUGS}

__all__ = ["SeededBug", "SEEDED_BUGS", "BUGS_BY_NAME", "broken_pipeline", "swap_rule", "reference_passes", "mod_below_divisor_off_by_one"]

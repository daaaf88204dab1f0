"""Deliberately broken copies of the reference pipeline, one real rule changed in each: the fuzzer's own test bed.

`broken_pipeline(bug)` is the reference pipeline with one rule of one pass swapped: that pass is replaced by
`Pass.replace_rule(rule, fn)`, a new Pass whose tables hold the broken rule, and its run rewrites with those tables.
Nothing is swapped in any module: the reference passes and the pass modules' tables stay as they are, and a broken
pipeline is rebuilt from the bug's name alone (`broken_pipeline("mod_off_by_one")`, e.g. in a worker process).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tinyspec.lower.base import Pass
from tinyspec.lower.callify import substitute_params
from tinyspec.lower.indexing import iadd, imax, imin, vindex, view_indices
from tinyspec.lower.lower_reduce import reduce_to_acc
from tinyspec.lower.pipeline import PASSES
from tinyspec.lower.rangeify import reshape_base
from tinyspec.lower.simplify import is_int_or_bool
from tinyspec.uop import GroupOp, Ops, UOp, is_value_call, storage_of, substitute


@dataclass(frozen=True)
class SeededBug:
  name: str
  pass_name: str
  rule: str          # the rule changed, in whichever of the pass's tables holds it
  fn: Callable       # its broken function
  description: str


def reference_passes() -> list[Pass]:
  return list(PASSES)


def broken_pipeline(bug: SeededBug | str, passes: list[Pass] | None = None) -> list[Pass]:
  """passes (default: the reference pipeline) with the bug's pass replaced by a copy holding the broken rule."""
  if isinstance(bug, str): bug = BUGS_BY_NAME[bug]
  passes = reference_passes() if passes is None else passes
  if bug.pass_name not in {p.name for p in passes}: raise KeyError(f"no pass {bug.pass_name!r} in the pipeline")
  return [p.replace_rule(bug.rule, bug.fn) if p.name == bug.pass_name else p for p in passes]


# ---- the broken rule functions ----
def mod_below_divisor_off_by_one(x: UOp, c: UOp) -> UOp | None:
  if c.arg == 0: return None
  return x if -abs(c.arg) < x.vmin and x.vmax <= abs(c.arg) else None  # <= : x == c is folded to x, not 0


def _fold_cast_source_dtype(x: UOp, c: UOp) -> UOp | None:
  if not (is_int_or_bool(x) and is_int_or_bool(c)): return None
  return UOp.const(c.dtype, c.arg)  # the constant keeps the dtype it is cast from


def clamped_through_pad(v: UOp) -> UOp:
  """The element of a PAD view v's source at v's indices clamped into the source: what a pad rule that forgets its
  gate addresses (the edge element where the padded tensor is zero)."""
  x = v.src[0].src[0]
  inner = []
  for i, (o, n), d in zip(view_indices(v), v.src[0].arg, x.shape):
    j = iadd(i, -o)
    if o > 0: j = imax(j, 0)
    if o + d < n: j = imin(j, d - 1)
    inner.append(j)
  return vindex(x, inner)


def _pad_without_gate(v: UOp) -> UOp:
  return clamped_through_pad(v)  # reads the clamped element where the padded tensor is zero


def _permute_forward_map(v: UOp) -> UOp:
  x, perm = v.src[0].src[0], v.src[0].arg
  idx = view_indices(v)
  new = [None] * len(perm)
  for i, p in enumerate(perm): new[i] = idx[p]  # the permutation where its inverse belongs
  return vindex(x, new)


def _gettuple_next_output(g: UOp, call: UOp) -> UOp:
  body = call.src[0]
  return substitute_params(body.src[(g.arg + 1) % len(body.src)], call.src[1:])


def _reduce_skips_last(red: UOp) -> UOp | None:
  if isinstance(red.arg, tuple): return None
  rr = red.src[1:]
  short = {r: UOp.range(max(0, r.src[0].arg - 1), r.arg.axis, r.arg.kind) for r in rr if r.op is Ops.RANGE and r.src[0].op is Ops.CONST}
  if not short: return reduce_to_acc(red)
  body = substitute(red.src[0], short)
  return reduce_to_acc(red.replace(src=(body, *(short.get(r, r) for r in rr))))


def _after_kept_over_view(call: UOp) -> UOp | None:
  if is_value_call(call): return None
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
  SeededBug("mod_off_by_one", "simplify", "mod_below_divisor", mod_below_divisor_off_by_one,
            "x % c folds to x when x's bounds reach c (an off-by-one in a div/mod fold)"),
  SeededBug("pad_gate_dropped", "rangeify", "index_through_pad", _pad_without_gate,
            "PAD loads the clamped element instead of zero (a dropped PAD gate)"),
  SeededBug("permute_wrong_map", "rangeify", "index_through_permute", _permute_forward_map,
            "PERMUTE indexes with the permutation instead of its inverse"),
  SeededBug("gettuple_wrong_output", "callify", "inline_gettuple_of_call", _gettuple_next_output,
            "GETTUPLE(call, i) inlines output i + 1"),
  SeededBug("reduce_skips_last", "lower_reduce", "reduce_to_accumulator", _reduce_skips_last,
            "the accumulator loop stops one element early"),
  SeededBug("after_dependency_dropped", "rangeify", "after_through_view", _after_dropped,
            "AFTER(view(x), store) becomes view(x): the assign is lost"),
  SeededBug("view_as_kernel_arg", "rangeify", "call_arg_after_view", _after_kept_over_view,
            "a kernel arg RESHAPE(AFTER(buf, kernels)) becomes AFTER(RESHAPE(buf), kernels): the view is left as a call arg"),
  SeededBug("cast_fold_wrong_dtype", "simplify", "fold_const_cast", _fold_cast_source_dtype,
            "CAST(CONST) folds to a constant of the source dtype"),
]

BUGS_BY_NAME = {b.name: b for b in SEEDED_BUGS}

__all__ = ["SeededBug", "SEEDED_BUGS", "BUGS_BY_NAME", "broken_pipeline", "reference_passes", "mod_below_divisor_off_by_one"]

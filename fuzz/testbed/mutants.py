"""Mutants of the lowering, the renderers and the gradient rules: how well the fuzzer finds and explains small mistakes.

Each mutant is one small, realistic mistake in one place, and is built from its name alone (`MUTANTS_BY_NAME[name]`),
so a worker process or a bench run can rebuild it. Nothing is swapped in any module: a mutant is a new list of passes
or a new rule table, and the reference pipeline, the renderers and autograd.pm_gradient stay as they are.

Three kinds, by where the mistake is:
- "pass rule": one rule of one pass of tinyspec.lower.pipeline.PASSES, replaced with `Pass.replace_rule(rule, fn)`,
  the mechanism of fuzz.testbed.seeded_bugs. `pipeline()` is the reference pipeline with that pass replaced.
- "renderer": one method of a renderer class (CStyleRenderer's methods reach both languages; an OpenCL-only mutant
  changes OpenCLRenderer alone). The mutant renderer is a subclass of the real one with that method replaced, and
  `pipeline()` is the reference pipeline with its render pass replaced by one that renders with the subclass: the
  runtimes run the SOURCE the render pass wrote (the CPU runtime every C PROGRAM, the OpenCL runtime every OpenCL
  one), so a campaign runs a mutant renderer through `CampaignConfig(passes=...)` alone, with no registry entry, no
  new backend name and no change to the campaign. The subclass keeps the language's name, so the runtimes accept it.
- "gradient rule": one rule of autograd.pm_gradient, replaced with `pm_gradient.replace_rule(rule, fn)`; `rules()`
  is that table, for an oracle's `gradient_rules` (fuzz.check.oracles.Config).

The broken functions live by where the mistake is: fuzz.testbed.pass_mistakes, render_mistakes and gradient_mistakes;
this module is the mechanism and the table of mutants.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from fuzz.testbed.gradient_mistakes import (
  log2_grad_times_ln2, max_grad_ties_full, reduce_max_grad_all, sin_grad_sign, sqrt_grad_no_half)
from fuzz.testbed.pass_mistakes import (
  all_reduce_drops_last, and_mask_forgets_sign, call_arg_after_first_dep, count_misses_one, divmod_negative_divisor_mod_negated,
  divmod_split_no_overflow_guard, drop_int_cast_same_size, expand_keeps_leading, flip_off_by_one, flip_per_shard, fold_const_floor,
  gate_into_load_or, gather_reversed, idiv_self_by_zero, idiv_split_total_sign, image_channels_swapped, index_to_int32, inline_call_body_as_slot0,
  leaf_reads_output, lt_offset_unguarded, lt_scale_floor, max_const_assoc_min, mod_constant_quotient_upper, mod_split_part_sign, outputs_on_cpu,
  pad_low_gate_off_by_one, reduce_init_once, reduce_max_starts_at_zero, scatter_init_drops_base, scatter_row_plus_k, shrink_subtracts_offset,
  split_closure_swapped, split_reduce_short, store_through_pad_ungated, tuple_element_from_end, unroll_end_drops_last, unroll_reduce_adds)
from fuzz.testbed.render_mistakes import (
  cast_float_to_int_unguarded, const_loses_negative_zero, divmod_zero_gives_zero, float_fn_single, float_max_drops_nan, opencl_cast_no_sat,
  opencl_signed_wraps_natively, shift_count_unmasked)
from tinyspec.autograd import pm_gradient
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.lower.pipeline import PASSES
from tinyspec.lower.render import RENDER, render_program
from tinyspec.render.program import get_renderer
from tinyspec.rewrite import PatternMatcher
from tinyspec.uop import UOp

PASS_RULE, RENDERER, GRADIENT_RULE = "pass rule", "renderer", "gradient rule"


@dataclass(frozen=True)
class Mutant:
  name: str
  kind: str          # PASS_RULE, RENDERER or GRADIENT_RULE
  where: str         # the pass (a rule's), "render" (a renderer's) or "gradient" (a gradient rule's)
  rule: str          # the rule changed, or the renderer method ("CStyleRenderer.render_divmod")
  fn: Callable       # the broken rule function, or the broken method
  description: str

  @property
  def method(self) -> str:
    """The renderer method's own name (render_divmod), or "" for a rule."""
    return self.rule.split(".")[-1] if self.kind == RENDERER else ""

  def pipeline(self, passes: list[Pass] | None = None) -> list[Pass]:
    """passes (default: the reference pipeline) with this mutant in them; unchanged for a gradient-rule mutant."""
    passes = list(PASSES if passes is None else passes)
    if self.kind == GRADIENT_RULE: return passes
    if self.where not in {p.name for p in passes}: raise KeyError(f"no pass {self.where!r} in the pipeline")
    if self.kind == RENDERER: return [render_pass(self.renderer) if p.name == "render" else p for p in passes]
    return [p.replace_rule(self.rule, self.fn) if p.name == self.where else p for p in passes]

  def rules(self) -> PatternMatcher | None:
    """The gradient rule table with this mutant's rule in it (None for the other kinds: the real table)."""
    if self.kind != GRADIENT_RULE: return None
    return pm_gradient.replace_rule(self.rule, self.fn)

  def renderer(self, backend: str):
    """The renderer of backend with this mutant's method in it (the real one when the mutant's class is not in it)."""
    real = type(get_renderer(backend))
    owner = self.rule.split(".")[0]
    if owner not in {c.__name__ for c in real.__mro__}: return real()
    return _mutant_class(real, self.method, self.fn)()


@functools.lru_cache(maxsize=None)
def _mutant_class(real: type, method: str, fn: Callable) -> type:
  # one class per (renderer, method, fn): renderers are made per render pass run, the class once
  return type(f"Mutant{real.__name__}", (real,), {method: fn, "__module__": __name__})


def render_pass(renderer_for: Callable[[str], object]) -> Pass:
  """The render pass, rendering every kernel PROGRAM with renderer_for(options.backend) instead of the real renderer."""
  def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
    r = renderer_for(options.backend)
    return map_kernels(root, lambda call, body: render_program(call, body, r))
  return Pass(RENDER.name, RENDER.stage_in, RENDER.stage_out, run, ())


MUTANTS: list[Mutant] = [
  # multi
  Mutant("all_reduce_drops_last", PASS_RULE, "multi", "multi_reduce", all_reduce_drops_last,
         "a reduction over the sharded axis combines every shard's partial result but the last one's"),
  # callify
  Mutant("inline_binds_body_as_slot0", PASS_RULE, "callify", "inline_gettuple_of_call", inline_call_body_as_slot0,
         "inlining binds PARAM slot k to the call's source k, the body included, not to arg k"),
  Mutant("tuple_element_from_end", PASS_RULE, "callify", "gettuple_of_tuple", tuple_element_from_end,
         "GETTUPLE(TUPLE, i) folds to the element i from the end"),
  Mutant("precompile_outputs_on_cpu", PASS_RULE, "callify", "precompile_gettuple_of_call", outputs_on_cpu,
         "a precompiled value call's output buffers are on CPU, not on the device its body computes each output on"),
  # rangeify
  Mutant("flip_off_by_one", PASS_RULE, "rangeify", "index_through_flip", flip_off_by_one, "FLIP indexes d - i, not d - 1 - i"),
  Mutant("shrink_subtracts_offset", PASS_RULE, "rangeify", "index_through_shrink", shrink_subtracts_offset,
         "SHRINK subtracts the window's offset from the index instead of adding it"),
  Mutant("expand_keeps_leading", PASS_RULE, "rangeify", "index_through_expand", expand_keeps_leading,
         "EXPAND keeps the leading indices (the new axes) for its source instead of the trailing ones"),
  Mutant("pad_low_gate_off_by_one", PASS_RULE, "rangeify", "index_through_pad", pad_low_gate_off_by_one,
         "PAD's lower gate is o < i, not o - 1 < i: the first element of the source reads as padding"),
  Mutant("store_through_pad_ungated", PASS_RULE, "rangeify", "store_target_through_pad", store_through_pad_ungated,
         "a STORE into a PAD view writes the padding's values at the clamped edge (its gate dropped)"),
  Mutant("pad_gate_merged_with_or", PASS_RULE, "rangeify", "pad_gate_into_load", gate_into_load_or,
         "a PAD gate moved into a gated LOAD is combined with OR instead of AND"),
  Mutant("war_edge_dropped", PASS_RULE, "rangeify", "call_arg_after_view", call_arg_after_first_dep,
         "a kernel arg AFTER(buf, k1, k2...) keeps only k1: a write no longer waits for the readers of the old contents"),
  Mutant("inplace_by_shape", PASS_RULE, "rangeify", "index_leaf_load", leaf_reads_output,
         "a leaf of the written buffer's size and dtype is read from the output buffer: the kernel reads what it writes"),
  # simplify: integer rules
  Mutant("fold_divmod_floor", PASS_RULE, "simplify", "fold_const_alu", fold_const_floor,
         "IDIV and MOD of constants fold with floor division, where C truncates toward zero (negative operands)"),
  Mutant("divmod_split_overflow", PASS_RULE, "simplify", "divmod_split", divmod_split_no_overflow_guard,
         "(c*Q + R) // c splits into Q + R // c from the sum's exact range, without checking that the sum fits the dtype (it may wrap)"),
  Mutant("idiv_split_total_sign", PASS_RULE, "simplify", "idiv_split_divisible", idiv_split_total_sign,
         "(k*c + b) // c splits into k + b // c when the sum has one sign, without checking that b has the same"),
  Mutant("mod_split_part_sign", PASS_RULE, "simplify", "mod_split_divisible", mod_split_part_sign,
         "(k*c + b) % c folds to b % c when b >= 0, without checking the sign of the sum"),
  Mutant("negative_divisor_mod_negated", PASS_RULE, "simplify", "divmod_negative_divisor", divmod_negative_divisor_mod_negated,
         "x % c for c < -1 becomes -(x % -c); C's MOD keeps the dividend's sign, so it is x % -c"),
  Mutant("and_mask_forgets_sign", PASS_RULE, "simplify", "and_mask_noop", and_mask_forgets_sign,
         "x & (2**k - 1) folds to x from x's upper bound alone, forgetting a negative x"),
  Mutant("idiv_self_by_zero", PASS_RULE, "simplify", "idiv_self", idiv_self_by_zero,
         "x // x folds to 1 even where x may be 0 (0 // 0 is 0)"),
  Mutant("mod_quotient_from_upper", PASS_RULE, "simplify", "mod_constant_quotient", mod_constant_quotient_upper,
         "x % c as x - q*c with q taken from x's upper bound alone"),
  Mutant("lt_offset_unguarded", PASS_RULE, "simplify", "lt_offset", lt_offset_unguarded,
         "S + k < c becomes S < c - k without the guard that S + k does not wrap"),
  Mutant("lt_scale_floor", PASS_RULE, "simplify", "lt_scale", lt_scale_floor,
         "g*S < c becomes S < c // g (floor), where it is S < ceil(c / g)"),
  Mutant("max_const_assoc_min", PASS_RULE, "simplify", "max_const_assoc", max_const_assoc_min,
         "max(max(x, c1), c2) folds with min(c1, c2)"),
  # optimize
  Mutant("split_inner_major", PASS_RULE, "optimize", "split_end_ranges", split_closure_swapped,
         "a split range r becomes ri * f + ro, not ro * f + ri: the factor scales the wrong range"),
  Mutant("split_reduce_short", PASS_RULE, "optimize", "split_reduce_ranges", split_reduce_short,
         "a split reduce range's outer loop runs one step short"),
  Mutant("unroll_end_drops_last", PASS_RULE, "optimize", "unroll_end", unroll_end_drops_last,
         "unrolling a loop makes copies for iterations 0..n-2: the last one is lost"),
  Mutant("unroll_reduce_adds", PASS_RULE, "optimize", "unroll_reduce", unroll_reduce_adds,
         "an unrolled REDUCE combines its copies with ADD whatever its op (MAX, MUL)"),
  # lower_reduce
  Mutant("max_acc_starts_at_zero", PASS_RULE, "lower_reduce", "reduce_to_accumulator", reduce_max_starts_at_zero,
         "a MAX accumulator starts at 0, not at the dtype's minimum"),
  Mutant("acc_init_once", PASS_RULE, "lower_reduce", "reduce_to_accumulator", reduce_init_once,
         "the accumulator is initialized once, not in every iteration of the outer ranges"),
  # images
  Mutant("image_channels_swapped", PASS_RULE, "images", "image_index", image_channels_swapped,
         "an access through an image view addresses the neighbouring channel of its pixel (channels 0 and 1, 2 and 3 swapped)"),
  # multi
  Mutant("gather_reversed", PASS_RULE, "multi", "multi_copy_gather", gather_reversed,
         "gathering a sharded tensor onto one device concatenates its shards last first"),
  Mutant("flip_per_shard", PASS_RULE, "multi", "multi_view", flip_per_shard,
         "a FLIP of the sharded axis flips each shard in place and keeps the shards' order"),
  # scatter
  Mutant("count_misses_one", PASS_RULE, "scatter", "reduce_count", count_misses_one,
         "a sum over the iterations where r > -R counts from -R, not from 1 - R: one iteration too many"),
  Mutant("scatter_row_plus_k", PASS_RULE, "scatter", "one_hot_sum_to_scatter", scatter_row_plus_k,
         "the row of a one-hot mask o + k == x is taken as x + k, not x - k"),
  Mutant("scatter_init_drops_base", PASS_RULE, "scatter", "one_hot_sum_to_scatter", scatter_init_drops_base,
         "a scatter-add into base + sum initializes its output to 0, losing the base"),
  # linearize
  Mutant("drop_sign_cast", PASS_RULE, "linearize", "drop_noop_cast", drop_int_cast_same_size,
         "a CAST between integers of one width (int32 <-> uint32) is dropped as a no-op"),
  Mutant("index_always_int32", PASS_RULE, "linearize", "index_to_int", index_to_int32,
         "index is lowered to int32 even when the kernel's index bounds need int64"),
  # renderers
  Mutant("render_mod_by_zero", RENDERER, "render", "CStyleRenderer.render_divmod", divmod_zero_gives_zero,
         "MOD by a divisor that may be 0 renders the 0 case as 0, not the dividend"),
  Mutant("render_shift_unmasked", RENDERER, "render", "CStyleRenderer._count", shift_count_unmasked,
         "a shift count that may reach the width is rendered unmasked"),
  Mutant("render_max_drops_nan", RENDERER, "render", "CStyleRenderer.render_float_alu", float_max_drops_nan,
         "float MAX renders as a > b ? a : b, which loses a NaN in a"),
  Mutant("render_negative_zero", RENDERER, "render", "CStyleRenderer.render_const", const_loses_negative_zero,
         "a -0.0 constant renders as 0.0"),
  Mutant("render_cast_unguarded", RENDERER, "render", "CStyleRenderer.render_cast", cast_float_to_int_unguarded,
         "float -> int casts render as plain C casts: NaN and out-of-range values are undefined, not 0 and saturated"),
  Mutant("render_float64_math_single", RENDERER, "render", "CStyleRenderer.float_fn", float_fn_single,
         "float64 math renders with the float32 function (sqrtf, exp2f...): the argument and result are rounded to float"),
  Mutant("opencl_cast_no_sat", RENDERER, "render", "OpenCLRenderer.render_cast", opencl_cast_no_sat,
         "OpenCL float -> int casts use convert_T_rtz, without saturation"),
  Mutant("opencl_signed_overflow", RENDERER, "render", "OpenCLRenderer.wrapping", opencl_signed_wraps_natively,
         "OpenCL signed add/sub/mul/neg are rendered in the signed type, where overflow is undefined"),
  # gradient rules
  Mutant("grad_sin_sign", GRADIENT_RULE, "gradient", "grad_sin", sin_grad_sign, "d sin(x) is sin(x - pi/2) = -cos(x)"),
  Mutant("grad_max_ties_full", GRADIENT_RULE, "gradient", "grad_max_ties_half", max_grad_ties_full,
         "on a tie of MAX each source gets the whole gradient, not half"),
  Mutant("grad_log2_ln2_squared", GRADIENT_RULE, "gradient", "grad_log2", log2_grad_times_ln2,
         "d log2(x) is multiplied by ln2 squared"),
  Mutant("grad_reduce_max_all", GRADIENT_RULE, "gradient", "grad_reduce_max_split", reduce_max_grad_all,
         "REDUCE MAX gives the whole gradient to every maximum instead of a share"),
  Mutant("grad_sqrt_no_half", GRADIENT_RULE, "gradient", "grad_sqrt", sqrt_grad_no_half, "d sqrt(x) is 1 / sqrt(x), missing 1/2"),
]

MUTANTS_BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}
assert len(MUTANTS_BY_NAME) == len(MUTANTS), "two mutants share a name"

__all__ = ["Mutant", "MUTANTS", "MUTANTS_BY_NAME", "PASS_RULE", "RENDERER", "GRADIENT_RULE", "render_pass"]

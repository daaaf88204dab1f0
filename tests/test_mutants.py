"""The mutants of fuzz.testbed.mutants: each one changes behaviour on a hand-written witness case (so none is equivalent
to the reference), together they cover every pass, both renderers and the gradient rules, and building one swaps nothing
in any module. The slow test runs bench/mutants.py's campaign on three mutants the fuzzer kills reliably."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from builders import sink

from fuzz.check.oracles import compare
from fuzz.generate.case import Case
from fuzz.testbed import seeded_bugs, unsound
from fuzz.testbed.mutants import GRADIENT_RULE, MUTANTS, MUTANTS_BY_NAME, PASS_RULE, RENDERER, Mutant
from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.lower.start import start_index
from tinyspec.runtime.cpu import match_shapes
from tinyspec.semantics import evaluate
from tinyspec.uop import AxisType, Ops, RangeArg, UOp

f32, f64, i32, u32, u8, idx = dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint32, dtypes.uint8, dtypes.index
NAN = float("nan")
OPTS = {"callify": "inline", "realize": "minimal", "opts": None}


# ---- witness builders ----
def tensor_case(root: UOp, inputs: dict, **opts: Any) -> Case:
  return Case(root, inputs, {**OPTS, **opts}, "tensor", index=0)


def unary(a: np.ndarray, fn: Callable[[UOp], UOp], shape: tuple | None = None, **opts: Any) -> Case:
  """fn of a buffer holding a (seen in shape)."""
  b = UOp.buffer(dtypes.from_np(a.dtype), a.size)
  shape = shape or a.shape
  return tensor_case(sink(fn(b.reshape(shape) if shape != (a.size,) else b)), {b.arg.id: a}, **opts)


def kernel(n: int, out_dt: Any, value: Callable[..., UOp], ins: tuple[np.ndarray, ...] = ()) -> Case:
  """A kernel graph of one kernel: out[r] = value(r, in_0[r], in_1[r], ...) for r < n."""
  r = UOp.range(n, 0)
  bufs = [UOp.buffer(dtypes.from_np(a.dtype), a.size) for a in ins]
  loads = [UOp.param(1 + k, b.dtype, b.arg.size).index(r).load() for k, b in enumerate(bufs)]
  out = UOp.buffer(out_dt, n)
  body = sink(UOp.param(0, out_dt, n).index(r).store(value(r, *loads)).end(r))
  call = UOp(Ops.CALL, dtypes.void, (body, out, *bufs), "k")
  return Case(sink(out.after(call)), {b.arg.id: a for b, a in zip(bufs, ins)}, dict(OPTS), "kernel", index=0)


def ic(v: int, dt: Any = idx) -> UOp: return UOp.const(dt, v)


def with_images(case: Case) -> Case:
  """case lowered with images on (its eligible kernel args become RGBA images)."""
  return Case(case.root, case.inputs, {**case.options, "images": True}, case.kind, index=case.index)


def sharded_case(fn: Callable[[Any], Any]) -> Case:
  """fn of a (5, 3) tensor split over two devices along axis 0 (3 rows and 2)."""
  from tinyspec.frontend import Tensor, inputs_of
  root = Tensor.sink(fn(Tensor(np.arange(15, dtype=np.float32).reshape(5, 3)).shard(("CPU:0", "CPU:1"), 0)))
  return tensor_case(root, inputs_of(root))


def scatter_case(form: str, k: int = 0, with_base: bool = False) -> Case:
  """form "onehot": out[o] = (base[o] +) SUM_r WHERE(o + k == idx[r], v[r], 0), the scatter pass's one-hot sum; "count":
  out[o] = SUM_r WHERE(3 < r + o, 1, 0), a count it folds."""
  n, rows = 6, 5
  o, r = UOp.range(rows, 0), UOp(Ops.RANGE, idx, (ic(n),), RangeArg(1, AxisType.REDUCE))
  ix, v, base = UOp.param(1, i32, n), UOp.param(2, f32, n), UOp.param(3, f32, rows)
  if form == "count": val = UOp(Ops.REDUCE, i32, ((ic(3) < r + o).where(UOp.const(i32, 1), UOp.const(i32, 0)), r), Ops.ADD)
  else:
    hot = UOp(Ops.CMPEQ, dtypes.bool, ((o + k if k else o).cast(i32), ix.index(r).load()))
    val = UOp(Ops.REDUCE, f32, (hot.where(v.index(r).load(), UOp.const(f32, 0.0)), r), Ops.ADD)
    if with_base: val = val + base.index(o).load()
  out = UOp.buffer(val.dtype, rows)
  bufs = [UOp.buffer(i32, n), UOp.buffer(f32, n), UOp.buffer(f32, rows)]
  body = sink(UOp.param(0, val.dtype, rows).index(o).store(val).end(o))
  call = UOp(Ops.CALL, dtypes.void, (body, out, *bufs), "scatter")
  ins = [np.array([0, 3, 3, 1, 4, 2], np.int32) + k, np.arange(1, n + 1, dtype=np.float32), np.full(rows, 10.0, np.float32)]
  return Case(sink(out.after(call)), {b.arg.id: a for b, a in zip(bufs, ins)}, dict(OPTS), "kernel", index=0)
def as_i32(e: UOp) -> UOp: return e.cast(i32)
def twice(x: UOp) -> UOp: return x.alu(Ops.MUL, UOp.const(x.dtype, 2.0).expand(x.shape))
def ones(shape: tuple) -> UOp: return UOp.const(f32, 1.0).expand(shape)


def value_call_case() -> Case:
  a = UOp.buffer(f32, 4)
  p = UOp.param(0, f32, 4)
  call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.TUPLE, dtypes.void, (twice(p),)), a), "f")
  return tensor_case(sink(call.gettuple(0)), {a.arg.id: A4.copy()})


def call_on_another_device_case() -> Case:
  """A value call on CPU:1, precompiled, its output added to another CPU:1 buffer: the output buffer must be on CPU:1."""
  a, b = UOp.buffer(f32, 4, "CPU:1"), UOp.buffer(f32, 4, "CPU:1")
  call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.TUPLE, dtypes.void, (twice(UOp.param(0, f32, 4, "CPU:1")),)), a), "f")
  return tensor_case(sink(call.gettuple(0).alu(Ops.ADD, b)), {a.arg.id: A4.copy(), b.arg.id: A4 * 3}, callify="precompile")


def tuple_case() -> Case:
  b = UOp.buffer(f32, 4)
  t = UOp(Ops.TUPLE, dtypes.void, (b, twice(b)))
  return tensor_case(sink(UOp(Ops.GETTUPLE, f32, (t,), 0)), {b.arg.id: A4.copy()})


def store_into_pad_case() -> Case:
  # out.pad(((1, 6),)) = 1..6: only the 4 elements of out are written, the padding's values go nowhere
  o = UOp.buffer(f32, 4)
  src = UOp.buffer(f32, 6)
  return tensor_case(sink(o.after(o.pad(((1, 6),)).store(src))), {o.arg.id: np.zeros(4, np.float32), src.arg.id: np.arange(1, 7, dtype=np.float32)})


def assign_case() -> Case:
  # out = a * 2 into an existing buffer of a's size and dtype: a is read from a, not from out
  o, a = UOp.buffer(f32, 4), UOp.buffer(f32, 4)
  return tensor_case(sink(o.after(o.store(twice(a)))), {o.arg.id: np.zeros(4, np.float32), a.arg.id: A4.copy()})


def write_after_read_case() -> Case:
  # y and z read x; then x is assigned x + 1: the assign must wait for both readers
  x = UOp.buffer(f32, 4)
  y = UOp(Ops.CONTIGUOUS, f32, (twice(x),))
  z = UOp(Ops.CONTIGUOUS, f32, (x.alu(Ops.ADD, ones((4,))),))
  return tensor_case(sink(x.after(x.store(x.alu(Ops.ADD, ones((4,))))), y, z), {x.arg.id: A4.copy()})


A4 = np.arange(1, 5, dtype=np.float32)
A8 = np.array([3, -1, 4, -1, 5, -9, 2, -6], np.float32)
A12 = np.arange(12, dtype=np.float32)
FLOATS_TO_INT = np.array([NAN, 1e10, -1e10, 2.5], np.float32)

# mutant name -> its witness: a case on which the mutated pipeline's result differs from the reference's (or it raises)
def sharded_sum_case() -> Case:
  """The column sums of a 5 x 2 tensor split by rows over two devices (3 + 2): an all-reduce of two partial sums."""
  from tinyspec.frontend import Tensor, inputs_of
  x = Tensor(np.arange(1, 11, dtype=np.float32).reshape(5, 2)).shard(("CPU:0", "CPU:1"), 0)
  root = Tensor.sink(x.sum(0))
  b = next(u for u in root.toposort() if u.op is Ops.BUFFER)
  return tensor_case(root, {b.arg.id: inputs_of(root)[b.arg.id]})


WITNESS: dict[str, Callable[[], Case]] = {
  "all_reduce_drops_last": sharded_sum_case,
  "inline_binds_body_as_slot0": value_call_case,
  "tuple_element_from_end": tuple_case,
  "precompile_outputs_on_cpu": call_on_another_device_case,
  "flip_off_by_one": lambda: unary(A12, lambda x: x.flip((True, False)), (3, 4)),
  "shrink_subtracts_offset": lambda: unary(A12, lambda x: x.shrink(((4, 4),)).alu(Ops.ADD, x.shrink(((0, 4),)))),
  "expand_keeps_leading": lambda: unary(A4, lambda x: x.expand((3,)).reshape((12,)).alu(Ops.ADD, UOp.const(f32, 0.5).expand((12,)))),
  "pad_low_gate_off_by_one": lambda: unary(A4, lambda x: x.pad(((2, 8),))),
  "store_through_pad_ungated": store_into_pad_case,
  "pad_gate_merged_with_or": lambda: unary(A4, lambda x: x.pad(((1, 6),)).pad(((1, 8),))),
  "war_edge_dropped": write_after_read_case,
  "inplace_by_shape": assign_case,
  "fold_divmod_floor": lambda: kernel(4, i32, lambda r: as_i32(ic(-7).alu(Ops.IDIV, ic(2)) + r)),
  "divmod_split_overflow": lambda: kernel(4, u32, lambda r, a: (a * UOp.const(u32, 2) + UOp.const(u32, 1)).alu(Ops.IDIV, UOp.const(u32, 2)),
                                          (np.array([2**31, 3, 2**32 - 1, 0], np.uint32),)),
  # max(r, 1) * 4 + max(r - 9, -3): the sum is positive, its second term negative
  "idiv_split_total_sign": lambda: kernel(8, i32, lambda r: as_i32((r.alu(Ops.MAX, ic(1)) * ic(4) + (r - ic(9)).alu(Ops.MAX, ic(-3)))
                                                                 .alu(Ops.IDIV, ic(4)))),
  "mod_split_part_sign": lambda: kernel(8, i32, lambda r: as_i32((ic(-8) + r).alu(Ops.MOD, ic(4)))),
  "negative_divisor_mod_negated": lambda: kernel(8, i32, lambda r: as_i32((r - ic(3)).alu(Ops.MOD, ic(-3)))),
  "and_mask_forgets_sign": lambda: kernel(8, i32, lambda r: as_i32((r - ic(4)).alu(Ops.AND, ic(7)))),
  "idiv_self_by_zero": lambda: kernel(4, i32, lambda r: as_i32(r.alu(Ops.IDIV, r))),
  "mod_quotient_from_upper": lambda: kernel(8, i32, lambda r: as_i32((r + ic(2)).alu(Ops.MOD, ic(5)))),
  "lt_offset_unguarded": lambda: kernel(4, dtypes.bool, lambda r, a: (a + ic(1, i32)).alu(Ops.CMPLT, ic(0, i32)),
                                        (np.array([2**31 - 1, -1, 0, 5], np.int32),)),
  "lt_scale_floor": lambda: kernel(8, dtypes.bool, lambda r: (r * ic(4)).alu(Ops.CMPLT, ic(13))),
  "max_const_assoc_min": lambda: kernel(8, i32, lambda r: as_i32(r.alu(Ops.MAX, ic(2)).alu(Ops.MAX, ic(5)))),
  "split_inner_major": lambda: unary(A8, lambda x: twice(x.flip((True,))), opts=(("split", 0, 2),)),
  "split_reduce_short": lambda: unary(A8, lambda x: x.reduce(Ops.ADD, 1), opts=(("split", 0, 2),)),
  "unroll_end_drops_last": lambda: unary(A4, twice, opts=(("unroll", 0),)),
  "unroll_reduce_adds": lambda: unary(A4, lambda x: x.reduce(Ops.MAX, 1)),   # the heuristic unrolls a reduce of 4
  "max_acc_starts_at_zero": lambda: unary(A8 - 10, lambda x: x.reduce(Ops.MAX, 1)),
  "acc_init_once": lambda: unary(-np.arange(1, 16, dtype=np.float32), lambda x: x.reduce(Ops.ADD, 1), (5, 3)),
  "count_misses_one": lambda: scatter_case("count"),
  "scatter_row_plus_k": lambda: scatter_case("onehot", k=2),
  "gather_reversed": lambda: sharded_case(lambda x: x.to("CPU:1") * 2),
  "image_channels_swapped": lambda: with_images(kernel(16, f32, lambda r, x: x, (np.arange(16, dtype=np.float32),))),
  "flip_per_shard": lambda: sharded_case(lambda x: x.flip(0)),
  "scatter_init_drops_base": lambda: scatter_case("onehot", with_base=True),
  "drop_sign_cast": lambda: kernel(4, u32, lambda r, a: a.cast(u32).alu(Ops.IDIV, UOp.const(u32, 2)), (np.array([-2, 4, -7, 9], np.int32),)),
  # (r * 2**32 | r) // 2**32 needs int64 index arithmetic
  "index_always_int32": lambda: kernel(4, i32, lambda r: as_i32((r * ic(2**32)).alu(Ops.OR, r).alu(Ops.IDIV, ic(2**32)))),
  "render_mod_by_zero": lambda: kernel(4, i32, lambda r, a, b: a.alu(Ops.MOD, b),
                                       (np.array([7, -7, 5, 3], np.int32), np.array([0, 0, 2, 0], np.int32))),
  "render_shift_unmasked": lambda: kernel(4, u32, lambda r, a: a.alu(Ops.SHL, (r + ic(30)).cast(u32)), (np.array([1, 3, 5, 2**31 + 1], np.uint32),)),
  "render_max_drops_nan": lambda: kernel(4, f32, lambda r, a, b: a.alu(Ops.MAX, b),
                                         (np.array([NAN, 1, NAN, 2], np.float32), np.array([1, NAN, 0, 3], np.float32))),
  "render_negative_zero": lambda: kernel(4, f32, lambda r, a: a.alu(Ops.ADD, UOp.const(f32, -0.0).alu(Ops.RECIP)), (A4.copy(),)),
  "render_cast_unguarded": lambda: kernel(4, i32, lambda r, a: a.cast(i32), (FLOATS_TO_INT.copy(),)),
  "render_float64_math_single": lambda: kernel(4, f64, lambda r, a: a.alu(Ops.SQRT), (np.array([1e300, 2.0, 1e-300, 9.0]),)),
  "opencl_cast_no_sat": lambda: kernel(4, i32, lambda r, a: a.cast(i32), (FLOATS_TO_INT.copy(),)),
  "opencl_signed_overflow": lambda: kernel(4, dtypes.bool, lambda r, a: (a + ic(1, i32)).alu(Ops.CMPLT, a),
                                           (np.array([2**31 - 1, 0, -5, 2**31 - 2], np.int32),)),
}
# the C compiler a renderer witness needs: gcc's code for a shift past the width happens to agree with the spec's; clang
# folds the unrolled shifts and does not
COMPILER = {"render_shift_unmasked": "clang"}


# ---- gradient witnesses: one node, its output gradient and its inputs ----
def _grad_node(op: Ops, *arrays: np.ndarray, reduce: int = 0) -> tuple[UOp, dict]:
  bufs = [UOp.buffer(f32, a.size) for a in arrays]
  srcs = [b.reshape(arrays[0].shape) if arrays[0].ndim > 1 else b for b in bufs]
  node = srcs[0].reduce(op, reduce) if reduce else srcs[0].alu(op, *srcs[1:])
  return node, {b.arg.id: a for b, a in zip(bufs, arrays)}


X = np.array([0.3, 1.0, 2.0, 4.0], np.float32)
GRAD_WITNESS: dict[str, Callable[[], tuple[UOp, dict]]] = {
  "grad_sin_sign": lambda: _grad_node(Ops.SIN, X),
  "grad_max_ties_full": lambda: _grad_node(Ops.MAX, X, np.array([0.3, 2.0, 2.0, 1.0], np.float32)),
  "grad_log2_ln2_squared": lambda: _grad_node(Ops.LOG2, X),
  # column 0 holds its maximum twice
  "grad_reduce_max_all": lambda: _grad_node(Ops.MAX, np.array([[5, 1], [5, 2]], np.float32), reduce=1),
  "grad_sqrt_no_half": lambda: _grad_node(Ops.SQRT, X),
}


# ---- running a witness ----
def backend_of(m: Mutant) -> str:
  return "opencl" if m.rule.startswith("OpenCLRenderer.") else "cpu" if m.kind == RENDERER else "reference"


def result(case: Case, passes: list, backend: str, compiler: str | None = None) -> Any:
  """What the case computes lowered through passes and run on backend; the exception when lowering or running raises
  (a mutant that makes the pipeline fail also changes behaviour)."""
  ps = passes[start_index(passes, case.root, case.kind):]
  opts = {k: v for k, v in case.options.items() if k in ("callify", "realize", "opts", "images")}
  try:
    g = lower(case.root, passes=ps, backend="opencl" if backend == "opencl" else "c", **opts)["render"]
    ins = case.copy_inputs()
    if backend == "reference": return match_shapes(case.root, evaluate(g, ins))
    if backend == "cpu":
      from tinyspec.runtime import cpu
      return cpu.run(g, ins, compiler=compiler)
    from tinyspec.runtime import opencl
    return opencl.run(g, ins)
  except Exception as e:
    return e


def local_gradients(rules: Any, node: UOp, inputs: dict) -> list:
  """The gradients one rule table gives node's sources for an output gradient of ones, evaluated."""
  ctx = ones(node.shape) if node.shape else UOp.const(f32, 1.0)
  _, grads = rules.rewrite(node, ctx=ctx)
  return evaluate(sink(*[g for g in grads if g is not None]), {k: v.copy() for k, v in inputs.items()})


def need(backend: str, compiler: str | None) -> None:
  if backend == "opencl":
    from tinyspec.runtime.opencl import available
    ok, why = available()
    if not ok: pytest.skip(f"OpenCL unavailable: {why}")
  if compiler is not None and shutil.which(compiler) is None: pytest.skip(f"{compiler} not installed")


PIPELINE_MUTANTS = [m for m in MUTANTS if m.kind != GRADIENT_RULE]
GRADIENT_MUTANTS = [m for m in MUTANTS if m.kind == GRADIENT_RULE]


@pytest.mark.parametrize("m", PIPELINE_MUTANTS, ids=[m.name for m in PIPELINE_MUTANTS])
def test_mutant_changes_behaviour_on_its_witness(m: Mutant) -> None:
  backend, compiler = backend_of(m), COMPILER.get(m.name)
  need(backend, compiler)
  case = WITNESS[m.name]()
  want = evaluate(case.root, case.copy_inputs())
  ref = result(case, PASSES, backend, compiler)
  assert not isinstance(ref, Exception), f"the reference pipeline fails the witness: {ref}"
  assert compare(want, ref) is None, "the reference pipeline gets the witness wrong"
  got = result(case, m.pipeline(), backend, compiler)
  assert isinstance(got, Exception) or compare(want, got) is not None, f"{m.name} computes the witness right: it may be equivalent"


@pytest.mark.parametrize("m", GRADIENT_MUTANTS, ids=[m.name for m in GRADIENT_MUTANTS])
def test_gradient_mutant_changes_a_local_derivative(m: Mutant) -> None:
  from tinyspec.autograd import pm_gradient
  node, inputs = GRAD_WITNESS[m.name]()
  ref, got = local_gradients(pm_gradient, node, inputs), local_gradients(m.rules(), node, inputs)
  assert compare(ref, got) is not None, f"{m.name} gives the reference's gradients on its witness"


def test_every_mutant_has_a_witness() -> None:
  assert set(WITNESS) | set(GRAD_WITNESS) == set(MUTANTS_BY_NAME)
  assert len(MUTANTS) >= 30


def test_mutants_cover_every_pass_both_renderers_and_gradient_rules() -> None:
  by_pass = {m.where for m in MUTANTS if m.kind in (PASS_RULE, RENDERER)}
  assert {p.name for p in PASSES} <= by_pass
  from tinyspec.render.c import CRenderer
  from tinyspec.render.opencl import OpenCLRenderer
  assert any(type(m.renderer("c")) is not CRenderer for m in MUTANTS if m.kind == RENDERER)
  assert any(m.rule.startswith("OpenCLRenderer.") for m in MUTANTS)
  assert all(isinstance(m.renderer("opencl"), OpenCLRenderer) for m in MUTANTS if m.kind == RENDERER)
  assert len(GRADIENT_MUTANTS) >= 3


def test_every_pass_rule_mutant_names_a_real_rule() -> None:
  rules = {p.name: {r.name for r in p.rules()} for p in PASSES}
  for m in MUTANTS:
    if m.kind == PASS_RULE: assert m.rule in rules[m.where], m.name


def test_mutants_differ_from_the_seeded_bugs_and_unsound_variants() -> None:
  others = {b.fn for b in seeded_bugs.SEEDED_BUGS} | {v.fn for v in unsound.VARIANTS}
  names = {b.name for b in seeded_bugs.SEEDED_BUGS} | {v.name for v in unsound.VARIANTS}
  assert not any(m.fn in others or m.name in names for m in MUTANTS)


def test_building_a_mutant_swaps_nothing() -> None:
  from tinyspec.autograd import pm_gradient
  from tinyspec.render.program import get_renderer
  tables = [p.tables for p in PASSES]
  rules = list(pm_gradient.rules)
  for m in MUTANTS: m.pipeline(), m.rules(), m.renderer("c")
  assert [p.tables for p in PASSES] == tables and list(pm_gradient.rules) == rules
  assert type(get_renderer("c")).__name__ == "CRenderer" and type(get_renderer("opencl")).__name__ == "OpenCLRenderer"
  i = [p.name for p in PASSES].index("rangeify")
  assert MUTANTS_BY_NAME["war_edge_dropped"].pipeline()[i] is not PASSES[i]


# ---- the bench's campaign on three mutants it kills reliably ----
def _bench() -> Any:
  path = Path(__file__).resolve().parent.parent / "bench" / "mutants.py"
  spec = importlib.util.spec_from_file_location("bench_mutants", path)
  mod = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = mod  # its dataclasses look their module up by name
  spec.loader.exec_module(mod)
  return mod


@pytest.mark.slow
@pytest.mark.parametrize("name", ["flip_off_by_one", "expand_keeps_leading", "unroll_end_drops_last"])
def test_bench_campaign_kills(name: str) -> None:
  # bounded by cases, not time, so the outcome does not depend on the machine's load; the seconds are a backstop
  r = _bench().run_mutant(name, seconds=600, seed=0, backends=("reference",), max_cases=48)
  assert r.killed, f"{name} survived {r.cases} cases: {r.signature} {r.note}"
  assert r.nodes is not None and r.nodes <= 24

"""Edge kernels (fuzz.generate.edge_kernels) and the narrowing of backend differences (fuzz.check.backend_blame): the
cases reach the points the spec defines where C does not and pass the reference pipeline and the CPU backend with the
real renderer; each renderer mutant fails a generated case of a fixed seed, and its finding names the renderer method
and the kernel."""
from __future__ import annotations

import random

import numpy as np
import pytest

from fuzz.check.backend_blame import RENDERED_BY, probe, rendered_by
from fuzz.check.oracles import Checker, Config
from fuzz.generate.case import EDGE_CONSTRUCTS
from fuzz.generate.edge_kernels import EdgeKernelGen, edge_kernel_case
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.testbed.mutants import MUTANTS_BY_NAME
from tinyspec.dtype import dtypes
from tinyspec.ops.scalar import INDEX_OVERFLOW, c_undefined, left_open
from tinyspec.render.cstyle import CStyleRenderer
from tinyspec.runtime.cpu import available_compilers
from tinyspec.semantics import evaluate
from tinyspec.uop import Ops, UOp

needs_cc = pytest.mark.skipif(not available_compilers(), reason="no C compiler")
SEEDS = range(24)


def checker(passes=None, backends=("reference", "cpu")) -> Checker:
  return Checker(Config(passes=passes, backends=backends, metamorphic=False, gradients=False, numeric_gradients=False))


def test_left_open_keeps_only_what_tinyspec_leaves_undefined() -> None:
  i32 = dtypes.int32
  assert c_undefined(Ops.MOD, i32, 5, 0) is not None and left_open(c_undefined(Ops.MOD, i32, 5, 0)) is None
  assert left_open(c_undefined(Ops.SHL, i32, 1, 40)) is None
  assert left_open(INDEX_OVERFLOW) == INDEX_OVERFLOW


def test_edge_cases_pass_the_screen_and_draw_every_construct() -> None:
  seen: set[str] = set()
  for s in range(80):
    c = EdgeKernelGen(random.Random(s)).case()
    assert kernel_unsafe_reason(c.root, c.inputs) is None, s
    seen |= {f.split(":")[1] for f in c.features if f.startswith("edge:")}
  assert seen == set(EDGE_CONSTRUCTS)
  # the inputs hold the points: a zero divisor, NaN, an infinity
  vals = [a for s in range(40) for a in edge_kernel_case(random.Random(s)).inputs.values()]
  assert any(a.dtype.kind == "f" and np.isnan(a).any() for a in vals) and any(a.dtype.kind == "f" and np.isinf(a).any() for a in vals)


def test_a_construct_weight_of_zero_turns_it_off() -> None:
  w = {f"edge:{k}": 0.0 for k in EDGE_CONSTRUCTS} | {"edge:divmod": 1.0}
  feats = {f for s in range(20) for f in edge_kernel_case(random.Random(s), w).features if f.startswith("edge:")}
  assert feats == {"edge:divmod"}


def test_the_screen_still_rejects_open_bits_and_rounded_values_computed_on() -> None:
  n = 4
  r = UOp.range(n, 0)
  x = UOp.param(1, dtypes.float32, n).index(r).load()
  buf, inp = UOp.buffer(dtypes.int32, n, id=1), UOp.buffer(dtypes.float32, n, id=2)

  def case(value: UOp) -> str | None:
    out = UOp.param(0, value.dtype, n)
    o = buf if value.dtype is dtypes.int32 else UOp.buffer(value.dtype, n, id=1)
    call = UOp(Ops.CALL, src=(UOp(Ops.SINK, src=(out.index(r).store(value).end(r),)), o, inp), arg="k")
    return kernel_unsafe_reason(UOp(Ops.SINK, src=(o.after(call),)), {2: np.array([1.0, -0.0, 2.5, 4.0], np.float32)})
  assert case(x.bitcast(dtypes.int32)) is None                                    # a raw load keeps its bits
  assert case((x + x).bitcast(dtypes.int32)) is not None                          # a computed zero's sign is open
  assert case(x.alu(Ops.SQRT)) is None                                            # a rounded result, stored
  assert case(x.alu(Ops.SQRT) + x) is not None                                    # ... computed on
  assert case(x.cast(dtypes.int32).alu(Ops.MOD, x.cast(dtypes.int32))) is None    # MOD by a range holding 0: defined


@needs_cc
def test_edge_cases_pass_the_reference_pipeline_and_the_cpu_backend() -> None:
  ch = checker()
  for s in SEEDS:
    c = edge_kernel_case(random.Random(s))
    assert ch.check(c) == [], (s, sorted(c.features))


# a generated case of a fixed seed each renderer mutant fails (and the reference passes), with the method it is blamed on
WITNESSES = {
  "render_mod_by_zero": (0, "CStyleRenderer.render_divmod"),
  "render_max_drops_nan": (11, "CStyleRenderer.render_float_alu"),
  "render_negative_zero": (3, "CStyleRenderer.render_const"),
  "render_cast_unguarded": (2, "CStyleRenderer.render_cast"),
  "render_float64_math_single": (0, "CStyleRenderer.float_fn"),
}


@needs_cc
@pytest.mark.parametrize("name", sorted(WITNESSES))
def test_renderer_mutant_fails_its_witness_and_is_narrowed_to_its_method(name: str) -> None:
  seed, method = WITNESSES[name]
  c = edge_kernel_case(random.Random(seed))
  assert checker().check(c) == []
  fs = checker(MUTANTS_BY_NAME[name].pipeline()).check(c)
  assert [f.signature for f in fs] == [("parity", "render", method)]
  assert "kernel edge_0" in fs[0].message and MUTANTS_BY_NAME[name].method in fs[0].rule


def _opencl() -> bool:
  from tinyspec.runtime.host import shared
  return shared().available("opencl")[0]


@pytest.mark.slow
def test_opencl_renderer_mutant_is_narrowed_to_the_opencl_method() -> None:
  if not _opencl(): pytest.skip("no OpenCL platform")
  c = edge_kernel_case(random.Random(3))
  fs = checker(MUTANTS_BY_NAME["opencl_cast_no_sat"].pipeline(), ("reference", "opencl")).check(c)
  assert [f.signature for f in fs] == [("parity", "render", "OpenCLRenderer.render_cast")]


def test_rendered_by_names_methods_the_renderer_has() -> None:
  for _, method in RENDERED_BY: assert callable(getattr(CStyleRenderer, method)), method
  a = UOp.param(0, dtypes.int32, 4).index(UOp.range(4, 0)).load()
  assert rendered_by(a.alu(Ops.MOD, a)) == "render_divmod" and rendered_by(a.alu(Ops.SHL, a)) == "_count"
  assert rendered_by(a + a) == "wrapping" and rendered_by(a.cast(dtypes.float32)) == "render_cast"
  f = a.cast(dtypes.float64)
  assert rendered_by(f.alu(Ops.SQRT)) == "float_fn" and rendered_by(f.maximum(f)) == "render_float_alu"


def test_a_probe_keeps_constants_and_loads_the_other_operands_at_edge_values() -> None:
  a = UOp.param(0, dtypes.int8, 4).index(UOp.range(4, 0)).load()
  g, inputs = probe(a.alu(Ops.IDIV, UOp.const(dtypes.int8, -1)))
  assert len(inputs) == 1 and {-128, -1, 0, 127} <= set(int(v) for v in next(iter(inputs.values())))
  assert any(u.op is Ops.CONST and u.arg == -1 and u.dtype is dtypes.int8 for u in g.toposort())


def test_a_two_op_probe_loads_an_operand_its_two_ops_share_once() -> None:
  i32 = dtypes.int32
  a = UOp.param(1, i32, 4).index(UOp.range(4, 0)).load()
  s = a + UOp.const(i32, 1)
  lt = s.alu(Ops.CMPLT, a)
  g, inputs = probe(s, lt)
  assert len(inputs) == 1  # a, once: the sum and the comparison read the same value
  (x,) = inputs.values()
  out = np.asarray(evaluate(g, inputs)[0])
  with np.errstate(over="ignore"): want = (x + np.int32(1)) < x  # wraps: true only at the maximum
  np.testing.assert_array_equal(out, want)
  assert want.any() and not want.all()


@pytest.mark.slow
def test_a_signed_overflow_only_a_comparison_shows_is_narrowed_to_the_wrapping_method() -> None:
  if not _opencl(): pytest.skip("no OpenCL platform")
  from test_mutants import WITNESS
  c = WITNESS["opencl_signed_overflow"]()
  fs = checker(MUTANTS_BY_NAME["opencl_signed_overflow"].pipeline(), ("reference", "opencl")).check(c)
  assert [f.signature for f in fs] == [("parity", "render", "CStyleRenderer.wrapping")]
  assert "two-op kernel" in fs[0].message

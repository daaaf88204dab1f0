"""The small floats in the fuzzers: drawn by the generators (fp8 only where the spec admits it), screened as the spec
says, round-tripped through the corpus, compared at their own precision, and a short campaign that finds nothing."""
from __future__ import annotations

import io
import math
import random

import ml_dtypes
import numpy as np
import pytest

from fuzz.check.agree import compare, output_errors, tolerance
from fuzz.check.gradient_oracle import call_gradient_mismatches
from fuzz.check.oracles import Checker, Config
from fuzz.corpus.store import load_entry, write_entry
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.generate.edge_kernels import edge_kernel_case
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.generate.safety import unsafe_reason
from fuzz.generate.case import ELEMENTWISE, Case
from fuzz.generate.kinds import case_for
from fuzz.generate.tensor import operand_dtypes
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.runtime.cpu import available_compilers
from tinyspec.semantics import evaluate
from tinyspec.uop import GroupOp, Ops, UOp

SMALL = {"dtype:small": 12.0}  # small floats weighted up: most tensor cases hold them
FP8 = dtypes.fp8s
# what docs/spec.md admits on the fp8 dtypes, besides moving them: converting and selecting
FP8_OPS = {Ops.CAST, Ops.BITCAST, Ops.WHERE}


@pytest.fixture(scope="module")
def tensor_cases() -> list[Case]:
  return [c for c in (case_for(21, i, SMALL) for i in range(160)) if c.kind == "tensor"]


@pytest.fixture(scope="module")
def edge_cases() -> list[Case]:
  return [edge_kernel_case(random.Random(f"small-edge:{i}"), {"edge:small": 6.0}) for i in range(40)]


def _small_dtypes(c: Case) -> set[str]:
  return {u.dtype.name for u in c.root.toposort() if u.dtype.is_small_float}


def _sink(*us: UOp) -> UOp: return UOp(Ops.SINK, src=us)


def test_generated_cases_hold_every_small_float(tensor_cases, edge_cases):
  names = {d.name for d in dtypes.small_floats}
  assert set().union(*map(_small_dtypes, tensor_cases)) == names
  assert set().union(*map(_small_dtypes, edge_cases)) == names
  # fp8 values are converted both ways and selected, not only loaded: a CAST out of fp8 and a WHERE on fp8
  nodes = [u for c in tensor_cases + edge_cases for u in c.root.toposort()]
  assert any(u.op is Ops.CAST and u.src[0].dtype in FP8 for u in nodes)
  assert any(u.op is Ops.CAST and u.dtype in FP8 for u in nodes)
  assert any(u.op is Ops.WHERE and u.dtype in FP8 for u in nodes)
  # float16 and bfloat16 are computed on: arithmetic and reductions in their own dtype
  assert any(u.op in (Ops.ADD, Ops.MUL, Ops.SUB) and u.dtype is dtypes.float16 for u in nodes)
  assert any(u.op is Ops.REDUCE and u.dtype in (dtypes.float16, dtypes.bfloat16) for u in nodes)


def test_every_op_on_float16_and_bfloat16_is_generated():
  # every ALU op the registry admits on a small float (on fp8: WHERE alone), with the small floats weighted up
  want = {(op, d) for op in ELEMENTWISE if op in GroupOp.ALU for d in operand_dtypes(op) if d.is_small_float}
  assert (Ops.WHERE, dtypes.float8_e5m2) in want and (Ops.ADD, dtypes.float8_e5m2) not in want and (Ops.SIN, dtypes.bfloat16) in want
  seen: set = set()
  for i in range(1500):
    seen |= {(u.op, u.src[-1].dtype) for u in case_for(11, i, SMALL).root.toposort() if u.op in GroupOp.ALU}
    if want <= seen: break
  assert sorted((o.name, d.name) for o, d in want - seen) == []


def test_generated_small_float_cases_are_legal_and_safe(tensor_cases, edge_cases):
  for c in tensor_cases:
    assert check(c.root, Stage.TENSOR) == [], c.index
    assert unsafe_reason(c.root, c.inputs) is None, c.index
  for c in edge_cases:
    assert check(c.root, Stage.KERNEL_GRAPH) == []
    assert kernel_unsafe_reason(c.root, c.inputs) is None


def test_fp8_never_meets_arithmetic(tensor_cases, edge_cases):
  for c in tensor_cases + edge_cases:
    for u in c.root.toposort():
      if u.op in GroupOp.ALU and any(s.dtype in FP8 for s in u.src[-2:]): assert u.op in FP8_OPS, (c.index, u.op)
      if u.op in GroupOp.Cast and u.src[0].dtype in FP8: continue
      assert not (u.op is Ops.REDUCE and u.dtype in FP8), c.index
      assert not (u.op is Ops.ATOMIC and u.src[1].dtype in FP8), c.index


def test_the_screens_refuse_fp8_arithmetic_as_the_spec_does():
  b = UOp.buffer(dtypes.float8_e4m3fn, 4, id=1)
  inputs = {1: np.array([1.0, -2.0, 0.5, 448.0], ml_dtypes.float8_e4m3fn)}
  for bad in (b + b, b.reduce(Ops.ADD, 1), b.maximum(b)):
    assert check(_sink(bad), Stage.TENSOR), bad.op
    assert unsafe_reason(_sink(bad), inputs) is not None, bad.op
  for fine in (b.cast(dtypes.float32) + b.cast(dtypes.float32), (b.cast(dtypes.float32) < b.cast(dtypes.float32)).where(b, b)):
    assert check(_sink(fine), Stage.TENSOR) == []
    assert unsafe_reason(_sink(fine), inputs) is None


def test_small_float_share_is_modest_by_default_and_leaves_other_cases_alone():
  held, same = 0, 0
  for i in range(120):
    c = case_for(4, i)
    held += bool(_small_dtypes(c))
    if "dtype:small" in c.features or c.kind != "tensor": continue  # (an edge kernel's constructs are drawn by weight)
    # a tensor case drawn without the small floats is the case the generator gives with them off
    off = case_for(4, i, {"dtype:small": 0.0})
    assert off.root is c.root and off.options == c.options
    same += 1
  assert 0 < held <= 15 and same > 60  # about a tenth of the cases hold small floats


def test_small_float_inputs_and_constants_survive_the_corpus(tmp_path):
  vals = [0.0, -0.0, 1.5, -2.0, math.nan, math.inf, -math.inf]
  bufs, inputs = [], {}
  for k, dt in enumerate(dtypes.small_floats, 1):
    fi = ml_dtypes.finfo(dt.np)
    v = [x for x in vals if math.isfinite(x) or math.isinf(dt.max)] + [float(fi.max), -float(fi.smallest_subnormal), float(fi.tiny)]
    inputs[k] = np.array(v, dt.np)
    b = UOp.buffer(dt, len(v), id=k)
    c = UOp.const(dt, -float(fi.smallest_subnormal)).expand((len(v),))
    bufs.append((b.cast(dtypes.float32) < UOp.const(dtypes.float32, 0.0).expand((len(v),))).where(b, c))
  case = Case(_sink(*bufs), inputs)
  e = load_entry(write_entry(tmp_path, case, ("parity", "x", "small"))[0])
  assert e.case.root is case.root
  for k, a in inputs.items():
    got = e.case.inputs[k]
    assert got.dtype == a.dtype and got.tobytes() == a.tobytes(), k  # every bit, -0.0 and the NaN included


def test_a_replicated_multi_of_a_small_float_holding_nan_is_one_value():
  # replicas are compared NaN to NaN in every float dtype, ml_dtypes' bfloat16 and fp8 included
  for dt in dtypes.small_floats:
    a, b = UOp.buffer(dt, 2, "CPU:0", id=1), UOp.buffer(dt, 2, "CPU:1", id=2)
    v = np.array([math.nan, 1.0], dt.np)
    got = evaluate(_sink(UOp.multi([a, b], None)), {1: v, 2: v.copy()})[0]
    assert np.isnan(got[0]) and got[1] == 1.0, dt


# ---- tolerances: from the formats and the roundings ----
def _add16(n: int) -> tuple[UOp, dict]:
  a, b = UOp.buffer(dtypes.float16, n, id=1), UOp.buffer(dtypes.float16, n, id=2)
  r = np.random.default_rng(0)
  return _sink(a + b), {1: r.uniform(1, 2, n).astype(np.float16), 2: r.uniform(1, 2, n).astype(np.float16)}


def test_a_float16_result_one_rounding_away_agrees_and_many_ulps_away_does_not():
  g, inputs = _add16(8)
  ref = evaluate(g, inputs)[0]
  errs = output_errors(g)
  assert errs == [2 ** -11]  # one ADD: half float16's eps, 2^-10 / 2
  # the exact sum rounded the other way: a neighbour of the reference's result
  other = np.nextafter(ref, np.float16(np.inf)).astype(np.float16)
  assert compare([ref], [other], errs) is None
  far = (ref.astype(np.float32) * (1 + 16 * 2 ** -10)).astype(np.float16)  # 16 ulps away
  assert compare([ref], [far], errs) is not None
  # float32's precision would refuse the neighbour: the tolerance is float16's
  assert compare([ref.astype(np.float32)], [other.astype(np.float32)], [2 ** -24]) is not None


def test_tolerance_of_float16_is_float32s_times_the_eps_ratio():
  for n in (1, 7, 100):
    assert tolerance(dtypes.float16, n) / tolerance(dtypes.float32, n) == pytest.approx(2 ** -10 / 2 ** -23)
    assert tolerance(dtypes.bfloat16, n) / tolerance(dtypes.float32, n) == pytest.approx(2 ** -7 / 2 ** -23)
    assert tolerance(dtypes.float32, n) == pytest.approx(n * 2 ** -23)


def test_a_reduce_of_n_terms_rounds_n_minus_1_times():
  x = UOp.buffer(dtypes.float16, 16, id=1).reshape((16, 1))
  s = x.reduce(Ops.ADD, 1)
  assert output_errors(_sink(s)) == [pytest.approx(15 * 2 ** -11)]
  # on float32 values converted from float16: float16's roundings count, the exact widening none
  wide = (x + x).cast(dtypes.float32).reduce(Ops.ADD, 1)
  assert output_errors(_sink(wide)) == [pytest.approx(2 ** -11 + 15 * 2 ** -24)]
  # exact ops (moves, MAX, WHERE) add nothing
  assert output_errors(_sink(x.maximum(x).flip((True, False)))) == [0.0]


def test_a_sum_of_float16_in_another_order_agrees_and_a_dropped_term_does_not():
  rng = np.random.default_rng(3)
  terms = rng.uniform(0.5, 2.0, 16).astype(np.float16)
  x = UOp.buffer(dtypes.float16, 16, id=1).reshape((16, 1))
  errs = output_errors(_sink(x.reduce(Ops.ADD, 1)))
  def seq(ts: np.ndarray) -> np.ndarray:
    acc = np.float16(0)
    for t in ts: acc = np.float16(np.float32(acc) + np.float32(t))
    return np.array([acc])
  assert compare([seq(terms)], [seq(terms[::-1].copy())], errs) is None
  # 15 roundings of float16 allow 2 * 15 * 2^-11, 1.5%: a term of the sum left out (at least 0.5 of at most 32) is more
  assert compare([seq(terms)], [seq(terms[:-1])], errs) is not None


def test_float16_gradients_through_a_call_are_compared_at_float16s_precision():
  # a campaign's finding (reduced): SIN of a float16 buffer read inside a value call and outside it, so the gradient
  # sums two contributions, in another order through the call than inlined: one float16 ulp apart, which a float32
  # tolerance called a mismatch
  x = UOp.buffer(dtypes.float16, 2, id=5)
  s = x.alu(Ops.SIN)
  call = UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(x, UOp.const(dtypes.bool, False), s)),), arg="f7")
  root = _sink(call.gettuple(2), s)
  assert call_gradient_mismatches(root, {5: np.array([0.25, 0.75], np.float16)}, seed=756) == []  # the weights of case 756


@pytest.mark.skipif(not available_compilers(), reason="no C compiler")
def test_small_float_cases_agree_on_the_cpu_backend(tensor_cases, edge_cases):
  # the C renderer's small floats against the evaluator, on generated cases that hold them (one compile for the batch)
  cases = [c for c in tensor_cases if _small_dtypes(c)][:6] + [c for c in edge_cases if "edge:small" in c.features][:6]
  assert len(cases) == 12
  ch = Checker(Config(backends=("reference", "cpu"), metamorphic=False, gradients=False, numeric_gradients=False))
  for c, fs in zip(cases, ch.check_batch(cases)):
    assert not fs, (c.index, sorted(c.features), [f.describe() for f in fs][:1])


def test_a_short_campaign_with_small_floats_weighted_up_finds_nothing(tmp_path):
  w = {"dtype:small": 12.0, "kind:edge": 0.3, "edge:small": 6.0}
  assert sum(bool(_small_dtypes(case_for(11, i, w))) for i in range(40)) >= 15  # the campaign's cases hold small floats
  s = run_campaign(CampaignConfig(seconds=60, seed=11, workers=0, corpus=str(tmp_path), max_cases=60, weights=w), io.StringIO())
  assert s.cases == 60
  assert not s.findings, [f.describe() for f in s.findings][:2]

"""Edge values: the generators draw them, the UB screen accepts them where the registry defines the op on them and
refuses them where it does not, and the one comparison of results treats them as docs/spec.md says."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from fuzz.check.agree import compare, floats_agree
from fuzz.check.oracles import Checker, Config
from fuzz.generate.safety import Analysis, unsafe_reason
from fuzz.generate.kinds import case_for
from tinyspec.dtype import DType, dtypes
from tinyspec.ops import DTYPE_CLASS, accepts
from tinyspec.ops.scalar import cast_undefined
from tinyspec.semantics import evaluate
from tinyspec.uop import GroupOp, Ops, UOp

SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 2.0, 0.75], np.float32)
OTHER = np.array([1.5, -np.inf, np.nan, 3.0, np.inf, -0.0], np.float32)
FLOAT_OPS = sorted((op for op in DTYPE_CLASS if accepts(op, dtypes.float32) and op not in (Ops.CAST, Ops.BITCAST, Ops.WHERE)),
                   key=lambda o: o.value)


def _sink(u: UOp) -> UOp: return UOp(Ops.SINK, src=(u,))


def _buf(id: int, dt: DType = dtypes.float32) -> UOp: return UOp.buffer(dt, len(SPECIALS), id=id)


def _covers(info: Any, out: np.ndarray) -> bool:
  """Every value of out is one the Info allows: a flagged special, or a finite value in [lo, hi]."""
  a = np.asarray(out, np.float64)
  fin = a[np.isfinite(a)]
  return ((info.nan or not np.isnan(a).any()) and (info.pinf or not (a == np.inf).any()) and (info.ninf or not (a == -np.inf).any())
          and bool(np.all((fin >= info.lo) & (fin <= info.hi))))


# ---- the generators ----
def _drawn(seed: int, n: int) -> list[Any]:
  """Every input element and constant of n generated cases."""
  vals: list[Any] = []
  for i in range(n):
    c = case_for(seed, i)
    for arr in c.inputs.values(): vals += [(arr.dtype, v) for v in np.asarray(arr).reshape(-1).tolist()]
    vals += [(u.dtype.np, u.arg) for u in c.root.toposort() if u.op is Ops.CONST]
  return vals


def test_generated_cases_hold_edge_and_special_values():
  vals = _drawn(3, 200)
  floats = [v for dt, v in vals if np.dtype(dt).kind == "f"]
  assert any(math.isnan(v) for v in floats), "no NaN drawn"
  assert math.inf in floats and -math.inf in floats, "no infinity drawn"
  assert any(v == 0 and math.copysign(1, v) < 0 for v in floats), "no -0.0 drawn"
  assert any(v == float(np.finfo(dt).max) for dt, v in vals if np.dtype(dt).kind == "f"), "no largest finite float drawn"
  ints = [(np.dtype(dt), v) for dt, v in vals if np.dtype(dt).kind in "iu" and np.dtype(dt).itemsize >= 2]
  assert any(v == np.iinfo(dt).min for dt, v in ints if dt.kind == "i"), "no int minimum drawn"
  assert any(v == np.iinfo(dt).max for dt, v in ints), "no int maximum drawn"


def test_edge_values_leave_other_cases_as_they_were():
  # edge values come from a Random of their own: with their weights at 0 a case draws none and is otherwise the same
  off = {"value:edge": 0.0, "value:special": 0.0}
  kept = edged = 0
  for i in range(80):
    c, d = case_for(5, i), case_for(5, i, off)
    assert not any(f.startswith("value:") for f in d.features)
    if any(f.startswith("value:") for f in c.features):
      edged += 1
      continue
    kept += 1
    assert c.root is d.root, f"case {i} changed though it drew no edge value"
    assert c.inputs.keys() == d.inputs.keys()
    assert all(c.inputs[k].dtype == d.inputs[k].dtype and c.inputs[k].tobytes() == d.inputs[k].tobytes() for k in c.inputs)  # every bit
  assert kept and edged


def test_edge_weights_steer_the_draws():
  many = sum(any(f.startswith("value:special") for f in case_for(9, i, {"value:special": 20.0}).features) for i in range(40))
  few = sum(any(f.startswith("value:special") for f in case_for(9, i).features) for i in range(40))
  assert many > few


# ---- the screen, over the registry ----
@pytest.mark.parametrize("op", FLOAT_OPS, ids=lambda o: o.name)
def test_screen_accepts_float_ops_on_special_values(op: Ops):
  # every float op of the registry has a defined result on NaN, infinities and -0.0 (docs/spec.md): the screen accepts
  # it, and the Info it gives holds every value the evaluator computes
  a, b = _buf(1), _buf(2)
  inputs = {1: SPECIALS.copy(), 2: OTHER.copy()}
  if op is Ops.RECIP: inputs[1] = np.array([np.nan, np.inf, -np.inf, 4.0, 2.0, 0.5], np.float32)  # kept away from 0 (docs/spec.md)
  if op is Ops.LOG2: inputs[1] = np.abs(inputs[1]) + np.float32(1)
  if op is Ops.FDIV: inputs[2] = np.array([1.5, -np.inf, np.nan, 3.0, np.inf, 4.0], np.float32)  # finite divisors kept away from 0, as RECIP's
  u = a.alu(op) if op in GroupOp.Unary else a.alu(op, b)
  assert (why := unsafe_reason(_sink(u), inputs)) is None, why
  info = Analysis(inputs).info(u)
  out = evaluate(_sink(u), {k: v.copy() for k, v in inputs.items()})[0]
  if u.dtype.is_float: assert _covers(info, out), (info, out)


@pytest.mark.parametrize("rop", [Ops.ADD, Ops.MUL, Ops.MAX], ids=lambda o: o.name)
def test_screen_accepts_reductions_over_special_values(rop: Ops):
  a = _buf(1)
  for vals in (SPECIALS, OTHER, np.array([np.inf, -np.inf, 1, 2, 0, 3], np.float32)):
    u = UOp(Ops.REDUCE, dtypes.float32, (a.reshape((2, 3)),), (rop, 1))
    assert (why := unsafe_reason(_sink(u), {1: vals.copy()})) is None, why
    assert _covers(Analysis({1: vals}).info(u), evaluate(_sink(u), {1: vals.copy()})[0])


@pytest.mark.parametrize("dst", [d for d in (dtypes.bool, *dtypes.ints, dtypes.float64) if d is not dtypes.index], ids=lambda d: d.name)
def test_screen_casts_special_values_as_the_registry_defines(dst: DType):
  # a conversion is refused exactly where the registry calls it undefined (NaN or an infinity to an integer)
  vals = SPECIALS.copy()
  undefined = any(cast_undefined(float(v), dtypes.float32, dst) is not None for v in vals)
  why = unsafe_reason(_sink(_buf(1).cast(dst)), {1: vals})
  assert (why is not None) == undefined, why
  finite = np.array([-0.0, 2.0, 0.75, 1.0, 4.0, 8.0], np.float32)
  assert unsafe_reason(_sink(_buf(1).cast(dst)), {1: finite}) is None


def test_screen_refuses_a_bitcast_of_a_nan_and_keeps_other_refusals():
  assert unsafe_reason(_sink(_buf(1).bitcast(dtypes.int32)), {1: SPECIALS.copy()}) is not None  # NaN payloads are open
  assert unsafe_reason(_sink(_buf(1).bitcast(dtypes.int32)), {1: np.array([np.inf, -np.inf, -0.0, 1, 2, 3], np.float32)}) is None
  assert unsafe_reason(_sink(_buf(1).alu(Ops.RECIP)), {1: SPECIALS.copy()}) is not None  # -0.0: RECIP near 0
  big = np.array([np.finfo(np.float32).max, 1, 2, 3, 4, 5], np.float32)
  assert unsafe_reason(_sink(_buf(1).maximum(_buf(2))), {1: big, 2: OTHER.copy()}) is None  # passed on, never computed
  assert unsafe_reason(_sink(_buf(1).alu(Ops.ADD, _buf(2))), {1: big, 2: OTHER.copy()}) is not None  # may overflow
  i32 = UOp.buffer(dtypes.int32, 2, id=3)
  zero_div = i32.alu(Ops.IDIV, UOp.const(dtypes.int32, 0).expand((2,)))
  assert unsafe_reason(_sink(zero_div), {3: np.array([1, 2], np.int32)}) is not None  # division by zero stays undefined


# ---- the one comparison ----
def test_nan_equals_any_nan():
  payloads = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF], np.uint32).view(np.float32)
  assert compare(payloads, payloads[::-1].copy()) is None
  assert compare(np.float64([np.nan, 1.0]), np.float64([-np.nan, 1.0])) is None
  assert compare(np.float32([np.nan]), np.float32([0.0])) is not None
  assert compare(np.float32([1.0]), np.float32([np.nan])) is not None


def test_an_infinity_equals_only_itself():
  assert compare(np.float32([np.inf, -np.inf]), np.float32([np.inf, -np.inf])) is None
  assert compare(np.float32([np.inf]), np.float32([-np.inf])) is not None
  assert compare(np.float32([np.inf]), np.float32([np.finfo(np.float32).max])) is not None
  assert compare(np.float64([-np.inf]), np.float64([np.nan])) is not None


def test_zeros_of_either_sign_agree():
  # docs/spec.md leaves the sign of a zero result open
  assert compare(np.float32([-0.0, 0.0]), np.float32([0.0, -0.0])) is None
  assert compare(np.float64([-0.0]), np.float64([0.0])) is None


def test_finite_tolerances():
  assert bool(np.all(floats_agree(np.float32([1.0, 1e3]), np.float32([1.00001, 1e3 + 0.05]), 1e-4, 1e-4)))
  assert compare(np.float32([1.0]), np.float32([1.01])) is not None
  assert compare(np.float64([1.0]), np.float64([1.0 + 1e-5])) is not None
  # the absolute tolerance scales with an output's largest computed magnitude, not with a largest-finite edge value
  big = np.float32(np.finfo(np.float32).max)
  assert compare(np.float32([big, 1.0]), np.float32([big, 2.0])) is not None
  assert compare(np.float32([1e4, 1.0]), np.float32([1e4, 1.5])) is None


def test_edge_cases_give_no_finding_on_the_reference_pipeline():
  cases = [c for c in (case_for(13, i) for i in range(120)) if any(f.startswith("value:") for f in c.features)][:12]
  assert cases
  for c, fs in zip(cases, Checker(Config()).check_batch(cases)):
    assert not fs, f"case {c.index}: " + "; ".join(f.describe() for f in fs)

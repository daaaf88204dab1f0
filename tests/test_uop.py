"""The IR's own guarantees: interning keys, buffer ids, substitution, and sound integer bounds."""
from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyspec.dtype import dtypes
from tinyspec.ops.intervals import bounds_rule
from tinyspec.pyrender import render_module
from tinyspec.semantics import evaluate
from tinyspec.uop import BufferArg, Ops, UOp, next_buffer_id, substitute

pytestmark = pytest.mark.spec


def test_float_constants_intern_by_value_bits() -> None:
  assert UOp.const(dtypes.float32, 0.0) is not UOp.const(dtypes.float32, -0.0)
  assert UOp.const(dtypes.float32, math.nan) is UOp.const(dtypes.float32, math.nan)
  assert UOp.const(dtypes.int32, 1) is not UOp.const(dtypes.bool, True)


def test_buffer_ids_are_never_handed_out_twice() -> None:
  a, b = next_buffer_id(), next_buffer_id()
  assert a != b
  # a graph rebuilt from source (a corpus entry) reserves its ids: later buffers get new ones
  src = render_module(UOp(Ops.SINK, src=(UOp(Ops.BUFFER, dtypes.int32, (), BufferArg(b + 1000, 4)),)))
  ns: dict = {}
  exec(src, ns)
  ns["graph"]()
  assert next_buffer_id() > b + 1000
  assert UOp.buffer(dtypes.int32, 4) is not UOp.buffer(dtypes.int32, 4)


def test_substitute_rebuilds_users_and_enters_call_bodies_only_when_asked() -> None:
  p = UOp.param(0, dtypes.float32, 4)
  body = UOp(Ops.TUPLE, src=(p + p,))
  call = UOp(Ops.CALL, src=(body, p), arg="f")
  root = UOp(Ops.SINK, src=(call.gettuple(0), p * p))
  q = UOp.param(0, dtypes.float32, 4).after(UOp(Ops.SINK))
  outside = substitute(root, {p: q}, into_calls=False)
  assert outside is UOp(Ops.SINK, src=(UOp(Ops.CALL, src=(body, q), arg="f").gettuple(0), q * q))
  inside = substitute(root, {p: q})
  assert inside is UOp(Ops.SINK, src=(UOp(Ops.CALL, src=(UOp(Ops.TUPLE, src=(q + q,)), q), arg="f").gettuple(0), q * q))
  assert substitute(root, {}) is root and substitute(root, {UOp.const(dtypes.int32, 9): q}) is root
  assert substitute(root, {root: p}) is p


R = [UOp.range(5, 0), UOp.range(3, 1)]
LEAVES = [*R, UOp.const(dtypes.index, -4), UOp.const(dtypes.index, 3), UOp.const(dtypes.index, 7)]


@st.composite
def int_exprs(draw, depth: int = 3) -> UOp:
  if depth == 0 or draw(st.booleans()): return draw(st.sampled_from(LEAVES))
  op = draw(st.sampled_from([Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.NEG, Ops.WHERE]))
  a, b = draw(int_exprs(depth - 1)), draw(int_exprs(depth - 1))
  if op is Ops.NEG: return -a
  if op is Ops.WHERE: return (a < b).where(a, b * 2)
  return a.alu(op, b)


@settings(max_examples=300, deadline=None)
@given(int_exprs())
def test_bounds_contain_every_value(e: UOp) -> None:
  """vmin/vmax hold every value the expression takes over all range values (division by zero included, with the
  evaluator's defined values there), computed independently by the reference evaluator."""
  for vals in itertools.product(range(5), range(3)):
    x = substitute(e, {r: UOp.const(dtypes.index, v) for r, v in zip(R, vals)})
    v = int(np.asarray(evaluate(x)))
    assert e.vmin <= v <= e.vmax, f"{v} outside [{e.vmin}, {e.vmax}] at ranges {vals}"


@settings(max_examples=100, deadline=None)
@given(int_exprs())
def test_bounds_are_the_registry_interval_rule(e: UOp) -> None:
  """UOp.vmin / vmax are the op registry's intervals (the rule tinyspec.ops.intervals installs), node by node."""
  for u in e.toposort(): assert (u.vmin, u.vmax) == bounds_rule(u)


def test_bounds_work_after_importing_the_ir_alone() -> None:
  """Importing the IR module imports the package, and with it the registry that installs the interval rule."""
  code = "from tinyspec.dtype import dtypes; from tinyspec.uop import UOp; x = UOp.variable('x', 2, 9); print((x * 3).vmin, (x * 3).vmax)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["6", "27"]


def test_a_call_is_a_value_call_or_an_opaque_one_by_its_body():
  from builders import call, k_add, tup
  from tinyspec.uop import is_opaque_call, is_value_call
  p = UOp.param(0, dtypes.float32, 4)
  value, kernel, copy = call(tup(p + p), p), call(k_add(), p, p, p), call(UOp(Ops.COPY, dtypes.float32, (p,), "CPU"), p)
  empty = UOp(Ops.CALL, dtypes.void, ())
  assert [is_value_call(u) for u in (value, kernel, copy, empty, p)] == [True, False, False, False, False]
  assert [is_opaque_call(u) for u in (value, kernel, copy, empty, p)] == [False, True, True, False, False]

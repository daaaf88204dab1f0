"""Bounded variables: DEFINE_VAR and BIND at every stage (spec rules, lowering, evaluation, C and OpenCL, pictures, pyrender)."""
from __future__ import annotations

import numpy as np
import pytest

from builders import assert_breaks_exactly, buf, c, call, f32, i32, ic, idx, rng, sink
from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.lower.pipeline import lower
from tinyspec.semantics import EvalError, evaluate, evaluate_kernel
from tinyspec.pyrender import render_module
from tinyspec.uop import VarArg

pytestmark = pytest.mark.spec

N = UOp.variable("n", 1, 6)


def scaled(bound: UOp, n: int = 6) -> UOp:
  """A tensor graph x * n + n over an int32 buffer of n elements, n a (bound) variable."""
  x = buf(n, i32, id=7100).reshape((n,))
  v = bound.cast(i32).expand((n,))
  return sink(x * v + v)


# ---- spec ----
def test_bound_and_unbound_variables_are_legal_tensor_values():
  assert check(scaled(N.bind(3)), Stage.TENSOR) == []
  assert check(scaled(N), Stage.TENSOR) == []
  assert N.vmin == 1 and N.vmax == 6 and N.bind(3).vmin == 1 and N.bind(3).vmax == 6  # a bound variable keeps its bounds


@pytest.mark.parametrize("node, rules", [
  (UOp(Ops.DEFINE_VAR, f32, (), VarArg("n", 0, 3)), {"var.dtype"}),
  (UOp(Ops.DEFINE_VAR, dtypes.int8, (), VarArg("n", 0, 300)), {"var.dtype"}),
  (UOp(Ops.DEFINE_VAR, idx, (), VarArg("n", 5, 3)), {"node.arg"}),
  (UOp(Ops.DEFINE_VAR, idx, (), VarArg("not a name", 0, 3)), {"node.arg"}),
  (UOp(Ops.DEFINE_VAR, idx, (), (0, 3)), {"node.arg"}),
  (N.bind(7), {"bind.in_bounds"}),
  (UOp(Ops.BIND, idx, (ic(1), ic(2))), {"bind.form"}),
  (UOp(Ops.BIND, i32, (N, ic(2))), {"bind.form"}),
  (UOp(Ops.BIND, idx, (N, N)), {"bind.form"}),
])
def test_malformed_variables(node, rules):
  assert_breaks_exactly(sink(node), Stage.TENSOR, rules)


def test_one_graph_binds_a_name_to_one_value():
  vs = assert_breaks_exactly(sink(N.bind(2) + N.bind(3)), Stage.TENSOR, {"bind.one_value"})
  assert "n is bound to 3 and to 2" in vs[0].message or "n is bound to 2 and to 3" in vs[0].message
  assert check(sink(N.bind(2) + N.bind(2) * ic(2)), Stage.TENSOR) == []


def var_kernel(v: UOp = N, n: int = 8) -> UOp:
  """out[r] = a[r + v] for r < 2 over storage of n elements (in bounds for v <= n - 2)."""
  p0, p1 = UOp.param(0, f32, 2), UOp.param(1, f32, n)
  r = rng(2, 0)
  return sink(p0.index(r).store(p1.index(r + v).load()).end(r))


def test_kernel_reads_a_variable_its_call_binds():
  g = sink(buf(2, id=7200).after(call(var_kernel(), buf(2, id=7200), buf(8, id=7201), N.bind(4))))
  assert check(g, Stage.KERNEL) == []
  assert check(g, Stage.KERNEL_GRAPH) == []


def test_kernel_reads_only_variables_it_is_passed():
  g = sink(buf(2, id=7202).after(call(var_kernel(), buf(2, id=7202), buf(8, id=7203))))
  vs = assert_breaks_exactly(g, Stage.KERNEL, {"kgraph.call_vars"})
  assert "reads variable n" in vs[0].message
  other = UOp.variable("n", 0, 2).bind(1)  # the same name with other bounds is another variable
  assert_breaks_exactly(sink(buf(2, id=7204).after(call(var_kernel(), buf(2, id=7204), buf(8, id=7205), other))), Stage.KERNEL,
                        {"kgraph.call_vars"})


def test_a_variable_passed_on_unbound_is_legal_and_a_param_cannot_stand_for_it():
  g = sink(buf(2, id=7206).after(call(var_kernel(), buf(2, id=7206), buf(8, id=7207), N)))
  assert check(g, Stage.KERNEL) == []
  bad = sink(buf(2, id=7208).after(call(var_kernel(), buf(2, id=7208), N.bind(4))))  # PARAM 1 stands for the variable
  assert "call.param_slot" in {v.rule for v in check(bad, Stage.KERNEL)}


def test_a_variable_arg_is_legal_where_a_computed_value_is_not():
  g = sink(buf(2, id=7209).after(call(var_kernel(), buf(2, id=7209), buf(8, id=7210), N.bind(4) + ic(1))))
  assert "kgraph.call_arg_storage" in {v.rule for v in check(g, Stage.KERNEL)}


def test_no_bind_inside_a_kernel():
  vs = check(var_kernel(N.bind(4)), Stage.KERNEL)
  assert {v.rule for v in vs} == {"kernel.no_bind"}


def test_index_bounds_use_the_variables_bounds():
  assert check(var_kernel(UOp.variable("n", 0, 6)), Stage.KERNEL) == []
  vs = check(var_kernel(UOp.variable("n", 0, 7)), Stage.KERNEL)
  assert [v.rule for v in vs] == ["kernel.index_bounds"]
  assert "n" in vs[0].message


# ---- lowering and running ----
@pytest.mark.parametrize("backend", ["reference", "cpu", "opencl"])
def test_bound_variable_lowers_to_a_scalar_kernel_arg(backend):
  root, ins = scaled(N.bind(3)), {7100: np.arange(6, dtype=np.int32)}
  want = np.arange(6) * 3 + 3
  if backend == "reference": got = evaluate(root, ins)[0]
  else:
    from tinyspec.runtime import run
    try: got = run(root, ins, backend)[0]
    except RuntimeError as e:
      if backend == "opencl" and "OpenCL" in str(e): pytest.skip(str(e))
      raise
  np.testing.assert_array_equal(got, want)


def test_every_stage_passes_the_variable_and_c_takes_it_by_value():
  st = lower(scaled(N.bind(3)), backend="c")
  kcall = next(u for u in st["rangeify"].toposort() if u.op is Ops.CALL)
  assert kcall.src[-1] is N.bind(3) and N in kcall.src[0].toposort() and N.bind(3) not in kcall.src[0].toposort()
  src = next(u for u in st["render"].toposort() if u.op is Ops.SOURCE).arg.text
  assert "const int32_t var_n" in src and "var_n" in src.split("{", 1)[1]
  assert check(st["render"], Stage.PROGRAM) == []


def test_unbound_variable_is_an_input_of_the_run():
  root = scaled(N)
  ins = {7100: np.arange(6, dtype=np.int32), "n": 5}
  np.testing.assert_array_equal(evaluate(root, ins)[0], np.arange(6) * 5 + 5)
  from tinyspec.runtime import cpu
  np.testing.assert_array_equal(cpu.run(root, ins)[0], np.arange(6) * 5 + 5)
  kcall = next(u for u in lower(root, backend="c")["rangeify"].toposort() if u.op is Ops.CALL)
  assert kcall.src[-1] is N  # passed on, for the run to bind
  with pytest.raises(EvalError, match="not bound"): evaluate(root, {7100: np.arange(6, dtype=np.int32)})
  with pytest.raises(EvalError, match="outside its bounds"): evaluate(root, {7100: np.arange(6, dtype=np.int32), "n": 9})


def test_graph_binding_wins_for_its_name_and_inputs_must_agree():
  root = sink(buf(6, i32, id=7100).reshape((6,)) * N.bind(2).cast(i32).expand((6,)) + N.cast(i32).expand((6,)))
  ins = {7100: np.arange(6, dtype=np.int32)}
  np.testing.assert_array_equal(evaluate(root, ins)[0], np.arange(6) * 2 + 2)
  with pytest.raises(EvalError, match="bound to 2 but the inputs give 5"): evaluate(root, {**ins, "n": 5})


def test_kernel_evaluator_reads_variables_by_name():
  out, a = np.zeros(2, np.float32), np.arange(8, dtype=np.float32)
  evaluate_kernel(var_kernel(), [out, a], {"n": 3})
  np.testing.assert_array_equal(out, [3, 4])
  with pytest.raises(EvalError, match="variable n is not bound"): evaluate_kernel(var_kernel(), [out, a])


def test_a_variable_bounds_a_loop():
  # for r < n: out[r] = 2 * a[r]; the rest of out keeps its zeros
  p0, p1 = UOp.param(0, f32, 6), UOp.param(1, f32, 6)
  r = UOp(Ops.RANGE, idx, (N,), rng(1, 0).arg)
  body = sink(p0.index(r).store(p1.index(r).load() * c(2.0)).end(r))
  g = sink(buf(6, id=7300).after(call(body, buf(6, id=7300), buf(6, id=7301), N.bind(4))))
  assert check(g, Stage.KERNEL) == []
  a = np.arange(1, 7, dtype=np.float32)
  np.testing.assert_array_equal(evaluate(g, {7301: a})[0], [2, 4, 6, 8, 0, 0])
  from tinyspec.runtime import cpu
  np.testing.assert_array_equal(cpu.run(g, {7301: a})[0], [2, 4, 6, 8, 0, 0])


# ---- frontend ----
def test_frontend_variable_operand_and_index():
  m = UOp.variable("m", 0, 3)
  t = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
  y = t * m.bind(2)
  assert y.dtype is dtypes.float32
  np.testing.assert_array_equal(y.numpy(), np.arange(12).reshape(4, 3) * 2)
  row = t[m.bind(2)]
  np.testing.assert_array_equal(row.numpy(), [6, 7, 8])
  np.testing.assert_array_equal(row.numpy("cpu"), [6, 7, 8])
  r = Tensor.sink(t[m] + 1)
  np.testing.assert_array_equal(evaluate(r, {**inputs_of(r), "m": 3})[0], [10, 11, 12])
  assert check(r, Stage.TENSOR) == []
  with pytest.raises(IndexError, match="outside axis 1"): t[0, m]  # m may reach 3, axis 1 has 3 elements


def test_frontend_variable_index_among_slices_and_ellipsis():
  m = UOp.variable("m", 0, 2)
  a = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
  t = Tensor(a)
  y = t[:, m.bind(1), 1:3]
  assert y.dtype is dtypes.int8 and y.shape == (2, 2)
  np.testing.assert_array_equal(y.numpy(), a[:, 1, 1:3])
  np.testing.assert_array_equal(t[1, ..., m.bind(2)].numpy("cpu"), a[1, ..., 2])
  with pytest.raises(IndexError, match="index tensors"): t[:, m.bind(0), [0, 1]]


# ---- pictures and Python source ----
def test_pyrender_rebuilds_variables():
  root = scaled(N.bind(3))
  ns: dict = {}
  exec(render_module(root), ns)  # noqa: S102
  assert ns["graph"]() is root


def test_drawing_names_the_variable_and_its_bounds():
  from tinyspec import viz
  dot = viz.draw(scaled(N.bind(3))).source
  assert "n in [1, 6]" in dot and "DEFINE_VAR" in dot and "BIND" in dot


def test_z3_sees_one_variable_per_name():
  from tinyspec.smt import Translator
  t1, t2 = Translator(prefix="p_"), Translator(prefix="q_")
  assert t1(N).eq(t2(N)) and t1(N.bind(3)).as_long() == 3


# ---- a precompiled call passed a variable (tinygrad's callified graph binds its Variables so) ----
def scaled_call(arg: UOp) -> tuple[UOp, UOp, UOp]:
  """out = x * n through a precompiled call over storage x, out (6 int32) and the variable arg (its body reads n)."""
  x, out = buf(6, i32, id=7400), buf(6, i32, id=7401)
  p0, p1 = UOp.param(0, i32, 6), UOp.param(1, i32, 6)
  body = sink(p1.after(p1.store(p0 * N.cast(i32).expand((6,)))))
  return call(body, x, out, arg), x, out


def test_a_precompiled_call_takes_a_variable_its_body_reads_as_the_define_var():
  pc, x, out = scaled_call(N.bind(4))
  g = sink(out.after(pc))
  assert check(g, Stage.TENSOR) == []
  np.testing.assert_array_equal(evaluate(g, {7400: np.arange(6, dtype=np.int32)})[0], np.arange(6) * 4)


def test_a_precompiled_call_is_still_refused_a_computed_value_and_a_param_for_a_variable():
  pc, x, out = scaled_call(N.bind(4) + ic(1))
  assert "tensor.precompiled_arg_storage" in {v.rule for v in check(sink(out.after(pc)), Stage.TENSOR)}
  p2 = UOp.param(2, idx, 1)   # a PARAM standing for the variable arg: the body must read it as its DEFINE_VAR
  body = sink(UOp.param(1, i32, 6).after(UOp.param(1, i32, 6).store(UOp.param(0, i32, 6) * p2.cast(i32).reshape(()).expand((6,)))))
  vs = check(sink(buf(6, i32, id=7403).after(call(body, buf(6, i32, id=7402), buf(6, i32, id=7403), N.bind(4)))), Stage.TENSOR)
  assert "call.param_slot" in {v.rule for v in vs}

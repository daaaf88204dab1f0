"""The read-modify-write kernel generator (fuzz.generate.kernels): its cases are legal and safe, it builds the loop forms it
claims to, and on them the reference evaluator equals compiled C (and C equals a plain sequential interpreter), before
and after every remaining pass of the lowering."""
from __future__ import annotations

import random
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.generate.kernels import rmw_kernel_case
from fuzz.generate.strategies import rmw_kernels
from fuzz.generate.kernel_safety import kernel_unsafe_reason
from fuzz.check.kernel_seq import run_sequential
from fuzz.check.oracles import Checker, Config
from fuzz.generate.kinds import case_for
from tinyspec.dtype import dtypes
from tinyspec.runtime import cpu
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import AddrSpace, Ops, UOp

CC = "tcc" if shutil.which("tcc") else None   # compiles a small kernel several times faster than gcc -O2


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
  monkeypatch.setenv("TINYSPEC_CACHE", str(tmp_path_factory.getbasetemp() / "tinyspec-cache"))


def cases(n: int, tag: str) -> list:
  return [rmw_kernel_case(random.Random(f"rmw-test:{tag}:{i}")) for i in range(n)]


@pytest.fixture(scope="module")
def many() -> list:
  return cases(300, "features")


def same(a: list, b: list) -> str | None:
  """None when every output has one dtype and equal elements (bit-exact ints, exactly equal floats)."""
  for i, (x, y) in enumerate(zip(a, b)):
    x, y = np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)
    if x.dtype != y.dtype: return f"output {i}: dtype {x.dtype} against {y.dtype}"
    if not np.array_equal(x, y):
      k = int(np.flatnonzero(x != y)[0])
      return f"output {i} element {k}: {x[k]!r} against {y[k]!r}"
  return None if len(a) == len(b) else f"{len(a)} outputs against {len(b)}"


# ---- legal and safe ----
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rmw_kernels())
def test_generated_kernels_are_legal_and_safe(case):
  assert case.kind == "kernel" and "kind:rmw" in case.features
  assert check(case.root, Stage.KERNEL_GRAPH) == []
  assert kernel_unsafe_reason(case.root, case.inputs) is None
  for b in (u for u in case.root.toposort() if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.GLOBAL): assert b.arg.size <= 64


def test_same_seed_same_case():
  a, b = rmw_kernel_case(random.Random("same")), rmw_kernel_case(random.Random("same"))
  assert a.root is b.root and a.options == b.options and a.features == b.features
  assert a.inputs.keys() == b.inputs.keys() and all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs)


def _one_kernel(dt, stores_of) -> tuple[UOp, dict]:
  """A kernel graph of one kernel over out (PARAM 0, 4 elements) and x (PARAM 1, 4 elements): SINK(stores_of(p0, p1, r))."""
  r = UOp.range(4, 0)
  p0, p1 = UOp.param(0, dt, 4), UOp.param(1, dt, 4)
  body = UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=tuple(stores_of(p0, p1, r))).end(r),))
  out, x = UOp.buffer(dt, 4, id=1), UOp.buffer(dt, 4, id=2)
  return UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, x))),)), {2: np.arange(4).astype(dt.np)}


def test_screen_rejects_what_the_generator_avoids():
  i32, f32, z = dtypes.int32, dtypes.float32, UOp.const(dtypes.index, 0)
  # ordered: the second store waits for the first through AFTER, both placed in the loop
  def ordered(p0, p1, r):
    s1 = p0.after(r).index(z).store(p1.index(r).load())
    return [s1, p0.after(s1, r).index(z).store(p0.after(s1, r).index(z).load() + p1.index(r).load())]
  assert kernel_unsafe_reason(*_one_kernel(i32, ordered)) is None
  unordered = _one_kernel(i32, lambda p0, p1, r: [p0.after(r).index(z).store(p1.index(r).load()), p0.after(r).index(r).store(p1.index(r).load())])
  assert "no dependency ordering" in kernel_unsafe_reason(*unordered)
  hoisted = _one_kernel(i32, lambda p0, p1, r: [p0.index(z).store(UOp.const(i32, 1))])
  assert "does not depend on that range" in kernel_unsafe_reason(*hoisted)
  div = _one_kernel(i32, lambda p0, p1, r: [p0.after(r).index(r).store(p1.index(r).load() // p0.after(r).index(r).load())])
  assert kernel_unsafe_reason(*div) is None  # division by a range holding 0 is defined (a // 0 == 0): cases reach it
  # a float accumulator that adds itself doubles each iteration: past exact after enough of them
  double = _one_kernel(f32, lambda p0, p1, r: [p0.after(r).index(z).store(p0.after(r).index(z).load() + p0.after(r).index(z).load())])
  assert "copies of written values" in kernel_unsafe_reason(*double)
  acc = UOp.buffer(i32, 1, addrspace=AddrSpace.REG, id=50)
  uninit = _one_kernel(i32, lambda p0, p1, r: [p0.after(r).index(r).store(acc.after(r).index(z).load())])
  assert "initialises" in kernel_unsafe_reason(*uninit)


# ---- parity: the evaluator against compiled C, and C against a sequential interpreter ----
def test_reference_equals_cpu():
  """Bit-exact ints, exactly equal floats: the generator keeps floats to values no summation order can change."""
  bad = []
  for i, c in enumerate(cases(70, "parity")):
    want = cpu.run(c.root, c.copy_inputs(), compiler=CC)
    if (msg := same(evaluate(c.root, c.copy_inputs()), want)) is not None: bad.append(f"case {i} ({sorted(c.features)[:6]}...): {msg}")
  assert not bad, f"{len(bad)} of 70 kernels differ; first: {bad[:3]}"


def test_cpu_equals_sequential_interpreter():
  """C runs the loops the way the kernels' dependencies say: a plain Python interpreter, sharing nothing with the
  evaluator or the lowering, gets the same numbers (so where the evaluator differs, C is the one that is right)."""
  for i, c in enumerate(cases(30, "seq")):
    got = cpu.run(c.root, c.copy_inputs(), compiler=CC)
    assert (msg := same(run_sequential(c.root, c.copy_inputs()), got)) is None, f"case {i}: {msg}"


def test_sequential_interpreter_runs_a_prefix_sum():
  # out[i] = (i > 0 ? out[i-1] : 0) + x[i], against numpy's cumsum: the interpreter itself is checked too
  r, n = UOp.range(6, 0), 6
  p0, p1 = UOp.param(0, dtypes.int32, n), UOp.param(1, dtypes.int32, n)
  one = UOp.const(dtypes.index, 1)
  prev = p0.after(r).index(r.alu(Ops.SUB, one)).load(UOp.const(dtypes.int32, 0), UOp.const(dtypes.index, 0) < r)
  body = UOp(Ops.SINK, src=(p0.index(r).store(prev + p1.index(r).load()).end(r),))
  out, x = UOp.buffer(dtypes.int32, n, id=1), UOp.buffer(dtypes.int32, n, id=2)
  root = UOp(Ops.SINK, src=(out.after(UOp(Ops.CALL, src=(body, out, x))),))
  xs = np.array([3, -1, 4, 1, -5, 9], dtype=np.int32)
  assert check(root, Stage.KERNEL_GRAPH) == []
  np.testing.assert_array_equal(run_sequential(root, {2: xs})[0], np.cumsum(xs))
  np.testing.assert_array_equal(cpu.run(root, {2: xs.copy()}, compiler=CC)[0], np.cumsum(xs))
  np.testing.assert_array_equal(evaluate(root, {2: xs.copy()})[0], np.cumsum(xs))


def test_neg_of_negative_float_constant():
  # rendered as -(-1.0f): once written --1.0f, a C decrement
  r = UOp.range(2, 0)
  v = -(UOp.const(dtypes.float32, -1.0)) + UOp.param(1, dtypes.float32, 2).index(r).load()
  body = UOp(Ops.SINK, src=(UOp.param(0, dtypes.float32, 2).index(r).store(v).end(r),))
  o, x = UOp.buffer(dtypes.float32, 2, id=1), UOp.buffer(dtypes.float32, 2, id=2)
  root = UOp(Ops.SINK, src=(o.after(UOp(Ops.CALL, src=(body, o, x))),))
  np.testing.assert_array_equal(cpu.run(root, {2: np.ones(2, np.float32)}, opts=())[0], [2.0, 2.0])


def test_folding_an_update_keeps_it_after_the_init():
  from tinyspec.lower.base import Trace
  from tinyspec.lower.pipeline import PASSES, make_options
  dt, z, r = dtypes.uint16, UOp.const(dtypes.index, 0), UOp.range(1, 0)
  acc, p0 = UOp.buffer(dt, 1, addrspace=AddrSpace.REG, id=1001), UOp.param(0, dt, 1)
  init = acc.after(r).index(z).store(UOp.const(dt, 0))
  update = acc.index(z).store(acc.after(init).index(z).load() | UOp.const(dt, 0xFFFF))
  upd = UOp(Ops.GROUP, src=(update, p0.after(r).index(z).store(UOp.const(dt, 0))))
  out = p0.index(z).store(acc.after(upd).index(z).load())
  o = UOp.buffer(dt, 1, id=1)
  root = UOp(Ops.SINK, src=(o.after(UOp(Ops.CALL, src=(UOp(Ops.SINK, src=(UOp(Ops.GROUP, src=(init, upd, out)).end(r),)), o))),))
  assert check(root, Stage.KERNEL_GRAPH) == [] and kernel_unsafe_reason(root, {}) is None
  assert run_sequential(root, {})[0].tolist() == evaluate(root, {})[0].tolist() == [0xFFFF]
  simplified = PASSES[[p.name for p in PASSES].index("simplify")].run(root, make_options(opts=()), Trace())
  assert evaluate(simplified, {})[0].tolist() == [0xFFFF]


def test_lowering_keeps_spec_and_meaning():
  """Every pass after rangeify: its output is legal at its stage and evaluates to what its input did (fuzz.check.oracles,
  as a campaign checks a kernel case), and the final program on the CPU matches."""
  checker = Checker(Config(backends=("reference", "cpu"), metamorphic=False, gradients=False, blame=False, cc=CC))
  cs = cases(40, "lower")
  found = [(i, f.describe()) for i, fs in enumerate(checker.check_batch(cs)) for f in fs]
  assert not found, f"{len(found)} findings; first: {found[0]}"


@pytest.mark.slow
def test_reference_equals_opencl():
  from tinyspec.runtime import opencl
  ok, why = opencl.available()
  if not ok: pytest.skip(f"OpenCL unavailable: {why}")
  for i, c in enumerate(cases(30, "opencl")):
    for opts in ((), None):  # None: the heuristic marks the outer loop GLOBAL
      got = opencl.run(c.root, c.copy_inputs(), opts=opts)
      assert (msg := same(evaluate(c.root, c.copy_inputs()), got)) is None, f"case {i} opts {opts}: {msg}"


# ---- the generator builds what it claims ----
def _storage(u: UOp) -> UOp:
  while u.op is Ops.AFTER: u = u.src[0]
  return u


def _stores(c) -> list[UOp]: return [u for u in c.root.toposort() if u.op is Ops.STORE]


def _loads_of(v: UOp, base: UOp) -> list[UOp]:
  return [u for u in v.toposort() if u.op is Ops.LOAD and _storage(u.src[0].src[0]) is base]


def _in_loop(u: UOp) -> bool: return bool(u.src[0].src[0].op is Ops.AFTER and any(d.op is Ops.RANGE for d in u.src[0].src[0].src[1:]))


def has_update(c, op: Ops) -> bool:
  """A STORE inside a loop whose value is op(LOAD of the element it writes, x)."""
  for s in _stores(c):
    v, ix = s.src[1], s.src[0]
    if v.op is op and _in_loop(s) and any(x.op is Ops.LOAD and x.src[0].src[1] is ix.src[1] and _storage(x.src[0].src[0]) is _storage(ix.src[0])
                                          for x in v.src):
      return True
  return False


def has_prefix(c) -> bool:
  """A STORE in a loop that reads its own buffer at another index placed in the loop: out[i] = out[i - k] op x."""
  for s in _stores(c):
    base = _storage(s.src[0].src[0])
    if base.op is not Ops.PARAM or not _in_loop(s): continue
    if any(ld.src[0].src[1] is not s.src[0].src[1] and ld.src[0].src[1].op is not Ops.CONST for ld in _loads_of(s.src[1], base)): return True
  return False


def has_reg_accumulator(c) -> bool:
  """lower_reduce's form: a REG buffer initialised by a STORE, updated in an END, read through AFTER(acc, END)."""
  for u in c.root.toposort():
    if u.op is Ops.LOAD and (a := u.src[0].src[0]).op is Ops.AFTER and a.src[0].op is Ops.BUFFER and a.src[0].arg.addrspace is AddrSpace.REG \
       and len(a.src) == 2 and a.src[1].op is Ops.END:
      return True
  return False


def has_two_stores_in_one_loop(c) -> bool:
  for e in (u for u in c.root.toposort() if u.op is Ops.END and u.src[0].op is Ops.GROUP):
    bases = [_storage(s.src[0].src[0]) for s in e.src[0].src if s.op is Ops.STORE]
    if len(bases) != len(set(bases)): return True
  return False


def _writes_slot(call: UOp, j: int) -> bool:
  return any(u.op is Ops.STORE and (b := _storage(u.src[0].src[0])).op is Ops.PARAM and b.arg.slot == j for u in call.src[0].toposort())


def has_reads_of_earlier_kernel(c) -> bool:
  """A kernel that loads an arg AFTER(buffer, an earlier kernel that stores into that buffer)."""
  for call in (u for u in c.root.toposort() if u.op is Ops.CALL):
    for k, a in enumerate(call.src[1:]):
      if a.op is not Ops.AFTER: continue
      writers = [d for d in a.src[1:] if d.op is Ops.CALL and a.src[0] in d.src[1:] and _writes_slot(d, d.src[1:].index(a.src[0]))]
      reads = any(u.op is Ops.LOAD and (b := _storage(u.src[0].src[0])).op is Ops.PARAM and b.arg.slot == k for u in call.src[0].toposort())
      if writers and reads: return True
  return False


def has_gated_store(c) -> bool: return any(len(s.src) == 3 for s in _stores(c))


def has_gated_load(c) -> bool: return any(u.op is Ops.LOAD and len(u.src) == 3 for u in c.root.toposort())


def has_range_reduce(c) -> bool: return any(u.op is Ops.REDUCE and not isinstance(u.arg, tuple) for u in c.root.toposort())


def has_nested_loops(c) -> bool:
  ends = [u for u in c.root.toposort() if u.op is Ops.END]
  return any(len(e.src) > 2 or any(x.op is Ops.END for x in e.src[0].toposort()) for e in ends)


@pytest.mark.parametrize("feature,pred,least", [
  ("an OR accumulator", lambda c: has_update(c, Ops.OR), 5),
  ("an ADD accumulator", lambda c: has_update(c, Ops.ADD), 5),
  ("an XOR accumulator", lambda c: has_update(c, Ops.XOR), 5),
  ("a WHERE (min / max / gated) update", lambda c: has_update(c, Ops.WHERE), 5),
  ("a prefix read of another element", has_prefix, 20),
  ("a REG accumulator", has_reg_accumulator, 20),
  ("two stores to one buffer in one loop", has_two_stores_in_one_loop, 20),
  ("a read of an earlier kernel's output", has_reads_of_earlier_kernel, 10),
  ("a gated store", has_gated_store, 20),
  ("a gated load", has_gated_load, 20),
  ("a range-form REDUCE", has_range_reduce, 10),
  ("nested loops", has_nested_loops, 20),
])
def test_generator_builds(many, feature, pred, least):
  n = sum(1 for c in many if pred(c))
  assert n >= least, f"only {n} of {len(many)} cases have {feature}"


def test_every_dtype_is_written(many):
  want = {dtypes.bool, *dtypes.ints, *dtypes.floats}
  written = {_storage(s.src[0].src[0]).dtype for c in many for s in _stores(c)}
  for i in range(2000):  # the rarer small floats may need more cases than the shared 300: draw until every dtype was written
    if want <= written: break
    written |= {_storage(s.src[0].src[0]).dtype for s in _stores(rmw_kernel_case(random.Random(f"rmw-test:dtypes:{i}")))}
  assert want <= written, f"never written: {sorted(d.name for d in want - written)}"


def test_campaign_cases_include_rmw_kernels():
  """case_for draws a share of its kernel cases from the generator (feature kind:rmw) without changing the others."""
  w = {"kind:kernel": 1.0}
  cs = [case_for(3, i, w) for i in range(40)]
  rmw = [c for c in cs if "kind:rmw" in c.features]
  assert 5 <= len(rmw) <= 35 and all(c.kind == "kernel" for c in cs)
  assert all(check(c.root, Stage.KERNEL_GRAPH) == [] for c in rmw)
  none = [case_for(3, i, {**w, "kind:rmw": 0.0}) for i in range(40)]
  # the plain kernel cases are the ones they were before rmw cases existed: the same where both are plain
  for a, b in zip(cs, none):
    assert "kind:rmw" not in b.features
    if "kind:rmw" not in a.features: assert a.root is b.root

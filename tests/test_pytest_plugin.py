"""The pytest plugin (`pytest --tinyspec=check|eval`, pytest_tinyspec.py): pytest run in a subprocess on a small generated
test file that uses the installed tinygrad; off by default it loads nothing of tinyspec and wraps nothing, on it reports
each test's violations and untranslated ops, restores tinygrad after a failing test, writes the JSON, and with
--tinyspec-fail fails a test whose graphs break the spec. The plugin is loaded as users get it: through the installed
package's pytest11 entry point, never by `-p` (which would register it a second time)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

pytestmark = pytest.mark.tinygrad
ROOT = Path(__file__).resolve().parent.parent

# test_shift: tinygrad 0.14 narrows `(x % -7) >> 46` on int64 to an int32 shift by 46 (corpus entry
# spec_tinygrad_kernel_graph_36b16acc4270: kernel.shift_count). test_untranslated: a variable
# that is a multiple of 2 has no tinyspec form (a DEFINE_VAR has bounds only).
# test_fails raises after making a graph. At exit the file records whether every hooked function is tinygrad's own again.
TESTS = '''
import atexit
import json
import os
import sys
import numpy as np
import tinygrad.codegen
import tinygrad.schedule.rangeify
import tinygrad.tensor
from tinygrad import Tensor, dtypes

def hooked():
  cell = tinygrad.schedule.rangeify.get_kernel_graph.__closure__
  return [tinygrad.tensor.transform_to_call, tinygrad.codegen.do_to_program, Tensor.realize] + [c.cell_contents for c in cell]
ORIGINAL = hooked()
# at exit, after every test ran: whether each wrapped function is tinygrad's own again
atexit.register(lambda: open(os.environ["HOOKS_FILE"], "w").write(json.dumps([a is b for a, b in zip(hooked(), ORIGINAL)])))

def test_shift():
  x = Tensor(np.array([0], dtype=np.int64).reshape((1, 1, 1)))
  assert ((x % -7) >> 46).numpy().tolist() == [[[0]]]

def test_untranslated():
  from tinygrad import UOp
  v = UOp.variable("n", 2, 8, multiple_of=2).bind(4)
  assert (Tensor.ones(8).contiguous()[:v] * 2).sum().item() == 8.0

def test_fails():
  (Tensor(np.ones(3, dtype=np.float32)) * 2).realize()
  raise AssertionError("this test fails on purpose")

def test_buffers_freed():
  # as tinygrad's own test_gc: a recording that held the test's graphs would keep their buffers alive
  import gc
  from tinygrad.device import Buffer
  def bufs():
    gc.collect()
    return sum(1 for x in gc.get_objects() if type(x) is Buffer)
  init = bufs()
  x = Tensor.ones(256).contiguous().realize()
  y = Tensor.ones(5, 5).contiguous()
  y.schedule_linear()
  del x, y
  assert bufs() - init == 0

def test_jit():
  # eval reads each realize's outputs: inside a TinyJit capture tinygrad forbids reading a tensor's data
  from tinygrad import TinyJit
  @TinyJit
  def f(x): return (x * 2).realize()
  for i in range(3): assert f(Tensor(np.full(4, i, dtype=np.float32))).numpy().tolist() == [2.0 * i] * 4

def test_nothing_loaded_when_off():
  if os.environ.get("EXPECT_OFF"): assert not any(m == "tinyspec" or m.startswith("tinyspec.") for m in sys.modules)
'''


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, tests: str = TESTS) -> subprocess.CompletedProcess:
  (tmp_path / "test_uses_tinygrad.py").write_text(tests)
  env = {**os.environ, "PYTHONPATH": str(ROOT), "HOOKS_FILE": str(tmp_path / "hooks.json"), **(env or {})}
  return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                         "--rootdir", str(tmp_path), "test_uses_tinygrad.py", *args],
                        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def test_off_by_default_nothing_is_captured(tmp_path):
  # EXPECT_OFF: test_nothing_loaded_when_off asserts no tinyspec module is imported; test_restored that nothing is wrapped
  r = run(tmp_path, env={"EXPECT_OFF": "1"})
  assert "1 failed, 5 passed" in r.stdout, r.stdout + r.stderr
  assert "Captured tinyspec" not in r.stdout and "tinyspec (check)" not in r.stdout
  assert all(json.loads((tmp_path / "hooks.json").read_text()))


def test_check_reports_violations_untranslated_ops_and_json(tmp_path):
  out = tmp_path / "report.json"
  r = run(tmp_path, "--tinyspec=check", "--tinyspec-json", str(out))
  # tinyspec changes no outcome: the failing test fails, the rest pass; every hook is undone, the failing test's too
  assert "1 failed, 5 passed" in r.stdout, r.stdout + r.stderr
  assert all(json.loads((tmp_path / "hooks.json").read_text()))
  assert "violation kernel.shift_count at kernel_graph #0 path" in r.stdout
  assert "untranslated AFTER at callified: 1 node(s) (variable n is a multiple of 2" in r.stdout
  data = json.loads(out.read_text())
  s = data["session"]
  assert s["mode"] == "check" and s["tests"] == 6 and s["tests_with_graphs"] == 5 and s["tests_with_violations"] == 1
  assert s["violations_by_rule"]["kernel.shift_count"] >= 1 and s["untranslated"]["AFTER at callified"] == 1
  assert s["tinyspec_errors"] == {} and 0 < sum(s["translated"].values()) < sum(s["nodes"].values())
  shift = data["tests"]["test_uses_tinygrad.py::test_shift"]
  v = next(v for v in shift["violations"] if v["stage"] == "kernel_graph")
  assert v["rule"] == "kernel.shift_count" and v["path"] and "SHR of int32" in v["message"]
  assert data["tests"]["test_uses_tinygrad.py::test_untranslated"]["violations"] == []


def test_fail_option_fails_a_passing_test_with_a_violation(tmp_path):
  r = run(tmp_path, "--tinyspec=check", "--tinyspec-fail", "-k", "shift or untranslated")
  assert "FAILED test_uses_tinygrad.py::test_shift" in r.stdout and "PASSED test_uses_tinygrad.py::test_untranslated" in r.stdout, r.stdout
  assert "break tinyspec's spec" in r.stdout


def test_eval_compares_numbers(tmp_path):
  out = tmp_path / "report.json"
  r = run(tmp_path, "--tinyspec=eval", "--tinyspec-json", str(out), "-k", "fails or jit")
  assert "1 failed, 1 passed" in r.stdout, r.stdout + r.stderr
  assert all(json.loads((tmp_path / "hooks.json").read_text()))   # Tensor.realize too, wrapped in eval mode
  numbers = json.loads(out.read_text())["session"]["numbers"]
  # `ones * 2` and the JIT's `x * 2` translate at every stage: each evaluation reproduces tinygrad's numbers
  assert all(numbers.get(f"{m}: matches", 0) >= 1 for m in ("tensor", "callified", "kernel ASTs", "programs")), numbers
  assert not any("MISMATCH" in k or "failed" in k for k in numbers), numbers


# a precompiled function over a symbolic-length slice: its own kernel graph, checked on its own, reads the variable by the
# name of its caller's scope (tinygrad's resolve_linear_call), which the call checking it must pass on
SYMBOLIC_PRECOMPILE = '''
from tinygrad import Tensor, UOp, function

def test_precompile_symbolic_shape():
  @function(precompile=True)
  def f(x: Tensor) -> Tensor: return x * 2
  sz = UOp.variable("sz", 1, 8)
  out = f(Tensor([1., 2., 3., 4., 5., 6., 7., 8.])[:sz.bind(5)])
  assert out[:5].numpy().tolist() == [2., 4., 6., 8., 10.]
'''


def test_a_function_graph_checked_on_its_own_is_passed_the_variables_it_inherits(tmp_path):
  out = tmp_path / "report.json"
  r = run(tmp_path, "--tinyspec=check", "--tinyspec-json", str(out), tests=SYMBOLIC_PRECOMPILE)
  assert "1 passed" in r.stdout, r.stdout + r.stderr
  data = json.loads(out.read_text())
  rules = [v["rule"] for t in data["tests"].values() for v in t["violations"]]
  # the call's output is a view of a larger buffer (tinyspec's call writes whole storage: stricter, by design); nothing else
  assert set(rules) == {"tensor.precompiled_output"}, rules
  assert data["session"]["tinyspec_errors"] == {}

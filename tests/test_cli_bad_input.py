"""Every verb of the CLI on bad input: exit 2 and one line on stderr, never a traceback; ^C: exit 130 and a line.
`tinyspec run` runs kernels in a child process with a time limit (a crash or a hang is one line) and runs no graph
that breaks its stage's spec (unless --no-check). Real processes, real signals."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders import buf, f32, kgraph_of, program, rng, sink
from tinyspec.dtype import dtypes
from tinyspec.pyrender import render_module
from tinyspec.uop import Ops, SourceArg, UOp

ROOT = Path(__file__).resolve().parent.parent
TINYSPEC = str(ROOT / ".venv" / "bin" / "tinyspec")


def tinyspec(*args: str, env: dict | None = None, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
  return subprocess.run([TINYSPEC, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, **kw)


def one_line(p: subprocess.CompletedProcess, code: int = 2) -> str:
  assert p.returncode == code, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
  assert "Traceback" not in p.stderr + p.stdout and p.stderr.count("\n") == 1, p.stderr
  return p.stderr.strip()


def kernel_file(tmp_path: Path, edit=None, name: str = "k.py") -> Path:
  """A FILE whose graph is one rendered C kernel, out[i] = 1 for i < 4 (edit: changes the C text)."""
  p0 = UOp.param(0, f32, 4)
  r = rng(4, 0, dtypes.int32)
  body = sink(p0.index(r).store(UOp.const(f32, 1.0)).end(r))
  prg = program(body, "k")
  from tinyspec.lower.render import get_renderer, render_program
  prg = render_program(None, prg, get_renderer("c"))
  if edit is not None:
    a = prg.src[2].arg
    prg = prg.replace(src=(prg.src[0], prg.src[1], UOp(Ops.SOURCE, arg=SourceArg(a.lang, a.name, edit(a.text)))))
  path = tmp_path / name
  path.write_text(render_module(kgraph_of(prg)))
  return path


def test_run_cpu_gives_the_outputs(tmp_path):
  p = tinyspec("run", str(kernel_file(tmp_path)), "--backend", "cpu", "--compiler", "tcc")
  assert p.returncode == 0 and "[1. 1. 1. 1.]" in p.stdout, p.stdout + p.stderr


def test_a_segfaulting_kernel_is_one_line_and_the_cli_survives(tmp_path):
  f = kernel_file(tmp_path, lambda t: t.replace("{\n", "{\n  *(volatile int*)0 = 1;\n", 1))
  p = tinyspec("run", str(f), "--backend", "cpu", "--compiler", "tcc")
  assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
  assert p.stdout.strip().splitlines() == [f"{f}: cpu failed: kernel k killed the process running it (SIGSEGV)"], p.stdout


def test_a_hanging_kernel_is_killed_at_the_timeout(tmp_path):
  f = kernel_file(tmp_path, lambda t: t.replace("{\n", "{\n  for (volatile int spin = 1; spin;) {}\n", 1))
  t = time.monotonic()
  p = tinyspec("run", str(f), "--backend", "cpu", "--compiler", "tcc", "--timeout", "2")
  assert p.returncode == 1 and time.monotonic() - t < 120
  assert p.stdout.strip().splitlines() == [f"{f}: cpu failed: kernel k did not finish within 2 s (killed)"], p.stdout


def test_an_out_of_bounds_program_is_not_run(tmp_path):
  p0 = UOp.param(0, f32, 4)
  r = rng(8, 0, dtypes.int32)  # 8 iterations over a 4-element buffer
  f = tmp_path / "oob.py"
  f.write_text(render_module(kgraph_of(program(sink(p0.index(r).store(UOp.const(f32, 1.0)).end(r)), "k"))))
  for backend in ("reference", "cpu"):
    p = tinyspec("run", str(f), "--backend", backend)
    line = one_line(p)
    assert "not run: 1 violation(s) at KERNEL_GRAPH (kernel.index_bounds)" in line and "kernel.index_bounds" in p.stdout
  p = tinyspec("run", str(f), "--backend", "reference", "--no-check")
  assert p.returncode == 1 and "reference failed: EvalError: STORE (void): index 4 is out of bounds" in p.stdout, p.stdout


def test_the_evaluator_refuses_a_loop_nest_past_its_limit(tmp_path):
  p0 = UOp.param(0, f32, 4)
  r = rng(1 << 31, 0)
  body = sink(p0.index(r % UOp.const(dtypes.index, 4)).store(UOp.const(f32, 1.0)).end(r))
  f = tmp_path / "big.py"
  f.write_text(render_module(kgraph_of(body)))
  p = tinyspec("run", str(f), "--backend", "reference")
  assert p.returncode == 1 and "2,147,483,648 iterations, past the evaluator's limit of 67,108,864" in p.stdout, p.stdout + p.stderr


BAD_FILES = {
  "syntax": "def graph(:\n",
  "no_graph": "X = 1\n",
  "raises": "def graph():\n  raise ValueError('nope')\n",
  "not_a_uop": "def graph():\n  return 3\n",
  "sys_exit": "import sys\nsys.exit(3)\n",
  "exit_in_graph": "import sys\ndef graph():\n  sys.exit(4)\n",
  "bad_inputs": ("from tinyspec.uop import UOp, Ops\ndef graph():\n  return UOp(Ops.SINK)\ndef inputs():\n  return 5\n"),
  "none_source": ("from tinyspec.uop import UOp, Ops\nfrom tinyspec.dtype import dtypes\n"
                  "def graph():\n  b = UOp.buffer(dtypes.float32, 4)\n  return UOp(Ops.SINK, src=(UOp(Ops.ADD, dtypes.float32, (b, None)),))\n"),
}


@pytest.mark.parametrize("verb", [["check"], ["lower"], ["run"], ["run", "--backend", "cpu"], ["viz"]], ids=lambda v: "-".join(v))
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files(tmp_path, verb, name):
  f = tmp_path / f"{name}.py"
  f.write_text(BAD_FILES[name])
  out = tmp_path / "o.svg"
  args = [verb[0], str(f), *verb[1:], *(["-o", str(out)] if verb[0] == "viz" else [])]
  p = tinyspec(*args)
  if name == "none_source" and verb[0] in ("check", "viz") or name == "bad_inputs" and verb[0] != "run":
    # a malformed graph is what check reports (exit 1); only run reads inputs()
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr
    return
  line = one_line(p)
  assert f"{name}.py" in line
  if name == "sys_exit": assert "called sys.exit(3)" in line and p.returncode == 2
  if name == "none_source": assert "node.src_type" in line


@pytest.mark.parametrize("argv, what", [
  (["run", "FILE", "--backend", "bogus"], "invalid choice: 'bogus'"),
  (["lower", "FILE", "--backend", "bogus"], "invalid choice: 'bogus'"),
  (["run", "FILE", "--timeout", "0"], "must be a finite number above 0"),
  (["run", "FILE", "--timeout", "nan"], "must be a finite number above 0"),
  (["check", "FILE", "--stage", "nope"], "unknown stage"),
  (["viz", "FILE", "--max-nodes", "-1"], "must be a finite number of at least 0"),
  (["viz", "FILE", "-o", "out.bmp"], "bmp"),
  (["lower", "FILE", "--opts", "((("], "--opts"),
  (["prove", "--jobs", "0"], "must be a finite number of at least 1"),
  (["prove", "--timeout-ms", "-5"], "must be a finite number of at least 1"),
  (["fuzz", "--corpus", "FILE"], "cannot be used as a directory"),
  (["fuzz", "--corpus", "/proc/nope"], "--corpus"),
  (["fuzz", "--symbolic", "--depth", "0"], "--depth"),
  (["fuzz", "--seconds", "abc"], "invalid float value: 'abc'"),
  (["repro", "MISSING"], "no such file"),
  (["nosuchverb"], "invalid choice"),
  ([], "required"),
])
def test_bad_arguments(tmp_path, argv, what):
  f = tmp_path / "g.py"
  f.write_text(render_module(sink(buf(4) + buf(4))))
  argv = [str(f) if a == "FILE" else str(tmp_path / "missing.py") if a == "MISSING" else a for a in argv]
  line = one_line(tinyspec(*argv, cwd=tmp_path))
  assert what in line, line


def test_a_file_that_never_returns_is_stopped(tmp_path):
  f = tmp_path / "slow.py"
  f.write_text("import time\ndef graph():\n  time.sleep(3600)\n")
  line = one_line(tinyspec("check", str(f), env={"TINYSPEC_LOAD_TIMEOUT": "2"}))
  assert "graph() did not finish within 2 s" in line


def test_ctrl_c_exits_130_with_a_line(tmp_path):
  f = tmp_path / "slow.py"
  f.write_text("import time\ndef graph():\n  print('ready', flush=True)\n  time.sleep(3600)\n")
  # ^C as at a terminal: SIGINT handled, whatever this test run was started with (a shell's background job ignores
  # SIGINT, and an ignored signal is inherited across exec: the interrupt would never arrive)
  p = subprocess.Popen([TINYSPEC, "check", str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  assert p.stdout.readline().strip() == "ready"
  p.send_signal(signal.SIGINT)
  out, err = p.communicate(timeout=120)
  assert p.returncode == 130 and err.strip() == "tinyspec: interrupted" and "Traceback" not in err, err


def test_a_closed_pipe_is_one_line(tmp_path):
  # a graph with thousands of violations, read by a reader that goes away at once
  x = buf(4)
  for _ in range(3000): x = x.reshape((2, 2)).reshape((4,))
  f = tmp_path / "many.py"
  f.write_text(render_module(sink(x)))
  r, w = os.pipe()
  os.close(r)
  p = subprocess.run([TINYSPEC, "check", str(f), "--stage", "kernel_graph"], stdout=w, stderr=subprocess.PIPE, text=True, timeout=300)
  os.close(w)
  assert p.returncode == 2 and p.stderr.strip() == "tinyspec: output closed (broken pipe)", p.stderr


def test_tinygrad_check_bad_files(tmp_path):
  f = tmp_path / "bad.py"
  f.write_text("def program(:\n")
  line = one_line(tinyspec("tinygrad", "check", str(f)))
  assert "bad.py" in line


def test_help_is_exit_0():
  p = tinyspec("--help")
  assert p.returncode == 0 and "usage" in p.stdout
  assert sys.executable  # the venv runs the command

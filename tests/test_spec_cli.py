"""`tinyspec check FILE [--stage S]`: exit 0 legal, 1 violations, 2 unreadable input or bad usage."""
from __future__ import annotations

import subprocess
import sys

import pytest
from builders import buf, k_add, kgraph_of, sink

from tinyspec.cli import main
from tinyspec.pyrender import render_module

pytestmark = pytest.mark.spec


def write(tmp_path, root, name="g.py"):
  p = tmp_path / name
  p.write_text(render_module(root))
  return p


def test_legal_file_exits_0(tmp_path, capsys):
  p = write(tmp_path, sink(buf(4) + buf(4)))
  assert main(["check", str(p)]) == 0
  assert "legal at TENSOR" in capsys.readouterr().out


def test_violations_exit_1_and_are_printed(tmp_path, capsys):
  p = write(tmp_path, sink(buf(4) + buf(8), buf(16).reshape((3, 5))))
  assert main(["check", str(p)]) == 1
  out = capsys.readouterr().out
  assert "1. [TENSOR] tensor.elementwise_shape" in out and "2. [TENSOR] tensor.movement_arg" in out
  assert "at root.src[0]" in out and "2 violation(s) at TENSOR" in out


def test_stage_option(tmp_path, capsys):
  p = write(tmp_path, kgraph_of(k_add()))
  assert main(["check", str(p), "--stage", "kernel_graph"]) == 0
  assert main(["check", str(p), "--stage", "PROGRAM"]) == 1
  assert "kgraph.body_stage" in capsys.readouterr().out


def test_unreadable_inputs_exit_2(tmp_path, capsys):
  assert main(["check", str(tmp_path / "missing.py")]) == 2
  bad = tmp_path / "bad.py"
  bad.write_text("def graph(:\n")
  assert main(["check", str(bad)]) == 2
  nograph = tmp_path / "nograph.py"
  nograph.write_text("x = 1\n")
  assert main(["check", str(nograph)]) == 2
  err = capsys.readouterr().err
  assert "missing.py" in err and "bad.py" in err and "graph()" in err


def test_bad_usage_exits_2(tmp_path):
  p = write(tmp_path, sink(buf(4)))
  assert main(["check", str(p), "--stage", "nonsense"]) == 2
  assert main(["check"]) == 2


def test_subprocess(tmp_path):
  p = write(tmp_path, sink(buf(4) + buf(8)))
  r = subprocess.run([sys.executable, "-m", "tinyspec.cli", "check", str(p)], capture_output=True, text=True, timeout=120)
  assert r.returncode == 1 and "tensor.elementwise_shape" in r.stdout
  r = subprocess.run([sys.executable, "-m", "tinyspec.cli", "check", str(tmp_path / "nope.py")], capture_output=True, text=True, timeout=120)
  assert r.returncode == 2 and "nope.py" in r.stderr

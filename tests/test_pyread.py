"""Corpus entries are data: tinyspec.pyread reads pyrender's grammar back without executing anything, and refuses
everything else by line. Planted code in an entry never runs: not under load_entry, `tinyspec repro`, `pytest -m spec`
or the report of `tinyspec fuzz --report`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from builders import buf, f32, sink, tensor_graphs
from fuzz.corpus.store import entry_path, load_entry, render_entry, write_entry
from fuzz.generate.case import Case
from fuzz.generate.kinds import case_for
from tinyspec.dtype import DType, dtypes
from tinyspec.loadfile import InputError
from tinyspec.pyread import ReadError, read_graph, read_module
from tinyspec.pyrender import arg_source, render_module
from tinyspec.uop import Ops, SourceArg, UOp

ROOT = Path(__file__).resolve().parent.parent
SIG = ("spec", "rangeify", "planted")


@given(tensor_graphs())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_read_rebuilds_what_pyrender_wrote(g):
  assert read_graph(render_module(g)) is g


def test_variables_read_back():
  n = UOp.variable("n", 0, 7)
  g = UOp(Ops.SINK, src=(n.bind(3) * UOp.const(dtypes.index, 2), n + UOp.const(dtypes.index, 1)))
  assert read_graph(render_module(g)) is g


def test_entries_round_trip_every_generated_kind(tmp_path):
  for i in range(40):
    c = case_for(3, i)
    e = load_entry(write_entry(tmp_path, c, ("a", "b", f"r{i}"))[0])
    assert e.case.root is c.root and e.case.options == c.options and sorted(e.case.inputs) == sorted(c.inputs)


def _entry_text() -> str:
  b = buf(4)
  return render_entry(Case(sink(b + b), {b.arg.id: np.arange(4, dtype=np.float32)}), SIG, date="2020-01-01 00:00:00 UTC")


def _plant(text: str, where: str, code: str) -> str:
  """The entry's text with code in place of (or after) the line that starts with `where`."""
  lines = text.splitlines()
  i = next(k for k, ln in enumerate(lines) if ln.startswith(where))
  if code.startswith("REPLACE:"): lines[i] = code[len("REPLACE:"):]
  else: lines.insert(i + 1, code)
  return "\n".join(lines) + "\n"


PLANTS = {  # name: (the line it goes after, or replaces; the code, which creates MARK when run)
  "module_statement": ("CASE = ", "open(MARK, 'w').write('ran')"),
  "module_constant": ("CASE = ", "SEED2 = open(MARK, 'w')"),
  "import_os": ("CASE = ", "import os; os.system('touch ' + MARK)"),
  "from_import": ("CASE = ", "from os import system"),
  "class": ("CASE = ", "class X:\n  y = open(MARK, 'w')"),
  "arg": ("  n0 = ", "REPLACE:  n0 = UOp(Ops.CONST, dtypes.int32, (), open(MARK, 'w'))"),
  "dunder_import": ("  n0 = ", "  n9 = __import__('os').system('touch ' + MARK)"),
  "decorator": ("def graph", "REPLACE:@print\ndef graph():"),
  "default_arg": ("def graph", "REPLACE:def graph(x=open(MARK, 'w')):"),
  "fstring_arg": ("  n0 = ", "REPLACE:  n0 = UOp(Ops.CONST, dtypes.int32, (), f\"{open(MARK, 'w')}\")"),
  "lambda": ("CASE = ", "F = (lambda: open(MARK, 'w'))()"),
  "forged_dtype": ("  n0 = ", "REPLACE:  n0 = UOp(Ops.CONST, dtypes.__class__('x', 1, 'i', 'x', 'x'), (), 0)"),
  "enum_attr": ("  n0 = ", "REPLACE:  n0 = UOp(Ops.__class__, dtypes.int32, (), 0)"),
  "buffer_arg": ("  n0 = ", "REPLACE:  n0 = UOp(Ops.BUFFER, dtypes.float32, (), BufferArg(id=open(MARK, 'w'), size=4))"),
  "input_value": ("    ", "    7: np.array([open(MARK, 'w')], dtype='float32'),"),
  "input_call": ("    ", "    7: np.zeros(1).tofile(MARK),"),
  "walrus": ("CASE = ", "Y = (z := open(MARK, 'w'))"),
  "subscript": ("CASE = ", "Y = ().__class__.__bases__[0]"),
}


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_a_planted_entry_is_refused_by_line_and_its_code_never_runs(tmp_path, name):
  mark = tmp_path / "created_by_the_entry"
  where, code = PLANTS[name]
  text = _plant(_entry_text(), where, code).replace("MARK", repr(str(mark)))
  path = tmp_path / "planted.py"
  path.write_text(text)
  with pytest.raises(InputError) as e:
    load_entry(path)
  msg = str(e.value)
  line = int(msg.split("planted.py:", 1)[1].split(":", 1)[0])  # names the line
  assert line == next(k for k, ln in enumerate(text.splitlines(), 1) if str(mark) in ln or "__" in ln or "@print" in ln or "import os" in ln
                      or "from os" in ln or "class X" in ln or "lambda" in ln or "tofile" in ln), msg
  assert not mark.exists()
  # the same text executed as Python (as the corpus once was, with runpy) creates the file: the test plants real code
  if name not in ("forged_dtype", "enum_attr", "from_import", "subscript", "decorator"):
    run = "import runpy, sys; ns = runpy.run_path(sys.argv[1]); ns['graph'](); ns['inputs']()"
    subprocess.run([sys.executable, "-c", run, str(path)], cwd=ROOT, capture_output=True, timeout=120)
    assert mark.exists(), name


def _planted_file(corpus: Path, mark: Path) -> tuple[Path, int]:
  """A corpus entry with a statement that creates mark when run, and the statement's line."""
  path = entry_path(corpus, SIG)
  path.parent.mkdir(parents=True, exist_ok=True)
  text = _plant(_entry_text(), "CASE = ", f"open({str(mark)!r}, 'w').write('ran')")
  path.write_text(text)
  return path, next(k for k, ln in enumerate(text.splitlines(), 1) if ln.startswith("open("))


def _tinyspec(*args: str, **kw) -> subprocess.CompletedProcess:
  return subprocess.run([str(ROOT / ".venv" / "bin" / "tinyspec"), *args], capture_output=True, text=True, timeout=600, **kw)


def test_repro_refuses_a_planted_entry(tmp_path):
  mark = tmp_path / "ran"
  path, line = _planted_file(tmp_path / "corpus", mark)
  p = _tinyspec("repro", str(path))
  assert p.returncode == 2 and not mark.exists()
  err = p.stderr.strip().splitlines()
  assert len(err) == 1 and f"{path.name}:{line}: `open(" in err[0] and "not part of the grammar" in err[0], p.stderr


def test_pytest_spec_refuses_a_planted_entry_by_name(tmp_path):
  mark = tmp_path / "ran"
  path, line = _planted_file(tmp_path / "corpus", mark)
  good = write_entry(tmp_path / "corpus", Case(sink(buf(4) + buf(4)), {}, {"callify": "inline", "realize": "minimal", "opts": None}),
                     ("parity", "simplify", "fine"), expect="passes")[0]
  env = {**os.environ, "TINYSPEC_CORPUS": str(tmp_path / "corpus")}
  p = subprocess.run([sys.executable, "-m", "pytest", "-m", "spec", "-q", "-p", "no:cacheprovider", "tests/test_corpus.py"], cwd=ROOT,
                     capture_output=True, text=True, timeout=600, env=env)
  assert p.returncode == 1 and not mark.exists(), p.stdout
  assert f"FAILED tests/test_corpus.py::test_corpus_entry[{path.name}]" in p.stdout and f"{path.name}:{line}:" in p.stdout, p.stdout
  assert f"test_corpus_entry[{good.name}] PASSED" in p.stdout or "1 failed, 2 passed" in p.stdout, p.stdout


def test_the_report_draws_known_entries_without_running_them(tmp_path):
  mark = tmp_path / "ran"
  corpus = tmp_path / "corpus"
  _planted_file(corpus, mark)
  (corpus / ".fuzz-state-0.json").write_text(json.dumps({"seed": 0, "signatures": [list(SIG)]}))
  p = _tinyspec("fuzz", "--seconds", "30", "--max-cases", "1", "--workers", "0", "--corpus", str(corpus), "--report", str(tmp_path / "r"))
  assert p.returncode == 0, p.stdout + p.stderr
  assert not mark.exists()
  page = (tmp_path / "r" / "index.html").read_text()
  assert "planted" in page and "could not draw it" in page


def test_a_tinygrad_entrys_program_runs_only_in_the_generators_grammar(tmp_path):
  mark = tmp_path / "ran"
  b = buf(4)
  src = f"def program():\n  x = Tensor(np.array([1.0], dtype=np.float32).reshape((1,)))\n  y = open({str(mark)!r}, 'w')\n  return x,\n"
  path, _ = write_entry(tmp_path, Case(sink(b + b), {}, {}, "tinygrad"), ("parity", "tinygrad-CPU", "float32"), extra={"PROGRAM": src})
  load_entry(path)  # reading it is fine: PROGRAM is a string literal
  p = _tinyspec("repro", str(path))
  assert p.returncode == 2 and not mark.exists(), p.stdout + p.stderr
  assert "PROGRAM, line 3: a call of `open` is not part of a program" in p.stderr


def test_source_args_only_where_asked_for():
  s = UOp(Ops.SOURCE, arg=SourceArg("c", "k", "void k(void) { }"))
  text = render_module(UOp(Ops.SINK, src=(s,)))
  with pytest.raises(ReadError, match="SourceArg"):
    read_graph(text)
  assert read_graph(text, allow_source=True).src[0] is s


@pytest.mark.parametrize("arg, what", [(DType("float16", 2, "f", "half", "half"), "not one of the IR's dtypes"), (10 ** 5000, "too long"),
                                       (object(), "no source form"), ([1, 2], "no source form")], ids=["dtype", "int", "object", "list"])
def test_pyrender_writes_only_the_grammar(arg, what):
  with pytest.raises(TypeError, match=what):
    arg_source(arg)


def test_literals_and_special_floats():
  ns = read_module("A = (1, -2, 3.5, -0.0, 'x', None, True)\nB = {'k': [float('nan'), float('-inf')]}\n")
  assert ns["A"][:3] == (1, -2, 3.5) and str(ns["A"][3]) == "-0.0" and np.isnan(ns["B"]["k"][0]) and ns["B"]["k"][1] == -np.inf
  with pytest.raises(ReadError, match=r"<text>:1: float\(...\) takes one of"):
    read_module("A = float('1e308')\n")
  g = read_graph("def graph():\n  return UOp(Ops.SINK)\n")
  one = sink(buf(4, f32))
  assert g is UOp(Ops.SINK) and read_graph(render_module(one)) is one
  assert read_module("def inputs():\n  return {3: np.array([1, 2], dtype='uint8')}\n")["inputs"][3].dtype == np.uint8
  assert dtypes.by_name["float32"] is f32

"""Corpus files: round trip through pyrender, naming by signature, atomic writes, clear errors for bad files."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tinyspec.fileio import atomic_write
from fuzz.corpus.store import entries, entry_name, load_entry, render_entry, same_bug, write_entry
from fuzz.engine.targets import replay
from fuzz.generate.case import Case
from fuzz.generate.kinds import case_for
from tinyspec.dtype import dtypes
from tinyspec.loadfile import InputError
from tinyspec.uop import Ops, UOp

SIG = ("parity", "simplify", "mod_below_divisor")


def test_round_trip_rebuilds_the_identical_case(tmp_path):
  for i in range(20):
    c = case_for(17, i)
    path, new = write_entry(tmp_path, c, SIG[:2] + (f"rule{i}",), message="line one\nline two")
    assert new
    e = load_entry(path)
    assert e.case.root is c.root and e.case.options == c.options and e.case.kind == c.kind
    assert e.case.inputs.keys() == c.inputs.keys()
    for k in c.inputs:
      # bit for bit: the edge values NaN, the infinities and -0.0 come back as they were drawn
      assert e.case.inputs[k].dtype == c.inputs[k].dtype and e.case.inputs[k].tobytes() == c.inputs[k].tobytes()
    assert e.signature == SIG[:2] + (f"rule{i}",) and e.expect == "fails" and (e.case.seed, e.case.index) == (17, i)


def test_special_floats_survive(tmp_path):
  b = UOp.buffer(dtypes.float32, 3, id=700)
  c = Case(UOp(Ops.SINK, src=(b + b,)), {700: np.array([np.nan, np.inf, -0.0], np.float32)})
  e = load_entry(write_entry(tmp_path, c, SIG)[0])
  got = e.case.inputs[700]
  assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0 and np.signbit(got[2])


def test_same_signature_is_one_file(tmp_path):
  p1, new1 = write_entry(tmp_path, case_for(1, 0), SIG)
  p2, new2 = write_entry(tmp_path, case_for(1, 1), SIG)
  assert p1 == p2 and new1 and not new2
  assert entries(tmp_path) == [p1] and p1.name == entry_name(SIG)
  assert load_entry(p1).case.root is case_for(1, 0).root


def test_atomic_write_leaves_no_temp_files(tmp_path):
  target = tmp_path / "x.py"
  atomic_write(target, "A = 1\n")
  atomic_write(target, "A = 2\n")
  assert target.read_text() == "A = 2\n" and os.listdir(tmp_path) == ["x.py"]


@pytest.mark.parametrize("text, what", [
  ("def graph(:\n", "bad.py:1: not valid Python"),
  ("SIGNATURE = ('a', 'b', 'c')\ndef inputs(): return {}\n", "defines no graph"),
  ("SIGNATURE = ('a', 'b', 'c')\ndef graph(): return 3\ndef inputs(): return {}\n", "not a UOp"),
  ("SIGNATURE = ('a', 'b')\nfrom tinyspec.uop import UOp, Ops\ndef graph(): return UOp(Ops.SINK)\ndef inputs(): return {}\n", "three strings"),
  ("SIGNATURE = ('a','b','c')\nEXPECT = 'maybe'\nfrom tinyspec.uop import UOp, Ops\ndef graph(): return UOp(Ops.SINK)\ndef inputs(): return {}\n",
   "EXPECT"),
])
def test_bad_files_are_named(tmp_path, text, what):
  p = tmp_path / "bad.py"
  p.write_text(text)
  with pytest.raises(InputError, match=what) as e:
    load_entry(p)
  assert "bad.py" in str(e.value)


def test_header_and_expectation(tmp_path):
  text = render_entry(case_for(2, 3), SIG, message="x % c folded", expect="passes", date="2020-01-01 00:00:00 UTC")
  assert text.startswith("# tinyspec counterexample: parity/simplify/mod_below_divisor\n# seed 2, case 3, found 2020-01-01 00:00:00 UTC\n")
  assert "EXPECT = 'passes'" in text and "# x % c folded" in text


def test_replay_says_whether_it_still_fails(tmp_path):
  # a graph that is not legal at TENSOR is an `input` finding on replay
  b = UOp.buffer(dtypes.float32, 4, id=701)
  bad = Case(UOp(Ops.SINK, src=(UOp(Ops.ADD, dtypes.float32, (b, b.reshape((2, 2)))),)), {})
  e = load_entry(write_entry(tmp_path, bad, ("input", "generator", "x"))[0])
  fails, findings = replay(e)
  assert fails and findings[0].oracle == "input"
  good = Case(UOp(Ops.SINK, src=(b + b,)), {701: np.arange(4, dtype=np.float32)}, {"callify": "inline", "realize": "minimal", "opts": None})
  e2 = load_entry(write_entry(tmp_path, good, SIG)[0])
  assert replay(e2) == (False, [])


def test_same_bug():
  assert same_bug(("metamorphic", "simplify", "r"), ("parity", "simplify", "r"))
  assert not same_bug(("spec", "simplify", "r"), ("parity", "simplify", "r"))

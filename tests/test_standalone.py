"""Standalone scripts of tinygrad corpus entries (`tinyspec repro --standalone`): the numpy meaning they assert, the
committed scripts in corpus/standalone/, and their result under each tinygrad version against the entry's REPRODUCES."""
from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fuzz.corpus.store import entries, load_entry, set_constant
from fuzz.engine.tinygrad_target import unavailable as tinygrad_unavailable
from fuzz.report.numpy_program import WEAK_HELPERS, NoNumpyForm, numpy_program
from tinyspec.loadfile import InputError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
SHARED = ROOT.parent / "shared"
TINYGRAD_ENTRIES = [p for p in entries(CORPUS) if load_entry(p).case.kind == "tinygrad"]


def needs_tinygrad() -> None:
  if (why := tinygrad_unavailable()) is not None: pytest.skip(f"tinygrad: {why}")


def program(*lines: str, functions: str = "") -> str:
  return functions + "def program():\n" + "".join(f"  {ln}\n" for ln in lines)


def outputs(src: str, weak: bool = False) -> list:
  return [o.tolist() for o in numpy_program(src, weak=weak).outputs]


# ---- what numpy says a program means: values worked out by hand ----
@pytest.mark.parametrize("line,values,dtype,converted,weak", [
  ("v0 = x0 % -2", [0, 18], "uint8", [0, 18], [0, 0]),                     # 18 % 254; 18 % -2 = 0
  ("v0 = x0 // -2", [11], "uint32", [0], [4294967290]),                    # 11 // 4294967294; 11 // -2 = -6, wrapped
  ("v0 = (x0 != -1)", [255, 3], "uint8", [False, True], [True, True]),     # -1 as uint8 is 255
  ("v0 = x0.minimum(-2)", [255, 0], "uint8", [254, 0], [254, 254]),
  ("v0 = x0 << 6", [120], "uint8", [0], [0]),                              # 7680 wraps to 0 in uint8
  ("v0 = x0 - 2", [98], "uint16", [96], [96]),
  ("v0 = -x0", [1], "uint8", [255], [255]),
  ("v0 = x0 ** 3", [7, 2], "uint8", [87, 8], [87, 8]),                    # 343 wraps to 87
  ("v0 = x0 ** x0", [2, 3, 4], "uint8", [4, 27, 0], [4, 27, 0]),          # 4 ** 4 = 256 wraps to 0
])
def test_numpy_meaning_of_integer_literals(line, values, dtype, converted, weak):
  src = program(f"x0 = Tensor(np.array({values!r}, dtype=np.{dtype}).reshape(({len(values)},)))", line, "return v0,")
  assert outputs(src) == [converted]
  assert outputs(src, weak=True) == [weak]


def test_numpy_meaning_rounds_half_after_each_op():
  src = program("x0 = Tensor(np.array([1024.0], dtype=np.float32).reshape((1,)))", "x1 = Tensor(np.array([0.5], dtype=np.float32).reshape((1,)))",
                "v0 = x0.cast(dtypes.float16)", "v1 = x1.cast(dtypes.float16)", "v2 = v0 + v1", "v3 = v2.cast(dtypes.float32)", "return v3,")
  out = numpy_program(src).outputs[0]
  assert out.dtype == np.float32 and out.tolist() == [1024.0]  # float16's sum: 1024.5 is not a half, it rounds to even


def test_functions_and_one_output_unpacking_keep_shapes():
  fn = "@function\ndef f_v1(p0):\n  q0 = p0.max(0, keepdim=True)\n  return q0,\n"
  src = program("x0 = Tensor(np.array([3, 9, 4], dtype=np.int32).reshape((3,)))", "v1, = f_v1(x0)", "v2 = v1.pad(((1, 0),))", "return v2,",
                functions=fn)
  p = numpy_program(src)
  assert [o.tolist() for o in p.outputs] == [[0, 9]]
  assert p.functions == [["def f_v1(p0):", "  q0 = p0.max(0, keepdims=True)", "  return q0,"]]
  assert "v1, = f_v1(x0)" in p.body


def test_the_lines_mean_the_values_returned():
  # the text a script holds, run on its own with numpy, gives the values numpy_program reports
  src = program("x0 = Tensor(np.array([0, 18, 200], dtype=np.uint8).reshape((3,)))", "v0 = x0 % -2", "v1 = v0.max(0)", "return v0, v1")
  for weak in (False, True):
    p = numpy_program(src, weak=weak)
    ns: dict = {"np": np}
    exec(WEAK_HELPERS + "def f():\n" + "".join(f"  {ln}\n" for ln in p.body), ns)
    assert [np.asarray(v).tolist() for v in ns["f"]()] == [o.tolist() for o in p.outputs]


def test_generated_programs_mean_in_numpy_what_they_mean_elsewhere():
  # the generator's whole grammar: numpy's reading against tinyspec's frontend and evaluator, tinygrad's reading against
  # fuzz.check.exact_ints (exact Python integers); independent models of the same programs
  from fuzz.check.exact_ints import run_exact
  from fuzz.check.tinygrad_oracles import tinyspec_outputs
  from fuzz.generate.tinygrad_programs import program_for, source
  def agree(a, b) -> bool:
    close = a.dtype.kind == "f" and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)  # float sums: another order
    return a.dtype == b.dtype and a.shape == b.shape and (np.array_equal(a, b, equal_nan=a.dtype.kind == "f") or close)
  compared = Counter()
  for i in range(300):
    src = source(program_for(5, i))
    try: converted, weak = numpy_program(src).outputs, numpy_program(src, weak=True).outputs
    except NoNumpyForm: continue
    try: ts = tinyspec_outputs(src)
    except Exception: ts = None  # tinyspec's frontend rejects a few programs (the campaign counts them)
    if ts is not None:
      assert all(map(agree, converted, ts)), src
      compared["tinyspec"] += 1
    if all(o.dtype.kind in "iub" for o in weak):
      assert all(map(agree, weak, run_exact(src, exact_literals=True).outputs)), src
      compared["exact"] += 1
  assert compared["tinyspec"] > 250 and compared["exact"] > 150, compared


def test_a_negative_integer_exponent_has_no_numpy_form():
  src = program("x0 = Tensor(np.array([2, -1], dtype=np.int8).reshape((2,)))", "v0 = x0 ** x0", "return v0,")
  with pytest.raises(NoNumpyForm, match="negative integer exponent"): numpy_program(src)


def test_a_dtype_numpy_lacks_has_no_numpy_form():
  src = program("x0 = Tensor(np.array([0.1], dtype=np.float32).reshape((1,)))", "v0 = x0.cast(dtypes.bfloat16)", "return v0,")
  with pytest.raises(NoNumpyForm, match="bfloat16"): numpy_program(src)


@pytest.mark.parametrize("path", TINYGRAD_ENTRIES, ids=[p.name for p in TINYGRAD_ENTRIES])
def test_numpy_meaning_agrees_with_tinyspecs_evaluator(path):
  # two independent meanings of each entry's program: numpy's ops, and tinyspec's frontend and reference evaluator; a
  # program naming a dtype numpy lacks has none of the first (its script holds the evaluator's values as literals). An
  # integer tensor to an integer tensor's power, which tinyspec's frontend refuses, is the evaluator's meaning of the
  # entry's graph(): tinygrad's tensor graph of the program, translated (its POW the exact integer power)
  from fuzz.check.tinygrad_oracles import tinyspec_outputs
  from fuzz.corpus.store import header_lines
  from tinyspec.semantics import evaluate
  entry = load_entry(path)
  src = entry.meta["PROGRAM"]
  try: mine = numpy_program(src).outputs
  except NoNumpyForm as e:
    assert re.search(r"numpy has no (bfloat16|float8_\w+) dtype", str(e)), e
    return
  try: theirs = tinyspec_outputs(src)
  except TypeError as e:
    assert "an integer power of a tensor exponent" in str(e), e
    assert "graph(): tinygrad's tensor graph, translated" in header_lines(path)
    theirs = [np.asarray(v) for v in evaluate(entry.case.root, entry.case.inputs)]
  assert [(o.dtype, o.shape) for o in mine] == [(o.dtype, o.shape) for o in theirs]
  assert all(np.array_equal(a, b, equal_nan=a.dtype.kind == "f") for a, b in zip(mine, theirs))


# ---- the REPRODUCES record ----
def test_reproduces_is_written_and_read_back(tmp_path):
  src = TINYGRAD_ENTRIES[0]
  path = tmp_path / src.name
  shutil.copy(src, path)
  before = load_entry(path)
  set_constant(path, "REPRODUCES", {"0.14.0": False, "x": True})
  set_constant(path, "REPRODUCES", {"0.14.0": True, "a9069c17": False})  # the line is replaced, not added again
  after = load_entry(path)
  assert after.meta["REPRODUCES"] == {"0.14.0": True, "a9069c17": False}
  assert path.read_text().count("REPRODUCES =") == 1
  assert after.case.root is before.case.root and after.meta["PROGRAM"] == before.meta["PROGRAM"]


def test_a_malformed_record_is_refused_by_name(tmp_path):
  path = tmp_path / TINYGRAD_ENTRIES[0].name
  shutil.copy(TINYGRAD_ENTRIES[0], path)
  set_constant(path, "REPRODUCES", {"0.14.0": 1})
  with pytest.raises(InputError, match="REPRODUCES must be"): load_entry(path)


# ---- the committed scripts and the verb ----
@pytest.mark.tinygrad
def test_every_tinygrad_entry_has_its_script_and_a_record():
  needs_tinygrad()
  from fuzz.report.standalone import STANDALONE_DIR, script_path, standalone_script, tinygrad_entries
  rerun = "run `python scripts/tinygrad_versions.py` to write them"
  es = tinygrad_entries(CORPUS)
  assert sorted(p.name for p in (CORPUS / STANDALONE_DIR).glob("*.py")) == sorted(e.path.name for e in es), rerun
  for e in es:
    assert set(e.meta.get("REPRODUCES", {})) == {"0.14.0", "a9069c17"}, f"{e.path.name} records no run on both versions: {rerun}"
    assert script_path(e).read_text() == standalone_script(e), f"corpus/standalone/{e.path.name} is not what repro --standalone writes: {rerun}"


@pytest.mark.tinygrad
def test_repro_standalone_verb(tmp_path, capsys):
  needs_tinygrad()
  from tinyspec.cli import main
  entry = CORPUS / "parity_tinygrad_render_9da9937f7ef0.py"
  committed = (CORPUS / "standalone" / entry.name).read_text()
  assert main(["repro", "--standalone", str(entry)]) == 0
  assert capsys.readouterr().out == committed
  assert main(["repro", "--standalone", str(entry), "-o", str(tmp_path / "bug.py")]) == 0
  assert (tmp_path / "bug.py").read_text() == committed
  tensor_entry = next(p for p in entries(CORPUS) if load_entry(p).case.kind == "tensor")
  assert main(["repro", "--standalone", str(tensor_entry)]) == 2
  assert "only tinygrad entries have a standalone form" in capsys.readouterr().err
  assert main(["repro", "--standalone", "--viz", str(entry)]) == 2
  assert "give one of them" in capsys.readouterr().err


def test_a_program_outside_the_grammar_has_no_script(tmp_path):
  from fuzz.report.standalone import NoStandalone, standalone_script
  src = CORPUS / "parity_tinygrad_schedule_e56087890d4e.py"
  bad = tmp_path / src.name
  bad.write_text(src.read_text().replace("  v0 = x0.minimum(-2)\n", "  v0 = x0.minimum(-2)\n  v9 = open('x')\n"))
  with pytest.raises(NoStandalone, match="PROGRAM, line 4: a call of `open` is not part of a program"): standalone_script(load_entry(bad))


# ---- the scripts under each tinygrad version ----
@pytest.fixture(scope="session")
def versions(tmp_path_factory):
  """The installed tinygrad and the snapshot beside the repository, unpacked once per session."""
  needs_tinygrad()
  from fuzz.report.tinygrad_versions import SNAPSHOT_TARBALL, installed_version, snapshot_version
  tarball = SHARED / SNAPSHOT_TARBALL
  if not tarball.is_file(): pytest.skip(f"no tinygrad snapshot at {tarball} (the shared folder beside the repository)")
  return [installed_version(), snapshot_version(tarball, tmp_path_factory.mktemp("tinygrad-snapshot"))]


@pytest.mark.tinygrad
def test_scripts_fail_where_their_entries_say(versions):
  from fuzz.report.standalone import script_path, tinygrad_entries
  from fuzz.report.tinygrad_versions import run_scripts
  es = tinygrad_entries(CORPUS)
  outs = run_scripts([script_path(e) for e in es], versions)
  assert len(outs) == len(es) * len(versions)
  record = {e.path.name: e.meta.get("REPRODUCES", {}) for e in es}
  wrong = [o.describe() for o in outs if o.reproduces is None or o.reproduces != record[o.script.name].get(o.version)]
  assert wrong == [], "\n".join(wrong)


@pytest.mark.tinygrad
def test_a_script_passes_where_tinygrad_is_right(versions, tmp_path):
  # the uint8 minimum(-2) entry with an input where tinygrad gives the right value: its script exits 0; the entry's fails
  from fuzz.report.standalone import script_path, standalone_script
  from fuzz.report.tinygrad_versions import run_scripts
  src = CORPUS / "parity_tinygrad_schedule_e56087890d4e.py"
  right = tmp_path / src.name
  right.write_text(src.read_text().replace("np.array([0, 0, 0, 255], dtype=np.uint8)", "np.array([0, 0, 0, 5], dtype=np.uint8)"))
  assert "[0, 0, 0, 5]" in load_entry(right).meta["PROGRAM"]
  script = tmp_path / "right.py"
  script.write_text(standalone_script(load_entry(right)))
  outs = run_scripts([script, script_path(load_entry(src))], versions[:1])
  assert [o.reproduces for o in outs] == [False, True], "\n".join(o.describe() for o in outs)

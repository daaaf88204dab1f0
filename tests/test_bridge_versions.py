"""The bridge on more than one tinygrad: compat's detection on made-up tinygrads (pure: what it has -> its name), and the
real second tinygrad, tinygrad's repository at commit a9069c17 (../shared/tinygrad/tinygrad-a9069c17.tar.gz, beside
the repository), unpacked once per test run and put first on PYTHONPATH of a subprocess: its name, every example of
examples/tinygrad checked, and tests/test_bridge_tinygrad.py run on it. Where ../shared/ is absent those tests skip."""
from __future__ import annotations

import enum
import os
import re
import subprocess
import sys
import tarfile
import types
from pathlib import Path

import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad import compat  # noqa: E402
from tinyspec.bridge.tinygrad.compat import KNOWN, Tinygrad, features_of, identify, stated_number  # noqa: E402

pytestmark = pytest.mark.tinygrad
ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT.parent / "shared" / "tinygrad" / "tinygrad-a9069c17.tar.gz"
EXAMPLES = sorted((ROOT / "examples" / "tinygrad").glob("*.py"))


# ---- detection, on made-up tinygrads ----
class Ops014(enum.Enum):
  ADD = 1
  ENDIF = 2


class OpsWait(enum.Enum):
  ADD = 1
  ENDIF = 2
  WAIT = 3


class UOp014:
  @staticmethod
  def placeholder(shape, dtype, slot=None, addrspace=None, device=None, volatile=False, tag=None): ...


class UOpSnap:
  @staticmethod
  def placeholder(shape, dtype, slot, addrspace=None, device=None, volatile=False): ...


def tg(ops, uop) -> types.SimpleNamespace: return types.SimpleNamespace(Ops=ops, UOp=uop)


def test_features_tell_the_two_versions_apart():
  assert features_of(tg(Ops014, UOp014)) == KNOWN["0.14.0"] == frozenset()
  assert features_of(tg(OpsWait, UOpSnap)) == KNOWN["a9069c17"] == {"Ops.WAIT", "placeholder needs a slot"}
  assert features_of(tg(OpsWait, UOp014)) == {"Ops.WAIT"}
  assert features_of(tg(Ops014, object)) == frozenset()   # no placeholder at all: not the snapshot's


def test_a_release_is_named_by_its_features_and_its_number():
  assert identify(frozenset(), "0.14.0", "/sp/tinygrad") == ("0.14.0", True)
  assert identify(frozenset(), None, "/sp/tinygrad") == ("0.14.0", True)
  name, known = identify(frozenset(), "0.14.1", "/sp/tinygrad")   # 0.14.0's features, another release's number
  assert not known and name == "unknown (tinygrad 0.14.1, /sp/tinygrad)"


def test_a_commit_is_named_by_its_features_whatever_its_number_says():
  feats = KNOWN["a9069c17"]
  assert identify(feats, None, "/src/tinygrad") == ("a9069c17", True)
  assert identify(feats, "0.13.0", "/src/tinygrad") == ("a9069c17", True)   # its pyproject's number, older than it is
  name, known = identify(frozenset({"Ops.WAIT"}), None, "/src/tinygrad")
  assert not known and name == "unknown (no version number, /src/tinygrad)"


def test_the_number_is_read_where_the_module_was_imported_from(tmp_path):
  pkg = tmp_path / "tree" / "tinygrad"
  pkg.mkdir(parents=True)
  (pkg / "__init__.py").write_text("")
  module = types.SimpleNamespace(__file__=str(pkg / "__init__.py"))
  # a source tree: no distribution there, whatever tinygrad is installed elsewhere on this machine
  assert stated_number(module) is None
  info = tmp_path / "tree" / "tinygrad-9.9.9.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinygrad\nVersion: 9.9.9\n")
  assert stated_number(module) == "9.9.9"
  module.__version__ = "1.2.3"   # the module's own attribute first
  assert stated_number(module) == "1.2.3"


def test_a_hook_target_another_version_lacks_is_named_once(monkeypatch, capsys):
  monkeypatch.setattr(compat, "_missing_hooks", {})
  monkeypatch.setattr(compat, "_found", Tinygrad("/x/tinygrad", None, frozenset(), "0.14.0", True))
  mod = types.SimpleNamespace(__name__="tinygrad.fake")
  assert compat.hook_target(mod, "gone") is None and compat.hook_target(mod, "gone") is None

  def undecorated(x): return x
  assert compat.closure_cell(undecorated, "func") is None
  err = capsys.readouterr().err.splitlines()
  assert err[0] == "tinyspec: tinygrad 0.14.0 has no tinygrad.fake.gone: what it makes is not captured" and len(err) == 2
  assert compat.missing_hooks() == ["tinygrad.fake.gone", f"{__name__}.test_a_hook_target_another_version_lacks_is_named_once."
                                                          "<locals>.undecorated (closure cell 'func')"]


def test_a_hook_called_with_arguments_it_does_not_take_passes_them_to_tinygrad(monkeypatch, capsys):
  monkeypatch.setattr(compat, "_missing_hooks", {})
  monkeypatch.setattr(compat, "_found", Tinygrad("/x/tinygrad", None, frozenset(), "0.14.0", True))
  seen = []
  def orig(ast, renderer, extra=None): return ("orig", ast, renderer, extra)
  def wrapper(ast, renderer):
    seen.append(ast)
    return orig(ast, renderer)
  hooked = compat.tolerant(wrapper, orig, "tinygrad.codegen.do_to_program")
  assert hooked(1, 2) == ("orig", 1, 2, None) and seen == [1]
  assert hooked(3, 4, extra=5) == ("orig", 3, 4, 5) and seen == [1]   # a newer signature: tinygrad runs, unrecorded
  assert compat.missing_hooks() == ["tinygrad.codegen.do_to_program with the arguments the capture knows"]
  assert hooked.__name__ == "orig"   # tinygrad's tracing names a rewrite group by it
  assert "do_to_program" in capsys.readouterr().err


def test_a_hook_this_tinygrad_moved_leaves_its_stage_not_captured_and_the_rest_checked(monkeypatch, capsys):
  # get_kernel_graph as another version might have it: no closure cell to wrap. tinygrad runs as ever (its schedule
  # holds its own function); the capture has no kernel graph, says why, and checks everything else
  import tinygrad.schedule.rangeify as rangeify
  from tinygrad import Tensor

  from tinyspec.bridge.tinygrad.check import format_report, run_check
  monkeypatch.setattr(compat, "_missing_hooks", {})
  def get_kernel_graph(sink): return sink
  monkeypatch.setattr(rangeify, "get_kernel_graph", get_kernel_graph)
  rep = run_check(lambda: Tensor([1.0, 2.0, 3.0]) * 2 + 1)
  assert rep.capture.kernel_graphs == [] and rep.capture.programs and rep.capture.callified
  where = f"{__name__}.test_a_hook_this_tinygrad_moved_leaves_its_stage_not_captured_and_the_rest_checked.<locals>.get_kernel_graph"
  assert rep.unchecked[0] == f"capture: tinygrad {compat.identity()} has no {where} (closure cell 'func'), so what it makes was not captured"
  assert "kernel_graph: 0 graphs captured (tinygrad made none, or the capture did not see them)" in rep.unchecked
  assert rep.ok and rep.numbers["tensor"] is None and rep.numbers["callified"] is None   # the rest was compared, and held
  assert f"has no {where}" in capsys.readouterr().err and "NOT CHECKED" in format_report(rep, "p")


# ---- an unknown version: one warning line, and it runs ----
def run(code: str, pythonpath: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (pythonpath, str(ROOT)) if p))
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


def test_an_unknown_tinygrad_gets_one_warning_line_and_is_checked():
  # the installed tinygrad stating another number: 0.14.0's features under an unknown release
  code = ("import tinygrad; tinygrad.__version__ = '0.99.0'\n"
          "from tinyspec.bridge.tinygrad import identity\n"
          "from tinyspec.bridge.tinygrad.check import main\n"
          "print(identity()); print('exit', main('examples/tinygrad/matmul.py'))\n")
  r = run(code)
  warned = [ln for ln in r.stderr.splitlines() if "TinygradVersionWarning" in ln]
  assert len(warned) == 1 and "version 0.99.0" in warned[0] and "none of the versions it is tested on" in warned[0], r.stderr
  assert r.stderr.strip().splitlines() == warned   # the one line is all: no source line under it, nothing refused
  assert r.stdout.startswith("unknown (tinygrad 0.99.0, ") and "matmul.py: all holds" in r.stdout and "exit 0" in r.stdout, r.stdout


# ---- the snapshot, unpacked from ../shared/ ----
@pytest.fixture(scope="session")
def snapshot(tmp_path_factory) -> Path:
  """The directory the snapshot's tinygrad is unpacked into, once per test run (it is never copied into the project)."""
  if not SNAPSHOT.is_file(): pytest.skip(f"{SNAPSHOT} is absent: the second tinygrad lives in ../shared/ beside the repository")
  out = tmp_path_factory.mktemp("tinygrad-a9069c17")
  with tarfile.open(SNAPSHOT) as tar: tar.extractall(out, filter="data")
  return out


def test_the_snapshot_is_named_by_its_features_as_imported_from_its_directory(snapshot):
  code = ("import tinyspec.bridge.tinygrad as b; tg = b.imported()\n"
          "print(tg.identity); print(tg.path); print(tg.number); print(sorted(tg.features))\n")
  r = run(code, str(snapshot))
  assert r.returncode == 0, r.stderr
  name, path, number, feats = r.stdout.splitlines()
  assert name == "a9069c17" and Path(path) == (snapshot / "tinygrad").resolve() and number == "None"
  assert feats == str(sorted(KNOWN["a9069c17"]))
  assert "TinygradVersionWarning" not in r.stderr   # a version the bridge is tested on: no warning


# example -> (its exit code on the snapshot, why it differs from 0.14.0, where every example holds: test_bridge_tinygrad's
# test_examples_hold): none differ
DIFFERENT_ON_THE_SNAPSHOT: dict[str, tuple[int, str]] = {}


def test_every_example_is_checked_on_the_snapshot(snapshot):
  # `tinyspec tinygrad check` of each, all in one process (tinygrad's import is most of a small check's time)
  code = ("import contextlib, io\nfrom tinyspec.bridge.tinygrad.check import main\n"
          f"for f in {[str(p) for p in EXAMPLES]!r}:\n"
          "  out = io.StringIO()\n"
          "  with contextlib.redirect_stdout(out): rc = main(f)\n"
          "  print(repr((f, rc, out.getvalue())))\n")
  r = run(code, str(snapshot), timeout=900)
  assert r.returncode == 0, r.stderr
  import ast
  results = [ast.literal_eval(ln) for ln in r.stdout.splitlines()]
  assert [Path(f).name for f, _, _ in results] == [p.name for p in EXAMPLES]
  for f, rc, report in results:
    if (known := DIFFERENT_ON_THE_SNAPSHOT.get(Path(f).name)) is not None: assert rc == known[0], report
    else: assert rc == 0 and report.rstrip().endswith(f"{f}: all holds"), report
    # at least 99.5% of the nodes of every stage of every step translated, as on 0.14.0 (test_examples_hold)
    percents = [float(x) for x in re.findall(r" nodes, +([0-9.]+)% translated", report)]
    assert percents and min(percents) >= 99.5, report


# The bridge's test modules (test_bridge_tinygrad*.py) but test_examples_hold, whose every example the test above checks
# on the snapshot through the verb; of the prove and fuzz modules, the tests that reach what the versions differ in (rule
# locations read from the imported tinygrad, the prove verb, an entry's FOUND_ON, a program through every oracle): those
# two whole modules take 2 minutes on the snapshot (119 s measured, most of it fuzz campaigns running the same oracles).
ON_BOTH = ("not test_examples_hold and (test_bridge_tinygrad or tables_are_found_and_named or cli_target_tinygrad"
           " or entry_carries_program or correct_program_has_no_finding)")


def test_the_bridge_tests_pass_on_the_snapshot(snapshot):
  # TINYSPEC_TINYGRAD: the identity test_bridge_tinygrad's first test then asserts, so the run is known to be on the snapshot
  modules = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("test_bridge_tinygrad*.py"))]
  r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *modules, "tests/test_prove_tinygrad.py",
                      "tests/test_fuzz_tinygrad.py", "-k", ON_BOTH],
                     capture_output=True, text=True, cwd=ROOT, timeout=900,
                     env=dict(os.environ, PYTHONPATH=os.pathsep.join((str(snapshot), str(ROOT))), TINYSPEC_TINYGRAD="a9069c17"))
  assert r.returncode == 0 and " passed" in r.stdout and "failed" not in r.stdout, r.stdout[-3000:]

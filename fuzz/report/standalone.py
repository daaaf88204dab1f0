"""The standalone reproduction of a tinygrad corpus entry (`tinyspec repro --standalone ENTRY`): a Python script that
imports only tinygrad and numpy, runs the entry's program on the device the finding was made on, computes what the
program means with numpy (fuzz.report.numpy_program) and asserts that tinygrad gives it. It fails with an
AssertionError showing both values while the defect is there and exits 0 where tinygrad is right: what one pastes into
a tinygrad bug report.

What a script asserts depends on the finding (its signature's oracle):

  parity                   the values; where the program holds an integer literal its tensor's dtype cannot hold and
                           the two readings of it differ (fuzz.report.numpy_program), either reading's values pass:
                           tinygrad gives what neither means
  parity-literal-policy    the values with each literal converted to its tensor's dtype (numpy's reading): tinygrad
                           keeps the literal weak by policy, which is what the script shows
  parity-signed-overflow   the values with signed overflow wrapped (numpy's): tinygrad leaves it undefined by policy
  error                    that running the program raises nothing, then its values (unless it overflows a signed int,
                           where tinygrad's values are undefined)
  spec                     that no program tinygrad compiled breaks the rule (SPEC_CHECKS: the rule over tinygrad's
                           linearized programs), then the values as for error

A program naming a dtype numpy lacks (bfloat16, fp8) gets its expected values as literals computed by tinyspec's
evaluator when the script is written, and says so. Findings about tinyspec itself (error/tinyspec-evaluate), crashes,
hangs and spec rules with no check here have no standalone form: NoStandalone says which.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from fuzz.check.exact_ints import overflows_signed
from fuzz.check.tinygrad_oracles import tinygrad_dtype_aliases, tinyspec_outputs
from fuzz.corpus.store import Entry, entries, header_lines, load_entry
from fuzz.generate.tinygrad_programs import STORED_ONLY_DTYPES, ProgramSourceError, check_program_source
from fuzz.report.numpy_program import WEAK_HELPERS, NoNumpyForm, NumpyProgram, numpy_program
from tinyspec.fileio import atomic_write
from tinyspec.loadfile import InputError

ORACLES = ("parity", "parity-literal-policy", "parity-signed-overflow", "error", "spec")
HEADLINES = {
  "parity": "tinygrad's values differ from what the program means",
  "parity-literal-policy": "tinygrad reads an integer literal its tensor's dtype cannot hold with the literal's own value and wraps the "
                           "result; numpy and C convert the literal to the dtype first (a difference of policy)",
  "parity-signed-overflow": "the program overflows a signed integer, which tinygrad leaves undefined; asserted are the wrapped values numpy "
                            "gives (a difference of policy)",
  "error": "tinygrad raises on a program numpy computes",
  "spec": "tinygrad compiles a program that breaks tinyspec's rule {rule}",
}
# the environment of the device a finding was made on: the PYTHON device as the campaign runs it (tinygrad's default
# opts), every other finding on the device tinyspec captures (CPU, NOOPT=1: fuzz.check.tinygrad_oracles)
PYTHON_ENV = (("DEV", "PYTHON", "tinygrad's Python emulator, the device the finding was made on"),)
CPU_ENV = (("DEV", "CPU", "the device the finding was made on"), ("NOOPT", "1", "no kernel optimizations, as tinyspec captured the program"))

# each spec rule a script checks, over every program tinygrad compiled in the script's process (PROGRAM(sink, LINEAR,
# SOURCE, BINARY) in tinygrad.codegen.to_program_cache): the rule as tinyspec/spec states it, said of tinygrad's UOps
SPEC_CHECKS = {
  "kernel.shift_count": '''\
for prg in to_program_cache.values():
  for u in prg.src[1].src:
    if u.op in (Ops.SHL, Ops.SHR):
      count, width = u.src[1], u.dtype.itemsize * 8
      assert count.vmax >= 0 and count.vmin < width, \\
        f"{u.op} of {u.dtype} by a count in [{count.vmin}, {count.vmax}], never within [0, {width}): undefined in C\\n{prg.src[2].arg}"
''',
  "kernel.local_read_after_write": '''\
def storage(u):  # what an INDEX reads or writes, through AFTERs
  while u.op in (Ops.INDEX, Ops.AFTER, Ops.CAST): u = u.src[0]
  return u
for prg in to_program_cache.values():
  written = set()
  for u in prg.src[1].src:
    if u.op is Ops.STORE: written.add(storage(u.src[0]))
    if u.op is Ops.LOAD and (b := storage(u.src[0])).op is Ops.BUFFER:  # a kernel-local buffer (REG or LOCAL)
      assert b in written, f"a LOAD of kernel-local {b.arg} comes before any STORE into it: uninitialized memory\\n{prg.src[2].arg}"
''',
  "kernel.store_dtype": '''\
for prg in to_program_cache.values():
  for u in prg.src[1].src:
    if u.op is Ops.STORE:
      target, value = u.src[0].dtype, u.src[1].dtype  # an INDEX has the element dtype of its storage
      assert target == value, \\
        f"a STORE of {value} through an INDEX of {target}: the value is not converted to the storage's dtype\\n{prg.src[2].arg}"
''',
}


class NoStandalone(InputError):
  """An entry with no standalone form; the message says why."""


def standalone_script(entry: Entry) -> str:
  """The text of the entry's standalone script."""
  oracle, stage, rule = entry.signature
  if entry.case.kind != "tinygrad": raise NoStandalone(f"{entry.path}: a {entry.case.kind} entry; only tinygrad entries have a standalone form")
  if oracle not in ORACLES or not stage.startswith("tinygrad-"):
    raise NoStandalone(f"{entry.path}: {'/'.join(entry.signature)} is no finding about tinygrad a script can show")
  if oracle == "spec" and rule not in SPEC_CHECKS: raise NoStandalone(f"{entry.path}: no standalone check of the spec rule {rule}")
  src = str(entry.meta.get("PROGRAM", ""))
  try: check_program_source(src, f"{entry.path}: PROGRAM")
  except ProgramSourceError as e: raise NoStandalone(str(e)) from None
  try: want = numpy_program(src)
  except NoNumpyForm as e: want = _evaluated(src, str(e))
  weak = numpy_program(src, weak=True) if oracle == "parity" and not isinstance(want, str) else None
  if weak is not None and not weak.weak_lines: weak = None
  if weak is not None and all(np.array_equal(a, b) for a, b in zip(want.outputs, weak.outputs)): weak = None  # type: ignore[union-attr]
  check_values = oracle.startswith("parity") or not overflows_signed(src)
  parts = [
    "\n\n".join([_docstring(entry), _environment(stage), _imports(src, oracle)]),
    _tinygrad_source(src),
  ]
  if check_values:
    parts.append(_expected(want, "expected", "The program in numpy, each literal first converted to its tensor's dtype (numpy's reading)."))
    if weak is not None:
      parts.append(_expected(weak, "expected_weak", "The program in numpy as tinygrad reads a literal: its own value, the result wrapped."))
    if (isinstance(want, NumpyProgram) and want.uses_helpers) or (weak is not None and weak.uses_helpers): parts.append(WEAK_HELPERS)
    parts.append(_same(isinstance(want, NumpyProgram) and want.float_sums))
  parts.append(_checks(oracle, rule, check_values, weak is not None))
  return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def _docstring(entry: Entry) -> str:
  oracle, _, rule = entry.signature
  found = [ln for ln in header_lines(entry.path) if not ln.startswith("graph():")]
  lines = [f'"""{"/".join(entry.signature)}: {HEADLINES[oracle].format(rule=rule)}.', "",
           f"Found by tinyspec (corpus/{entry.path.name}):", *[f"  {ln}" for ln in found], versions_sentence(entry.meta.get("REPRODUCES") or {}),
           "Needs only tinygrad and numpy: exits 0 where tinygrad gives what is asserted, fails with an AssertionError where not.", '"""']
  return "\n".join(ln.replace("\\", "\\\\") for ln in lines)


def versions_sentence(record: dict[str, bool]) -> str:
  """Where a script fails, from an entry's REPRODUCES record."""
  yes, no = [v for v, r in record.items() if r], [v for v, r in record.items() if not r]
  if not record: return "Not yet run on a tinygrad version."
  if not yes: return f"Does not reproduce on tinygrad {' or '.join(no)}."
  return f"Reproduces on tinygrad {' and '.join(yes)}" + (f", not on {' or '.join(no)}." if no else ".")


def _environment(stage: str) -> str:
  env = PYTHON_ENV if stage == "tinygrad-PYTHON" else CPU_ENV
  return "\n".join(["import os", "", *[f'os.environ["{k}"] = "{v}"  # {why}' for k, v, why in env]])


def _imports(src: str, oracle: str) -> str:
  names = ["Tensor"] + (["dtypes"] if "dtypes." in src else []) + (["function"] if "@function" in src else [])
  lines = ["import numpy as np", f"from tinygrad import {', '.join(names)}"]
  if oracle == "spec": lines += ["from tinygrad.codegen import to_program_cache", "from tinygrad.uop.ops import Ops"]
  return "\n".join(lines)


def _tinygrad_source(src: str) -> str:
  """The program as tinygrad runs it: tinyspec's names of the dtypes the generator never draws become tinygrad's."""
  if any(f"dtypes.{d}" in src for d in STORED_ONLY_DTYPES):
    alias = tinygrad_dtype_aliases()
    src = re.sub(r"\bdtypes\.(\w+)", lambda m: f"dtypes.{alias.get(m.group(1), m.group(1))}", src)
  return "# the program, as tinyspec's fuzzer found and reduced it\n" + src


def _evaluated(src: str, why: str) -> str:
  """The values tinyspec's evaluator gives the program, as numpy literals (for a program numpy cannot compute)."""
  try: outs = tinyspec_outputs(src)
  except Exception as e:
    raise NoStandalone(f"neither numpy ({why}) nor tinyspec's evaluator ({type(e).__name__}: {e}) computes the program") from None
  lines = [f"# {why}: these are the values tinyspec's evaluator gave the program when this script was written", "return ("]
  lines += [f"  {_array_literal(o)}," for o in outs]
  return "\n".join(lines + [")"])


def _array_literal(a: np.ndarray) -> str:
  vals = ", ".join(repr(v) for v in a.reshape(-1).tolist())
  return f"np.array([{vals}], dtype=np.{a.dtype.name}).reshape({tuple(a.shape)!r})"


def _expected(p: NumpyProgram | str, name: str, doc: str) -> str:
  """def name(): the program's values; its @functions in numpy are defined inside it (the tinygrad ones keep their names)."""
  if isinstance(p, str): return _function(name, "The values the program means.", p.splitlines())
  return _function(name, doc, [ln for f in p.functions for ln in f] + p.body)


def _function(name: str, doc: str, body: Sequence[str]) -> str:
  return "\n".join([f"def {name}():", f'  """{doc}"""', *[f"  {ln}" for ln in body]])


def _same(close: bool) -> str:
  test = "np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)" if close else \
    'np.array_equal(got, want, equal_nan=got.dtype.kind == "f")'
  why = "  # float sums: numpy adds in another order" if close else ""
  return "\n".join(["def same(got, want):", "  got, want = np.asarray(got), np.asarray(want)",
                    f"  return got.dtype == want.dtype and got.shape == want.shape and {test}{why}"])


def _checks(oracle: str, rule: str, values: bool, weak: bool) -> str:
  run = "got = [t.numpy() for t in program()]"
  if oracle in ("error", "spec"):
    run = "\n".join(["try:", f"  {run}", "except Exception as e:",
                     '  raise AssertionError(f"tinygrad raised {type(e).__name__}: {e}") from e'])
  lines = [run]
  if oracle == "spec":
    lines += ["", f"# tinyspec's rule {rule}, said of every program tinygrad compiled here", SPEC_CHECKS[rule].rstrip("\n"), ""]
  if not values:
    lines.append("# the program overflows a signed integer, so tinygrad's values are undefined: only the above is asserted")
  elif weak:
    lines += ["for i, (g, w, k) in enumerate(zip(got, expected(), expected_weak())):",
              "  assert same(g, w) or same(g, k), (f\"output {i}: tinygrad gives {g!r}; with each literal converted to its tensor's dtype \"",
              "                                    f\"the program means {np.asarray(w)!r}, with tinygrad's reading of a literal {np.asarray(k)!r}\")"]
  else:
    lines += ["for i, (g, w) in enumerate(zip(got, expected())):",
              "  assert same(g, w), f\"output {i}: tinygrad gives {g!r}, the program means {np.asarray(w)!r}\""]
  lines.append('print("tinygrad gives what is asserted")')
  return "\n".join(lines)


STANDALONE_DIR = "standalone"  # the scripts of a corpus directory's tinygrad entries, each named as its entry


def script_path(entry: Entry) -> Path:
  return entry.path.parent / STANDALONE_DIR / entry.path.name


def tinygrad_entries(corpus_dir: str | Path) -> list[Entry]:
  """The corpus directory's entries of KIND 'tinygrad', loaded."""
  return [e for e in map(load_entry, entries(corpus_dir)) if e.case.kind == "tinygrad"]


def write_scripts(corpus_dir: str | Path) -> list[Path]:
  """Write the standalone script of every tinygrad entry of corpus_dir into its STANDALONE_DIR (files left unchanged
  when their text is), remove the scripts of entries that are gone; the scripts' paths, in the entries' order."""
  out = []
  for e in tinygrad_entries(corpus_dir):
    path, text = script_path(e), standalone_script(e)
    if not path.is_file() or path.read_text(encoding="utf-8") != text: atomic_write(path, text)
    out.append(path)
  for stale in set((Path(corpus_dir) / STANDALONE_DIR).glob("*.py")) - set(out): stale.unlink()
  return out

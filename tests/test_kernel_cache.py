"""The compiled-kernel cache loads only what it compiled (a private directory, every object's hash checked before
loading it), and names that reach C or OpenCL source are identifiers."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tinyspec.render.cstyle import RenderError
from tinyspec.runtime import cpu
from tinyspec.uop import Ops, ParamArg, SourceArg, UOp

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")


def _planted(tmp_path, mark) -> bytes:
  """A shared object whose constructor creates mark: what loading a planted cache file would run."""
  c = tmp_path / "planted.c"
  c.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void f(void) {{ FILE *p = fopen("{mark}", "w"); if (p) fclose(p); }}\n'
               "void k(float *a) { a[0] = 1; }\n")
  subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "planted.so"), str(c)], check=True)
  return (tmp_path / "planted.so").read_bytes()


def test_a_planted_object_is_not_loaded(tmp_path, monkeypatch):
  cache = tmp_path / "cache"
  monkeypatch.setenv("TINYSPEC_CACHE", str(cache))
  mark = tmp_path / "constructor_ran"
  src = f"void k(float *a) {{ a[0] = {len(str(tmp_path))}; }}\n"
  obj = cpu.compile_source(src, "gcc")
  assert (cache.stat().st_mode & 0o777) == 0o700 and obj.with_suffix(".sha256").exists()
  # another object under the same name (the hash beside it is the real one's): compiled again, never loaded
  obj.write_bytes(_planted(tmp_path, mark))
  cpu.clear_memory_cache()
  lib = cpu.load_source(src, "gcc")
  assert not mark.exists() and hasattr(lib, "k")
  # a planted object with its own hash file next to it, in a directory others can write to: not used at all
  shared = tmp_path / "shared"
  shared.mkdir()
  os.chmod(shared, 0o777)
  monkeypatch.setenv("TINYSPEC_CACHE", str(shared))
  src2 = src.replace("a[0]", "a[0] = 2; a[0]")
  planted = shared / f"{cpu._key('gcc', src2)}.so"
  planted.write_bytes(_planted(tmp_path, mark))
  planted.with_suffix(".sha256").write_text(cpu._digest(planted) or "")
  cpu.clear_memory_cache()
  assert cpu.compile_source(src2, "gcc").parent != shared
  cpu.load_source(src2, "gcc")
  assert not mark.exists()


def test_names_that_reach_source_are_identifiers():
  from tinyspec.lower.render import get_renderer, render_program
  from tinyspec.dtype import dtypes
  p = UOp(Ops.PARAM, dtypes.float32, (), ParamArg(0, 1))
  lin = UOp(Ops.LINEAR, src=(p,))
  bad = UOp(Ops.PROGRAM, src=(UOp(Ops.SINK), lin), arg='k(float* a) { system("id"); } void x')
  with pytest.raises(RenderError, match="not a C identifier"):
    render_program(None, bad, get_renderer("c"))
  with pytest.raises(RenderError, match="not an integer"):
    render_program(None, UOp(Ops.PROGRAM, src=(UOp(Ops.SINK), UOp(Ops.LINEAR, src=(p.replace(arg=ParamArg("0; x", 1)),))), arg="k"),
                   get_renderer("c"))
  src = UOp(Ops.SOURCE, arg=SourceArg("c", "k; int y", "void k(void) {}"))
  with pytest.raises(RenderError, match="not a C identifier"):
    cpu.compile_programs([UOp(Ops.PROGRAM, src=(UOp(Ops.SINK), lin, src), arg="k")], "gcc")

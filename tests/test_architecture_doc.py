"""docs/architecture.md is true of the tree: its table of layers is test_layers.LAYERS, row by row, every path it names
exists, and the files one case passes through (bench/case_files.py --doc) are listed and exist."""
from __future__ import annotations

import re
from pathlib import Path

from test_layers import LAYERS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"


def section(title: str) -> str:
  return DOC.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def as_path(mod: str) -> str:
  """A module of LAYERS as the doc names it: a package as `dir/`, a module as `file.py`."""
  p = ROOT / mod.replace(".", "/")
  return f"{p.relative_to(ROOT)}/" if p.is_dir() else f"{p.relative_to(ROOT)}.py"


def test_the_layer_table_is_the_tested_layers():
  rows = [ln for ln in section("The layers").splitlines() if ln.startswith("| ") and not ln.startswith("| layer")]
  named = [re.findall(r"`([^`]+)`", row.split("|")[1]) for row in rows]
  assert named == [[as_path(m) for m in layer] for layer in LAYERS]


def test_every_path_named_exists():
  paths = {t for t in re.findall(r"`([^`\s]+)`", DOC.read_text()) if "/" in t and (t.endswith((".py", "/")))}
  assert paths, "the doc names no path"
  assert sorted(p for p in paths if "<" not in p and not (ROOT / p).exists()) == []


def test_the_files_of_one_case_are_listed():
  listing = DOC.read_text().split("<!-- case_files: begin -->", 1)[1].split("<!-- case_files: end -->", 1)[0]
  files = re.findall(r"^  ((?:fuzz|tinyspec)/\S+\.py)$", listing, re.M)
  count = re.search(r"^(\d+) files: (\d+) in fuzz/, (\d+) in tinyspec/$", listing, re.M)
  assert files and count, "no list of files in docs/architecture.md: run bench/case_files.py --doc"
  assert int(count.group(1)) == len(files) == int(count.group(2)) + int(count.group(3))
  assert [f for f in files if not (ROOT / f).exists()] == []

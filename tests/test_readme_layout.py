"""The README's layout section matches the tree: every package and top-level module of tinyspec/ and fuzz/ is named
there, and every path it names exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layout() -> str:
  text = (ROOT / "README.md").read_text()
  return text.split("## Layout", 1)[1].split("\n## ", 1)[0]


def named_paths(section: str) -> set[str]:
  """Paths in backquotes; a bare `name.py` or `name/` after a tinyspec/ path on the same line is relative to tinyspec/."""
  out = set()
  for line in section.splitlines():
    base = ""
    for tok in re.findall(r"`([^`\s]+)`", line):
      if "/" in tok.rstrip("/"): base = tok.rstrip("/").split("/")[0] + "/"
      elif base and (tok.endswith(".py") or tok.endswith("/")): tok = base + tok
      if tok.endswith(".py") or tok.endswith("/"): out.add(tok.rstrip("/"))
  return out


def tree() -> set[str]:
  out = set()
  for top in ("tinyspec", "fuzz"):
    for p in (ROOT / top).iterdir():
      if p.name.startswith(("_", ".")): continue
      if p.is_dir() and (p / "__init__.py").exists(): out.add(f"{top}/{p.name}")
      elif p.suffix == ".py": out.add(f"{top}/{p.name}")
  out |= {f"tinyspec/bridge/{p.name}" for p in (ROOT / "tinyspec" / "bridge").iterdir() if (p / "__init__.py").exists()}
  return out


def test_every_package_and_module_is_in_the_layout():
  named = named_paths(layout())
  assert sorted(tree() - named - {"tinyspec/bridge"}) == []


def test_every_path_the_layout_names_exists():
  missing = [p for p in named_paths(layout()) if p.startswith(("tinyspec", "fuzz")) and not (ROOT / p).exists()]
  assert missing == []


def test_the_path_reader_sees_relative_names():
  assert named_paths("- `tinyspec/dtype.py`, `uop.py`, `viz/`: x") == {"tinyspec/dtype.py", "tinyspec/uop.py", "tinyspec/viz"}

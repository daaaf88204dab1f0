"""README.md's "Tensor API" section is the listing generated from the Tensor class (tinyspec.frontend.api), word for
word, and every op it lists is exercised by name in a test."""
from __future__ import annotations

import re
from pathlib import Path

from tinyspec.frontend.api import listing, methods_by_module, operators

ROOT = Path(__file__).resolve().parent.parent


def api_section() -> str:
  return (ROOT / "README.md").read_text().split("## Tensor API", 1)[1].split("\n## ", 1)[0]


def test_readme_lists_the_generated_api():
  assert listing() in api_section(), "README.md's Tensor API listing is stale: paste `python -m tinyspec.frontend.api`"


def test_listing_names_every_module_and_operator():
  mods = methods_by_module()
  assert {"tensor", "creation", "math", "reduce", "movement", "indexing", "nn", "losses"} <= set(mods)
  assert {"**", "@", "//", "[]"} <= set(operators())
  for m in mods: assert (ROOT / "tinyspec" / "frontend" / f"{m}.py").exists()


def test_every_listed_op_is_used_by_a_test():
  text = "\n".join(p.read_text() for p in sorted((ROOT / "tests").glob("*.py")))
  unused = [n for names in methods_by_module().values() for n in names if not re.search(rf"\.{n}\b", text)]
  assert unused == [], f"ops no test calls: {unused}"

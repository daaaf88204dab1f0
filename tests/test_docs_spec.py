"""docs/spec.md stays in sync with the code: every op of Ops and every registered rule id appears in it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import tinyspec  # noqa: F401  (registers every rule module, gradient rules included)
from tinyspec.spec import RULES
from tinyspec.uop import Ops

pytestmark = pytest.mark.spec
DOC = Path(__file__).resolve().parent.parent / "docs" / "spec.md"


def _text() -> str:
  return DOC.read_text()


def test_registry_is_not_trivially_small():
  assert len(RULES) >= 60 and all(r.doc for r in RULES.values())


@pytest.mark.parametrize("op", [op.name for op in Ops])
def test_every_op_is_documented(op):
  # an op row of the op table: "| NAME |" or NAME among a row's listed names
  rows = [ln for ln in _text().splitlines() if ln.startswith("| ")]
  assert any(re.search(rf"(^\| |\s){op}(\s|\s*\()", ln.split("|")[1] + " ") for ln in rows), f"op {op} has no row in docs/spec.md"


@pytest.mark.parametrize("rid", sorted(RULES))
def test_every_rule_id_is_documented(rid):
  assert f"`{rid}`" in _text(), f"rule {rid} is not in docs/spec.md"


def test_no_stale_rule_ids_in_doc():
  documented = set(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \|", _text(), re.M))
  assert documented <= set(RULES), f"docs/spec.md lists rules the code does not have: {sorted(documented - set(RULES))}"


# ---- the op registry and the docs say the same ----
def test_registry_table_in_spec_md_is_the_generated_one():
  from tinyspec.ops.table import BEGIN, END, markdown
  text = _text()
  assert BEGIN in text and END in text, "docs/spec.md lost the markers of the registry table"
  assert text.split(BEGIN, 1)[1].split(END, 1)[0].strip() == markdown(), "run: python -m tinyspec.ops.table --write"


def test_op_rows_name_the_registry_dtype_class_word_for_word():
  from tinyspec.ops import DTYPE_CLASS, class_name
  rows = {ln.split("|")[1].strip(): ln.split("|")[4] for ln in _text().splitlines() if ln.startswith("| ") and ln.count("|") >= 7}
  for op in DTYPE_CLASS:
    row = next((dt for names, dt in rows.items() if op.name in names.split()), None)
    assert row is not None, f"op {op.name} has no row"
    assert class_name(op) in row, f"docs/spec.md row of {op.name} says {row.strip()!r}; the registry's class is {class_name(op)!r}"


def test_ir_md_states_the_registry_classes_word_for_word():
  from tinyspec.ops.classes import class_summary
  assert class_summary() in (DOC.parent / "ir.md").read_text()


@pytest.mark.parametrize("rid", sorted(RULES))
def test_rule_rows_say_what_the_code_says_word_for_word(rid):
  rows = [ln for ln in _text().splitlines() if ln.startswith(f"| `{rid}` |")]
  assert rows == [f"| `{rid}` | {RULES[rid].doc} |"], f"docs/spec.md's row of {rid} differs from its rule's doc in the code"

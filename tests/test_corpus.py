"""Replay every stored counterexample of corpus/ (or of $TINYSPEC_CORPUS): an open bug (EXPECT = "fails") is an expected
failure, a fixed one (EXPECT = "passes") must pass. An unreadable file fails its own entry, by name; the others still run.
Entries are read as data (fuzz.corpus.store.load_entry): a file with code in it fails by name, and its code never runs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from fuzz.corpus.store import entries, load_entry

from fuzz.engine.targets import replay
from fuzz.engine.tinygrad_target import unavailable as tinygrad_unavailable

pytestmark = pytest.mark.spec

CORPUS = Path(os.environ.get("TINYSPEC_CORPUS") or Path(__file__).resolve().parent.parent / "corpus")
FILES = entries(CORPUS)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_entry(path: Path, request):
  entry = load_entry(path)  # an InputError names the file and what is wrong with it
  if entry.case.kind == "tinygrad" and (why := tinygrad_unavailable()) is not None:
    pytest.skip(f"a tinygrad program: {why}")
  fails, findings = replay(entry)
  detail = "\n".join(f.describe() for f in findings)
  if entry.expect == "fails":
    request.applymarker(pytest.mark.xfail(reason=f"open bug {'/'.join(entry.signature)}", strict=False))
    assert not fails, f"{path.name} still fails:\n{detail}"
  else:
    assert not fails, f"{path.name} ({'/'.join(entry.signature)}) fails again:\n{detail}"


def test_corpus_directory_exists():
  assert CORPUS.is_dir()
  assert all(p.suffix == ".py" for p in FILES)

"""The source files one fuzz case passes through, from generation to its corpus file: a measure of how many places a
reader follows to understand one case.

One campaign case (in this process, reference evaluator only) on a pipeline with the seeded bug `mod_off_by_one`, so
the case is generated, lowered, checked, blamed, reduced and written to the corpus. The campaign's proof of the rules
the bug swapped in is switched off: it is the prover's work, not the case's, and it would find the bug before any case. Every module of tinyspec/ and
fuzz/ is imported before the case runs, so the count is of the files whose functions the case calls, not of those
merely imported. The seed is the first whose case 0 shows the bug.

Run:  .venv/bin/python bench/case_files.py [--root DIR] [--doc]   (DIR: another checkout to measure, e.g. an older
      commit's; the flat fuzz/ of older trees is understood too. bench/case_files.txt holds this tree's output and an
      older one's. --doc also rewrites the list in docs/architecture.md, "The files one case passes through".)
"""
from __future__ import annotations

import argparse
import importlib
import io
import os
import pkgutil
import subprocess
import sys
import tempfile
from pathlib import Path

BUG = "mod_off_by_one"


def api():
  try:
    from fuzz.engine.campaign import CampaignConfig, run_campaign
    from fuzz.testbed.seeded_bugs import SEEDED_BUGS, broken_pipeline
  except ImportError:  # fuzz/ before it was split into packages
    from fuzz.campaign import CampaignConfig, run_campaign  # type: ignore[no-redef]
    from fuzz.seeded_bugs import SEEDED_BUGS, broken_pipeline  # type: ignore[no-redef]
  return CampaignConfig, run_campaign, broken_pipeline(next(b for b in SEEDED_BUGS if b.name == BUG))


def one_case(seed: int, corpus: str):
  CampaignConfig, run_campaign, passes = api()
  # the case, not the prover: the rules the bug swaps in are not proven first (a tree older than that proof has no switch)
  no_proof = {"prove_changed": False} if "prove_changed" in CampaignConfig.__dataclass_fields__ else {}
  cfg = CampaignConfig(seconds=120, seed=seed, workers=0, corpus=corpus, max_cases=1, passes=passes, backends=("reference",),
                       weights={"kind:kernel": 0.0}, reduce_seconds=30, resume=False, **no_proof)
  return run_campaign(cfg, io.StringIO())


def import_all() -> None:
  for top in ("tinyspec", "fuzz"):
    pkg = importlib.import_module(top)
    for m in pkgutil.walk_packages(pkg.__path__, top + "."):
      try: importlib.import_module(m.name)
      except ImportError: pass  # an optional part (the tinygrad bridge without tinygrad)


def find_seed() -> int:
  for seed in range(500):
    with tempfile.TemporaryDirectory() as d:
      if one_case(seed, d).findings: return seed
  raise SystemExit("no seed below 500 shows the bug in its first case")


DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
BEGIN, END = "<!-- case_files: begin -->", "<!-- case_files: end -->"


def write_doc(listing: str) -> None:
  """Put the listing (this script's output) between the markers of docs/architecture.md."""
  text = DOC.read_text()
  if BEGIN not in text or END not in text: raise SystemExit(f"{DOC} has no {BEGIN} ... {END} section to rewrite")
  head, rest = text.split(BEGIN, 1)
  DOC.write_text(f"{head}{BEGIN}\n```\n{listing.rstrip()}\n```\n{END}{rest.split(END, 1)[1]}")


def trace(root: Path, seed: int) -> None:
  import_all()
  files: set[str] = set()
  tops = tuple(str(root / top) + os.sep for top in ("tinyspec", "fuzz"))
  def tracer(frame, event, arg):
    f = frame.f_code.co_filename
    if f.startswith(tops) and frame.f_code.co_name != "<module>": files.add(os.path.relpath(f, root))
    return None  # calls only, no line events
  with tempfile.TemporaryDirectory() as d:
    sys.settrace(tracer)
    try: s = one_case(seed, d)
    finally: sys.settrace(None)
    entries = sorted(p.name for p in Path(d).glob("*.py"))
  if not (s.findings and entries): raise SystemExit("the case gave no corpus entry")
  fz, ts = sorted(f for f in files if f.startswith("fuzz")), sorted(f for f in files if f.startswith("tinyspec"))
  print(f"seed {seed}, finding {s.findings[0].signature}, corpus file {entries[0]}")
  print(f"{len(files)} files: {len(fz)} in fuzz/, {len(ts)} in tinyspec/")
  for f in fz + ts: print("  " + f)


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="the checkout to measure")
  ap.add_argument("--doc", action="store_true", help="also rewrite the list in docs/architecture.md")
  ap.add_argument("--in-root", choices=("find", "trace"), help=argparse.SUPPRESS)
  ap.add_argument("--seed", type=int, help=argparse.SUPPRESS)
  a = ap.parse_args()
  root = a.root.resolve()
  if a.in_root is not None:  # a child process run inside root
    sys.path.insert(0, str(root))
    if a.in_root == "find": print(find_seed())
    else: trace(root, a.seed)
    return
  env = {**os.environ, "PYTHONPATH": str(root)}
  def child(*args: str) -> str:
    cmd = [sys.executable, __file__, "--root", str(root), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=root, env=env).stdout
  seed = int(child("--in-root", "find").split()[-1])
  listing = f"$ .venv/bin/python bench/case_files.py\n{child('--in-root', 'trace', '--seed', str(seed))}"  # a fresh process
  print(listing, end="")
  if a.doc: write_doc(listing)


if __name__ == "__main__":
  main()

"""Rerun the standalone script of every tinygrad corpus entry on each tinygrad version and record where it reproduces.

    python scripts/tinygrad_versions.py [--corpus corpus] [--shared ../shared] [--hosts 1] [--check]

Writes corpus/standalone/<entry>.py for every tinygrad entry (`tinyspec repro --standalone`), runs each under the
installed tinygrad and under the snapshot unpacked from <shared>/tinygrad/tinygrad-<commit>.tar.gz, prints a table,
then writes REPRODUCES = {version: True/False} into each entry and the scripts again (their docstrings name the
versions). With --check nothing is written: exit 1 when a record differs from what the scripts do now. A script that
neither passes nor fails its assertion (it broke) is reported and nothing is recorded. Run inside the project's venv.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.corpus.store import set_constant  # noqa: E402
from fuzz.report.standalone import script_path, tinygrad_entries, write_scripts  # noqa: E402
from fuzz.report.tinygrad_versions import SNAPSHOT_TARBALL, installed_version, run_scripts, snapshot_version  # noqa: E402


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--corpus", default=str(ROOT / "corpus"))
  ap.add_argument("--shared", default=str(ROOT.parent / "shared"), help="the folder holding tinygrad/tinygrad-<commit>.tar.gz")
  ap.add_argument("--hosts", type=int, default=1, help="script hosts per version, all run at once (default 1)")
  ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a record differs from what the scripts do")
  args = ap.parse_args(argv)
  tarball = Path(args.shared) / SNAPSHOT_TARBALL
  if not tarball.is_file():
    print(f"no snapshot at {tarball}", file=sys.stderr)
    return 2
  if not args.check: write_scripts(args.corpus)
  entries = tinygrad_entries(args.corpus)
  scripts = [script_path(e) for e in entries]
  with tempfile.TemporaryDirectory() as tmp:
    versions = [installed_version(), snapshot_version(tarball, Path(tmp))]
    start = time.monotonic()
    outcomes = run_scripts(scripts, versions, hosts=args.hosts)
  print(f"{len(outcomes)} runs in {time.monotonic() - start:.0f} s")
  got = {(o.version, o.script.name): o for o in outcomes}
  names = [v.name for v in versions]
  print(f"{'entry':60s} " + " ".join(f"{n:>10s}" for n in names))
  broke, differ = [], []
  for e in entries:
    row = [got[(n, e.path.name)] for n in names]
    print(f"{e.path.name:60s} " + " ".join(f"{({True: 'fails', False: 'passes', None: 'BROKE'})[o.reproduces]:>10s}" for o in row))
    broke += [o for o in row if o.reproduces is None]
    record = {o.version: o.reproduces for o in row}
    if record != e.meta.get("REPRODUCES"): differ.append((e, record))
  for o in broke: print(o.describe(), file=sys.stderr)
  if broke: return 1
  for e, record in differ: print(f"{e.path.name}: {e.meta.get('REPRODUCES')} -> {record}")
  if args.check: return 1 if differ else 0
  for e, record in differ: set_constant(e.path, "REPRODUCES", record)
  write_scripts(args.corpus)
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""A campaign on a Dask cluster against the same campaign run locally: a seeded bug found, reduced and stored alike.

    .venv/bin/python bench/dask_campaign.py [--cases 6000] [--seed 0] [--bug pad_gate_dropped] [--workers 2]
                                            [--scheduler tcp://HOST:8786]

The campaign runs the seeded bug's broken pipeline (fuzz.testbed.seeded_bugs) with the campaign's defaults otherwise
(reference and CPU parity, the spec after every rule application, every oracle), first on the cluster (a LocalCluster
of --workers processes of one thread on this machine, or the scheduler at --scheduler), then in --workers local
worker processes, each for --cases cases (a case count, not a time budget: a campaign cut by time leaves the cases it
was running for its resume, so two runs cut by time need not hold the same cases). It prints both runs' wall time and
cases/s, their findings, and whether the two corpus directories hold the same entries (each file's text but for the
time it was found) and the two state files the same cases, results and weights. Exit status 1 when they differ.
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.engine.campaign import run_campaign  # noqa: E402
from fuzz.engine.config import CampaignConfig  # noqa: E402
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, broken_pipeline  # noqa: E402


def campaign(corpus: Path, a: argparse.Namespace, scheduler: str | None) -> tuple[object, float]:
  cfg = CampaignConfig(seconds=24 * 3600, seed=a.seed, workers=0 if scheduler else a.workers, corpus=str(corpus), max_cases=a.cases,
                       passes=broken_pipeline(BUGS_BY_NAME[a.bug]), scheduler=scheduler)
  t = time.perf_counter()
  s = run_campaign(cfg, io.StringIO())
  return s, time.perf_counter() - t


def entries(d: Path) -> dict[str, str]:
  return {p.name: re.sub(r", found [^\n]* UTC", "", p.read_text()) for p in sorted(d.glob("*.py"))}


def state(d: Path, seed: int) -> dict:
  s = json.loads((d / f".fuzz-state-{seed}.json").read_text())
  return {k: s.get(k) for k in ("cases", "done_in_epoch", "epoch_results", "weights")}


def show(name: str, s, wall: float) -> None:
  print(f"{name}: {s.cases} cases in {wall:.0f} s = {s.cases / wall:.1f} cases/s")
  for f in s.findings:
    print(f"  {'/'.join(f.signature)}  case {f.case}  {f.found_nodes} -> {f.nodes} nodes  {Path(f.path).name}")


def show_difference(got: dict[str, str], want: dict[str, str]) -> None:
  """The files only one run stored, and a diff of each file that differs."""
  for name in sorted(set(got) ^ set(want)): print(f"  only in the {'Dask' if name in got else 'local'} run: {name}")
  for name in sorted(set(got) & set(want)):
    if got[name] != want[name]:
      diff = difflib.unified_diff(want[name].splitlines(), got[name].splitlines(), "local/" + name, "dask/" + name, lineterm="", n=1)
      print("\n".join("  " + line for line in list(diff)[:40]))


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--cases", type=int, default=6000)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--bug", default="pad_gate_dropped", choices=sorted(BUGS_BY_NAME))
  ap.add_argument("--workers", type=int, default=2)
  ap.add_argument("--scheduler", default=None, help="an existing scheduler's address (default: a LocalCluster of --workers processes)")
  a = ap.parse_args()
  print("$ " + " ".join([".venv/bin/python", *sys.argv]))
  with tempfile.TemporaryDirectory() as d:
    dask_dir, local_dir = Path(d) / "dask", Path(d) / "local"
    if a.scheduler:
      s_dask, w_dask = campaign(dask_dir, a, a.scheduler)
    else:
      import distributed
      with distributed.LocalCluster(n_workers=a.workers, processes=True, threads_per_worker=1, dashboard_address=None) as c:
        s_dask, w_dask = campaign(dask_dir, a, c.scheduler_address)
    show(f"Dask ({a.scheduler or f'LocalCluster, {a.workers} workers'})", s_dask, w_dask)
    s_local, w_local = campaign(local_dir, a, None)
    show(f"local ({a.workers} worker processes)", s_local, w_local)
    bug = BUGS_BY_NAME[a.bug]
    seeded = [f for f in s_dask.findings if f.signature[1:] == (bug.pass_name, bug.rule)]
    same_findings = [(f.signature, f.case, f.nodes) for f in s_dask.findings] == [(f.signature, f.case, f.nodes) for f in s_local.findings]
    same_entries, same_state = entries(dask_dir) == entries(local_dir), state(dask_dir, a.seed) == state(local_dir, a.seed)
    print(f"seeded bug {a.bug} ({bug.pass_name}/{bug.rule}) found on the cluster: {'yes' if seeded else 'NO'}")
    print(f"same findings (signature, case, reduced size): {same_findings}")
    print(f"same corpus entries ({len(entries(dask_dir))} files): {same_entries}")
    if not same_entries: show_difference(entries(dask_dir), entries(local_dir))
    print(f"same state (cases done, their results, weights): {same_state}")
    return 0 if seeded and same_findings and same_entries and same_state else 1


if __name__ == "__main__":
  sys.exit(main())

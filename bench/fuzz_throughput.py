"""Fuzzing throughput: cases per second per core, each mode as a ratio to the reference-only one-core run of the same
invocation, split by phase, and the reducer on the seeded bugs.

    .venv/bin/python bench/fuzz_throughput.py [--cases N] [--seed S] [--compilers gcc,tcc] [--no-opencl] [--no-workers]

1. Reference only, spec after every pass and after every rule application (the campaign's default), in this process
   on N cases: cases/s and the time of each phase (generate, lower, spec, evaluate).
2. The same with CPU parity, for each C compiler: the kernels of 16 cases are compiled together in one compiler
   run (phases compile and run added). A fresh compiler cache directory, so every object is really compiled.
3. The same with OpenCL parity (PoCL), the kernels of 16 cases built as one program.
4. Whole campaigns of N cases (per-rewrite, reference only): 1 and 2 local worker processes, and 2 Dask workers of a
   LocalCluster on this machine (with `distributed` installed); cases/s per core, start-up included.
5. The reducer on each seeded bug of fuzz.testbed.seeded_bugs: the campaign that finds it, the time spent reducing and the
   node count before and after.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.engine.campaign import run_campaign  # noqa: E402
from fuzz.engine.config import CampaignConfig  # noqa: E402
from fuzz.engine.runner import CaseRunner  # noqa: E402
from fuzz.reduce.graph import node_count  # noqa: E402
from fuzz.generate.kinds import case_for  # noqa: E402

PHASES = ("generate", "lower", "spec", "evaluate", "compile", "run", "reduce")


def throughput(cases: int, seed: int, backends: tuple[str, ...], cc: str | None, per_rewrite: bool = True) -> tuple[float, dict[str, float]]:
  with tempfile.TemporaryDirectory() as d:
    runner = CaseRunner(CampaignConfig(seed=seed, corpus=d, backends=backends, cc=cc, per_rewrite=per_rewrite))
    batch = 16 if {"cpu", "opencl"} & set(backends) else 1
    t = time.perf_counter()
    for start in range(0, cases, batch):
      runner.run_batch(list(range(start, min(cases, start + batch))), {})
    wall = time.perf_counter() - t
    return wall, dict(runner.session.phase)


def campaign_wall(cases: int, seed: int, workers: int, scheduler: str | None = None) -> float:
  """Seconds a whole campaign of `cases` cases takes (reference only, per-rewrite), start-up included."""
  with tempfile.TemporaryDirectory() as d:
    cfg = CampaignConfig(seconds=3600, seed=seed, workers=workers, corpus=d, max_cases=cases, prove_changed=False, scheduler=scheduler)
    t = time.perf_counter()
    s = run_campaign(cfg, io.StringIO())
    wall = time.perf_counter() - t
    if s.cases != cases: raise RuntimeError(f"the campaign ran {s.cases} cases, not {cases}")
    return wall


TABLE: list[tuple[str, float]] = []  # (mode, cases/s per core)


def row(name: str, rate: float) -> None:
  TABLE.append((name, rate))


def report(name: str, cases: int, wall: float, phase: dict[str, float]) -> None:
  row(name, cases / wall)
  print(f"{name}: {cases} cases in {wall:.1f}s = {cases / wall:.1f} cases/s on one core")
  for k in PHASES:
    if k in phase: print(f"  {k:9s} {phase[k]:7.2f}s  {1000 * phase[k] / cases:6.2f} ms/case  {100 * phase[k] / wall:5.1f}%")


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--cases", type=int, default=400)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--compilers", default="gcc,tcc")
  ap.add_argument("--no-opencl", action="store_true", help="skip the OpenCL parity run")
  ap.add_argument("--no-workers", action="store_true", help="skip the whole-campaign runs (local workers, Dask)")
  a = ap.parse_args()
  print(f"$ .venv/bin/python bench/fuzz_throughput.py --cases {a.cases} --seed {a.seed} --compilers {a.compilers}"
        + (" --no-opencl" if a.no_opencl else "") + (" --no-workers" if a.no_workers else ""))
  sizes = [node_count(case_for(a.seed, i).root) for i in range(a.cases)]
  print(f"cases: seed {a.seed}, mean {sum(sizes) / len(sizes):.1f} nodes, max {max(sizes)}\n")
  wall, phase = throughput(a.cases, a.seed, ("reference",), None, per_rewrite=False)
  report("reference, spec per pass", a.cases, wall, phase)
  ref_rate = a.cases / wall
  wall, phase = throughput(a.cases, a.seed, ("reference",), None)
  report("reference, spec per rewrite (default)", a.cases, wall, phase)
  rew_rate = a.cases / wall
  for cc in [c for c in a.compilers.split(",") if c and shutil.which(c)]:
    cache = tempfile.mkdtemp(prefix="tinyspec-bench-cc-")
    os.environ["TINYSPEC_CACHE"] = cache  # cold: every object compiled
    try:
      wall, phase = throughput(a.cases, a.seed, ("reference", "cpu"), cc)
      report(f"+ CPU parity ({cc}, 16 cases per compile)", a.cases, wall, phase)
    finally:
      shutil.rmtree(cache, ignore_errors=True)
  if not a.no_opencl:
    from tinyspec.runtime.opencl import available
    ok, why = available()
    if not ok: print(f"with OpenCL parity: skipped ({why})")
    else:
      wall, phase = throughput(a.cases, a.seed, ("reference", "opencl"), None)
      report("+ OpenCL parity (16 cases per program build)", a.cases, wall, phase)
  if not a.no_workers:
    for w in (1, 2):
      row(f"campaign, {w} local worker{'s' if w > 1 else ''}", a.cases / campaign_wall(a.cases, a.seed, w) / w)
    try: import distributed
    except ImportError: print("2 Dask workers: skipped (distributed is not installed: the dask extra)")
    else:
      with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as c:
        row("campaign, 2 Dask workers (LocalCluster)", a.cases / campaign_wall(a.cases, a.seed, 0, c.scheduler_address) / 2)
  print("\nper core, as a ratio to reference only (spec per pass; spec per rewrite, the mode of every row after the first):")
  print(f"  {'mode':48s} {'cases/s':>8s} {'/ per pass':>10s} {'/ per rewrite':>13s}")
  for name, rate in TABLE: print(f"  {name:48s} {rate:8.1f} {rate / ref_rate:10.2f} {rate / rew_rate:13.2f}")
  from fuzz.testbed.seeded_bugs import SEEDED_BUGS, broken_pipeline
  print("\nreducer on the seeded bugs (seed 0, tensor cases):")
  print(f"  {'bug':26s} {'cases':>5s} {'found':>7s} {'reduce':>7s} {'nodes':>11s}  signature")
  for bug in SEEDED_BUGS:
    with tempfile.TemporaryDirectory() as d:
      cfg = CampaignConfig(seconds=60, seed=0, workers=0, corpus=d, passes=broken_pipeline(bug), weights={"kind:kernel": 0.0},
                           stop_when=lambda r, bug=bug: r.signature[1:] == (bug.pass_name, bug.rule))
      t = time.perf_counter()
      s = run_campaign(cfg, io.StringIO())
      wall = time.perf_counter() - t
      hit = next((f for f in s.findings if f.signature[1:] == (bug.pass_name, bug.rule)), None)
      if hit is None:
        print(f"  {bug.name:26s} {s.cases:5d} not found in {wall:.1f}s")
        continue
      red = s.phase.get("reduce", 0.0)
      print(f"  {bug.name:26s} {s.cases:5d} {wall:6.1f}s {red:6.2f}s {hit.found_nodes:4d} -> {hit.nodes:3d}  {'/'.join(hit.signature)}")


if __name__ == "__main__":
  main()

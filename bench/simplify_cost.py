"""Benchmark: what the simplifier of this tree costs against the one of an earlier revision, in one run.

    .venv/bin/python bench/simplify_cost.py [--base main] [--reps 2] [--cases 400]

The base revision is unpacked (git archive) into a temporary directory; each tree then runs, in a process of its own
and alternating with the other --reps times, (1) the reference fuzz campaign on the same case indices (seed 0, the
reference backend, as bench/fuzz_throughput.py's first figure) and (2) graph_rewrite(pm_simplify) of 1,000 div/mod
index expressions (bench/symbolic.py's workload). Times are CPU seconds of the process (getrusage), which a machine
busy with other jobs disturbs less than wall time; the two trees may generate slightly different cases where their
generators differ, and simplify the same expressions to different results where their rules do.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import random, resource, sys, time
tree, cases = sys.argv[1], int(sys.argv[2])
sys.path[:0] = [tree, tree + "/bench"]
import fuzz_throughput as ft
import symbolic as sb
from tinyspec.lower.simplify import pm_simplify
from tinyspec.rewrite import graph_rewrite
cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_SELF))
c0 = cpu(); ft.throughput(cases, 0, ("reference",), None); camp = cpu() - c0
rng = random.Random(0)
exprs = [sb.divmod_expr(rng) for _ in range(1000)]
nodes = sum(sb.node_count(e) for e in exprs)
t = time.process_time()
for e in exprs: graph_rewrite(e, pm_simplify)
dm = time.process_time() - t
print(f"{cases / camp:.2f} {1e6 * dm / nodes:.2f}")
'''


def measure(tree: Path, cases: int) -> tuple[float, float]:
  r = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(cases)], cwd=tree, capture_output=True, text=True, check=True,
                     env={**os.environ, "PYTHONHASHSEED": "0"})
  a, b = r.stdout.split()[-2:]
  return float(a), float(b)


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--base", default="main")
  ap.add_argument("--reps", type=int, default=2)
  ap.add_argument("--cases", type=int, default=400)
  a = ap.parse_args()
  with tempfile.TemporaryDirectory() as d:
    arch = Path(d) / "base.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(arch), a.base], check=True)
    base = Path(d) / "base"
    with tarfile.open(arch) as t: t.extractall(base, filter="data")
    rows: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
    for _ in range(a.reps):
      rows["base"].append(measure(base, a.cases))
      rows["this"].append(measure(ROOT, a.cases))
  print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
  for k, name in (("base", f"base ({a.base})"), ("this", "this tree")):
    camp, dm = zip(*rows[k])
    print(f"{name:>14}: campaign {', '.join(f'{x:.1f}' for x in camp)} cases per CPU second; "
          f"simplify div/mod {', '.join(f'{x:.2f}' for x in dm)} us/node")
  bc, tc = max(x[0] for x in rows["base"]), max(x[0] for x in rows["this"])
  bd, td = min(x[1] for x in rows["base"]), min(x[1] for x in rows["this"])
  print(f"ratios (best of each): campaign {tc / bc:.2f}x the base's cases per CPU second, simplify {td / bd:.2f}x the base's CPU "
        "time per node")


if __name__ == "__main__":
  main()

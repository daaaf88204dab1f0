"""Benchmark: tinyspec's check(root, Stage.TENSOR) against tinygrad 0.14's type_verify(nodes, spec_tensor).

Both sides build the same graph shape: a chain of ~4,000 elementwise and movement ops on a 4x4 tensor
(x = (x + x).permute(1, 0); x = (x * x).reshape(16).reshape(4, 4), repeated). Times are min of --reps, in one run.
tinyspec caches verdicts on its interned nodes, so it has two figures: warm (the same graph checked again: one
lookup) and cold (a freshly built graph each time, so no cached verdict or derived shape helps; this is what the
fuzzer pays for the new nodes of every intermediate graph). tinygrad caches nothing: its one figure is type_verify
over the node list (its toposort is done outside the timing; tinyspec's cold figure includes its own walk).

tinygrad is not a dependency of tinyspec: it runs in its own venv, by default .venv-peer next to this repo's .venv:
    python3 -m venv .venv-peer && .venv-peer/bin/pip install tinygrad==0.14.0
(or set TINYSPEC_PEER_PYTHON to a python that has it). Without it the script prints tinyspec's figures alone.

Run:  .venv/bin/python bench/spec_check.py [--ops 4000] [--reps 5]   (bench/spec_check.txt: --reps 10)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from timing import best

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = Path(os.environ.get("TINYSPEC_PEER_PYTHON", ROOT / ".venv-peer" / "bin" / "python"))
INSTALL = f"python3 -m venv {ROOT / '.venv-peer'} && {ROOT / '.venv-peer' / 'bin' / 'pip'} install tinygrad==0.14.0"


def tinyspec_figures(n_ops: int, reps: int) -> dict:
  sys.path.insert(0, str(ROOT))
  from tinyspec import Ops, Stage, UOp, check, dtypes

  def build(seed: int) -> UOp:
    x = UOp.buffer(dtypes.float32, 16, id=10_000 + seed).reshape((4, 4))
    for _ in range(n_ops // 4):
      x = (x + x).permute((1, 0))
      x = (x * x).reshape((16,)).reshape((4, 4))
    return UOp(Ops.SINK, dtypes.void, (x,))

  root = build(0)
  n = len(root.toposort())
  assert check(root, Stage.TENSOR) == [], "the benchmark graph must be legal"
  warm = best(lambda: check(root, Stage.TENSOR), reps)
  fresh = iter([build(i + 1) for i in range(reps)])  # built ahead: only the check is timed
  cold = best(lambda: check(next(fresh), Stage.TENSOR), reps)
  return {"nodes": n, "warm_us_per_node": warm / n * 1e6, "cold_us_per_node": cold / n * 1e6}


def peer_figures(n_ops: int, reps: int) -> dict:
  """Run inside the peer venv: tinygrad's spec check on the same graph shape."""
  from tinygrad import Tensor
  from tinygrad.uop.spec import spec_tensor, type_verify
  x = Tensor.empty(4, 4)
  for _ in range(n_ops // 4):
    x = (x + x).permute(1, 0)
    x = (x * x).reshape(16).reshape(4, 4)
  sink = x.uop.sink()
  nodes = list(sink.toposort())
  type_verify(nodes, spec_tensor)
  warm = best(lambda: type_verify(nodes, spec_tensor), reps)
  import tinygrad
  return {"nodes": len(nodes), "warm_us_per_node": warm / len(nodes) * 1e6, "version": getattr(tinygrad, "__version__", "0.14")}


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--ops", type=int, default=4000)
  ap.add_argument("--reps", type=int, default=5)
  ap.add_argument("--peer-only", action="store_true", help=argparse.SUPPRESS)
  a = ap.parse_args()
  if a.peer_only:
    print(json.dumps(peer_figures(a.ops, a.reps)))
    return 0
  cmd = " ".join([sys.executable, *sys.argv])
  ours = tinyspec_figures(a.ops, a.reps)
  print(f"command: {cmd}")
  print(f"tinyspec check(root, Stage.TENSOR): {ours['nodes']} nodes, warm {ours['warm_us_per_node']:.4f} us/node, "
        f"cold {ours['cold_us_per_node']:.3f} us/node (min of {a.reps})")
  if not PEER_PYTHON.exists():
    print(f"tinygrad peer not found at {PEER_PYTHON}; install it with:\n  {INSTALL}")
    return 0
  r = subprocess.run([str(PEER_PYTHON), __file__, "--peer-only", "--ops", str(a.ops), "--reps", str(a.reps)],
                     capture_output=True, text=True, timeout=600)
  if r.returncode != 0:
    print(f"tinygrad peer failed:\n{r.stderr.strip()[-2000:]}\ninstall it with:\n  {INSTALL}")
    return 0
  peer = json.loads(r.stdout.strip().splitlines()[-1])
  tg = peer["warm_us_per_node"]
  print(f"tinygrad {peer['version']} type_verify(nodes, spec_tensor): {peer['nodes']} nodes, {tg:.3f} us/node (min of {a.reps})")
  print(f"tinyspec cold / tinygrad: {ours['cold_us_per_node'] / tg:.2f}x the time per node (target: at most 0.67x, 1.5x faster)")
  print(f"tinyspec warm / tinygrad: {ours['warm_us_per_node'] / tg:.5f}x the time per node ({tg / ours['warm_us_per_node']:.0f}x faster)")
  return 0


if __name__ == "__main__":
  sys.exit(main())

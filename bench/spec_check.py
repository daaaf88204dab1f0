"""Benchmark: tinyspec's check(root, Stage.TENSOR) against tinygrad 0.14's type_verify(nodes, spec_tensor).

Both sides build the same graph shape: a chain of ~4,000 elementwise and movement ops on a 4x4 tensor
(x = (x + x).permute(1, 0); x = (x * x).reshape(16).reshape(4, 4), repeated). Times are min of --reps, in one run.
tinyspec caches verdicts on its interned nodes, so it has two figures: warm (the same graph checked again: one
lookup) and cold (a freshly built graph each time, so no cached verdict or derived shape helps; this is what the
fuzzer pays for the new nodes of every intermediate graph). tinygrad caches nothing: its one figure is type_verify
over the node list (its toposort is done outside the timing; tinyspec's cold figure includes its own walk).

The two sides are timed in turns, one rep of tinyspec's cold check, then one of tinygrad's in its own process (which
waits, its graph built, for the word to go), and so on: on a shared machine the speed drifts by more than the
difference measured, and turns put both sides under the same drift. Both processes are bound to one CPU (--cpu, the last
one this process may use by default): two cores of a shared machine drift apart, one core drifts for both. The ratio is of
the two minimums.

tinygrad is not a dependency of tinyspec: it runs in its own venv, by default .venv-peer next to this repo's .venv:
    python3 -m venv .venv-peer && .venv-peer/bin/pip install tinygrad==0.14.0
(or set TINYSPEC_PEER_PYTHON to a python that has it). Without it the script prints tinyspec's figures alone.

Run:  .venv/bin/python bench/spec_check.py [--ops 4000] [--reps 30] [--cpu N]   (bench/spec_check.txt: --reps 30)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable
from timing import best

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = Path(os.environ.get("TINYSPEC_PEER_PYTHON", ROOT / ".venv-peer" / "bin" / "python"))
INSTALL = f"python3 -m venv {ROOT / '.venv-peer'} && {ROOT / '.venv-peer' / 'bin' / 'pip'} install tinygrad==0.14.0"


def tinyspec_graphs(n_ops: int, count: int) -> tuple[list, Callable[[], float], int]:
  """count freshly built graphs (only the check is timed), a timer of the warm check, and the node count."""
  sys.path.insert(0, str(ROOT))
  from tinyspec import Ops, Stage, UOp, check, dtypes

  def build(seed: int) -> UOp:
    x = UOp.buffer(dtypes.float32, 16, id=10_000 + seed).reshape((4, 4))
    for _ in range(n_ops // 4):
      x = (x + x).permute((1, 0))
      x = (x * x).reshape((16,)).reshape((4, 4))
    return UOp(Ops.SINK, dtypes.void, (x,))

  root = build(0)
  assert check(root, Stage.TENSOR) == [], "the benchmark graph must be legal"
  return [build(i + 1) for i in range(count)], lambda: best(lambda: check(root, Stage.TENSOR), 1), len(root.toposort())


def cold_once(root) -> float:
  from tinyspec import Stage, check
  return best(lambda: check(root, Stage.TENSOR), 1)


def peer_serve(n_ops: int) -> None:
  """Inside the peer venv: build tinygrad's graph, then time one type_verify per line read, each time printed."""
  from tinygrad import Tensor
  from tinygrad.uop.spec import spec_tensor, type_verify
  x = Tensor.empty(4, 4)
  for _ in range(n_ops // 4):
    x = (x + x).permute(1, 0)
    x = (x * x).reshape(16).reshape(4, 4)
  nodes = list(x.uop.sink().toposort())
  type_verify(nodes, spec_tensor)
  import tinygrad
  print(json.dumps({"nodes": len(nodes), "version": getattr(tinygrad, "__version__", "0.14")}), flush=True)
  for _ in sys.stdin: print(best(lambda: type_verify(nodes, spec_tensor), 1), flush=True)


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--ops", type=int, default=4000)
  ap.add_argument("--reps", type=int, default=30)
  ap.add_argument("--cpu", type=int, default=None, help="the CPU both sides run on (default: the last one allowed)")
  ap.add_argument("--peer-serve", action="store_true", help=argparse.SUPPRESS)
  a = ap.parse_args()
  if a.peer_serve:
    peer_serve(a.ops)
    return 0
  print(f"command: {' '.join([sys.executable, *sys.argv])}")
  if hasattr(os, "sched_setaffinity"):  # set before the peer starts, which inherits it
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed) if a.cpu is None else a.cpu
    if cpu not in allowed: ap.error(f"--cpu {cpu} is not one this process may run on ({', '.join(map(str, sorted(allowed)))})")
    os.sched_setaffinity(0, {cpu})
    print(f"both sides bound to CPU {cpu}")
  graphs, warm_once, n = tinyspec_graphs(a.ops, a.reps)
  peer = None
  if not PEER_PYTHON.exists(): print(f"tinygrad peer not found at {PEER_PYTHON}; install it with:\n  {INSTALL}")
  else:
    peer = subprocess.Popen([str(PEER_PYTHON), __file__, "--peer-serve", "--ops", str(a.ops)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = peer.stdout.readline()
    if not line:
      print(f"tinygrad peer failed:\n{peer.stderr.read().strip()[-2000:]}\ninstall it with:\n  {INSTALL}")
      peer = None
  info = json.loads(line) if peer else {}
  cold, theirs = [], []
  for g in graphs:  # in turns: one of ours, one of theirs
    cold.append(cold_once(g))
    if peer:
      peer.stdin.write("go\n")
      peer.stdin.flush()
      theirs.append(float(peer.stdout.readline()))
  warm = min(warm_once() for _ in range(a.reps))
  if peer:
    peer.stdin.close()
    peer.wait(timeout=60)
  ours_cold, ours_warm = min(cold) / n * 1e6, warm / n * 1e6
  print(f"tinyspec check(root, Stage.TENSOR): {n} nodes, warm {ours_warm:.4f} us/node, cold {ours_cold:.3f} us/node (min of {a.reps})")
  if not peer: return 0
  tg = min(theirs) / info["nodes"] * 1e6
  print(f"tinygrad {info['version']} type_verify(nodes, spec_tensor): {info['nodes']} nodes, {tg:.3f} us/node (min of {a.reps}, "
        "timed in turns with tinyspec's cold check)")
  print(f"tinyspec cold / tinygrad: {ours_cold / tg:.2f}x the time per node (target: at most 0.67x, 1.5x faster)")
  print(f"tinyspec warm / tinygrad: {ours_warm / tg:.5f}x the time per node ({tg / ours_warm:.0f}x faster)")
  return 0


if __name__ == "__main__":
  sys.exit(main())

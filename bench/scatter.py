"""Benchmark: an embedding's backward (the table's gradient, a scatter-add of B rows of D into V rows) on the CPU.

Three figures, in one run, each the best of --reps runs of the compiled kernels alone (lowering and compiling are done
before the timing):
  atomic   tinyspec's lowering as it is: the scatter pass makes an init kernel and a kernel of B * D ATOMIC adds (gcc,
           C11 atomics, the scatter loop on OpenMP threads when it has the work for it)
  dense    the same graph lowered with scatter="dense": the one-hot sum over V * B * D products, as the frontend writes it
  tinygrad tinygrad 0.14's nn.Embedding backward on its CPU device, its kernels replayed by TinyJit, twice: by default
           (the one-hot sum, lowered its own way) and with USE_ATOMICS=1 (its custom kernel: a zero kernel, then a
           CUSTOM op whose C text is __atomic_fetch_add, the backward given as the value call's grad_fxn)
The ratios are atomic's time against the others. Every result is checked against numpy's np.add.at first. Each side's
figure is one whole run of its kernels as its runtime launches them, with what the runtime adds per run: tinyspec's
graph evaluator allocating the outputs and calling each kernel through ctypes, tinygrad's TinyJit replay and the copy
of the gradient to numpy.

tinygrad is not a dependency of tinyspec: it runs in its own venv, by default .venv-peer next to this repo's .venv:
    python3 -m venv .venv-peer && .venv-peer/bin/pip install tinygrad==0.14.0
(or set TINYSPEC_PEER_PYTHON to a python that has it). Without it the script prints tinyspec's figures alone.

Run:  .venv/bin/python bench/scatter.py [--vocab 4096] [--dim 32] [--positions 1024] [--reps 20]   (bench/scatter.txt)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from timing import best

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = Path(os.environ.get("TINYSPEC_PEER_PYTHON", ROOT / ".venv-peer" / "bin" / "python"))


def data(V: int, D: int, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  rng = np.random.default_rng(0)
  W = rng.standard_normal((V, D)).astype(np.float32)
  idx = rng.integers(0, V, B).astype(np.int32)
  G = rng.standard_normal((B, D)).astype(np.float32)
  want = np.zeros((V, D), np.float64)
  np.add.at(want, idx, G.astype(np.float64))
  return W, idx, G, want


def tinyspec_time(V: int, D: int, B: int, reps: int, scatter: str) -> tuple[float, int]:
  """(best seconds of the compiled kernels, kernel count) of the table's gradient lowered with this scatter option."""
  sys.path.insert(0, str(ROOT))
  from tinyspec.frontend import Tensor, inputs_of
  from tinyspec.runtime.cpu import build, make_runner, prepare
  from tinyspec.semantics import evaluate
  from tinyspec.uop import kernel_calls
  W, idx, G, want = data(V, D, B)
  w = Tensor(W)
  (Tensor(idx).embedding(w) * Tensor(G)).sum().backward(w)
  root = Tensor.sink(w.grad)
  lowered = prepare(root, scatter=scatter)
  runner = make_runner(build(lowered, "gcc"), "gcc")
  inputs = inputs_of(root)
  def once(): return evaluate(lowered, inputs, kernel_runner=runner)
  got = np.asarray(once()[0], np.float64).reshape(V, D)
  err = np.abs(got - want).max()
  assert err <= 1e-4 * (1 + np.abs(want).max()), f"tinyspec {scatter}: max error {err}"
  return best(once, reps), len(kernel_calls(lowered))


PEER = r"""
import json, sys, time
import numpy as np
from tinygrad import Tensor, TinyJit, nn
V, D, B, reps = (int(x) for x in sys.argv[1:5])
rng = np.random.default_rng(0)
W = rng.standard_normal((V, D)).astype(np.float32)
idx = rng.integers(0, V, B).astype(np.int32)
G = rng.standard_normal((B, D)).astype(np.float32)
emb = nn.Embedding(V, D)
emb.weight = Tensor(W).realize()
@TinyJit
def step(i, g):
  return (emb(i) * g).sum().gradient(emb.weight)[0].realize()  # the table's gradient alone
ti, tg = Tensor(idx).realize(), Tensor(G).realize()
for _ in range(3): out = step(ti, tg).numpy()  # captured on the second call, replayed from the third
ts = []
for _ in range(reps):
  t = time.perf_counter(); step(ti, tg).numpy(); ts.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(ts), "grad": out.astype(float).ravel()[:64].tolist()}))
"""


def tinygrad_time(V: int, D: int, B: int, reps: int, atomics: bool) -> float | None:
  if not PEER_PYTHON.exists(): return None
  env = {**os.environ, "DEV": "CPU", "USE_ATOMICS": "1" if atomics else "0"}
  r = subprocess.run([str(PEER_PYTHON), "-c", PEER, str(V), str(D), str(B), str(reps)], capture_output=True, text=True, env=env, timeout=1800)
  if r.returncode != 0: raise RuntimeError(f"tinygrad run failed:\n{r.stderr[-2000:]}")
  res = json.loads(r.stdout.strip().splitlines()[-1])
  want = data(V, D, B)[3].ravel()[:64]
  err = np.abs(np.array(res["grad"]) - want).max()
  assert err <= 1e-4 * (1 + np.abs(want).max()), f"tinygrad: max error {err}"
  return res["seconds"]


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--vocab", type=int, default=4096)
  ap.add_argument("--dim", type=int, default=32)
  ap.add_argument("--positions", type=int, default=1024)
  ap.add_argument("--reps", type=int, default=20)
  a = ap.parse_args()
  V, D, B = a.vocab, a.dim, a.positions
  print(f"command: .venv/bin/python bench/scatter.py --vocab {V} --dim {D} --positions {B} --reps {a.reps}")
  print(f"embedding backward: table ({V}, {D}), {B} positions; os.cpu_count() = {os.cpu_count()}, "
        f"OMP_NUM_THREADS = {os.environ.get('OMP_NUM_THREADS', 'unset')}")
  t_atomic, k_atomic = tinyspec_time(V, D, B, a.reps, "atomic")
  t_dense, k_dense = tinyspec_time(V, D, B, a.reps, "dense")
  print(f"{'tinyspec atomic':<28} {t_atomic * 1e3:9.3f} ms  ({k_atomic} kernels)")
  print(f"{'tinyspec dense':<28} {t_dense * 1e3:9.3f} ms  ({k_dense} kernels)   atomic / dense = {t_atomic / t_dense:.4f}")
  for atomics in (False, True):
    t_peer = tinygrad_time(V, D, B, a.reps, atomics)
    name = f"tinygrad 0.14 USE_ATOMICS={int(atomics)}"
    if t_peer is None: print(f"{name}: not measured ({PEER_PYTHON} does not exist)")
    else: print(f"{name:<28} {t_peer * 1e3:9.3f} ms  (TinyJit replay, CPU)   atomic / tinygrad = {t_atomic / t_peer:.4f}")


if __name__ == "__main__":
  main()

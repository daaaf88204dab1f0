"""Benchmark: a data-parallel training step of a two-layer MLP (examples/data_parallel_mlp.py's `step`: forward, MSE
loss, the four parameters' gradients, an SGD update) on one device and sharded over two, on the CPU.

Four figures, in one run, each the best of --reps runs of the compiled kernels alone (lowering and compiling are done
before the timing):
  tinyspec one device   the step on "CPU" (gcc; the kernels' outer loops on OpenMP threads when they have the work)
  tinyspec sharded      the same step over ("CPU:0", "CPU:1"): the batch (x, y) sharded along its rows, the weights
                        replicated; the multi pass runs every op once per device, all-reduces the gradients and the
                        loss (each device adds the other's partial sums, copied to it) and updates both replicas
  tinygrad one device   tinygrad 0.14 the same step on its CPU device, the gradient from loss.gradient(*params)
  tinygrad sharded      the same over ("CPU:0", "CPU:1") with tinygrad's Tensor.shard (batch axis 0, weights replicated)
tinygrad's kernels are replayed by TinyJit. Both "devices" are this one machine, its memory and its cores: the
sharded figures measure what sharding costs (the extra copies and kernels, the all-reduce), not a speedup from a
second device. They can still come out faster than one device: a kernel over half the batch can take less than half
the time of the one over the whole (tinyspec's weight-gradient kernel, a reduction over the rows read column by
column, does, with one thread as with two). The inputs are put on their devices before the timing on both sides
(tinygrad's shard is realized before the jit; tinyspec's inputs are a MULTI of per-device buffers), so the copies
counted are the all-reduce's.

Every result (the loss and the updated parameters: both replicas on tinyspec's side, the first on tinygrad's) is
checked against the step in numpy (float64) first. Each side's figure is one whole run of its kernels as its runtime
launches them, with what the runtime adds per run: tinyspec's graph evaluator allocating the outputs and calling each
kernel through ctypes, tinygrad's TinyJit replay and the copy of the outputs to numpy. The kernel and copy counts are
per step: tinyspec's kernel CALLs and COPY calls of the lowered graph, tinygrad's programs and copies in the jit's
captured calls, a program over two devices counted once per device.

tinygrad is not a dependency of tinyspec: it runs in its own venv, by default .venv-peer next to this repo's .venv:
    python3 -m venv .venv-peer && .venv-peer/bin/pip install tinygrad==0.14.0
(or set TINYSPEC_PEER_PYTHON to a python that has it). Without it the script prints tinyspec's figures alone.

Run:  .venv/bin/python bench/multi.py [--batch 2048] [--inputs 64] [--hidden 256] [--outputs 16] [--reps 20]   (bench/multi.txt)
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
DEVICES = ("CPU:0", "CPU:1")
LR = 0.1  # examples/data_parallel_mlp.py's (checked in tinyspec_time)


def data(B: int, I: int, H: int, O: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
  """x (B, I), y (B, O) and the parameters w1 (I, H), b1 (H,), w2 (H, O), b2 (O,), float32 (the same recipe in PEER)."""
  rng = np.random.default_rng(0)
  X, Y = rng.standard_normal((B, I)).astype(np.float32), rng.standard_normal((B, O)).astype(np.float32)
  P = [(rng.standard_normal(s) / np.sqrt(s[0] if len(s) == 2 else 1)).astype(np.float32) for s in [(I, H), (H,), (H, O), (O,)]]
  return X, Y, P


def expected(X: np.ndarray, Y: np.ndarray, P: list[np.ndarray]) -> list[np.ndarray]:
  """[loss, w1, b1, w2, b2 updated]: the example's numpy step."""
  from examples.data_parallel_mlp import numpy_step
  return numpy_step(X, Y, P)


def check(name: str, got: list[np.ndarray], want: list[np.ndarray]) -> None:
  assert len(got) == len(want), f"{name}: {len(got)} outputs, want {len(want)}"
  for k, (g, w) in enumerate(zip(got, want)):
    g = np.asarray(g, np.float64).reshape(w.shape)
    err = np.abs(g - w).max()
    assert err <= 1e-4 * (1 + np.abs(w).max()), f"{name}: output {k} max error {err}"


def tinyspec_time(B: int, I: int, H: int, O: int, reps: int, sharded: bool) -> tuple[float, int, int]:
  """(best seconds of the compiled kernels, kernel CALLs, COPY calls) of one step, on one device or sharded."""
  sys.path.insert(0, str(ROOT))
  import examples.data_parallel_mlp as example
  from tinyspec.frontend import Tensor, inputs_of
  from tinyspec.frontend.devices import shard_sizes
  from tinyspec.runtime.cpu import build, make_runner, prepare
  from tinyspec.semantics import evaluate
  from tinyspec.uop import Ops, UOp, body_kind, kernel_calls
  assert example.LR == LR, f"examples/data_parallel_mlp.py's LR is {example.LR}, this script's {LR}"
  X, Y, P = data(B, I, H, O)
  want = expected(X, Y, P)
  if sharded:
    def split(a: np.ndarray) -> Tensor:  # a on the devices already, block i on device i (Tensor.shard's split)
      bounds = np.cumsum([0, *shard_sizes(len(a), len(DEVICES))])
      return Tensor(UOp.multi([Tensor(a[lo:hi], device=d).uop for lo, hi, d in zip(bounds, bounds[1:], DEVICES)], 0))
    def replicate(a: np.ndarray) -> Tensor: return Tensor(UOp.multi([Tensor(a, device=d).uop for d in DEVICES], None))
    loss, new = example.step(split(X), split(Y), [replicate(p) for p in P])
    root = Tensor.sink(loss, *(p.to(d) for d in DEVICES for p in new))  # every replica's update, as the example's
    want = want + want[1:]
  else:
    loss, new = example.step(Tensor(X), Tensor(Y), [Tensor(p) for p in P])
    root = Tensor.sink(loss, *new)
  lowered = prepare(root)
  runner = make_runner(build(lowered, "gcc"), "gcc")
  inputs = inputs_of(root)
  def once(): return evaluate(lowered, inputs, kernel_runner=runner)
  check(f"tinyspec {'sharded' if sharded else 'one device'}", once(), want)
  copies = sum(1 for u in lowered.toposort() if u.op is Ops.CALL and body_kind(u.src[0]) == "copy")
  return best(once, reps), len(kernel_calls(lowered)), copies


PEER = r"""
import json, sys, time
import numpy as np
from tinygrad import Tensor, TinyJit
from tinygrad.uop.ops import Ops
B, I, H, O, reps, sharded = (int(x) for x in sys.argv[1:7])
LR, DEVICES = float(sys.argv[7]), ("CPU:0", "CPU:1")
rng = np.random.default_rng(0)
X, Y = rng.standard_normal((B, I)).astype(np.float32), rng.standard_normal((B, O)).astype(np.float32)
P = [(rng.standard_normal(s) / np.sqrt(s[0] if len(s) == 2 else 1)).astype(np.float32) for s in [(I, H), (H,), (H, O), (O,)]]
x, y, params = Tensor(X), Tensor(Y), [Tensor(p) for p in P]
if sharded: x, y, params = x.shard(DEVICES, axis=0), y.shard(DEVICES, axis=0), [p.shard(DEVICES) for p in params]
Tensor.realize(x, y, *params)
@TinyJit
def step(x, y, w1, b1, w2, b2):
  ps = [w1, b1, w2, b2]
  loss = ((((x @ w1 + b1).relu() @ w2 + b2) - y) ** 2).mean()
  outs = [loss, *(p - LR * g for p, g in zip(ps, loss.gradient(*ps)))]
  Tensor.realize(*outs)
  return outs
def once(): return [t.numpy() for t in step(x, y, *params)]
for _ in range(3): out = once()  # captured on the second call, replayed from the third
kernels = copies = None
try:  # the jit's captured calls (graph batches opened): a program over n devices is n launches
  kernels = copies = 0
  def count(linear):
    global kernels, copies
    for call in linear.src:
      body = call.src[0]
      if body.op is Ops.CUSTOM_FUNCTION and body.arg == "graph": count(body.src[0])
      elif body.op is Ops.PROGRAM:
        dev = call.src[1].device
        kernels += len(dev) if isinstance(dev, tuple) else 1
      elif body.op is Ops.COPY: copies += 1
  count(step.captured._linear)
except Exception: kernels = copies = None
ts = []
for _ in range(reps):
  t = time.perf_counter(); once(); ts.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(ts), "out": [o.astype(float).ravel().tolist() for o in out], "kernels": kernels, "copies": copies}))
"""


def tinygrad_time(B: int, I: int, H: int, O: int, reps: int, sharded: bool) -> tuple[float, int | None, int | None] | None:
  if not PEER_PYTHON.exists(): return None
  env = {**os.environ, "DEV": "CPU"}
  argv = [str(PEER_PYTHON), "-c", PEER, *(str(v) for v in (B, I, H, O, reps, int(sharded), LR))]
  r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
  if r.returncode != 0: raise RuntimeError(f"tinygrad run failed:\n{r.stderr[-2000:]}")
  res = json.loads(r.stdout.strip().splitlines()[-1])
  check(f"tinygrad {'sharded' if sharded else 'one device'}", [np.array(o) for o in res["out"]], expected(*data(B, I, H, O)))
  return res["seconds"], res["kernels"], res["copies"]


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--batch", type=int, default=2048)
  ap.add_argument("--inputs", type=int, default=64)
  ap.add_argument("--hidden", type=int, default=256)
  ap.add_argument("--outputs", type=int, default=16)
  ap.add_argument("--reps", type=int, default=20)
  a = ap.parse_args()
  B, I, H, O = a.batch, a.inputs, a.hidden, a.outputs
  print(f"command: .venv/bin/python bench/multi.py --batch {B} --inputs {I} --hidden {H} --outputs {O} --reps {a.reps}")
  print(f"MLP training step: x ({B}, {I}), hidden {H}, y ({B}, {O}), MSE loss, SGD lr {LR}; sharded over {DEVICES} (one machine); "
        f"os.cpu_count() = {os.cpu_count()}, OMP_NUM_THREADS = {os.environ.get('OMP_NUM_THREADS', 'unset')}")
  times: dict[str, list[float]] = {"tinyspec": [], "tinygrad 0.14": []}
  for sharded in (False, True):
    where = "sharded" if sharded else "one device"
    t, k, c = tinyspec_time(B, I, H, O, a.reps, sharded)
    times["tinyspec"].append(t)
    print(f"{'tinyspec ' + where:<26} {t * 1e3:9.3f} ms  ({k} kernels, {c} copies)")
    peer = tinygrad_time(B, I, H, O, a.reps, sharded)
    name = f"tinygrad 0.14 {where}"
    if peer is None:
      print(f"{name}: not measured ({PEER_PYTHON} does not exist)")
      continue
    t_peer, k_peer, c_peer = peer
    times["tinygrad 0.14"].append(t_peer)
    counts = "kernel count not available" if k_peer is None else f"{k_peer} kernels, {c_peer} copies"
    print(f"{name:<26} {t_peer * 1e3:9.3f} ms  ({counts}; TinyJit replay, CPU)   tinyspec / tinygrad = {t / t_peer:.4f}")
  for name, (one, *two) in times.items():
    if two: print(f"{name}: sharded / one device = {two[0] / one:.4f}")


if __name__ == "__main__":
  main()

"""Benchmark: a convolution on OpenCL (PoCL here) with its inputs read as images against the same graph read flat,
beside tinygrad 0.14 on the same OpenCL device, flat and with IMAGE=2.

One graph, a (1, 16, 64, 64) input convolved with (16, 16, 3, 3) weights, padding 1. tinyspec lowers it twice for
OpenCL: flat, and with LowerOptions.images (the input and the weights become read_only image2d_t, one read_imagef per
element read). Each tinyspec figure is the best of --reps runs of the lowered graph through one OpenCLRunner (compiled
before the timing), the copies in and out included. tinygrad's are the best of --reps TinyJit replays with the copy of
the result to numpy, DEV=CL, IMAGE=0 and IMAGE=2 (its image path packs four channels into a pixel). Every result is
checked against tinyspec's flat one first.

tinygrad runs in its own venv, by default .venv-peer next to this repo's .venv (or TINYSPEC_PEER_PYTHON); without it
the script prints tinyspec's figures alone.

Run:  .venv/bin/python bench/images.py [--reps 6]   (bench/images.txt)
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
from tinyspec.frontend import Tensor, inputs_of
from tinyspec.runtime import opencl as ocl
from tinyspec.runtime.cpu import prepare
from tinyspec.semantics import evaluate

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = Path(os.environ.get("TINYSPEC_PEER_PYTHON", ROOT / ".venv-peer" / "bin" / "python"))

PEER = r"""
import json, sys, time
import numpy as np
from tinygrad import Tensor, TinyJit
reps = int(sys.argv[1])
g = np.random.default_rng(0)
x, w = g.standard_normal((1, 16, 64, 64)).astype(np.float32), g.standard_normal((16, 16, 3, 3)).astype(np.float32)
X, W = Tensor(x).realize(), Tensor(w).realize()
@TinyJit
def f(a, b): return a.conv2d(b, padding=1).realize()
for _ in range(3): out = f(X, W).numpy()
ts = []
for _ in range(reps):
  t = time.perf_counter(); out = f(X, W).numpy(); ts.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(ts), "out": out.ravel()[:256].astype(float).tolist()}))
"""


def data() -> tuple[np.ndarray, np.ndarray]:
  g = np.random.default_rng(0)
  return g.standard_normal((1, 16, 64, 64)).astype(np.float32), g.standard_normal((16, 16, 3, 3)).astype(np.float32)


def peer(image: int, reps: int) -> dict | None:
  if not PEER_PYTHON.exists(): return None
  env = {**os.environ, "DEV": "CL", "IMAGE": str(image)}
  r = subprocess.run([str(PEER_PYTHON), "-c", PEER, str(reps)], capture_output=True, text=True, env=env, timeout=1800)
  if r.returncode != 0: raise SystemExit(f"tinygrad IMAGE={image} failed:\n{r.stderr[-2000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--reps", type=int, default=6)
  args = ap.parse_args()
  x, w = data()
  root = Tensor.sink(Tensor(x).conv2d(Tensor(w), padding=1))
  inputs = inputs_of(root)
  times, outs = {}, {}
  for name, images in (("tinyspec flat", False), ("tinyspec images", True)):
    lowered = prepare(root, backend="opencl", images=images)
    runner = ocl.OpenCLRunner.for_graph(lowered)
    try:
      outs[name] = np.asarray(evaluate(lowered, inputs, kernel_runner=runner)[0]).ravel()
      times[name] = best(lambda lowered=lowered, runner=runner: evaluate(lowered, inputs, kernel_runner=runner), args.reps)
    finally: runner.close()
  flat = outs["tinyspec flat"]
  np.testing.assert_allclose(outs["tinyspec images"], flat, rtol=1e-5, atol=1e-5)
  for image in (0, 2):
    if (res := peer(image, args.reps)) is None: break
    np.testing.assert_allclose(np.array(res["out"]), flat[:256], rtol=1e-4, atol=1e-4)
    times[f"tinygrad IMAGE={image}"] = res["seconds"]
  print(f"command: {sys.executable} {' '.join(sys.argv)}")
  print(f"conv (1, 16, 64, 64) * (16, 16, 3, 3), padding 1, on OpenCL (PoCL), best of {args.reps} runs each")
  for name, t in times.items(): print(f"  {name:18s} {t * 1e3:9.2f} ms")
  print(f"tinyspec images / tinyspec flat: {times['tinyspec images'] / times['tinyspec flat']:.1f}x the time")
  if "tinygrad IMAGE=2" in times:
    print(f"tinyspec images / tinygrad IMAGE=2: {times['tinyspec images'] / times['tinygrad IMAGE=2']:.1f}x the time; "
          f"tinyspec flat / tinygrad IMAGE=0: {times['tinyspec flat'] / times['tinygrad IMAGE=0']:.1f}x")


if __name__ == "__main__":
  main()

"""Benchmark of the reference lowering and the CPU backend, each figure beside numpy's time for the same computation.

    .venv/bin/python bench/lower.py [--repeat N] [--compiler gcc|clang|tcc]

For a 256x256 matmul and a two-layer MLP (64x256 @ 256x256, relu, @ 256x16): the time of evaluate on the tensor
graph, of evaluate on the kernel graph (after rangeify) and on the program graph (after linearize), of the whole
lowering, of compiling the C (cold: empty cache; disk: a fresh process's first load; memory: loaded already) and
of running the compiled kernels through the kernel-graph walk. Where OpenCL is available, the same for the OpenCL
backend on PoCL: building the kernels, each with one launch since PoCL compiles at the first launch (cold: code
never built before; PoCL cache: its on-disk kernel cache; memory: built in this process already) and running them
(buffers copied in once and out once per run). Each time is the best of --repeat runs; the ratio is time / numpy time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tinyspec.frontend import Tensor, inputs_of  # noqa: E402
from tinyspec.lower.pipeline import lower  # noqa: E402
from tinyspec.runtime import cpu  # noqa: E402
from tinyspec.semantics import evaluate  # noqa: E402
from timing import best  # noqa: E402


def matmul_case(rng: np.random.Generator):
  a, b = rng.standard_normal((256, 256), dtype=np.float32), rng.standard_normal((256, 256), dtype=np.float32)
  root = Tensor.sink(Tensor(a) @ Tensor(b))
  return "matmul 256x256", root, lambda: a @ b, [a @ b]


def mlp_case(rng: np.random.Generator):
  f = lambda *shape: rng.standard_normal(shape, dtype=np.float32)
  x, w1, b1, w2, b2 = f(64, 256), f(256, 256), f(256), f(256, 16), f(16)
  root = Tensor.sink((Tensor(x) @ Tensor(w1) + Tensor(b1)).relu() @ Tensor(w2) + Tensor(b2))
  fn = lambda: np.maximum(x @ w1 + b1, 0) @ w2 + b2
  return "mlp 64x256x256x16", root, fn, [fn()]


def disk_hit(g, compiler: str, repeat: int) -> float:
  """A disk-cache hit as a fresh process sees it: hash the source, find the object, dlopen it (a process that loaded
  it already would only bump a reference count)."""
  cpu.build(g, compiler)
  source = "\n".join(p.src[2].arg.text for p in cpu.c_programs(g))
  code = ("import sys, time\nfrom tinyspec.runtime import cpu\nsrc = sys.stdin.read()\nt = time.perf_counter()\n"
          f"cpu.load_source(src, {compiler!r})\nprint(time.perf_counter() - t, cpu.STATS.disk_hits, cpu.STATS.compiled)")
  ts = []
  for _ in range(repeat):
    out = subprocess.run([sys.executable, "-c", code], input=source, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    assert out[1:] == ["1", "0"], f"expected a disk-cache hit, got disk_hits={out[1]} compiled={out[2]}"
    ts.append(float(out[0]))
  return min(ts)


def run_case(name: str, root, np_fn, expected, repeat: int, compiler: str) -> list[tuple[str, float, float]]:
  inputs = inputs_of(root)
  t_np = best(np_fn, max(repeat, 20))
  rows = [("numpy", t_np)]
  stages = lower(root, backend="c")
  rows.append(("evaluate tensor graph", best(lambda: evaluate(root, inputs), repeat)))
  rows.append(("evaluate kernel graph", best(lambda: evaluate(stages["rangeify"], inputs), repeat)))
  rows.append(("evaluate program graph", best(lambda: evaluate(stages["linearize"], inputs), repeat)))
  rows.append(("lower (all passes + spec)", best(lambda: lower(root, backend="c"), repeat)))
  g = stages["render"]
  cold, cache = [], os.environ["TINYSPEC_CACHE"]
  for _ in range(repeat):
    with tempfile.TemporaryDirectory() as d:
      os.environ["TINYSPEC_CACHE"] = d
      cpu.clear_memory_cache()
      t = time.perf_counter()
      cpu.build(g, compiler)
      cold.append(time.perf_counter() - t)
  os.environ["TINYSPEC_CACHE"] = cache
  cpu.clear_memory_cache()
  rows.append((f"compile cold ({compiler})", min(cold)))
  cpu.build(g, compiler)
  rows.append(("compile, disk cache", disk_hit(g, compiler, repeat)))
  rows.append(("compile, memory cache", best(lambda: cpu.build(g, compiler), repeat)))
  out = cpu.run(g, inputs, compiler=compiler)
  np.testing.assert_allclose(out[0].reshape(expected[0].shape), expected[0], rtol=1e-3, atol=1e-3)
  rows.append(("cpu run (compiled)", best(lambda: cpu.run(g, inputs, compiler=compiler), repeat)))
  rows += opencl_rows(root, inputs, expected, repeat)
  return [(r, t, t / t_np) for r, t in rows]


def opencl_rows(root, inputs, expected, repeat: int) -> list[tuple[str, float]]:
  """OpenCL build (cold, PoCL disk cache, memory cache) and run times; none where OpenCL is unavailable."""
  from tinyspec.lower.kernel_map import kernel_calls
  from tinyspec.runtime import opencl
  ok, why = opencl.available()
  if not ok:
    print(f"  (opencl skipped: {why})")
    return []
  g = lower(root, backend="opencl")["render"]
  calls = kernel_calls(g)
  runner = opencl.OpenCLRunner()
  scratch = {c: [runner._buffer(np.zeros(a.size, a.dtype.np), opencl.kernel_device(c)) for a in c.src[1:]] for c in calls}
  def build_and_launch(salt: str = "") -> None:
    # PoCL compiles a kernel's work-group function at its first launch, so a build is timed with one launch
    for c in calls:
      text, name, gsize = opencl.kernel_of(c)
      device = opencl.kernel_device(c)
      opencl.build(text + salt, name, device)(opencl.context_of(device).queue, gsize, None, *scratch[c])
    for ctx in runner.contexts_used.values(): ctx.queue.finish()
  n = len({opencl.kernel_of(c)[0] for c in calls})
  rows = [(f"opencl lower ({n} kernels)", best(lambda: lower(root, backend="opencl"), repeat))]
  cold = []
  for i in range(repeat):
    opencl.clear_cache()
    salt = f"\n__kernel void ts_salt_{time.time_ns()}_{i}(void) {{}}\n"  # code no cache has seen (comments are preprocessed away)
    t = time.perf_counter()
    build_and_launch(salt)
    cold.append(time.perf_counter() - t)
  rows.append(("opencl build cold", min(cold)))
  build_and_launch()
  def disk() -> None:
    opencl.clear_cache()
    build_and_launch()
  rows.append(("opencl build, PoCL cache", best(disk, repeat)))
  rows.append(("opencl build, memory cache", best(build_and_launch, repeat)))
  out = opencl.run(g, inputs)
  np.testing.assert_allclose(out[0].reshape(expected[0].shape), expected[0], rtol=1e-3, atol=1e-3)
  rows.append(("opencl run (built)", best(lambda: opencl.run(g, inputs), repeat)))
  return rows


def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--repeat", type=int, default=5)
  p.add_argument("--compiler", default="gcc")
  args = p.parse_args(argv)
  old = os.environ.get("TINYSPEC_CACHE")
  cache = tempfile.mkdtemp(prefix="tinyspec-bench-")
  print(f"$ .venv/bin/python bench/lower.py --repeat {args.repeat} --compiler {args.compiler}")
  rng = np.random.default_rng(0)
  try:
    for case in (matmul_case(rng), mlp_case(rng)):
      os.environ["TINYSPEC_CACHE"] = cache
      print(f"\n{case[0]}")
      print(f"  {'what':<28}{'time':>12}{'x numpy':>10}")
      for r, t, ratio in run_case(*case, args.repeat, args.compiler):
        print(f"  {r:<28}{t * 1e3:>10.2f}ms{ratio:>10.1f}")
  finally:
    if old is None: os.environ.pop("TINYSPEC_CACHE", None)
    else: os.environ["TINYSPEC_CACHE"] = old
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""The reference evaluator against compiled C on generated read-modify-write kernels (fuzz.generate.kernels).

    .venv/bin/python bench/kernel_parity.py [--cases N] [--seed S] [--compiler tcc] [--workers W] [--batch B]
    .venv/bin/python bench/kernel_parity.py --seed S --only I      # one case: its graph and both results

Case i is `rmw_kernel_case(Random(f"kernel-parity:{S}:{i}"))`. Each case is lowered through the kernel passes (backend
c, its own opts); the kernels of a batch of cases are compiled as one object (one compiler run per batch), each case
runs on the CPU and through `tinyspec.semantics.evaluate`, and their outputs must agree bit for bit (ints) and exactly
(floats: the generator keeps them to values no summation order changes). Prints how many agree, how many differ and how
many raised (with the first reproductions of each), and writes the same to bench/kernel_parity.txt.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate.kernels import rmw_kernel_case  # noqa: E402
from fuzz.generate.case import Case  # noqa: E402
from tinyspec.lower.kernel_map import kernel_calls  # noqa: E402
from tinyspec.runtime import cpu  # noqa: E402
from tinyspec.semantics import evaluate  # noqa: E402
from tinyspec.uop import UOp  # noqa: E402

OUT = Path(__file__).with_suffix(".txt")
SHOW = 5  # reproductions printed per kind of result
BLAME = 50  # differences located pass by pass


def make_case(seed: int, i: int) -> Case:
  c = rmw_kernel_case(random.Random(f"kernel-parity:{seed}:{i}"))
  c.seed, c.index = seed, i
  return c


def differ(a: list, b: list) -> str | None:
  """None when both have the same outputs, dtypes and elements; else the first difference."""
  if len(a) != len(b): return f"{len(a)} outputs against {len(b)}"
  for k, (x, y) in enumerate(zip(a, b)):
    x, y = np.asarray(x).reshape(-1), np.asarray(y).reshape(-1)
    if x.dtype != y.dtype: return f"output {k}: dtype {x.dtype} against {y.dtype}"
    if x.shape != y.shape: return f"output {k}: {x.size} elements against {y.size}"
    if not np.array_equal(x, y):
      j = int(np.flatnonzero(x != y)[0])
      return f"output {k} element {j}: reference {x[j]!r}, cpu {y[j]!r} ({int((x != y).sum())} of {x.size} differ)"
  return None


def compile_batch(lowered: list[UOp], cc: str | None) -> dict:
  """PROGRAM -> C function for the kernels of every lowered graph, compiled as one object (names made unique)."""
  prgs = list(dict.fromkeys(c.src[0] for g in lowered for c in kernel_calls(g)))
  return cpu.compile_programs(prgs, cc)


def first_lines(e: Exception) -> str:
  """The exception's type and its first lines (a compiler's own error line comes second)."""
  lines = [x.strip() for x in str(e).splitlines() if x.strip()][:2]
  return f"{type(e).__name__}: {' / '.join(lines)[:240]}"


def run_batch(seed: int, indices: list[int], cc: str | None) -> list[tuple[int, str, str]]:
  """(index, agree | differ | error, message) per case."""
  out: list[tuple[int, str, str]] = []
  staged = []
  for i in indices:
    c = make_case(seed, i)
    try: staged.append((c, cpu.prepare(c.root, opts=c.options.get("opts"))))
    except Exception as e: out.append((i, "error", f"lowering raised {first_lines(e)}"))
  try: fns = compile_batch([g for _, g in staged], cc)
  except Exception:
    fns = {}  # one kernel that does not compile spoils the batch: each case then compiles alone, its error its own
  for c, g in staged:
    try:
      got = cpu.match_shapes(c.root, evaluate(g, c.copy_inputs(), kernel_runner=cpu.make_runner(dict(fns), cc)))
    except Exception as e:
      out.append((c.index, "error", f"cpu raised {first_lines(e)}"))
      continue
    try: ref = evaluate(c.root, c.copy_inputs())
    except Exception as e:
      out.append((c.index, "error", f"evaluate raised {first_lines(e)}"))
      continue
    msg = differ(ref, got)
    out.append((c.index, "agree" if msg is None else "differ", msg or ""))
  return out


def where(seed: int, i: int) -> str:
  """The oracle's verdict on case i with the reference evaluator alone: which pass changed the evaluated meaning."""
  from fuzz.check.oracles import Checker, Config
  fs = Checker(Config(backends=("reference",), metamorphic=False, gradients=False)).check(make_case(seed, i))
  return fs[0].sig_str if fs else "no pass changes the evaluated meaning (the difference is in the runtime)"


def show(seed: int, i: int, cc: str | None) -> None:
  from tinyspec.pyrender import render_module
  c = make_case(seed, i)
  print(f"case {i} of seed {seed}: features {sorted(c.features)}, options {c.options}")
  print(render_module(c.root))
  print("inputs:", {k: v.tolist() for k, v in c.inputs.items()})
  print("reference:", [np.asarray(x).tolist() for x in evaluate(c.root, c.copy_inputs())])
  try: print("cpu:      ", [np.asarray(x).tolist() for x in cpu.run(c.root, c.copy_inputs(), compiler=cc, opts=c.options.get("opts"))])
  except Exception as e: print("cpu raised", first_lines(e))
  print("where:", where(seed, i))


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--cases", type=int, default=20000)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--compiler", default="tcc" if shutil.which("tcc") else None, help="C compiler (default tcc when installed: it compiles "
                  "these small kernels several times faster than gcc -O2)")
  ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
  ap.add_argument("--batch", type=int, default=200, help="cases whose kernels are compiled together")
  ap.add_argument("--only", type=int, default=None, help="show one case")
  a = ap.parse_args()
  if a.only is not None: return show(a.seed, a.only, a.compiler)
  cmd = f"$ .venv/bin/python bench/kernel_parity.py --cases {a.cases} --seed {a.seed} --compiler {a.compiler} --workers {a.workers} --batch {a.batch}"
  t = time.perf_counter()
  batches = [list(range(s, min(a.cases, s + a.batch))) for s in range(0, a.cases, a.batch)]
  results: list[tuple[int, str, str]] = []
  if a.workers <= 1:
    for b in batches: results += run_batch(a.seed, b, a.compiler)
  else:
    with ProcessPoolExecutor(a.workers) as ex:
      for r in ex.map(run_batch, [a.seed] * len(batches), batches, [a.compiler] * len(batches)): results += r
  wall = time.perf_counter() - t
  ru = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu_s = sum(r.ru_utime + r.ru_stime for r in ru)
  results.sort()
  by = {k: [r for r in results if r[1] == k] for k in ("agree", "differ", "error")}
  lines = [cmd, f"{a.cases} generated read-modify-write kernel cases in {wall:.0f}s ({a.workers} workers, {a.cases / wall:.0f} cases/s; "
           f"{cpu_s:.0f}s of CPU, {1000 * cpu_s / a.cases:.1f} ms per case: generate, lower, compile, run, evaluate)",
           f"agree: {len(by['agree'])}", f"differ: {len(by['differ'])}", f"error: {len(by['error'])}"]
  for k in ("differ", "error"):
    if by[k]: lines.append(f"first {k} cases (reproduce: .venv/bin/python bench/kernel_parity.py --seed {a.seed} --only INDEX):")
    lines += [f"  seed {a.seed} index {i}: {msg}" for i, _, msg in by[k][:SHOW]]
  if by["differ"]:
    lines.append("where each difference appears (the first pass whose output evaluates differently, and the rule blamed):")
    found = Counter(where(a.seed, i) for i, _, _ in by["differ"][:BLAME])
    lines += [f"  {n} x {w}" for w, n in found.most_common()]
  if by["error"]:
    lines.append("errors by kind:")
    kinds = Counter(re.sub(r"/\S+:\d+:", "FILE:LINE:", msg) for _, _, msg in by["error"])
    lines += [f"  {n} x {m}" for m, n in kinds.most_common()]
  for k in ("differ", "error"):
    if by[k]: lines.append(f"{k} indices: {' '.join(str(i) for i, _, _ in by[k])}")
  text = "\n".join(lines)
  print(text)
  OUT.write_text(text + "\n")


if __name__ == "__main__":
  main()

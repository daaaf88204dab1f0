"""Benchmark: the integer simplifier and the symbolic fuzzer against tinygrad 0.14's symbolic rules, in one run.

    .venv/bin/python bench/symbolic.py [--peer .venv-peer/bin/python] [--n 1000] [--fuzz-cases 200]

The same expressions are built on both sides from one JSON description (tinyspec generates them, the peer rebuilds
them with tinygrad's UOp): RANGEs, bounded variables, constants, ADD, MUL, IDIV, MOD, MAX, NEG, WHERE, CMPLT, AND.
  1. simplify throughput on 1,000 div/mod index expressions: tinyspec graph_rewrite(pm_simplify) against tinygrad
     graph_rewrite(symbolic) (what UOp.simplify runs), in microseconds per input node;
  2. scaling on an ADD chain of 200, 500 and 2,000 terms;
  3. symbolic fuzz cases per second with the z3 oracle at the same depth: tinyspec's checker (random rows first,
     z3 on survivors) against tinygrad's test/external/fuzz_symbolic.py loop (simplify, uops_to_z3, one z3 check).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from fuzz.engine.symbolic import ExprGen, SymbolicChecker, SymCase  # noqa: E402
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.lower.simplify import pm_simplify  # noqa: E402
from tinyspec.rewrite import graph_rewrite  # noqa: E402
from tinyspec.uop import Ops, UOp  # noqa: E402

IDX = dtypes.index
OPS = {Ops.ADD: "ADD", Ops.MUL: "MUL", Ops.IDIV: "IDIV", Ops.MOD: "MOD", Ops.MAX: "MAX", Ops.NEG: "NEG", Ops.WHERE: "WHERE",
       Ops.CMPLT: "CMPLT", Ops.AND: "AND"}


# ---- the expressions ----
def divmod_expr(rng: random.Random) -> UOp:
  """tinygrad fuzz_symbolic's shape: (sum of range * factor) IDIV or MOD a factor, nested 10% of the time."""
  ranges = [UOp.range(rng.choice([1, 2, 3, 16, 33, 53, 64, 256]), i) for i in range(4)]
  def term(depth: int) -> UOp:
    if depth < 2 and rng.randint(0, 9) == 0: return expr(depth + 1)
    return rng.choice(ranges) * UOp.const(IDX, rng.choice([1, 2, 3, 16, 33, 53, 64, 256]))
  def expr(depth: int) -> UOp:
    x = term(depth)
    for _ in range(rng.randint(1, 3)): x = x + term(depth)
    return x.alu(rng.choice([Ops.IDIV, Ops.MOD]), UOp.const(IDX, rng.choice([2, 3, 4, 16, 33, 53, 64])))
  return expr(0)


def chain(n: int) -> UOp:
  rs = [UOp.range(16, i) for i in range(8)]
  x = rs[0]
  for i in range(1, n): x = x + (rs[i % 8] * UOp.const(IDX, i % 5 + 1) if i % 3 else UOp.const(IDX, i % 7 + 1))
  return x


def to_json(e: UOp) -> list:
  nodes, idx = [], {}
  for u in e.toposort():
    if u.op is Ops.CONST: d = ["CONST", int(u.arg)]
    elif u.op is Ops.RANGE: d = ["RANGE", u.arg.axis, int(u.src[0].arg)]
    elif u.op is Ops.DETACH: d = ["VAR", f"v{len(nodes)}", int(u.vmin), int(u.vmax)]
    elif u.op in OPS: d = [OPS[u.op], *[idx[s] for s in u.src]]
    else: continue  # inside a DETACH leaf
    idx[u] = len(nodes)
    nodes.append(d)
  return nodes


def node_count(e: UOp) -> int: return len(e.toposort())


# ---- tinyspec side ----
def time_simplify(exprs: list[UOp]) -> float:
  t = time.perf_counter()
  for e in exprs: graph_rewrite(e, pm_simplify)
  return time.perf_counter() - t


def fresh(e_json: list) -> UOp:
  """Rebuild an expression from JSON with new RANGE axis ids, so no rewrite result is reused across runs."""
  vals: list[UOp] = []
  salt = random.randint(10 ** 6, 10 ** 9)
  for d in e_json:
    op = d[0]
    if op == "CONST": vals.append(UOp.const(IDX, d[1]))
    elif op == "RANGE": vals.append(UOp.range(d[2], d[1] + salt))
    elif op == "VAR":
      from tinyspec.prove.templates import slot_node
      vals.append(slot_node(salt + len(vals), IDX, d[2], d[3]))
    else:
      o = next(k for k, v in OPS.items() if v == op)
      srcs = [vals[i] for i in d[1:]]
      vals.append(UOp(o, dtypes.bool if o is Ops.CMPLT else srcs[-1].dtype, tuple(srcs)))
  return vals[-1]


PEER = r'''
import json, sys, time, random
import z3
from tinygrad.uop.ops import UOp, Ops, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.uop.symbolic import symbolic
from tinygrad.uop.validate import uops_to_z3
IDX = dtypes.weakint
def build(nodes, salt):
  vals, leaves = [], []
  for d in nodes:
    op = d[0]
    if op == "CONST": vals.append(UOp.const(d[1], IDX))
    elif op == "RANGE": vals.append(UOp.range(d[2], d[1] + salt)); leaves.append(vals[-1])
    elif op == "VAR": vals.append(UOp.variable(f"{d[1]}_{salt}", d[2], d[3])); leaves.append(vals[-1])
    else:
      srcs = [vals[i] for i in d[1:]]
      vals.append(srcs[0].alu(getattr(Ops, {"IDIV": "CDIV", "MOD": "CMOD"}.get(op, op)), *srcs[1:]))  # C-truncating ops
  return vals[-1], leaves
job = json.loads(sys.stdin.read())
out = {}
exprs = [build(e, 1000 + i)[0] for i, e in enumerate(job["divmod"])]
t = time.perf_counter()
for e in exprs: graph_rewrite(e, symbolic)
out["divmod"] = time.perf_counter() - t
out["chain"] = {}
for n, e in job["chain"].items():
  x = build(e, 7)[0]
  t = time.perf_counter(); graph_rewrite(x, symbolic); out["chain"][n] = time.perf_counter() - t
t = time.perf_counter()
unknown = 0
for i, e in enumerate(job["fuzz"]):
  x, leaves = build(e, 50000 + i)
  s = x.simplify()
  solver = z3.Solver(); solver.set(timeout=job["timeout_ms"])
  ze, zs, *_ = uops_to_z3(solver, x, s, *leaves)
  r = solver.check(ze != zs)
  unknown += r == z3.unknown
out["fuzz"] = time.perf_counter() - t
out["fuzz_unknown"] = unknown
print(json.dumps(out))
'''


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--peer", default=str(Path(__file__).resolve().parents[1] / ".venv-peer" / "bin" / "python"))
  ap.add_argument("--n", type=int, default=1000)
  ap.add_argument("--fuzz-cases", type=int, default=200)
  ap.add_argument("--depth", type=int, default=3)
  ap.add_argument("--timeout-ms", type=int, default=300)
  ap.add_argument("--seed", type=int, default=0)
  a = ap.parse_args()
  rng = random.Random(a.seed)
  divmod_json = [to_json(divmod_expr(rng)) for _ in range(a.n)]
  chains = {n: to_json(chain(n)) for n in (200, 500, 2000)}
  gens = []
  for i in range(a.fuzz_cases):
    g = ExprGen(random.Random(f"bench:{a.seed}:{i}"), a.depth)
    gens.append(to_json(g.expr()))
  job = {"divmod": divmod_json, "chain": {str(k): v for k, v in chains.items()}, "fuzz": gens, "timeout_ms": a.timeout_ms}

  # tinyspec
  exprs = [fresh(e) for e in divmod_json]
  nodes = sum(node_count(e) for e in exprs)
  ts_divmod = time_simplify(exprs)
  ts_chain = {}
  for n, e in chains.items():
    x = fresh(e)
    t = time.perf_counter(); graph_rewrite(x, pm_simplify); ts_chain[n] = time.perf_counter() - t
  chk = SymbolicChecker(z3_timeout_ms=a.timeout_ms)
  nrng = np.random.default_rng(a.seed)
  t = time.perf_counter()
  for e in gens:
    x = fresh(e)
    from fuzz.engine.symbolic import Leaf
    # leaves: bounded variables (DETACH) and the RANGEs outside them
    leaves = [Leaf(u, int(u.vmin), int(u.vmax)) for u in x.toposort(gate=lambda u: u.op is not Ops.DETACH) if u.op in (Ops.RANGE, Ops.DETACH)]
    chk.check(SymCase(x, leaves), nrng)
  ts_fuzz = time.perf_counter() - t

  # tinygrad
  if not os.path.exists(a.peer): sys.exit(f"no peer interpreter at {a.peer}")
  r = subprocess.run([a.peer, "-c", PEER], input=json.dumps(job), capture_output=True, text=True, check=False)
  if r.returncode != 0: sys.exit(f"peer failed:\n{r.stderr[-3000:]}")
  peer = json.loads(r.stdout.strip().splitlines()[-1])

  us = lambda s: 1e6 * s / nodes
  print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
  print(f"1. simplify, {a.n} div/mod index expressions ({nodes} nodes): tinyspec {us(ts_divmod):.2f} us/node, "
        f"tinygrad {us(peer['divmod']):.2f} us/node, ratio {peer['divmod'] / ts_divmod:.2f}x (target >= 2x)")
  print("2. ADD chain scaling (ms):")
  for n in (200, 500, 2000):
    print(f"   {n:5d} terms: tinyspec {1e3 * ts_chain[n]:8.2f}  tinygrad {1e3 * peer['chain'][str(n)]:8.2f}  "
          f"ratio {peer['chain'][str(n)] / ts_chain[n]:.2f}x")
  print(f"   tinyspec 2000/200 time ratio {ts_chain[2000] / ts_chain[200]:.1f} (10 is linear); "
        f"tinygrad {peer['chain']['2000'] / peer['chain']['200']:.1f}")
  k = a.fuzz_cases
  print(f"3. symbolic fuzz with the z3 oracle, {k} cases at depth {a.depth}, z3 timeout {a.timeout_ms} ms: "
        f"tinyspec {k / ts_fuzz:.1f} cases/s ({chk.z3_queries} z3 queries, {chk.z3_unknown} unknown), "
        f"tinygrad {k / peer['fuzz']:.1f} cases/s ({peer['fuzz_unknown']} unknown), ratio {peer['fuzz'] / ts_fuzz:.2f}x (target >= 3x)")


if __name__ == "__main__":
  main()

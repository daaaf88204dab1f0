"""Benchmark: the integer simplifier and the symbolic fuzzer against tinygrad 0.14's symbolic rules, in one run.

    .venv/bin/python bench/symbolic.py [--peer .venv-peer/bin/python] [--n 1000] [--fuzz-cases 200]

The same expressions are built on both sides from one JSON description (tinyspec makes them, the peer rebuilds them
with tinygrad's UOp): RANGEs, bounded variables (tinyspec's DEFINE_VAR, tinygrad's UOp.variable), constants and the
integer ops. tinyspec's IDIV and MOD truncate (C); the peer gets tinygrad's FLOORDIV and FLOORMOD, which its symbolic
rules simplify, wherever the numerator is never negative and the divisor positive (there floor and truncation agree),
and CDIV and CMOD (C's truncation, which tinygrad leaves alone) elsewhere, so both sides mean the same expression.
  1. strength: the hand-written and random expressions of bench/symbolic_cases.py (the families of tinygrad's symbolic
     tests), simplified by tinyspec (graph_rewrite(pm_simplify)) and by tinygrad (graph_rewrite(symbolic)), nodes after
     each (a variable or a RANGE counts as one node); both results checked equal to the expression: tinyspec's with the
     symbolic fuzzer's checker (every assignment when there are at most 2**16, else random ones and z3), tinygrad's by
     the same numpy evaluation of its result and by z3 in the peer (tinygrad's uops_to_z3);
  2. simplify throughput on 1,000 div/mod index expressions, in microseconds per input node;
  3. scaling on an ADD chain of 200, 500 and 2,000 terms;
  4. symbolic fuzz cases per second with the z3 oracle at the same depth: tinyspec's checker (random rows first,
     z3 on survivors) against tinygrad's test/external/fuzz_symbolic.py loop (simplify, uops_to_z3, one z3 check).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from fuzz.check.symbolic import SymbolicChecker  # noqa: E402
from fuzz.generate.symbolic import ExprGen, Leaf, SymCase, leaves_of  # noqa: E402
from symbolic_cases import cases  # noqa: E402
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.lower.simplify import pm_simplify  # noqa: E402
from tinyspec.rewrite import graph_rewrite  # noqa: E402
from tinyspec.semantics.alu import elementwise  # noqa: E402
from tinyspec.uop import Ops, UOp  # noqa: E402

IDX = dtypes.index
OPS = {Ops.ADD: "ADD", Ops.SUB: "SUB", Ops.MUL: "MUL", Ops.NEG: "NEG", Ops.MAX: "MAX", Ops.WHERE: "WHERE", Ops.CMPLT: "CMPLT",
       Ops.CMPNE: "CMPNE", Ops.CMPEQ: "CMPEQ", Ops.AND: "AND", Ops.OR: "OR", Ops.XOR: "XOR", Ops.SHL: "SHL", Ops.SHR: "SHR"}
MAX_EXHAUSTIVE = 1 << 16


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
  """The expression as a list of nodes, sources first; IDIV and MOD named as the division the peer is to build."""
  nodes, idx = [], {}
  for u in e.toposort(gate=lambda x: x.op is not Ops.DETACH):
    if u.op is Ops.CONST: d = ["BOOL", bool(u.arg)] if u.dtype is dtypes.bool else ["CONST", int(u.arg)]
    elif u.op is Ops.RANGE and u.src[0].op is Ops.CONST: d = ["RANGE", u.arg.axis, int(u.src[0].arg)]
    elif u.op is Ops.DEFINE_VAR: d = ["VAR", u.arg.name, u.arg.min, u.arg.max]
    elif u.op is Ops.DETACH: d = ["VAR", f"v{len(nodes)}", int(u.vmin), int(u.vmax)]
    elif u.op in (Ops.IDIV, Ops.MOD):
      floor = u.src[0].vmin >= 0 and u.src[1].vmin > 0  # floor division and truncation agree here
      d = [("FLOOR" if floor else "C") + ("DIV" if u.op is Ops.IDIV else "MOD"), idx[u.src[0]], idx[u.src[1]]]
    elif u.op in OPS: d = [OPS[u.op], *[idx[s] for s in u.src]]
    else: continue  # inside a leaf
    idx[u] = len(nodes)
    nodes.append(d)
  return nodes


def node_count(e: UOp) -> int: return len(e.toposort())


def fresh(e_json: list, salt: int | None = None) -> UOp:
  """An expression rebuilt from JSON with new RANGE axis ids and variable names, so no rewrite result is reused across runs."""
  vals: list[UOp] = []
  salt = random.randint(10 ** 6, 10 ** 9) if salt is None else salt
  for d in e_json:
    op = d[0]
    if op == "CONST": vals.append(UOp.const(IDX, d[1]))
    elif op == "BOOL": vals.append(UOp.const(dtypes.bool, d[1]))
    elif op == "RANGE": vals.append(UOp.range(d[2], d[1] + salt))
    elif op == "VAR": vals.append(UOp.variable(f"{d[1]}_{salt}", d[2], d[3]))
    else:
      o = {"FLOORDIV": Ops.IDIV, "CDIV": Ops.IDIV, "FLOORMOD": Ops.MOD, "CMOD": Ops.MOD}.get(op) or next(k for k, v in OPS.items() if v == op)
      srcs = [vals[i] for i in d[1:]]
      dt = dtypes.bool if o in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else srcs[-1].dtype
      vals.append(UOp(o, dt, tuple(srcs)))
  return vals[-1]


# ---- strength: evaluating tinygrad's results ----
def _floordiv(a, b): return np.where(b == 0, 0, np.floor_divide(a, np.where(b == 0, 1, b)))
def _floormod(a, b): return np.where(b == 0, a, np.mod(a, np.where(b == 0, 1, b)))


def _cdiv(a, b):
  q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
  return np.where(b == 0, 0, np.where((a < 0) != (b < 0), -q, q))


# tinygrad's meaning of the ops its symbolic rules leave in a result (tinygrad/uop/ops.py python_alu)
PEER_OPS = {
  "ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "NEG": np.negative, "MAX": np.maximum, "CMPLT": np.less, "CMPNE": np.not_equal,
  "CMPEQ": np.equal, "AND": lambda a, b: a & b, "OR": lambda a, b: a | b, "XOR": lambda a, b: a ^ b, "SHL": lambda a, b: a << b,
  "SHR": lambda a, b: a >> b, "WHERE": np.where, "FLOORDIV": _floordiv, "FLOORMOD": _floormod, "CDIV": _cdiv,
  "CMOD": lambda a, b: np.where(b == 0, a, a - _cdiv(a, b) * b),
}


def eval_peer(nodes: list, env: dict[str, np.ndarray], n: int) -> np.ndarray:
  vals: list[np.ndarray] = []
  with np.errstate(all="ignore"):
    for op, srcs, arg in nodes:
      if op == "CONST": vals.append(np.full(n, arg, dtype=np.bool_ if isinstance(arg, bool) else np.int64))
      elif op == "VAR": vals.append(env[arg])
      elif op == "CAST": vals.append(vals[srcs[0]].astype(np.int64))
      else: vals.append(np.asarray(PEER_OPS[op](*(vals[s] for s in srcs))))
  return vals[-1]


def eval_tinyspec(e: UOp, env: dict[UOp, np.ndarray]) -> np.ndarray:
  vals: dict[UOp, np.ndarray] = dict(env)
  n = len(next(iter(env.values()))) if env else 1
  with np.errstate(all="ignore"):
    for u in e.toposort():
      if u in vals: continue
      vals[u] = np.full(n, u.arg, dtype=u.dtype.np) if u.op is Ops.CONST else np.asarray(elementwise(u, [vals[s] for s in u.src]))
  return np.broadcast_to(vals[e], (n,))


def assignments(leaves: list[UOp], rng: np.random.Generator) -> tuple[dict[UOp, np.ndarray], bool]:
  """Every assignment of the leaves when there are at most MAX_EXHAUSTIVE (then the check is a proof), else random ones."""
  sizes = [u.arg.max - u.arg.min + 1 for u in leaves]
  if math.prod(sizes) <= MAX_EXHAUSTIVE:
    grids = np.meshgrid(*[np.arange(u.arg.min, u.arg.max + 1, dtype=np.int64) for u in leaves], indexing="ij") if leaves else []
    return {u: g.reshape(-1) for u, g in zip(leaves, grids)}, True
  env = {u: np.concatenate([rng.integers(u.arg.min, u.arg.max + 1, 4096), [u.arg.min, u.arg.max]]).astype(np.int64) for u in leaves}
  return env, False


# ---- the peer ----
PEER = r'''
import json, sys, time, random
import z3
from tinygrad.uop.ops import UOp, Ops, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.uop.symbolic import symbolic
from tinygrad.uop.validate import uops_to_z3
IDX = dtypes.weakint
BIN = {"ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b, "MAX": lambda a, b: a.maximum(b),
       "CMPLT": lambda a, b: a < b, "CMPNE": lambda a, b: a.ne(b), "CMPEQ": lambda a, b: a.alu(Ops.CMPEQ, b), "AND": lambda a, b: a & b,
       "OR": lambda a, b: a | b, "XOR": lambda a, b: a ^ b, "SHL": lambda a, b: a.alu(Ops.SHL, b), "SHR": lambda a, b: a.alu(Ops.SHR, b),
       "FLOORDIV": lambda a, b: a // b, "FLOORMOD": lambda a, b: a % b, "CDIV": lambda a, b: a.alu(Ops.CDIV, b),
       "CMOD": lambda a, b: a.alu(Ops.CMOD, b)}
def build(nodes, salt):
  vals, leaves = [], []
  for d in nodes:
    op = d[0]
    if op == "CONST": vals.append(UOp.const(d[1], IDX))
    elif op == "BOOL": vals.append(UOp.const(d[1], dtypes.bool))
    elif op == "RANGE": vals.append(UOp.range(d[2], d[1] + salt)); leaves.append(vals[-1])
    elif op == "VAR": vals.append(UOp.variable(f"{d[1]}_{salt}", d[2], d[3])); leaves.append(vals[-1])
    elif op == "NEG": vals.append(-vals[d[1]])
    elif op == "WHERE": vals.append(vals[d[1]].where(vals[d[2]], vals[d[3]]))
    else: vals.append(BIN[op](vals[d[1]], vals[d[2]]))
  return vals[-1], leaves
def leaf(u): return u.op is Ops.RANGE or (u.op is Ops.BUFFER and u.arg.vmin_vmax is not None)
def walk(u):
  out, seen, stack = [], set(), [u]
  while stack:
    x = stack.pop()
    if x in seen: continue
    seen.add(x); out.append(x)
    if not leaf(x): stack.extend(x.src)
  return out
def export(u, names):
  order, idx = [], {}
  for x in reversed(walk(u)): pass
  def visit(x):
    stack = [(x, False)]
    while stack:
      y, ready = stack.pop()
      if y in idx: continue
      kids = () if leaf(y) else y.src
      if not ready:
        stack.append((y, True)); stack.extend((k, False) for k in kids if k not in idx); continue
      if y.op is Ops.CONST: d = ["CONST", [], y.arg if isinstance(y.arg, (bool, int)) else None]
      elif leaf(y): d = ["VAR", [], names[y]]
      else: d = [y.op.name, [idx[k] for k in kids], None]
      idx[y] = len(order); order.append(d)
  visit(u)
  return order
job = json.loads(sys.stdin.read())
out = {"strength": []}
for i, e in enumerate(job["strength"]):
  x, leaves = build(e, 77000 + i)
  s = graph_rewrite(x, symbolic)
  names = {u: (f"r{u.arg[0] - 77000 - i}" if u.op is Ops.RANGE else u.arg.name.rsplit("_", 1)[0]) for u in leaves}
  for u in walk(s):
    if leaf(u) and u not in names: names[u] = u.arg.name.rsplit("_", 1)[0] if u.op is Ops.BUFFER else f"r{u.arg[0]}"
  solver = z3.Solver(); solver.set(timeout=job["timeout_ms"])
  try:
    zx, zs, *_ = uops_to_z3(solver, x, s, *leaves)
    verdict = str(solver.check(zx != zs))
  except Exception as ex: verdict = f"no z3: {type(ex).__name__}"
  out["strength"].append({"nodes": len(walk(s)), "z3": verdict, "result": export(s, names), "text": s.render(simplify=False)})
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


def strength(peer: list[dict], items: list[tuple[str, str, UOp]], timeout_ms: int, seed: int) -> dict:
  """Node counts after both simplifiers and the soundness checks of both, per case."""
  chk = SymbolicChecker(z3_timeout_ms=timeout_ms)
  nrng = np.random.default_rng(seed)
  rows = []
  for (fam, name, e), p in zip(items, peer):
    s, _ = chk.simplify(e)
    fs = chk.check(SymCase(e, leaves_of(e)), nrng)
    leaves = sorted({u for u in e.toposort() if u.op is Ops.DEFINE_VAR}, key=lambda u: u.arg.name)
    env, exhaustive = assignments(leaves, nrng)
    n = len(next(iter(env.values()))) if env else 1
    want = eval_tinyspec(e, env)
    got = eval_peer(p["result"], {u.arg.name: v for u, v in env.items()}, n)
    peer_bad = not np.array_equal(np.asarray(want, dtype=np.int64), np.broadcast_to(np.asarray(got, dtype=np.int64), want.shape))
    rows.append({"family": fam, "name": name, "before": node_count(e), "tinyspec": node_count(s), "tinygrad": p["nodes"],
                 "tinyspec_unsound": bool(fs), "tinygrad_unsound": peer_bad or p["z3"] == "sat", "tinygrad_z3": p["z3"],
                 "exhaustive": exhaustive, "text": p["text"], "mine": s})
  return {"rows": rows, "z3": chk.z3_queries, "z3_unknown": chk.z3_unknown}


def _expr(u: UOp, depth: int = 8) -> str:
  from tinyspec.prove.prover import _expr as ex
  return ex(u, depth)


def report_strength(st: dict, show: int) -> None:
  """Part 1 of the output: how small tinyspec leaves each strength case against tinygrad, by family, with the cases it leaves larger."""
  rows = st["rows"]
  k = len(rows)
  win = sum(row["tinyspec"] <= row["tinygrad"] for row in rows)
  fams: dict[str, list[int]] = {}
  for row in rows:
    f = fams.setdefault(row["family"], [0, 0, 0])
    f[0] += 1; f[1] += row["tinyspec"] <= row["tinygrad"]; f[2] += row["tinyspec"] < row["tinygrad"]  # noqa: E702
  n_rand = sum(1 for r in rows if r["name"].startswith("random"))
  print(f"1. strength, {k} integer expressions over bounded variables (bench/symbolic_cases.py: {k - n_rand} hand-written, {n_rand} random):"
        f" tinyspec's result no larger than tinygrad's on "
        f"{win} of {k} ({100 * win / k:.1f}%, target >= 95%), smaller on {sum(r['tinyspec'] < r['tinygrad'] for r in rows)}")
  print(f"   nodes: {sum(r['before'] for r in rows)} before, {sum(r['tinyspec'] for r in rows)} after tinyspec, "
        f"{sum(r['tinygrad'] for r in rows)} after tinygrad")
  print(f"   unsound results: tinyspec {sum(r['tinyspec_unsound'] for r in rows)}, tinygrad {sum(r['tinygrad_unsound'] for r in rows)} "
        f"({sum(r['exhaustive'] for r in rows)} cases checked at every assignment, the others at 4,098 and by z3: tinyspec "
        f"{st['z3']} queries, {st['z3_unknown']} unknown; tinygrad's z3 {sum(r['tinygrad_z3'] == 'unsat' for r in rows)} unsat, "
        f"{sum(r['tinygrad_z3'] == 'unknown' for r in rows)} unknown)")
  print("   by family (cases, no larger, smaller): " + ", ".join(f"{f} {v[0]}/{v[1]}/{v[2]}" for f, v in fams.items()))
  worse = sorted((r for r in rows if r["tinyspec"] > r["tinygrad"]), key=lambda r: r["tinygrad"] - r["tinyspec"])
  for r in worse[:show]:
    print(f"   larger: {r['name']}: tinyspec {r['tinyspec']} nodes {_expr(r['mine'])}  tinygrad {r['tinygrad']} nodes {r['text']}")
  for r in rows:
    if r["tinyspec_unsound"] or r["tinygrad_unsound"]:
      print(f"   unsound: {r['name']} (tinyspec {r['tinyspec_unsound']}, tinygrad {r['tinygrad_unsound']}: {r['text']})")


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--peer", default=str(Path(__file__).resolve().parents[1] / ".venv-peer" / "bin" / "python"))
  ap.add_argument("--n", type=int, default=1000)
  ap.add_argument("--fuzz-cases", type=int, default=200)
  ap.add_argument("--depth", type=int, default=3)
  ap.add_argument("--timeout-ms", type=int, default=300)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--show", type=int, default=12, help="cases tinyspec leaves larger than tinygrad to print")
  a = ap.parse_args()
  if not os.path.exists(a.peer):
    sys.exit(f"no peer interpreter at {a.peer}; make it with: python3 -m venv .venv-peer && "
             ".venv-peer/bin/pip install tinygrad==0.14.0 numpy z3-solver")
  rng = random.Random(a.seed)
  items = cases(a.seed)
  strength_json = [to_json(e) for _, _, e in items]
  divmod_json = [to_json(divmod_expr(rng)) for _ in range(a.n)]
  chains = {n: to_json(chain(n)) for n in (200, 500, 2000)}
  gens = []
  for i in range(a.fuzz_cases):
    g = ExprGen(random.Random(f"bench:{a.seed}:{i}"), a.depth)
    gens.append(to_json(g.expr()))
  job = {"strength": strength_json, "divmod": divmod_json, "chain": {str(k): v for k, v in chains.items()}, "fuzz": gens,
         "timeout_ms": a.timeout_ms}

  # tinygrad first: its run is a separate process, so tinyspec's timings below see a machine no busier than the peer's did
  r = subprocess.run([a.peer, "-c", PEER], input=json.dumps(job), capture_output=True, text=True, check=False)
  if r.returncode != 0: sys.exit(f"peer failed:\n{r.stderr[-3000:]}")
  peer = json.loads(r.stdout.strip().splitlines()[-1])

  # tinyspec
  st = strength(peer["strength"], items, a.timeout_ms, a.seed)
  exprs = [fresh(e) for e in divmod_json]
  nodes = sum(node_count(e) for e in exprs)
  t = time.perf_counter()
  for e in exprs: graph_rewrite(e, pm_simplify)
  ts_divmod = time.perf_counter() - t
  ts_chain = {}
  for n, e in chains.items():
    x = fresh(e)
    t = time.perf_counter(); graph_rewrite(x, pm_simplify); ts_chain[n] = time.perf_counter() - t
  chk = SymbolicChecker(z3_timeout_ms=a.timeout_ms)
  nrng = np.random.default_rng(a.seed)
  t = time.perf_counter()
  for e in gens:
    x = fresh(e)
    chk.check(SymCase(x, leaves_of(x) or [Leaf(u, int(u.vmin), int(u.vmax)) for u in x.toposort() if u.op is Ops.RANGE]), nrng)
  ts_fuzz = time.perf_counter() - t

  us = lambda s: 1e6 * s / nodes
  print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
  report_strength(st, a.show)
  print(f"2. simplify, {a.n} div/mod index expressions ({nodes} nodes): tinyspec {us(ts_divmod):.2f} us/node, "
        f"tinygrad {us(peer['divmod']):.2f} us/node, ratio {peer['divmod'] / ts_divmod:.2f}x (target >= 2x)")
  print("3. ADD chain scaling (ms):")
  for n in (200, 500, 2000):
    print(f"   {n:5d} terms: tinyspec {1e3 * ts_chain[n]:8.2f}  tinygrad {1e3 * peer['chain'][str(n)]:8.2f}  "
          f"ratio {peer['chain'][str(n)] / ts_chain[n]:.2f}x")
  print(f"   tinyspec 2000/200 time ratio {ts_chain[2000] / ts_chain[200]:.1f} (10 is linear); "
        f"tinygrad {peer['chain']['2000'] / peer['chain']['200']:.1f}")
  kf = a.fuzz_cases
  print(f"4. symbolic fuzz with the z3 oracle, {kf} cases at depth {a.depth}, z3 timeout {a.timeout_ms} ms: "
        f"tinyspec {kf / ts_fuzz:.1f} cases/s ({chk.z3_queries} z3 queries, {chk.z3_unknown} unknown), "
        f"tinygrad {kf / peer['fuzz']:.1f} cases/s ({peer['fuzz_unknown']} unknown), ratio {peer['fuzz'] / ts_fuzz:.2f}x")


if __name__ == "__main__":
  main()

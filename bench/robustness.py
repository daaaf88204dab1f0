"""Figures of tinyspec under faults and hostile input, measured with real processes and signals:

  1. check() on corrupted graphs: how many of TRIALS trials raised (hostile reprs, ints too long to print, deeply
     nested tuples, forged dtypes and ops, sources that are not nodes; the trials of tests/test_check_hostile.py);
  2. the longest chain checked at each stage, and its time: a tensor chain of NEG and RESHAPE, a kernel graph whose
     kernel stores a chain of ADDs (KERNEL_GRAPH and KERNEL), the same as a PROGRAM with its LINEAR; each built and
     checked once in an interpreter of its own (verdicts are cached on the interned nodes, so a second check of the
     same nodes would cost nothing);
  3. SIGKILLs of a running campaign with 2 workers (a seeded bug, so it finds and reduces while it is killed; the same
     corpus directory each time, so every run resumes the last): processes left alive 10 s after each kill, and
     findings it printed whose entry is missing or does not read, corpus files that do not read, state files that do
     not parse; with the tinygrad extra, the same for `--target tinygrad`;
  4. a campaign whose every C kernel loops forever (--seconds 25, --case-timeout 3, 1 worker): the hang finding it
     stores and how long the campaign took against its budget.

Run:  .venv/bin/python bench/robustness.py [--trials 10000] [--chains 100000,300000] [--tensor-chain 1000000] [--kills 10]
      [--tinygrad-kills 3]
The output of the full run is in bench/robustness.txt.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the corruptions, chains and process helpers the tests use

KILL_SCRIPT = """
import sys
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
target = sys.argv[3]
if target == "reference":
  from fuzz.testbed.seeded_bugs import broken_pipeline
  cfg = CampaignConfig(seconds=600, seed=int(sys.argv[2]), workers=2, corpus=sys.argv[1], passes=broken_pipeline("mod_off_by_one"),
                       reduce_seconds=5, status_every=1.0, weights={"kind:kernel": 0.5})
else:
  cfg = CampaignConfig(seconds=600, seed=int(sys.argv[2]), workers=2, corpus=sys.argv[1], reduce_seconds=5, status_every=1.0, target=target)
run_campaign(cfg)
"""


def corruption(trials: int) -> dict:
  from test_check_hostile import corrupt, graphs, nodes_of, substitute_one
  from tinyspec import Stage, check
  rng = random.Random(16)
  pool = graphs()
  raised, violations, t0 = [], 0, time.perf_counter()
  for t in range(trials):
    g, stage = rng.choice(pool)
    bad = g
    for _ in range(rng.randint(1, 3)):
      target = rng.choice(nodes_of(bad))
      try: bad = substitute_one(bad, target, corrupt(target, rng))
      except Exception: pass
    st = stage if rng.random() < 0.7 else rng.choice(list(Stage))
    try:
      vs = check(bad, st)
      violations += len(vs)
      for v in vs: str(v)
    except Exception as e:
      raised.append(f"trial {t}: {type(e).__name__}: {str(e)[:120]}")
  return {"trials": trials, "raised": len(raised), "first": raised[:3], "violations": violations, "seconds": time.perf_counter() - t0}


STAGES = ("TENSOR", "KERNEL_GRAPH", "KERNEL", "PROGRAM")


def one_chain(n: int, stage_name: str) -> dict:
  """Build the chain of stage_name with n nodes and check it once, in this (fresh) process."""
  import resource
  from test_check_hostile import long_kernel, tensor_chain
  from tinyspec import Stage, check
  stage = Stage[stage_name]
  check(long_kernel(3, program=stage is Stage.PROGRAM) if stage is not Stage.TENSOR else tensor_chain(4), stage)  # imports, z3's start
  g = tensor_chain(n) if stage is Stage.TENSOR else long_kernel(n, program=stage is Stage.PROGRAM)
  nodes = len(g.toposort())
  sys.setrecursionlimit(1000)  # Python's default: a recursive walk would fail on these chains
  t = time.perf_counter()
  vs = check(g, stage)
  took = time.perf_counter() - t
  return {"stage": stage_name, "nodes": nodes, "violations": len(vs), "seconds": took,
          "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def chain(n: int, stage_name: str) -> dict:
  """one_chain in a fresh interpreter: nothing of another chain is interned or cached in it."""
  out = subprocess.run([sys.executable, __file__, "--one-chain", str(n), stage_name], capture_output=True, text=True, cwd=ROOT, timeout=3600)
  if out.returncode != 0: return {"stage": stage_name, "nodes": n, "violations": -1, "seconds": float("nan"), "rss_mb": 0.0,
                                  "error": out.stderr.strip().splitlines()[-1:]}
  return json.loads(out.stdout)


def _descendants(pid: int) -> set[int]:
  from test_campaign_faults import _descendants as d
  return d(pid)


def _alive(pid: int) -> bool:
  from test_campaign_faults import _alive as a
  return a(pid)


def kills(n: int, target: str, seed: int = 3) -> dict:
  from fuzz.corpus.store import entries, load_entry
  rng = random.Random(seed)
  corpus = Path(tempfile.mkdtemp(prefix=f"robust-{target}-"))
  orphans, reported, lost, corrupt, bad_state, children = 0, set(), [], [], 0, 0
  for _ in range(n):
    after = rng.uniform(8, 30) if target == "reference" else rng.uniform(20, 45)
    p = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(corpus), str(seed), target], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, cwd=ROOT, start_new_session=True)
    time.sleep(after)
    kids = {k for k in _descendants(p.pid) if _alive(k)}
    children += len(kids)
    os.kill(p.pid, signal.SIGKILL)
    out, _ = p.communicate(timeout=60)
    time.sleep(10)
    left = [k for k in kids | _descendants(p.pid) if _alive(k)]
    orphans += len(left)
    for k in left:
      try: os.kill(k, signal.SIGKILL)
      except OSError: pass
    for ln in out.splitlines():
      if ln.startswith("finding: "): reported.add(ln.split(" -> ", 1)[1].strip())
    for path in sorted(reported):
      try: load_entry(path)
      except Exception as e: lost.append(f"{path}: {type(e).__name__}: {e}")
    for path in entries(corpus):
      try: load_entry(path)
      except Exception as e: corrupt.append(f"{path}: {type(e).__name__}: {e}")
    for st in corpus.glob(".fuzz-state-*.json"):
      try: json.loads(st.read_text())
      except ValueError: bad_state += 1
  files = len(list(entries(corpus)))
  return {"target": target, "kills": n, "children_at_kill": children, "orphans": orphans, "reported": len(reported), "lost": len(lost),
          "corpus_files": files, "unreadable": len(set(corrupt)), "bad_state": bad_state, "first": (lost + corrupt)[:3]}


def hang() -> dict:
  from fuzz.corpus.store import load_entry
  from fuzz.engine.campaign import run_campaign
  from fuzz.engine.config import CampaignConfig
  from test_campaign_faults import _hang_kernels, _with_render
  with tempfile.TemporaryDirectory() as d:
    cfg = CampaignConfig(seconds=25, seed=0, workers=1, corpus=d, passes=_with_render(_hang_kernels), backends=("reference", "cpu"), cc="tcc",
                         case_timeout=3, reduce_seconds=8, weights={"kind:kernel": 0.0})
    t = time.monotonic()
    s = run_campaign(cfg, io.StringIO())
    took = time.monotonic() - t
    hangs = [f for f in s.findings if f.signature[0] == "hang"]
    stored = [load_entry(f.path).signature for f in hangs]
  return {"budget": cfg.seconds, "took": took, "cases": s.cases, "hangs": [list(h) for h in stored]}


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--trials", type=int, default=10_000)
  ap.add_argument("--chains", default="100000,300000")
  ap.add_argument("--kills", type=int, default=10)
  ap.add_argument("--tinygrad-kills", type=int, default=3)
  ap.add_argument("--tensor-chain", type=int, default=1_000_000, help="a longer chain at TENSOR alone (0: none)")
  ap.add_argument("--one-chain", nargs=2, metavar=("N", "STAGE"), help=argparse.SUPPRESS)
  a = ap.parse_args()
  if a.one_chain:
    print(json.dumps(one_chain(int(a.one_chain[0]), a.one_chain[1])))
    return
  print(f"$ .venv/bin/python bench/robustness.py --trials {a.trials} --chains {a.chains} --tensor-chain {a.tensor_chain} --kills {a.kills} "
        f"--tinygrad-kills {a.tinygrad_kills}")
  print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")

  c = corruption(a.trials)
  print(f"check() on corrupted graphs: {c['raised']} of {c['trials']} trials raised ({c['violations']} violations reported, "
        f"{c['seconds']:.1f} s){'; first: ' + str(c['first']) if c['first'] else ''}")

  print("\nlong chains, each built and checked once in a fresh interpreter (recursion limit 1000):")
  print(f"  {'stage':<13} {'nodes':>10} {'violations':>10} {'seconds':>8} {'µs/node':>8} {'max RSS MB':>10}")
  runs = [(int(x), st) for x in a.chains.split(",") for st in STAGES] + ([(a.tensor_chain, "TENSOR")] if a.tensor_chain else [])
  for n, st in runs:
    r = chain(n, st)
    print(f"  {r['stage']:<13} {r['nodes']:>10,} {r['violations']:>10} {r['seconds']:>8.2f} {r['seconds'] / r['nodes'] * 1e6:>8.2f} "
          f"{r['rss_mb']:>10.0f}{'  ' + str(r['error']) if 'error' in r else ''}", flush=True)

  targets = [("reference", a.kills)]
  try:
    from fuzz.engine.tinygrad_target import unavailable
    if a.tinygrad_kills and unavailable() is None: targets.append(("tinygrad", a.tinygrad_kills))
    elif a.tinygrad_kills: print(f"\n(tinygrad kills skipped: {unavailable()})")
  except Exception as e:
    print(f"\n(tinygrad kills skipped: {e})")
  print("\nSIGKILL of a running campaign (2 workers), the same corpus directory each time:")
  for target, n in targets:
    k = kills(n, target)
    print(f"  --target {target}: {k['kills']} kills (children alive at the kills: {k['children_at_kill']}), orphans after 10 s: {k['orphans']}; "
          f"findings reported: {k['reported']}, lost or unreadable: {k['lost']}; corpus files: {k['corpus_files']}, unreadable: {k['unreadable']}; "
          f"state files that do not parse: {k['bad_state']}{'; first: ' + str(k['first']) if k['first'] else ''}", flush=True)

  h = hang()
  print(f"\nhanging kernels (--seconds {h['budget']}, --case-timeout 3, 1 worker): {h['cases']} cases, stored {h['hangs']}; "
        f"the campaign took {h['took']:.1f} s of its {h['budget']} s budget (bound: budget + 10 s)")


if __name__ == "__main__":
  main()

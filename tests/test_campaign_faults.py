"""A campaign under faults, with real processes and signals: its workers die with it, a hang is killed at its deadline
and the campaign keeps its time budget, nothing found is lost, one campaign per corpus, bad limits are refused."""
from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from fuzz.corpus.store import entries, load_entry
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.generate.kinds import case_for
from tinyspec.lower.base import Pass
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.runtime.procs import cpu_count
from tinyspec.spec import Stage
from tinyspec.uop import Ops, SourceArg, UOp, substitute

ROOT = Path(__file__).resolve().parent.parent
TINYSPEC = str(ROOT / ".venv" / "bin" / "tinyspec")


def _descendants(pid: int) -> set[int]:
  """Every process below pid, from /proc."""
  kids: dict[int, list[int]] = {}
  for d in Path("/proc").iterdir():
    if not d.name.isdigit(): continue
    try: stat = (d / "stat").read_text()
    except OSError: continue
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    kids.setdefault(ppid, []).append(int(d.name))
  out, todo = set(), [pid]
  while todo:
    for k in kids.get(todo.pop(), []):
      if k not in out:
        out.add(k)
        todo.append(k)
  return out


def _alive(pid: int) -> bool:
  try: state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
  except OSError: return False
  return state != "Z"


def _reap(p: subprocess.Popen, kids: set[int]) -> None:
  """Whatever the test's outcome, nothing it started stays: the child, its group, every descendant seen."""
  for pid in (p.pid, *kids):
    for kill in (os.killpg, os.kill):
      try: kill(pid, signal.SIGKILL)
      except OSError: pass
  try: p.wait(10)
  except subprocess.TimeoutExpired: pass


def _wait_for(pred, timeout: float, what: str):
  end = time.monotonic() + timeout
  while time.monotonic() < end:
    if (v := pred()): return v
    time.sleep(0.2)
  raise AssertionError(f"timed out waiting for {what}")


# ---- 1. workers die with their campaign ----
@pytest.mark.parametrize("workers", ["2", "0"])
def test_sigkill_of_the_campaign_leaves_no_process_behind(tmp_path, workers):
  p = subprocess.Popen([TINYSPEC, "fuzz", "--seconds", "600", "--workers", workers, "--backends", "reference,cpu", "--corpus", str(tmp_path)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
  procs: set[int] = set()
  try:
    # workers and the kernel hosts they start (with --workers 0: the campaign's own kernel host)
    want = 4 if workers == "2" else 1
    procs = _wait_for(lambda: (d := _descendants(p.pid)) and len([x for x in d if _alive(x)]) >= want and d, 300, f"{want} child processes")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    _wait_for(lambda: not [q for q in procs if _alive(q)] or None, 10, "the children to die")
  finally:
    _reap(p, procs)


BUSY_SCRIPT = """
import sys, time
from dataclasses import replace
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from tinyspec.lower.base import Pass
from tinyspec.lower.pipeline import PASSES
from tinyspec.spec import Stage
sys.path.insert(0, sys.argv[3])
from test_campaign_faults import _hang_kernels, _with_render
def stall(root, options, trace, tables):
  time.sleep(3600)
passes = [Pass("stall", Stage.TENSOR, Stage.TENSOR, stall), *PASSES] if sys.argv[2] == "pass" else _with_render(_hang_kernels)
run_campaign(CampaignConfig(seconds=600, workers=int(sys.argv[4]), corpus=sys.argv[1], passes=passes, backends=("reference", "cpu"), cc="tcc",
                            case_timeout=600, weights={"kind:kernel": 0.0}))
"""


@pytest.mark.parametrize("busy, workers, want", [("pass", "2", 2), ("kernel", "0", 1), ("kernel", "1", 2)])
def test_sigkill_leaves_no_busy_child_behind(tmp_path, busy, workers, want):
  # the children are not waiting on their pipes (where the campaign's end shows as EOF) but stuck in a pass or in a
  # kernel: only the parent-death signal ends them
  p = subprocess.Popen([sys.executable, "-c", BUSY_SCRIPT, str(tmp_path), busy, str(ROOT / "tests"), workers], cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
  kids: set[int] = set()
  try:
    kids = _wait_for(lambda: (d := {x for x in _descendants(p.pid) if _alive(x)}) and len(d) >= want and d, 300, f"{want} children")
    time.sleep(3)  # well inside the pass or the kernel
    kids = {x for x in _descendants(p.pid) if _alive(x)}
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    _wait_for(lambda: not [k for k in kids if _alive(k)] or None, 10, "the children to die")
  finally:
    _reap(p, kids)


def test_the_worker_count_is_capped(tmp_path, capsys):
  s = run_campaign(CampaignConfig(seconds=120, seed=0, workers=10_000, corpus=str(tmp_path), max_cases=2), io.StringIO())
  assert s.cases == 2
  assert f"fuzz: {min(2, cpu_count())} worker(s), not 10000" in capsys.readouterr().err


# ---- 2. deadlines ----
def _hang_kernels(root: UOp, options, trace, tables) -> UOp:
  """The reference render, except that every C kernel loops forever first."""
  from tinyspec.lower.pipeline import PASSES
  out = PASSES[-1].run(root, options, trace)
  fix = {}
  for u in out.toposort():
    if u.op is Ops.PROGRAM and len(u.src) == 3:
      a = u.src[2].arg
      text = a.text.replace("{\n", "{\n  for (volatile int spin = 1; spin;) {}\n", 1)
      fix[u] = u.replace(src=(u.src[0], u.src[1], UOp(Ops.SOURCE, arg=SourceArg(a.lang, a.name, text))))
  return substitute(out, fix) if fix else out


def _with_render(fn) -> list[Pass]:
  from tinyspec.lower.pipeline import PASSES
  r = PASSES[-1]
  return [*PASSES[:-1], Pass(r.name, r.stage_in, r.stage_out, fn, r.tables)]


def test_a_hanging_kernel_is_found_and_the_campaign_keeps_its_budget(tmp_path):
  # every kernel hangs, so only the budget ends the campaign: 12 s holds the first hang (found at 2 s) and its reduction
  cfg = CampaignConfig(seconds=12, seed=0, workers=1, corpus=str(tmp_path), passes=_with_render(_hang_kernels), backends=("reference", "cpu"),
                       cc="tcc", case_timeout=2, reduce_seconds=4, weights={"kind:kernel": 0.0})
  t = time.monotonic()
  s = run_campaign(cfg, io.StringIO())
  took = time.monotonic() - t
  assert took <= cfg.seconds + 10, took
  hangs = [f for f in s.findings if f.signature[0] == "hang"]
  assert hangs and hangs[0].signature == ("hang", "cpu", "kernel_0"), [f.signature for f in s.findings]
  e = load_entry(hangs[0].path)
  assert e.signature == ("hang", "cpu", "kernel_0") and "did not finish within 2 s" in Path(hangs[0].path).read_text()


def _stall_when(n: int):
  def stall(root: UOp, options, trace, tables) -> UOp:
    if len(root.toposort()) == n: time.sleep(3600)
    return root
  return stall


def test_a_hanging_case_is_killed_and_the_rest_of_its_batch_runs(tmp_path):
  # one case of the first batch of 16 (CPU parity batches cases) hangs in a pass: killed at its own deadline, not
  # the batch's; the other 15 run again and finish
  sizes = [len(case_for(0, i, {"kind:kernel": 0.0}).root.toposort()) for i in range(16)]
  n = next(x for x in sizes if sizes.count(x) == 1)
  from tinyspec.lower.pipeline import PASSES
  passes = [Pass("stall", Stage.TENSOR, Stage.TENSOR, _stall_when(n)), *PASSES]
  out = io.StringIO()
  s = run_campaign(CampaignConfig(seconds=300, seed=0, workers=1, corpus=str(tmp_path), passes=passes, backends=("reference", "cpu"), cc="tcc",
                                  case_timeout=2, reduce_seconds=0, max_cases=16, weights={"kind:kernel": 0.0}), out)
  assert s.cases == 16
  assert [(f.signature, f.case) for f in s.findings] == [(("hang", "stall", "timeout"), sizes.index(n))]
  assert load_entry(s.findings[0].path).case.index == sizes.index(n)


def _hang_on_reduce(root: UOp, options, trace, tables) -> UOp:
  if any(u.op is Ops.REDUCE for u in root.toposort()): time.sleep(3600)
  return root


def test_a_hanging_case_is_reduced_in_a_child_process(tmp_path):
  # case 1 of seed 0 is the first with a REDUCE: its worker is killed at the deadline, the case stored as found, then
  # reduced in a child of the campaign (each candidate in a child of that, killed at its timeout) to a few nodes
  from tinyspec.lower.pipeline import PASSES
  passes = [Pass("stall", Stage.TENSOR, Stage.TENSOR, _hang_on_reduce), *PASSES]
  s = run_campaign(CampaignConfig(seconds=120, seed=0, workers=1, corpus=str(tmp_path), passes=passes, case_timeout=2, reduce_seconds=40,
                                  max_cases=2, weights={"kind:kernel": 0.0}), io.StringIO())
  assert [(f.signature, f.case) for f in s.findings] == [(("hang", "stall", "timeout"), 1)]
  hit = s.findings[0]
  case = load_entry(hit.path).case
  assert any(u.op is Ops.REDUCE for u in case.root.toposort())
  assert hit.nodes == len(case.root.toposort()) < hit.found_nodes, (hit.nodes, hit.found_nodes)


@pytest.mark.parametrize("argv, what", [
  (["--case-timeout", "0"], "--case-timeout must be a finite number above 0"),
  (["--case-timeout", "-1"], "--case-timeout must be a finite number above 0"),
  (["--case-timeout", "nan"], "--case-timeout must be a finite number above 0"),
  (["--seconds", "nan"], "--seconds must be a finite number above 0"),
  (["--seconds", "-5"], "--seconds must be a finite number above 0"),
  (["--hours", "inf"], "--seconds must be a finite number above 0"),
  (["--max-cases", "-1"], "--max-cases must be a whole number"),
  (["--workers", "-2"], "--workers must be"),
  (["--seed", "-1"], "--seed must be"),
])
def test_bad_limits_are_refused_in_one_line(tmp_path, argv, what):
  p = subprocess.run([TINYSPEC, "fuzz", "--corpus", str(tmp_path), *argv], capture_output=True, text=True, timeout=300)
  assert p.returncode == 2 and p.stderr.count("\n") == 1 and what in p.stderr and "Traceback" not in p.stderr, p.stderr


# ---- 3. nothing lost ----
def _fragile(root: UOp, options, trace, tables) -> UOp:
  """Raises on graphs of more than 3 nodes and hangs on smaller ones: the reduction of its crash hangs."""
  if len(root.toposort()) > 3: raise ValueError("fragile")
  time.sleep(3600)
  return root


def test_a_reduction_that_hangs_is_a_finding_and_the_finding_keeps_its_case(tmp_path):
  from tinyspec.lower.pipeline import PASSES
  passes = [Pass("fragile", Stage.TENSOR, Stage.TENSOR, _fragile), *PASSES]
  cfg = CampaignConfig(seconds=300, seed=0, workers=1, corpus=str(tmp_path), passes=passes, case_timeout=2, reduce_seconds=4, max_cases=3,
                       weights={"kind:kernel": 0.0})
  s = run_campaign(cfg, io.StringIO())
  sigs = {f.signature: f for f in s.findings}
  assert set(sigs) == {("crash", "fragile", "ValueError"), ("hang", "reduce", "timeout")}, list(sigs)
  crash = load_entry(sigs[("crash", "fragile", "ValueError")].path)
  assert len(crash.case.root.toposort()) > 3  # stored as found: the reduction never finished
  assert load_entry(sigs[("hang", "reduce", "timeout")].path).case.root is crash.case.root


def _ill_shaped(root: UOp, options, trace, tables) -> UOp:
  """A rule that turns NEG(x) into an ADD of x and a view of another shape: a node with no valid shape."""
  pm = PatternMatcher([("skew", UPat(Ops.NEG, src=(UPat.var("x"),)),
                        lambda x: UOp(Ops.ADD, x.dtype, (x, x.reshape((x.size,)))) if x.shape_ok and x.shape and len(x.shape) > 1 else None)])
  return trace.rewrite(root, pm)


def test_an_ill_shaped_rewrite_is_a_stored_spec_finding(tmp_path):
  passes = [Pass("skew", Stage.TENSOR, Stage.TENSOR, _ill_shaped), *__import__("tinyspec.lower.pipeline", fromlist=["PASSES"]).PASSES]
  s = run_campaign(CampaignConfig(seconds=300, seed=0, workers=1, corpus=str(tmp_path), passes=passes, max_cases=48, reduce_seconds=5,
                                  weights={"kind:kernel": 0.0}), io.StringIO())
  spec = [f for f in s.findings if f.signature[:2] == ("spec", "skew")]
  assert spec and spec[0].signature == ("spec", "skew", "skew"), [f.signature for f in s.findings]
  assert not [f for f in s.findings if f.signature[1] in ("campaign", "check", "blame")]
  assert load_entry(spec[0].path).signature == spec[0].signature


def test_blame_that_raises_is_a_finding_of_its_own(tmp_path):
  from fuzz.check.blame import CtxTrace
  from fuzz.check.oracles import Checker, Config
  from tinyspec.lower.pipeline import PASSES
  def breaks_spec_and_blame(root, options, trace, tables):
    if isinstance(trace, CtxTrace): raise RuntimeError("blame cannot rerun this pass")
    return UOp(Ops.SINK, src=(UOp(Ops.ADD, root.src[0].dtype, (root.src[0],)),)) if root.op is Ops.SINK and root.src else root
  passes = [Pass("bad", Stage.TENSOR, Stage.TENSOR, breaks_spec_and_blame), *PASSES]
  case = case_for(0, 0, {"kind:kernel": 0.0})
  sigs = [f.signature for f in Checker(Config(passes=passes)).check(case)]
  assert sigs[0][:2] == ("spec", "bad") and ("crash", "blame", "RuntimeError@test_campaign_faults.py:breaks_spec_and_blame") in sigs


def test_different_crashes_are_kept_apart(tmp_path):
  def odd(root, options, trace, tables):
    if len(root.toposort()) % 2: os.kill(os.getpid(), signal.SIGSEGV)
    return root
  def even(root, options, trace, tables):
    os.kill(os.getpid(), signal.SIGSEGV)
  from tinyspec.lower.pipeline import PASSES
  passes = [Pass("odd", Stage.TENSOR, Stage.TENSOR, odd), Pass("even", Stage.TENSOR, Stage.TENSOR, even), *PASSES]
  sizes = [len(case_for(0, i, {"kind:kernel": 0.0}).root.toposort()) for i in range(6)]
  assert {x % 2 for x in sizes} == {0, 1}
  s = run_campaign(CampaignConfig(seconds=300, seed=0, workers=1, corpus=str(tmp_path), passes=passes, max_cases=6, reduce_seconds=0,
                                  weights={"kind:kernel": 0.0}), io.StringIO())
  assert sorted(f.signature for f in s.findings) == [("crash", "even", "signal11"), ("crash", "odd", "signal11")]
  assert len(entries(tmp_path)) == 2


def test_the_stored_case_does_not_depend_on_the_worker_count(tmp_path):
  from fuzz.testbed.seeded_bugs import broken_pipeline
  def run(workers: int, d: Path) -> dict:
    cfg = CampaignConfig(seconds=600, seed=1, workers=workers, corpus=str(d), passes=broken_pipeline("mod_off_by_one"), max_cases=48,
                         reduce_seconds=3, weights={"kind:kernel": 0.5})
    s = run_campaign(cfg, io.StringIO())
    return {f.signature: load_entry(f.path).case.index for f in s.findings}
  one, two = run(1, tmp_path / "one"), run(2, tmp_path / "two")
  assert one and one == two


def test_one_campaign_per_corpus_and_stale_temp_files_go(tmp_path):
  stale = tmp_path / ".parity_simplify_0123456789ab.py.k3j_x9.tmp"
  tmp_path.mkdir(exist_ok=True)
  stale.write_text("half a file")
  a = subprocess.Popen([TINYSPEC, "fuzz", "--seconds", "300", "--workers", "0", "--corpus", str(tmp_path)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, start_new_session=True)
  try:
    _wait_for(lambda: (tmp_path / ".fuzz.lock").exists() and (tmp_path / ".fuzz.lock").read_text().strip() == str(a.pid), 120, "the lock")
    _wait_for(lambda: not stale.exists(), 60, "the stale temp file to go")
    b = subprocess.run([TINYSPEC, "fuzz", "--seconds", "5", "--corpus", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert b.returncode == 2 and b.stderr.count("\n") == 1 and f"in use by the campaign of pid {a.pid}" in b.stderr, b.stderr
  finally:
    os.kill(a.pid, signal.SIGINT)
    out, _ = a.communicate(timeout=120)
  assert "(interrupted)" in out
  # once it is gone, the directory is free again
  c = subprocess.run([TINYSPEC, "fuzz", "--seconds", "30", "--max-cases", "1", "--workers", "0", "--corpus", str(tmp_path)],
                     capture_output=True, text=True, timeout=300)
  assert c.returncode in (0, 1), c.stderr


def test_a_state_file_of_the_wrong_types_is_refused_in_one_line(tmp_path):
  (tmp_path / ".fuzz-state-0.json").write_text(json.dumps({"seed": 0, "done_in_epoch": "abc", "cases": "x"}))
  p = subprocess.run([TINYSPEC, "fuzz", "--seconds", "5", "--corpus", str(tmp_path)], capture_output=True, text=True, timeout=300)
  assert p.returncode == 2 and p.stderr.count("\n") == 1 and "is not a campaign's state" in p.stderr and "--fresh" in p.stderr, p.stderr
  q = subprocess.run([TINYSPEC, "fuzz", "--seconds", "30", "--max-cases", "1", "--fresh", "--workers", "0", "--corpus", str(tmp_path)],
                     capture_output=True, text=True, timeout=300)
  assert q.returncode in (0, 1), q.stderr


KILL_SCRIPT = """
import sys
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.testbed.seeded_bugs import broken_pipeline
cfg = CampaignConfig(seconds=600, seed=int(sys.argv[2]), workers=2, corpus=sys.argv[1], passes=broken_pipeline("mod_off_by_one"),
                     reduce_seconds=5, status_every=1.0, weights={"kind:kernel": 0.5})
run_campaign(cfg)
"""


class Lines:
  """The lines a child prints, read as they come (by a thread, so waiting for one has a deadline)."""

  def __init__(self, p: subprocess.Popen):
    self.p, self.got, self.lines = p, queue.Queue(), []
    self.reader = threading.Thread(target=self._read, daemon=True)
    self.reader.start()

  def _read(self) -> None:
    for ln in self.p.stdout: self.got.put(ln)

  def until(self, moment: Callable[[str], bool], timeout: float) -> bool:
    """Read until a line for which moment(line) holds (True), or until timeout seconds passed or the child ended (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
      try: ln = self.got.get(timeout=min(1.0, max(0.0, end - time.monotonic())))
      except queue.Empty:
        if self.p.poll() is not None and self.got.empty(): return False
        continue
      self.lines.append(ln)
      if moment(ln): return True
    return False

  def rest(self) -> list[str]:
    """Every line, once the child is gone."""
    self.reader.join(60)
    while not self.got.empty(): self.lines.append(self.got.get())
    return self.lines


def kill_and_check(corpus: Path, seed: int, moment: Callable[[str], bool], after: float = 0.0) -> tuple[list[str], list[str]]:
  """Run a campaign in a child, SIGKILL it `after` seconds past the first line it prints for which moment(line) holds,
  and check what it reported: (findings it printed, the ones whose entry is missing or unreadable)."""
  p = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(corpus), str(seed)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       cwd=ROOT, start_new_session=True)
  lines = Lines(p)
  kids: set[int] = set()
  try:
    assert lines.until(moment, 300), f"the campaign never reached the moment to kill it: {''.join(lines.lines)[-2000:]}"
    time.sleep(after)
    kids = _descendants(p.pid)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(60)
    out = lines.rest()
    _wait_for(lambda: not [k for k in kids if _alive(k)] or None, 10, "no orphans")
  finally: _reap(p, kids)
  reported = [ln.split(" -> ", 1)[1].strip() for ln in out if ln.startswith("finding: ")]
  lost = []
  for path in reported:
    try: load_entry(path)
    except Exception as e: lost.append(f"{path}: {e}")
  state = corpus / f".fuzz-state-{seed}.json"
  if state.exists(): json.loads(state.read_text())
  return reported, lost


@pytest.mark.slow
def test_sigkill_at_any_moment_loses_no_reported_finding(tmp_path):
  # one corpus, killed in each phase in turn: as the first finding (the rule proven at start) is reported, while the
  # first case finding is being reduced (reduce_seconds=5), once an epoch's state was saved, and in a resumed campaign
  state = tmp_path / ".fuzz-state-3.json"
  moments = [(lambda ln: ln.startswith("finding: prove/"), 0.0),
             (lambda ln: ln.startswith("finding: spec/"), 1.0),
             (lambda ln: state.exists(), 0.0),
             (lambda ln: ln.startswith("fuzz: "), 0.5)]
  total = 0
  for moment, after in moments:
    reported, lost = kill_and_check(tmp_path, 3, moment, after)
    assert lost == []
    total += len(reported)
  assert total > 0 and state.exists()


# ---- 7. every backend with any worker count ----
def _oob_opencl(root: UOp, options, trace, tables) -> UOp:
  """The reference render, except that every OpenCL kernel first writes far outside its output buffer."""
  from tinyspec.lower.pipeline import PASSES
  out = PASSES[-1].run(root, options, trace)
  fix = {}
  for u in out.toposort():
    if u.op is Ops.PROGRAM and len(u.src) == 3 and u.src[2].arg.lang == "opencl":
      a = u.src[2].arg
      text = a.text.replace("{\n", "{\n  data0[1L << 40] = 0;\n", 1)
      fix[u] = u.replace(src=(u.src[0], u.src[1], UOp(Ops.SOURCE, arg=SourceArg(a.lang, a.name, text))))
  return substitute(out, fix) if fix else out


@pytest.mark.parametrize("workers", [1, 2])
def test_opencl_cases_run_with_workers_after_this_process_opened_opencl(tmp_path, workers, opencl):
  from tinyspec.runtime import opencl as ocl
  assert ocl.available()[0]  # this process holds an OpenCL context: forking it used to hang its workers' kernels
  s = run_campaign(CampaignConfig(seconds=600, seed=0, workers=workers, corpus=str(tmp_path), backends=("reference", "opencl"), max_cases=4,
                                  case_timeout=120, weights={"kind:kernel": 0.0}), io.StringIO())
  assert s.cases == 4 and [f for f in s.findings if f.signature[0] in ("hang", "crash")] == []
  assert s.phase.get("run", 0) > 0  # kernels ran


def test_a_crashing_opencl_kernel_is_a_finding_with_workers_0(tmp_path, opencl):
  s = run_campaign(CampaignConfig(seconds=600, seed=0, workers=0, corpus=str(tmp_path), passes=_with_render(_oob_opencl),
                                  backends=("reference", "opencl"), max_cases=3, case_timeout=60, reduce_seconds=0,
                                  weights={"kind:kernel": 0.0}), io.StringIO())
  assert s.cases == 3  # this process survived every one
  crashes = [f for f in s.findings if f.signature[:2] == ("crash", "opencl")]
  assert crashes and crashes[0].signature[2].startswith("signal"), [f.signature for f in s.findings]


SWALLOW_SCRIPT = """
import sys, time
from dataclasses import replace
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from tinyspec.lower.pipeline import PASSES
# a pass that loses ^C as a weakref callback does (Python drops an exception raised inside one): the first time it
# runs it says so and sleeps until the interrupt comes, which then goes nowhere
def swallowing(p):
  first = [True]
  def run(root, options, trace, tables):
    if first[0]:
      first[0] = False
      try:  # the interrupt may come as soon as the line is out: inside the try, so it is swallowed wherever it lands
        print("asleep", flush=True)
        time.sleep(100)
      except KeyboardInterrupt: print("swallowed", flush=True)
    return p.fn(root, options, trace, tables)
  return replace(p, fn=run)
passes = [swallowing(p) if p.name == "callify" else p for p in PASSES]
print("started", flush=True)
s = run_campaign(CampaignConfig(seconds=600, seed=0, workers=0, corpus=sys.argv[1], passes=passes, backends=("reference",)))
print("ended interrupted" if s.interrupted else "ended finished", flush=True)
"""


def test_an_interrupt_that_something_swallows_still_ends_the_campaign(tmp_path):
  p = subprocess.Popen([sys.executable, "-c", SWALLOW_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       cwd=ROOT, start_new_session=True)
  try:
    assert p.stdout.readline().strip() == "started"
    assert p.stdout.readline().strip() == "asleep"  # the interrupt lands inside the swallowing pass, not before it
    os.kill(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=120)
  finally:
    if p.poll() is None: p.kill()
  assert "swallowed" in out and "ended interrupted" in out, out[-2000:]

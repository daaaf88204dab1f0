"""A campaign on a real Dask cluster (a local scheduler and two worker processes): a seeded bug is found, reduced and
stored as a local campaign of the same seed stores it; a worker killed in the middle of a batch loses no case and no
finding; a scheduler that cannot be reached, `distributed` missing, and a worker with other code are errors that say
what to do."""
from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from fuzz.engine import dask_runner  # noqa: E402
from fuzz.engine.campaign import run_campaign  # noqa: E402
from fuzz.engine.config import CampaignConfig, ConfigError  # noqa: E402
from fuzz.testbed.seeded_bugs import broken_pipeline  # noqa: E402
from tinyspec.cli import main  # noqa: E402
from tinyspec.lower.base import Pass  # noqa: E402
from tinyspec.spec import Stage  # noqa: E402

SEED, CASES, BUG = 0, 24, "pad_gate_dropped"  # the bug is found at case 9 of seed 0 with these weights
WEIGHTS = {"kind:kernel": 0.0, "kind:multi": 0.0, "value:edge": 0.0, "value:special": 0.0}  # as tests/test_fuzz_finds_bugs.py
DIE_AT = 12  # the pass run (of the worker process) at which the one worker dies


class DieOnce:
  """A pass that changes nothing, except that the first process to reach its DIE_AT-th run while `marker` does not exist
  writes its pid there and kills itself: a worker that dies in the middle of a batch, once in the whole cluster."""

  def __init__(self, marker: str):
    self.marker, self.runs = marker, 0

  def __call__(self, root, options, trace, tables):
    self.runs += 1
    if self.runs >= DIE_AT and not os.path.exists(self.marker):
      try: fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
      except FileExistsError: return root
      os.write(fd, str(os.getpid()).encode())
      os.close(fd)
      os.kill(os.getpid(), 9)
    return root


def _config(corpus: Path, marker: Path, scheduler: str | None = None) -> CampaignConfig:
  # the cpu backend makes batches of several cases (their kernels share a compiler run)
  passes = [Pass("die_once", Stage.TENSOR, Stage.TENSOR, DieOnce(str(marker))), *broken_pipeline(BUG)]
  return CampaignConfig(seconds=300, seed=SEED, workers=0, corpus=str(corpus), max_cases=CASES, passes=passes, weights=WEIGHTS,
                        backends=("reference", "cpu"), cc="tcc", batch=4, reduce_seconds=120, prove_changed=False, scheduler=scheduler)


def _state(d: Path) -> dict:
  return json.loads((d / f".fuzz-state-{SEED}.json").read_text())


def _entries(d: Path) -> dict[str, str]:
  """Each entry's text, but for the time it was found."""
  return {p.name: re.sub(r", found [^\n]* UTC", "", p.read_text()) for p in sorted(d.glob("*.py"))}


@pytest.fixture(scope="module")
def cluster():
  with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as c:
    yield c


@pytest.fixture(scope="module")
def local(tmp_path_factory):
  """The same campaign with no cluster: its summary and corpus directory."""
  d = tmp_path_factory.mktemp("local")
  marker = d / "no-death"
  marker.write_text("")  # nobody dies here
  return run_campaign(_config(d / "corpus", marker), io.StringIO()), d / "corpus"


def _same_as_local(summary, corpus: Path, local) -> None:
  want, want_dir = local
  assert [(f.signature, f.case, f.nodes) for f in want.findings] == [(("parity", "rangeify", "index_through_pad"), 9, 4)]
  assert [(f.signature, f.case, f.nodes) for f in summary.findings] == [(f.signature, f.case, f.nodes) for f in want.findings]
  assert _entries(corpus) == _entries(want_dir)  # the same file, reduced to the same case
  got, exp = _state(corpus), _state(want_dir)
  # every case ran, exactly once in the count, and saw what it saw locally
  assert summary.cases == want.cases == got["cases"] == CASES
  assert got["done_in_epoch"] == exp["done_in_epoch"] == list(range(CASES))
  assert got["epoch_results"] == exp["epoch_results"] and got["weights"] == exp["weights"]


def test_a_seeded_bug_on_the_cluster_is_stored_as_locally(cluster, local, tmp_path):
  marker = tmp_path / "no-death"
  marker.write_text("")
  out = io.StringIO()
  s = run_campaign(_config(tmp_path / "corpus", marker, cluster.scheduler_address), out)
  _same_as_local(s, tmp_path / "corpus", local)
  assert "finding: parity/rangeify/index_through_pad" in out.getvalue()


def test_a_worker_killed_in_a_batch_loses_no_case_and_no_finding(cluster, local, tmp_path):
  with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
    worker_pids = set(client.run(os.getpid).values())
  marker = tmp_path / "died"
  s = run_campaign(_config(tmp_path / "corpus", marker, cluster.scheduler_address), io.StringIO())
  assert marker.exists(), "no worker died: the test tested nothing"
  assert int(marker.read_text()) in worker_pids  # a worker of the cluster, in the middle of its batch
  _same_as_local(s, tmp_path / "corpus", local)
  assert not any(f.signature[0] == "crash" for f in s.findings)  # its batch ran again elsewhere: no case is to blame


def test_the_cli_flag_runs_a_campaign_on_the_cluster(cluster, tmp_path, capsys):
  code = main(["fuzz", "--seconds", "120", "--max-cases", "6", "--seed", "3", "--backends", "reference", "--corpus", str(tmp_path),
               "--scheduler", cluster.scheduler_address])
  assert code == 0, capsys.readouterr().err
  state = json.loads((tmp_path / ".fuzz-state-3.json").read_text())
  assert state["cases"] == 6 and state["done_in_epoch"] == list(range(6))


class HangOnce(DieOnce):
  """A pass that changes nothing, except that the first process to reach its DIE_AT-th run while `marker` does not
  exist writes its pid there and never returns: a case that hangs in Python on a worker, once in the whole cluster."""

  def __call__(self, root, options, trace, tables):
    self.runs += 1
    if self.runs >= DIE_AT and not os.path.exists(self.marker):
      try: fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
      except FileExistsError: return root
      os.write(fd, str(os.getpid()).encode())
      os.close(fd)
      threading.Event().wait()  # forever
    return root


def test_a_case_that_hangs_on_a_worker_is_a_hang_finding_and_the_worker_is_restarted(cluster, tmp_path):
  marker = tmp_path / "hung"
  passes = [Pass("hang_once", Stage.TENSOR, Stage.TENSOR, HangOnce(str(marker))), *broken_pipeline(BUG)]
  cfg = CampaignConfig(seconds=300, seed=SEED, corpus=str(tmp_path / "corpus"), max_cases=CASES, passes=passes, weights=WEIGHTS,
                       backends=("reference", "cpu"), cc="tcc", batch=4, reduce_seconds=0, prove_changed=False, case_timeout=2.0,
                       scheduler=cluster.scheduler_address)
  s = run_campaign(cfg, io.StringIO())
  assert marker.exists(), "no case hung: the test tested nothing"
  hangs = [f for f in s.findings if f.signature[0] == "hang"]
  assert [f.signature for f in hangs] == [("hang", "hang_once", "timeout")]
  assert "hung in hang_once (killed after 2 s)" in Path(hangs[0].path).read_text()
  # the seeded bug is still found, and every case ran exactly once in the count, the hung one included
  assert ("parity", "rangeify", "index_through_pad") in {f.signature for f in s.findings}
  assert s.cases == CASES and _state(tmp_path / "corpus")["done_in_epoch"] == list(range(CASES))
  with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
    client.wait_for_workers(2, timeout=60)
    pids = set(client.run(os.getpid).values())
  assert len(pids) == 2 and int(marker.read_text()) not in pids  # the hung process was replaced


# the campaign's process: the cluster's worker processes, started later, inherit this and have other pids
os.environ.setdefault("TINYSPEC_TEST_CAMPAIGN_PID", str(os.getpid()))


def _die_on_a_worker(root, options, trace, tables):
  """A pass that kills every Dask worker process that runs it (and nothing else: the campaign draws the case again)."""
  if os.getpid() == int(os.environ["TINYSPEC_TEST_CAMPAIGN_PID"]): return root
  os.kill(os.getpid(), 9)


def _allowed_failures(dask_scheduler, n: int) -> int:
  old, dask_scheduler.allowed_failures = dask_scheduler.allowed_failures, n
  return old


def test_a_case_that_kills_every_worker_is_a_crash_finding(cluster, tmp_path):
  passes = [Pass("die", Stage.TENSOR, Stage.TENSOR, _die_on_a_worker), *broken_pipeline(BUG)]
  cfg = CampaignConfig(seconds=120, seed=SEED, corpus=str(tmp_path), max_cases=2, passes=passes, weights=WEIGHTS, backends=("reference", "cpu"),
                       cc="tcc", batch=2, reduce_seconds=0, prove_changed=False, scheduler=cluster.scheduler_address)
  with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
    # no second chance on the scheduler: the first death of a batch's worker gives the batch up (KilledWorker)
    old = client.run_on_scheduler(_allowed_failures, n=0)
    try: s = run_campaign(cfg, io.StringIO())
    finally: client.run_on_scheduler(_allowed_failures, n=old)
  # the batch of both cases was given up, each case ran alone, and each killed its worker again
  assert s.cases == 2 and _state(tmp_path)["done_in_epoch"] == [0, 1]
  assert [(f.signature, f.case) for f in s.findings] == [(("crash", "check", "killed-worker"), 0)]
  assert "died in check (killed-worker)" in Path(s.findings[0].path).read_text()


def test_an_unreachable_scheduler_is_named_with_how_to_start_one(tmp_path, capsys, monkeypatch):
  monkeypatch.setattr(dask_runner, "CONNECT_SECONDS", 1.0)
  code = main(["fuzz", "--seconds", "5", "--corpus", str(tmp_path), "--backends", "reference", "--scheduler", "tcp://127.0.0.1:9"])
  err = capsys.readouterr().err
  assert code == 2
  assert "tcp://127.0.0.1:9" in err and "dask scheduler" in err and "dask worker" in err
  assert len(err.strip().splitlines()) == 1


def test_the_flag_is_in_the_help(capsys):
  assert main(["fuzz", "--help"]) == 0
  assert "--scheduler ADDRESS" in capsys.readouterr().out


def test_without_distributed_the_extra_is_named(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, "distributed", None)  # what `import distributed` sees where it is not installed
  with pytest.raises(ConfigError, match=r"the dask extra"):
    run_campaign(CampaignConfig(seconds=5, corpus=str(tmp_path), backends=("reference",), scheduler="tcp://127.0.0.1:8786"), io.StringIO())


def test_a_worker_with_other_code_refuses_its_batch():
  with pytest.raises(dask_runner.CodeMismatch, match="same checkout"):
    dask_runner.run_batch_task("t", "not-the-sources", b"", frozenset(), [0], {}, {}, 0.0)

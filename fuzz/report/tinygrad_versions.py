"""Standalone scripts (fuzz.report.standalone) run under each tinygrad version, to record where each reproduces.

A version is the installed tinygrad (named by its distribution's version, e.g. 0.14.0) or a snapshot of tinygrad's
repository unpacked from `tinygrad-<name>.tar.gz` into a folder put first on PYTHONPATH (named by the tarball, e.g.
a9069c17). Each script runs in a process of its own (tinygrad reads DEV and NOOPT when it is imported, and a script
sets them first: fuzz.report.script_host forks it from a warm process and applies them), with no PYTHONPATH but the
snapshot's, so a script that needed tinyspec would fail to import it.
A script reproduces when it ends with an AssertionError, passes when it exits 0; anything else (a script that cannot
import what it needs, a tinygrad that kills it) is neither, and says what happened.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

SNAPSHOT_TARBALL = Path("tinygrad") / "tinygrad-a9069c17.tar.gz"   # under the shared folder beside the repository
HOST = Path(__file__).with_name("script_host.py")  # run by source (python -c), so nothing of tinyspec is importable


@dataclass(frozen=True)
class Version:
  name: str
  path: Path | None = None  # put first on PYTHONPATH; None: the installed tinygrad


@dataclass(frozen=True)
class Outcome:
  version: str
  script: Path
  status: int           # the exit status; negative: killed by that signal
  error: str            # the exception the script ended with ("" when it exited 0)
  seconds: float

  @property
  def reproduces(self) -> bool | None:
    """True: it failed its assertion; False: it passed; None: neither (the script broke or was killed)."""
    if self.status == 0: return False
    return True if self.status == 1 and self.error.startswith("AssertionError") else None

  def describe(self) -> str:
    what = {True: "reproduces", False: "passes", None: "broke"}[self.reproduces]
    return f"{self.script.name} on {self.version}: {what} (exit {self.status}, {self.seconds:.1f} s){': ' + self.error if self.error else ''}"


def installed_version() -> Version:
  """The tinygrad this Python has installed, named by its distribution's version."""
  return Version(importlib.metadata.version("tinygrad"))


def snapshot_version(tarball: Path, into: Path) -> Version:
  """A tinygrad snapshot unpacked from tarball (`tinygrad-<name>.tar.gz`, holding `tinygrad/`) into the folder into."""
  name = tarball.name.removesuffix(".tar.gz").removeprefix("tinygrad-")
  into.mkdir(parents=True, exist_ok=True)
  with tarfile.open(tarball) as tf: tf.extractall(into, filter="data")
  if not (into / "tinygrad" / "__init__.py").is_file(): raise FileNotFoundError(f"{tarball} holds no tinygrad/__init__.py")
  return Version(name, into)


def run_scripts(scripts: Sequence[Path], versions: Sequence[Version], hosts: int = 1, python: str = sys.executable) -> list[Outcome]:
  """Every script under every version, in the order (version, script): each version's scripts split among `hosts`
  processes of fuzz.report.script_host (each script in a forked child of a warm process), all hosts at once."""
  jobs = [(v, list(scripts[k::hosts])) for v in versions for k in range(max(1, hosts)) if scripts[k::hosts]]
  with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
    done = list(pool.map(lambda job: _host(job[0], job[1], python), jobs))
  order = {(v.name, s): i for i, (v, s) in enumerate((v, s) for v in versions for s in scripts)}
  return sorted((o for outs in done for o in outs), key=lambda o: order[(o.version, o.script)])


def _host(version: Version, scripts: list[Path], python: str) -> list[Outcome]:
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  if version.path is not None: env["PYTHONPATH"] = str(version.path)
  cwd = scripts[0].parent if scripts else Path.cwd()
  p = subprocess.run([python, "-c", HOST.read_text(encoding="utf-8"), *map(str, scripts)], env=env, cwd=cwd, capture_output=True, text=True)
  by_path = {str(s): s for s in scripts}
  outs = []
  for line in p.stdout.splitlines():
    r = json.loads(line)
    outs.append(Outcome(version.name, by_path[r["script"]], r["status"], r["error"].splitlines()[0][:500] if r["error"] else "", r["seconds"]))
  if len(outs) != len(scripts):
    raise RuntimeError(f"the script host under tinygrad {version.name} ended (exit {p.returncode}) after {len(outs)} of {len(scripts)} "
                       f"scripts: {p.stderr.strip()[-500:]}")
  return outs

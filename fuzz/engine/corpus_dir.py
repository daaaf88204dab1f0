"""A campaign's hold on its corpus directory: one campaign at a time, and no debris of interrupted writes.

The campaign owns its corpus directory while it runs (the state file, the entries it writes): it holds an exclusive
lock (fcntl.flock) on DIR/.fuzz.lock, which names its PID. A second campaign on the same directory is refused
(CorpusBusy names the holder) instead of overwriting the first one's state. The lock goes with the process, however
it ends, SIGKILL included: the kernel drops it. Holding it, the campaign removes the temp files atomic writes leave
when a process is killed between writing and renaming (tinyspec.fileio.atomic_write's `.NAME.*.tmp`).
"""
from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from typing import IO

from tinyspec.runtime import procs

LOCK_NAME = ".fuzz.lock"
TEMP_FILE = re.compile(r"^\..+\.[A-Za-z0-9_]+\.tmp$")  # tempfile.mkstemp(prefix=".NAME.", suffix=".tmp")


class CorpusBusy(RuntimeError):
  """Another campaign holds the corpus directory."""
  def __init__(self, corpus: Path, pid: int | None):
    self.pid = pid
    who = f"the campaign of pid {pid}" if pid else "another campaign"
    super().__init__(f"corpus {corpus} is in use by {who}; wait for it to end or give this campaign another --corpus")


class CorpusLock:
  """The exclusive lock of a corpus directory, held from acquire() to release()."""

  def __init__(self, corpus: str | os.PathLike):
    self.dir = Path(corpus)
    self.path = self.dir / LOCK_NAME
    self.file: IO[str] | None = None

  def acquire(self) -> CorpusLock:
    f = open(self.path, "a+")
    try: fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
      f.seek(0)
      text = f.read().strip()
      f.close()
      raise CorpusBusy(self.dir, int(text) if text.isdigit() else None) from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    self.file = procs.parent_only(f)  # a child's copy would keep the lock after this process dies
    return self

  def release(self) -> None:
    if self.file is None: return
    procs.forget(self.file)
    try: self.file.close()  # closing drops the lock; the file stays (removing it would race with a new holder)
    finally: self.file = None


def remove_stale_temp_files(*dirs: str | os.PathLike | None) -> list[Path]:
  """Remove the temp files interrupted atomic writes left in dirs (call it holding the corpus lock); those removed."""
  out = []
  for d in dirs:
    if d is None or not Path(d).is_dir(): continue
    for p in Path(d).iterdir():
      if TEMP_FILE.match(p.name) and p.is_file():
        try:
          p.unlink()
          out.append(p)
        except OSError:
          pass
  return out

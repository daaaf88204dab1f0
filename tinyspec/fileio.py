"""Writing files so that a reader, or a crash at any moment, sees the old file or the new one, never a part."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | os.PathLike, data: str | bytes, mode: int = 0o644) -> Path:
  """Write data to path through a temp file in the same directory, fsync, then rename; the file gets `mode`
  (a temp file is created 0600, which would leave corpus entries and report pages unreadable to others)."""
  p = Path(path)
  p.parent.mkdir(parents=True, exist_ok=True)
  fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
  try:
    with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w", **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, p)
  except BaseException:
    Path(tmp).unlink(missing_ok=True)
    raise
  try:  # the rename itself survives a power cut only once the directory is synced
    dfd = os.open(p.parent, os.O_RDONLY)
    try: os.fsync(dfd)
    finally: os.close(dfd)
  except OSError: pass
  return p

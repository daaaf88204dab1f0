"""The version guard: the bridge wraps private functions of one tinygrad release, so it refuses any other."""
from __future__ import annotations

import importlib.metadata

REQUIRED = "0.14.0"


class TinygradVersionError(ImportError):
  """tinygrad is missing or not the release the bridge is written against."""


def installed_version() -> str | None:
  try: return importlib.metadata.version("tinygrad")
  except importlib.metadata.PackageNotFoundError: return None


def version_problem(found: str | None) -> str | None:
  """The one-line complaint about tinygrad version `found` (None: not installed), or None when it is REQUIRED."""
  if found == REQUIRED: return None
  what = "no tinygrad installed" if found is None else f"tinygrad {found}"
  return f"tinyspec.bridge.tinygrad requires tinygrad=={REQUIRED}, found {what} (pip install 'tinyspec[tinygrad]')"


def require_tinygrad() -> None:
  """Raise TinygradVersionError unless the installed tinygrad is REQUIRED."""
  if (msg := version_problem(installed_version())) is not None: raise TinygradVersionError(msg)

"""Load a graph from a Python file (an example or a corpus entry) that defines `graph()`."""
from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from tinyspec.uop import UOp


class InputError(Exception):
  """A FILE that cannot be read as a graph; the message names the file and what was wrong."""


def load_module(path: str | Path) -> dict[str, Any]:
  p = Path(path)
  if not p.is_file(): raise InputError(f"{p}: no such file")
  try: return runpy.run_path(str(p))
  except Exception as e: raise InputError(f"{p}: cannot execute: {type(e).__name__}: {e}") from e


def load_graph(path: str | Path) -> UOp:
  """The UOp returned by the file's `graph()`."""
  ns = load_module(path)
  fn = ns.get("graph")
  if not callable(fn): raise InputError(f"{path}: defines no graph() function")
  try: root = fn()
  except Exception as e: raise InputError(f"{path}: graph() raised {type(e).__name__}: {e}") from e
  if not isinstance(root, UOp): raise InputError(f"{path}: graph() returned {type(root).__name__}, not a UOp")
  return root

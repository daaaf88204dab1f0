"""Load a graph from a Python file (an example or a corpus entry) that defines `graph()`."""
from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from tinyspec.uop import UOp


class InputError(Exception):
  """A FILE that cannot be read as a graph; the message names the file and what was wrong."""


def load_module(path: str | Path) -> dict[str, Any]:
  """The namespace of the file at path, executed once."""
  p = Path(path)
  if not p.is_file(): raise InputError(f"{p}: no such file")
  try: return runpy.run_path(str(p))
  except Exception as e: raise InputError(f"{p}: cannot execute: {type(e).__name__}: {e}") from e


def load_graph(path: str | Path) -> UOp:
  """The UOp returned by the file's `graph()`."""
  return graph_of(load_module(path), path)


def graph_of(ns: dict[str, Any], path: str | Path) -> UOp:
  """The UOp returned by `graph()` of the namespace of the file at path (load_module's result)."""
  fn = ns.get("graph")
  if not callable(fn): raise InputError(f"{path}: defines no graph() function")
  try: root = fn()
  except Exception as e: raise InputError(f"{path}: graph() raised {type(e).__name__}: {e}") from e
  if not isinstance(root, UOp): raise InputError(f"{path}: graph() returned {type(root).__name__}, not a UOp")
  return root

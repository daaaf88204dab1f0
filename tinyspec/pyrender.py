"""Render a graph as Python source whose execution rebuilds the identical (interned) object."""
from __future__ import annotations

import dataclasses
import math
from enum import Enum
from typing import Any

from tinyspec.dtype import DType
from tinyspec.uop import UOp

HEADER = ("from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg\n"
          "from tinyspec.dtype import dtypes\n")


def arg_source(a: Any) -> str:
  """A Python expression for an arg value; every arg form of the IR has one."""
  if a is None or isinstance(a, (bool, int, str)): return repr(a)
  if isinstance(a, float):
    if math.isnan(a): return "float('nan')"
    if math.isinf(a): return "float('inf')" if a > 0 else "float('-inf')"
    return repr(a)
  if isinstance(a, (DType, Enum)): return repr(a)
  if isinstance(a, tuple): return "(" + "".join(arg_source(x) + ", " for x in a) + ")"
  if dataclasses.is_dataclass(a):
    fields = ", ".join(f"{f.name}={arg_source(getattr(a, f.name))}" for f in dataclasses.fields(a))
    return f"{type(a).__name__}({fields})"
  raise TypeError(f"arg {a!r} of type {type(a).__name__} has no source form")


def render_body(root: UOp, indent: str = "  ") -> list[str]:
  """Assignment lines n0 = UOp(...), ..., ending with `return nK`."""
  nodes = root.toposort()
  name = {u: f"n{i}" for i, u in enumerate(nodes)}
  lines = []
  for u in nodes:
    src = "(" + "".join(name[s] + ", " for s in u.src) + ")"
    tag = "" if u.tag is None else f", tag={arg_source(u.tag)}"
    lines.append(f"{indent}{name[u]} = UOp({u.op!r}, {u.dtype!r}, {src}, {arg_source(u.arg)}{tag})")
  lines.append(f"{indent}return {name[root]}")
  return lines


def render_module(root: UOp, fname: str = "graph") -> str:
  """A module defining `fname()` that returns the rebuilt graph."""
  return HEADER + f"\n\ndef {fname}():\n" + "\n".join(render_body(root)) + "\n"

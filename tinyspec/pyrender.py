"""Render a graph as Python source whose execution rebuilds the identical (interned) object.

What it writes is exactly the grammar tinyspec.pyread reads back without executing anything: UOp constructions over
Ops members and the IR's dtypes, args of literals, the IR's enums and arg classes. A value outside it is a TypeError
here, never text the reader would refuse."""
from __future__ import annotations

import dataclasses
import math
from enum import Enum
from typing import Any

from tinyspec.dtype import DType, dtypes
from tinyspec.uop import AddrSpace, AxisType, BufferArg, Ops, ParamArg, RangeArg, SourceArg, UOp, VarArg

HEADER = ("from tinyspec.uop import UOp, Ops, AddrSpace, AxisType, ParamArg, BufferArg, RangeArg, SourceArg, VarArg\n"
          "from tinyspec.dtype import dtypes\n")


def arg_source(a: Any) -> str:
  """A Python expression for an arg value in the grammar tinyspec.pyread reads back; TypeError for a value outside it
  (a forged dtype, an enum or dataclass the IR does not define, an int too long to write)."""
  if a is None or isinstance(a, (bool, str)): return repr(a)
  if isinstance(a, int):
    if type(a) is not int: raise TypeError(f"arg of type {type(a).__name__} (an int subclass) has no source form")
    try: return repr(a)
    except ValueError: raise TypeError(f"an int of {a.bit_length()} bits is too long to write as source") from None
  if isinstance(a, float):
    if type(a) is not float: raise TypeError(f"arg of type {type(a).__name__} (a float subclass) has no source form")
    if math.isnan(a): return "float('nan')"
    if math.isinf(a): return "float('inf')" if a > 0 else "float('-inf')"
    return repr(a)
  if isinstance(a, DType):
    if dtypes.by_name.get(a.name) is not a: raise TypeError(f"dtype {a.name!r} is not one of the IR's dtypes")
    return f"dtypes.{a.name}"
  if isinstance(a, Enum):
    if type(a) not in ENUM_TYPES: raise TypeError(f"enum {type(a).__name__} is not one of the IR's ({', '.join(t.__name__ for t in ENUM_TYPES)})")
    return f"{type(a).__name__}.{a.name}"
  if type(a) is tuple: return "(" + "".join(arg_source(x) + ", " for x in a) + ")"
  if type(a) in ARG_TYPES:
    # a field left at a default of None (ParamArg.image of flat storage) is not written: sources written before it existed stay as they are
    fields = ", ".join(f"{f.name}={arg_source(getattr(a, f.name))}" for f in dataclasses.fields(a)
                       if not (f.default is None and getattr(a, f.name) is None))
    return f"{type(a).__name__}({fields})"
  raise TypeError(f"arg of type {type(a).__name__} has no source form")


def literal_source(x: Any) -> str:
  """A Python literal for a constant of a module pyrender writes (a corpus entry's SIGNATURE, OPTIONS, ...): None, bools,
  ints, floats, strings and tuples, lists and dicts of them. TypeError for anything else."""
  if x is None or isinstance(x, (bool, int, float, str)) and type(x) in (bool, int, float, str): return arg_source(x)
  if type(x) is tuple: return arg_source(tuple()) if not x else "(" + "".join(literal_source(v) + ", " for v in x) + ")"
  if type(x) is list: return "[" + ", ".join(literal_source(v) for v in x) + "]"
  if type(x) is dict: return "{" + ", ".join(f"{literal_source(k)}: {literal_source(v)}" for k, v in x.items()) + "}"
  raise TypeError(f"a {type(x).__name__} has no literal form")


ENUM_TYPES: tuple[type[Enum], ...] = (Ops, AddrSpace, AxisType)
ARG_TYPES: tuple[type, ...] = (ParamArg, BufferArg, RangeArg, SourceArg, VarArg)


def render_body(root: UOp, indent: str = "  ") -> list[str]:
  """Assignment lines n0 = UOp(...), ..., ending with `return nK`. TypeError for a node outside the grammar."""
  nodes = root.toposort()
  name = {u: f"n{i}" for i, u in enumerate(nodes)}
  lines = []
  for u in nodes:
    if type(u.op) is not Ops: raise TypeError(f"a node's op {type(u.op).__name__} is not one of Ops")
    if not isinstance(u.dtype, DType): raise TypeError(f"a {u.op.name} node's dtype is a {type(u.dtype).__name__}, not a DType")
    if not all(type(s) is UOp for s in u.src): raise TypeError(f"a {u.op.name} node has a source that is not a UOp")
    src = "(" + "".join(name[s] + ", " for s in u.src) + ")"
    tag = "" if u.tag is None else f", tag={arg_source(u.tag)}"
    lines.append(f"{indent}{name[u]} = UOp(Ops.{u.op.name}, {arg_source(u.dtype)}, {src}, {arg_source(u.arg)}{tag})")
  lines.append(f"{indent}return {name[root]}")
  return lines


def render_module(root: UOp, fname: str = "graph") -> str:
  """A module defining `fname()` that returns the rebuilt graph."""
  return HEADER + f"\n\ndef {fname}():\n" + "\n".join(render_body(root)) + "\n"

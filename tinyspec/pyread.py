"""Read graphs written by tinyspec.pyrender (and corpus entries) back WITHOUT executing them.

The text is parsed with `ast` and only this grammar is accepted; anything else is a ReadError naming the line:

  module    := docstring? import* (NAME = literal | def NAME(): body)*
  import    := `import numpy as np` | `from tinyspec.uop import <the pyrender header's names>` | `from tinyspec.dtype import dtypes`
  body      := (NAME = uop)* return (NAME | uop)                                     a graph, nodes in toposort order
             | return {int: np.array([number, ...], dtype='<numpy name>'), ...}      its inputs
             | return literal
  uop       := UOp(op[, dtype[, (NAME, ...)[, arg]]][, tag=arg])   (or those as keywords; NAMEs made earlier)
  op        := Ops.<member>        dtype := dtypes.<name>        (only the registered singletons: no forged dtype)
  arg       := literal | Ops.X | AddrSpace.X | AxisType.X | dtypes.X | (arg, ...)
             | ParamArg(...) | BufferArg(...) | RangeArg(...) | SourceArg(...) | VarArg(...)   keywords or positions, arg values
  literal   := None | True | False | int | float | str | -number | float('nan'|'inf'|'-inf') | (literal, ...) | [literal, ...]
             | {literal: literal, ...}

A name in a graph's body refers to a node assigned earlier in the same function; nothing else is looked up, called,
imported or run. SourceArg (rendered kernel text, which a backend would compile) is refused unless the caller asks
for it: a corpus entry holds graphs to check, never code to build.
"""
from __future__ import annotations

import ast
import dataclasses
import math
from enum import Enum
from typing import Any

import numpy as np

from tinyspec.dtype import DType, dtypes
from tinyspec.loadfile import InputError
from tinyspec.uop import AddrSpace, AxisType, BufferArg, Ops, ParamArg, RangeArg, SourceArg, UOp, VarArg

# the names pyrender's HEADER imports, and the classes an arg may be built from
ARG_CLASSES: dict[str, type] = {"ParamArg": ParamArg, "BufferArg": BufferArg, "RangeArg": RangeArg, "SourceArg": SourceArg, "VarArg": VarArg}
ENUMS: dict[str, type[Enum]] = {"Ops": Ops, "AddrSpace": AddrSpace, "AxisType": AxisType}
IMPORTS: dict[str, frozenset[str]] = {"tinyspec.uop": frozenset({"UOp", *ENUMS, *ARG_CLASSES}), "tinyspec.dtype": frozenset({"dtypes"})}
# numpy dtypes an inputs() array may name: the value dtypes of the IR
ARRAY_DTYPES = frozenset(d.np.name for d in dtypes.all if d.kind != "v")
SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}


class ReadError(InputError):
  """Text outside the grammar: the message names the file and line and what was found."""


class _Reader:
  def __init__(self, filename: str, allow_source: bool):
    self.filename, self.allow_source = filename, allow_source

  def error(self, node: ast.AST | None, what: str) -> ReadError:
    line = getattr(node, "lineno", None)
    return ReadError(f"{self.filename}:{line}: {what}" if line is not None else f"{self.filename}: {what}")

  # ---- literals ----
  def literal(self, n: ast.expr) -> Any:
    if isinstance(n, ast.Constant):
      if n.value is None or isinstance(n.value, (bool, int, float, str)): return n.value
      raise self.error(n, f"a {type(n.value).__name__} constant is not part of the grammar")
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)) and isinstance(n.operand, ast.Constant) \
        and type(n.operand.value) in (int, float):
      return -n.operand.value if isinstance(n.op, ast.USub) else n.operand.value
    if isinstance(n, ast.Tuple): return tuple(self.literal(x) for x in n.elts)
    if isinstance(n, ast.List): return [self.literal(x) for x in n.elts]
    if isinstance(n, ast.Dict):
      if any(k is None for k in n.keys): raise self.error(n, "a ** in a dict is not part of the grammar")
      return {self.hashable(k): self.literal(v) for k, v in zip(n.keys, n.values)}
    if (f := self.special_float(n)) is not None: return f
    raise self.error(n, f"{self.what(n)} is not a literal")

  def hashable(self, n: ast.expr) -> Any:
    k = self.literal(n)
    try: hash(k)
    except TypeError: raise self.error(n, f"a {type(k).__name__} cannot be a dict key") from None
    return k

  def special_float(self, n: ast.expr) -> float | None:
    """float('nan'), float('inf'), float('-inf'); None when n is no call of float."""
    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "float"): return None
    if n.keywords or len(n.args) != 1 or not isinstance(n.args[0], ast.Constant) or n.args[0].value not in SPECIAL_FLOATS:
      raise self.error(n, "float(...) takes one of 'nan', 'inf', '-inf'")
    return SPECIAL_FLOATS[n.args[0].value]

  # ---- args of UOps ----
  def arg(self, n: ast.expr) -> Any:
    if isinstance(n, ast.Attribute): return self.attribute(n)
    if isinstance(n, ast.Tuple): return tuple(self.arg(x) for x in n.elts)
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ARG_CLASSES: return self.arg_class(n)
    if isinstance(n, (ast.List, ast.Dict)): raise self.error(n, f"a {type(n).__name__.lower()} is not a UOp arg (args are immutable: use a tuple)")
    return self.literal(n)

  def attribute(self, n: ast.Attribute) -> Enum | DType:
    if not isinstance(n.value, ast.Name): raise self.error(n, f"{self.what(n)} is not part of the grammar")
    base, name = n.value.id, n.attr
    if base == "dtypes":
      if (dt := dtypes.by_name.get(name)) is None: raise self.error(n, f"dtypes.{name} is no dtype of the IR")
      return dt
    if (enum := ENUMS.get(base)) is None: raise self.error(n, f"{base}.{name} is not part of the grammar (only Ops, AddrSpace, AxisType, dtypes)")
    if name not in enum.__members__: raise self.error(n, f"{base}.{name} is no member of {base}")
    return enum[name]

  def arg_class(self, n: ast.Call) -> Any:
    name = n.func.id  # type: ignore[attr-defined]
    if name == "SourceArg" and not self.allow_source:
      raise self.error(n, "a SourceArg (rendered kernel text a backend would compile) is not accepted here: a corpus entry holds graphs, not code")
    cls = ARG_CLASSES[name]
    fields = [f.name for f in dataclasses.fields(cls)]
    if len(n.args) > len(fields): raise self.error(n, f"{name} takes at most {len(fields)} values")
    kw = dict(zip(fields, (self.arg(a) for a in n.args)))
    for k in n.keywords:
      if k.arg is None or k.arg not in fields or k.arg in kw: raise self.error(n, f"{name} has the fields {', '.join(fields)}; got {k.arg!r}")
      kw[k.arg] = self.arg(k.value)
    try: return cls(**kw)
    except Exception as e: raise self.error(n, f"{name}(...) cannot be built: {type(e).__name__}: {str(e)[:200]}") from None

  # ---- statements ----
  def uop(self, n: ast.expr, nodes: dict[str, UOp]) -> UOp:
    if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "UOp"):
      raise self.error(n, f"{self.what(n)} is not a UOp(...) construction")
    params = ("op", "dtype", "src", "arg", "tag")
    if len(n.args) > 4: raise self.error(n, "UOp(...) takes op, dtype, sources, arg and tag=")
    given: dict[str, ast.expr] = dict(zip(params, n.args))
    for k in n.keywords:
      if k.arg not in params or k.arg in given: raise self.error(n, f"UOp(...) takes {', '.join(params)}; got {k.arg}=")
      given[k.arg] = k.value
    if "op" not in given: raise self.error(n, "UOp(...) needs an op")
    op = self.attribute(given["op"]) if isinstance(given["op"], ast.Attribute) else None
    if not isinstance(op, Ops): raise self.error(n, f"the op of a UOp is Ops.<name>, not {self.what(given['op'])}")
    dt = dtypes.void
    if "dtype" in given:
      dt = self.attribute(given["dtype"]) if isinstance(given["dtype"], ast.Attribute) else None
      if not isinstance(dt, DType): raise self.error(n, f"the dtype of a UOp is dtypes.<name>, not {self.what(given['dtype'])}")
    src: tuple[UOp, ...] = ()
    if (s := given.get("src")) is not None:
      if not isinstance(s, ast.Tuple) or not all(isinstance(x, ast.Name) for x in s.elts):
        raise self.error(n, "the sources of a UOp are a tuple of names of nodes made before it")
      missing = [x.id for x in s.elts if x.id not in nodes]  # type: ignore[attr-defined]
      if missing: raise self.error(n, f"source {missing[0]} is not a node made earlier in this function")
      src = tuple(nodes[x.id] for x in s.elts)  # type: ignore[attr-defined]
    arg = self.arg(given["arg"]) if "arg" in given else None
    tag = self.arg(given["tag"]) if "tag" in given else None
    try: return UOp(op, dt, src, arg, tag)
    except Exception as e: raise self.error(n, f"UOp(...) cannot be built: {type(e).__name__}: {str(e)[:200]}") from None

  def array(self, n: ast.expr) -> np.ndarray:
    ok = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
      and n.func.value.id == "np" and n.func.attr == "array"
    if not ok or len(n.args) != 1 or not isinstance(n.args[0], ast.List):  # type: ignore[attr-defined]
      raise self.error(n, f"an input is np.array([...], dtype='<name>'), not {self.what(n)}")
    kws = {k.arg: k.value for k in n.keywords}  # type: ignore[attr-defined]
    if set(kws) != {"dtype"} or not isinstance(kws["dtype"], ast.Constant) or kws["dtype"].value not in ARRAY_DTYPES:
      raise self.error(n, f"np.array(...) takes dtype= one of {', '.join(sorted(ARRAY_DTYPES))} as a string")
    vals = [self.literal(x) for x in n.args[0].elts]  # type: ignore[attr-defined]
    if any(type(v) not in (bool, int, float) for v in vals): raise self.error(n, "an input array holds numbers only")
    try: return np.array(vals, dtype=kws["dtype"].value)
    except (OverflowError, ValueError, TypeError) as e: raise self.error(n, f"np.array(...) cannot be built: {e}") from None

  def function(self, fn: ast.FunctionDef) -> Any:
    a = fn.args
    if fn.decorator_list: raise self.error(fn.decorator_list[0], f"a decorator on def {fn.name}() is not part of the grammar")
    if a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or fn.returns is not None:
      raise self.error(fn, f"def {fn.name}() takes no arguments or annotations here")
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
      body = body[1:]  # a docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
      raise self.error(fn, f"def {fn.name}() ends with a return of a value")
    nodes: dict[str, UOp] = {}
    for st in body[:-1]:
      if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
        raise self.error(st, f"{self.what(st)} is not an assignment of a UOp to a name")
      nodes[st.targets[0].id] = self.uop(st.value, nodes)
    ret = body[-1].value
    if isinstance(ret, ast.Name):
      if ret.id not in nodes: raise self.error(ret, f"{ret.id} is not a node made in {fn.name}()")
      return nodes[ret.id]
    if isinstance(ret, ast.Call) and isinstance(ret.func, ast.Name) and ret.func.id == "UOp": return self.uop(ret, nodes)
    if nodes: raise self.error(ret, f"def {fn.name}() makes nodes, so it returns a node")
    if isinstance(ret, ast.Dict) and all(isinstance(v, ast.Call) for v in ret.values):
      out = {}
      for k, v in zip(ret.keys, ret.values):
        key = self.literal(k) if k is not None else None
        if type(key) is not int: raise self.error(ret, "an inputs() key is a BUFFER id (an int)")
        out[key] = self.array(v)
      return out
    return self.literal(ret)

  def module(self, tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, st in enumerate(tree.body):
      if i == 0 and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str): continue
      if isinstance(st, ast.Import):
        if [(a.name, a.asname) for a in st.names] != [("numpy", "np")]: raise self.error(st, "the only plain import is `import numpy as np`")
      elif isinstance(st, ast.ImportFrom):
        allowed = IMPORTS.get(st.module or "")
        if st.level or allowed is None or any(a.asname or a.name not in allowed for a in st.names):
          raise self.error(st, f"only {', '.join(f'from {m} import ...' for m in IMPORTS)} (pyrender's header) may be imported")
      elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        out[st.targets[0].id] = self.literal(st.value)
      elif isinstance(st, ast.FunctionDef):
        out[st.name] = self.function(st)
      else:
        raise self.error(st, f"{self.what(st)} is not part of the grammar (imports of the header, NAME = literal, def NAME())")
    return out

  @staticmethod
  def what(n: ast.AST) -> str:
    """A short description of the construct found, for the error."""
    try: text = ast.unparse(n)
    except Exception: text = type(n).__name__
    text = text.splitlines()[0] if text else type(n).__name__
    return f"`{text[:60]}{'...' if len(text) > 60 else ''}`"


def read_module(text: str, filename: str = "<text>", allow_source: bool = False) -> dict[str, Any]:
  """The names the text defines, read without executing it: a constant's value, a function's returned value (a graph's
  root UOp, an inputs() dict of arrays). ReadError naming the line for anything outside the grammar."""
  try: tree = ast.parse(text, filename=filename)
  except SyntaxError as e: raise ReadError(f"{filename}:{e.lineno}: not valid Python: {e.msg}") from None
  except (ValueError, MemoryError, RecursionError) as e:
    raise ReadError(f"{filename}: cannot be parsed: {type(e).__name__}: {str(e)[:200]}") from None
  try: return _Reader(filename, allow_source).module(tree)
  except RecursionError: raise ReadError(f"{filename}: nested too deeply to read") from None


def read_graph(text: str, filename: str = "<text>", fname: str = "graph", allow_source: bool = False) -> UOp:
  """The UOp `fname()` of pyrender's text returns, read without executing the text."""
  ns = read_module(text, filename, allow_source)
  root = ns.get(fname)
  if not isinstance(root, UOp): raise ReadError(f"{filename}: defines no {fname}() returning a UOp")
  return root

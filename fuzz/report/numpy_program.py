"""A tinygrad program's source (fuzz.generate.tinygrad_programs) written again over numpy arrays: what the program means,
computed by numpy alone, for a standalone script that reproduces a finding without tinyspec (fuzz.report.standalone).

Every op is numpy's own on arrays of the program's dtypes: integer arithmetic and powers wrap (a negative integer
exponent, which numpy refuses, has no numpy form), shifts, flooring division and remainder, casts convert as numpy
(and C) convert, float16 computes in numpy's float16 (each op rounded to half). A literal operand of an integer tensor is read one of two ways:

  converted   numpy's and C's reading, and tinyspec's: the literal is first converted to the tensor's dtype (-2 on a
              uint8 tensor is 254);
  weak        tinygrad's reading: a literal the dtype cannot hold keeps its own value, the op runs on exact integers and
              the result wraps into the dtype (uint8 `18 % -2` is 0). fuzz.check.exact_ints models the same reading.

Each line is written as numpy source and evaluated as it is written, so the values returned are those of the very text
a script holds. Only the generator's grammar is taken (check_program_source); a program naming a dtype numpy has no
type for (bfloat16, the fp8 dtypes) or a form outside what the generator draws raises NoNumpyForm naming it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from fuzz.generate.tinygrad_programs import check_program_source, int_range, is_int

# the dtypes numpy has a type of its own for, by the names a program uses
NUMPY_DTYPES = frozenset({"bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|",
          ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
COMPARE = {ast.Lt: "<", ast.Eq: "==", ast.NotEq: "!="}
# the ops whose result under tinygrad's weak reading of a literal differs from the converted reading (on +, -, *, &, |,
# ^ both readings agree modulo the dtype's width)
WEAK_DIFFERS = frozenset({"//", "%", "<", "==", "!=", "maximum", "minimum"})

WEAK_HELPERS = '''\
def exact(x):
  """x's integers as Python's exact ones (an object array)."""
  return np.array(np.asarray(x).tolist(), dtype=object)


def wrap(x, dtype):
  """Exact integers (an object array) wrapped into an integer dtype."""
  info = np.iinfo(dtype)
  flat = [(int(v) - info.min) % (1 << info.bits) + info.min for v in np.ravel(x)]
  return np.array(flat, dtype=dtype).reshape(np.shape(x))
'''


class NoNumpyForm(ValueError):
  """A program numpy cannot compute as written here; the message names what."""


@dataclass
class NumpyProgram:
  """The program over numpy: its functions' and its own lines, and the values they give."""
  functions: list[list[str]]      # each @function's def, as numpy source lines
  body: list[str]                 # program()'s lines: the inputs, the ops, the return
  outputs: tuple[np.ndarray, ...]
  weak_lines: int = 0             # lines whose weak reading differs in form from the converted one
  float_sums: bool = False        # a float sum or matmul: its value depends on the order of the additions
  uses_helpers: bool = False      # the lines call exact() and wrap() (WEAK_HELPERS)


@dataclass
class _Writer:
  src: str
  weak: bool
  ns: dict[str, Any] = field(default_factory=dict)
  functions: list[list[str]] = field(default_factory=list)
  defs: dict[str, ast.FunctionDef] = field(default_factory=dict)
  weak_lines: int = 0
  float_sums: bool = False
  uses_helpers: bool = False

  def __post_init__(self) -> None:
    check_program_source(self.src)
    self.defs = {fn.name: fn for fn in ast.parse(self.src).body if isinstance(fn, ast.FunctionDef)}
    self.ns = {"np": np}
    exec(compile(WEAK_HELPERS, "<wrap>", "exec"), self.ns)

  def program(self) -> NumpyProgram:
    body, outs = self.block(self.defs["program"], {})
    return NumpyProgram(self.functions, body, tuple(np.asarray(o) for o in outs), self.weak_lines, self.float_sums, self.uses_helpers)

  # ---- statements ----
  def block(self, fn: ast.FunctionDef, env: dict[str, Any]) -> tuple[list[str], tuple]:
    """fn's lines over numpy with the names in env bound, and the values it returns."""
    lines = []
    for st in fn.body:
      if isinstance(st, ast.Return):
        names = st.value.elts if isinstance(st.value, ast.Tuple) else [st.value]
        lines.append(f"return {', '.join(n.id for n in names)}" + ("," if len(names) == 1 else ""))  # type: ignore[attr-defined]
        return lines, tuple(env[n.id] for n in names)  # type: ignore[attr-defined]
      assert isinstance(st, ast.Assign)  # check_program_source let nothing else through
      text, note = self.expr(st.value, env)
      value = self.eval(text, env)
      target = st.targets[0]
      if isinstance(target, ast.Tuple):
        for n, v in zip(target.elts, value): env[n.id] = v  # type: ignore[attr-defined]
      else: env[target.id] = value  # type: ignore[attr-defined]
      names = target.id if isinstance(target, ast.Name) else ", ".join(n.id for n in target.elts) + ("," if len(target.elts) == 1 else "")  # type: ignore[attr-defined]
      lines.append(f"{names} = {text}" + (f"  # {note}" if note else ""))
    raise NoNumpyForm(f"def {fn.name}() has no return")

  def eval(self, text: str, env: dict[str, Any]) -> Any:
    with np.errstate(all="ignore"): return eval(compile(text, "<numpy line>", "eval"), self.ns, dict(env))

  def call(self, name: str, args: list[ast.expr], env: dict[str, Any]) -> tuple[str, str]:
    """A call of an @function: its numpy def written at its first call (its parameters' dtypes are its arguments')."""
    texts = [self.expr(a, env)[0] for a in args]
    if name not in self.ns:
      fn = self.defs[name]
      params = [a.arg for a in fn.args.args]
      inner, _ = self.block(fn, dict(zip(params, (self.eval(t, env) for t in texts))))
      lines = [f"def {name}({', '.join(params)}):", *[f"  {ln}" for ln in inner]]
      exec(compile("\n".join(lines) + "\n", f"<{name}>", "exec"), self.ns)
      self.functions.append(lines)
    return f"{name}({', '.join(texts)})", ""

  # ---- expressions: (numpy source, a note on a literal's conversion) ----
  def expr(self, n: ast.expr, env: dict[str, Any]) -> tuple[str, str]:
    if isinstance(n, ast.Name): return n.id, ""
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and not _is_literal(n):
      text, note = self.expr(n.operand, env)
      return f"-{text}", note
    if isinstance(n, ast.BinOp): return self.binary(BINARY[type(n.op)], n.left, n.right, env)
    if isinstance(n, ast.Compare): return self.binary(COMPARE[type(n.ops[0])], n.left, n.comparators[0], env)
    if isinstance(n, ast.Call):
      f = n.func
      if isinstance(f, ast.Name) and f.id == "Tensor": return ast.unparse(n.args[0]), ""  # np.array([...], dtype=...).reshape(...)
      if isinstance(f, ast.Name) and f.id in self.defs: return self.call(f.id, n.args, env)
      if isinstance(f, ast.Attribute): return self.method(f.attr, f.value, n, env)
    raise NoNumpyForm(f"`{ast.unparse(n)}` has no numpy form here")

  def method(self, name: str, recv: ast.expr, n: ast.Call, env: dict[str, Any]) -> tuple[str, str]:
    if name in ("maximum", "minimum"): return self.binary(name, recv, n.args[0], env)
    r, note = self.expr(recv, env)
    keep = any(k.arg == "keepdim" and k.value.value for k in n.keywords)  # type: ignore[attr-defined]
    args = [ast.unparse(a) for a in n.args]
    if name == "where":
      a, _ = self.expr(n.args[0], env)
      b, note = self.operand(n.args[1], self.eval(a, env).dtype, env)
      return f"np.where({r}, {a}, {b})", note
    if name == "cast": return f"{r}.astype(np.{self.dtype_name(n.args[0])})", note
    dt = self.eval(r, env).dtype
    if name in ("sum", "matmul") and dt.kind == "f": self.float_sums = True
    if name == "sum": return f"{r}.sum({args[0]}, dtype=np.{dt.name}{', keepdims=True' if keep else ''})", note
    if name == "max": return f"{r}.max({args[0]}{', keepdims=True' if keep else ''})", note
    if name == "matmul": return f"{r} @ {self.expr(n.args[0], env)[0]}", note
    if name in ("pad", "shrink") and ast.literal_eval(n.args[0]) == (): return f"np.asarray({r})", note  # of a 0-d value: itself
    simple: dict[str, Callable[[], str]] = {
      "reshape": lambda: f"{r}.reshape({args[0]})", "permute": lambda: f"{r}.transpose({', '.join(args)})",
      "flip": lambda: f"np.flip({r}, {args[0]})", "pad": lambda: f"np.pad({r}, {args[0]})",
      "expand": lambda: f"np.broadcast_to({r}, {args[0]})", "contiguous": lambda: f"np.array({r})",
      "shrink": lambda: f"{r}[{', '.join(f'{lo}:{hi}' for lo, hi in ast.literal_eval(n.args[0]))}]",
    }
    if name not in simple: raise NoNumpyForm(f".{name}(...) has no numpy form here")
    return simple[name](), note

  def dtype_name(self, n: ast.expr) -> str:
    name = n.attr if isinstance(n, ast.Attribute) else ""
    if name not in NUMPY_DTYPES: raise NoNumpyForm(f"numpy has no {name or ast.unparse(n)} dtype")
    return name

  def binary(self, op: str, left: ast.expr, right: ast.expr, env: dict[str, Any]) -> tuple[str, str]:
    """left OP right; right a tensor or a literal, read as converted or (self.weak) as tinygrad reads it."""
    a, note = self.expr(left, env)
    dt = self.eval(a, env).dtype
    as_fn = op in ("maximum", "minimum")
    if _is_literal(right) and self.weak and op in WEAK_DIFFERS and dt.kind in "iu" and not _fits(_literal(right), dt):
      self.weak_lines, self.uses_helpers = self.weak_lines + 1, True
      c = _literal(right)
      exact = f"np.{op}(exact({a}), {c})" if as_fn else f"exact({a}) {op} {c}"
      if op in COMPARE.values(): return exact, f"{c} kept as it is (tinygrad's reading)"
      return f"wrap({exact}, np.{dt.name})", f"{c} kept as it is, the result wrapped to {dt.name} (tinygrad's reading)"
    b, bnote = self.operand(right, dt, env)
    if op == "**" and dt.kind in "iu" and np.any(np.asarray(self.eval(b, env)) < 0):
      raise NoNumpyForm(f"`{ast.unparse(right)}` holds a negative integer exponent: numpy has no integer power for it")
    return (f"np.{op}({a}, {b})" if as_fn else f"{a} {op} {b}"), note or bnote

  def operand(self, n: ast.expr, dt: np.dtype, env: dict[str, Any]) -> tuple[str, str]:
    """A second operand of a tensor of dtype dt: a tensor, or a literal converted to dt (numpy's reading)."""
    if not _is_literal(n): return self.expr(n, env)
    c = _literal(n)
    if dt.kind in "iu":
      if not isinstance(c, int): raise NoNumpyForm(f"a float literal {c!r} on a {dt.name} tensor")
      if _fits(c, dt): return repr(c), ""
      lo, hi = int_range(dt.name)
      v = (c - lo) % (hi - lo + 1) + lo
      return f"np.{dt.name}({v})", f"{c} as {dt.name} is {v}"
    if dt.kind != "f": raise NoNumpyForm(f"a literal {c!r} on a {dt.name} tensor")
    if isinstance(c, float) and not np.isfinite(c): return f"np.{dt.name}({'-' if c < 0 else ''}np.{'nan' if c != c else 'inf'})", ""
    return repr(float(c)), ""


def _is_literal(n: ast.expr) -> bool:
  if isinstance(n, ast.Constant): return type(n.value) in (int, float)
  if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)): return _is_literal(n.operand)
  return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "float"


def _literal(n: ast.expr) -> int | float:
  if isinstance(n, ast.Call): return float(n.args[0].value)  # type: ignore[attr-defined]
  return ast.literal_eval(n)


def _fits(c: int | float, dt: np.dtype) -> bool:
  if not isinstance(c, int) or not is_int(dt.name): return True
  lo, hi = int_range(dt.name)
  return lo <= c <= hi


def numpy_program(src: str, weak: bool = False) -> NumpyProgram:
  """The program in src over numpy, its literals converted to their tensors' dtypes, or with weak as tinygrad reads
  them. NoNumpyForm when numpy cannot compute it as written (a dtype numpy lacks); ProgramSourceError outside the
  generator's grammar."""
  return _Writer(src, weak).program()

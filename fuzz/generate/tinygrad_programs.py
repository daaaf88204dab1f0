"""Random programs in the intersection of tinygrad's and tinyspec's Tensor APIs (`tinyspec fuzz --target tinygrad`).

A program is data: inputs (name, dtype, shape, values) and lines `vK = op(args)`, some of them calls of an `@function`
over a run of lines. `source(p)` renders it as Python that runs unchanged against either API: the names `Tensor`,
`dtypes`, `function` and `np` come from the namespace it is executed in (`run_program`). Case i of seed s is drawn from
random.Random((s, i)), so the same arguments give the same program in any process.

What is drawn: float32 and fixed-width ints, signed and unsigned; constants near the wrap points of their dtype
(unsigned ones also as the negative literals a user writes, `x // -1`); broadcasting through keepdim reductions;
integer powers (an int tensor to an int tensor's power, or to a literal's >= 0); sum and max reductions; reshape,
permute, flip, pad, shrink, expand; matmul; where over comparisons; casts between
ints, from ints and bools to float32, and from float32 to float16 and bfloat16 and back (elementwise ops, max and
where computing on those between); value calls through `@function`.
Left out on purpose (the two APIs define them differently, or leave them undefined): sums of 8- and 16-bit ints
(tinygrad accumulates them in a wider dtype), float to int casts (undefined out of range), division by a tensor
(an integer division by zero traps in tinygrad's CPU code), and transcendental functions (approximations differ).
"""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
DTYPES = ("float32", *INT_BITS)
# reached only by a cast from float32 (and cast back to it): elementwise ops, max and where on them
SMALL_FLOATS = ("float16", "bfloat16")
# dtypes a stored program may name that the generator never draws: an fp8 finding found by hand is replayed too (the
# names are tinyspec's; fuzz.check.tinygrad_oracles.tinygrad_namespace gives tinygrad's fp8 dtypes under them)
STORED_ONLY_DTYPES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
SUM_DTYPES = frozenset({"float32", "int32", "uint32", "int64", "uint64"})  # a sum keeps these dtypes in both APIs


def is_int(dt: str) -> bool: return dt in INT_BITS
def is_signed(dt: str) -> bool: return is_int(dt) and not dt.startswith("u")


def int_range(dt: str) -> tuple[int, int]:
  bits = INT_BITS[dt]
  return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed(dt) else (0, (1 << bits) - 1)


@dataclass(frozen=True)
class Input:
  name: str
  dtype: str
  shape: tuple[int, ...]
  values: tuple          # flat, Python ints or floats

  def array(self) -> np.ndarray:
    # ints go through Python objects: a uint64 near 2**64 survives, which a float64 or int64 intermediate would not
    return np.array([int(v) for v in self.values] if is_int(self.dtype) else self.values, dtype=self.dtype).reshape(self.shape)


class Raw(str):
  """An argument rendered as written (a dtype name), not as a variable or a literal."""


@dataclass(frozen=True)
class Line:
  """outs = op(args): an arg is a variable name (str), a Raw, or a literal (int, float, tuple)."""
  outs: tuple[str, ...]
  op: str
  args: tuple
  body: Program | None = None     # op "call": the @function's body, its inputs named p0, p1, ...


@dataclass(frozen=True)
class Program:
  inputs: tuple[Input, ...]
  lines: tuple[Line, ...]
  outputs: tuple[str, ...]
  seed: int | None = None
  index: int | None = None

  def size(self) -> int:
    return len(self.lines) + sum(len(ln.body.lines) for ln in self.lines if ln.body is not None)

  def ops(self) -> list[str]:
    return [op for ln in self.lines for op in ([ln.op] + (ln.body.ops() if ln.body is not None else []))]


# ---- rendering ----
TEMPLATES: dict[str, str] = {
  "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}", "idiv": "{0} // {1}", "mod": "{0} % {1}",
  "pow": "{0} ** {1}", "and": "{0} & {1}", "or": "{0} | {1}", "xor": "{0} ^ {1}", "shl": "{0} << {1}", "shr": "{0} >> {1}",
  "maximum": "{0}.maximum({1})", "minimum": "{0}.minimum({1})", "lt": "({0} < {1})", "eq": "({0} == {1})", "ne": "({0} != {1})",
  "neg": "-{0}", "where": "{0}.where({1}, {2})", "cast": "{0}.cast(dtypes.{1})",
  "sum": "{0}.sum({1})", "sum_keep": "{0}.sum({1}, keepdim=True)", "max": "{0}.max({1})", "max_keep": "{0}.max({1}, keepdim=True)",
  "reshape": "{0}.reshape({1})", "permute": "{0}.permute({1})", "flip": "{0}.flip({1})", "pad": "{0}.pad({1})",
  "shrink": "{0}.shrink({1})", "expand": "{0}.expand({1})", "matmul": "{0}.matmul({1})", "gram": "{0}.matmul({0}.permute(1, 0))",
  "contiguous": "{0}.contiguous()",
}
OPS = (*TEMPLATES, "call")


def _arg(a: Any) -> str:
  if isinstance(a, Raw) or isinstance(a, str): return str(a)
  if isinstance(a, float): return repr(a) if np.isfinite(a) else f"float({str(a)!r})"
  return repr(a)


def render_line(ln: Line) -> str:
  lhs = ", ".join(ln.outs)
  if ln.op == "call": return f"{lhs}{',' if len(ln.outs) == 1 else ''} = f_{ln.outs[0]}({', '.join(map(_arg, ln.args))})"
  return f"{lhs} = {TEMPLATES[ln.op].format(*map(_arg, ln.args))}"


def _function_source(ln: Line) -> list[str]:
  assert ln.body is not None
  params = ", ".join(i.name for i in ln.body.inputs)
  out = ["@function", f"def f_{ln.outs[0]}({params}):"]
  out += [f"  {render_line(b)}" for b in ln.body.lines]
  outs = ln.body.outputs
  out.append(f"  return {outs[0]}," if len(outs) == 1 else f"  return {', '.join(outs)}")
  return out


def source(p: Program) -> str:
  """The program as Python over the names Tensor, dtypes, function and np (bound by whoever runs it)."""
  lines: list[str] = []
  for ln in p.lines:
    if ln.body is not None: lines += _function_source(ln) + ["", ""]
  lines.append("def program():")
  for i in p.inputs:
    vals = ", ".join(_arg(int(v) if is_int(i.dtype) else float(v)) for v in i.values)
    lines.append(f"  {i.name} = Tensor(np.array([{vals}], dtype=np.{i.dtype}).reshape({i.shape!r}))")
  lines += [f"  {render_line(ln)}" for ln in p.lines]
  lines.append(f"  return {', '.join(p.outputs)}" + ("," if len(p.outputs) == 1 else ""))
  return "\n".join(lines) + "\n"


# ---- reading a stored program: only the grammar source() writes ----
METHODS = frozenset({"maximum", "minimum", "where", "cast", "sum", "max", "reshape", "permute", "flip", "pad", "shrink", "expand",
                     "matmul", "contiguous"})
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
COMPARES = (ast.Lt, ast.Eq, ast.NotEq)


class ProgramSourceError(ValueError):
  """A stored program's source outside the grammar `source()` writes; the message names the line."""


def check_program_source(src: str, where: str = "<program>") -> None:
  """Raise ProgramSourceError unless src is in the grammar `source()` writes: functions `program()` and `@function
  f_NAME(...)` whose statements assign Tensor expressions to names and return names. An expression is a name, a number,
  a tuple of them, an arithmetic or comparison operator, a Tensor method of the generator's ops (METHODS) with such
  arguments, `Tensor(np.array([...], dtype=np.<dtype>).reshape(shape))`, `dtypes.<dtype>`, `float('nan'|'inf'|'-inf')` or
  a call of an `f_NAME` defined before. Nothing else is called, imported, subscripted or looked up, so running a checked
  source computes with tensors and does nothing else (replaying a tinygrad corpus entry runs its PROGRAM)."""
  def fail(n: ast.AST, what: str) -> ProgramSourceError:
    return ProgramSourceError(f"{where}, line {getattr(n, 'lineno', '?')}: {what}")
  try: tree = ast.parse(src)
  except SyntaxError as e: raise ProgramSourceError(f"{where}, line {e.lineno}: not valid Python: {e.msg}") from None
  except (ValueError, MemoryError, RecursionError) as e: raise ProgramSourceError(f"{where}: cannot be parsed: {type(e).__name__}") from None
  functions: set[str] = set()
  dtype_names = set(DTYPES) | set(SMALL_FLOATS) | set(STORED_ONLY_DTYPES) | {"bool"}  # every dtype source() writes, and the fp8s

  def expr(n: ast.AST) -> None:
    if isinstance(n, ast.Name):
      if n.id.startswith("__"): raise fail(n, f"name {n.id} is not part of a program")
      return
    if isinstance(n, ast.Constant):
      if type(n.value) in (int, float, bool) or n.value is None: return
      raise fail(n, f"a {type(n.value).__name__} constant is not part of a program")
    if isinstance(n, (ast.Tuple, ast.List)):
      for x in n.elts: expr(x)
      return
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)): return expr(n.operand)
    if isinstance(n, ast.BinOp) and isinstance(n.op, BINOPS):
      expr(n.left)
      return expr(n.right)
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], COMPARES):
      expr(n.left)
      return expr(n.comparators[0])
    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("dtypes", "np") and n.attr in dtype_names: return
    if isinstance(n, ast.Call): return call(n)
    raise fail(n, f"`{_short(n)}` is not part of a program")

  def call(n: ast.Call) -> None:
    f = n.func
    if isinstance(f, ast.Name) and f.id == "float":
      if len(n.args) == 1 and not n.keywords and isinstance(n.args[0], ast.Constant) and n.args[0].value in ("nan", "inf", "-inf"): return
      raise fail(n, "float(...) takes 'nan', 'inf' or '-inf'")
    if isinstance(f, ast.Name) and (f.id == "Tensor" or f.id in functions):
      if n.keywords: raise fail(n, f"{f.id}(...) takes no keywords")
      for a in n.args: expr(a)
      return
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np" and f.attr == "array":
      if len(n.args) != 1 or [k.arg for k in n.keywords] != ["dtype"]: raise fail(n, "np.array takes a list and dtype=np.<dtype>")
      expr(n.args[0])
      return expr(n.keywords[0].value)
    if isinstance(f, ast.Attribute) and f.attr in METHODS:
      if any(k.arg != "keepdim" or not isinstance(k.value, ast.Constant) or type(k.value.value) is not bool for k in n.keywords):
        raise fail(n, f".{f.attr}(...) takes only keepdim=True or False as a keyword")
      expr(f.value)
      for a in n.args: expr(a)
      return
    raise fail(n, f"a call of `{_short(f)}` is not part of a program")

  for st in tree.body:
    if not isinstance(st, ast.FunctionDef): raise fail(st, f"`{_short(st)}`: a program's source holds only function definitions")
    a = st.args
    if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults or any(x.annotation for x in a.args) or st.returns:
      raise fail(st, f"def {st.name}: plain positional parameters only")
    deco = [d.id if isinstance(d, ast.Name) else None for d in st.decorator_list]
    if not ((st.name == "program" and deco == [] and not a.args) or (st.name.startswith("f_") and deco == ["function"])):
      raise fail(st, f"def {st.name}: only program() and @function f_NAME(...) are part of a program")
    for b in st.body:
      if isinstance(b, ast.Assign) and len(b.targets) == 1:
        t = b.targets[0]
        names = t.elts if isinstance(t, ast.Tuple) else [t]
        if not all(isinstance(x, ast.Name) and not x.id.startswith("__") for x in names): raise fail(b, "only names are assigned to")
        expr(b.value)
      elif isinstance(b, ast.Return) and b.value is not None:
        vals = b.value.elts if isinstance(b.value, ast.Tuple) else [b.value]
        if not all(isinstance(x, ast.Name) for x in vals): raise fail(b, "a function returns names")
      else:
        raise fail(b, f"`{_short(b)}` is not part of a program (assignments and a return only)")
    functions.add(st.name)
  if "program" not in functions: raise ProgramSourceError(f"{where}: defines no program()")


def _short(n: ast.AST) -> str:
  try: text = ast.unparse(n).splitlines()[0]
  except Exception: text = type(n).__name__
  return text[:60] + ("..." if len(text) > 60 else "")


def run_program(src: str, namespace: dict[str, Any]) -> tuple:
  """Execute a program's source with Tensor, dtypes, function and np from namespace; the tuple program() returns."""
  ns: dict[str, Any] = {"np": np, **namespace}
  exec(compile(src, "<tinygrad program>", "exec"), ns)
  outs = ns["program"]()
  return tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)


# ---- what a line gives: (dtype, shape) of each out, or None when the line does not apply ----
Env = dict[str, tuple[str, tuple[int, ...]]]


def _bcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
  if len(a) != len(b): return None
  out = []
  for x, y in zip(a, b):
    if x != y and 1 not in (x, y): return None
    out.append(y if x == 1 else x)
  return tuple(out)


def _operand(env: Env, a: Any, dt: str, shape: tuple[int, ...]) -> tuple[int, ...] | None:
  """The shape a binary op's second operand gives with (dt, shape): a literal of the first's kind, or a variable of its dtype."""
  if isinstance(a, str):
    if a not in env or env[a][0] != dt: return None
    return _bcast(shape, env[a][1])
  if isinstance(a, bool) or not isinstance(a, (int, float)): return None
  return shape if isinstance(a, int) == is_int(dt) else None


def infer(ln: Line, env: Env) -> list[tuple[str, tuple[int, ...]]] | None:
  """The (dtype, shape) of each of the line's outputs, or None when it is not a valid line here."""
  if ln.op == "call": return _infer_call(ln, env)
  a0 = ln.args[0]
  if not isinstance(a0, str) or a0 not in env: return None
  dt, sh = env[a0]
  rest = ln.args[1:]
  if (rule := _INFER.get(ln.op)) is None: return None
  try: out = rule(dt, sh, rest, env)
  except (TypeError, ValueError, IndexError): return None
  return None if out is None else [out]


def _binary(kinds: Callable[[str], bool], result: Callable[[str], str] = lambda d: d, nonzero: bool = False):
  def rule(dt, sh, rest, env):
    if not kinds(dt) or len(rest) != 1: return None
    if nonzero and (isinstance(rest[0], str) or _wrapped(rest[0], dt) == 0): return None
    shape = _operand(env, rest[0], dt, sh)
    return None if shape is None else (result(dt), shape)
  return rule


def _wrapped(c: Any, dt: str) -> Any:
  if not is_int(dt): return c
  lo, _ = int_range(dt)
  m = 1 << INT_BITS[dt]
  return (int(c) - lo) % m + lo


def _power(dt, sh, rest, env):
  """An int tensor to the power of an int tensor of its dtype or of a literal >= 0 (tinygrad refuses a negative one)."""
  if not is_int(dt) or len(rest) != 1 or (not isinstance(rest[0], str) and (isinstance(rest[0], bool) or not isinstance(rest[0], int)
                                                                            or rest[0] < 0)): return None
  shape = _operand(env, rest[0], dt, sh)
  return None if shape is None else (dt, shape)


def _shift(dt, sh, rest, env):
  if not is_int(dt) or len(rest) != 1 or not isinstance(rest[0], int) or not 0 <= rest[0] < INT_BITS[dt]: return None
  return dt, sh


def _where(dt, sh, rest, env):
  if dt != "bool" or len(rest) != 2 or not isinstance(rest[0], str) or rest[0] not in env: return None
  vdt, vsh = env[rest[0]]
  if vdt == "bool": return None
  s1 = _bcast(sh, vsh)
  s2 = None if s1 is None else _operand(env, rest[1], vdt, s1)
  return None if s2 is None else (vdt, s2)


def _cast(dt, sh, rest, env):
  to = rest[0]
  ok = (is_int(dt) and (is_int(to) or to == "float32")) or (dt == "bool" and to in ("int32", "float32")) or (dt == to == "float32") \
    or (dt == "float32" and to in SMALL_FLOATS) or (dt in SMALL_FLOATS and to == "float32")
  return (str(to), sh) if ok else None


def _reduce(keep: bool, dtypes_ok: Callable[[str], bool]):
  def rule(dt, sh, rest, env):
    ax = rest[0]
    if not dtypes_ok(dt) or not isinstance(ax, int) or not 0 <= ax < len(sh): return None
    return dt, (sh[:ax] + (1,) + sh[ax + 1:]) if keep else sh[:ax] + sh[ax + 1:]
  return rule


def _reshape(dt, sh, rest, env):
  new = rest[0]
  return (dt, tuple(new)) if isinstance(new, tuple) and all(isinstance(d, int) and d > 0 for d in new) and \
    int(np.prod(new)) == int(np.prod(sh)) else None


def _permute(dt, sh, rest, env):
  order = rest[0]
  return (dt, tuple(sh[i] for i in order)) if isinstance(order, tuple) and sorted(order) == list(range(len(sh))) else None


def _flip(dt, sh, rest, env):
  return (dt, sh) if isinstance(rest[0], int) and 0 <= rest[0] < len(sh) else None


def _pad(dt, sh, rest, env):
  pads = rest[0]
  if dt == "bool" or not isinstance(pads, tuple) or len(pads) != len(sh): return None
  if not all(isinstance(p, tuple) and len(p) == 2 and min(p) >= 0 for p in pads): return None
  return dt, tuple(d + lo + hi for d, (lo, hi) in zip(sh, pads))


def _shrink(dt, sh, rest, env):
  win = rest[0]
  if not isinstance(win, tuple) or len(win) != len(sh) or not all(isinstance(w, tuple) and 0 <= w[0] < w[1] <= d for w, d in zip(win, sh)):
    return None
  return dt, tuple(b - a for a, b in win)


def _expand(dt, sh, rest, env):
  new = rest[0]
  if not isinstance(new, tuple) or len(new) != len(sh) or not all(n == d or (d == 1 and n >= 1) for n, d in zip(new, sh)): return None
  return dt, tuple(new)


def _matmul(dt, sh, rest, env):
  b = rest[0]
  if dt != "float32" or len(sh) != 2 or not isinstance(b, str) or env.get(b, ("", ()))[0] != dt: return None
  bsh = env[b][1]
  return (dt, (sh[0], bsh[1])) if len(bsh) == 2 and bsh[0] == sh[1] else None


_ARITH = lambda d: d != "bool"
_INFER: dict[str, Callable] = {
  "add": _binary(_ARITH), "sub": _binary(_ARITH), "mul": _binary(_ARITH),
  "div": _binary(lambda d: d == "float32", nonzero=True),
  "idiv": _binary(is_int, nonzero=True), "mod": _binary(is_int, nonzero=True), "pow": _power,
  "and": _binary(is_int), "or": _binary(is_int), "xor": _binary(is_int), "shl": _shift, "shr": _shift,
  "maximum": _binary(_ARITH), "minimum": _binary(_ARITH),
  "lt": _binary(_ARITH, lambda d: "bool"), "eq": _binary(_ARITH, lambda d: "bool"), "ne": _binary(_ARITH, lambda d: "bool"),
  "neg": lambda dt, sh, rest, env: (dt, sh) if dt != "bool" and not rest else None,
  "where": _where, "cast": _cast,
  "sum": _reduce(False, lambda d: d in SUM_DTYPES), "sum_keep": _reduce(True, lambda d: d in SUM_DTYPES),
  "max": _reduce(False, _ARITH), "max_keep": _reduce(True, _ARITH),
  "reshape": _reshape, "permute": _permute, "flip": _flip, "pad": _pad, "shrink": _shrink, "expand": _expand,
  "matmul": _matmul, "gram": lambda dt, sh, rest, env: (dt, (sh[0], sh[0])) if dt == "float32" and len(sh) == 2 and not rest else None,
  "contiguous": lambda dt, sh, rest, env: (dt, sh) if not rest else None,
}


def _infer_call(ln: Line, env: Env) -> list[tuple[str, tuple[int, ...]]] | None:
  body = ln.body
  if body is None or len(ln.args) != len(body.inputs): return None
  for a, i in zip(ln.args, body.inputs):
    if not isinstance(a, str) or env.get(a) != (i.dtype, i.shape): return None
  inner = check_program(body, params=True)
  return None if inner is None or len(ln.outs) != len(body.outputs) else [inner[o] for o in body.outputs]


def check_program(p: Program, params: bool = False) -> Env | None:
  """Every variable's (dtype, shape), or None when a line does not apply (what the reducer's candidates must pass).
  params: p is an @function's body, whose inputs are parameters (no values)."""
  env: Env = {i.name: (i.dtype, i.shape) for i in p.inputs}
  if not params and any(len(i.values) != int(np.prod(i.shape)) for i in p.inputs): return None
  for ln in p.lines:
    res = infer(ln, env)
    if res is None: return None
    env.update(zip(ln.outs, res))
  return env if p.outputs and all(o in env for o in p.outputs) else None


# ---- drawing ----
def constants(dt: str) -> list:
  """Literals for dtype dt: small values and the neighbours of its wrap points; for unsigned dtypes also negative
  literals (a user writes `x // -1` on a uint32 and means the literal converted to the dtype)."""
  if not is_int(dt): return [0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e-3, 1e4]
  lo, hi = int_range(dt)
  out = [0, 1, 2, 3, 7, hi, hi - 1, (hi + 1) // 2]
  out += [lo, lo + 1, -1, -2, -7] if is_signed(dt) else [-1, -2]
  return out


def _values(rng: random.Random, dt: str, n: int) -> tuple:
  if is_int(dt):
    lo, hi = int_range(dt)
    edges = [lo, hi, 0, 1, lo + 1, hi - 1] + ([-1] if is_signed(dt) else [])
    return tuple(rng.choice(edges) if rng.random() < 0.25 else rng.randint(max(lo, -100), min(hi, 100)) if rng.random() < 0.5
                 else rng.randint(lo, hi) for _ in range(n))
  return tuple(float(np.float32(rng.choice([0.0, -0.0, 1.0, -1.0, 2.5]) if rng.random() < 0.2 else rng.gauss(0, 4))) for _ in range(n))


def _shape(rng: random.Random) -> tuple[int, ...]:
  return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))


def _inputs(rng: random.Random, prefix: str, dts: list[str], shapes: list[tuple[int, ...]]) -> tuple[Input, ...]:
  return tuple(Input(f"{prefix}{k}", dt, sh, _values(rng, dt, int(np.prod(sh)))) for k, (dt, sh) in enumerate(zip(dts, shapes)))


def _candidate(rng: random.Random, env: Env, out: str) -> Line:
  """A random line over env (not always valid: draw_line retries)."""
  a = rng.choice(list(env))
  dt, sh = env[a]
  op = rng.choice([o for o in TEMPLATES if o != "gram"] + ["gram"] * (dt == "float32" and len(sh) == 2))
  same = [v for v, (d, s) in env.items() if d == dt and _bcast(sh, s) is not None]
  lit = lambda: rng.choice(constants(dt))
  second = lambda: rng.choice(same) if same and rng.random() < 0.5 else lit()
  nd = len(sh)
  if op in ("add", "sub", "mul", "maximum", "minimum", "lt", "eq", "ne", "and", "or", "xor"): args = (a, second())
  elif op in ("div", "idiv", "mod"): args = (a, lit())
  elif op == "pow": args = (a, rng.choice(same) if same and rng.random() < 0.5 else rng.choice([c for c in constants(dt) if c >= 0]))
  elif op in ("shl", "shr"): args = (a, rng.randrange(INT_BITS.get(dt, 8)))
  elif op == "where":
    vals = [v for v, (d, s) in env.items() if d != "bool" and _bcast(sh, s) is not None]
    v = rng.choice(vals) if vals else a
    args = (a, v, rng.choice(constants(env[v][0])) if rng.random() < 0.5 else rng.choice([w for w in env if env[w] == env[v]]))
  elif op == "cast" and dt == "float32" and rng.random() < 0.5: args = (a, Raw(rng.choice(SMALL_FLOATS)))  # half the casts of float32
  elif op == "cast": args = (a, Raw(rng.choice(["float32", *INT_BITS])))
  elif op in ("sum", "sum_keep", "max", "max_keep", "flip"): args = (a, rng.randrange(nd) if nd else 0)
  elif op == "reshape":
    size = int(np.prod(sh))
    opts = [(size,), tuple(reversed(sh)), sh[:1] + (1,) + sh[1:]] + ([(1, size)] if size > 1 else [])
    args = (a, rng.choice(opts))
  elif op == "permute": args = (a, tuple(rng.sample(range(nd), nd)))
  elif op == "pad": args = (a, tuple((rng.randint(0, 2), rng.randint(0, 2)) for _ in sh))
  elif op == "shrink": args = (a, tuple((lo, rng.randint(lo + 1, d)) for d in sh for lo in [rng.randrange(d)]))
  elif op == "expand": args = (a, tuple(rng.randint(1, 3) if d == 1 else d for d in sh))
  elif op == "matmul":
    ws = [v for v, (d, s) in env.items() if d == "float32" and len(s) == 2 and len(sh) == 2 and s[0] == sh[1]]
    args = (a, rng.choice(ws) if ws else a)
  else: args = (a,)
  return Line((out,), op, args)


def draw_line(rng: random.Random, env: Env, out: str, tries: int = 40) -> Line | None:
  for _ in range(tries):
    ln = _candidate(rng, env, out)
    if infer(ln, env) is not None: return ln
  return None


def _draw_function(rng: random.Random, env: Env, k: int) -> Line | None:
  """A call of an @function over one or two variables: its body 1-3 lines, returning one or two of them."""
  args = rng.sample(list(env), min(len(env), rng.randint(1, 2)))
  params = tuple(Input(f"p{j}", env[a][0], env[a][1], ()) for j, a in enumerate(args))
  benv: Env = {p.name: (p.dtype, p.shape) for p in params}
  lines: list[Line] = []
  for j in range(rng.randint(1, 3)):
    ln = draw_line(rng, benv, f"q{j}")
    if ln is None: break
    lines.append(ln)
    benv[f"q{j}"] = infer(ln, benv)[0]  # type: ignore[index]
  if not lines: return None
  names = [ln.outs[0] for ln in lines]
  outs = tuple(names[-1:] if len(names) == 1 or rng.random() < 0.5 else rng.sample(names, 2))
  body = Program(params, tuple(lines), outs)
  return Line(tuple(f"v{k}" if j == 0 else f"v{k}_{j}" for j in range(len(outs))), "call", tuple(args), body)


def program_for(seed: int, index: int) -> Program:
  """Case `index` of `seed`."""
  rng = random.Random(f"tinyspec-tinygrad:{seed}:{index}")
  n_in = rng.randint(1, 3)
  dt = rng.choice(DTYPES)
  dts = [dt if rng.random() < 0.7 else rng.choice(DTYPES) for _ in range(n_in)]
  shape = _shape(rng)
  shapes = [shape if rng.random() < 0.6 else _shape(rng) for _ in range(n_in)]
  inputs = _inputs(rng, "x", dts, shapes)
  env: Env = {i.name: (i.dtype, i.shape) for i in inputs}
  lines: list[Line] = []
  for k in range(rng.randint(1, 6)):
    ln = _draw_function(rng, env, k) if rng.random() < 0.12 else draw_line(rng, env, f"v{k}")
    if ln is None or (res := infer(ln, env)) is None: continue
    lines.append(ln)
    env.update(zip(ln.outs, res))
  made = [o for ln in lines for o in ln.outs] or [inputs[0].name]
  used = {a for ln in lines for a in ln.args if isinstance(a, str) and not isinstance(a, Raw)}
  unused = [v for v in made[:-1] if v not in used]
  outs = (made[-1],) + tuple(rng.sample(unused, min(len(unused), rng.randint(0, 1))))
  if not lines: lines.append(Line(("v0",), "contiguous", (made[0],))); outs = ("v0",)
  return Program(inputs, tuple(lines), outs, seed, index)


def features(p: Program) -> frozenset[str]:
  """The generator choices a program used: its ops and its input dtypes."""
  return frozenset({f"op:{o}" for o in p.ops()} | {f"dtype:{i.dtype}" for i in p.inputs})


def with_inputs(p: Program, inputs: tuple[Input, ...]) -> Program: return replace(p, inputs=inputs)


__all__ = ["Input", "Line", "Program", "Raw", "OPS", "program_for", "source", "run_program", "check_program", "features", "constants",
           "int_range", "is_int", "is_signed", "INT_BITS"]

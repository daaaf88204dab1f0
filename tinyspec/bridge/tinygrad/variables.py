"""tinygrad 0.14's bound Variables in tinyspec's DEFINE_VAR / BIND forms: the helpers the translation rules share.

tinygrad's forms, stage by stage (`Variable("i", 1, 10).bind(3)`):
- tensor graph: the variable is a 0-d BUFFER of address space ALU whose ParamArg carries its name and
  vmin_vmax; bound, it is `AFTER(var, STORE(var, CONST 3))`, standing in a view's shape sources (`x[:v]`) or used as a
  value (`x * v`);
- callified graph: the CALL's arg k is that bound variable, and its body reads it as PARAM(slot k) of address space ALU
  named `pk`;
- kernel graph and kernel ASTs: a kernel reads it as PARAM(slot -1, ALU) named `pk`, the name of the callified CALL's
  arg (tinygrad's schedule substitutes the variable for it, `resolve_linear_call`); the kernel's CALL has no arg for it;
- programs: PARAM(slot k, int, ALU) named as the variable, one scalar arg of the compiled function, whose value the runtime
  passes at launch from the schedule's `var_vals` (the bound values of the callified CALL's args).

tinyspec's forms: a kernel reads a variable as DEFINE_VAR(name, min, max) and the kernel-graph CALL that runs it passes
BIND(DEFINE_VAR, CONST value); a tensor graph holds the BIND as a value. tinyspec's shapes are concrete (docs/ir.md):
a tensor graph's shape, offset or size over a bound variable is the number it has under the graph's own binding (a graph
binds a name to one value, `bind.one_value`), so `x[:v]` with v bound to 3 is SHRINK((0, 3)).
"""
from __future__ import annotations

from typing import Any

from tinyspec.bridge.tinygrad.bound import bound_value, is_bound, is_variable
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.dtype import dtypes
from tinyspec.uop import UOp


def scope(calls: list[Any]) -> dict[str, tuple[Any, int | None]]:
  """The variables callified CALLs bind, by the name their bodies and kernels read them as (`pk` for arg k): the
  tinygrad variable and its value, as tinygrad's schedule reads var_vals from those args."""
  out: dict[str, tuple[Any, int | None]] = {}
  for c in calls:
    for k, a in enumerate(c.src[1:]):
      if is_bound(a): out[f"p{k}"] = (a.src[0], bound_value(a))
  return out


def call_scope(tr: Any, args: tuple) -> dict[str, tuple[Any, int | None]]:
  """The variables a CALL passes its body, by the name the body reads arg k as (`pk`): a bound variable with its value,
  or a variable the caller itself reads as `pj` (a nested call's arg), resolved in the caller's scope; nested calls are
  lexical scopes, as tinygrad's schedule resolves them (`resolve_linear_call`)."""
  out: dict[str, tuple[Any, int | None]] = {}
  for k, a in enumerate(args):
    if is_bound(a): out[f"p{k}"] = (a.src[0], bound_value(a))
    elif is_variable(a): out[f"p{k}"] = tr.scope.get(a.arg.name, (a, None)) if a.op.name == "PARAM" else (a, None)
  return out


def define_var(tr: Any, u: Any) -> UOp:
  """DEFINE_VAR of tinygrad variable u (BUFFER or PARAM), named as tinygrad names it at launch: a `pk` that a callified
  CALL binds is that arg's variable."""
  v = u
  if u.op.name == "PARAM" and (hit := tr.scope.get(u.arg.name)) is not None: v = hit[0]
  mult = getattr(v.arg, "multiple_of", 1)
  if mult != 1:
    raise Untranslatable(u.op.name, tr.stage, f"variable {v.arg.name} is a multiple of {mult}: a DEFINE_VAR has bounds only")
  lo, hi = v.arg.vmin_vmax
  dt = dtypes.index if u.dtype.name == "weakint" else tr.dtype(u)
  return UOp.variable(v.arg.name, int(lo), int(hi), dt)


def value_of(tr: Any, u: Any) -> int | None:
  """The value a tinygrad node that is a variable has in the graph being translated: a bound variable's own, a `pk` PARAM's
  its callified CALL binds; None otherwise."""
  if is_bound(u): return bound_value(u)
  if is_variable(u) and u.op.name == "PARAM" and (hit := tr.scope.get(u.arg.name)) is not None: return hit[1]
  return None


def concrete(tr: Any, a: Any, what: str) -> int:
  """A symbolic int of a tinygrad shape, offset or size as the number it is under the graph's binding: every bound
  variable in it (and every `pk` PARAM its CALL binds) replaced by its value, then folded by tinygrad's simplifier.
  Untranslatable when a variable in it has no value here (tinyspec's shapes are concrete)."""
  if isinstance(a, (int, bool)): return int(a)
  subs = {x: x.const_like(v) for x in a.toposort() if (v := value_of(tr, x)) is not None}
  b = a.substitute(subs).simplify() if subs else a.simplify()
  if b.op.name != "CONST" or not isinstance(b.arg, int):
    raise Untranslatable(what, tr.stage, f"symbolic {what.lower()} {a.render() if hasattr(a, 'render') else a}: no bound value for its variable")
  tr.seen(*a.toposort())
  return int(b.arg)


def kernel_vars(body: Any) -> list[Any]:
  """The variables a kernel AST (or PROGRAM) reads, by name, in name order."""
  return sorted({x.arg.name: x for x in body.toposort() if is_variable(x)}.values(), key=lambda x: x.arg.name)


def resolved(kernel: Any, scope_: dict[str, tuple[Any, int]]) -> Any:
  """A kernel AST of the kernel graph as tinygrad compiles it: each `pk` PARAM it reads replaced by the variable the
  callified CALL binds (a PARAM of that name), as tinygrad's schedule does (`resolve_linear_call`) before codegen. The
  kernel itself when it reads none."""
  subs = {x: hit[0].replace(op=x.op) for x in kernel.toposort() if is_variable(x) and x.op.name == "PARAM"
          and (hit := scope_.get(x.arg.name)) is not None}
  return kernel.substitute(subs) if subs else kernel

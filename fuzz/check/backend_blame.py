"""Narrowing a CPU or OpenCL parity difference to the kernel, then to the rendered construct and the renderer method.

When a backend's outcome differs from the reference evaluation of the input graph, and every pass kept the meaning
(the pass-by-pass parity oracle said nothing), the difference lies between a PROGRAM's meaning and the code compiled
from its SOURCE: the render pass, or the compiler and runtime under it. `narrow` says where:

1. the kernel: the lowered graph (what the backend ran) is evaluated by the reference evaluator, recording each kernel
   call's args before and after it; each call then runs alone on the backend, from the args the reference gave it, and
   the first whose outputs differ is the kernel.
2. the construct: each value node of that kernel's LINEAR (an op on its dtypes, a constant) becomes a one-op kernel over
   the spec's edge values of its operands (constants stay constants, so what the renderer sees is the same construct),
   lowered by the pipeline's own passes and run on the backend against the reference evaluation of that PROGRAM;
   the first, in the kernel's order, whose results differ is the construct. Constants are compared with the sign of
   their zeros: a constant moved uncomputed keeps it (docs/spec.md, special floats). When no one-op kernel differs,
   two-op kernels of a node and a node that reads it are tried the same way (an operand both read is loaded once):
   a compiler may exploit an undefined point of the first only to fold the second (a signed sum compared with its
   own operand), and the construct named is the first's.
3. the method: the renderer method that renders that construct (RENDERED_BY, after CStyleRenderer.render's dispatch),
   on the class of the backend's renderer that defines it.

The finding becomes ("parity", "render", "<Class>.<method>") with the kernel, the construct and both values in its
message; when no one-op kernel differs it is ("parity", "render", "-"), still naming the kernel.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from fuzz.check.agree import compare, output_errors
from fuzz.generate.int_kernels import wrap_points
from fuzz.generate.values import edge_values, special_values
from tinyspec.dtype import DType, dtypes, holds_floats
from tinyspec.lower.base import LowerOptions, Pass
from tinyspec.lower.pipeline import run_pass
from tinyspec.lower.start import start_index
from tinyspec.ops.scalar import shift_bits
from tinyspec.ops.spelling import MATH_FN, WRAPPING
from tinyspec.render.program import get_renderer
from tinyspec.runtime.host import Ran, shared
from tinyspec.semantics import evaluate
from tinyspec.semantics.kernel import evaluate_kernel
from tinyspec.uop import GroupOp, Ops, UOp, storage_of

LANG = {"cpu": "c", "opencl": "opencl"}   # the renderer language each backend runs
MAX_PROBES = 24                           # one-op kernels tried per kernel (distinct constructs, in the kernel's order)


@dataclass(frozen=True)
class Narrowed:
  """Where a backend difference lies: the kernel, and the construct and renderer method when one was found."""
  kernel: str
  construct: str | None
  method: str | None
  detail: str

  @property
  def rule(self) -> str: return self.method or "-"

  def message(self) -> str:
    where = f"kernel {self.kernel}" + (f", construct {self.construct} (rendered by {self.method})" if self.construct else "")
    return f"narrowed to {where}: {self.detail}"


# ---- which renderer method renders a construct: CStyleRenderer.render's dispatch, as a table ----
def rendered_by(u: UOp) -> str:
  """The renderer method that renders node u of a LINEAR."""
  if u.op is Ops.CONST: return "render_const"
  if u.op is Ops.CAST: return "render_cast"
  if u.op is Ops.BITCAST: return "render_bitcast"
  sdt = u.src[-1].dtype if u.src else u.dtype
  for test, method in RENDERED_BY:
    if test(u.op, sdt): return method
  return "render_alu"


RENDERED_BY: tuple[tuple[Any, str], ...] = (
  (lambda op, dt: op in MATH_FN and dt.is_float, "float_fn"),
  (lambda op, dt: dt.is_float and op not in GroupOp.Comparison and op is not Ops.WHERE, "render_float_alu"),
  (lambda op, dt: op in (Ops.IDIV, Ops.MOD), "render_divmod"),
  (lambda op, dt: op in (Ops.SHL, Ops.SHR), "_count"),
  (lambda op, dt: op in WRAPPING and dt.kind in "iu", "wrapping"),
)


def method_owner(backend: str, method: str) -> str:
  """"<Class>.<method>": the class of the backend's real renderer, or the base it inherits method from, defining it."""
  mro = type(get_renderer(LANG[backend])).__mro__
  owner = next((c for c in mro if method in c.__dict__), mro[0])
  return f"{owner.__name__}.{method}"


# ---- operand values: the spec's edge points of a dtype ----
def probe_values(dt: DType) -> list[Any]:
  """Values of dt where the spec's meanings change: wrap points and shift counts past the width for ints; signed zeros,
  denormals, the largest values, NaN and infinities, and values past every int's range for floats."""
  if dt.is_bool: return [False, True]
  if dt.is_float:
    big = [1e300, 7.3e-50, 123456789.123] if dt is dtypes.float64 else []
    return [*edge_values(dt), *special_values(dt), 0.0, 1.0, -1.5, 2.5, 300.5, 3e9, -3e9, 1.9e19, *big]
  counts = [shift_bits(dt), shift_bits(dt) + 1, dt.bits]
  return sorted({*wrap_points(dt), *(c for c in counts if c <= dt.max)})


# ---- the pipeline on one graph ----
def lower(passes: Sequence[Pass], root: UOp, kind: str, lo: LowerOptions) -> UOp:
  """root through the pipeline's passes from where its level starts (the spec was checked when the case ran)."""
  g = root
  for p in list(passes)[start_index(passes, root, kind):]: g = run_pass(p, g, lo, check=False)
  return g


def _host_values(backend: str, jobs: list[tuple[UOp, dict]], cc: str | None, timeout: float) -> list[Any]:
  """Each job's outputs on backend in the kernel host; None for a job that raised, died or hung."""
  return [o.values if isinstance(o, Ran) else None for o in shared().run(backend, jobs, cc, timeout)]


# ---- step 1: the kernel ----
@dataclass
class KernelRun:
  call: UOp
  before: list[np.ndarray]
  after: list[np.ndarray]


def reference_runs(lowered: UOp, inputs: dict[int, np.ndarray]) -> list[KernelRun]:
  """Each kernel call of the lowered graph, in the order the reference evaluator runs them, with its args before and
  after it ran (reference meaning)."""
  runs: list[KernelRun] = []

  def runner(call: UOp, args: list[np.ndarray]) -> None:
    before = [np.array(a, copy=True) for a in args]
    var_vals = {a.src[0].arg.name: int(args[k]) for k, a in enumerate(call.src[1:]) if a.op is Ops.BIND}
    evaluate_kernel(call.src[0], args, var_vals)
    runs.append(KernelRun(call, before, [np.array(a, copy=True) for a in args]))
  evaluate(lowered, inputs, kernel_runner=runner)
  return runs


def alone(run: KernelRun) -> tuple[UOp, dict[int, np.ndarray], list[int]]:
  """A graph running only run's kernel, on BUFFERs holding its args' contents before it ran; the arg positions its
  outputs stand for."""
  args = [a if a.op in GroupOp.Variable else storage_of(a) for a in run.call.src[1:]]
  call = run.call.replace(src=(run.call.src[0], *args))
  first: dict[UOp, int] = {}
  for k, a in enumerate(args):
    if a.op is Ops.BUFFER: first.setdefault(a, k)
  inputs = {b.arg.id: run.before[k].reshape(-1) for b, k in first.items()}
  return UOp(Ops.SINK, src=tuple(b.after(call) for b in first)), inputs, list(first.values())


def kernel_name(call: UOp) -> str:
  prg = call.src[0]
  if prg.op is Ops.PROGRAM and len(prg.src) > 2 and hasattr(prg.src[2].arg, "name"): return str(prg.src[2].arg.name)
  return str(prg.arg) if isinstance(prg.arg, str) else "kernel"


def first_differing_kernel(backend: str, runs: list[KernelRun], cc: str | None, timeout: float,
                           error: float | None = None) -> tuple[KernelRun, str] | None:
  """The first kernel call whose outputs on backend, run alone from the reference's args, differ from the reference's.
  error: the relative error bound of every kernel's outputs (fuzz.check.agree; None: of unknown history)."""
  jobs = [alone(r) for r in runs]
  outs = _host_values(backend, [(g, inp) for g, inp, _ in jobs], cc, timeout)
  for r, (_, _, ks), got in zip(runs, jobs, outs):
    if got is None: return r, "the kernel raised or died when run alone"
    msg = compare([r.after[k].reshape(-1) for k in ks], [np.asarray(v).reshape(-1) for v in got], error)
    if msg is not None: return r, msg
  return None


# ---- step 2: the construct ----
def construct_name(u: UOp) -> str:
  if u.op is Ops.CONST: return f"CONST {u.dtype.name} {u.arg!r}"
  if u.op in (Ops.CAST, Ops.BITCAST): return f"{u.op.name} {u.src[0].dtype.name}->{u.dtype.name}"
  consts = "".join(f" src{k}={s.arg!r}" for k, s in enumerate(u.src) if s.op is Ops.CONST)
  return f"{u.op.name} {u.src[-1].dtype.name}{consts}"


def _construct(u: UOp) -> bool:
  """A value node a probe can compute: a constant, or an ALU or cast of values (no `index`, no storage)."""
  if u.op is not Ops.CONST and (u.op not in GroupOp.ALU and u.op not in GroupOp.Cast or not u.src): return False
  return u.dtype is not dtypes.index and all(s.dtype is not dtypes.index and s.op in (*GroupOp.ALU, *GroupOp.Cast, Ops.CONST, Ops.LOAD, Ops.RANGE)
                                              for s in u.src)


def probe(u: UOp, user: UOp | None = None) -> tuple[UOp, dict[int, np.ndarray]] | None:
  """A one-op KERNEL_GRAPH computing u's construct over the edge values of its operands (constants kept), or None for a
  node that is no value construct. With `user` (a node of the kernel that reads u): the two-op kernel computing user
  of u, every other operand of both loaded, one they share loaded once (a wrapped sum compared with its own operand)."""
  exprs = [u] if user is None else [u, user]
  if not all(_construct(x) for x in exprs): return None
  top = exprs[-1]
  leaves = list(dict.fromkeys(x for e in exprs for x in e.src if x.op is not Ops.CONST and x not in exprs))
  grid = list(itertools.product(*(probe_values(x.dtype) for x in leaves)))[:1024] or [()]
  n = len(grid)
  i = UOp.range(n, 0)
  bufs, params, inputs, loads = [UOp.buffer(top.dtype, n, id=1)], [UOp.param(0, top.dtype, n)], {}, {}
  for j, x in enumerate(leaves):
    b, p = UOp.buffer(x.dtype, n, id=len(bufs) + 1), UOp.param(len(params), x.dtype, n)
    with np.errstate(over="ignore"): inputs[b.arg.id] = np.array([g[j] for g in grid], dtype=x.dtype.np)
    bufs.append(b)
    params.append(p)
    loads[x] = p.index(i).load()
  def rebuilt(x: UOp) -> UOp:
    if x.op is Ops.CONST: return x
    return UOp(x.op, x.dtype, tuple(rebuilt(s) if s in exprs else loads.get(s, s) for s in x.src), x.arg)
  body = UOp(Ops.SINK, src=(params[0].index(i).store(rebuilt(top)).end(i),))
  call = UOp(Ops.CALL, src=(body, *bufs), arg="probe")
  return UOp(Ops.SINK, src=(bufs[0].after(call),)), inputs


def zero_signs_differ(a: Any, b: Any) -> bool:
  """Whether two float results hold zeros of different signs at one place (what a constant's rendering must keep)."""
  x, y = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
  if not holds_floats(x) or x.shape != y.shape: return False
  z = (x == 0) & (y == 0)
  return bool(np.any(np.signbit(x[z]) != np.signbit(y[z])))


def first_differing_construct(passes: Sequence[Pass], backend: str, kernel: UOp, lo: LowerOptions, cc: str | None,
                              timeout: float) -> tuple[UOp, str] | None:
  """The first value node of the kernel's LINEAR whose one-op kernel differs on backend from its reference meaning; when
  none does, the first whose two-op kernel with a node that reads it does (a compiler may use an undefined point of
  the first, a signed overflow, only to fold the second)."""
  linear = kernel.src[1].src if kernel.op is Ops.PROGRAM and len(kernel.src) > 1 else ()
  seen, cands = set(), []
  for u in linear:
    if (pr := probe(u)) is None: continue
    key = (construct_name(u), rendered_by(u))
    if key in seen: continue
    seen.add(key)
    cands.append((u, pr))
    if len(cands) >= MAX_PROBES: break
  if (hit := _first_differing(passes, backend, cands, lo, cc, timeout)) is not None:
    return cands[hit[0]][0], f"its one-op kernel: {hit[1]}"
  pairs, seen = [], set()
  for v in linear:
    for u in dict.fromkeys(v.src):
      if u.op is Ops.CONST or (pr := probe(u, v)) is None: continue
      key = (construct_name(u), construct_name(v))
      if key in seen: continue
      seen.add(key)
      pairs.append((u, pr, construct_name(v)))
      if len(pairs) >= MAX_PROBES: break
  if (hit := _first_differing(passes, backend, [(u, pr) for u, pr, _ in pairs], lo, cc, timeout)) is None: return None
  u, _, user = pairs[hit[0]]
  return u, f"its two-op kernel with the {user} that reads it: {hit[1]}"


def _first_differing(passes: Sequence[Pass], backend: str, probes: list[tuple[UOp, tuple[UOp, dict]]], lo: LowerOptions,
                     cc: str | None, timeout: float) -> tuple[int, str] | None:
  """The index of the first (node, probe kernel) whose kernel differs on backend from its reference evaluation, and how."""
  jobs, refs, kept = [], [], []
  for k, (_, (g, inp)) in enumerate(probes):
    try:
      low = lower(passes, g, "kernel", lo)
      refs.append(evaluate(low, inp))
    except Exception:
      continue  # a construct the pipeline does not take on its own: nothing to say about it
    jobs.append((low, inp))
    kept.append(k)
  for k, ref, got in zip(kept, refs, _host_values(backend, jobs, cc, timeout)):
    if got is None: return k, "it raised or died"
    if (msg := compare(ref, got, output_errors(probes[k][1][0]))) is not None: return k, msg
    if probes[k][0].op is Ops.CONST and zero_signs_differ(ref[0], got[0]): return k, "the sign of a zero constant is lost"
  return None


# ---- all of it ----
def narrow(passes: Sequence[Pass], backend: str, root: UOp, kind: str, inputs: dict[int, np.ndarray], lo: LowerOptions,
           cc: str | None = None, timeout: float = 30.0) -> Narrowed | None:
  """Where a parity difference of backend on this case lies (module docstring); None when the kernels, each run alone
  from the reference's args, all agree (the difference is not one kernel's)."""
  lowered = lower(passes, root, kind, lo)
  # a kernel's outputs are values the case's outputs are computed from: within the largest of their error bounds
  found = first_differing_kernel(backend, reference_runs(lowered, inputs), cc, timeout, max(output_errors(root), default=None))
  if found is None: return None
  run, kmsg = found
  name = kernel_name(run.call)
  c = first_differing_construct(passes, backend, run.call.src[0], lo, cc, timeout)
  if c is None: return Narrowed(name, None, None, f"the kernel alone differs ({kmsg}); no one-op kernel of it does")
  u, cmsg = c
  return Narrowed(name, construct_name(u), method_owner(backend, rendered_by(u)), cmsg)


__all__ = ["Narrowed", "narrow", "rendered_by", "method_owner", "probe", "LANG"]


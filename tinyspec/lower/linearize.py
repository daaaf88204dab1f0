"""linearize (KERNEL -> PROGRAM): each kernel body becomes PROGRAM(kernel_sink, LINEAR(nodes in execution order)).

Steps per kernel:
  1. every RANGE gets exactly one END: a RANGE closed by several ENDs (two stores or two reductions over the same
     axis) is copied, with a fresh axis id, into each END after the first, which then runs its own loop;
  2. every IMAGE view is folded into its PARAM's arg (ParamArg.image, the rule fold_image): a program's image is a
     PARAM that carries its dims, which the renderer and the runtime read;
     `index` becomes int32 when every index value of the kernel fits, else int64 (options.int_dtype overrides), by
     the rewrite rule index_to_int, which retypes the whole kernel SINK in one application (a kernel typed half in
     `index` and half in int32 would mix dtypes), then drop_noop_cast removes the casts that became no-ops;
  3. scheduling: a node runs inside the loops of the RANGEs it depends on (through no END that closes them) and
     outside every other loop, so loop-invariant nodes are hoisted. Loops nest as the ENDs say: an END's ranges
     open, in order, inside the loops the END itself runs in. Within one loop body nodes keep the order of a
     depth-first walk from the SINK, sources first; a loop is placed as one item, after everything it uses.
The PROGRAM is built only from a fully lowered kernel: when the step limit of a Trace stops the rewrite before that,
the kernel stays the (KERNEL-legal) kernel SINK it has become so far.
"""
from __future__ import annotations

import dataclasses
import re

from tinyspec.dtype import DType, dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.loop_order import LoopOrderError, one_end_per_range, schedule
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.uop import GroupOp, Ops, UOp


class LinearizeError(ValueError):
  """A kernel whose loops cannot be nested (a RANGE never closed, or used where its loop cannot be open)."""


# ---- 2. index -> int32 / int64 ----
def index_dtype_for(body: UOp, override: DType | None) -> DType:
  """int32 when every `index` node's bounds fit in it, else int64; override when given."""
  if override is not None:
    if override not in (dtypes.int32, dtypes.int64): raise ValueError(f"int_dtype must be int32 or int64, not {override!r}")
    return override
  i32 = dtypes.int32
  nodes = body.toposort()
  # storage of `index` values holds int64 (the evaluator's representation), whichever kernel writes or reads it
  if any(u.op in GroupOp.Storage and u.dtype is dtypes.index for u in nodes): return dtypes.int64
  ok = all(i32.min <= u.vmin and u.vmax <= i32.max for u in nodes if u.dtype is dtypes.index)
  return i32 if ok else dtypes.int64


def index_to_int(ctx: DType, sink: UOp) -> UOp | None:
  """The kernel SINK with every `index` node retyped to ctx; None when none is left."""
  new: dict[UOp, UOp] = {}
  for u in sink.toposort():
    src = tuple(new[s] for s in u.src)
    dt = ctx if u.dtype is dtypes.index else u.dtype
    new[u] = u if dt is u.dtype and all(a is b for a, b in zip(src, u.src)) else u.replace(dtype=dt, src=src)
  return None if new[sink] is sink else new[sink]


def _noop_cast(c: UOp) -> bool: return c.op is Ops.CAST and c.dtype is c.src[0].dtype


def fold_image(img: UOp, p: UOp) -> UOp:
  """IMAGE(PARAM) as the PARAM whose arg carries the image's dims: the same storage, seen as pixels by the program."""
  return p.replace(arg=dataclasses.replace(p.arg, image=img.arg))


pm_lower_index = PatternMatcher([
  ("fold_image", UPat(Ops.IMAGE, src=(UPat(Ops.PARAM, name="p"),), name="img"), fold_image),
  ("index_to_int", UPat(Ops.SINK, name="sink"), index_to_int),
  ("drop_noop_cast", UPat(Ops.CAST, name="c", src=(UPat.var("x"),)), lambda c, x: x if _noop_cast(c) else None),
], name="pm_lower_index")


def _lowered(body: UOp) -> bool:
  return not any(u.dtype is dtypes.index or _noop_cast(u) or u.op is Ops.IMAGE for u in body.toposort())


def _kernel_name(call: UOp | None, i: int) -> str:
  base = call.arg if call is not None and isinstance(call.arg, str) and call.arg else "kernel"
  return f"{re.sub(r'[^A-Za-z0-9_]', '_', base)}_{i}"


def linearize_body(body: UOp, name: str, tables: Tables, options: LowerOptions | None = None,
                   trace: Trace | None = None) -> UOp:
  """PROGRAM(sink, LINEAR(...)) for one kernel SINK, `index` lowered with tables.pm_lower_index (LINEARIZE.tables);
  the partly lowered kernel SINK when trace's step limit stops it first."""
  if body.op is not Ops.SINK: raise LinearizeError(f"linearize takes a kernel SINK, not {body.op.name}")
  if any(u.op is Ops.REDUCE for u in body.toposort()): raise LinearizeError("kernel still holds a REDUCE; run lower_reduce first")
  try: body = one_end_per_range(body)
  except LoopOrderError as e: raise LinearizeError(str(e)) from e
  idt = index_dtype_for(body, options.int_dtype if options else None)
  trace = trace or Trace()
  body = trace.rewrite(body, tables.pm_lower_index, idt, body=True)
  if trace.exhausted and not _lowered(body): return body
  try: order = schedule(body)
  except LoopOrderError as e: raise LinearizeError(str(e)) from e
  return UOp(Ops.PROGRAM, src=(body, UOp(Ops.LINEAR, src=tuple(order))), arg=name)


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  count = [0]
  def one(call: UOp | None, body: UOp) -> UOp:
    if body.op is Ops.PROGRAM: return body
    count[0] += 1
    return linearize_body(body, _kernel_name(call, count[0] - 1), tables, options, trace)
  out = map_kernels(root, one)
  # the kernel graph's own storage of `index` values (a buffer a kernel above stores int64 into) becomes int64 too
  return out if out.op is Ops.PROGRAM else _index_storage_as_int64(out)


def _index_storage_as_int64(root: UOp) -> UOp:
  """root with every `index` node outside the kernels (BUFFERs of index values and the AFTERs of them) retyped to
  int64; a lowered kernel holds no `index` node, so none inside one changes."""
  if not any(u.dtype is dtypes.index for u in root.toposort()): return root
  return index_to_int(dtypes.int64, root) or root


LINEARIZE = Pass("linearize", Stage.KERNEL, Stage.PROGRAM, run, (pm_lower_index,))

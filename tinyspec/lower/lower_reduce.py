"""lower_reduce (KERNEL -> KERNEL): every REDUCE(value, rr...) becomes an accumulator in a REG buffer.

The form is fixed by docs/ir.md (the evaluator gives it the meaning of the reduction):

  acc  = BUFFER(value.dtype, size=1, addrspace=REG)
  init = STORE(INDEX(AFTER(acc, outer...), 0), identity)        outer: the RANGEs the REDUCE depends on, by axis
  upd  = END(STORE(INDEX(acc, 0), op(LOAD(INDEX(AFTER(acc, init, rr...), 0)), value)), rr...)
  read = LOAD(INDEX(AFTER(acc, upd), 0))
"""
from __future__ import annotations

from tinyspec.dtype import DType, dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.ops.scalar import reduce_identity
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.uop import AddrSpace, Ops, UOp, open_ranges


def identity(op: Ops, dt: DType) -> UOp:
  """The identity element of a reduction, the registry's: 0 for ADD, 1 for MUL, the dtype's minimum for MAX."""
  return UOp.const(dt, reduce_identity(op, dt))


def reduce_to_acc(red: UOp) -> UOp:
  """The accumulator form of one REDUCE node."""
  value, rr = red.src[0], red.src[1:]
  if not all(r.op is Ops.RANGE for r in rr): raise ValueError(f"REDUCE over {[r.op.name for r in rr]}: every source after the value must be a RANGE")
  outer = sorted(open_ranges(red), key=lambda r: r.arg.axis)
  acc = UOp.buffer(value.dtype, 1, red.device or "CPU", AddrSpace.REG)
  zero = UOp.const(dtypes.index, 0)
  init = (acc.after(*outer) if outer else acc).index(zero).store(identity(red.arg, value.dtype))
  running = acc.after(init, *rr).index(zero).load()
  upd = acc.index(zero).store(running.alu(red.arg, value)).end(*rr)
  return acc.after(upd).index(zero).load()


pm_lower_reduce = PatternMatcher([
  ("reduce_to_accumulator", UPat(Ops.REDUCE, name="red"), lambda red: reduce_to_acc(red) if not isinstance(red.arg, tuple) else None),
], name="pm_lower_reduce")


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  pm = tables.pm_lower_reduce
  return map_kernels(root, lambda call, body: trace.rewrite(body, pm, body=True))


LOWER_REDUCE = Pass("lower_reduce", Stage.KERNEL, Stage.KERNEL, run, (pm_lower_reduce,))

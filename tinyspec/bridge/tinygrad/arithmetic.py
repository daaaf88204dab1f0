"""Rules of values: constants, ALU ops, casts and reductions, and the implicit broadcast of tinygrad's elementwise
sources made explicit (tinyspec's ops take sources of their own shape). A weak source (a Python literal's dtype) takes
the dtype its consumer decides."""
from __future__ import annotations

from typing import Any, Callable

from tinyspec.bridge.tinygrad.dtype_names import WEAK_DEFAULT, is_weak
from tinyspec.bridge.tinygrad.indexing import is_invalid
from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp


SAME_NAME_ALU = ("NEG", "EXP2", "LOG2", "SIN", "SQRT", "TRUNC", "ADD", "SUB", "MUL", "MAX", "CMPLT", "CMPNE", "CMPEQ",
                 "AND", "OR", "XOR", "SHL", "SHR", "WHERE")


def broadcast(tr: Translator, x: UOp, shape: tuple[int, ...]) -> UOp:
  """tinygrad broadcasts elementwise sources implicitly (numpy's rule); tinyspec needs explicit RESHAPE/EXPAND/PERMUTE."""
  if tr.kernel or x.shape == shape or x.shape is None: return x
  xs = (1,) * (len(shape) - len(x.shape)) + tuple(x.shape)
  if len(xs) != len(shape) or any(a not in (1, b) for a, b in zip(xs, shape)):
    raise Untranslatable("broadcast", tr.stage, f"shape {x.shape} does not broadcast to {shape}")
  keep = [i for i, (a, b) in enumerate(zip(xs, shape)) if a == b]
  new = [i for i in range(len(shape)) if i not in keep]
  y = x if tuple(x.shape) == tuple(shape[i] for i in keep) else x.reshape(tuple(shape[i] for i in keep))
  y = y.expand(tuple(shape[i] for i in new))   # tinyspec EXPAND prepends: axes new..., keep...
  order = new + keep
  perm = tuple(order.index(i) for i in range(len(shape)))
  return y if perm == tuple(range(len(shape))) else y.permute(perm)


def alu(tr: Translator, u: Any, op: Ops, srcs: tuple[UOp, ...], dt: DType) -> UOp:
  if not tr.kernel:
    shape = tr.shape(u)
    srcs = tuple(broadcast(tr, s, shape) for s in srcs)
  return UOp(op, dt, srcs)


def operand_dtype(tr: Translator, u: Any, want: DType | None) -> DType:
  """The dtype weak sources resolve to: the op's own (resolved from the consumer when weak itself); for comparisons the
  first non-weak source's."""
  srcs = u.src[1:] if u.op.name == "WHERE" else u.src
  if u.dtype.name == "bool" or u.op.name in ("CMPLT", "CMPNE", "CMPEQ"):
    strong = [s for s in srcs if not is_weak(s.dtype)]
    return tr.dtype(strong[0]) if strong else WEAK_DEFAULT[srcs[0].dtype.name]
  return tr.dtype(u, want)


def r_const(tr: Translator, u: Any, want: Any) -> UOp:
  if is_invalid(u): raise Untranslatable("CONST", tr.stage, "Invalid outside the gated index WHERE(cond, idx, Invalid)")
  v = u.arg
  if type(v).__name__ == "ConstFloat": v = float(v)
  if not isinstance(v, (bool, int, float)): raise Untranslatable("CONST", tr.stage, f"CONST arg {v!r} is not a scalar")
  dt = tr.dtype(u, want)
  if dt.name != "index" and dt.name.startswith(("int", "uint")) and isinstance(v, float): v = int(v)
  return UOp.const(dt, v)


def r_alu(op: Ops) -> Callable:
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    od = operand_dtype(tr, u, want)
    if op is Ops.WHERE: srcs = (tr.value(u.src[0], dtypes.bool), tr.value(u.src[1], od), tr.value(u.src[2], od))
    else: srcs = tuple(tr.value(s, od) for s in u.src)
    return alu(tr, u, op, srcs, dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else tr.dtype(u, want))
  return fn


def r_floor(is_div: bool) -> Callable:
  """Python floor division and modulo from C's truncating IDIV and MOD: q, r = a IDIV b, a MOD b; where r != 0 and
  r, b differ in sign, q - 1 and r + b. Unsigned: the same as IDIV / MOD."""
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    dt = tr.dtype(u, want)
    if not (dt.name.startswith(("int", "uint")) or dt.name == "index"):
      raise Untranslatable(u.op.name, tr.stage, f"{u.op.name} on {dt.name} (tinygrad floors only integers)")
    a, b = (tr.value(s, dt) for s in u.src)
    q, r = alu(tr, u, Ops.IDIV, (a, b), dt), alu(tr, u, Ops.MOD, (a, b), dt)
    if dt.name.startswith("uint"): return q if is_div else r
    a, b = q.src
    zero, one = broadcast(tr, UOp.const(dt, 0), q.shape), broadcast(tr, UOp.const(dt, 1), q.shape)
    adj = UOp(Ops.AND, dtypes.bool, (UOp(Ops.CMPNE, dtypes.bool, (r, zero)),
                                     UOp(Ops.CMPNE, dtypes.bool, (UOp(Ops.CMPLT, dtypes.bool, (r, zero)), UOp(Ops.CMPLT, dtypes.bool, (b, zero))))))
    if is_div: return UOp(Ops.WHERE, dt, (adj, UOp(Ops.SUB, dt, (q, one)), q))
    return UOp(Ops.WHERE, dt, (adj, UOp(Ops.ADD, dt, (r, b)), r))
  return fn


def r_mulacc(tr: Translator, u: Any, want: Any) -> UOp:
  dt = tr.dtype(u, want)
  a, b, c = (tr.value(s, dt) for s in u.src)
  return alu(tr, u, Ops.ADD, (alu(tr, u, Ops.MUL, (a, b), dt), c), dt)


def r_cast(op: Ops) -> Callable:
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    dt = tr.dtype(u, want)
    x = u.src[0]
    if op is Ops.CAST and x.op.name == "CONST" and is_weak(x.dtype): return tr(x, dt)  # a weak literal takes the cast's dtype
    return UOp(op, dt, (tr.value(x),))
  return fn


def r_reduce(tr: Translator, u: Any, want: Any) -> UOp:
  rop, n = u.arg
  op = {"ADD": Ops.ADD, "MAX": Ops.MAX, "MUL": Ops.MUL}.get(rop.name)
  if op is None: raise Untranslatable("REDUCE", tr.stage, f"reduce op {rop.name}")
  dt = tr.dtype(u, want)
  if tr.kernel:
    src = masked_reduce_source(tr, u.src[0], op, dt)
    return UOp(Ops.REDUCE, dt, (src if src is not None else tr.value(u.src[0], dt), *(tr(r) for r in u.src[1:])), op)
  return UOp(Ops.REDUCE, dt, (tr(u.src[0], dt),), (op, n))


def masked_reduce_source(tr: Translator, src: Any, op: Ops, dt: Any) -> UOp | None:
  """A kernel REDUCE's source WHERE(cond, x, Invalid) (a conv's or pool's backward: an iteration that maps to no element
  adds nothing): tinygrad's codegen makes every value WHERE(cond, x, Invalid) WHERE(cond, x, 0) in its final rewrite
  (pm_remove_invalid), and 0 is ADD's identity, so a sum over it is WHERE(cond, x, 0). Under MAX or MUL that 0 is no
  identity, and whether tinygrad means the iteration skipped or a 0 is not one thing: refused. None for another source."""
  if src.op.name != "WHERE" or not is_invalid(src.src[2]): return None
  if op is not Ops.ADD: raise Untranslatable("REDUCE", tr.stage, f"a {op.name} REDUCE over WHERE(cond, x, Invalid): 0 is not its identity")
  tr.seen(src, src.src[2])
  return UOp(Ops.WHERE, dt, (tr.value(src.src[0], dtypes.bool), tr.value(src.src[1], dt), UOp.const(dt, 0)))


def r_same(op: Ops) -> Callable:
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    return UOp(op, tr.dtype(u, want), tuple(tr.value(s, want) for s in u.src))
  return fn

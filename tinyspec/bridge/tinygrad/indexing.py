"""tinygrad's INDEX forms as tinyspec's INDEX: a gated index (WHERE(cond, idx, Invalid)), several indices into a shaped
buffer, a kernel's index through views of its storage (folded as tinygrad's codegen folds them), and a lane of a
program's vector load. Each function takes the Translator translating the node (`tr`, translator.py, whose reads of an
INDEX as a value come here) and returns tinyspec nodes.
"""
from __future__ import annotations

from typing import Any

from tinyspec.bridge.tinygrad.untranslatable import Untranslatable
from tinyspec.bridge.tinygrad.variables import concrete
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp


def is_invalid(u: Any) -> bool: return u.op.name == "CONST" and type(u.arg).__name__ == "InvalidType"


def index_and_gate(tr: Any, u: Any) -> tuple[UOp, UOp | None]:
  """INDEX(buf, idx) or INDEX(buf, WHERE(cond, idx, Invalid)) -> (tinyspec INDEX, gate or None)."""
  if len(u.src) == 2 and is_vector_load(u.src[0]): return lane_read(tr, u), None
  if tr.kernel and u.src[0].op.name in KERNEL_VIEWS and (folded := view_index(tr, u)) is not None: return folded
  if len(u.src) > 2 or (len(u.src) == 1 and tr.shape(u.src[0]) == ()): return multi_index(tr, u), None
  if len(u.src) != 2: return tr.fail(u, "INDEX with no index source"), None
  buf, idx = u.src
  gate = None
  tr.seen(u)
  if idx.op.name == "WHERE" and is_invalid(idx.src[2]):
    tr.seen(idx, idx.src[2])
    gate, idx = tr.value(idx.src[0], dtypes.bool), idx.src[1]
  elif is_invalid(idx):
    return tr.fail(u, "an INDEX whose index is Invalid everywhere"), None
  # the index (and gate) are values: a read used as one directly (a program's lane of a vector load, buf[lane] with no
  # arithmetic on it; a kernel's INDEX read) is LOAD(INDEX), not the INDEX itself, which is a place, not a number
  return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), tr.value(idx, dtypes.index))), gate


# the views of storage a kernel body may index through (tinygrad's codegen folds them into the index first, pm_mops:
# debuf's SHRINK of a max-sized PARAM to a symbolic shape, a custom kernel's flatten); PAD and EXPAND are not folded
KERNEL_VIEWS = ("RESHAPE", "SHRINK", "PERMUTE", "FLIP")


def view_index(tr: Any, u: Any) -> tuple[UOp, UOp | None] | None:
  """INDEX(view(...view(storage)), idx...) in a kernel body: INDEX(storage, flat index), the index carried back
  through each view as tinygrad's codegen does before anything else (`pm_mops`, apply_movement_op): a SHRINK adds its
  offsets (its sizes only bound what is read: a symbolic one need not be known), PERMUTE reorders, FLIP mirrors, a
  RESHAPE keeps the row-major flat index. The flat index into the storage is row-major over its shape (kernel storage
  is flat). A gate (WHERE(cond, idx, Invalid), one index) stays the gate. None when a view on the way is another."""
  chain, x = [], u.src[0]
  while x.op.name in KERNEL_VIEWS:
    chain.append(x)
    x = x.src[0]
  if x.op.name in ("PAD", "EXPAND"): return None
  idxs, gate = list(u.src[1:]), None
  gated = len(idxs) == 1 and idxs[0].op.name == "WHERE" and is_invalid(idxs[0].src[2])
  if any(is_invalid(i) or (i.op.name == "WHERE" and not gated) for i in idxs): return None
  if gated:
    tr.seen(idxs[0], idxs[0].src[2])
    gate, idxs = tr.value(idxs[0].src[0], dtypes.bool), [idxs[0].src[1]]
  # the index over the view being walked: per axis (a list), or one row-major flat index over its shape; values, as
  # index_and_gate's (a read used as an index is its LOAD)
  at: list[UOp] | UOp = [tr.value(i, dtypes.index) for i in idxs]
  for v in chain:
    n = v.op.name
    tr.seen(v, *(y for s in v.src[1:] for y in s.toposort()))
    if n == "RESHAPE":
      at = _flat(tr, at, v)
      continue
    axes = _axes(tr, at, v)
    if n == "SHRINK":
      offs = v.src[1].src if v.src[1].op.name == "STACK" else (v.src[1],)
      axes = [a if o.op.name == "CONST" and o.arg == 0 else a + tr.value(o, dtypes.index) for a, o in zip(axes, offs)]
    elif n == "PERMUTE":
      axes = [axes[v.marg.index(k)] for k in range(len(axes))]
    else:   # FLIP: axis k reads from the end where flipped
      src_shape = v.src[0].shape
      axes = [UOp.const(dtypes.index, _dim(tr, src_shape[k], v) - 1) - a if f else a
              for k, (a, f) in enumerate(zip(axes, v.marg))]
    at = axes
  tr.seen(u)
  return UOp(Ops.INDEX, tr.dtype(u), (tr(x), _flat(tr, at, x))), gate


def _dim(tr: Any, d: Any, v: Any) -> int:
  if isinstance(d, int): return d
  return concrete(tr, d, v.op.name)   # a dim over a bound variable: the number it binds


def _flat(tr: Any, at: list[UOp] | UOp, v: Any) -> UOp:
  """The row-major flat index over v's shape of per-axis indices (a flat index as it is); of no axes, 0."""
  if not isinstance(at, list): return at
  if not at: return UOp.const(dtypes.index, 0)
  shape, flat = v.shape, at[0]
  for a, d in zip(at[1:], shape[1:]): flat = flat * UOp.const(dtypes.index, _dim(tr, d, v)) + a
  return flat


def _axes(tr: Any, at: list[UOp] | UOp, v: Any) -> list[UOp]:
  """Per-axis indices over v's shape (v the view being walked, its shape the indexed one) of a flat index."""
  if isinstance(at, list): return at
  shape = v.shape
  out, rest = [], at
  for k in range(len(shape) - 1, 0, -1):
    d = UOp.const(dtypes.index, _dim(tr, shape[k], v))
    out.append(rest % d)
    rest = rest // d
  return [rest, *reversed(out)]


def multi_index(tr: Any, u: Any) -> UOp:
  """INDEX(buf, i0, ..., in-1) on a shaped buffer (a precompiled function's PARAM): one flat row-major index; INDEX(buf)
  on a buffer of shape () (a scalar viewed as RESHAPE(PARAM, ()), as a copy kernel of one element reads it): index 0."""
  buf, idxs = u.src[0], u.src[1:]
  shape = tr.shape(buf)
  if buf.op.name == "RESHAPE" and buf.src[0].op.name in ("PARAM", "BUFFER"):
    tr.seen(buf)
    buf = buf.src[0]   # a row-major view of flat storage: index the storage itself
  if len(idxs) != len(shape) or any(i.op.name == "WHERE" for i in idxs):
    raise Untranslatable("INDEX", tr.stage, f"INDEX with {len(idxs)} index sources on a buffer of shape {shape}")
  if not idxs:
    tr.seen(u)
    return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), UOp.const(dtypes.index, 0)))
  flat = tr.value(idxs[0], dtypes.index)
  for i, d in zip(idxs[1:], shape[1:]):
    flat = UOp(Ops.ADD, dtypes.index, (UOp(Ops.MUL, dtypes.index, (flat, UOp.const(dtypes.index, d))), tr.value(i, dtypes.index)))
  tr.seen(u)
  return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), flat))


# ---- a program's vector load, read lane by lane ----
def is_vector_load(u: Any) -> bool:
  """LOAD(SHRINK(storage, offset, CAST(CONST n))): a program's load of n elements at once (tinygrad's coalesced load),
  whose lanes INDEX(load, lane) read."""
  return u.op.name == "LOAD" and len(u.src) == 1 and u.src[0].op.name == "SHRINK" and len(u.src[0].src) == 3


def lane_read(tr: Any, u: Any) -> UOp:
  """INDEX(LOAD(SHRINK(buf, offset, n)), lane): element offset + lane of buf, an INDEX of buf itself (loads have no
  effect, so reading the lane when it is used is reading it when the vector was loaded)."""
  shrink = u.src[0].src[0]
  buf, off, _ = shrink.src
  tr.seen(u.src[0], shrink, *shrink.src[2].toposort())
  o = tr.value(off, dtypes.index)   # a program's index dtype (int32) is the offset's
  idx = UOp(Ops.ADD, o.dtype, (o, tr.value(u.src[1], o.dtype)))
  return UOp(Ops.INDEX, tr.dtype(u), (tr(buf), idx))


def vector_length(x: Any, s: Any, users: dict[Any, list]) -> bool:
  """Whether s is the length (third source) of x, a folded vector load's SHRINK: a size, folded like a PARAM's."""
  return x.op.name == "SHRINK" and len(x.src) == 3 and x.src[2] is s and s is not x.src[1] and folded_vector_part(x, users)


def folded_vector_part(u: Any, users: dict[Any, list]) -> bool:
  """A program's node that its users' translations take in: a vector load all of whose users read lanes of it (and
  its SHRINK), so the LINEAR does not list it."""
  if u.op.name == "SHRINK" and len(u.src) == 3: return bool(users.get(u)) and all(is_vector_load(x) for x in users[u])
  return is_vector_load(u) and bool(users.get(u)) and all(x.op.name == "INDEX" and len(x.src) == 2 and x.src[0] is u for x in users[u])

"""Rules of views: the movement ops (their shape and offset sources folded into the arg, a symbolic size or offset the
number it has under the graph's binding), a RESHAPE of kernel-graph storage, and DETACH (of storage, that storage)."""
from __future__ import annotations

from typing import Any, Callable

from tinyspec.bridge.tinygrad.translator import Translator
from tinyspec.bridge.tinygrad.variables import concrete
from tinyspec.uop import Ops, UOp


# tinygrad's movement ops (its GroupOp.Movement): a view of what they take
GROUP_VIEWS = ("RESHAPE", "EXPAND", "PAD", "SHRINK", "PERMUTE", "FLIP")
# what leaves storage the same storage to write through: its views, and a DETACH of it (r_detach)
STORAGE_VIEWS = (*GROUP_VIEWS, "DETACH")


def on_device(tr: Translator, a: Any) -> Any:
  """A symbolic int of a view's arg on device tr.shard: its DEVICE ranges bound to that number and folded (a shard's
  block, i * size), as tinygrad's own multi rewrite binds them; a itself otherwise."""
  if tr.shard is None or isinstance(a, (int, bool)) or not hasattr(a, "toposort"): return a
  rngs = [r for r in a.toposort() if r.op.name == "RANGE" and r.arg[-1].name == "DEVICE"]
  if not rngs: return a
  b = a.substitute({r: r.const_like(tr.shard) for r in rngs}).simplify()
  return b.arg if b.op.name == "CONST" else a


def r_movement(op: Ops) -> Callable:
  def fn(tr: Translator, u: Any, want: Any) -> UOp:
    if (x := flat_storage(tr, u)) is not None: return x
    arg = u.marg
    if tr.shard is not None:
      arg = tuple(tuple(on_device(tr, b) for b in a) if isinstance(a, tuple) else on_device(tr, a) for a in arg)
      tr.seen(*(x for s in u.src[1:] for x in s.toposort()))  # the device ranges and arithmetic folded into the arg
    if not all(isinstance(a, (int, bool)) for a in _flat(arg)):
      arg = _nested(arg, lambda a: concrete(tr, a, u.op.name))
      # the arg tinygrad reads off the sources is simplified (new nodes): the sources' own nodes are what folded
      tr.seen(*(x for s in u.src[1:] for x in s.toposort()))
    if op is Ops.PAD or op is Ops.SHRINK: arg = tuple((int(o), int(s)) for o, s in arg)
    dt = tr.dtype(u, want)   # a weak source (a variable) takes the view's dtype
    return UOp(op, dt, (tr(u.src[0], dt),), tuple(arg))
  return fn


def _nested(x: Any, fn: Callable) -> Any:
  """fn on every leaf of a (nested) tuple arg."""
  return tuple(_nested(a, fn) for a in x) if isinstance(x, tuple) else fn(x)


def flat_storage(tr: Translator, u: Any) -> UOp | None:
  """A RESHAPE of storage among a kernel graph's args (tinygrad's all-reduce passes a copied shard so): the storage
  itself, as kernel-graph storage is flat (a kernel reads it through its own PARAM); None for any other view."""
  if u.op.name != "RESHAPE" or tr.kernel or tr.stage != "kernel_graph": return None
  base = u.src[0]
  while base.op.name == "AFTER": base = base.src[0]
  if base.op.name not in ("BUFFER", "PARAM"): return None
  tr.seen(*(x for s in u.src[1:] for x in s.toposort()))
  return tr(u.src[0])


def _flat(x: Any) -> list:
  return [b for a in x for b in (_flat(a) if isinstance(a, tuple) else [a])]


def r_detach(tr: Translator, u: Any, want: Any) -> UOp:
  """DETACH(x) stops gradients of a value. Of storage it is that storage, which an assign through it writes
  (`t.detach()[1, 2] = 5` writes t): tinygrad's graphs hold their gradients already, so nothing else reads it."""
  base = u.src[0]
  while base.op.name in STORAGE_VIEWS or base.op.name == "AFTER": base = base.src[0]
  if base.op.name in ("BUFFER", "PARAM"): return tr(u.src[0], want)
  return UOp(Ops.DETACH, tr.dtype(u, want), (tr.value(u.src[0], want),))

"""tinygrad's Variable forms, as read off its UOps (no tinyspec form here: variables.py translates them).

A Variable is a BUFFER or PARAM of address space ALU with a name and a value range; bound (`Variable("i", 1, 10).bind(3)`)
it is `AFTER(var, STORE(var, CONST 3))`. A tensor's shape over bound variables is concrete once each is replaced by its
value, as tinygrad's own slicing `x[:3, :i]` makes it.
"""
from __future__ import annotations

from typing import Any

DEVICE_NUM = "_device_num"  # the scalar PARAM a program reads its device's number from (tinygrad.engine.realize.unwrap_multi binds it)


def is_variable(u: Any) -> bool:
  """A tinygrad Variable: a BUFFER or PARAM of address space ALU with a name and a value range (not _device_num)."""
  a = u.arg
  return u.op.name in ("BUFFER", "PARAM") and getattr(getattr(a, "addrspace", None), "name", None) == "ALU" \
    and getattr(a, "vmin_vmax", None) is not None and getattr(a, "name", None) not in (None, DEVICE_NUM)


def is_bound(u: Any) -> bool:
  """bind()'s AFTER(var, STORE(var, CONST value))."""
  return u.op.name == "AFTER" and len(u.src) == 2 and is_variable(u.src[0]) and u.src[1].op.name == "STORE" \
    and u.src[1].src[0] is u.src[0] and u.src[1].src[1].op.name == "CONST"


def bound_value(u: Any) -> int:
  return int(u.src[1].src[1].arg)


def bound_shape(u: Any) -> tuple[int, ...] | None:
  """u's shape with every bound variable in it replaced by its value; None when a dimension stays symbolic (a variable
  bound nowhere in it)."""
  out = []
  for d in u.shape:
    if not isinstance(d, int):
      d = d.substitute({b: b.const_like(bound_value(b)) for b in d.toposort() if is_bound(b)}).simplify()
      if d.op.name != "CONST": return None
      d = int(d.arg)
    out.append(d)
  return tuple(out)

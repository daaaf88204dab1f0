"""How the modules of the frontend add their ops to Tensor: each defines plain functions of a Tensor and attaches them.

tensor.py holds the core (construction, broadcasting, the IR's elementwise ops, views, REDUCE; its dtypes are
promotion.py's); every other op is built from those in a module named for what it holds (math, reduce, movement,
indexing, nn, losses), and tinyspec.frontend imports them all, so a Tensor has every method however it was imported."""
from __future__ import annotations

from typing import Any, Callable

from tinyspec.frontend.tensor import Tensor

# method name -> the module that defined it, for the generated API listing (tinyspec.frontend.api)
DEFINED_IN: dict[str, str] = {}


def method(fn: Callable) -> Callable:
  """Attach fn to Tensor under its own name."""
  setattr(Tensor, fn.__name__, fn)
  DEFINED_IN[fn.__name__] = fn.__module__
  return fn


def static(fn: Callable) -> Callable:
  """Attach fn to Tensor as a staticmethod (creation functions: Tensor.eye(3), Tensor.cat(a, b))."""
  setattr(Tensor, fn.__name__, staticmethod(fn))
  DEFINED_IN[fn.__name__] = fn.__module__
  return fn


def alias(name: str, fn: Any) -> None:
  """Attach fn to Tensor under another name (clip for clamp, __pow__ for pow)."""
  setattr(Tensor, name, fn)
  DEFINED_IN[name] = getattr(fn, "__module__", DEFINED_IN.get(getattr(fn, "__name__", ""), ""))


def named(name: str) -> Callable[[Callable], Callable]:
  """Attach the decorated function under name: for ops named like a builtin (abs, round, pow, sum, any, all), whose
  module keeps the builtin under its own name."""
  def deco(fn: Callable) -> Callable:
    setattr(Tensor, name, fn)
    DEFINED_IN[name] = fn.__module__
    return fn
  return deco

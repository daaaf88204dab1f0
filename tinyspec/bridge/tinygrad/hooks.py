"""Hooks into tinygrad: one of its functions (a module attribute, or the function a decorated one calls) wrapped for the
duration of a block and restored on the way out, whatever the block raised; a cache emptied for the block and its
entries put back. Where this tinygrad has no such function (another version moved it), nothing is wrapped and
compat names it once: that stage is not captured."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from tinyspec.bridge.tinygrad import compat


@contextlib.contextmanager
def wrapped(module: Any, name: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
  """module.name wrapped for the block; where this tinygrad has none (compat.hook_target names it), nothing is."""
  orig = compat.hook_target(module, name)
  if orig is None:
    yield
    return
  setattr(module, name, compat.tolerant(make(orig), orig, f"{module.__name__}.{name}"))
  try: yield
  finally: setattr(module, name, orig)


@contextlib.contextmanager
def wrapped_cell(fn: Any, cell: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
  """Wrap the function a decorated tinygrad function calls (its closure cell `cell`), in place. tinygrad's pattern
  matchers copy the globals of their functions when first compiled, so replacing a module attribute that a pattern's
  function calls (get_kernel_graph, called by lower_sink_to_linear) is not seen once compiled; the decorated function
  object itself is what they hold, so its cell is what gets wrapped. Where fn has no such cell in this tinygrad
  (compat.closure_cell names it), nothing is."""
  c = compat.closure_cell(fn, cell)
  if c is None:
    yield
    return
  orig = c.cell_contents
  c.cell_contents = compat.tolerant(make(orig), orig, f"{fn.__module__}.{fn.__qualname__}")
  try: yield
  finally: c.cell_contents = orig


@contextlib.contextmanager
def emptied(cache: dict) -> Iterator[None]:
  """cache emptied for the block (tinygrad would take from it what the hooks must see made), its entries put back after."""
  saved = dict(cache)
  cache.clear()
  try: yield
  finally:
    cache.clear()
    cache.update(saved)

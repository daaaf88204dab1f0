"""@function: trace a Python function of Tensors into a value call CALL(TUPLE(outs...), args...) read through GETTUPLE.

Tensor argument k becomes PARAM slot k (flat, of the argument's size and dtype), reshaped to the argument's shape
inside the body. BUFFERs the body reads that were not arguments (captured from the closure) become extra args after
the explicit ones, each with its own PARAM slot. A @function called while tracing another nests: its CALL is part of
the outer body. Tracing the same function on the same args builds the identical, interned CALL.

`@function(precompile=True)` (tinygrad's spelling) builds a precompiled call instead, the form callify's precompile mode
gives a value call (tinyspec/lower/callify.py, docs/ir.md): its body stores output i into PARAM slot n+i (n args), bound
to a fresh output BUFFER, and each result is AFTER(that BUFFER, CALL). It is opaque: lowered into its own kernels,
never inlined, and no gradient flows through it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from tinyspec.frontend.tensor import Tensor
from tinyspec.lower.callify import output_buffers, precompiled_output
from tinyspec.uop import Ops, UOp, home_device, substitute, walk


def _outside_calls(u: UOp) -> tuple[UOp, ...]:
  return u.src[1:] if u.op is Ops.CALL else u.src


def captured_buffers(root: UOp) -> list[UOp]:
  """BUFFERs reachable from root outside CALL bodies, in first-seen order."""
  return [u for u in walk((root,), _outside_calls) if u.op is Ops.BUFFER]


class Function:
  """A traced function: calling it builds a value CALL and returns Tensors reading its outputs."""

  def __init__(self, fn: Callable[..., Any], name: str | None = None, precompile: bool = False):
    self.fn, self.name, self.precompile = fn, name or fn.__name__, precompile
    # the value calls precompiled so far: held so that their output BUFFER ids (kept by callify per live call node) stay,
    # and tracing the same function on the same args again builds the same precompiled call
    self.traced: set[UOp] = set()
    functools.update_wrapper(self, fn)

  def __call__(self, *args: Any) -> Tensor | tuple[Tensor, ...]:
    tensors = [a if isinstance(a, Tensor) else Tensor(a) for a in args]
    params = [UOp.param(k, t.dtype, t.size, home_device(t.uop)) for k, t in enumerate(tensors)]
    inner = [Tensor(p.reshape(t.shape)) for p, t in zip(params, tensors)]
    ret = self.fn(*inner)
    single = isinstance(ret, Tensor)
    outs = (ret,) if single else tuple(ret) if isinstance(ret, (tuple, list)) else None
    if not outs or not all(isinstance(o, Tensor) for o in outs):
      raise TypeError(f"@function {self.name} must return a Tensor or a tuple of Tensors, got {type(ret).__name__}")
    body = UOp(Ops.TUPLE, src=tuple(o.uop for o in outs))
    caps = captured_buffers(body)
    mapping = {b: UOp.param(len(tensors) + j, b.dtype, b.arg.size, b.arg.device, b.arg.addrspace) for j, b in enumerate(caps)}
    body = substitute(body, mapping, into_calls=False)
    call = UOp(Ops.CALL, src=(body, *(t.uop for t in tensors), *caps), arg=self.name)
    if self.precompile:
      self.traced.add(call)
      bufs = output_buffers(call)
      res = tuple(Tensor(precompiled_output(call, bufs, i)) for i in range(len(outs)))
    else: res = tuple(Tensor(call.gettuple(i)) for i in range(len(outs)))
    return res[0] if single else res


def function(fn: Callable[..., Any] | None = None, *, name: str | None = None, precompile: bool = False) -> Any:
  """Decorator: `@function`, `@function(name="f")`, or `@function(precompile=True)` for a precompiled call."""
  if fn is None: return lambda f: Function(f, name, precompile)
  return Function(fn, name, precompile)

"""A PROGRAM's source in a renderer's language: the renderer of a backend, the kernel's parameters, the SOURCE node.

The renderers register themselves by backend name (tinyspec.render.cstyle.register) when their module is imported;
get_renderer imports the module of a known backend on first use.
"""
from __future__ import annotations

import importlib

from tinyspec.dtype import DType
from tinyspec.render.cstyle import RENDERERS, CStyleRenderer, check_identifier, int_field
from tinyspec.uop import Ops, SourceArg, UOp, storage_of

# modules that register a renderer on import, by backend name
RENDERER_MODULES = {"c": "tinyspec.render.c", "opencl": "tinyspec.render.opencl"}


def kernel_source(renderer: CStyleRenderer, call: UOp | None, prg: UOp) -> tuple[str, str]:
  """(entry name, source text) of a PROGRAM(sink, LINEAR) in renderer's language, one parameter per arg of call."""
  name = check_identifier(prg.arg if isinstance(prg.arg, str) and prg.arg else "kernel", "PROGRAM name")
  return name, renderer.render(name, list(prg.src[1].src), kernel_params(call, prg.src[1].src))


def get_renderer(backend: str) -> CStyleRenderer:
  """The renderer of backend; ValueError naming the known backends when there is none. A backend module registers
  its CStyleRenderer (tinyspec.render.cstyle.register) when imported."""
  if backend not in RENDERERS and backend in RENDERER_MODULES:
    try: importlib.import_module(RENDERER_MODULES[backend])
    except ImportError as e: raise ValueError(f"renderer for backend {backend!r} cannot be loaded: {e}") from e
  if backend in RENDERERS: return RENDERERS[backend]()
  raise ValueError(f"no renderer for backend {backend!r}; known: {', '.join(sorted(set(RENDERERS) | set(RENDERER_MODULES)))}")


def kernel_params(call: UOp | None, linear: tuple[UOp, ...]) -> list[tuple[DType | None, bool]]:
  """(dtype, restrict) for every parameter slot of the kernel."""
  pdt = {int_field(u, "slot", 0): u.dtype for u in linear if u.op is Ops.PARAM}
  if call is None:
    n = max(pdt, default=-1) + 1
    return [(pdt.get(k), False) for k in range(n)]
  args = call.src[1:]
  stores = [storage_of(a) for a in args]
  restrict = len(set(stores)) == len(stores)
  return [(pdt.get(k, a.dtype), restrict) for k, a in enumerate(args)]


def render_program(call: UOp | None, prg: UOp, renderer: CStyleRenderer) -> UOp:
  """prg with its SOURCE in renderer's language."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 2 or prg.src[1].op is not Ops.LINEAR:
    raise ValueError(f"render takes PROGRAM(sink, LINEAR) bodies, not {prg.op.name}; run linearize first")
  if len(prg.src) == 3 and prg.src[2].arg.lang == renderer.lang: return prg
  name, text = kernel_source(renderer, call, prg)
  return prg.replace(src=(prg.src[0], prg.src[1], UOp(Ops.SOURCE, arg=SourceArg(renderer.lang, name, text))))

"""render (PROGRAM -> PROGRAM): PROGRAM(sink, linear) becomes PROGRAM(sink, linear, SOURCE(SourceArg(lang, name, text))).

options.backend picks the renderer from tinyspec.render.cstyle.RENDERERS ("c" here; the OpenCL renderer registers
"opencl" when tinyspec.render.opencl is imported). Function parameters follow the CALL's args in slot order; they
are `restrict` unless two args are the same storage.
"""
from __future__ import annotations

import importlib
from typing import Callable

from tinyspec.dtype import DType
from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.render.cstyle import RENDERERS, CStyleRenderer
from tinyspec.spec import Stage
from tinyspec.uop import Ops, SourceArg, UOp

# modules that register a renderer on import, by backend name
RENDERER_MODULES = {"c": "tinyspec.render.c", "opencl": "tinyspec.render.opencl"}


class KernelRenderer:
  """What the render pass needs of a backend: its language and kernel_source(call, prg) -> (name, text)."""
  def __init__(self, lang: str, fn: Callable[[UOp | None, UOp], tuple[str, str]]):
    self.lang, self.kernel_source = lang, fn


def _cstyle(r: CStyleRenderer) -> KernelRenderer:
  def fn(call: UOp | None, prg: UOp) -> tuple[str, str]:
    name = prg.arg or "kernel"
    return name, r.render(name, list(prg.src[1].src), kernel_params(call, prg.src[1].src))
  return KernelRenderer(r.lang, fn)


def get_renderer(backend: str) -> KernelRenderer:
  """The renderer of backend; ValueError naming the known backends when there is none. A backend module either
  registers a CStyleRenderer (tinyspec.render.cstyle.register) or defines render_program(prg) -> (text, name)."""
  mod = None
  if backend not in RENDERERS and backend in RENDERER_MODULES:
    try: mod = importlib.import_module(RENDERER_MODULES[backend])
    except ImportError as e: raise ValueError(f"renderer for backend {backend!r} cannot be loaded: {e}") from e
  if backend in RENDERERS: return _cstyle(RENDERERS[backend]())
  if mod is not None and callable(fn := getattr(mod, "render_program", None)):
    return KernelRenderer(backend, lambda call, prg: tuple(reversed(fn(prg))))
  raise ValueError(f"no renderer for backend {backend!r}; known: {', '.join(sorted(set(RENDERERS) | set(RENDERER_MODULES)))}")


def _storage_of(u: UOp) -> UOp:
  while u.op is Ops.AFTER: u = u.src[0]
  return u


def kernel_params(call: UOp | None, linear: tuple[UOp, ...]) -> list[tuple[DType | None, bool]]:
  """(dtype, restrict) for every parameter slot of the kernel."""
  pdt = {u.arg.slot: u.dtype for u in linear if u.op is Ops.PARAM}
  if call is None:
    n = max(pdt, default=-1) + 1
    return [(pdt.get(k), False) for k in range(n)]
  args = call.src[1:]
  stores = [_storage_of(a) for a in args]
  restrict = len(set(stores)) == len(stores)
  return [(pdt.get(k, a.dtype), restrict) for k, a in enumerate(args)]


def render_program(call: UOp | None, prg: UOp, renderer: KernelRenderer) -> UOp:
  """prg with its SOURCE in renderer's language."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 2 or prg.src[1].op is not Ops.LINEAR:
    raise ValueError(f"render takes PROGRAM(sink, LINEAR) bodies, not {prg.op.name}; run linearize first")
  if len(prg.src) == 3 and prg.src[2].arg.lang == renderer.lang: return prg
  name, text = renderer.kernel_source(call, prg)
  return prg.replace(src=(prg.src[0], prg.src[1], UOp(Ops.SOURCE, arg=SourceArg(renderer.lang, name, text))))


def _run(root: UOp, options: LowerOptions, trace: Trace) -> UOp:
  renderer = get_renderer(options.backend)
  return map_kernels(root, lambda call, body: render_program(call, body, renderer))


RENDER = Pass("render", Stage.PROGRAM, Stage.PROGRAM, _run, ())

"""A PROGRAM's source in a renderer's language: the renderer of a backend, the kernel's parameters, the SOURCE node.

The renderers register themselves by backend name (tinyspec.render.cstyle.register) when their module is imported,
which the package does (tinyspec/render/__init__.py): get_renderer finds every known backend there.
"""
from __future__ import annotations

from tinyspec.dtype import DType, dtypes
from tinyspec.render.cstyle import RENDERERS, CStyleRenderer, KernelParam, check_identifier, int_field
from tinyspec.uop import GroupOp, Ops, SourceArg, UOp, storage_of

def kernel_source(renderer: CStyleRenderer, call: UOp | None, prg: UOp) -> tuple[str, str]:
  """(entry name, source text) of a PROGRAM(sink, LINEAR) in renderer's language, one parameter per arg of call."""
  name = check_identifier(prg.arg if isinstance(prg.arg, str) and prg.arg else "kernel", "PROGRAM name")
  return name, renderer.render(name, list(prg.src[1].src), kernel_params(call, prg.src[1].src))


def get_renderer(backend: str) -> CStyleRenderer:
  """The renderer of backend; ValueError naming the known backends when there is none."""
  if backend in RENDERERS: return RENDERERS[backend]()
  raise ValueError(f"no renderer for backend {backend!r}; known: {', '.join(sorted(RENDERERS))}")


def var_param_dtype(arg: UOp, linear: tuple[UOp, ...]) -> DType:
  """The scalar dtype a variable arg (BIND or DEFINE_VAR) is passed as: that of the kernel's DEFINE_VAR of the same name
  (linearize gave it a concrete width), else the arg's own, `index` as int64."""
  name = (arg.src[0] if arg.op is Ops.BIND else arg).arg.name
  dt = next((u.dtype for u in linear if u.op is Ops.DEFINE_VAR and u.arg.name == name), arg.dtype)
  return dtypes.int64 if dt is dtypes.index else dt


def kernel_params(call: UOp | None, linear: tuple[UOp, ...]) -> list[KernelParam]:
  """The parameters of the kernel, one per arg of call: a pointer per storage arg (restrict when no two args share
  storage), a scalar per variable arg. Without a call, one pointer per PARAM slot and a scalar per DEFINE_VAR, by name."""
  pdt = {int_field(u, "slot", 0): u.dtype for u in linear if u.op is Ops.PARAM}
  images = {u.arg.slot: u.arg.image for u in linear if u.op is Ops.PARAM and getattr(u.arg, "image", None) is not None}
  written = {storage_of(u.src[0].src[0]).arg.slot for u in linear if u.op in GroupOp.Writes and u.src and u.src[0].op is Ops.INDEX
             and storage_of(u.src[0].src[0]).op is Ops.PARAM}
  def storage(k: int, dt: DType | None, restrict: bool = False) -> KernelParam:
    return KernelParam(dt, restrict, image=images.get(k), writes=k in written)
  if call is None:
    n = max(pdt, default=-1) + 1
    vs = sorted({u.arg.name: u for u in linear if u.op is Ops.DEFINE_VAR}.items())
    return [storage(k, pdt.get(k)) for k in range(n)] + [KernelParam(var_param_dtype(u, linear), var=name) for name, u in vs]
  args = call.src[1:]
  stores = [storage_of(a) for a in args if a.op not in GroupOp.Variable]
  restrict = len(set(stores)) == len(stores)
  return [KernelParam(var_param_dtype(a, linear), var=(a.src[0] if a.op is Ops.BIND else a).arg.name) if a.op in GroupOp.Variable
          else storage(k, pdt.get(k, a.dtype), restrict) for k, a in enumerate(args)]


def render_program(call: UOp | None, prg: UOp, renderer: CStyleRenderer) -> UOp:
  """prg with its SOURCE in renderer's language."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 2 or prg.src[1].op is not Ops.LINEAR:
    raise ValueError(f"render takes PROGRAM(sink, LINEAR) bodies, not {prg.op.name}; run linearize first")
  if len(prg.src) == 3 and prg.src[2].arg.lang == renderer.lang: return prg
  name, text = kernel_source(renderer, call, prg)
  return prg.replace(src=(prg.src[0], prg.src[1], UOp(Ops.SOURCE, arg=SourceArg(renderer.lang, name, text))))

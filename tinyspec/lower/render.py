"""render (PROGRAM -> PROGRAM): PROGRAM(sink, linear) becomes PROGRAM(sink, linear, SOURCE(SourceArg(lang, name, text))).

options.backend picks the renderer (tinyspec.render.program.get_renderer: "c" or "opencl"). Function parameters
follow the CALL's args in slot order; they are `restrict` unless two args are the same storage.
"""
from __future__ import annotations

from tinyspec.lower.base import LowerOptions, Pass, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.render.program import RENDERER_MODULES, get_renderer, kernel_params, kernel_source, render_program
from tinyspec.spec import Stage
from tinyspec.uop import UOp

__all__ = ["RENDER", "RENDERER_MODULES", "get_renderer", "kernel_params", "kernel_source", "render_program"]

def _run(root: UOp, options: LowerOptions, trace: Trace) -> UOp:
  renderer = get_renderer(options.backend)
  return map_kernels(root, lambda call, body: render_program(call, body, renderer))


RENDER = Pass("render", Stage.PROGRAM, Stage.PROGRAM, _run, ())

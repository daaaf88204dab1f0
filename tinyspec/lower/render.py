"""render (PROGRAM -> PROGRAM): PROGRAM(sink, linear) gets its SOURCE, the LINEAR rendered to C or OpenCL C.

PROGRAM(sink, linear) becomes PROGRAM(sink, linear, SOURCE(SourceArg(lang, name, text))).

options.backend picks the renderer (tinyspec.render.program.get_renderer: "c" or "opencl"). Function parameters
follow the CALL's args in slot order; they are `restrict` unless two args are the same storage.
"""
from __future__ import annotations

from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.render.program import get_renderer, kernel_params, kernel_source, render_program
from tinyspec.spec import Stage
from tinyspec.uop import UOp

__all__ = ["RENDER", "run", "get_renderer", "kernel_params", "kernel_source", "render_program"]

def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  """Every kernel PROGRAM rendered: a renderer, no rule table (tables is empty)."""
  renderer = get_renderer(options.backend)
  return map_kernels(root, lambda call, body: render_program(call, body, renderer))


RENDER = Pass("render", Stage.PROGRAM, Stage.PROGRAM, run, ())

"""Renderers: PROGRAM LINEARs to C-like source. cstyle holds the shared base; c and opencl the languages, each
registering its renderer by backend name when imported (imported here, so every backend is known wherever a renderer
is asked for); program the source of one PROGRAM. The render pass itself is tinyspec.lower.render."""
from tinyspec.render import c, opencl

__all__ = ["c", "opencl"]

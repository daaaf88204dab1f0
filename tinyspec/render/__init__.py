"""Renderers: PROGRAM LINEARs to C-like source. cstyle holds the shared base; c and opencl the languages; program
the source of one PROGRAM. The render pass itself is tinyspec.lower.render."""

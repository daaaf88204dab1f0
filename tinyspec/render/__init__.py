"""Renderers: PROGRAM LINEARs to C-like source. cstyle holds the shared base; c and opencl the languages."""


def __getattr__(name: str):
  # the render pass lives in tinyspec.lower.render; reachable from here too without an import cycle
  if name == "RENDER":
    from tinyspec.lower.render import RENDER
    return RENDER
  raise AttributeError(f"module 'tinyspec.render' has no attribute {name!r}")

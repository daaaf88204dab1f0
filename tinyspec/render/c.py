"""The C renderer of the CPU backend: C99 compiled with -fwrapv, so signed arithmetic wraps as the evaluator says."""
from __future__ import annotations

from tinyspec.render.cstyle import CStyleRenderer, register


class CRenderer(CStyleRenderer):
  lang = "c"
  headers = ("stdint.h", "math.h", "string.h")


register("c", CRenderer)

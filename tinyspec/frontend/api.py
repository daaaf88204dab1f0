"""The supported Tensor API, listed from the class itself: every public method and property of Tensor, grouped by the
frontend module that defines it, and the Python operators it overloads. README.md's "Tensor API" section is this
listing, word for word (a test holds them equal).

    python -m tinyspec.frontend.api      # print the listing
"""
from __future__ import annotations

import tinyspec.frontend  # noqa: F401  (attaches every module's ops to Tensor)
from tinyspec.frontend.attach import DEFINED_IN
from tinyspec.frontend.tensor import Tensor

OPERATORS = {
  "__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__floordiv__": "//", "__mod__": "%", "__pow__": "**",
  "__matmul__": "@", "__and__": "&", "__or__": "|", "__xor__": "^", "__invert__": "~", "__lshift__": "<<", "__rshift__": ">>",
  "__neg__": "unary -", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=", "__eq__": "==", "__ne__": "!=",
  "__getitem__": "[]", "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=",
}
ORDER = ["tensor", "creation", "math", "reduce", "sort", "movement", "indexing", "nn", "losses"]
WHAT = {"tensor": "core", "creation": "creation", "math": "elementwise math and activations", "reduce": "reductions and scans",
        "sort": "sorting", "movement": "layout", "indexing": "indexing", "nn": "nn", "losses": "losses"}


def methods_by_module() -> dict[str, list[str]]:
  """{module short name: sorted public Tensor attributes it defines}; what no module attached is tensor.py's core."""
  out: dict[str, list[str]] = {m: [] for m in ORDER}
  for name in dir(Tensor):
    if name.startswith("_"): continue
    mod = DEFINED_IN.get(name, "tinyspec.frontend.tensor").rsplit(".", 1)[-1]
    out.setdefault(mod, []).append(name)
  return {m: sorted(v) for m, v in out.items() if v}


def operators() -> list[str]:
  return [sym for dunder, sym in OPERATORS.items() if callable(getattr(Tensor, dunder, None))]


def listing() -> str:
  """The markdown listing: one line per module, then the operators."""
  lines = [f"- `tinyspec/frontend/{m}.py` ({WHAT.get(m, m)}): " + ", ".join(f"`{n}`" for n in names) for m, names in methods_by_module().items()]
  lines.append("- operators: " + " ".join(f"`{s}`" for s in operators()))
  return "\n".join(lines) + "\n"


if __name__ == "__main__":
  print(listing(), end="")

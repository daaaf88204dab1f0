"""How a drawn node looks: colours by op group, compact arg text, HTML labels and escaped tooltips."""
from __future__ import annotations

import html
import math
from typing import Any

from tinyspec.opcodes import op_group
from tinyspec.uop import AddrSpace, BufferArg, Ops, ParamArg, RangeArg, SourceArg, UOp, VarArg

FONT = "Helvetica"
GROUP_COLORS: dict[str, str] = {
  "source": "#c8e6c9", "movement": "#bbdefb", "elementwise": "#fff59d", "reduce": "#ffcc80",
  "call": "#e1bee7", "effects": "#e0e0e0", "range": "#b2ebf2", "program": "#f8bbd0", "variable": "#d7ccc8",
  "multi": "#ffab91",
}
GROUP_TITLES: dict[str, str] = {"range": "range form", "call": "calls", "effects": "effects, order", "variable": "variables", "multi": "multi-device"}
UNKNOWN_COLOR = "#ffffff"
VIOLATION_COLOR = "#d50000"
FOCUS_COLOR = "#ff6d00"
NEW_COLOR = "#2e7d32"
EDGE_COLOR = "#616161"
LINEAR_EDGE_COLOR = "#bdbdbd"


def group_of(u: UOp) -> str:
  """The op group of u, "unknown" for anything op_group does not know (a malformed node must still draw)."""
  try: return op_group(u.op)
  except (KeyError, TypeError): return "unknown"


def group_color(group: str) -> str:
  return GROUP_COLORS.get(group, UNKNOWN_COLOR)


def cap(s: str, n: int) -> str:
  """s cut to n characters, the cut marked with an ellipsis."""
  return s if len(s) <= n else s[:max(n - 1, 0)] + "…"


def printable(s: str) -> str:
  # control characters (tabs, carriage returns in rendered source) would corrupt dot input and SVG text
  return "".join(c if c.isprintable() else " " for c in s)


def h(s: str) -> str:
  """Text safe inside a graphviz HTML-like label (graphviz reads backslash escapes even there, so they are doubled)."""
  return html.escape(printable(s).replace("\\", "\\\\"), quote=True)


def gv_text(lines: list[str]) -> str:
  """Lines as a plain (non-HTML) dot string such as a tooltip, joined by dot's newline escape. Graphviz unescapes a
  tooltip twice (backslashes) and decodes entities in it, so backslashes are quadrupled and ampersands encoded."""
  return "\\n".join(printable(x).replace("&", "&amp;").replace("\\", "\\\\\\\\").replace('"', '\\"') for x in lines)


def _num(x: Any) -> str:
  if isinstance(x, bool): return "T" if x else "F"
  if isinstance(x, float):
    if math.isnan(x): return "nan"
    if math.isinf(x): return "inf" if x > 0 else "-inf"
    return repr(x)
  return repr(x) if not isinstance(x, str) else x


def compact(a: Any) -> str:
  """A short text for an arg value: tuples without padding, enums by name, bools as T/F."""
  if isinstance(a, tuple): return "(" + ",".join(compact(x) for x in a) + ("," if len(a) == 1 else "") + ")"
  if isinstance(a, (Ops, AddrSpace)): return a.name
  if isinstance(a, (bool, int, float, str)): return _num(a)
  return repr(a)


def _storage_extra(device: str, addrspace: AddrSpace) -> str:
  extra = "" if addrspace is AddrSpace.GLOBAL else f" {addrspace.name}"
  return extra + ("" if device == "CPU" else f" @{device}")


def arg_lines(u: UOp, width: int) -> list[str]:
  """The arg of u as at most three short lines (SOURCE text abbreviated to its first lines)."""
  a = u.arg
  if a is None: return []
  if isinstance(a, SourceArg):
    text = [ln.strip() for ln in str(a.text).splitlines() if ln.strip()]
    # the signature says more than the #include lines that open most rendered kernels
    text = [ln for ln in text if not ln.startswith("#")] or text
    return [cap(f"{a.lang}:{a.name} ({len(a.text)} chars)", width)] + [cap(ln, width) for ln in text[:2]]
  if isinstance(a, ParamArg): s = f"slot {a.slot} size {a.size}{_storage_extra(a.device, a.addrspace)}"
  elif isinstance(a, BufferArg): s = f"id {a.id} size {a.size}{_storage_extra(a.device, a.addrspace)}"
  elif isinstance(a, RangeArg): s = f"axis {a.axis} {a.kind.name}"
  elif isinstance(a, VarArg): s = f"{a.name} in [{_num(a.min)}, {_num(a.max)}]"
  elif u.op is Ops.REDUCE and isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], Ops): s = f"{a[0].name} first {compact(a[1])} axes"
  elif u.op is Ops.GETTUPLE: s = f"[{compact(a)}]"
  elif u.op in (Ops.PAD, Ops.SHRINK) and isinstance(a, tuple): s = " ".join(f"{compact(x[0])}:{compact(x[1])}" if isinstance(x, tuple) and len(x) == 2
                                                                          else compact(x) for x in a)
  else:
    try: s = compact(a)
    except Exception: s = f"<{type(a).__name__}>"
  return [cap(s, width)]


def type_line(u: UOp) -> str:
  """dtype and shape, e.g. "float32 (4,4)"; empty for a void effect."""
  dt = getattr(u.dtype, "name", str(u.dtype))
  if not u.shape_ok: return f"{dt} (bad shape)"
  shp = u.shape
  parts = [] if dt == "void" and shp is None else [dt]
  if shp is not None and shp != (): parts.append(compact(shp))
  return " ".join(parts)


def full_text(u: UOp, limit: int = 600) -> list[str]:
  """The tooltip of a node: op, dtype, shape and the whole arg (SOURCE text included), capped at limit characters."""
  head = f"{u.op.name} {type_line(u)}".strip()
  a = u.arg
  if isinstance(a, SourceArg): body = [f"{a.lang}:{a.name}"] + str(a.text).splitlines()
  elif a is None: body = []
  else:
    try: body = [f"arg={a!r}"]
    except Exception: body = [f"arg=<{type(a).__name__}>"]
  out, n = [head], len(head)
  for ln in body:
    if n + len(ln) > limit:
      out.append(cap(ln, max(limit - n, 1)) if n < limit else "…")
      break
    out.append(ln)
    n += len(ln)
  return out


def html_label(lines: list[tuple[str, str]]) -> str:
  """An HTML-like label from (kind, text) lines; kind is "op" (bold), "text", "note" (italic) or "rule" (red, bold)."""
  parts = []
  for kind, text in lines:
    t = h(text)
    if kind == "op": parts.append(f"<B>{t}</B>")
    elif kind == "note": parts.append(f"<I>{t}</I>")
    elif kind == "rule": parts.append(f'<FONT COLOR="{VIOLATION_COLOR}"><B>{t}</B></FONT>')
    else: parts.append(t)
  return "<" + "<BR/>".join(parts) + ">"


def legend_label(groups: list[str], extras: list[tuple[str, str, str]]) -> str:
  """A table with a swatch per op group present, then (name, fill, border) swatches for the highlight kinds used."""
  rows = ['<TR><TD COLSPAN="2"><B>op groups</B></TD></TR>']
  for g in groups:
    rows.append(f'<TR><TD BGCOLOR="{group_color(g)}" WIDTH="18"> </TD><TD ALIGN="LEFT">{h(GROUP_TITLES.get(g, g))}</TD></TR>')
  for name, fill, border in extras:
    rows.append(f'<TR><TD BGCOLOR="{fill}" COLOR="{border}" BORDER="3" WIDTH="18"> </TD><TD ALIGN="LEFT">{h(name)}</TD></TR>')
  return '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="3">' + "".join(rows) + "</TABLE>>"

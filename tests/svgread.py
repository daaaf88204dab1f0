"""Reading the SVG the drawings produce: the `<g>` elements of drawn ops by class, their text, op and node name."""
from __future__ import annotations

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def classes(el: ET.Element) -> set[str]:
  return set((el.get("class") or "").split())


def elems(svg: ET.Element, cls: str) -> list[ET.Element]:
  """The `<g>` elements whose class list holds cls."""
  return [g for g in svg.iter(SVG + "g") if cls in classes(g)]


def text(el: ET.Element) -> str:
  return " ".join(t.text for t in el.iter(SVG + "text") if t.text)


def op_of(el: ET.Element) -> str:
  (op,) = [c[3:] for c in classes(el) if c.startswith("op-")]
  return op


def title(el: ET.Element) -> str:
  """The graphviz node name of a drawn element."""
  return el.find(SVG + "title").text

"""The args of IR nodes: storage (PARAM's ParamArg, BUFFER's BufferArg, their address spaces), RANGE's axis, DEFINE_VAR's
bounds and SOURCE's text, and the process's BUFFER ids."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto


class AddrSpace(Enum):
  GLOBAL = auto(); LOCAL = auto(); REG = auto()  # noqa: E702
  def __repr__(self) -> str: return f"AddrSpace.{self.name}"


class AxisType(Enum):
  LOOP = auto(); GLOBAL = auto(); REDUCE = auto(); UNROLL = auto()  # noqa: E702
  def __repr__(self) -> str: return f"AxisType.{self.name}"


@dataclass(frozen=True)
class ParamArg:
  """Arg of PARAM: slot k stands for arg k of the enclosing CALL; flat storage of `size` elements. `image` (height,
  width): the storage is an RGBA image of those dims (an IMAGE view linearize folded into its PARAM; before that, in a
  kernel body, the view says so)."""
  slot: int
  size: int
  device: str = "CPU"
  addrspace: AddrSpace = AddrSpace.GLOBAL
  image: tuple[int, int] | None = None


@dataclass(frozen=True)
class BufferArg:
  """Arg of BUFFER: a concrete flat storage of `size` elements, identified by `id`; `image` (height, width): it is kept
  as an RGBA image of those dims on a device that has images (its elements are the same, tinyspec.ops.image.image_coords
  says where)."""
  id: int
  size: int
  device: str = "CPU"
  addrspace: AddrSpace = AddrSpace.GLOBAL
  image: tuple[int, int] | None = None

  # a graph rebuilt from source must not hand its ids out again to new buffers (a malformed id, not an int of the
  # int64 range, reserves nothing: it is the spec's to reject, and must not push every later id out of range)
  def __post_init__(self):
    if type(self.id) is int and 0 <= self.id < 2 ** 63: _reserve_buffer_id(self.id)


@dataclass(frozen=True)
class RangeArg:
  """Arg of RANGE: the axis id (unique within a kernel) and how the axis is run."""
  axis: int
  kind: AxisType = AxisType.LOOP


@dataclass(frozen=True)
class VarArg:
  """Arg of DEFINE_VAR: the variable's name (a C identifier, one variable per name) and the bounds [min, max] every
  value bound to it lies in."""
  name: str
  min: int
  max: int


@dataclass(frozen=True)
class SourceArg:
  """Arg of SOURCE: rendered kernel text, its language (c, opencl) and entry point name."""
  lang: str
  name: str
  text: str


_next_buffer_id = 0


def next_buffer_id() -> int:
  """A fresh BUFFER id for this process, above every id any BUFFER made so far carries (and reserved at once, so two
  calls never hand out the same id even before either BUFFER is built)."""
  i = _next_buffer_id
  _reserve_buffer_id(i)
  return i


def _reserve_buffer_id(i: int) -> None:
  global _next_buffer_id
  _next_buffer_id = max(_next_buffer_id, i + 1)

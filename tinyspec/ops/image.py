"""What image storage means: the one statement of how a flat storage's elements sit in an RGBA image.

An image of dims (height, width) holds height * width * 4 elements of float32 or float16: flat element i is channel
i % 4 of pixel p = i // 4, at x = p % width, y = p // width. Storage carries the dims in its arg (BufferArg.image,
ParamArg.image); in a kernel body IMAGE(PARAM) with arg (height, width) views the PARAM's flat elements so. A kernel
writes an image in whole pixels (pixel_groups), as OpenCL's write_imagef does.

The spec (image rules of every stage), the evaluator, the images pass and the OpenCL renderer read this module; none
re-derives it.
"""
from __future__ import annotations

from typing import Any, Sequence

from tinyspec.dtype import DType, dtypes
from tinyspec.uop import Ops, UOp, open_ranges

IMAGE_CHANNELS = 4
IMAGE_DTYPES: tuple[DType, ...] = (dtypes.float32, dtypes.float16)  # the element dtypes an image holds (RGBA FLOAT, HALF_FLOAT)
IMAGE_MAX_DIM = 8192  # the image2d width and height every OpenCL 1.2 device with images supports (CL_DEVICE_IMAGE2D_MAX_*)


def image_size(dims: tuple[int, int]) -> int:
  """The flat elements of an RGBA image of dims (height, width)."""
  return dims[0] * dims[1] * IMAGE_CHANNELS


def pixel_of(i: Any) -> tuple[Any, Any]:
  """(pixel, channel) of flat element i of an image: channel i % 4 of pixel i // 4. i is an int, a numpy array or a UOp
  of a non-negative index (each divides as C does)."""
  return i // IMAGE_CHANNELS, i % IMAGE_CHANNELS


def image_coords(i: Any, width: int) -> tuple[Any, Any, Any]:
  """(x, y, channel) of flat element i of an image `width` pixels wide: channel c of pixel p (pixel_of), at
  x = p % width, y = p // width."""
  p, c = pixel_of(i)
  return p % width, p // width, c


def image_dims_error(dims: Any, size: Any, dtype: DType) -> str | None:
  """Why dims (height, width) is no image of flat storage of `size` dtype elements, or None when it is one: positive
  ints within IMAGE_MAX_DIM, height * width * 4 == size, an element of IMAGE_DTYPES (float32, float16)."""
  if not (type(dims) is tuple and len(dims) == 2 and all(type(d) is int for d in dims)): return f"dims {dims!r} are not (height, width) ints"
  h, w = dims
  if not (0 < h <= IMAGE_MAX_DIM and 0 < w <= IMAGE_MAX_DIM): return f"dims {dims} are not within 1..{IMAGE_MAX_DIM}"
  if image_size(dims) != size: return f"an image of {h}x{w} RGBA pixels holds {image_size(dims)} elements, the storage {size}"
  if dtype not in IMAGE_DTYPES: return f"an image holds {' or '.join(d.name for d in IMAGE_DTYPES)} elements, not {dtype.name}"
  return None


def choose_image_dims(size: int, dtype: DType) -> tuple[int, int] | None:
  """(height, width) of an image holding flat storage of `size` dtype elements (the widest width within
  IMAGE_MAX_DIM whose height fits too), None when there is none."""
  if dtype not in IMAGE_DTYPES or size <= 0 or size % IMAGE_CHANNELS: return None
  pixels = size // IMAGE_CHANNELS
  for w in range(min(pixels, IMAGE_MAX_DIM), 0, -1):
    if pixels % w == 0:
      return (pixels // w, w) if pixels // w <= IMAGE_MAX_DIM else None
  return None


def _split_offset(e: UOp) -> tuple[UOp, int]:
  """(b, k) with e == b + k by e's form: an ADD of a constant int, or e itself with k 0."""
  if e.op is Ops.ADD and len(e.src) == 2:
    for b, c in (e.src, e.src[::-1]):
      if c.op is Ops.CONST and type(c.arg) is int: return b, c.arg
  return e, 0


def multiple_of(e: UOp, k: int, depth: int = 32) -> bool:
  """Whether integer e is a multiple of k by its form alone (a constant multiple, a product with one, a sum of them,
  a left shift far enough); False means not shown."""
  if depth <= 0: return False
  if e.op is Ops.CONST: return type(e.arg) is int and e.arg % k == 0
  if e.op is Ops.MUL and len(e.src) == 2: return any(multiple_of(s, k, depth - 1) for s in e.src)
  if e.op is Ops.ADD and len(e.src) == 2: return all(multiple_of(s, k, depth - 1) for s in e.src)
  if e.op is Ops.SHL and len(e.src) == 2 and e.src[1].op is Ops.CONST and type(e.src[1].arg) is int and 0 <= e.src[1].arg < 64:
    return (1 << e.src[1].arg) % k == 0 or multiple_of(e.src[0], k, depth - 1)
  return False


def pixel_groups(root: UOp, stores: Sequence[UOp]) -> list[tuple[UOp, ...]]:
  """The whole-pixel groups among stores (STOREs of one image, under root): four ungated STOREs that are sources of one
  GROUP, run in the same loops (equal open ranges), at indices b + 4j + c for channels c = 0, 1, 2, 3, with b a
  multiple of 4 by its form. Each group is ordered by channel: what one write of a pixel stores (write_imagef)."""
  want = set(stores)
  out: list[tuple[UOp, ...]] = []
  for g in root.toposort():
    if g.op is not Ops.GROUP: continue
    buckets: dict[tuple[UOp, int], dict[int, UOp]] = {}
    for st in dict.fromkeys(g.src):
      if st not in want or len(st.src) != 2 or st.src[0].op is not Ops.INDEX or len(st.src[0].src) != 2: continue
      b, k = _split_offset(st.src[0].src[1])
      pixel, channel = pixel_of(k)  # b is a whole number of pixels: k says which pixel past it and which channel
      if multiple_of(b, IMAGE_CHANNELS): buckets.setdefault((b, pixel), {}).setdefault(channel, st)
    for chans in buckets.values():
      group = tuple(chans[c] for c in range(IMAGE_CHANNELS) if c in chans)
      if len(group) == IMAGE_CHANNELS and len({open_ranges(st) for st in group}) == 1: out.append(group)
  return out

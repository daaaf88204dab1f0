"""images (KERNEL -> KERNEL): kernel args kept as RGBA images, when the storage and every access of it fit one.

A kernel's GLOBAL PARAM becomes an image when its CALL arg is an image BUFFER (BufferArg.image gives the dims) or when
options.images is on and the PARAM's dtype and size fit an image (ops.image.choose_image_dims). Its accesses must fit too:
OpenCL 1.2 images are read_only or write_only in a kernel, so a PARAM that is read only (LOADs) is eligible, and a PARAM
that is written only is eligible when every STORE of it belongs to a whole-pixel group (four stores of channels 0..3
of one pixel in one block, ops.image.pixel_groups), since write_imagef writes a pixel at once. Each access of an eligible
PARAM then goes through an IMAGE view: INDEX(PARAM, i) becomes INDEX(IMAGE(PARAM), i), every one of a kernel in one
application of the rule table pm_images.
linearize folds the view into the PARAM's arg. Where nothing is eligible the kernel is unchanged.
"""
from __future__ import annotations

from typing import Callable

from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.kernel_map import map_kernels
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.ops.image import choose_image_dims, image_dims_error, pixel_groups
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, storage_of, substitute


def _dims_wanted(p: UOp, arg: UOp | None, on: bool) -> tuple[int, int] | None:
  """The dims p's storage asks for: its arg's image BUFFER's, else (options.images) ones that fit its size."""
  if p.arg.addrspace is not AddrSpace.GLOBAL or p.arg.image is not None: return None
  base = storage_of(arg) if arg is not None else None
  if base is not None and base.op is Ops.BUFFER and (dims := base.arg.image) is not None:
    return dims if image_dims_error(dims, p.arg.size, p.dtype) is None else None
  return choose_image_dims(p.arg.size, p.dtype) if on else None


def _direct(a: UOp) -> bool:
  # the access addresses the PARAM itself: an AFTER between would order it after another access in the kernel
  return a.src[0].op is Ops.INDEX and len(a.src[0].src) == 2 and a.src[0].src[0].op is Ops.PARAM


# how each kind of access lets its PARAM be an image, given every access of that PARAM (OpenCL 1.2: read_only or
# write_only, no atomics on images): a LOAD when the PARAM is only loaded, an ungated STORE when it is only stored (and
# then every store must be part of a whole pixel, _whole_pixels), an ATOMIC never
ACCESS_FITS: dict[Ops, Callable[[UOp, list[UOp]], bool]] = {
  Ops.LOAD: lambda a, accs: all(x.op is Ops.LOAD for x in accs),
  Ops.STORE: lambda a, accs: all(x.op is Ops.STORE for x in accs) and len(a.src) == 2,
  Ops.ATOMIC: lambda a, accs: False,
}


def eligible(body: UOp, call: UOp | None, on: bool) -> dict[UOp, tuple[int, int]]:
  """The PARAMs of a kernel body that become images, with their dims."""
  nodes = body.toposort()
  accesses: dict[UOp, list[UOp]] = {}
  for u in nodes:
    if u.op in GroupOp.Access and u.src and u.src[0].op is Ops.INDEX: accesses.setdefault(storage_of(u.src[0].src[0]), []).append(u)
  # a PARAM used other than by the INDEX of an access (an AFTER of it, say) keeps its flat form
  other = {s for u in nodes if u.op is not Ops.INDEX for s in u.src if s.op is Ops.PARAM}
  args = call.src[1:] if call is not None else ()
  # storage given at two slots stays flat: an image is a copy made for the launch, which the other slot's writes miss
  shared = {k for k, a in enumerate(args) if sum(storage_of(b) is storage_of(a) for b in args) > 1}
  out: dict[UOp, tuple[int, int]] = {}
  for p, accs in accesses.items():
    if p.op is not Ops.PARAM or p in other or p.arg.slot in shared or not all(_direct(a) and ACCESS_FITS[a.op](a, accs) for a in accs): continue
    if (dims := _dims_wanted(p, args[p.arg.slot] if p.arg.slot < len(args) else None, on)) is None: continue
    stores = [a for a in accs if a.op is Ops.STORE]
    if stores and not _whole_pixels(body, stores): continue
    out[p] = dims
  return out


def _whole_pixels(body: UOp, stores: list[UOp]) -> bool:
  """Every store belongs to a group writing channels 0..3 of one pixel from one block (the ENDs around it)."""
  grouped = {s for g in pixel_groups(body, stores) for s in g}
  return len(grouped) == len(stores)


def image_index(ctx: dict[UOp, tuple[int, int]], sink: UOp) -> UOp | None:
  """The kernel SINK with every INDEX(PARAM, i) of an eligible PARAM as INDEX(IMAGE(PARAM), i): the same element,
  addressed as a pixel's channel. All of them in one application, since a kernel that sees a PARAM both flat and as
  an image is illegal (kernel.image_one_form); None when none is left."""
  subs = {u: u.replace(src=(u.src[0].image(ctx[u.src[0]]), u.src[1])) for u in sink.toposort()
          if u.op is Ops.INDEX and len(u.src) == 2 and u.src[0] in ctx}
  return substitute(sink, subs, into_calls=False) if subs else None


pm_images = PatternMatcher([
  ("image_index", UPat(Ops.SINK, name="sink"), image_index),
], name="pm_images")


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  pm = tables.pm_images
  def one(call: UOp | None, body: UOp) -> UOp:
    # with the option off only an image BUFFER arg asks for an image: most lowerings look at no kernel's insides here
    if not options.images and (call is None or not any(storage_of(a).op is Ops.BUFFER and storage_of(a).arg.image for a in call.src[1:])): return body
    if body.op is not Ops.SINK or not (ctx := eligible(body, call, options.images)): return body
    return trace.rewrite(body, pm, ctx, body=True)
  return map_kernels(root, one)


IMAGES = Pass("images", Stage.KERNEL, Stage.KERNEL, run, (pm_images,))

"""OpenCL C from PROGRAM graphs, the same ones the C renderer takes (tinyspec.render.cstyle does the common part).

GLOBAL ranges that enclose every global store become get_global_id dimensions; other ranges stay loops. OpenCL C
leaves signed overflow undefined, so signed add/sub/mul/neg run in the unsigned twin and are cast back; shift counts
are masked to the width as the evaluator defines them; float -> int casts are convert_<T>_sat_rtz, which truncates,
saturates and maps NaN to 0 exactly as the evaluator does; float contraction is off so a*b+c rounds twice.
Bool buffers are uchar in kernel signatures (OpenCL forbids bool kernel arguments); bool values are 0 or 1.
float16 storage is `half`, read with vload_half and written with vstore_half_rte (core OpenCL 1.2: no cl_khr_fp16
needed); bfloat16 and the fp8 dtypes are stored as their bits (ushort, uchar), converted by the helpers of
tinyspec.render.smallfloat, as are float16's roundings, casts and bitcasts. A cast into a small float from a double or
a wide int rounds from the double, so such a kernel turns cl_khr_fp64 on.

An ATOMIC on a kernel argument's storage is an OpenCL atomic: atomic_add / atomic_max on 32-bit integers (core since
OpenCL 1.1), atom_add / atom_max on 64-bit ones (cl_khr_int64_base_atomics / cl_khr_int64_extended_atomics), integer
ADD on the unsigned twin so it wraps as two's complement; float ADD and MAX are a compare-and-swap loop on the
element's bits (atomic_cmpxchg on as_uint, atom_cmpxchg on as_ulong for float64, which needs cl_khr_fp64 as well)
computing op(old, v) as render_alu spells it; comparing bits, a NaN element never makes it spin and -0.0 is replaced
by 0.0. `atomic_extensions` names the extensions a kernel's atomics need; the runtime checks them on the device. A
buffer the kernel declares is private to its work item in OpenCL C, so an ATOMIC there is a plain update.

An image PARAM (ParamArg.image) is a `read_only image2d_t` or a `write_only image2d_t` (OpenCL 1.2 has no read_write
images). A LOAD of flat element i reads pixel (x, y) with read_imagef and takes channel c, (x, y, c) as
ops.image.image_coords says, through a sampler of unnormalized coordinates, no addressing and nearest filtering (so a read
is exactly the stored texel); the four STOREs of a whole-pixel group (ops.image.pixel_groups) are one write_imagef, written
where the group's last STORE stands.
"""
from __future__ import annotations

import functools

from tinyspec.dtype import DType, dtypes
from tinyspec.ops.atomic import atomic_error
from tinyspec.ops.image import image_coords, pixel_groups
from tinyspec.render.cstyle import CStyleRenderer, KernelParam, RenderError, narrows_from_double, register
from tinyspec.render.program import kernel_source
from tinyspec.uop import AddrSpace, AxisType, GroupOp, Ops, UOp, storage_of

MAX_DIMS = 3  # get_global_id dimensions OpenCL guarantees


def atomic_extensions(op: Ops, dt: DType) -> tuple[str, ...]:
  """The OpenCL extensions an atomic update of global dt elements with op needs (32-bit integer atomics are core)."""
  if dt.bits == 32: return ()
  base = ("cl_khr_int64_base_atomics",)
  if dt.is_float: return ("cl_khr_fp64", *base)  # a compare-and-swap of the ulong bits
  return ("cl_khr_int64_extended_atomics",) if op is Ops.MAX else base


@functools.lru_cache(maxsize=1024)
def kernel_atomic_extensions(linear: UOp) -> dict[str, list[str]]:
  """Extension -> the atomic updates of the kernel (as "int64 MAX") that need it, for the ATOMICs on argument storage.
  Cached by LINEAR (the runtime asks before every launch): callers must not change the dict."""
  out: dict[str, list[str]] = {}
  for u in linear.src:
    if u.op is not Ops.ATOMIC or not u.src or u.src[0].op is not Ops.INDEX: continue
    base = storage_of(u.src[0].src[0])
    if base.op is not Ops.PARAM: continue  # a declared buffer: a plain update, no extension
    dt = base.dtype
    if atomic_error(u.arg, dt) is not None: continue  # the renderer says why
    for ext in atomic_extensions(u.arg, dt): out.setdefault(ext, []).append(f"{dt.name} {u.arg.name}")
  return {k: list(dict.fromkeys(v)) for k, v in out.items()}


def _loop_ranges_open(linear: UOp) -> list[tuple[UOp, frozenset[UOp]]]:
  """Each LINEAR entry with the set of ranges open when it runs."""
  out, open_ = [], []
  for u in linear.src:
    if u.op is Ops.END:
      closing = set(u.src[1:])
      open_ = [r for r in open_ if r not in closing]
    out.append((u, frozenset(open_)))
    if u.op is Ops.RANGE: open_.append(u)
  return out


def global_dims(linear: UOp) -> dict[UOp, int]:
  """The ranges and SPECIALs that become get_global_id(dim), with their dim. A GLOBAL range qualifies when only other
  qualifying ranges enclose it, its bound is a constant, and every store to global memory runs inside it: then each
  work item does the work of one point of the range and nothing else is repeated across work items."""
  cands: list[UOp] = []
  seen_store = False
  walk = _loop_ranges_open(linear)
  for u, open_ in walk:
    if u.op in (Ops.RANGE, Ops.SPECIAL) and not seen_store and open_ <= set(cands) and u.src[0].op is Ops.CONST and len(cands) < MAX_DIMS:
      if u.op is Ops.SPECIAL or u.arg.kind is AxisType.GLOBAL: cands.append(u)
    if u.op in GroupOp.Writes: seen_store = True
  keep = set(cands)
  for u, open_ in walk:
    # an atomic update writes global memory as a store does: outside a dimension every work item would repeat it
    if u.op in GroupOp.Writes and not _is_reg(u.src[0]): keep &= open_ | {c for c in cands if c.op is Ops.SPECIAL}
  specials = [c for c in cands if c.op is Ops.SPECIAL]
  if any(s not in keep for s in specials): raise ValueError("a SPECIAL thread index does not enclose every global store")
  # the innermost range is dimension 0, the one work items run along in step (and PoCL vectorizes over): neighbouring
  # work items then touch neighbouring elements of row-major buffers
  kept = [c for c in cands if c in keep]
  return {c: len(kept) - 1 - i for i, c in enumerate(kept)}


def launch_size(linear: UOp) -> tuple[int, ...]:
  """The global work size of a PROGRAM's LINEAR: the bounds of its get_global_id dimensions, (1,) when none."""
  dims = global_dims(linear)
  return tuple(int(u.src[0].arg) for u in sorted(dims, key=dims.__getitem__)) or (1,)


def _is_reg(idx_or_buf: UOp) -> bool:
  u = idx_or_buf
  while u.op in (Ops.INDEX, Ops.AFTER): u = u.src[0]
  return u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG


def image_pixel_writes(linear: UOp) -> dict[UOp, tuple[tuple[UOp, ...], UOp]]:
  """Each STORE into an image PARAM that belongs to a whole-pixel group: (the group by channel, its last STORE in the LINEAR)."""
  pos = {u: i for i, u in enumerate(linear.src)}
  stores = [u for u in linear.src if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and (b := storage_of(u.src[0].src[0])).op is Ops.PARAM
            and b.arg.image is not None]
  out: dict[UOp, tuple[tuple[UOp, ...], UOp]] = {}
  for g in pixel_groups(linear, stores) if stores else ():
    last = max(g, key=lambda st: pos.get(st, -1))
    out.update((st, (g, last)) for st in g)
  return out


class OpenCLRenderer(CStyleRenderer):
  lang = "opencl"
  kernel_qualifier = "__kernel "
  buffer_qualifier = "__global "
  wrap_via_unsigned = True  # no -fwrapv in OpenCL C: signed overflow is undefined

  def __init__(self) -> None:
    self.dims: dict[UOp, int] = {}
    self.fp64 = False
    self.extensions: list[str] = []
    self.pixel_writes: dict[UOp, tuple[tuple[UOp, ...], UOp]] = {}

  def scalar_name(self, dt: DType) -> str: return dt.clname

  def float_fn(self, name: str, dt: DType) -> str: return name  # OpenCL's math builtins are overloaded

  def param_decl(self, slot: int, dt: DType | None, restrict: bool) -> str:
    if dt is dtypes.bool: dt = dtypes.uint8  # a bool kernel argument is not allowed; its storage is bytes of 0 or 1
    if dt is None: dt = dtypes.uint8  # a slot the kernel never reads: any pointer type will do
    return super().param_decl(slot, dt, restrict)

  def storage_decl(self, slot: int, p: KernelParam) -> str:
    if p.image is None: return super().storage_decl(slot, p)
    return f"{'write_only' if p.writes else 'read_only'} image2d_t data{slot}"

  def _expr(self, u: UOp, names: dict[UOp, str]) -> str:
    """u as one expression over the named nodes: the coordinates image_coords builds from an index."""
    if u in names: return names[u]
    if u.op is Ops.CONST: return self.render_const(u.arg, u.dtype)
    return self.render_alu(u, [self._expr(s, names) for s in u.src])

  def _pixel(self, img: UOp, i: UOp, names: dict[UOp, str]) -> tuple[str, str]:
    """The (int2) coordinates of flat element i of image PARAM img and its channel expression."""
    x, y, c = image_coords(i, img.arg.image[1])
    return f"(int2)((int)({self._expr(x, names)}), (int)({self._expr(y, names)}))", self._expr(c, names)

  def render_load_expr(self, idx: UOp, flat: str, names: dict[UOp, str]) -> str:
    img = storage_of(idx.src[0])
    if img.op is not Ops.PARAM or img.arg.image is None: return flat
    xy, c = self._pixel(img, idx.src[1], names)
    self.helpers["smp"] = "__constant sampler_t ts_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;"
    self.helpers["ts_read_image"] = ("float ts_read_image(read_only image2d_t img, int2 xy, int c) { float4 v = read_imagef(img, ts_smp, xy); "
                                     "return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }")
    return f"ts_read_image({names[img]}, {xy}, (int)({c}))"

  def render_store(self, st: UOp, stmt: str, names: dict[UOp, str]) -> str | None:
    img = storage_of(st.src[0].src[0])
    if img.op is not Ops.PARAM or img.arg.image is None: return super().render_store(st, stmt, names)
    if (hit := self.pixel_writes.get(st)) is None:
      raise RenderError(f"a STORE into image data{img.arg.slot} that writes no whole pixel (program.image_store)")
    group, last = hit
    if st is not last: return None  # the group's last STORE writes the pixel, once every channel's value is computed
    xy, _ = self._pixel(img, group[0].src[0].src[1], names)
    return f"write_imagef({names[img]}, {xy}, (float4)({', '.join(names[g.src[1]] for g in group)}));"

  def render_range(self, u: UOp, var: str, bound: str, global_index: int) -> str:
    if u in self.dims:
      t = self.type_name(u.dtype)
      return f"{{ {t} {var} = ({t})get_global_id({self.dims[u]});  /* < {bound} */"
    return super().render_range(u, var, bound, -1)

  def load_expr(self, buf: str, idx: str, dt: DType) -> str:
    return f"vload_half({idx}, {buf})" if dt is dtypes.float16 else super().load_expr(buf, idx, dt)

  def store_stmt(self, buf: str, idx: str, v: str, dt: DType) -> str:
    return f"vstore_half_rte({v}, {idx}, {buf});" if dt is dtypes.float16 else super().store_stmt(buf, idx, v, dt)

  def render_bitcast(self, x: str, src: DType, dst: DType) -> str:
    if src.itemsize != dst.itemsize: raise RenderError(f"BITCAST {src.name} -> {dst.name} changes the item size")
    if dst.is_bool: return f"({x} != 0)"
    if src.is_bool: return self.cast_expr(x, dst)
    if src.is_small_float or dst.is_small_float:
      # through the bits: a small float value narrows to them (exactly) and widens from them; ts_X is their ushort / uchar
      bits = f"{self.use_small_float(src)}_narrowf({x})" if src.is_small_float else x
      if not dst.is_small_float: return f"as_{self.type_name(dst)}({bits})"
      return f"{self.use_small_float(dst)}_widen(as_{self.type_name(dtypes.uint16 if dst.itemsize == 2 else dtypes.uint8)}({bits}))"
    return f"as_{self.type_name(dst)}({x})"

  def render_cast(self, x: str, src: DType, dst: DType) -> str:
    if src.is_float and dst.kind in "iu": return f"convert_{self.type_name(dst)}_sat_rtz({x})"
    return super().render_cast(x, src, dst)

  def prelude(self) -> list[str]:
    exts = (["cl_khr_fp64"] if self.fp64 else []) + [e for e in self.extensions if e != "cl_khr_fp64"]
    return [f"#pragma OPENCL EXTENSION {e} : enable" for e in exts] + ["#pragma OPENCL FP_CONTRACT OFF"]

  def render_atomic(self, op: Ops, dt: DType, ptr: str, v: str, arg: bool) -> str:
    if not arg: return f"*({ptr}) = {self.combine(op, dt, f'*({ptr})', v)};"  # the work item's own array: no one else sees it
    wide = dt.bits == 64
    if not dt.is_float:
      # ADD on the unsigned twin wraps as two's complement; MAX compares in the element's own signedness
      t = self.type_name(dt if op is Ops.MAX else dtypes.uint64 if wide else dtypes.uint32)
      fn = ("atom_" if wide else "atomic_") + op.name.lower()
      return f"{fn}((volatile __global {t}*)({ptr}), as_{t}({v}));"
    t, bits = self.type_name(dt), self.type_name(dtypes.uint64 if wide else dtypes.uint32)
    cas = "atom_cmpxchg" if wide else "atomic_cmpxchg"
    fn = f"ts_atomic_{op.name.lower()}_{dt.name}"
    # compare-and-swap until the element still held what op combined with v; nothing to store when op leaves it as it is
    self.helpers[fn] = "\n".join([
      f"void {fn}(volatile __global {t}* p, {t} v) {{",
      f"  volatile __global {bits}* q = (volatile __global {bits}*)p;",
      f"  {bits} old = *q, prev, upd;",
      "  do {",
      "    prev = old;",
      f"    {t} a = as_{t}(prev);",
      f"    upd = as_{bits}({self.combine(op, dt, 'a', 'v')});",
      "    if (upd == prev) return;",
      f"    old = {cas}(q, prev, upd);",
      "  } while (old != prev);",
      "}"])
    return f"{fn}({ptr}, {v});"

  def render(self, name: str, linear: list[UOp], params: list[KernelParam]) -> str:
    lin = UOp(Ops.LINEAR, src=tuple(linear))
    self.dims = global_dims(lin)
    self.fp64 = any(u.dtype is dtypes.float64 for u in linear) or any(p.dtype is dtypes.float64 for p in params) or \
      any(u.op is Ops.CAST and u.dtype.is_small_float and narrows_from_double(u.src[0].dtype) for u in linear)
    self.extensions = list(kernel_atomic_extensions(lin))
    self.pixel_writes = image_pixel_writes(lin)
    return super().render(name, linear, params)


register("opencl", OpenCLRenderer)


def render_kernel(call: UOp | None, prg: UOp) -> tuple[str, str]:
  """(OpenCL C text, entry name) of a PROGRAM, with one parameter per arg of call (per PARAM slot without one)."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 2 or prg.src[1].op is not Ops.LINEAR:
    raise RenderError(f"the OpenCL renderer takes PROGRAM(sink, LINEAR) bodies, not {prg.op.name}; run linearize first")
  name, text = kernel_source(OpenCLRenderer(), call, prg)
  return text, name

"""OpenCL C from PROGRAM graphs, the same ones the C renderer takes (tinyspec.render.cstyle does the common part).

GLOBAL ranges that enclose every global store become get_global_id dimensions; other ranges stay loops. OpenCL C
leaves signed overflow undefined, so signed add/sub/mul/neg run in the unsigned twin and are cast back; shift counts
are masked to the width as the evaluator defines them; float -> int casts are convert_<T>_sat_rtz, which truncates,
saturates and maps NaN to 0 exactly as the evaluator does; float contraction is off so a*b+c rounds twice.
Bool buffers are uchar in kernel signatures (OpenCL forbids bool kernel arguments); bool values are 0 or 1.
"""
from __future__ import annotations

from tinyspec.dtype import DType, dtypes
from tinyspec.render.cstyle import CStyleRenderer, KernelParam, RenderError, register
from tinyspec.render.program import kernel_source
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp

MAX_DIMS = 3  # get_global_id dimensions OpenCL guarantees


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
    if u.op is Ops.STORE: seen_store = True
  keep = set(cands)
  for u, open_ in walk:
    if u.op is Ops.STORE and not _is_reg(u.src[0]): keep &= open_ | {c for c in cands if c.op is Ops.SPECIAL}
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


class OpenCLRenderer(CStyleRenderer):
  lang = "opencl"
  kernel_qualifier = "__kernel "
  buffer_qualifier = "__global "
  wrap_via_unsigned = True  # no -fwrapv in OpenCL C: signed overflow is undefined

  def __init__(self) -> None:
    self.dims: dict[UOp, int] = {}
    self.fp64 = False

  def scalar_name(self, dt: DType) -> str: return dt.clname

  def float_fn(self, name: str, dt: DType) -> str: return name  # OpenCL's math builtins are overloaded

  def param_decl(self, slot: int, dt: DType | None, restrict: bool) -> str:
    if dt is dtypes.bool: dt = dtypes.uint8  # a bool kernel argument is not allowed; its storage is bytes of 0 or 1
    if dt is None: dt = dtypes.uint8  # a slot the kernel never reads: any pointer type will do
    return super().param_decl(slot, dt, restrict)

  def render_range(self, u: UOp, var: str, bound: str, global_index: int) -> str:
    if u in self.dims:
      t = self.type_name(u.dtype)
      return f"{{ {t} {var} = ({t})get_global_id({self.dims[u]});  /* < {bound} */"
    return super().render_range(u, var, bound, -1)

  def render_bitcast(self, x: str, src: DType, dst: DType) -> str:
    if src.itemsize != dst.itemsize: raise RenderError(f"BITCAST {src.name} -> {dst.name} changes the item size")
    if dst.is_bool: return f"({x} != 0)"
    if src.is_bool: return self.cast_expr(x, dst)
    return f"as_{self.type_name(dst)}({x})"

  def render_cast(self, x: str, src: DType, dst: DType) -> str:
    if src.is_float and dst.kind in "iu": return f"convert_{self.type_name(dst)}_sat_rtz({x})"
    return super().render_cast(x, src, dst)

  def prelude(self) -> list[str]:
    return (["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if self.fp64 else []) + ["#pragma OPENCL FP_CONTRACT OFF"]

  def render(self, name: str, linear: list[UOp], params: list[KernelParam]) -> str:
    lin = UOp(Ops.LINEAR, src=tuple(linear))
    self.dims = global_dims(lin)
    self.fp64 = any(u.dtype is dtypes.float64 for u in linear) or any(p.dtype is dtypes.float64 for p in params)
    return super().render(name, linear, params)


register("opencl", OpenCLRenderer)


def render_kernel(call: UOp | None, prg: UOp) -> tuple[str, str]:
  """(OpenCL C text, entry name) of a PROGRAM, with one parameter per arg of call (per PARAM slot without one)."""
  if prg.op is not Ops.PROGRAM or len(prg.src) < 2 or prg.src[1].op is not Ops.LINEAR:
    raise RenderError(f"the OpenCL renderer takes PROGRAM(sink, LINEAR) bodies, not {prg.op.name}; run linearize first")
  name, text = kernel_source(OpenCLRenderer(), call, prg)
  return text, name

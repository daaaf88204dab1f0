"""A renderer for C-like languages: one function per kernel, from a PROGRAM's LINEAR.

Every node of the LINEAR becomes, in order, a local (`T vN = expr;`), a loop opening (RANGE), a closing brace
(END), a store, an atomic update or a declaration (REG accumulators). Language specifics are class attributes and methods a subclass
overrides: type names, the function signature and kernel qualifiers, how a RANGE opens (a GLOBAL one in OpenCL is
get_global_id), float math function names, bitcasts, how signed integer arithmetic is made to wrap, and how an
ATOMIC updates its element (render_atomic; the combining step is spelled by render_alu, so it means what the op means).

Each op is spelled as tinyspec.ops.spelling says, and only on the dtypes its class admits (tinyspec.ops.classes).
Where C leaves a point undefined the meaning is the registry's (tinyspec.ops.scalar): IDIV by 0 is 0, MOD by 0 is the
dividend, MIN / -1 wraps to MIN and MIN % -1 is 0, shift counts are taken modulo the width, float -> int casts
truncate, map NaN to 0 and saturate, float MAX propagates NaN as numpy's maximum does. The guards are only rendered
where the operands' bounds reach those points, so index arithmetic stays plain.

The small floats (float16, bfloat16, the fp8 dtypes; docs/spec.md) are values of type float in a kernel: a local
holds the float its value widens to, exactly. Only kernel argument storage is in the small format (a buffer the
kernel declares holds floats): a LOAD widens, a STORE narrows, every ALU result of a small float dtype is rounded to
it and widened back (so float16 and bfloat16 compute in float32 and round after every op), and CAST and BITCAST
convert through tinyspec.render.smallfloat's helpers, which are part of a kernel's source only when it uses the dtype.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tinyspec.dtype import DType, dtypes, round_float
from tinyspec.ops.atomic import atomic_error
from tinyspec.ops.classes import accepts, class_name
from tinyspec.ops.scalar import shift_bits
from tinyspec.ops.spelling import BOOL_INFIX, INFIX, MATH_FN, PREFIX, WRAPPING
from tinyspec.render import smallfloat
from tinyspec.uop import AddrSpace, AxisType, GroupOp, Ops, UOp, storage_of


class RenderError(ValueError):
  """A node the renderer cannot express; the message names it."""


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def check_identifier(name: object, what: str = "kernel name") -> str:
  """name, when it is a C identifier (what reaches the source as a name is never pasted unchecked); RenderError else."""
  if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
    raise RenderError(f"{what} {str(name)[:80]!r} is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)")
  return name


def renamed_apart(sources: list[tuple[str, str]]) -> list[tuple[str, str]]:
  """(source, entry name) pairs renamed so they can share one compile: kernels of different graphs share entry names
  (kernel_0...), so entry j becomes <name>_b<j> in its source. The new (source, name) pairs, in order."""
  out = []
  for j, (text, name) in enumerate(sources):
    new = f"{check_identifier(name, 'SOURCE name')}_b{j}"
    out.append((re.sub(rf"\b{re.escape(name)}\b", new, text), new))
  return out


def int_field(u: UOp, field: str, low: int) -> int:
  """An integer field of u's arg that is pasted into the source (a PARAM slot, a buffer size), checked to be an int."""
  v = getattr(u.arg, field, None)
  if type(v) is not int or v < low: raise RenderError(f"{u.op.name} {field} {str(v)[:40]!r} is not an integer >= {low}")
  return v


@dataclass(frozen=True)
class KernelParam:
  """One parameter of a kernel function: a pointer to storage of element dtype `dtype` (None: a slot the kernel never
  reads), or, when `var` names a variable, a scalar of dtype `dtype` passed by value. `image` (height, width): the
  storage is an RGBA image the kernel reads, or writes when `writes` (a renderer without images takes the pointer)."""
  dtype: DType | None
  restrict: bool = False
  var: str | None = None
  image: tuple[int, int] | None = None
  writes: bool = False


def var_symbol(name: str) -> str:
  """The C name of a variable: prefixed, so it never meets a generated name (data0, ridx0, alu0...)."""
  return f"var_{check_identifier(name, 'variable name')}"


def _trips(r: UOp) -> int:
  """How many times a RANGE's body runs, at most: the upper bound of its bound (0 when that is no number or negative)."""
  hi = r.src[0].vmax if r.src else 0
  return max(int(hi), 0) if isinstance(hi, (int, float)) and not isinstance(hi, bool) else 0


def parallel_ranges(linear: list[UOp], min_work: int = 0) -> dict[UOp, list[UOp]]:
  """The GLOBAL ranges a renderer may run as parallel threads, each with the REG/LOCAL buffers declared before it
  (each thread needs its own copy of those). A GLOBAL range's iterations are independent (kernel.thread_independent),
  so one opened outside every other range qualifies, unless such a buffer is accessed after it closes (that access
  would read one thread's copy, not what the loop left), or the loop runs fewer than min_work instructions in all
  (starting and joining threads would cost more than the loop). Nested GLOBAL ranges run inside their thread."""
  out: dict[UOp, list[UOp]] = {}
  work: dict[UOp, int] = {}
  closed: set[UOp] = set()
  bufs: list[UOp] = []
  open_: list[tuple[UOp, int]] = []  # the open ranges, outermost first, each with how often its body runs
  for u in linear:
    if open_ and open_[0][0] in work: work[open_[0][0]] += open_[-1][1]  # an instruction runs once per run of its block
    if u.op is Ops.BUFFER: bufs.append(u)
    elif u.op is Ops.RANGE:
      if not open_ and u.arg.kind is AxisType.GLOBAL: out[u], work[u] = list(bufs), 0
      open_.append((u, (open_[-1][1] if open_ else 1) * _trips(u)))
    elif u.op is Ops.END:
      closed.update(r for r in u.src[1:] if r in out)
      open_ = [o for o in open_ if o[0] not in u.src[1:]]
    elif u.op in GroupOp.Access and u.src and u.src[0].op is Ops.INDEX:
      base = storage_of(u.src[0].src[0])
      for r in [r for r in closed if base in out.get(r, ())]: del out[r]
  return {r: b for r, b in out.items() if work[r] >= min_work}


class CStyleRenderer:
  lang = "c"
  kernel_qualifier = ""                  # e.g. "__kernel " in OpenCL
  buffer_qualifier = ""                  # e.g. "__global " in OpenCL
  restrict = "restrict"
  float_suffix = {dtypes.float32: "f", dtypes.float64: ""}
  # C with -fwrapv wraps signed arithmetic itself; a language without it computes in the unsigned twin
  wrap_via_unsigned = False
  headers: tuple[str, ...] = ()
  infinity, nan = "INFINITY", "NAN"
  # the line that makes the loop after it run its iterations as parallel threads (None: every range is a loop), and
  # the fewest instructions a loop runs in all for it to be worth threads
  parallel_pragma: str | None = None
  parallel_min_work = 0

  # ---- overridable language bits ----
  def type_name(self, dt: DType) -> str:
    if dt is dtypes.index: raise RenderError("`index` dtype reached the renderer; linearize lowers it to int32/int64")
    if not isinstance(dt, DType) or dtypes.by_name.get(dt.name) is not dt: raise RenderError(f"{str(dt)[:40]} is not one of the IR's dtypes")
    return self.scalar_name(dtypes.float32 if dt.is_small_float else dt)  # a small float's value is the float it widens to

  def storage_name(self, dt: DType) -> str:
    """The element type of kernel argument storage of dt: a small float's storage type, every other dtype's name."""
    self.type_name(dt)  # a registered dtype
    if dt.is_small_float: self.use_small_float(dt)
    return self.scalar_name(dt)

  def scalar_name(self, dt: DType) -> str:
    """The language's name of a (non-index) dtype; for a small float the name of its storage."""
    return dt.cname

  def use_small_float(self, dt: DType, double: bool = False) -> str:
    """Make dt's conversion helpers part of the kernel's source (double: also the one from double); its name in them."""
    for k, v in smallfloat.helpers(dt.name, self.lang, double).items(): self.helpers.setdefault(k, v)
    return f"ts_{dt.name}"

  def load_expr(self, buf: str, idx: str, dt: DType) -> str:
    """The value of element idx of kernel argument storage buf of dtype dt (a small float widens)."""
    return f"{self.use_small_float(dt)}_widen({buf}[{idx}])" if dt.is_small_float else f"{buf}[{idx}]"

  def store_stmt(self, buf: str, idx: str, v: str, dt: DType) -> str:
    """The statement storing value v into element idx of kernel argument storage buf of dtype dt (a small float narrows:
    v is one of its values already, so exactly)."""
    return f"{buf}[{idx}] = {self.use_small_float(dt)}_narrowf({v});" if dt.is_small_float else f"{buf}[{idx}] = {v};"

  def round_small_float(self, expr: str, dt: DType) -> str:
    """A float result rounded to small float dt and widened back: what every op on dt ends with."""
    return f"{self.use_small_float(dt)}_round({expr})"

  def unsigned_twin(self, dt: DType) -> str:
    """The unsigned type signed arithmetic of dt is computed in (at least 32 bits, so nothing promotes to int)."""
    return self.type_name(dtypes.uint64 if dt.bits > 32 else dtypes.uint32)

  def float_fn(self, name: str, dt: DType) -> str:
    """The math function `name` (sqrt, exp2, log2, sin, trunc) for dt: sqrtf for float32 in C."""
    return name + ("f" if dt is dtypes.float32 or dt.is_small_float else "")

  def param_decl(self, slot: int, dt: DType | None, restrict: bool) -> str:
    t = self.storage_name(dt) if dt is not None else "void"
    return f"{self.buffer_qualifier}{t}* {self.restrict + ' ' if restrict and self.restrict else ''}data{slot}"

  def storage_decl(self, slot: int, p: KernelParam) -> str:
    """A storage parameter. An image is its flat elements here (the plain-array stand-in): a renderer with images overrides it."""
    return self.param_decl(slot, p.dtype, p.restrict)

  def render_load_expr(self, idx: UOp, flat: str, names: dict[UOp, str]) -> str:
    """The expression a LOAD through idx reads (flat: the element of storage, widened for a small float); a renderer with
    images reads an image PARAM its way."""
    return flat

  def render_store(self, st: UOp, stmt: str, names: dict[UOp, str]) -> str | None:
    """The statement of a STORE (stmt: into the element of storage, narrowed for a small float; None: nothing to write
    here); a renderer with images writes an image PARAM its way."""
    return stmt

  def var_decl(self, name: str, dt: DType) -> str:
    """A variable parameter: a scalar passed by value."""
    return f"const {self.type_name(dt)} {var_symbol(name)}"

  def signature(self, name: str, params: list[str]) -> str:
    return f"{self.kernel_qualifier}void {name}({', '.join(params)})"

  def render_range(self, u: UOp, var: str, bound: str, global_index: int) -> str:
    """The line that opens a RANGE's block (exactly one `{`). C runs GLOBAL ranges as loops too."""
    t = self.type_name(u.dtype)
    return f"for ({t} {var} = 0; {var} < {bound}; {var}++) {{"

  def render_parallel(self, private: list[str]) -> str:
    """The line before a loop that runs as parallel threads, each with its own copy of the buffers `private` (copied
    from the ones declared before the loop, so what the kernel stored there before it is there in every thread)."""
    assert self.parallel_pragma is not None
    return self.parallel_pragma + (f" firstprivate({', '.join(private)})" if private else "")

  def render_bitcast(self, x: str, src: DType, dst: DType) -> str:
    fn = f"ts_bitcast_{src.name}_{dst.name}"
    s, d = self.type_name(src), self.type_name(dst)
    if src.is_small_float or dst.is_small_float:
      # through the bits of the storage: a small float value narrows to them (exactly), and widens from them
      sv = f"{self.use_small_float(src)} b = {self.use_small_float(src)}_narrowf(x);" if src.is_small_float else f"{s} b = x;"
      out = f"{self.use_small_float(dst)} y" if dst.is_small_float else f"{d} y"
      ret = f"{self.use_small_float(dst)}_widen(y)" if dst.is_small_float else "y"
      self.helpers[fn] = f"static inline {d} {fn}({s} x) {{ {sv} {out}; memcpy(&y, &b, sizeof(y)); return {ret}; }}"
      return f"{fn}({x})"
    self.helpers[fn] = f"static inline {d} {fn}({s} x) {{ {d} y; memcpy(&y, &x, sizeof(y)); return y; }}"
    return f"{fn}({x})"

  def render_local_buffer(self, var: str, u: UOp) -> str:
    return f"{self.type_name(u.dtype)} {var}[{int_field(u, 'size', 1)}];"

  def prelude(self) -> list[str]:
    return [f"#include <{h}>" for h in self.headers]

  # ---- constants ----
  def render_const(self, v: bool | int | float, dt: DType) -> str:
    self.type_name(dt)  # a registered dtype
    ok = type(v) in (bool, int) if dt.is_bool else type(v) in (int, float, bool) if dt.is_float else type(v) is int
    if not ok: raise RenderError(f"a {dt.name} constant {str(v)[:40]!r} is not a {dt.name} value")
    if dt.is_bool: return "1" if v else "0"
    if dt.is_float:
      if math.isnan(v): return self.cast_expr(self.nan, dt)
      if math.isinf(v): return self.cast_expr(("-" if v < 0 else "") + self.infinity, dt)
      if dt.is_small_float:  # a value of dt, as the float it widens to (a constant that is none is rounded, as CONST means)
        v = float(round_float(np.float64(v), dt))
        if math.isnan(v) or math.isinf(v): return self.render_const(v, dt)
        return float(v).hex() + self.float_suffix[dtypes.float32]
      return float(v).hex() + self.float_suffix.get(dt, "")
    if dt.kind == "u":
      return f"(({self.type_name(dt)}){v}{'ull' if dt.bits > 32 else 'u'})"
    if v == dt.min and dt.bits >= 32:  # the literal of MIN does not exist in C: it is -(MAX) - 1
      return f"(({self.type_name(dt)})(-{dt.max}{'ll' if dt.bits > 32 else ''} - 1))"
    lit = f"{v}{'ll' if dt.bits > 32 else ''}"
    return lit if dt is dtypes.int32 else f"(({self.type_name(dt)}){lit})"

  def cast_expr(self, x: str, dt: DType) -> str:
    return f"(({self.type_name(dt)})({x}))"

  # ---- ops ----
  def wrapping(self, op: str, dt: DType, a: str, b: str | None = None) -> str:
    """a op b (or op a) in dt, wrapping on overflow."""
    if self.wrap_via_unsigned and dt.kind in "iu":
      ut = self.unsigned_twin(dt)
      inner = f"{op}({ut})({a})" if b is None else f"({ut})({a}) {op} ({ut})({b})"
      return self.cast_expr(inner, dt)
    inner = f"{op}({a})" if b is None else f"{a} {op} {b}"
    return self.cast_expr(inner, dt) if dt.bits < 32 or dt.kind == "u" else f"({inner})"

  def _count(self, b: UOp, bs: str, dt: DType) -> str:
    bits = shift_bits(dt)
    return bs if 0 <= b.vmin and b.vmax < bits else f"(({bs}) & {bits - 1})"

  def render_alu(self, u: UOp, s: list[str]) -> str:
    op, dt = u.op, u.dtype
    sdt = u.src[-1].dtype  # the operands' dtype (a comparison's own is bool)
    if not accepts(op, sdt): raise RenderError(f"{op.name} on {sdt.name} has no meaning: {op.name} takes {class_name(op)}")
    if op is Ops.WHERE: return f"({s[0]} ? {s[1]} : {s[2]})"
    if op in GroupOp.Comparison: return f"({s[0]} {INFIX[op]} {s[1]})"
    if dt.is_bool: return f"(({self.type_name(dt)})({s[0]} {BOOL_INFIX[op]} {s[1]}))"
    if dt.is_float: return self.render_float_alu(u, s)
    if op in WRAPPING: return self.wrapping(PREFIX[op], dt, s[0]) if op in PREFIX else self.wrapping(INFIX[op], dt, s[0], s[1])
    if op is Ops.MAX: return f"({s[0]} > {s[1]} ? {s[0]} : {s[1]})"
    if op is Ops.SHL:
      return self.cast_expr(f"({self.unsigned_twin(dt)})({s[0]}) << {self._count(u.src[1], s[1], dt)}", dt)
    if op is Ops.SHR: return self.cast_expr(f"{s[0]} >> {self._count(u.src[1], s[1], dt)}", dt)
    if op in (Ops.IDIV, Ops.MOD): return self.render_divmod(u, s)
    return self.cast_expr(f"{s[0]} {INFIX[op]} {s[1]}", dt)

  def render_divmod(self, u: UOp, s: list[str]) -> str:
    a, b = u.src
    dt = u.dtype
    ret = self.cast_expr(f"{s[0]} {INFIX[u.op]} {s[1]}", dt)
    # MIN / -1 traps on the hardware for the widths that do not promote to int
    if dt.kind == "i" and dt.bits >= 32 and b.vmin <= -1 <= b.vmax and a.vmin == dt.min:
      ret = f"({s[1]} == -1 ? {self.wrapping(PREFIX[Ops.NEG], dt, s[0]) if u.op is Ops.IDIV else '0'} : {ret})"
    if b.vmin <= 0 <= b.vmax: ret = f"({s[1]} == 0 ? {'0' if u.op is Ops.IDIV else s[0]} : {ret})"
    return ret

  def render_float_alu(self, u: UOp, s: list[str]) -> str:
    op, dt = u.op, u.dtype
    if op in PREFIX: return f"({PREFIX[op]}({s[0]}))"  # -(-1.0f), never --1.0f
    if op in INFIX: return f"({s[0]} {INFIX[op]} {s[1]})"
    if op is Ops.RECIP: return f"({self.render_const(1.0, dt)} / {s[0]})"
    if op is Ops.MAX: return f"(({s[0]} > {s[1]} || {s[0]} != {s[0]}) ? {s[0]} : {s[1]})"  # propagates NaN, as numpy's maximum
    if op in MATH_FN: return f"{self.float_fn(MATH_FN[op], dt)}({s[0]})"
    raise RenderError(f"{op.name} on {dt.name} has no rendering")

  # ---- atomic updates ----
  def combine(self, op: Ops, dt: DType, a: str, b: str) -> str:
    """op(a, b) on dt as render_alu spells it: what an atomic update stores is what the op means elementwise."""
    x = UOp.const(dt, 0)  # a stand-in operand: ADD and MAX are spelled from the operand strings and the dtype alone
    return self.render_alu(UOp(op, dt, (x, x)), [a, b])

  def render_atomic(self, op: Ops, dt: DType, ptr: str, v: str, arg: bool) -> str:
    """The statement that replaces the element at pointer ptr by op(element, v) in one indivisible step. arg: the
    element is in a kernel argument's storage (a PARAM), not in a buffer the kernel declares."""
    raise RenderError(f"{self.lang} renderer has no rendering for ATOMIC")

  def atomic_dtype(self, u: UOp) -> DType:
    """The element dtype an ATOMIC updates, when it can be updated atomically with its op; RenderError else."""
    idx = u.src[0] if u.src else None
    if idx is None or idx.op is not Ops.INDEX or len(u.src) < 2: raise RenderError("ATOMIC of something that is not an INDEX and a value")
    dt = storage_of(idx.src[0]).dtype
    if u.src[1].dtype is not dt: raise RenderError(f"ATOMIC of a {u.src[1].dtype.name} value into {dt.name} storage")
    if (why := atomic_error(u.arg, dt)) is not None: raise RenderError(f"ATOMIC: {why}")
    return dt

  def render_cast(self, x: str, src: DType, dst: DType) -> str:
    if dst.is_bool: return f"({x} != 0)"
    if dst.is_small_float:
      # rounded once from the exact source: a float (a small float's value, every int of at most 16 bits) is exact in
      # float, a double and a wider int go through double (ints exact below 2**53, as round_float says)
      if narrows_from_double(src): return f"{self.use_small_float(dst, double=True)}_widen({self.use_small_float(dst)}_narrow((double)({x})))"
      return self.round_small_float(f"(float)({x})", dst)
    if src.is_float and dst.kind in "iu":
      fn = f"ts_{src.name}_to_{dst.name}"
      s, d = self.type_name(src), self.type_name(dst)
      lo, hi = self.render_const(dst.min, dst), self.render_const(dst.max, dst)
      # compare in double: float(MAX) of 64-bit types rounds up to 2**bits, which is exactly where saturation starts
      self.helpers[fn] = (f"static inline {d} {fn}({s} x) {{ double y = (double)x; if (y != y) return 0; "
                          f"if (y <= {float(dst.min).hex()}) return {lo}; if (y >= {float(dst.max).hex()}) return {hi}; return ({d})y; }}")
      return f"{fn}({x})"
    return self.cast_expr(x, dst)

  # ---- the kernel ----
  def render(self, name: str, linear: list[UOp], params: list[KernelParam]) -> str:
    """The source of one kernel: prelude, helpers it needs, then the function, with one parameter per entry of params."""
    check_identifier(name)
    self.helpers: dict[str, str] = {}
    self.atomics = {(u.arg, self.atomic_dtype(u)) for u in linear if u.op is Ops.ATOMIC}  # the prelude may need them
    body = KernelBody(self, parallel_ranges(linear, self.parallel_min_work) if self.parallel_pragma else {})
    for u in linear: body.write(u)
    if body.depth != 1: raise RenderError(f"RANGEs and ENDs do not pair up ({body.depth - 1} loop(s) left open)")
    sig = self.signature(name, [self.var_decl(p.var, p.dtype) if p.var is not None and p.dtype is not None else
                                self.storage_decl(k, p) for k, p in enumerate(params)])
    helpers = [f"#ifndef TS_HELPER_{fn.upper()}\n#define TS_HELPER_{fn.upper()}\n{text}\n#endif" for fn, text in self.helpers.items()]
    return "\n".join([*self.prelude(), *helpers, sig + " {", *body.lines, "}", ""])

  def unsupported(self, u: UOp) -> RenderError:
    return RenderError(f"{self.lang} renderer has no rendering for {u.op.name} ({u.dtype.name})")


class KernelBody:
  """The statements of one kernel function, written node by node of its LINEAR in a renderer's language: the name each
  node goes by, the lines so far, the loops open. `write` picks the writer of the node's op from _WRITERS."""

  def __init__(self, r: CStyleRenderer, parallel: dict[UOp, list[UOp]]):
    self.r, self.parallel = r, parallel
    self.names: dict[UOp, str] = {}
    self.lines: list[str] = []
    self.depth = 1
    self.counters: dict[str, int] = {}
    self.nglobal = 0

  def write(self, u: UOp) -> None:
    if (writer := _WRITERS.get(u.op)) is None: raise self.r.unsupported(u)
    writer(self, u)

  def fresh(self, prefix: str) -> str:
    self.counters[prefix] = self.counters.get(prefix, 0) + 1
    return f"{prefix}{self.counters[prefix] - 1}"

  def emit(self, line: str) -> None: self.lines.append("  " * self.depth + line)

  def storage(self, u: UOp) -> str:
    u = storage_of(u)
    if u not in self.names: raise RenderError(f"{u.op.name} is used as storage before it is declared")
    return self.names[u]

  def ptr(self, idx: UOp) -> tuple[str, str | None]:
    if idx.op is not Ops.INDEX: raise RenderError(f"LOAD/STORE of a {idx.op.name}, not an INDEX")
    gate = self.names[idx.src[2]] if len(idx.src) == 3 else None
    return f"{self.storage(idx.src[0])}[{self.names[idx.src[1]]}]", gate

  def gated_ptr(self, u: UOp) -> tuple[str, str | None]:
    """The pointer of a LOAD, STORE or ATOMIC, and its gate: the INDEX's and the node's own, both when both are there."""
    p, gate = self.ptr(u.src[0])
    if len(u.src) == 3: gate = self.names[u.src[2]] if gate is None else f"({gate} && {self.names[u.src[2]]})"
    return p, gate

  @staticmethod
  def small_arg(idx: UOp) -> DType | None:
    """The small float dtype of kernel argument storage idx indexes, when it is one (a declared buffer holds floats)."""
    base = storage_of(idx.src[0]) if idx.op is Ops.INDEX else None
    return base.dtype if base is not None and base.op is Ops.PARAM and base.dtype.is_small_float else None

  # ---- the writers, one per op ----
  def name_param(self, u: UOp) -> None: self.names[u] = f"data{int_field(u, 'slot', 0)}"
  def name_const(self, u: UOp) -> None: self.names[u] = self.r.render_const(u.arg, u.dtype)
  def name_var(self, u: UOp) -> None: self.names[u] = var_symbol(u.arg.name)
  def name_index(self, u: UOp) -> None: self.names[u] = "<index>"
  def skip(self, u: UOp) -> None: pass

  def buffer(self, u: UOp) -> None:
    if u.arg.addrspace is AddrSpace.GLOBAL: raise RenderError("a GLOBAL BUFFER inside a kernel body; kernels reach global storage through PARAMs")
    self.names[u] = self.fresh("acc")
    self.emit(self.r.render_local_buffer(self.names[u], u))

  def after(self, u: UOp) -> None:
    self.names[u] = self.storage(u) if u.src[0].op in (Ops.PARAM, Ops.BUFFER, Ops.AFTER) else self.names[u.src[0]]

  def open_loop(self, u: UOp) -> None:
    self.names[u] = self.fresh("ridx")
    if u in self.parallel: self.emit(self.r.render_parallel([self.names[b] for b in self.parallel[u]]))
    glob = u.arg.kind is AxisType.GLOBAL
    self.emit(self.r.render_range(u, self.names[u], self.names[u.src[0]], self.nglobal if glob else -1))
    if glob: self.nglobal += 1
    self.depth += 1

  def close_loops(self, u: UOp) -> None:
    for _ in u.src[1:]:
      self.depth -= 1
      self.emit("}")

  def load(self, u: UOp) -> None:
    p, gate = self.gated_ptr(u)
    alt = self.names[u.src[1]] if len(u.src) == 3 else self.r.render_const(0, u.dtype)
    if (sdt := self.small_arg(u.src[0])) is not None: p = self.r.load_expr(self.storage(u.src[0].src[0]), self.names[u.src[0].src[1]], sdt)
    p = self.r.render_load_expr(u.src[0], p, self.names)
    expr = p if gate is None else f"({gate} ? {p} : {alt})"
    self.names[u] = self.fresh("val")
    self.emit(f"{self.r.type_name(u.dtype)} {self.names[u]} = {expr};")

  def store(self, u: UOp) -> None:
    p, gate = self.gated_ptr(u)
    sdt, names, idx = self.small_arg(u.src[0]), self.names, u.src[0]
    stmt = f"{p} = {names[u.src[1]]};" if sdt is None else self.r.store_stmt(self.storage(idx.src[0]), names[idx.src[1]], names[u.src[1]], sdt)
    if (stmt := self.r.render_store(u, stmt, names)) is not None: self.emit(stmt if gate is None else f"if ({gate}) {stmt}")

  def atomic(self, u: UOp) -> None:
    p, gate = self.gated_ptr(u)
    stmt = self.r.render_atomic(u.arg, self.r.atomic_dtype(u), f"&{p}", self.names[u.src[1]], storage_of(u.src[0].src[0]).op is Ops.PARAM)
    self.emit(stmt if gate is None else f"if ({gate}) {{ {stmt} }}")

  def alu(self, u: UOp) -> None:
    op, r = u.op, self.r
    s = [self.names[x] for x in u.src]
    if op is Ops.CAST: expr = r.render_cast(s[0], u.src[0].dtype, u.dtype)
    elif op is Ops.BITCAST: expr = r.render_bitcast(s[0], u.src[0].dtype, u.dtype)
    else:
      expr = r.render_alu(u, s)
      # WHERE selects a value of the dtype; every other op's float result is rounded to it
      if u.dtype.is_small_float and op is not Ops.WHERE: expr = r.round_small_float(expr, u.dtype)
    self.names[u] = self.fresh("alu")
    self.emit(f"{r.type_name(u.dtype)} {self.names[u]} = {expr};")


_WRITERS: dict[Ops, Callable[[KernelBody, UOp], None]] = {
  Ops.PARAM: KernelBody.name_param, Ops.CONST: KernelBody.name_const, Ops.DEFINE_VAR: KernelBody.name_var, Ops.INDEX: KernelBody.name_index,
  Ops.BUFFER: KernelBody.buffer, Ops.AFTER: KernelBody.after, Ops.RANGE: KernelBody.open_loop, Ops.END: KernelBody.close_loops,
  Ops.LOAD: KernelBody.load, Ops.STORE: KernelBody.store, Ops.ATOMIC: KernelBody.atomic,
  **{op: KernelBody.alu for op in GroupOp.ALU | GroupOp.Cast},
  **{op: KernelBody.skip for op in (Ops.GROUP, Ops.SINK, Ops.LINEAR, Ops.SOURCE)},
}


def narrows_from_double(src: DType) -> bool:
  """Whether a CAST from src into a small float rounds from a double: src is no float value (float32 or a small
  float) and no int exact in float (at most 16 bits, or bool)."""
  return not (src is dtypes.float32 or src.is_small_float or src.is_bool or (src.kind in "iu" and src.bits <= 16))


RENDERERS: dict[str, Callable[[], CStyleRenderer]] = {}


def register(lang: str, factory: Callable[[], CStyleRenderer]) -> None:
  """Make a renderer available to the render pass as options.backend == lang."""
  RENDERERS[lang] = factory

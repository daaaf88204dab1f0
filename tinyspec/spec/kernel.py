"""The KERNEL stage: a kernel body, SINK of STORE/ATOMIC/GROUP/END over scalar values, with every INDEX proven in bounds."""
from __future__ import annotations

import math

from tinyspec import smt
from tinyspec.dtype import dtypes
from tinyspec.ops.atomic import atomic_error, commute
from tinyspec.ops.scalar import shift_bits
from tinyspec.spec.base import Code, Ctx, Finding, forbid, rule, safe_repr
from tinyspec.spec.shared import (alu_dtype_class, alu_dtype_match, arity, cast_rule, device_str, dtype_passthrough, find_paths, group_effects,
                                  image_storage_error, image_storage_rule, kernel_device_clash, is_view_index, reduce_dtype, shape_ok, storage_base,
                                  value_source, VOID_OPS, wellformed, var_dtype, what, where_cond)
from tinyspec.spec.kernel_bounds import bounds_example, in_bounds, index_bounds, index_bounds_timeout, index_parts
from tinyspec.spec.table import table
from tinyspec.uop import AddrSpace, AxisType, GroupOp, Ops, UOp, open_ranges, walk

KERNEL_OPS = frozenset({Ops.CONST, Ops.PARAM, Ops.BUFFER, Ops.REDUCE, Ops.STORE, Ops.ATOMIC, Ops.AFTER, Ops.GROUP, Ops.SINK, Ops.DEFINE_VAR}) \
  | GroupOp.Elementwise | GroupOp.RangeForm
STORAGE_OPS = frozenset({Ops.PARAM, Ops.BUFFER, Ops.AFTER, Ops.IMAGE})
EFFECT_OPS = GroupOp.Effect


def range_name(r: UOp) -> str:
  return f"axis {r.arg.axis}" if hasattr(r.arg, "axis") else "a range"


# ---- op rules ----

no_movement = forbid("kernel.no_movement", "No movement op (view) in a kernel body: views are index arithmetic there.",
                     "view in a kernel body; at {stage} views are index arithmetic (INDEX(buf, idx_expr)), never movement ops")
no_bind = forbid("kernel.no_bind", "No BIND in a kernel body: a kernel reads its variables as DEFINE_VARs, and the kernel-graph CALL that runs "
                 "it binds them (a BIND arg).", "in a kernel body; at {stage} a kernel reads a variable as its DEFINE_VAR and its CALL binds it")
op_allowed = forbid("kernel.op_allowed", "A kernel body holds only CONST, PARAM, BUFFER, DEFINE_VAR, ALUs, casts, REDUCE, STORE, AFTER, GROUP, "
                    "SINK and the range-form ops (RANGE, END, INDEX, LOAD, SPECIAL, ATOMIC).",
                    "in a kernel body; at {stage} a kernel holds scalar computation, range-form ops and stores (no calls, tuples or realizes)")


@rule("kernel.buffer_local", "A BUFFER inside a kernel body is kernel-local (REG or LOCAL); global storage comes in through PARAMs.")
def buffer_local(u: UOp, cx: Ctx) -> str | None:
  if u.arg.addrspace in (AddrSpace.REG, AddrSpace.LOCAL): return None
  return f"GLOBAL BUFFER {u.arg.id} inside a kernel body; at {cx.sname} global storage is reached through PARAMs (kernel args)"


_SCALAR_SRCS = {Ops.REDUCE: (0,), Ops.STORE: (1, 2), Ops.ATOMIC: (1, 2), Ops.LOAD: (1, 2), Ops.INDEX: (1,), Ops.RANGE: (0,), Ops.SPECIAL: (0,)}


def _fast_scalar(op: Ops) -> tuple[Code, ...] | None:
  # an op of n value sources (an ALU, a cast) none of which is a storage op uses no storage as a value
  if op not in GroupOp.ALU and op not in GroupOp.Cast: return None
  return tuple(Code.of(f"s{i}.op not in STORAGE_OPS", STORAGE_OPS=STORAGE_OPS) for i in range(arity(op)))


@rule("kernel.scalar_values", "Every value in a kernel has shape (): storage (PARAM, BUFFER, AFTER) is never used as a value, only addressed "
      "by INDEX and read by LOAD.", fast=_fast_scalar)
def scalar_values(u: UOp, cx: Ctx) -> list[Finding] | None:
  idxs = _SCALAR_SRCS.get(u.op, range(len(u.src)))
  # reported at the user, the place the storage was used as a value
  out = [((), u, "kernel.scalar_values", f"{u.op.name} source {i} is {what(s)} of shape {s.shape}; at {cx.sname} "
          "values are scalars: read storage with LOAD(INDEX(storage, i))")
         for i in idxs if i < len(u.src) and (s := u.src[i]).op in STORAGE_OPS and storage_base(s) is not None and s.shape_ok]
  return out or None


@rule("kernel.reduce_form", "In a kernel a REDUCE is in range form: arg the op (ADD, MAX, MUL), sources (value, RANGE...).")
def reduce_form(u: UOp, cx: Ctx) -> str | None:
  if isinstance(u.arg, tuple):
    return f"REDUCE in tensor form (arg {safe_repr(u.arg)}); at {cx.sname} a REDUCE has arg op and sources (value, RANGE, ...)"
  bad = [i for i, r in enumerate(u.src) if i > 0 and r.op is not Ops.RANGE]
  if bad: return f"REDUCE source {bad[0]} is {what(u.src[bad[0]])}; at {cx.sname} a REDUCE reduces over RANGEs"
  return None


@rule("kernel.store_target", "A kernel STORE writes through an INDEX (a view INDEX target is a view of storage).")
def store_target(u: UOp, cx: Ctx) -> str | None:
  t = u.src[0]
  if t.op is not Ops.INDEX: return f"STORE into {what(t)}; at {cx.sname} a STORE target is INDEX(storage, idx)"
  if not is_view_index(t): return None
  x = t.src[0]
  while x.op in GroupOp.Movement and x.src: x = x.src[0]
  if storage_base(x) is not None: return None
  return f"STORE through a view INDEX of {what(x)}; at {cx.sname} a STORE writes storage (a view INDEX target is a view of storage)"


@rule("kernel.store_dtype", "A kernel STORE's value has the dtype of the INDEX it writes.")
def store_dtype(u: UOp, cx: Ctx) -> str | None:
  t, v = u.src[0], u.src[1]
  if t.op is not Ops.INDEX or t.dtype == v.dtype: return None
  return f"STORE of {v.dtype.name} through a {t.dtype.name} INDEX; at {cx.sname} the value has the element dtype of its storage"


@rule("kernel.atomic_target", "An ATOMIC updates global storage: its target is INDEX(storage, idx) of a GLOBAL PARAM (or an AFTER of one). "
      "Kernel-local buffers belong to one thread or work-group and take plain STOREs.")
def atomic_target(u: UOp, cx: Ctx) -> str | None:
  t = u.src[0]
  if t.op is not Ops.INDEX or is_view_index(t): return f"ATOMIC on {what(t)}; at {cx.sname} an ATOMIC updates INDEX(storage, idx)"
  base = storage_base(t.src[0]) if t.src else None
  if base is None or base.op is Ops.PARAM and getattr(base.arg, "addrspace", None) is AddrSpace.GLOBAL: return None
  space = getattr(getattr(base, "arg", None), "addrspace", None)
  return (f"ATOMIC into {what(base)} ({space.name if space else '?'}); at {cx.sname} an ATOMIC updates global storage, a GLOBAL PARAM "
          "(kernel-local buffers take plain STOREs)")


@rule("kernel.atomic_dtype", "An ATOMIC's value has the element dtype of the INDEX it updates, and its arg (ADD or MAX) and that dtype are an "
      "atomic update tinyspec.ops.atomic defines (int32, uint32, int64, uint64, float32, float64).")
def atomic_dtype(u: UOp, cx: Ctx) -> str | None:
  t, v = u.src[0], u.src[1]
  if t.op is Ops.INDEX and t.dtype != v.dtype:
    return f"ATOMIC of {v.dtype.name} into a {t.dtype.name} INDEX; at {cx.sname} the value has the element dtype of its storage"
  why = atomic_error(u.arg, v.dtype)
  return None if why is None else f"ATOMIC {getattr(u.arg, 'name', u.arg)}: {why}; at {cx.sname} an ATOMIC is one tinyspec.ops.atomic defines"


@rule("kernel.gate_bool", "The gate of a LOAD, STORE or ATOMIC (its last source when it has one) is a bool.")
def gate_bool(u: UOp, cx: Ctx) -> str | None:
  if len(u.src) < 3: return None
  g = u.src[2]
  return None if g.dtype is dtypes.bool else f"{u.op.name} gate is {g.dtype.name}; at {cx.sname} a gate is bool"


@rule("kernel.load_index", "A LOAD reads through an INDEX.")
def load_index(u: UOp, cx: Ctx) -> str | None:
  if u.src[0].op is Ops.INDEX: return None
  return f"LOAD of {what(u.src[0])}; at {cx.sname} a LOAD reads INDEX(storage, idx)"


@rule("kernel.load_dtype", "A LOAD has the dtype of its INDEX, and so has its alternative value when gated.")
def load_dtype(u: UOp, cx: Ctx) -> str | None:
  i = u.src[0]
  if i.op is Ops.INDEX and i.dtype != u.dtype:
    return f"LOAD is {u.dtype.name} but reads a {i.dtype.name} INDEX; at {cx.sname} a LOAD has the element dtype of its storage"
  if len(u.src) == 3 and u.src[1].dtype != u.dtype:
    return f"LOAD alternative is {u.src[1].dtype.name} for a {u.dtype.name} LOAD; at {cx.sname} the alternative has the LOAD's dtype"
  return None


@rule("kernel.index_storage", "INDEX addresses storage: a PARAM, a kernel-local BUFFER, or an AFTER of one.")
def index_storage(u: UOp, cx: Ctx) -> str | None:
  if is_view_index(u) or storage_base(u.src[0]) is not None: return None
  return f"INDEX into {what(u.src[0])}; at {cx.sname} INDEX addresses storage (PARAM, BUFFER, or AFTER of one)"


@rule("kernel.index_int", "The index of an INDEX (source 1) is an integer (index or a fixed-width int).")
def index_int(u: UOp, cx: Ctx) -> str | None:
  if is_view_index(u): return None
  d = u.src[1].dtype
  return None if d.is_int else f"INDEX by a {d.name} value; at {cx.sname} an index is an integer"


@rule("kernel.index_dtype", "An INDEX has the element dtype of the storage it addresses.")
def index_dtype(u: UOp, cx: Ctx) -> str | None:
  b = u.src[0]
  if is_view_index(u) or storage_base(b) is None or b.dtype == u.dtype: return None
  return f"INDEX is {u.dtype.name} into {b.dtype.name} storage; at {cx.sname} an INDEX has its storage's element dtype"


# ---- thread ranges: GLOBAL RANGEs and SPECIALs run as parallel threads on a device, so their iterations must not share data ----
def thread_ranges(body: UOp) -> list[UOp]:
  return [u for u in body_nodes(body) if u.op is Ops.SPECIAL or (u.op is Ops.RANGE and getattr(u.arg, "kind", None) is AxisType.GLOBAL)]


def _global_accesses(body: UOp) -> dict[UOp, list[tuple[UOp, UOp, UOp | None]]]:
  """Every LOAD, STORE and ATOMIC of global storage in body by the storage it addresses: (the access, index, gate)."""
  out: dict[UOp, list[tuple[UOp, UOp, UOp | None]]] = {}
  for u in body_nodes(body):
    if u.op not in GroupOp.Access or (parts := index_parts(u)) is None: continue
    idx, e, _, gate = parts
    base = storage_base(idx.src[0])
    if base is not None and getattr(base.arg, "addrspace", None) is AddrSpace.GLOBAL: out.setdefault(base, []).append((u, e, gate))
  return out


def _terms(e: UOp) -> list[UOp]:
  """The summands of an ADD chain."""
  out, stack = [], [e]
  while stack:
    x = stack.pop()
    if x.op is Ops.ADD and len(x.src) == 2: stack += x.src
    else: out.append(x)
  return out


def _coefficient(t: UOp, r: UOp) -> int | None:
  """c when t is MUL(r, CONST c) in either order, else None."""
  if t.op is not Ops.MUL or len(t.src) != 2: return None
  return next((k.arg for a, k in (t.src, t.src[::-1]) if a is r and k.op is Ops.CONST and isinstance(k.arg, int)), None)


def injective_in(e: UOp, r: UOp, limit: int = 4096) -> bool:
  """Whether two iterations of r never reach one element through index e, shown without z3: e is c*r plus terms free
  of r, some k*y (k constant: they change e by multiples of g = gcd of the k) and others whose spreads sum to S, and no
  step c*j (0 < j < r's bound) lies within S of a multiple of g (e = 4*r0 + r2 is injective in r2 and in r0; r*c + rest
  with 0 <= rest < c is too). No wrap is allowed. False means not shown, not a conflict."""
  coef, ks, spread, lo, hi = None, [], 0, 0, 0
  for t in _terms(e):
    c = 1 if t is r else _coefficient(t, r)
    if c is not None and coef is None and c != 0:
      coef = c
      continue
    if r in t.toposort(): return False
    lo, hi = lo + t.vmin, hi + t.vmax
    if t.op is Ops.CONST: continue
    k = next((x.arg for x in t.src if x.op is Ops.CONST and isinstance(x.arg, int)), None) if t.op is Ops.MUL and len(t.src) == 2 else None
    if k: ks.append(abs(k))
    else: spread += t.vmax - t.vmin
  n = r.vmax - r.vmin + 1 if isinstance(r.vmax, int) and isinstance(r.vmin, int) else limit + 1
  if coef is None or n > limit: return False
  if e.dtype is not dtypes.index:  # the exact value must fit the dtype, or it wraps
    ends = (coef * r.vmin + lo, coef * r.vmin + hi, coef * r.vmax + lo, coef * r.vmax + hi)
    if not e.dtype.is_int or min(ends) < e.dtype.min or max(ends) > e.dtype.max: return False
  g = math.gcd(*ks) if ks else 0
  for j in range(1, n):
    d = abs(coef) * j
    if (min(d % g, g - d % g) if g else d) <= spread: return False
  return True


_LIFTED = GroupOp.ALU | {Ops.CONST, Ops.RANGE, Ops.SPECIAL, Ops.DEFINE_VAR, Ops.CAST}


def as_index(nodes: tuple[UOp | None, ...]) -> tuple[UOp | None, ...] | None:
  """The nodes with their fixed-width integer arithmetic retyped to `index`, when that is exact: every retyped node's
  bounds, as `index` arithmetic (which never wraps) derives them, lie within its own dtype, so no intermediate value
  wraps and each means what it meant (an integer leaf of another kind, a LOAD, is read through a CAST to `index`).
  This undoes linearize's index_to_int, so a question about a PROGRAM's accesses is the one asked of its kernel, with
  z3's integers instead of bit-vectors. None when some retyped value could wrap."""
  new: dict[UOp, UOp] = {}
  # sources first, iteratively (a hostile graph may nest deeper than Python recurses); below an op that is not lifted
  # nothing changes
  for u in walk(tuple(n for n in nodes if n is not None), lambda x: x.src if x.op in _LIFTED else ()):
    src = tuple(new[x] for x in u.src) if u.op in _LIFTED else u.src
    if u.dtype.kind in "iu" and u.op in _LIFTED and not (u.op is Ops.CAST and u.src[0].dtype.kind not in "iux"):
      out = u.replace(dtype=dtypes.index, src=src, arg=int(u.arg) if u.op is Ops.CONST else u.arg)
      if not (u.dtype.min <= out.vmin and out.vmax <= u.dtype.max): return None
    elif u.dtype.kind in "iu":
      out = UOp(Ops.CAST, dtypes.index, (u.replace(src=src),))
    else: out = u.replace(src=src)
    new[u] = out
  return tuple(None if n is None else new[n] for n in nodes)


def iterations_apart(r: UOp, a: tuple[UOp, UOp | None], b: tuple[UOp, UOp | None]) -> smt.BoundsResult:
  """smt.prove_iterations_apart, asked first of the accesses as `index` arithmetic (as_index) when that is exact: a
  proof there is a proof of the accesses, and z3 finds it much faster over integers than over the bit-vectors of int32
  and int64. Anything else is asked of the accesses themselves (a bitwise op z3 sees as opaque over integers could
  make a conflict appear that is not there)."""
  if r.dtype is not dtypes.index and (lifted := as_index((r, *a, *b))) is not None:
    lr, ae, ag, be, bg = lifted
    if (res := smt.prove_iterations_apart(lr, (ae, ag), (be, bg))).status == "proved": return res
  return smt.prove_iterations_apart(r, a, b)


def iteration_conflicts(body: UOp, r: UOp) -> list[tuple[UOp, UOp, smt.BoundsResult]]:
  """(STORE or ATOMIC, access, verdict) for every pair of a write (STORE, ATOMIC) and another access of the same global
  storage in body that is not proven to stay apart across iterations of r (violated, or unknown when z3 gives no
  answer). Two ATOMICs with one combining op commute, so they may meet; an ATOMIC and a LOAD or STORE may not, since
  no order between the threads is assumed."""
  c = body._cache.setdefault("spec:conflicts", {})
  if r in c: return c[r]
  out = []
  for accs in _global_accesses(body).values():
    writes = [x for x in accs if x[0].op in GroupOp.Writes]
    for i, (st, se, sg) in enumerate(writes):
      # a pair of writes is one question whichever comes first; a write against itself is asked too
      for (x, xe, xg) in writes[i:] + [a for a in accs if a[0].op is Ops.LOAD]:
        if commute(st, x): continue
        if xe is se and injective_in(se, r): continue  # one index, one element per iteration: apart
        res = iterations_apart(r, (se, sg), (xe, xg))
        if res.status != "proved": out.append((st, x, res))
  c[r] = out
  return out


def _verb(u: UOp) -> str:
  return "loads" if u.op is Ops.LOAD else "stores" if u.op is Ops.STORE else f"updates ({getattr(u.arg, 'name', u.arg)})"


@rule("kernel.thread_independent", "The iterations of a GLOBAL RANGE or a SPECIAL run as parallel threads: no element of global storage that "
      "one iteration stores or updates atomically is loaded, stored or updated by another (proven with z3 for every pair of accesses), "
      "except that ATOMICs with one combining op may update one element from several threads.")
def thread_independent(u: UOp, cx: Ctx) -> list[Finding] | None:
  out: list[Finding] = []
  # the first conflict of each STORE per thread range tells enough
  conflicts = list({(r, c[0]): (r, c) for r in thread_ranges(u) for c in reversed(iteration_conflicts(u, r))}.values())
  paths = find_paths(u, {st for _, (st, _, _) in conflicts}) if conflicts else {}
  for r, (st, x, res) in conflicts:
    name = f"GLOBAL {range_name(r)}" if r.op is Ops.RANGE else f"SPECIAL {r.arg}"
    mine, other = _verb(st), _verb(x)
    if res.status == "violated":
      ex = res.example or {}
      why = f"iteration {ex.get('first')} of {name} {mine} element {res.value} and iteration {ex.get('second')} {other} it"
    else: why = f"z3 could not prove within {smt.TIMEOUT_MS} ms that where one iteration of {name} {mine}, no other {other}"
    out.append((paths.get(st, ()), st, "kernel.thread_independent", f"{why}; at {cx.sname} the iterations of a thread range are independent"))
  return out or None


@rule("kernel.shift_count", "A SHL or SHR whose count lies outside [0, the shift width) for every value its interval bounds allow is "
      "undefined wherever it runs (docs/spec.md, undefined points): such a shift is a mistake of whatever made it (a count that may "
      "be in range is legal).")
def shift_count(u: UOp, cx: Ctx) -> str | None:
  if len(u.src) != 2 or not u.dtype.is_int or not u.src[1].dtype.is_int or wellformed(u.src[1]): return None
  b, width = u.src[1], shift_bits(u.dtype)
  if b.vmax < 0 or b.vmin >= width:
    return (f"{u.op.name} of {u.dtype.name} by a count in [{b.vmin}, {b.vmax}], never in [0, {width}); at {cx.sname} a shift count is "
            "within the width for some value")
  return None


# ---- kernel-local storage: a BUFFER declared in the kernel holds nothing until a STORE writes it ----
def _stores_into(deps: tuple[UOp, ...], buf: UOp) -> bool:
  """Whether some STORE under deps (not entering call bodies) writes into buf."""
  for x in walk(deps, lambda x: x.src[1:] if x.op is Ops.CALL else x.src):
    if x.op is Ops.STORE and x.src and x.src[0].op is Ops.INDEX and x.src[0].src and storage_base(x.src[0].src[0]) is buf: return True
  return False


@rule("kernel.local_read_after_write", "A LOAD of a kernel-local BUFFER (an accumulator or scratch, REG or LOCAL) is ordered after a STORE "
      "into it: its INDEX reaches the buffer through AFTERs one of whose dependencies holds such a STORE. A kernel-local buffer holds nothing "
      "until it is written; reading it before is reading uninitialized memory, undefined as in C.")
def local_read_after_write(u: UOp, cx: Ctx) -> str | None:
  if not u.src or (idx := u.src[0]).op is not Ops.INDEX or not idx.src: return None
  deps: list[UOp] = []
  s = idx.src[0]
  while s.op is Ops.AFTER and s.src:
    deps += s.src[1:]
    s = s.src[0]
  if s.op is not Ops.BUFFER or _stores_into(tuple(deps), s): return None
  space = getattr(s.arg, "addrspace", None)
  return (f"LOAD of kernel-local BUFFER {getattr(s.arg, 'id', '?')} ({space.name if space else '?'}) is ordered after no STORE into it; at "
          f"{cx.sname} a kernel-local buffer is read only after it is written (through AFTER(buffer, the STORE...))")


# ---- images: IMAGE(PARAM), arg (height, width), the PARAM's flat storage seen as RGBA pixels (ops.image.image_coords) ----

@rule("kernel.image_view", "An IMAGE view (arg (height, width)) sits directly over a GLOBAL PARAM of its dtype, float32 or float16, with height * "
      "width * 4 equal to the PARAM's size and both dims in 1..IMAGE_MAX_DIM (8192, the image2d width and height limit of every OpenCL 1.2 "
      "device with images); an INDEX through it addresses the PARAM's flat element.")
def image_view(u: UOp, cx: Ctx) -> str | None:
  p = u.src[0]
  if p.op is not Ops.PARAM: return f"IMAGE over {what(p)}; at {cx.sname} an IMAGE views a PARAM"
  if p.dtype != u.dtype: return f"IMAGE is {u.dtype.name} over a {p.dtype.name} PARAM; at {cx.sname} an IMAGE has its PARAM's dtype"
  if (why := image_storage_error(p, u.arg)) is None: return None
  return f"IMAGE {safe_repr(u.arg)} over PARAM slot {p.arg.slot}: {why}; at {cx.sname} an IMAGE's dims fit its PARAM"


image_param = image_storage_rule("kernel.image_param", "An image PARAM (ParamArg.image, (height, width): an IMAGE view folded into its PARAM, as "
                                 "linearize does) is GLOBAL float32 or float16 storage of height * width * 4 elements, both dims in "
                                 "1..IMAGE_MAX_DIM (8192).")


@rule("kernel.image_one_form", "A kernel sees each PARAM slot in one form: flat, or as an image of one dims (every use of the PARAM through "
      "an IMAGE view of those dims at KERNEL, every PARAM of the slot carrying them at PROGRAM), since a device's kernel argument is either "
      "a pointer or an image.")
def image_one_form(u: UOp, cx: Ctx) -> list[Finding] | None:
  forms: dict[int, dict[object, UOp]] = {}
  for x in body_nodes(u):
    for s in x.src:
      if isinstance(s, UOp) and s.op is Ops.PARAM and isinstance(getattr(s.arg, "slot", None), int):
        form = x.arg if x.op is Ops.IMAGE else getattr(s.arg, "image", None)
        forms.setdefault(s.arg.slot, {}).setdefault(form, x)
  bad = {slot: fs for slot, fs in forms.items() if len(fs) > 1}
  if not bad: return None
  paths = find_paths(u, {x for fs in bad.values() for x in fs.values()})
  return [(paths.get(x, ()), x, "kernel.image_one_form", f"PARAM slot {slot} is used as {' and as '.join(_form_words(f) for f in fs)}; at "
           f"{cx.sname} a kernel sees a storage in one form") for slot, fs in bad.items() for x in list(fs.values())[1:]]


@rule("kernel.one_device", "A kernel runs on one device: its GLOBAL PARAMs are on one device, except host memory (storage on NPY), which a "
      "kernel of the CPU or PYTHON family may read too (kgraph.one_device holds a kernel CALL's args to the same).")
def one_device(u: UOp, cx: Ctx) -> list[Finding] | None:
  params = sorted((x for x in body_nodes(u) if x.op is Ops.PARAM and getattr(x.arg, "addrspace", None) is AddrSpace.GLOBAL),
                  key=lambda x: x.arg.slot if isinstance(x.arg.slot, int) else -1)  # in slot order: the message names the first slot's device
  if (clash := kernel_device_clash([(p, p.arg.device) for p in params])) is None: return None
  (p0, d0), (p, d), host = clash
  why = (f"only a kernel of the CPU or PYTHON family reads host memory on {device_str(d)}" if host else
         "a kernel runs on one device (a COPY call moves storage between devices)")
  return [(find_paths(u, {p}).get(p, ()), p, "kernel.one_device", f"PARAM slot {p.arg.slot} is on {device_str(d)} and PARAM slot "
           f"{p0.arg.slot} on {device_str(d0)}; at {cx.sname} {why}")]


def _form_words(form: object) -> str:
  return "flat storage" if form is None else f"a {safe_repr(form)} image"


# ---- the view INDEX of rangeify: INDEX(x, i0, ..., in-1) with arg "view", the element (i0, ...) of the tensor value x ----

@rule("kernel.view_index", "At KERNEL (and PROGRAM) no view INDEX(x, i0, ...) is left: it is rangeify's addressing of a tensor value while it "
      "builds a kernel, and a built kernel reads values with LOAD(INDEX(storage, idx)).")
def view_index(u: UOp, cx: Ctx) -> str | None:
  if not is_view_index(u): return None
  return (f"view INDEX of {what(u.src[0])} left in a kernel body; at {cx.sname} a kernel reads values with LOAD(INDEX(storage, idx)) "
          "(a view INDEX only stands in a kernel rangeify is still building)")


@rule("kernel.view_index_form", "A view INDEX(x, i0, ..., in-1) in a kernel body that is still being built (checked at TENSOR) has exactly one "
      "integer index per axis of the tensor value x (n == x.ndim) and x's dtype; x itself is checked at TENSOR.")
def view_index_form(u: UOp, cx: Ctx) -> str | None:
  if not is_view_index(u): return None
  x = u.src[0]
  if x.op in VOID_OPS or x.dtype is dtypes.void or not shape_ok(x) or x.shape is None:
    return f"view INDEX of {what(x)}; at {cx.sname} a view INDEX addresses an element of a tensor value"
  n, nd = len(u.src) - 1, len(x.shape)
  if n != nd: return f"view INDEX has {n} index(es) for a value of shape {x.shape}; at {cx.sname} a view INDEX has one index per axis"
  bad = [i for i, s in enumerate(u.src[1:]) if not s.dtype.is_int]
  if bad: return f"view INDEX axis {bad[0]} is indexed by a {u.src[1 + bad[0]].dtype.name} value; at {cx.sname} an index is an integer"
  if u.dtype != x.dtype: return f"view INDEX is {u.dtype.name} of a {x.dtype.name} value; at {cx.sname} a view INDEX has the dtype of its value"
  return None


@rule("kernel.view_index_bounds", "Every index of a view INDEX is proven within [0, dim) of its axis (interval bounds first, z3 when they "
      "cannot decide), as a flat INDEX is within its storage.")
def view_index_bounds(u: UOp, cx: Ctx) -> str | None:
  if not is_view_index(u) or view_index_form.fn(u, cx) is not None: return None
  for ax, (e, d) in enumerate(zip(u.src[1:], u.src[0].shape)):
    if wellformed(e) or (res := in_bounds(e, d)).status == "proved": continue
    why = "cannot be proven (z3 gave unknown)" if res.status == "unknown" else f"can leave it: {bounds_example(res)}"
    return f"view INDEX axis {ax} of size {d}: the index {why}; at {cx.sname} every index of a view INDEX is within [0, dim) of its axis"
  return None


@rule("kernel.range_bound", "RANGE and SPECIAL have an integer dtype (index before linearize) and a bound of that same dtype.")
def range_bound(u: UOp, cx: Ctx) -> str | None:
  b = u.src[0]
  if not u.dtype.is_int: return f"{u.op.name} is {u.dtype.name}; at {cx.sname} a {u.op.name} is an integer"
  if b.dtype != u.dtype: return f"{u.op.name} of {u.dtype.name} has a {b.dtype.name} bound; at {cx.sname} the bound has the {u.op.name}'s dtype"
  return None


@rule("kernel.end_form", "END(effect, RANGE, ...): it closes one or more RANGEs around an effect (STORE, ATOMIC, GROUP or END).")
def end_form(u: UOp, cx: Ctx) -> str | None:
  if u.src[0].op not in EFFECT_OPS:
    return f"END around {what(u.src[0])}; at {cx.sname} an END closes ranges around an effect (STORE, ATOMIC, GROUP, END)"
  bad = [i for i, r in enumerate(u.src) if i > 0 and r.op is not Ops.RANGE]
  if bad: return f"END source {bad[0]} is {what(u.src[bad[0]])}; at {cx.sname} END closes RANGEs"
  return None


@rule("kernel.after_storage", "AFTER in a kernel is on storage: a PARAM, a kernel-local BUFFER, or an AFTER of one.")
def after_storage(u: UOp, cx: Ctx) -> str | None:
  if storage_base(u.src[0]) is not None: return None
  return f"AFTER on {what(u.src[0])}; at {cx.sname} AFTER is on storage (PARAM, BUFFER, or AFTER of one)"


@rule("kernel.after_deps", "The dependencies of a kernel AFTER are effects (STORE, ATOMIC, GROUP, END) or the RANGEs it is placed in.")
def after_deps(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), d, "kernel.after_deps", f"AFTER dependency {i - 1} is {what(d)}; at {cx.sname} AFTER waits for effects or is placed in RANGEs")
         for i, d in enumerate(u.src) if i > 0 and d.op not in EFFECT_OPS and d.op is not Ops.RANGE]
  return out or None


@rule("kernel.sink_effects", "A kernel SINK (the body root) holds only effects: STORE, ATOMIC, GROUP, END.")
def sink_effects(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), s, "kernel.sink_effects",
          f"kernel SINK entry {i} is {what(s)}; at {cx.sname} a kernel SINK holds effects (STORE, ATOMIC, GROUP, END)")
         for i, s in enumerate(u.src) if s.op not in EFFECT_OPS]
  return out or None


@rule("kernel.range_closed", "Every RANGE a STORE or ATOMIC depends on is closed by an END around it (reduce ranges by their REDUCE).")
def range_closed(u: UOp, cx: Ctx) -> list[Finding] | None:
  left = open_ranges(u)
  if not left: return None
  out: list[Finding] = []
  seen: set[UOp] = set()
  stack: list[tuple[UOp, tuple[int, ...], frozenset]] = [(u, (), frozenset())]
  while stack:
    x, path, closed = stack.pop()
    if x in seen: continue
    seen.add(x)
    if x.op in GroupOp.Writes and (miss := open_ranges(x) - closed):
      axes = ", ".join(sorted(range_name(r) for r in miss))
      out.append((path, x, "kernel.range_closed", f"{x.op.name} depends on RANGE {axes} but no END around it closes it; at {cx.sname} every "
                  f"RANGE the {x.op.name} depends on is closed by an END around it"))
    if x.op is Ops.END: closed = closed | frozenset(x.src[1:])
    for i, s in enumerate(x.src):
      if isinstance(s, UOp) and s not in seen and open_ranges(s) - closed: stack.append((s, path + (i,), closed))
  if not out:
    axes = ", ".join(sorted(range_name(r) for r in left))
    out.append(((), u, "kernel.range_closed", f"RANGE {axes} is used but never closed by an END; at {cx.sname} every RANGE is closed by an END"))
  return out


@rule("kernel.atomic_ranges", "An ATOMIC depends on every RANGE of the ENDs around it (through its index, value, gate, or an AFTER of its "
      "target placed in the RANGE). An END runs its effect once per iteration, and a STORE that no iteration changes may run once "
      "for all of them, as linearize places it; an atomic update may not, since each run adds to the element.")
def atomic_ranges(u: UOp, cx: Ctx) -> list[Finding] | None:
  out: list[Finding] = []
  seen: set[tuple[UOp, frozenset]] = set()
  stack: list[tuple[UOp, tuple[int, ...], frozenset]] = [(s, (i,), frozenset()) for i, s in enumerate(u.src)]
  while stack:
    x, path, around = stack.pop()
    if (x, around) in seen: continue
    seen.add((x, around))
    if x.op is Ops.ATOMIC and (miss := around - open_ranges(x)):
      axes = ", ".join(sorted(range_name(r) for r in miss))
      out.append((path, x, "kernel.atomic_ranges", f"ATOMIC under an END over RANGE {axes} does not depend on it; at {cx.sname} an "
                  "atomic update depends on every RANGE it runs in (place its target in the RANGE: INDEX(AFTER(storage, RANGE), idx))"))
    elif x.op is Ops.END and x.src: stack.append((x.src[0], path + (0,), around | frozenset(r for r in x.src[1:] if r.op is Ops.RANGE)))
    elif x.op is Ops.GROUP: stack.extend((s, path + (i,), around) for i, s in enumerate(x.src))
  return out or None


@rule("kernel.range_axis_unique", "Within one kernel, one RANGE node per axis id (two RANGEs with the same axis are two loops with one name).")
def range_axis_unique(u: UOp, cx: Ctx) -> list[Finding] | None:
  ranges = [r for r in body_nodes(u) if r.op is Ops.RANGE and hasattr(r.arg, "axis")]
  first: dict[int, UOp] = {}
  dup: list[UOp] = []
  for r in ranges:
    if first.setdefault(r.arg.axis, r) is not r: dup.append(r)
  if not dup: return None
  paths = find_paths(u, set(dup))
  return [(paths.get(r, ()), r, "kernel.range_axis_unique", f"two different RANGEs have axis {r.arg.axis}; at {cx.sname} an axis id names one "
           "RANGE per kernel") for r in dup]


def body_nodes(u: UOp) -> list[UOp]:
  c = u._cache
  if (ret := c.get("spec:nodes")) is not None: return ret
  out, seen, stack = [], {u}, [u]
  while stack:
    x = stack.pop()
    out.append(x)
    # a CALL's body is another kernel with axis ids of its own (an opaque call read while rangeify builds a kernel)
    for s in (x.src[1:] if x.op is Ops.CALL else x.src):
      if isinstance(s, UOp) and s not in seen:
        seen.add(s)
        stack.append(s)
  c["spec:nodes"] = out
  return out


_ALU = (value_source, alu_dtype_match, alu_dtype_class, scalar_values)

KERNEL_TABLE = table(
  (GroupOp.Unary | GroupOp.Binary, _ALU), ((Ops.SHL, Ops.SHR), (shift_count,)), (Ops.WHERE, (*_ALU, where_cond)),
  (GroupOp.Cast, (value_source, cast_rule, scalar_values)),
  (Ops.REDUCE, (value_source, reduce_form, scalar_values, dtype_passthrough, reduce_dtype)),
  (Ops.BUFFER, (buffer_local,)),
  (Ops.STORE, (store_target, store_dtype, gate_bool, scalar_values, index_bounds, index_bounds_timeout)),
  (Ops.ATOMIC, (atomic_target, atomic_dtype, gate_bool, scalar_values, index_bounds, index_bounds_timeout)),
  (Ops.LOAD, (load_index, load_dtype, gate_bool, scalar_values, index_bounds, index_bounds_timeout, local_read_after_write)),
  (Ops.INDEX, (index_storage, index_int, index_dtype, scalar_values, view_index)),
  ((Ops.RANGE, Ops.SPECIAL), (range_bound, scalar_values)), (Ops.END, (end_form,)),
  (Ops.AFTER, (after_storage, after_deps, dtype_passthrough)), (Ops.GROUP, (group_effects,)),
  (Ops.SINK, (sink_effects, range_closed, atomic_ranges, range_axis_unique, thread_independent, image_one_form, one_device)),
  (GroupOp.Movement, (no_movement,)), (Ops.BIND, (no_bind,)), (Ops.DEFINE_VAR, (var_dtype,)),
  ([op for op in Ops if op not in KERNEL_OPS and op not in GroupOp.Movement and op is not Ops.BIND], (op_allowed,)),
  (Ops.IMAGE, (image_view,)), (Ops.PARAM, (image_param,)), (Ops.CONST, ()),
)

# a kernel body reached while checking a TENSOR graph may still be under construction: rangeify addresses tensor values in it with view
# INDEXes (their value x is checked at TENSOR, see engine.K_T); at KERNEL none may be left (kernel.view_index). Such a kernel
# reaches PARAMs of the body it is built in (through a view INDEX's value, an opaque call's args), which are not its own:
# kernel.one_device holds once it is built
KERNEL_BUILD_TABLE = table(base={**KERNEL_TABLE, Ops.INDEX: (index_storage, index_int, index_dtype, scalar_values, view_index_form,
                                                            view_index_bounds),
                                 Ops.SINK: tuple(r for r in KERNEL_TABLE[Ops.SINK] if r is not one_device)})

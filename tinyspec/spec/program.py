"""The PROGRAM stage: a linearized kernel. Kernel rules still hold; plus instruction order, loop nesting, concrete dtypes."""
from __future__ import annotations

from tinyspec.dtype import dtypes
from tinyspec.spec.base import Code, Ctx, Finding, Rule, forbid, rule
from tinyspec.spec.kernel import KERNEL_TABLE, range_name, body_nodes
from tinyspec.spec.kernel import op_allowed as kernel_op_allowed
from tinyspec.spec.shared import find_paths, storage_base, what
from tinyspec.ops.image import pixel_groups
from tinyspec.spec.table import Table, table
from tinyspec.uop import GroupOp, Ops, UOp, open_ranges


no_reduce = forbid("program.no_reduce", "No REDUCE in a program: lower_reduce has turned every REDUCE into an accumulator loop.",
                   "in a program; at PROGRAM reductions are accumulator loops (lower_reduce runs before linearize)")
no_movement = forbid("program.no_movement", "No movement op in a program.", "view in a program; at PROGRAM there are no views")


no_image_view = forbid("program.no_image_view", "No IMAGE view in a program: linearize folds each into its PARAM's arg (ParamArg.image).",
                       "view in a program; at PROGRAM an image is a PARAM whose arg carries its dims (linearize folds the view)")


def image_params(sink: UOp) -> dict[UOp, list[UOp]]:
  """Every image PARAM of a kernel SINK with the LOADs, STOREs and ATOMICs that address it."""
  out: dict[UOp, list[UOp]] = {}
  for x in body_nodes(sink):
    if x.op in GroupOp.Access and x.src and x.src[0].op is Ops.INDEX and x.src[0].src and (b := storage_base(x.src[0].src[0])) is not None \
       and b.op is Ops.PARAM and getattr(b.arg, "image", None) is not None: out.setdefault(b, []).append(x)
  return out


@rule("program.image_access", "A kernel reads an image PARAM or writes it, never both, and never by an ATOMIC: an OpenCL 1.2 image is "
      "read_only or write_only in a kernel (no read_write images), and has no atomic updates.")
def image_access(u: UOp, cx: Ctx) -> list[Finding] | None:
  if u.src[0].op is not Ops.SINK: return None
  out: list[Finding] = []
  for p, accs in image_params(u.src[0]).items():
    ops = {a.op for a in accs}
    if Ops.ATOMIC in ops: why = "is updated by an ATOMIC"
    elif ops == {Ops.LOAD, Ops.STORE}: why = "is both loaded and stored"
    else: continue
    out.append(((0, *find_paths(u.src[0], {p}).get(p, ())), p, "program.image_access", f"image PARAM slot {p.arg.slot} {why}; at PROGRAM a "
                "kernel only reads or only writes an image (OpenCL 1.2 images are read_only or write_only)"))
  return out or None


@rule("program.image_store", "A kernel writes an image in whole pixels: every STORE into an image PARAM is one of four ungated STOREs, "
      "sources of one GROUP and run in the same loops, into indices b + 4j, b + 4j + 1, b + 4j + 2, b + 4j + 3 with b a multiple of 4 by "
      "its form (ops.image.pixel_groups; the four channels of one pixel, as an UNROLL of a 4-wide channel axis makes them): write_imagef writes "
      "a pixel at once.")
def image_store(u: UOp, cx: Ctx) -> list[Finding] | None:
  if u.src[0].op is not Ops.SINK: return None
  out: list[Finding] = []
  for p, accs in image_params(u.src[0]).items():
    stores = [a for a in accs if a.op is Ops.STORE]
    if not stores: continue
    whole = {st for g in pixel_groups(u.src[0], stores) for st in g}
    paths = find_paths(u.src[0], set(stores) - whole)
    out += [((0, *paths.get(st, ())), st, "program.image_store", f"STORE into image PARAM slot {p.arg.slot} is no part of a whole-pixel "
             "group; at PROGRAM an image is written four channels of a pixel at once (four STOREs of one GROUP at b + 4j + c, c = 0..3)")
            for st in dict.fromkeys(stores) if st not in whole]
  return out or None


@rule("program.no_index_dtype", "No node of dtype `index` in a program: linearize gives every integer a concrete width (int32 or int64).",
      fast=lambda op: (Code.of("dt is not INDEX_DT", INDEX_DT=dtypes.index),))
def no_index_dtype(u: UOp, cx: Ctx) -> str | None:
  if u.dtype is not dtypes.index: return None
  return f"{u.op.name} has dtype index; at PROGRAM every integer has a concrete dtype (int32 or int64)"


@rule("program.linear_order", "In a LINEAR every source of an instruction is itself an instruction listed earlier.")
def linear_order(u: UOp, cx: Ctx) -> list[Finding] | None:
  pos: dict[UOp, int] = {}
  for i, x in enumerate(u.src): pos.setdefault(x, i)
  out: list[Finding] = []
  for i, x in enumerate(u.src):
    for j, s in enumerate(x.src):
      p = pos.get(s)
      if p is None:
        out.append(((i,), x, "program.linear_order", f"LINEAR instruction {i} ({x.op.name}) uses source {j} ({what(s)}), which the LINEAR never "
                    "lists; at PROGRAM every source of an instruction is listed earlier"))
      elif p >= i:
        out.append(((i,), x, "program.linear_order", f"LINEAR instruction {i} ({x.op.name}) uses source {j} ({s.op.name}), listed later at {p}; "
                    "at PROGRAM every source of an instruction comes earlier"))
  return out or None


@rule("program.linear_duplicate", "An instruction appears once in a LINEAR.")
def linear_duplicate(u: UOp, cx: Ctx) -> list[Finding] | None:
  seen: dict[UOp, int] = {}
  out: list[Finding] = []
  for i, x in enumerate(u.src):
    if x in seen:
      out.append(((i,), x, "program.linear_duplicate", f"LINEAR lists {x.op.name} at {seen[x]} and again at {i}; at PROGRAM each instruction "
                  "appears once"))
    else: seen[x] = i
  return out or None


def _loops(u: UOp) -> tuple[list[Finding], list[Finding], list[Finding]]:
  """Walk the LINEAR as a program: (nesting, use-after-end, unclosed) findings."""
  c = u._cache
  if (ret := c.get("spec:loops")) is not None: return ret
  nest: list[Finding] = []
  late: list[Finding] = []
  stack: list[UOp] = []
  ended: dict[UOp, int] = {}
  opened: dict[UOp, int] = {}
  for i, x in enumerate(u.src):
    if x.op is Ops.RANGE and x not in opened:
      opened[x] = i
      stack.append(x)
    used = [r for r in open_ranges(x) if r in ended and r is not x]
    if used:
      axes = ", ".join(sorted(range_name(r) for r in used))
      late.append(((i,), x, "program.range_use_after_end", f"LINEAR instruction {i} ({x.op.name}) depends on RANGE {axes} after its END at "
                   f"{min(ended[r] for r in used)}; at PROGRAM the users of a range come between its RANGE and its END"))
    if x.op is Ops.END:
      rs = [r for r in x.src[1:] if r.op is Ops.RANGE]
      top = stack[len(stack) - len(rs):] if len(rs) <= len(stack) else stack
      if set(top) != set(rs):
        want = ", ".join(range_name(r) for r in rs)
        inner = ", ".join(range_name(r) for r in reversed(stack[-max(len(rs), 1):])) or "none"
        nest.append(((i,), x, "program.range_nesting", f"END at {i} closes {want} while the innermost open loops are {inner}; at PROGRAM an "
                     "END closes the innermost open RANGEs (loops nest)"))
      for r in rs:
        if r in stack: stack.remove(r)
        ended.setdefault(r, i)
  unclosed = [((opened[r],), r, "program.range_unclosed", f"RANGE {range_name(r)} opened at {opened[r]} is never closed by an END; at PROGRAM "
               "every loop is closed") for r in stack]
  c["spec:loops"] = ret = (nest, late, unclosed)
  return ret


@rule("program.range_nesting", "RANGE and END nest in a LINEAR: an END closes exactly the innermost open RANGEs.")
def range_nesting(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _loops(u)[0] or None


@rule("program.range_use_after_end", "No instruction depends on a RANGE after the END that closes it.")
def range_use_after_end(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _loops(u)[1] or None


@rule("program.range_unclosed", "Every RANGE opened in a LINEAR is closed by an END later in it.")
def range_unclosed(u: UOp, cx: Ctx) -> list[Finding] | None:
  return _loops(u)[2] or None


@rule("program.program_form", "PROGRAM(kernel SINK, LINEAR[, SOURCE]).")
def program_form(u: UOp, cx: Ctx) -> str | None:
  want = (Ops.SINK, Ops.LINEAR, Ops.SOURCE)
  for i, s in enumerate(u.src):
    if s.op is not want[i]:
      return f"PROGRAM source {i} is {what(s)}; at PROGRAM a PROGRAM is (kernel SINK, LINEAR[, SOURCE])"
  return None


@rule("program.linear_covers_sink", "The LINEAR of a PROGRAM lists exactly the nodes of its kernel SINK (the SINK itself optional).")
def linear_covers_sink(u: UOp, cx: Ctx) -> list[Finding] | None:
  sink, lin = u.src[0], u.src[1]
  if sink.op is not Ops.SINK or lin.op is not Ops.LINEAR: return None
  nodes = set(body_nodes(sink))
  listed = set(lin.src)
  out: list[Finding] = []
  for i, x in enumerate(lin.src):
    if x not in nodes:
      out.append(((1, i), x, "program.linear_covers_sink", f"LINEAR instruction {i} ({x.op.name}) is not a node of the PROGRAM's kernel SINK; "
                  "at PROGRAM the LINEAR orders the kernel's own nodes"))
  missing = [x for x in body_nodes(sink) if x not in listed and x is not sink]
  for x in missing:
    out.append(((0,), x, "program.linear_covers_sink", f"{x.op.name} of the kernel SINK is missing from the LINEAR; at PROGRAM the LINEAR "
                "lists every node of the kernel"))
  return out or None


def _program_table() -> Table:
  base = {op: tuple(r for r in rs if r is not kernel_op_allowed) for op, rs in KERNEL_TABLE.items()}
  base[Ops.REDUCE] = (no_reduce,)
  for op in GroupOp.Movement: base[op] = (no_movement,)
  for op in (Ops.CALL, Ops.TUPLE, Ops.GETTUPLE, Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY): base[op] = (kernel_op_allowed,)
  base[Ops.LINEAR] = (linear_order, linear_duplicate, range_nesting, range_use_after_end, range_unclosed)
  base[Ops.PROGRAM] = (program_form, linear_covers_sink, image_access, image_store)
  base[Ops.IMAGE] = (no_image_view,)
  base[Ops.SOURCE] = ()
  every: list[Rule] = [no_index_dtype]
  return table((list(Ops), every), base=base)


PROGRAM_TABLE = _program_table()

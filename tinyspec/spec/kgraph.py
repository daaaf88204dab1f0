"""The KERNEL_GRAPH stage: a SINK of realized storage, kernel CALLs on storage args, order only through AFTER."""
from __future__ import annotations

from tinyspec.spec.base import Ctx, Finding, Stage, forbid, rule
from tinyspec.spec.shared import (bind_form, bind_in_bounds, bind_one_value, device_str, dtype_passthrough, free_vars, image_storage_rule,
                                  kernel_device_clash,
                                  param_dtype, param_outside, param_size, param_slot, storage_base, var_dtype, what)
from tinyspec.spec.table import Table, table
from tinyspec.uop import AddrSpace, GroupOp, Ops, UOp, body_kind, is_precompiled_call, storage_of

# a BIND's own sources (its DEFINE_VAR and CONST) are checked as kernel values (spec/engine.py): only the BIND stands in the graph
KGRAPH_OPS = frozenset({Ops.BUFFER, Ops.PARAM, Ops.AFTER, Ops.CALL, Ops.SINK, Ops.COPY, Ops.BIND, Ops.DEFINE_VAR})
STORAGE_WORDS = "storage (BUFFER, PARAM, or AFTER of one)"
ARG_WORDS = f"{STORAGE_WORDS} or a variable (a BIND, or a DEFINE_VAR passed on)"


def kgraph_storage(u: UOp) -> bool:
  return storage_base(u) is not None


no_movement = forbid("kgraph.no_movement", "No movement op (view) anywhere in a kernel graph: views become index arithmetic inside kernels.",
                     "view in the kernel graph; at KERNEL_GRAPH there are no views (rangeify turns them into index arithmetic)")
no_tuple = forbid("kgraph.no_tuple", "No TUPLE or GETTUPLE left in a kernel graph: value calls are inlined or precompiled by then.",
                  "left in the kernel graph; at KERNEL_GRAPH value calls are resolved (no TUPLE, no GETTUPLE)")
op_allowed = forbid("kgraph.op_allowed", "A kernel graph holds only SINK, AFTER, CALL, BUFFER, PARAM (and COPY as a call body) and the "
                    "variables its calls are passed (BIND, DEFINE_VAR); values live in kernel bodies.",
                    "in the kernel graph; at KERNEL_GRAPH the graph holds only SINK, AFTER, CALL, BUFFER, PARAM and bound variables "
                    "(computation lives in kernel bodies)")


@rule("kgraph.buffer_global", "A BUFFER of the kernel graph is GLOBAL or LOCAL memory; REG buffers live inside kernel bodies.")
def buffer_global(u: UOp, cx: Ctx) -> str | None:
  if u.arg.addrspace is not AddrSpace.REG: return None
  return f"REG BUFFER {u.arg.id} in the kernel graph; at KERNEL_GRAPH buffers are device memory (REG accumulators belong inside a kernel)"


image_buffer = image_storage_rule("kgraph.image_buffer", "An image BUFFER (BufferArg.image, (height, width)) of the kernel graph is GLOBAL float32 "
                                  "or float16 storage of height * width * 4 elements, both dims in 1..IMAGE_MAX_DIM (8192); it passes to kernel "
                                  "CALLs as storage, binding a flat PARAM of its size that the kernel may view as an image (IMAGE).")


@rule("kgraph.sink_entry", "Every entry of a kernel-graph SINK is storage: a BUFFER, a PARAM, or an AFTER of one.")
def sink_entry(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), s, "kgraph.sink_entry", f"SINK entry {i} is {what(s)}; at KERNEL_GRAPH each SINK entry is realized {STORAGE_WORDS}")
         for i, s in enumerate(u.src) if not kgraph_storage(s)]
  return out or None


@rule("kgraph.after_storage", "AFTER in a kernel graph is on storage: a BUFFER, a PARAM, or an AFTER of one.")
def after_storage(u: UOp, cx: Ctx) -> str | None:
  if kgraph_storage(u.src[0]): return None
  return f"AFTER on {what(u.src[0])}; at KERNEL_GRAPH AFTER is on {STORAGE_WORDS}"


@rule("kgraph.after_deps", "The dependencies of a kernel-graph AFTER are CALLs: order between kernels is only AFTER(buf, CALL...).")
def after_deps(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), d, "kgraph.after_deps", f"AFTER dependency {i - 1} is {what(d)}; at KERNEL_GRAPH AFTER waits for kernel CALLs")
         for i, d in enumerate(u.src) if i > 0 and d.op is not Ops.CALL]
  return out or None


@rule("kgraph.call_body", "A kernel-graph CALL's body is a kernel SINK, a PROGRAM (or LINEAR), a COPY, or a nested kernel-graph SINK "
      "(a precompiled call).")
def call_body(u: UOp, cx: Ctx) -> str | None:
  if body_kind(u.src[0]) != "bad": return None  # a TUPLE left is kgraph.no_tuple's; a SINK that is no kernel graph is checked as a kernel
  return (f"CALL body is {what(u.src[0])}; at KERNEL_GRAPH a CALL body is a kernel SINK, a PROGRAM, a COPY, or a kernel-graph SINK "
          "(precompiled call)")


@rule("kgraph.body_stage", "Checked at KERNEL, every kernel body is a kernel SINK; checked at PROGRAM, every kernel body is a PROGRAM or LINEAR.")
def body_stage(u: UOp, cx: Ctx) -> str | None:
  k = body_kind(u.src[0])
  if cx.body_stage is Stage.KERNEL and k == "program":
    return f"CALL body is a {u.src[0].op.name}; at KERNEL every kernel body is a kernel SINK (linearize has not run)"
  if cx.body_stage is Stage.PROGRAM and k == "kernel":
    return "CALL body is a kernel SINK; at PROGRAM every kernel body is a PROGRAM (linearized)"
  return None


def _arg_devices(u: UOp) -> list[tuple[int, object]]:
  """(arg number, device) of each arg of a CALL: a storage arg's storage's device, a value's own (at TENSOR a kernel
  CALL may take values, a COPY say); variables, constants and malformed args have none."""
  out = []
  for k, a in enumerate(u.src[1:]):
    if not isinstance(a, UOp): continue
    b = storage_of(a)
    d = getattr(b.arg, "device", None) if b is not None and b.op in GroupOp.Storage else a.device
    if d is not None: out.append((k, d))
  return out


@rule("kgraph.one_device", "A kernel CALL (its body a kernel SINK, a PROGRAM or a LINEAR) runs on one device: its storage args are on one "
      "device, except host memory (storage on NPY), which a kernel of the CPU or PYTHON family may take too. COPY calls move storage "
      "between devices; a nested kernel graph's kernels are held to this rule one by one. At TENSOR a kernel CALL's value args are held "
      "to it too, so that no lowering has to split a kernel across devices.")
def one_device(u: UOp, cx: Ctx) -> str | None:
  if body_kind(u.src[0]) not in ("kernel", "program"): return None
  if (clash := kernel_device_clash(_arg_devices(u))) is None: return None
  (k0, d0), (k, d), host = clash
  if host:
    return (f"kernel CALL arg {k0} is on {device_str(d0)} and arg {k} is host memory on {device_str(d)}; at {cx.sname} only a kernel of "
            f"the CPU or PYTHON family reads host memory (COPY it to {device_str(d0)} first)")
  return (f"kernel CALL arg {k0} is on {device_str(d0)} and arg {k} on {device_str(d)}; at {cx.sname} a kernel runs on one device (a COPY "
          "call moves storage between devices)")


@rule("kgraph.copy_device", "A COPY call copies to the device its COPY names: its destination (arg 0) is storage on that device.")
def copy_device(u: UOp, cx: Ctx) -> str | None:
  body = u.src[0]
  if body_kind(body) != "copy" or len(u.src) < 2: return None
  dest = _arg_devices(u)
  if not dest or dest[0][0] != 0 or dest[0][1] == body.arg: return None
  return (f"a COPY to {device_str(body.arg)} writes arg 0 on {device_str(dest[0][1])}; at {cx.sname} a COPY call's destination is on "
          "the device its COPY names")


@rule("kgraph.call_arg_storage", "Kernel-graph CALL args are storage (BUFFER, PARAM, or AFTER of one) or variables (a BIND, or a DEFINE_VAR "
      "passed on): never a view, never a computed value.")
def call_arg_storage(u: UOp, cx: Ctx) -> list[Finding] | None:
  out = [((i,), a, "kgraph.call_arg_storage", f"CALL arg {i - 1} is {what(a)}; at KERNEL_GRAPH call args must be {ARG_WORDS}")
         for i, a in enumerate(u.src) if i > 0 and not kgraph_storage(a) and a.op not in GroupOp.Variable]
  return out or None


@rule("kgraph.call_vars", "A kernel reads only the variables it is passed: every DEFINE_VAR its body reads (outside a BIND) is named by an "
      "arg of the CALL that binds it (a BIND of it) or passes it on (the DEFINE_VAR itself), with the same bounds.")
def call_vars(u: UOp, cx: Ctx) -> str | None:
  need = free_vars(u.src[0])
  if not need: return None
  have = {}
  for a in u.src[1:]:
    v = a.src[0] if a.op is Ops.BIND and a.src else a
    if v.op is Ops.DEFINE_VAR: have[v.arg.name] = (v.arg.min, v.arg.max)
  body_vars = {x.arg.name: (x.arg.min, x.arg.max) for x in u.src[0].toposort() if x.op is Ops.DEFINE_VAR}
  if missing := sorted(need - set(have)):
    return (f"the CALL's body reads variable{'s' if len(missing) > 1 else ''} {', '.join(missing)} but no arg binds or passes "
            f"{'them' if len(missing) > 1 else 'it'}; at KERNEL_GRAPH a kernel reads only the variables its CALL is given")
  if bad := sorted(n for n in need if body_vars.get(n, have[n]) != have[n]):
    return (f"variable {bad[0]} has bounds {list(body_vars[bad[0]])} in the CALL's body but {list(have[bad[0]])} in its arg; at KERNEL_GRAPH a "
            "kernel is passed the variable it reads")
  return None


@rule("kgraph.copy_body", "A COPY call body copies a PARAM (storage of the call) to the device named in its arg.")
def copy_body(u: UOp, cx: Ctx) -> str | None:
  if storage_base(u.src[0]) is not None: return None
  return f"COPY of {what(u.src[0])}; at KERNEL_GRAPH a COPY body copies {STORAGE_WORDS}"


@rule("kgraph.precompiled_body", "A precompiled call at KERNEL_GRAPH has a nested kernel graph as its body (kernel CALLs over its PARAMs, "
      "ordered by AFTER); its TENSOR form, a SINK of STOREs of tensor values into its PARAMs, is lowered by rangeify.")
def precompiled_body(u: UOp, cx: Ctx) -> str | None:
  if not is_precompiled_call(u): return None
  return ("CALL body is a SINK of tensor-level effects (a precompiled call at TENSOR); at KERNEL_GRAPH a precompiled call's body is a "
          "kernel graph of kernel CALLs over its PARAMs")


@rule("kgraph.precompiled_entry", "Every entry of a nested kernel graph (a precompiled call's body) is a PARAM of the call or an AFTER of "
      "one: what the call computes lands in the storage it is given (its own BUFFERs are scratch).")
def precompiled_entry(u: UOp, cx: Ctx) -> list[Finding] | None:
  if body_kind(u.src[0]) != "graph": return None
  out = [((0, i), e, "kgraph.precompiled_entry", f"entry {i} of a nested kernel graph is {what(e)}; at KERNEL_GRAPH a precompiled call's "
          "graph returns the PARAMs it writes (AFTER(PARAM, CALL...))") for i, e in enumerate(u.src[0].src)
         if (b := storage_base(e)) is None or b.op is not Ops.PARAM]
  return out or None


def kgraph_table() -> Table:
  return table(
    (Ops.PARAM, [param_outside]), (Ops.BUFFER, [buffer_global, image_buffer]),
    (Ops.SINK, [sink_entry, bind_one_value]), (Ops.AFTER, (after_storage, after_deps, dtype_passthrough)),
    (Ops.CALL, (call_body, body_stage, call_arg_storage, one_device, copy_device, call_vars, param_slot, param_size, param_dtype,
                precompiled_body, precompiled_entry)),
    (Ops.DEFINE_VAR, [var_dtype]), (Ops.BIND, (bind_form, bind_in_bounds)),
    (Ops.COPY, (copy_body, dtype_passthrough)),
    (GroupOp.Movement, [no_movement]), ((Ops.TUPLE, Ops.GETTUPLE), [no_tuple]),
    ([op for op in Ops if op not in KGRAPH_OPS and op not in GroupOp.Movement and op not in (Ops.TUPLE, Ops.GETTUPLE)], [op_allowed]),
  )


KGRAPH_TABLE = kgraph_table()

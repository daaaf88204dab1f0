"""The translation table: every decision turning a tinygrad 0.14 op or form into its tinyspec form, one `RULES` entry
each (tinygrad op name -> Rule(tinygrad form, tinyspec form, function)); the functions live in the modules named for
what they translate. docs/tinygrad.md holds `rules_markdown()` word for word. An op with no entry, or a form its rule
refuses, is Untranslatable."""
from __future__ import annotations

from tinyspec.bridge.tinygrad.arithmetic import SAME_NAME_ALU, r_alu, r_cast, r_const, r_floor, r_mulacc, r_reduce, r_same
from tinyspec.bridge.tinygrad.calls import r_call, r_function, r_gettuple, r_tuple
from tinyspec.bridge.tinygrad.composite import r_bitcast, r_float_unary, r_pow, r_stack, r_threefry
from tinyspec.bridge.tinygrad.effects import r_after, r_effects, r_sink, r_store
from tinyspec.bridge.tinygrad.kernels import r_if, r_index, r_linear, r_load, r_program, r_range, r_special
from tinyspec.bridge.tinygrad.multi import r_copy, r_mselect, r_mstack, r_unshard
from tinyspec.bridge.tinygrad.storage import r_buffer, r_param
from tinyspec.bridge.tinygrad.translator import Rule
from tinyspec.bridge.tinygrad.views import r_detach, r_movement
from tinyspec.uop import Ops


RULES: dict[str, Rule] = {
  "SINK": Rule("SINK(x...), arg None or KernelInfo", "SINK(x...); KernelInfo dropped (a kernel's name is not part of its meaning); a "
               "kernel graph's entry over a device tuple is one entry per device; in a kernel graph a call writing an arg takes it "
               "as AFTER(arg, the other calls reading that same version) (tinygrad's schedule runs reads before the write that "
               "overwrites them, create_schedule's write-after-read order, which its kernel graph leaves unsaid)", r_sink),
  "CONST": Rule("CONST, dtype weakint / weakfloat / concrete, arg value or ConstFloat",
                "CONST of the consumer's dtype when weak (weakint alone: index; weakfloat alone: float32), value unwrapped", r_const),
  "BUFFER": Rule("BUFFER(CONST size) arg ParamArg(slot, dtype, device, addrspace)",
                 "BUFFER arg BufferArg(fresh id, size, device, addrspace); kernel-graph-local and kernel-local buffers get fresh ids "
                 "per graph (tinygrad reuses their slot numbers); a Variable (a 0-d BUFFER of address space ALU with a name and vmin_vmax, "
                 "unbound) is DEFINE_VAR(name, min, max), its value an input of the run; storage over a device tuple is one BUFFER per device "
                 "(read whole "
                 "at a tensor stage outside one device's translation: the replicated MULTI of them)", r_buffer),
  "PARAM": Rule("PARAM(CONST size or STACK shape) arg ParamArg(slot, dtype, device); device a tuple for multi-device storage",
                "PARAM arg ParamArg(slot, size, device, addrspace), flat; a shaped PARAM (function body) is RESHAPE(PARAM); "
                "at the kernel graph's top level slot k is the callified CALL's arg k; at the kernel graph a PARAM of a symbolic shape is "
                "storage of its max shape's size (tinygrad allocates it so, and its kernels' PARAMs are that size, debuf); "
                "in a kernel AST or program over a device "
                "tuple, one translation per device, each PARAM on that device (as the runtime launches it), and the scalar PARAM "
                "_device_num a CONST of that device's number; a Variable (a PARAM of address space ALU with a name and vmin_vmax: pk in a "
                "callified body or a kernel, arg k of the callified CALL; the variable's own name in a program) is DEFINE_VAR of that "
                "variable (its name and bounds; index, or the program's int); in the body of a call whose args over a device tuple are one arg per "
                "device, every slot renumbered to its arg's (arg k's device j at its first slot + j), each of its arg's shard shape; read "
                "whole at a tensor stage outside one device's translation, the MULTI of its per-device PARAMs (split along "
                "ParamArg.axis, a sharded arg's, else replicated); in a value call's body (a FUNCTION's) a PARAM over a device "
                "tuple is one PARAM of the arg's whole shape on the tuple's first device (tinyspec's multi pass gives each device "
                "its own), but one the body UNSHARDs (no axis: each device's own storage, a custom kernel's output) is one PARAM per "
                "device, renumbered as above", r_param),
  **{op: Rule(f"{op}(x, shape/offset sources)" if op in ("RESHAPE", "EXPAND", "PAD", "SHRINK") else f"{op}(x) arg",
              f"{op}(x) with the sources folded into the arg ({'dims prepended' if op == 'EXPAND' else 'same convention'}); a size or "
              "offset over a bound Variable is the number it has under the graph's binding (tinyspec's shapes are concrete)"
              + ("; among a kernel graph's call args a RESHAPE of storage is that storage (kernel-graph storage is flat)" if op == "RESHAPE" else ""),
              r_movement(Ops[op])) for op in ("RESHAPE", "EXPAND", "PAD", "SHRINK", "PERMUTE", "FLIP")},
  **{op: Rule(f"{op}", f"{op}; weak sources take the op's dtype; implicit broadcast made explicit (RESHAPE, EXPAND, PERMUTE)",
              r_alu(Ops[op])) for op in SAME_NAME_ALU},
  **{op: Rule(f"{op}(x); of an integer or bool x its dtype is x's float dtype (least_upper_float)",
              f"{op}(x); of an integer or bool x {op}(CAST(x)) to that float dtype, as its programs convert x", r_float_unary(Ops[op]))
     for op in ("SQRT", "EXP2", "LOG2", "SIN")},
  "RECIPROCAL": Rule("RECIPROCAL(x); of an integer or bool x its dtype is x's float dtype (least_upper_float: x / y on ints)",
                     "RECIP(x); of an integer or bool x RECIP(CAST(x)) to that float dtype, as its programs convert x", r_float_unary(Ops.RECIP)),
  "CDIV": Rule("CDIV(a, b): C division, truncating", "IDIV(a, b)", r_alu(Ops.IDIV)),
  "CMOD": Rule("CMOD(a, b): C remainder, truncating", "MOD(a, b)", r_alu(Ops.MOD)),
  "FLOORDIV": Rule("FLOORDIV(a, b): Python //, flooring, on ints",
                   "WHERE(adj, IDIV(a,b) - 1, IDIV(a,b)), adj = MOD(a,b) != 0 AND (MOD(a,b) < 0) != (b < 0); unsigned: IDIV(a, b)", r_floor(True)),
  "FLOORMOD": Rule("FLOORMOD(a, b): Python %, flooring, on ints",
                   "WHERE(adj, MOD(a,b) + b, MOD(a,b)), adj as for FLOORDIV; unsigned: MOD(a, b)", r_floor(False)),
  "MULACC": Rule("MULACC(a, b, c)", "ADD(MUL(a, b), c)", r_mulacc),
  "FDIV": Rule("FDIV(a, b): float division (programs: x / y, softmax's normalization)", "FDIV(a, b): IEEE division, correctly rounded",
               r_alu(Ops.FDIV)),
  "POW": Rule("POW(b, e) (x ** y); on floats tinygrad lowers it with xpow",
              "as xpow computes it: WHERE(e == 0, 1, WHERE(b < 0, neg, r)), r = EXP2(LOG2(abs(b)) * e), abs(b) = WHERE(b < 0, -b, b), "
              "neg = NaN where e is no integer (b = -inf: r), -r where e is odd, else r; on ints b ** e exactly (square and multiply over "
              "e's bits with WHERE; e < 0: 1, +-1 for b = -1, else 0)", r_pow),
  "THREEFRY": Rule("THREEFRY(x, key) on uint64: counter-based random bits (Tensor.rand, randn, randint, dropout, default inits)",
                   "Threefry-2x32, 20 rounds, as tinygrad's threefry2x32 decomposes it: x and key split into uint32 halves (CAST, SHR), "
                   "key schedule (k1, k0 ^ k1 ^ 0x1BD11BDA, k0), each round ADD, rotation (SHL + SHR) and XOR; "
                   "OR(SHL(CAST(hi), 32), CAST(lo)) in uint64", r_threefry),
  "STACK": Rule("STACK(x_0, ..., x_n-1) as a value in a tensor graph (Tensor.stack, cat of equal parts, random numbers): shape (n,) + x_0's",
                "WHERE(mask_n-1, PAD(RESHAPE(x_n-1)), ... WHERE(mask_1, PAD(RESHAPE(x_1)), PAD(RESHAPE(x_0)))): x_i reshaped to (1,) + "
                "its shape and PADded into row i, mask_i a PADded True (as tinyspec's cat); as a shape/offset source it is folded", r_stack),
  "CAST": Rule("CAST(x), target in the dtype (and arg)", "CAST(x) of the node's dtype; CAST of a weak CONST folds to a CONST of the target",
               r_cast(Ops.CAST)),
  "BITCAST": Rule("BITCAST(x); in a tensor graph to a dtype of another item size, the last axis rescaled (little-endian)",
                  "BITCAST(x); between item sizes in a tensor graph: to a narrower dtype CAST(SHR(x expanded to k lanes, 8 * size * lane)) "
                  "to the narrow unsigned dtype, to a wider one REDUCE ADD over k lanes of SHL(CAST(x), 8 * size * lane); BITCASTs "
                  "to and from the unsigned dtype of each size", r_bitcast),
  "REDUCE": Rule("REDUCE(x) arg (op, n) in graphs; REDUCE(x, ranges...) arg (op, 0) in kernels",
                 "REDUCE(x) arg (op, n); in kernels REDUCE(x, ranges...) arg op; an ADD over WHERE(cond, x, Invalid) in a kernel sums "
                 "WHERE(cond, x, 0), as tinygrad's codegen gives it (pm_remove_invalid; a MAX or MUL over one is refused)", r_reduce),
  "CONTIGUOUS": Rule("CONTIGUOUS(x)", "CONTIGUOUS(x)", r_same(Ops.CONTIGUOUS)),
  "DETACH": Rule("DETACH(x)", "DETACH(x); of storage (x's base through views and AFTERs a BUFFER or PARAM) x itself",
                 r_detach),
  "COPY": Rule("COPY(x) arg device, or a device tuple", "COPY(x) arg device; at a tensor stage (the tensor graph, a precompiled body) a "
               "COPY to a device tuple is a replicated MULTI of a COPY per device (in one device's translation of an UNSHARD, the "
               "COPY to that device)", r_copy),
  "UNSHARD": Rule("UNSHARD(x, RANGE of AxisType.DEVICE) arg (axis,): x's shards side by side along axis",
                  "at a tensor stage MULTI(x on device 0, ..., x on device n-1) arg axis, x translated once per device with the "
                  "range bound to its number", r_unshard),
  "STORE": Rule("STORE(target, value); in kernels STORE(INDEX(buf, WHERE(cond, idx, Invalid)), value)",
                "STORE(target, value); a gated index gives STORE(INDEX(buf, idx), value, cond)", r_store),
  "AFTER": Rule("AFTER(x, deps...); at a tensor stage AFTER(x, STORE(x, v)) with x no storage (its base neither BUFFER "
                "nor PARAM: an assign into a tensor not yet realized), or with x storage over a device tuple (UNSHARD(storage, "
                "DEVICE range) arg (axis,) split, the storage itself replicated); a dep may be a view of storage with AFTERs in it "
                "(an assign into a slice: AFTER(buf, AFTER(SHRINK(buf), STORE(...))))",
                "AFTER(x, deps...), a dep that is a view of storage replaced by the deps of the AFTERs in it (waiting on the view "
                "is waiting on them); the assign into no storage is CONTIGUOUS(v), as tinygrad's transform_to_call rewrites it "
                "(replace_store_after_with_contig); bind()'s AFTER(var, STORE(var, CONST v)) is BIND(DEFINE_VAR, CONST v); into storage "
                "over a device tuple, per device j AFTER(x_j, STORE(x_j, "
                "COPY(v_j, device j))), v_j the SHRINK of v to shard j's block (replicated: v), the MULTI of them arg axis (a "
                "precompiled body's entry: one entry per device); any other AFTER of storage over a device tuple (a sharded "
                "output waiting on the precompiled call that writes it) is the MULTI of an AFTER per device, each on the same "
                "deps (on a kernel run once per device, device j's run)", r_after),
  "MSELECT": Rule("MSELECT(x, i): device i's own storage of x, storage over a device tuple (an all-reduce's arg)",
                  "x as translated on device i (that device's BUFFER or PARAM)", r_mselect),
  "MSTACK": Rule("MSTACK(x_0, ..., x_n-1): a kernel-graph arg over a device tuple, x_j device j's storage",
                 "x_j in the launch on device j (a kernel graph's entry over a device tuple is one entry per device, each as "
                 "launched there; a BUFFER over the tuple is one BUFFER per device)", r_mstack),
  "GROUP": Rule("GROUP(effects...)", "GROUP(effects...)", r_effects(Ops.GROUP)),
  "NOOP": Rule("NOOP(), void: an effect that does nothing (a loop body whose work was folded away)", "GROUP(): a GROUP of no effects",
               r_effects(Ops.GROUP)),
  "END": Rule("END(effect, ranges...)", "END(effect, ranges...)", r_effects(Ops.END)),
  "FUNCTION": Rule("FUNCTION(TUPLE(...), args...) arg CallInfo", "CALL(TUPLE(...), args...) arg the name: a value call; an arg over a "
                   "device tuple that its body UNSHARDs (its PARAM has no axis: storage of its own on each device) is one arg per "
                   "device", r_function),
  "CALL": Rule("CALL(body, args...) arg CallInfo, void; body a kernel SINK, a SINK of STOREs of tensor values into its PARAMs (a "
               "precompiled function once callified, and the whole callified graph), a COPY, or a LINEAR of kernel CALLs",
               "CALL(body, args...) arg the name; a SINK of STOREs into PARAMs is tinyspec's precompiled call at TENSOR, as it is (its "
               "body a tensor graph over its own PARAMs); a LINEAR of kernel CALLs (a precompiled function's schedule) becomes a nested "
               "kernel-graph SINK whose order is AFTER (each call takes the latest version of its args; a write also waits for earlier "
               "readers) and whose entries are the PARAMs it writes; at the kernel graph a kernel over two devices (host memory "
               "aside) that tinygrad's schedule makes a COPY (its pm_copy_from_store) is that COPY call, CALL(COPY(src), dst, src); a "
               "kernel's CALL is passed, after its storage, the BIND of each Variable the kernel reads (the value tinygrad's runtime "
               "passes at launch from var_vals); a body reads its own variable args as pk and any other pk as its caller does (tinygrad's "
               "resolve_linear_call: an all-reduce, passed no variable, inherits its caller's); "
               "an arg over a device tuple of a SINK-body call (storage over the tuple, or at a tensor stage an UNSHARD of a view of "
               "it) is one arg per device (its body's PARAMs renumbered); a LINEAR-body call over such args runs on each device "
               "as launched there; at a tensor stage a kernel CALL over args over a device tuple (a custom kernel on sharded tensors, "
               "which tinygrad runs once per device, its PARAMs a shard's size) is GROUP(one CALL per device), device j's parts its "
               "args (its storage there; of a value body's PARAM standing for its arg whole, shard j's block COPY to device j) and the "
               "kernel as launched there; at the kernel "
               "graph a SINK-body call (tinygrad's all-reduce, precompiled) has as body the kernel graph tinygrad lowers that body "
               "into (get_kernel_graph, captured), a nested kernel graph, one call in every device's entries",
               r_call),
  "TUPLE": Rule("TUPLE(x...)", "TUPLE(x...)", r_tuple),
  "GETTUPLE": Rule("GETTUPLE(call) arg i", "GETTUPLE(call) arg i", r_gettuple),
  "RANGE": Rule("RANGE(bound[, ordering ranges...]) arg (axis..., AxisType)",
                "RANGE(bound) arg RangeArg(axis, kind): WEAK/LOOP -> LOOP, GLOBAL, REDUCE, UPCAST/UNROLL -> UNROLL; a multi-part axis gets "
                "a fresh number; the program's ordering sources are dropped (the LINEAR order carries them); DEVICE (a value, the "
                "device's number) in a launch on one device: CONST of that number", r_range),
  "INDEX": Rule("INDEX(buf, idx), also used as a read; INDEX(buf, i0, i1, ...) on a shaped buffer; INDEX(buf) on a buffer of shape (); "
                "in programs INDEX(LOAD(SHRINK(buf, offset, n)), lane), a lane of a vector load; in kernels INDEX(view(storage), ...) "
                "through RESHAPE, SHRINK, PERMUTE, FLIP (debuf's SHRINK of a max-sized PARAM to a symbolic shape, a custom kernel's "
                "flatten)",
                "INDEX(buf, idx); used as a value: LOAD(INDEX); gated: LOAD(INDEX, 0, cond); several indices: one row-major flat index "
                "(into the storage itself when the buffer is a RESHAPE of it); none: index 0; a lane of a vector load: "
                "LOAD(INDEX(buf, offset + lane)), the vector load and its SHRINK not listed; through views: INDEX(storage, the index "
                "carried back through them as tinygrad's codegen folds them, pm_mops: a SHRINK adds its offsets, PERMUTE reorders, FLIP "
                "mirrors, RESHAPE keeps the row-major flat index)", r_index),
  "LOAD": Rule("LOAD(INDEX[, alt, gate])", "LOAD(INDEX[, alt, gate])", r_load),
  "LINEAR": Rule("LINEAR(uops...) of a program", "LINEAR(uops...); a PARAM's or BUFFER's size (and a weak CONST every user of which is a "
                 "CAST) is not listed, being folded; the inner nodes of a several-op spelling (MULACC, FLOORDIV) are listed before it", r_linear),
  "PROGRAM": Rule("PROGRAM(sink, LINEAR, SOURCE, BINARY) arg ProgramInfo", "PROGRAM(sink, LINEAR, SOURCE(c, name, text)) arg name; BINARY dropped",
                  r_program),
  "IF": Rule("IF(cond, ...) ... ENDIF(IF) in a program's LINEAR: the instructions between them run where cond holds",
              "not listed: each STORE between them is gated by cond (AND of the open IFs; AND its own gate), "
              "STORE(INDEX, value, cond); a LOAD or another effect in a block is refused", r_if),
  "ENDIF": Rule("ENDIF(IF): the end of an IF block", "not listed (see IF)", r_if),
  "SPECIAL": Rule("SPECIAL(bound) arg name (a GPU thread index; the PYTHON device's programs use them)", "SPECIAL(bound) arg name", r_special),
}


# Folded into their users' args, never translated as nodes of their own: a STACK or CONST that is a shape, offset or
# size source (of a movement op, PARAM or BUFFER). Anything else (STACK as a value, FDIV, POW, THREEFRY, WMMA, NOOP, the
# multi-device ops, vector dtypes, ...) has no rule and is Untranslatable.
FOLDED = ("STACK or CONST as a shape/offset/size source", "counted as translated: it becomes part of its user's arg")


def rules_markdown() -> str:
  """The translation table as markdown (docs/tinygrad.md holds it word for word)."""
  lines = ["| tinygrad op | tinygrad form | tinyspec form |", "|---|---|---|"]
  lines += [f"| {op} | {r.tinygrad} | {r.tinyspec} |" for op, r in RULES.items()]
  lines.append(f"| (folded) | {FOLDED[0]} | {FOLDED[1]} |")
  return "\n".join(lines)

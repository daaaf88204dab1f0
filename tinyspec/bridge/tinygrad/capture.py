"""Capture: run a tinygrad program and record its graph at every stage, plus tinygrad's own numbers.

Hooks (tinygrad's functions, wrapped by `capture` and by `recording()` (recording.py) and restored on the way out, hooks.py):

| stage | hook |
|---|---|
| tensor graph | `UOp.sink(*[t.uop for t in outputs])`, taken before realize |
| callified graph | `tinygrad.tensor.transform_to_call` (argument and result, with its buffer map) |
| kernel graph | `tinygrad.schedule.rangeify.get_kernel_graph` (argument and result; the function its rewrite_group decorator calls) |
| kernel AST, program | `tinygrad.codegen.do_to_program` (argument; result PROGRAM(sink, LINEAR, SOURCE, BINARY)) |

`capture(program)` records one program's run step by step (a realize each); `recording()` groups what the hooks see per
schedule (a Capture each) for the pytest plugin (pytest_plugin.py), which records every test. While capturing: SCACHE=0
and codegen's `to_program_cache` emptied (both would skip stages on a rerun; the cache's entries are put back
afterwards), PARALLEL=0 (compiles run in this process, where the hooks are), NOOPT=1 by default (scalar programs:
default opts add vector loads and lane reads, which have no tinyspec form), and DEV set to the chosen device: CPU when
a clang exists, else PYTHON (tinygrad's emulator, the referee).
"""
from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import tinygrad.codegen as codegen
import tinygrad.engine.jit as jit
import tinygrad.schedule as schedule
import tinygrad.schedule.rangeify as rangeify
import tinygrad.tensor as tensor_mod
from tinygrad import Tensor
from tinygrad.dtype import dtypes as tinygrad_dtypes
from tinygrad.dtype import strong_dtype
from tinygrad.engine import realize
from tinygrad.helpers import CAPTURING, Context
from tinygrad.uop.ops import UOp as TinygradUOp

from tinyspec.bridge.tinygrad.bound import bound_shape
from tinyspec.bridge.tinygrad.hooks import emptied, wrapped, wrapped_cell
from tinyspec.bridge.tinygrad.readback import allocated, buffer_of, numbers, read_buffer, read_stored, unsharded, view_base
from tinyspec.spec.shared import is_host, reads_host


@dataclass
class Capture:
  """Everything one run of a tinygrad program showed. Graphs are tinygrad UOps (translate them with `translate`)."""
  device: str
  tensor: Any                                   # SINK of the outputs' uops, before realize
  callified: list[tuple[Any, Any, dict]] = field(default_factory=list)  # (argument sink, CALL, buffer map) per transform_to_call
  kernel_graphs: list[tuple[Any, Any]] = field(default_factory=list)   # (argument, result) per get_kernel_graph
  programs: list[tuple[Any, Any]] = field(default_factory=list)        # (kernel AST, PROGRAM) per do_to_program of a kernel
  inputs: dict[Any, np.ndarray] = field(default_factory=dict)         # tinygrad BUFFER uop -> its contents before the run
  outputs: list[np.ndarray] = field(default_factory=list)             # tinygrad's realized numbers, one per output
  output_storage: list[Any] = field(default_factory=list)             # per output: the BUFFER it was realized into (None: a view)
  realized: list[Any] = field(default_factory=list)                   # per output: its uop once realized (storage, or views of it)
  fresh: set[Any] = field(default_factory=set)                         # tinygrad BUFFER uops not yet allocated when the run began
  # the realizes program() made itself before its outputs' (a training loop's steps), in order, each a Capture of its own:
  # its tensor graph is the SINK tinygrad's realize callified, its outputs that SINK's values once run
  steps: list[Capture] = field(default_factory=list)
  # None, or why tinygrad's numbers of this realize could not be read (a TinyJit capture ran it later, its storage planned)
  unread: str | None = None
  # tinygrad's values of the bound Variables at this realize's launch (its schedule's var_vals, by name), as run_linear got them
  var_vals: dict[str, int] = field(default_factory=dict)
  # False when tinygrad's realize of the outputs scheduled nothing (each was storage already, written by steps that
  # wrote others too or before program() ran): there is a tensor graph and its numbers, and no later stage to check
  scheduled: bool = True

  @property
  def kernels(self) -> list[Any]:
    """Every kernel AST (a SINK with KernelInfo) of the captured kernel graphs that runs as a kernel, in first-seen order:
    one whose CALL tinygrad's schedule makes a COPY (copy_call) is that copy, never compiled, and is no kernel."""
    seen: dict[Any, None] = {}
    for _, kg in self.kernel_graphs:
      for u in kg.toposort():
        if u.op.name == "CALL" and u.src[0].op.name == "SINK" and type(u.src[0].arg).__name__ == "KernelInfo" and copy_call(u) is None:
          seen[u.src[0]] = None
    return list(seen)

  def sources(self) -> list[str]:
    """The rendered source of every captured program."""
    return [prg.src[2].arg for _, prg in self.programs if len(prg.src) > 2 and prg.src[2].op.name == "SOURCE"]


def copy_call(u: Any) -> Any:
  """A kernel-graph CALL of a kernel whose storage args are on two devices (host memory counts only for a kernel of a
  family that cannot read it: a CPU kernel reads NPY directly, an OpenCL one is given a copy), as tinygrad's schedule
  rewrites it: its own pm_copy_from_store gives CALL(COPY(src), dst, src) for a kernel that only copies (and refuses
  any other kernel over two devices). None when it is no such copy: the kernel stays, and kgraph.one_device reports it."""
  devices = set()
  for a in u.src[1:]:
    while a.op.name in ("AFTER", "RESHAPE"): a = a.src[0]
    if a.op.name in ("PARAM", "BUFFER") and isinstance(d := getattr(a.arg, "device", None), str): devices.add(d)
    # one device's shard of multi-device storage (an all-reduce copies a partial result so): its device is that one
    elif a.op.name == "MSELECT" and isinstance(d := a.device, str): devices.add(d)
  own = {d for d in devices if not is_host(d)}
  if len(own) < 2 and not (len(own) == 1 and len(devices) > 1 and not reads_host(next(iter(own)))): return None
  c = u
  for _ in range(3):   # simplify the copy's ranges, then make it a COPY: the matcher's two steps
    try: r = schedule.pm_copy_from_store.rewrite(c)
    except Exception: return None   # tinygrad's own check: a kernel over two devices that is no copy
    if r is None or r is c: return None
    if r.src[0].op.name == "COPY": return r
    c = r
  return None


def default_device() -> str:
  """CPU when a clang exists (tinygrad's CPU backend compiles with it), else PYTHON."""
  return "CPU" if shutil.which("clang") else "PYTHON"


def read_inputs(cap: Capture, root: Any) -> None:
  """Record the contents of every BUFFER under root that tinygrad holds data for now, before the run that reads it, and
  which BUFFERs it has not allocated yet (storage the run allocates: nothing is in it before the run writes it)."""
  for u in root.toposort():
    if u.op.name != "BUFFER" or u in cap.inputs or u in cap.fresh: continue
    if (data := read_buffer(u, per_device=True)) is not None: cap.inputs[u] = data
    elif not allocated(u): cap.fresh.add(u)


def read_outputs(cap: Capture, realized: list[Any], after_jit: bool = False) -> None:
  """tinygrad's numbers of each realized uop (storage, or a view of it), read as tinygrad's numpy() reads them. After a
  TinyJit capture's run (after_jit) only storage the jit kept is read: the rest it planned into memory of its own."""
  cap.realized = list(realized)
  cap.output_storage = [buffer_of(u) for u in realized]
  shapes = [bound_shape(u) for u in realized]
  if (bad := next((i for i, s in enumerate(shapes) if s is None), None)) is not None:
    cap.unread = f"output {bad}'s shape {realized[bad].shape} is symbolic over a variable it does not bind"
    cap.outputs = [np.zeros(0) for _ in realized]
    return
  if after_jit:
    data = [read_stored(u, s) for u, s in zip(realized, shapes)]
    if (bad := next((i for i, d in enumerate(data) if d is None), None)) is not None:
      cap.unread = f"output {bad}'s storage is not readable after TinyJit's run of its capture (it plans such storage into its own memory)"
      cap.outputs = [np.zeros(s) if d is None else d.reshape(s) for s, d in zip(shapes, data)]
      return
    cap.outputs = [d.reshape(s) for s, d in zip(shapes, data)]
    return
  cap.outputs = [numbers(u, st, s) for u, st, s in zip(realized, cap.output_storage, shapes)]


class StepRecorder:
  """The realizes a program makes while `capture` runs it, each a Capture of its own (a step), as the hooks see them: a
  step opens when tinygrad callifies its schedule and gets its numbers once run_linear has run it; a step a TinyJit
  capture took without running it (`deferred`) gets them when the TinyJit's call returns, having run them all."""
  def __init__(self, device: str):
    self.device = device
    self.steps: list[Capture] = []
    self.open: list[tuple[Capture, Any, dict]] = []       # a step callified, not yet run: (step, its SINK, its buffer map)
    self.paused = False                                   # reading a step's numbers realizes too: not a step
    self.deferred: list[tuple[Capture, Any, dict]] = []   # steps a TinyJit capture took without running: run when its call returns

  def hook(self, stack: contextlib.ExitStack) -> None:
    """Install the hooks (see the module's table), each restored when stack closes, and empty tinygrad's caches for it."""
    stack.enter_context(wrapped(tensor_mod, "transform_to_call", self.on_call))
    stack.enter_context(wrapped(tensor_mod, "run_linear", self.on_run))
    stack.enter_context(wrapped(jit._TinyJit, "__call__", self.on_jit_call))
    stack.enter_context(wrapped_cell(rangeify.get_kernel_graph, "func", self.on_kernel_graph))
    stack.enter_context(wrapped(codegen, "do_to_program", self.on_program))
    stack.enter_context(emptied(codegen.to_program_cache))
    stack.enter_context(emptied(schedule.schedule_cache))

  def on_call(self, orig: Callable) -> Callable:
    def wrapper(big_sink):
      if self.paused: return orig(big_sink)
      # each step compiles afresh: kernels an earlier step compiled would otherwise come from the caches, unseen
      codegen.to_program_cache.clear()
      schedule.schedule_cache.clear()
      step = Capture(device=self.device, tensor=big_sink)
      read_inputs(step, big_sink)
      # storage an earlier realize of the same TinyJit capture writes holds, now, what it held before that realize: unknown
      for earlier, _, _ in self.deferred:
        for b in (x for x in earlier.output_storage if x is not None): step.inputs.pop(b, None)
      ret = orig(big_sink)
      call, bmap = ret
      step.callified.append((big_sink, call, dict(bmap)))
      read_inputs(step, call)
      self.steps.append(step)
      self.open.append((step, big_sink, dict(bmap)))
      return ret
    return wrapper

  def on_run(self, orig: Callable) -> Callable:
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if self.open and not self.paused:
        step, big_sink, bmap = self.open.pop()
        step.var_vals = _launch_vars(args, kwargs)
        if _jit_capturing():   # TinyJit took the schedule (tinygrad.schedule's create_linear_with_vars): nothing ran yet
          step.output_storage = [buffer_of(u) for u in big_sink.substitute(bmap, walk=True).src]
          self.deferred.append((step, big_sink, bmap))
          return ret
        with self.pause(): read_outputs(step, list(big_sink.substitute(bmap, walk=True).src))
      return ret
    return wrapper

  def on_jit_call(self, orig: Callable) -> Callable:
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if self.deferred and not _jit_capturing():   # the capture's call ran every realize it took, in order, as one schedule
        with self.pause():
          for step, big_sink, bmap in self.deferred: read_outputs(step, list(big_sink.substitute(bmap, walk=True).src), after_jit=True)
        self.deferred.clear()
      return ret
    return wrapper

  def on_kernel_graph(self, orig: Callable) -> Callable:
    def wrapper(sink):
      ret = orig(sink)
      if self.steps and not self.paused: self.steps[-1].kernel_graphs.append((sink, ret))
      return ret
    return wrapper

  def on_program(self, orig: Callable) -> Callable:
    def wrapper(ast, renderer):
      ret = orig(ast, renderer)
      # tag set: the device's own runtime programs (signal, wait, ...)
      if ast.tag is None and self.steps and not self.paused: self.steps[-1].programs.append((ast, ret))
      return ret
    return wrapper

  @contextlib.contextmanager
  def pause(self) -> Iterator[None]:
    """Run tinygrad with the hooks passing everything through (reading a step's numbers realizes too: no step)."""
    self.paused = True
    try: yield
    finally: self.paused = False


def capture(program: Callable[[], Any], device: str | None = None, noopt: bool = True) -> Capture:
  """Run `program()` (returning a tinygrad Tensor or a tuple of them) under tinygrad, realize its outputs and record
  every stage. The program runs with DEV=device (default: `default_device()`), the hooks in place while it runs: a
  realize program() makes itself (an optimizer's step) is a step of the capture, recorded in `steps` with its own
  graphs, inputs and numbers. When the outputs are already realized by the last of them (the parameters an optimizer
  has just updated), that step is the capture itself; when they were storage already otherwise, the capture is their
  tensor graph alone (`scheduled` False: tinygrad made nothing else). An output of a weak dtype (one_hot's weakint) is realized as
  tinygrad realizes it when read, cast to its strong dtype."""
  device = device or default_device()
  recorder = StepRecorder(device)
  with Context(DEV=device, SCACHE=0, PARALLEL=0, NOOPT=int(noopt)), contextlib.ExitStack() as stack:
    recorder.hook(stack)
    outs = _outputs(program(), device)
    cap = Capture(device=device, tensor=TinygradUOp.sink(*[t.uop for t in outs]))
    read_inputs(cap, cap.tensor)
    before = len(recorder.steps)
    Tensor.realize(*outs)
    mine = recorder.steps[before:]
    if not mine and recorder.steps and _realized_by(recorder.steps[-1], outs):
      return _with_steps(recorder.steps[-1], recorder.steps[:-1])
    _take_steps(cap, mine)
    recorder.paused = True
    # tinygrad's numbers, and which storage each output was realized into
    read_outputs(cap, [t.uop for t in outs])
  return _with_steps(cap, recorder.steps[:before])


def _outputs(returned: Any, device: str) -> tuple[Any, ...]:
  """What program() returned, as the tensors to realize (each as tinygrad's numpy() would realize it); a TypeError when
  it is no Tensor nor a tuple of them."""
  outs = tuple(returned) if isinstance(returned, (tuple, list)) else (returned,)
  if not outs or not all(isinstance(t, Tensor) for t in outs):
    raise TypeError(f"program() must return a tinygrad Tensor or a tuple of them, not {type(outs).__name__}")
  return tuple(_deviced(_strong(t), device) for t in outs)


def _take_steps(cap: Capture, mine: list[Capture]) -> None:
  """The outputs' own realize (the steps it made): its graphs, inputs and launch values are the capture's."""
  cap.scheduled = bool(mine)
  for step in mine:
    cap.callified += step.callified
    cap.kernel_graphs += step.kernel_graphs
    cap.programs += step.programs
    for b, data in step.inputs.items(): cap.inputs.setdefault(b, data)
    cap.fresh |= step.fresh
    cap.var_vals.update(step.var_vals)


def _launch_vars(args: tuple, kwargs: dict) -> dict[str, int]:
  """The var_vals tinygrad's run_linear(linear, var_vals, ...) was given: the bound Variables' values its kernels launch with."""
  vv = args[1] if len(args) > 1 else kwargs.get("var_vals")
  return {str(k): int(v) for k, v in (vv or {}).items()}


def _with_steps(cap: Capture, steps: list[Capture]) -> Capture:
  cap.steps = steps
  return cap


def _strong(t: Any) -> Any:
  """A Tensor of a weak dtype cast to its strong dtype, as tinygrad's numpy() and data() realize it (a weak tensor is
  no storage: tinygrad refuses to realize it as it is)."""
  return t.cast(strong_dtype(t.dtype)) if t.dtype in tinygrad_dtypes.weaks else t


def _deviced(t: Any, device: str) -> Any:
  """A Tensor that Tensor.realize() skips but numpy() realizes, realized as numpy() does (contiguous; cloned onto the
  capture's device when it has none): one computed from a bound Variable and constants alone has no device (a Variable
  has none), and one whose base reads a Variable as a value (`(x * v).sum()`) is of address space ALU, which tinygrad's
  realize takes for a scalar, not storage."""
  if t.uop.device is None: return t.contiguous().clone(device)
  return t.contiguous() if getattr(t.uop.base.addrspace, "name", None) == "ALU" else t


def _realized_by(step: Capture, outs: tuple) -> bool:
  """Every output is storage step wrote, whole or through a view (an assign into a slice writes the storage under it):
  the outputs' values are that step's."""
  written = {s for s in step.output_storage if s is not None} | {buffer_of(view_base(unsharded(u))) for u in step.realized} - {None}
  return all(buffer_of(unsharded(t.uop)) in written for t in outs)


def _jit_capturing() -> bool:
  """A TinyJit is capturing: tinygrad's schedule hands each realize's schedule to it instead of running it."""
  return bool(realize.capturing) and bool(CAPTURING)

"""Capture: run a tinygrad program and record its graph at every stage, plus tinygrad's own numbers.

Hooks (tinygrad's module attributes, wrapped by `capture` and by `recording()` and restored in `finally`):

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

from tinyspec.bridge.tinygrad import compat
from tinyspec.bridge.tinygrad.bound import bound_shape
from tinyspec.bridge.tinygrad.dtype_names import DTYPES
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
  from tinygrad.schedule import pm_copy_from_store
  c = u
  for _ in range(3):   # simplify the copy's ranges, then make it a COPY: the matcher's two steps
    try: r = pm_copy_from_store.rewrite(c)
    except Exception: return None   # tinygrad's own check: a kernel over two devices that is no copy
    if r is None or r is c: return None
    if r.src[0].op.name == "COPY": return r
    c = r
  return None


def default_device() -> str:
  """CPU when a clang exists (tinygrad's CPU backend compiles with it), else PYTHON."""
  return "CPU" if shutil.which("clang") else "PYTHON"


@contextlib.contextmanager
def _wrapped(module: Any, name: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
  """module.name wrapped for the block; where this tinygrad has none (compat.hook_target names it), nothing is."""
  orig = compat.hook_target(module, name)
  if orig is None:
    yield
    return
  setattr(module, name, compat.tolerant(make(orig), orig, f"{module.__name__}.{name}"))
  try: yield
  finally: setattr(module, name, orig)


@contextlib.contextmanager
def _wrapped_cell(fn: Any, cell: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
  """Wrap the function a decorated tinygrad function calls (its closure cell `cell`), in place. tinygrad's pattern
  matchers copy the globals of their functions when first compiled, so replacing a module attribute that a pattern's
  function calls (get_kernel_graph, called by lower_sink_to_linear) is not seen once compiled; the decorated function
  object itself is what they hold, so its cell is what gets wrapped. Where fn has no such cell in this tinygrad
  (compat.closure_cell names it), nothing is."""
  c = compat.closure_cell(fn, cell)
  if c is None:
    yield
    return
  orig = c.cell_contents
  c.cell_contents = compat.tolerant(make(orig), orig, f"{fn.__module__}.{fn.__qualname__}")
  try: yield
  finally: c.cell_contents = orig


@contextlib.contextmanager
def _emptied(cache: dict) -> Iterator[None]:
  saved = dict(cache)
  cache.clear()
  try: yield
  finally:
    cache.clear()
    cache.update(saved)


def _read_inputs(cap: Capture, root: Any) -> None:
  """Record the contents of every BUFFER under root that tinygrad holds data for now, before the run that reads it, and
  which BUFFERs it has not allocated yet (storage the run allocates: nothing is in it before the run writes it)."""
  for u in root.toposort():
    if u.op.name != "BUFFER" or u in cap.inputs or u in cap.fresh: continue
    if (data := _read_buffer(u, per_device=True)) is not None: cap.inputs[u] = data
    elif not _allocated(u): cap.fresh.add(u)


def _allocated(u: Any) -> bool:
  try: return bool(u.buffer.is_allocated())
  except Exception: return False


def _read_buffer(u: Any, per_device: bool = False) -> np.ndarray | None:
  """The contents of a BUFFER tinygrad has allocated; per_device: storage over a device tuple (a MultiBuffer) too, one
  row per device (an input's contents: each device's BUFFER is one of tinyspec's)."""
  try:
    buf = u.buffer
    if not buf.is_allocated(): return None
    if per_device and hasattr(buf, "bufs"): return np.stack([_elements(b) for b in buf.bufs])
    return _elements(buf)
  except Exception:
    return None


def _elements(buf: Any) -> np.ndarray:
  """A tinygrad Buffer's elements, copied. tinygrad's Buffer.numpy() views bfloat16 and fp8 storage as float32 (four
  bytes an element: the wrong values, and too few), so a small float is read from its bytes as the numpy type of the
  tinyspec dtype the bridge translates it to (ml_dtypes')."""
  dt = DTYPES.get(buf.dtype.name)
  if dt is not None and dt.is_small_float: return np.frombuffer(buf.as_memoryview(), dtype=dt.np).copy()
  return np.array(buf.numpy(), copy=True)


class Recording:
  """What tinygrad made while `recording()` was on: one Capture per schedule (each call of transform_to_call, the entry
  of every realize: its argument IS the tensor graph being realized), holding that schedule's callified graph, kernel
  graphs and programs. A kernel graph or program made outside any schedule (the programs a realize compiles after its
  schedule was handed on) goes to a Capture whose tensor is None.

  A Capture is handed on (`flush`) once it is complete: to `on_capture` when given, which then holds no reference to it
  (a test that counts tinygrad's live buffers must not see the recording keep them alive), else appended to `captures`."""
  def __init__(self, device: str | None, inputs: bool, outputs: bool, on_capture: Callable[[Capture], None] | None = None):
    self.device, self.inputs, self.outputs, self.on_capture = device, inputs, outputs, on_capture
    self.captures: list[Capture] = []
    self.open: Capture | None = None   # the schedule being made now
    self.paused = False

  def device_now(self) -> str:
    """The given device, else tinygrad's default as it is now (a test may change it with Context(DEV=...))."""
    from tinygrad import Device
    return self.device or Device.DEFAULT

  def start(self, cap: Capture) -> None:
    self.flush()
    self.open = cap

  def current(self) -> Capture:
    if self.open is None: self.open = Capture(device=self.device_now(), tensor=None)
    return self.open

  def flush(self) -> None:
    cap, self.open = self.open, None
    if cap is None: return
    if self.on_capture is None: self.captures.append(cap)
    else:
      with self.pause(): self.on_capture(cap)

  @contextlib.contextmanager
  def pause(self) -> Iterator[None]:
    """Run tinygrad with the hooks passing everything through (reading numbers back makes graphs of its own)."""
    saved, self.paused = self.paused, True
    try: yield
    finally: self.paused = saved

  @property
  def callified(self) -> list[tuple[Any, Any, dict]]: return [c for cap in self.captures for c in cap.callified]
  @property
  def kernel_graphs(self) -> list[tuple[Any, Any]]: return [k for cap in self.captures for k in cap.kernel_graphs]
  @property
  def programs(self) -> list[tuple[Any, Any]]: return [p for cap in self.captures for p in cap.programs]
  @property
  def input_data(self) -> dict[Any, np.ndarray]: return {b: d for cap in self.captures for b, d in cap.inputs.items()}


@contextlib.contextmanager
def recording(device: str | None = None, inputs: bool = False, outputs: bool = False, fresh: bool = False,
              on_capture: Callable[[Capture], None] | None = None) -> Iterator[Recording]:
  """Install the hooks (see the module's table) for the duration of the block; every one is restored on the way out,
  whatever the block raised. inputs: read each callified CALL's input BUFFERs before they run. outputs: record, per
  realize, tinygrad's numbers of what it realized (output_storage, realized, outputs; read from storage, `_record_stored`), and
  keep the programs the realize compiles in its schedule's Capture. fresh: empty codegen's to_program_cache and the
  schedule cache for the block (their entries put back afterwards): a rerun would take its schedule and programs from
  them and make no graph there. on_capture: called with each Capture once complete (see Recording); a schedule is
  complete when Tensor.linear_with_vars returns (without outputs; the programs its realize compiles come as a Capture
  of their own) or its realize returns."""
  import tinygrad.codegen as codegen
  import tinygrad.schedule as schedule
  import tinygrad.schedule.rangeify as rangeify
  import tinygrad.tensor as tensor_mod
  from tinygrad import Tensor

  rec = Recording(device, inputs, outputs, on_capture)

  def on_call(orig):
    def wrapper(big_sink):
      if rec.paused: return orig(big_sink)
      cap = Capture(device=rec.device_now(), tensor=big_sink)
      if rec.inputs: _read_inputs(cap, big_sink)   # the tensor graph's storage, before anything of this schedule runs
      ret = orig(big_sink)
      call, bmap = ret
      cap.callified.append((big_sink, call, dict(bmap)))
      rec.start(cap)
      if rec.inputs: _read_inputs(cap, call)
      return ret
    return wrapper

  def on_kernel_graph(orig):
    def wrapper(sink):
      ret = orig(sink)
      if not rec.paused: rec.current().kernel_graphs.append((sink, ret))
      return ret
    return wrapper

  def on_program(orig):
    def wrapper(ast, renderer):
      ret = orig(ast, renderer)
      # tag set: the device's own runtime programs (signal, wait, ...)
      if ast.tag is None and not rec.paused: rec.current().programs.append((ast, ret))
      return ret
    return wrapper

  def on_schedule(orig):
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if not rec.paused: rec.flush()
      return ret
    return wrapper

  def on_realize(orig):
    def wrapper(self, *lst, **kwargs):
      uops = [t.uop for t in (self, *lst)]
      ret = orig(self, *lst, **kwargs)
      if rec.paused: return ret
      # the schedule of this realize: a sink of (some of) these tensors' uops
      mine = rec.open
      if rec.outputs and mine is not None and mine.tensor is not None and set(mine.tensor.src) <= set(uops):
        _record_stored(mine, [next(t for t, tu in zip((self, *lst), uops) if tu is u) for u in mine.tensor.src])
      rec.flush()
      return ret
    return wrapper

  with contextlib.ExitStack() as stack:
    stack.enter_context(_wrapped(tensor_mod, "transform_to_call", on_call))
    stack.enter_context(_wrapped_cell(rangeify.get_kernel_graph, "func", on_kernel_graph))
    stack.enter_context(_wrapped(codegen, "do_to_program", on_program))
    stack.enter_context(_wrapped(Tensor, "realize", on_realize))
    if not outputs: stack.enter_context(_wrapped(Tensor, "linear_with_vars", on_schedule))
    if fresh:
      stack.enter_context(_emptied(codegen.to_program_cache))
      stack.enter_context(_emptied(schedule.schedule_cache))
    try: yield rec
    finally: rec.flush()


def _record_stored(cap: Capture, tensors: list[Any]) -> None:
  """After a realize inside a program that is not ours (a test): tinygrad's numbers read straight from the storage each
  output was realized into, running nothing (Tensor.numpy would run kernels of its own, counted by tests that count
  kernels, and refuses inside a TinyJit capture). When an output is a view of storage (tinygrad computes it only when it
  is read) or sharded, its storage cannot be read, or a TinyJit is capturing, nothing is recorded: the schedule has no numbers to compare."""
  from tinygrad.engine.realize import capturing
  if capturing: return   # a TinyJit capturing: what the storage holds now is not what the captured kernels give
  try:
    realized = [t.uop for t in tensors]
    storage = [_storage_of(u) for u in realized]
    if any(b is None for b in storage): return
    data = [_read_buffer(b) for b in storage]
    if any(d is None for d in data): return
    outputs = [d.reshape(t.shape) for d, t in zip(data, tensors)]
  except Exception: return   # a symbolic shape, storage of another kind: no numbers, never an error in the test
  cap.realized, cap.output_storage, cap.outputs = realized, storage, outputs


def capture(program: Callable[[], Any], device: str | None = None, noopt: bool = True) -> Capture:
  """Run `program()` (returning a tinygrad Tensor or a tuple of them) under tinygrad, realize its outputs and record
  every stage. The program runs with DEV=device (default: `default_device()`), the hooks in place while it runs: a
  realize program() makes itself (an optimizer's step) is a step of the capture, recorded in `steps` with its own
  graphs, inputs and numbers. When the outputs are already realized by the last of them (the parameters an optimizer
  has just updated), that step is the capture itself; when they were storage already otherwise, the capture is their
  tensor graph alone (`scheduled` False: tinygrad made nothing else). An output of a weak dtype (one_hot's weakint) is realized as
  tinygrad realizes it when read, cast to its strong dtype."""
  import tinygrad.codegen as codegen
  import tinygrad.engine.jit as jit_mod
  import tinygrad.schedule as schedule
  import tinygrad.schedule.rangeify as rangeify
  import tinygrad.tensor as tensor_mod
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  from tinygrad.uop.ops import UOp as TgUOp

  device = device or default_device()
  steps: list[Capture] = []
  open_steps: list[tuple[Capture, Any, dict]] = []   # a step callified, not yet run: (step, its SINK, its buffer map)
  paused = [False]                                  # reading a step's numbers realizes too: not a step
  deferred: list[tuple[Capture, Any, dict]] = []    # steps a TinyJit capture took without running: run when its call returns

  def on_call(orig):
    def wrapper(big_sink):
      if paused[0]: return orig(big_sink)
      # each step compiles afresh: kernels an earlier step compiled would otherwise come from the caches, unseen
      codegen.to_program_cache.clear()
      schedule.schedule_cache.clear()
      step = Capture(device=device, tensor=big_sink)
      _read_inputs(step, big_sink)
      # storage an earlier realize of the same TinyJit capture writes holds, now, what it held before that realize: unknown
      for earlier, _, _ in deferred:
        for b in (x for x in earlier.output_storage if x is not None): step.inputs.pop(b, None)
      ret = orig(big_sink)
      call, bmap = ret
      step.callified.append((big_sink, call, dict(bmap)))
      _read_inputs(step, call)
      steps.append(step)
      open_steps.append((step, big_sink, dict(bmap)))
      return ret
    return wrapper

  def on_run(orig):
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if open_steps and not paused[0]:
        step, big_sink, bmap = open_steps.pop()
        step.var_vals = _launch_vars(args, kwargs)
        if _jit_capturing():   # TinyJit took the schedule (tinygrad.schedule's create_linear_with_vars): nothing ran yet
          step.output_storage = [_storage_of(u) for u in big_sink.substitute(bmap, walk=True).src]
          deferred.append((step, big_sink, bmap))
          return ret
        paused[0] = True
        try: _read_outputs(step, list(big_sink.substitute(bmap, walk=True).src))
        finally: paused[0] = False
      return ret
    return wrapper

  def on_jit_call(orig):
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if deferred and not _jit_capturing():   # the capture's call ran every realize it took, in order, as one schedule
        paused[0] = True
        try:
          for step, big_sink, bmap in deferred: _read_outputs(step, list(big_sink.substitute(bmap, walk=True).src), after_jit=True)
        finally: paused[0] = False
        deferred.clear()
      return ret
    return wrapper

  def on_kernel_graph(orig):
    def wrapper(sink):
      ret = orig(sink)
      if steps and not paused[0]: steps[-1].kernel_graphs.append((sink, ret))
      return ret
    return wrapper

  def on_program(orig):
    def wrapper(ast, renderer):
      ret = orig(ast, renderer)
      # tag set: the device's own runtime programs (signal, wait, ...)
      if ast.tag is None and steps and not paused[0]: steps[-1].programs.append((ast, ret))
      return ret
    return wrapper

  with Context(DEV=device, SCACHE=0, PARALLEL=0, NOOPT=int(noopt)), contextlib.ExitStack() as stack:
    stack.enter_context(_wrapped(tensor_mod, "transform_to_call", on_call))
    stack.enter_context(_wrapped(tensor_mod, "run_linear", on_run))
    stack.enter_context(_wrapped(jit_mod._TinyJit, "__call__", on_jit_call))
    stack.enter_context(_wrapped_cell(rangeify.get_kernel_graph, "func", on_kernel_graph))
    stack.enter_context(_wrapped(codegen, "do_to_program", on_program))
    stack.enter_context(_emptied(codegen.to_program_cache))
    stack.enter_context(_emptied(schedule.schedule_cache))
    outs = program()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    if not outs or not all(isinstance(t, Tensor) for t in outs):
      raise TypeError(f"program() must return a tinygrad Tensor or a tuple of them, not {type(outs).__name__}")
    outs = tuple(_deviced(_strong(t), device) for t in outs)
    cap = Capture(device=device, tensor=TgUOp.sink(*[t.uop for t in outs]))
    _read_inputs(cap, cap.tensor)
    before = len(steps)
    Tensor.realize(*outs)
    mine = steps[before:]
    if not mine and steps and _realized_by(steps[-1], outs):
      return _with_steps(steps[-1], steps[:-1])
    cap.scheduled = bool(mine)
    for step in mine:   # the outputs' own realize: its graphs are the capture's
      cap.callified += step.callified
      cap.kernel_graphs += step.kernel_graphs
      cap.programs += step.programs
      for b, data in step.inputs.items(): cap.inputs.setdefault(b, data)
      cap.fresh |= step.fresh
      cap.var_vals.update(step.var_vals)
    paused[0] = True
    # tinygrad's numbers, and which storage each output was realized into
    _read_outputs(cap, [t.uop for t in outs])
  return _with_steps(cap, steps[:before])


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
  from tinygrad.dtype import dtypes as tgd, strong_dtype
  return t.cast(strong_dtype(t.dtype)) if t.dtype in tgd.weaks else t


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
  written = {s for s in step.output_storage if s is not None} | {_storage_of(_view_base(_unsharded(u))) for u in step.realized} - {None}
  return all(_storage_of(_unsharded(t.uop)) in written for t in outs)


def _view_base(u: Any) -> Any:
  """The storage under a view of it (tinygrad's movement ops and AFTERs), or u itself."""
  from tinygrad.uop.ops import GroupOp, Ops
  while u.op is Ops.AFTER or u.op in GroupOp.Movement: u = u.src[0]
  return u


def _unsharded(u: Any) -> Any:
  """What a sharded tensor's UNSHARD(storage, DEVICE range) is over (its storage over the device tuple), else u."""
  return u.src[0] if u.op.name == "UNSHARD" else u


def _jit_capturing() -> bool:
  """A TinyJit is capturing: tinygrad's schedule hands each realize's schedule to it instead of running it."""
  from tinygrad.engine import realize
  from tinygrad.helpers import CAPTURING
  return bool(realize.capturing) and bool(CAPTURING)


def _read_outputs(cap: Capture, realized: list[Any], after_jit: bool = False) -> None:
  """tinygrad's numbers of each realized uop (storage, or a view of it), read as tinygrad's numpy() reads them. After a
  TinyJit capture's run (after_jit) only storage the jit kept is read: the rest it planned into memory of its own."""
  cap.realized = list(realized)
  cap.output_storage = [_storage_of(u) for u in realized]
  shapes = [bound_shape(u) for u in realized]
  if (bad := next((i for i, s in enumerate(shapes) if s is None), None)) is not None:
    cap.unread = f"output {bad}'s shape {realized[bad].shape} is symbolic over a variable it does not bind"
    cap.outputs = [np.zeros(0) for _ in realized]
    return
  if after_jit:
    data = [_read_stored(u, s) for u, s in zip(realized, shapes)]
    if (bad := next((i for i, d in enumerate(data) if d is None), None)) is not None:
      cap.unread = f"output {bad}'s storage is not readable after TinyJit's run of its capture (it plans such storage into its own memory)"
      cap.outputs = [np.zeros(s) if d is None else d.reshape(s) for s, d in zip(shapes, data)]
      return
    cap.outputs = [d.reshape(s) for s, d in zip(shapes, data)]
    return
  cap.outputs = [_numbers(u, st, s) for u, st, s in zip(realized, cap.output_storage, shapes)]


def _read_stored(u: Any, shape: tuple[int, ...]) -> np.ndarray | None:
  """A realized uop's numbers (of its concrete shape, bound_shape) read from its storage alone (None when it is no
  storage, or not readable): a BUFFER through RESHAPEs; storage over a device tuple, replicated: device 0's;
  UNSHARD(RESHAPE(storage), DEVICE range) arg (axis,): the devices' blocks (each of the RESHAPE's shape) side by side
  along axis."""
  axis, inner = (u.arg[0], u.src[0]) if u.op.name == "UNSHARD" else (None, u)
  if (s := _storage_of(inner)) is None: return None
  if not isinstance(s.arg.device, tuple):
    return None if axis is not None or (d := _read_buffer(s)) is None else d.reshape(shape)
  if (rows := _read_buffer(s, per_device=True)) is None: return None
  if axis is None: return rows[0].reshape(shape)
  return np.concatenate([r.reshape(inner.shape) for r in rows], axis=axis).reshape(shape)


def _numbers(u: Any, storage: Any, shape: tuple[int, ...]) -> np.ndarray:
  """One realized uop's numbers, of its concrete shape (bound_shape): its storage's contents, or (a view) what
  tinygrad's numpy() gives, read outside any TinyJit capture under way (a read there is refused, and must not become
  part of the captured function). A view whose shape is over bound variables is read as tinygrad's own `x[:3, :i]`
  reads it: sliced to the numbers they bind."""
  from tinygrad import Tensor
  from tinygrad.engine import realize
  if storage is not None and (data := _read_buffer(storage)) is not None: return data.reshape(shape)
  saved = list(realize.capturing)
  realize.capturing.clear()
  try:
    t = Tensor(u)
    return (t if tuple(u.shape) == shape else t[tuple(slice(0, n) for n in shape)]).numpy()
  finally: realize.capturing[:] = saved


def _storage_of(u: Any) -> Any:
  """The BUFFER a realized output was written into, or None when the output is another view of storage (tinygrad does
  not copy a movement op of realized storage: the output stays a PAD, SHRINK, ... of it, realized only when read)."""
  while u.op.name == "RESHAPE": u = u.src[0]
  return u if u.op.name == "BUFFER" else None

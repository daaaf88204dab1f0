"""Capture: run a tinygrad program and record its graph at every stage, plus tinygrad's own numbers.

Hooks (tinygrad 0.14.0's module attributes, wrapped by `recording()` and restored in `finally`):

| stage | hook |
|---|---|
| tensor graph | `capture`: `UOp.sink(*[t.uop for t in outputs])` before realize; `recording`: transform_to_call's argument |
| callified graph | `tinygrad.tensor.transform_to_call` (argument and result, with its buffer map) |
| kernel graph | `tinygrad.schedule.rangeify.get_kernel_graph` (argument and result; the function its rewrite_group decorator calls) |
| kernel AST, program | `tinygrad.codegen.do_to_program` (argument; result PROGRAM(sink, LINEAR, SOURCE, BINARY)) |

`recording()` installs the hooks and groups what they see per schedule (a Capture each); `capture(program)` records one
program's run with them, and the pytest plugin (pytest_plugin.py) records every test. While capturing: SCACHE=0 and
codegen's `to_program_cache` emptied (both would skip stages on a rerun; the cache's entries are put back afterwards),
PARALLEL=0 (compiles run in this process, where the hooks are), NOOPT=1 by default (scalar programs: default opts add
vector loads and lane reads, which have no tinyspec form), and DEV set to the chosen device: CPU when a clang exists,
else PYTHON (tinygrad's emulator, the referee).
"""
from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np


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
  from tinyspec.spec.shared import is_host, reads_host
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
  orig = getattr(module, name)
  setattr(module, name, make(orig))
  try: yield
  finally: setattr(module, name, orig)


@contextlib.contextmanager
def _wrapped_cell(fn: Any, cell: str, make: Callable[[Callable], Callable]) -> Iterator[None]:
  """Wrap the function a decorated tinygrad function calls (its closure cell `cell`), in place. tinygrad's pattern
  matchers copy the globals of their functions when first compiled, so replacing a module attribute that a pattern's
  function calls (get_kernel_graph, called by lower_sink_to_linear) is not seen once compiled; the decorated function
  object itself is what they hold, so its cell is what gets wrapped."""
  c = fn.__closure__[fn.__code__.co_freevars.index(cell)]
  orig = c.cell_contents
  c.cell_contents = make(orig)
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


def _read_buffer(u: Any) -> np.ndarray | None:
  try:
    buf = u.buffer
    if not buf.is_allocated(): return None
    return np.array(buf.numpy(), copy=True)
  except Exception:
    return None


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
  realize, tinygrad's numbers of what it realized (output_storage, realized, outputs; read from storage, `_read_stored`), and
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
      ret = orig(big_sink)
      if rec.paused: return ret
      call, bmap = ret
      cap = Capture(device=rec.device_now(), tensor=big_sink, callified=[(big_sink, call, dict(bmap))])
      rec.start(cap)
      if rec.inputs:
        for a in call.src[1:]:
          if a.op.name == "BUFFER" and a not in cap.inputs and (data := _read_buffer(a)) is not None: cap.inputs[a] = data
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
        _read_stored(mine, [next(t for t, tu in zip((self, *lst), uops) if tu is u) for u in mine.tensor.src])
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


def _read_stored(cap: Capture, tensors: list[Any]) -> None:
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


def _read_outputs(cap: Capture, tensors: list[Any]) -> None:
  """After a realize: which storage each output of the schedule was realized into, and tinygrad's numbers of it."""
  cap.realized = [t.uop for t in tensors]
  cap.output_storage = [_storage_of(u) for u in cap.realized]
  cap.outputs = [t.numpy() for t in tensors]


def capture(program: Callable[[], Any], device: str | None = None, noopt: bool = True) -> Capture:
  """Run `program()` (returning a tinygrad Tensor or a tuple of them) under tinygrad, realize its outputs and record
  every stage. The program runs with DEV=device (default: `default_device()`)."""
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  from tinygrad.uop.ops import UOp as TgUOp

  device = device or default_device()
  with Context(DEV=device, SCACHE=0, PARALLEL=0, NOOPT=int(noopt)):
    outs = program()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    if not outs or not all(isinstance(t, Tensor) for t in outs):
      raise TypeError(f"program() must return a tinygrad Tensor or a tuple of them, not {type(outs).__name__}")
    tensor = TgUOp.sink(*[t.uop for t in outs])   # taken before realize replaces the outputs' uops with their storage
    with recording(device, inputs=True, fresh=True) as rec:
      Tensor.realize(*outs)
    cap = Capture(device=device, tensor=tensor, callified=rec.callified, kernel_graphs=rec.kernel_graphs, programs=rec.programs,
                  inputs=rec.input_data)
    # tinygrad's numbers, and which storage each output was realized into
    _read_outputs(cap, list(outs))
  return cap


def _storage_of(u: Any) -> Any:
  """The BUFFER a realized output was written into, or None when the output is another view of storage (tinygrad does
  not copy a movement op of realized storage: the output stays a PAD, SHRINK, ... of it, realized only when read)."""
  while u.op.name == "RESHAPE": u = u.src[0]
  return u if u.op.name == "BUFFER" else None

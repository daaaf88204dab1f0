"""Recording: the hooks of capture.py kept on while other code runs tinygrad (the pytest plugin's tests), what they see
grouped per schedule, a Capture each, handed on as soon as it is complete; with outputs, tinygrad's numbers of what
each realize realized, read from its storage without running anything."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np
import tinygrad.codegen as codegen
import tinygrad.schedule as schedule
import tinygrad.schedule.rangeify as rangeify
import tinygrad.tensor as tensor_mod
from tinygrad import Device, Tensor
from tinygrad.engine import realize

from tinyspec.bridge.tinygrad.capture import Capture, read_inputs
from tinyspec.bridge.tinygrad.hooks import emptied, wrapped, wrapped_cell
from tinyspec.bridge.tinygrad.readback import buffer_of, read_buffer


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

  def hook(self, stack: contextlib.ExitStack, fresh: bool) -> None:
    """Install the hooks (see capture.py's table), each restored when stack closes; fresh: tinygrad's caches emptied too."""
    stack.enter_context(wrapped(tensor_mod, "transform_to_call", self.on_call))
    stack.enter_context(wrapped_cell(rangeify.get_kernel_graph, "func", self.on_kernel_graph))
    stack.enter_context(wrapped(codegen, "do_to_program", self.on_program))
    stack.enter_context(wrapped(Tensor, "realize", self.on_realize))
    if not self.outputs: stack.enter_context(wrapped(Tensor, "linear_with_vars", self.on_schedule))
    if fresh:
      stack.enter_context(emptied(codegen.to_program_cache))
      stack.enter_context(emptied(schedule.schedule_cache))

  def on_call(self, orig: Callable) -> Callable:
    def wrapper(big_sink):
      if self.paused: return orig(big_sink)
      cap = Capture(device=self.device_now(), tensor=big_sink)
      if self.inputs: read_inputs(cap, big_sink)   # the tensor graph's storage, before anything of this schedule runs
      ret = orig(big_sink)
      call, bmap = ret
      cap.callified.append((big_sink, call, dict(bmap)))
      self.start(cap)
      if self.inputs: read_inputs(cap, call)
      return ret
    return wrapper

  def on_kernel_graph(self, orig: Callable) -> Callable:
    def wrapper(sink):
      ret = orig(sink)
      if not self.paused: self.current().kernel_graphs.append((sink, ret))
      return ret
    return wrapper

  def on_program(self, orig: Callable) -> Callable:
    def wrapper(ast, renderer):
      ret = orig(ast, renderer)
      # tag set: the device's own runtime programs (signal, wait, ...)
      if ast.tag is None and not self.paused: self.current().programs.append((ast, ret))
      return ret
    return wrapper

  def on_schedule(self, orig: Callable) -> Callable:
    def wrapper(*args, **kwargs):
      ret = orig(*args, **kwargs)
      if not self.paused: self.flush()
      return ret
    return wrapper

  def on_realize(self, orig: Callable) -> Callable:
    def wrapper(tensor, *lst, **kwargs):
      uops = [t.uop for t in (tensor, *lst)]
      ret = orig(tensor, *lst, **kwargs)
      if self.paused: return ret
      # the schedule of this realize: a sink of (some of) these tensors' uops
      mine = self.open
      if self.outputs and mine is not None and mine.tensor is not None and set(mine.tensor.src) <= set(uops):
        record_stored(mine, [next(t for t, tu in zip((tensor, *lst), uops) if tu is u) for u in mine.tensor.src])
      self.flush()
      return ret
    return wrapper


@contextlib.contextmanager
def recording(device: str | None = None, inputs: bool = False, outputs: bool = False, fresh: bool = False,
              on_capture: Callable[[Capture], None] | None = None) -> Iterator[Recording]:
  """Install the hooks (see capture.py's table) for the duration of the block; every one is restored on the way out,
  whatever the block raised. inputs: read each callified CALL's input BUFFERs before they run. outputs: record, per
  realize, tinygrad's numbers of what it realized (output_storage, realized, outputs; read from storage, `record_stored`), and
  keep the programs the realize compiles in its schedule's Capture. fresh: empty codegen's to_program_cache and the
  schedule cache for the block (their entries put back afterwards): a rerun would take its schedule and programs from
  them and make no graph there. on_capture: called with each Capture once complete (see Recording); a schedule is
  complete when Tensor.linear_with_vars returns (without outputs; the programs its realize compiles come as a Capture
  of their own) or its realize returns."""
  rec = Recording(device, inputs, outputs, on_capture)
  with contextlib.ExitStack() as stack:
    rec.hook(stack, fresh)
    try: yield rec
    finally: rec.flush()


def record_stored(cap: Capture, tensors: list[Any]) -> None:
  """After a realize inside a program that is not ours (a test): tinygrad's numbers read straight from the storage each
  output was realized into, running nothing (Tensor.numpy would run kernels of its own, counted by tests that count
  kernels, and refuses inside a TinyJit capture). When an output is a view of storage (tinygrad computes it only when it
  is read) or sharded, its storage cannot be read, or a TinyJit is capturing, nothing is recorded: the schedule has no numbers to compare."""
  if realize.capturing: return   # a TinyJit capturing: what the storage holds now is not what the captured kernels give
  try:
    realized = [t.uop for t in tensors]
    storage = [buffer_of(u) for u in realized]
    if any(b is None for b in storage): return
    data = [read_buffer(b) for b in storage]
    if any(d is None for d in data): return
    outputs = [d.reshape(t.shape) for d, t in zip(data, tensors)]
  except Exception: return   # a symbolic shape, storage of another kind: no numbers, never an error in the test
  cap.realized, cap.output_storage, cap.outputs = realized, storage, outputs

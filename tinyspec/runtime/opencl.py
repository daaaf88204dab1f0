"""The OpenCL runtime: pyopencl on PoCL, simulating one OpenCL device per tinyspec device name. Every name ("CPU",
"CPU:0", "CPU:1", "GPU:3": the family prefix does not matter) gets its own context and command queue on the one PoCL
device, made the first time a kernel or buffer of that name needs it (the default device's, "CPU", when OpenCL is
first opened). A kernel runs in the context of its storage args' device (kernel_device); programs are cached per
context by source text, and device buffers by (device, memory), living for a whole run (inputs copied in once,
results copied out once at the end). Values cross devices only through the host: the evaluator runs COPY calls on
host arrays, and the buffer of a memory a kernel of another device needs is copied back and copied into that
device's context, so no kernel is given a buffer of another context and a memory has one device copy at a time.
Kernels known ahead (a fuzz batch's) are built together as one program per device: PoCL's cost is mostly per
program built."""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tinyspec.lower.kernel_map import is_kernel_body
from tinyspec.render.cstyle import check_identifier, renamed_apart
from tinyspec.render.opencl import kernel_atomic_extensions, launch_size, render_kernel
from tinyspec.render.program import var_param_dtype
from tinyspec.runtime.cpu import match_shapes, prepare
from tinyspec.semantics import evaluate
from tinyspec.spec.shared import HOST_DEVICES
from tinyspec.uop import GroupOp, Ops, SourceArg, UOp, storage_of

# PoCL rounds float32 divide and sqrt correctly only when asked; without contraction a*b+c is not fused into an fma
BUILD_OPTIONS: tuple[str, ...] = ("-cl-fp32-correctly-rounded-divide-sqrt",)

# the device storage names when it names none (BufferArg's and ParamArg's default)
DEFAULT_DEVICE = "CPU"

# the process's OpenCL state: pyopencl, the PoCL device, its extensions, and one DeviceContext per device name
_device: dict[str, Any] = {}


@dataclass
class DeviceContext:
  """One simulated device: its own OpenCL context and queue on the PoCL device, and the programs built in it."""
  name: str
  context: Any
  queue: Any
  programs: dict[str, dict] = field(default_factory=dict)  # by source text: {"program": ..., entry name: kernel}


class OpenCLUnavailable(RuntimeError):
  """No usable OpenCL platform or device (or pyopencl is missing); the message says why in one line."""


class OpenCLUnsupported(RuntimeError):
  """The device lacks an extension a kernel needs (64-bit atomics, say); raised before the kernel is built."""


class OpenCLBuildError(RuntimeError):
  """A kernel did not compile. Carries the source and the compiler's build log."""
  def __init__(self, name: str, source: str, log: str):
    self.name, self.source, self.log = name, source, log
    numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(source.splitlines()))
    super().__init__(f"OpenCL build of kernel {name!r} failed:\n{log.strip()}\n--- source ---\n{numbered}")


def _open() -> dict[str, Any]:
  """The process's context and queue, created on first use. Records the reason when there are none."""
  if _device: return _device
  try:
    import pyopencl as cl
  except ImportError as e:
    _device["error"] = f"pyopencl is not installed ({e}); pip install pyopencl"
    return _device
  try: platforms = cl.get_platforms()
  except Exception as e:  # the ICD loader raises when no vendor file exists
    _device["error"] = f"no OpenCL platform found ({str(e).splitlines()[0] if str(e) else type(e).__name__}); install pocl-opencl-icd"
    return _device
  devices = []
  # PoCL first: it is what the project is tested on; any other platform is a fallback
  for p in sorted(platforms, key=lambda p: "Portable Computing Language" not in p.name):
    try: devices += p.get_devices()
    except Exception: continue  # a platform without devices raises DEVICE_NOT_FOUND
  if not devices:
    _device["error"] = f"no OpenCL device found on {len(platforms)} platform(s) ({', '.join(p.name for p in platforms) or 'none'})"
    return _device
  dev = devices[0]
  fp64 = "cl_khr_fp64" in dev.extensions or dev.double_fp_config != 0
  _device.update(cl=cl, device=dev, contexts={}, fp64=fp64,
                 extensions=frozenset(dev.extensions.split()) | ({"cl_khr_fp64"} if fp64 else set()))
  # the default device's context is made now, so that available() says yes only where a context can be made
  try: context_of(DEFAULT_DEVICE)
  except Exception as e:
    _device.clear()
    _device["error"] = f"no OpenCL context on {dev.name} ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
  return _device


def available() -> tuple[bool, str]:
  """(True, the device's name) when kernels can run, else (False, why not, in one line)."""
  d = _open()
  if "error" in d: return False, d["error"]
  return True, f"{d['device'].name} on {d['device'].platform.name}"


def _require() -> dict[str, Any]:
  d = _open()
  if "error" in d: raise OpenCLUnavailable(d["error"])
  return d


def context_of(device: str = DEFAULT_DEVICE) -> DeviceContext:
  """The context and queue of the simulated device named `device`, made on first use and kept for the process."""
  d = _device if "contexts" in _device else _require()
  if (ctx := d["contexts"].get(device)) is None:
    cl = d["cl"]
    context = cl.Context(devices=[d["device"]])
    ctx = d["contexts"][device] = DeviceContext(device, context, cl.CommandQueue(context))
  return ctx


def kernel_device(call: UOp) -> str:
  """The device a kernel CALL runs on: that of its storage args (DEFAULT_DEVICE when it has none). A kernel whose
  storage is on two devices breaks kgraph.one_device and is refused here too, by name: running it would hand one
  context's memory to another's kernel."""
  devs = list(dict.fromkeys(d for a in call.src[1:] if a.op not in GroupOp.Variable and (d := a.device) is not None and d not in HOST_DEVICES))
  if len(devs) > 1:
    raise ValueError(f"kernel {call.arg!r} has storage on {' and '.join(map(str, devs))}: a kernel runs on one device (kgraph.one_device); "
                     "COPY between devices first")
  return devs[0] if devs else DEFAULT_DEVICE


def require_extensions(linear: UOp, name: str) -> None:
  """OpenCLUnsupported naming what is missing when the device lacks an extension the atomic updates of a kernel's
  LINEAR need: such a kernel is never built (a device may build it and update non-atomically, or fail later)."""
  d = _require()
  missing = {e: what for e, what in kernel_atomic_extensions(linear).items() if e not in d["extensions"]}
  if missing:
    why = "; ".join(f"{', '.join(what)} atomic updates need {e}" for e, what in missing.items())
    raise OpenCLUnsupported(f"kernel {name!r} cannot run on {d['device'].name}: {why}, which the device does not report")


def build(source: str, name: str, device: str = DEFAULT_DEVICE) -> Any:
  """The compiled kernel `name` of `source` in the context of `device`, built once per process per device and source
  text (or found in a program build_many made of it and others, under the name it got there)."""
  d = _require()
  ctx = context_of(device)
  if (kerns := ctx.programs.get(source)) is None:
    cl = d["cl"]
    # pyopencl's own binary cache is off: PoCL keeps one, and two on-disk caches race under parallel test workers
    prg = cl.Program(ctx.context, source)
    try: prg.build(options=list(BUILD_OPTIONS), cache_dir=False)
    except cl.RuntimeError as e:
      try: log = prg.get_build_info(d["device"], cl.program_build_info.LOG)
      except Exception: log = ""
      raise OpenCLBuildError(name, source, log or str(e)) from None
    kerns = ctx.programs[source] = {"program": prg}
  if (k := kerns.get(name)) is None:
    entry = kerns.get("renamed", {}).get(name, name)
    try: k = kerns[name] = d["cl"].Kernel(kerns["program"], entry)
    except Exception as e: raise OpenCLBuildError(name, source, f"no kernel named {name!r} in the program ({e})") from None
  return k


def build_many(kernels: list[tuple[str, str]], device: str = DEFAULT_DEVICE) -> None:
  """Build the kernels (source, entry name) not built yet in the context of `device` as one program. Kernels of
  different graphs share entry names (kernel_0...), so each entry is renamed apart in the combined source;
  `build(source, name, device)` then finds it there. When the combined build fails nothing is kept: each kernel builds
  alone later, and its error is its own."""
  d = _require()
  ctx = context_of(device)
  todo = list(dict.fromkeys((t, n) for t, n in kernels if t not in ctx.programs))
  if len(todo) < 2: return
  renamed = renamed_apart(todo)
  prg = d["cl"].Program(ctx.context, "\n".join(text for text, _ in renamed))
  try: prg.build(options=list(BUILD_OPTIONS), cache_dir=False)
  except d["cl"].RuntimeError: return
  for (t, n), (_, e) in zip(todo, renamed): ctx.programs[t] = {"program": prg, "renamed": {n: e}}


def clear_cache() -> None:
  """Forget the compiled programs of this process, on every device (the next build compiles again)."""
  for ctx in _device.get("contexts", {}).values(): ctx.programs.clear()


# ---- kernels: source, name and launch size of a kernel CALL ----
_kernels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kernel_of(call: UOp) -> tuple[str, str, tuple[int, ...]]:
  """(OpenCL source, entry name, global size) of a kernel CALL whose body is a PROGRAM. Uses the PROGRAM's SOURCE
  when it is OpenCL C, renders its LINEAR otherwise. The kernel takes one pointer per call arg, in order."""
  if (ret := _kernels.get(call)) is not None: return ret
  if call.op is not Ops.CALL or not call.src: raise TypeError(f"a kernel runner runs CALLs, not {call.op.name}")
  body = call.src[0]
  if body.op is not Ops.PROGRAM:
    raise TypeError(f"the OpenCL runtime runs PROGRAM kernel bodies (lower to the program stage first), got {body.op.name}")
  if len(body.src) < 2 or body.src[1].op is not Ops.LINEAR: raise TypeError(f"PROGRAM {body.arg!r} has no LINEAR as src[1]")
  src = body.src[2].arg if len(body.src) > 2 and body.src[2].op is Ops.SOURCE else None
  if isinstance(src, SourceArg) and src.lang == "opencl": text, name = src.text, check_identifier(src.name, "SOURCE name")
  else: text, name = render_kernel(call, body)
  ret = (text, name, launch_size(body.src[1]))
  _kernels[call] = ret
  return ret


class OpenCLRunner:
  """A kernel runner for `evaluate(..., kernel_runner=...)`. Host arrays are mirrored on the device the first time a
  kernel gets them; later kernels use the device copy, so intermediates never come back to the host. A buffer comes
  back when it is read on the host: `outputs` holds (storage, call) for each AFTER(storage, call) the graph reads,
  and that storage is copied back right after that call runs. `eager=True` copies every arg back after every
  kernel (for graphs that read storage on the host in ways not known in advance); `sync()` copies back the rest.
  Each kernel runs in the context of its device (kernel_device); `contexts_used` holds the DeviceContext of every
  device this runner ran kernels or holds buffers on, by device name."""

  def __init__(self, outputs: set[tuple[UOp, UOp]] | None = None, eager: bool = False):
    self.d = _require()
    self.outputs = outputs or set()
    self.eager = eager
    # keyed by the memory, not the array object: two views of one storage must share one device buffer. A memory has
    # one device buffer at a time, in the context of the device whose kernel used it last (see _buffer)
    self.bufs: dict[tuple[int, int], tuple[str, np.ndarray, Any]] = {}
    self.dirty: set[tuple[int, int]] = set()
    self.contexts_used: dict[str, DeviceContext] = {}
    self.launches = self.copies_in = self.copies_out = 0

  @staticmethod
  def for_graph(root: UOp) -> OpenCLRunner:
    """The runner for evaluating root: lazy (outputs copied back once) when root is a flat kernel graph, eager when
    it nests kernel graphs or COPY calls, whose storage the evaluator reads on the host between kernels."""
    nodes = root.toposort(gate=lambda u: not is_kernel_body(u))
    if any(u.op is Ops.CALL and u.src and not is_kernel_body(u.src[0]) for u in nodes): return OpenCLRunner(eager=True)
    # what the evaluator reads on the host: the root's entries. Storage read as AFTER(storage, kernel calls...) comes
    # back right after those calls; a BUFFER read as itself is its initial contents, which the host holds anyway
    outs: set[tuple[UOp, UOp]] = set()
    for u in root.src if root.op is Ops.SINK else (root,):
      if u.op is Ops.AFTER:
        if not all(d.op is Ops.CALL for d in u.src[1:]): return OpenCLRunner(eager=True)
        outs.update((storage_of(u), d) for d in u.src[1:])
      elif u.op not in (Ops.BUFFER, Ops.CALL, Ops.STORE, Ops.GROUP, Ops.CONST): return OpenCLRunner(eager=True)
    return OpenCLRunner(outs)

  @staticmethod
  def _key(a: np.ndarray) -> tuple[int, int]: return (a.__array_interface__["data"][0], a.nbytes)

  def _buffer(self, a: np.ndarray, device: str = DEFAULT_DEVICE) -> Any:
    """The buffer of host array `a` in the context of `device`. A buffer another device's kernel left is copied back
    to the host first (when a kernel wrote it) and dropped: a kernel never gets a buffer of another context, and a
    memory never has two device copies that could disagree."""
    key = self._key(a)
    if (hit := self.bufs.get(key)) is not None:
      if hit[0] == device: return hit[2]
      if key in self.dirty: self._copy_out(key)
      del self.bufs[key]
    cl, ctx = self.d["cl"], context_of(device)
    self.contexts_used[device] = ctx
    buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, size=max(a.nbytes, 1))
    if a.nbytes:
      cl.enqueue_copy(ctx.queue, buf, np.ascontiguousarray(a), is_blocking=False)
      self.copies_in += 1
    self.bufs[key] = (device, a, buf)
    return buf

  @staticmethod
  def _check_args(call: UOp, name: str, args: list[np.ndarray]) -> None:
    if len(args) != len(call.src) - 1: raise ValueError(f"kernel {name}: {len(args)} arrays for a call of {len(call.src) - 1} args")
    for u in call.src[0].src[1].src:
      if u.op is not Ops.PARAM: continue
      if u.arg.slot >= len(args): raise ValueError(f"kernel {name}: PARAM slot {u.arg.slot} but the call has {len(args)} args")
      a = args[u.arg.slot]
      if a.dtype != u.dtype.np or a.size != u.arg.size:
        raise ValueError(f"kernel {name}: arg {u.arg.slot} is {a.dtype}[{a.size}], PARAM wants {u.dtype.np}[{u.arg.size}]")

  def __call__(self, call: UOp, args: list[np.ndarray]) -> None:
    text, name, gsize = kernel_of(call)
    self._check_args(call, name, args)
    require_extensions(call.src[0].src[1], name)
    device = kernel_device(call)
    ctx = self.contexts_used[device] = context_of(device)
    kern = build(text, name, device)
    linear = call.src[0].src[1].src
    is_var = [a.op in GroupOp.Variable for a in call.src[1:]]
    # a variable is passed by value, as the numpy scalar of its parameter's type; storage through its device buffer
    bufs = [var_param_dtype(arg, linear).np.type(int(a)) if v else self._buffer(a, device) for a, arg, v in zip(args, call.src[1:], is_var)]
    self.dirty.update(self._key(a) for a, v in zip(args, is_var) if not v)
    images = self._images_in(ctx, linear, bufs)
    if 0 not in gsize:
      kern(ctx.queue, gsize, None, *bufs)
      self.launches += 1
    self._images_out(ctx, images)
    if self.eager: self.sync()
    elif self.outputs:
      for a, arg, v in zip(args, call.src[1:], is_var):
        if not v and (storage_of(arg), call) in self.outputs: self._copy_out(self._key(a))

  def _images_in(self, ctx: DeviceContext, linear: tuple[UOp, ...], bufs: list[Any]) -> list[tuple[Any, Any, tuple[int, int]]]:
    """Each image PARAM's arg as an RGBA image made for this launch (in bufs, in place of its buffer), filled from the
    buffer's flat elements (their order is the image's: ops.image.image_coords; a kernel that writes some pixels leaves the
    others as they were). (image, buffer, dims) of the images the kernel writes, copied back into their buffers after it runs."""
    cl = self.d["cl"]
    written = {storage_of(u.src[0].src[0]).arg.slot for u in linear if u.op in GroupOp.Writes and storage_of(u.src[0].src[0]).op is Ops.PARAM}
    out = []
    for p in dict.fromkeys(u for u in linear if u.op is Ops.PARAM and u.arg.image is not None):
      h, w = p.arg.image
      dev = self.d["device"]
      if w > dev.image2d_max_width or h > dev.image2d_max_height:
        raise OpenCLUnsupported(f"an image of {w}x{h} pixels is past {dev.name}'s limit of {dev.image2d_max_width}x{dev.image2d_max_height}")
      fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.HALF_FLOAT if p.dtype.itemsize == 2 else cl.channel_type.FLOAT)
      k, buf = p.arg.slot, bufs[p.arg.slot]
      img = cl.create_image(ctx.context, cl.mem_flags.WRITE_ONLY if k in written else cl.mem_flags.READ_ONLY, fmt, shape=(w, h))
      cl.enqueue_copy(ctx.queue, img, buf, offset=0, origin=(0, 0), region=(w, h))
      if k in written: out.append((img, buf, (h, w)))
      bufs[k] = img
    return out

  def _images_out(self, ctx: DeviceContext, images: list[tuple[Any, Any, tuple[int, int]]]) -> None:
    for img, buf, (h, w) in images: self.d["cl"].enqueue_copy(ctx.queue, buf, img, origin=(0, 0), region=(w, h), offset=0)

  def _copy_out(self, key: tuple[int, int]) -> None:
    device, a, buf = self.bufs[key]
    self.dirty.discard(key)
    if not a.nbytes: return
    cl, q = self.d["cl"], context_of(device).queue
    if a.flags.c_contiguous and a.flags.writeable: cl.enqueue_copy(q, a, buf)
    else:
      tmp = np.empty(a.shape, a.dtype)
      cl.enqueue_copy(q, tmp, buf)
      a[...] = tmp
    self.copies_out += 1

  def _finish(self) -> None:
    for ctx in self.contexts_used.values(): ctx.queue.finish()

  def close(self) -> None:
    """Release the device buffers without copying anything back."""
    self._finish()
    self.bufs.clear()
    self.dirty.clear()

  def sync(self) -> None:
    """Copy every buffer a kernel may have written back into its host array, then forget the device copies."""
    for key in list(self.dirty): self._copy_out(key)
    self._finish()
    self.bufs.clear()


def run_kernel(call: UOp, args: list[np.ndarray]) -> None:
  """Run one kernel CALL on flat host arrays, in place (copies in and out around this one kernel)."""
  r = OpenCLRunner()
  r(call, args)
  r.sync()


def run(root: UOp, inputs: dict[int, np.ndarray] | None = None, **options) -> list[np.ndarray | None] | np.ndarray:
  """evaluate(root, inputs) with every kernel run as OpenCL C on the device. root is a tensor graph (lowered here with
  backend "opencl"), a kernel graph (run through the kernel passes), or one already rendered for OpenCL. options
  are lowering options (opts, int_dtype, callify, realize)."""
  _require()
  lowered = prepare(root, backend="opencl", **options)
  runner = OpenCLRunner.for_graph(lowered)
  try: return match_shapes(root, evaluate(lowered, inputs, kernel_runner=runner))
  finally: runner.close()

"""The CPU runtime: render C, compile it with the system C compiler, load it with ctypes, run kernels in place.

All kernels of a graph are compiled as one shared object (one compiler call per graph, not per kernel). Objects
are cached by a hash of the compiler, its flags and the source: in memory per process, and on disk under
$TINYSPEC_CACHE (default ~/.cache/tinyspec), written atomically so parallel processes can share the cache.
Loading a shared object runs its constructors, so the disk cache is trusted only as far as it is private: the
directory must belong to this user and be writable by no one else (it is made 0700; otherwise a private temporary
directory is used instead, with a warning), and every object is stored with the SHA-256 of its bytes, checked
before it is loaded (an object without one, or with another, is compiled again).

    run(root, inputs=None, compiler=None, **lower_options)  ==  semantics.evaluate(root, inputs, kernel_runner=...)

where root is a tensor graph (lowered here with backend "c"), a kernel graph (run through the kernel passes), or
a kernel graph whose CALL bodies are already rendered C PROGRAMs.

A kernel's outermost GLOBAL loop runs as OpenMP threads where the compiler has OpenMP (openmp_flags: gcc with
libgomp; clang only with libomp installed, else it runs the loop in one thread; never tcc). Idle OpenMP threads sleep
(OMP_WAIT_POLICY=PASSIVE unless set), and their pool is freed before this process forks: libgomp's pool does not
survive a fork, and a forked child (a fuzz worker) that ran a parallel loop with the parent's pool would hang.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from tinyspec.dtype import DType
from tinyspec.fileio import atomic_write
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.lower.start import start_index
from tinyspec.render.cstyle import check_identifier, renamed_apart
from tinyspec.render.program import var_param_dtype
from tinyspec.semantics import evaluate
from tinyspec.uop import GroupOp, Ops, UOp

# read by the OpenMP runtime when the first object linking it loads: idle threads block instead of spinning, so the
# threads of parallel test workers and fuzz workers do not take each other's cores between kernels
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# -ffp-contract=off: a*b+c must round twice, as the evaluator computes it
COMPILERS: dict[str, tuple[str, ...]] = {
  # gcc 12's loop vectorizer reorders overlapping stores of last-write-wins loop nests: off, so C's order holds
  "gcc": ("-O2", "-fno-tree-vectorize", "-std=gnu11", "-fwrapv", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC"),
  "clang": ("-O2", "-std=gnu11", "-fwrapv", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC", "-Wno-everything"),
  "tcc": ("-shared", "-fPIC"),  # tcc does not optimize, so signed arithmetic already wraps
}
LINK_FLAGS: tuple[str, ...] = ("-lm",)
# what makes `#pragma omp parallel for` run threads, where the compiler can link an OpenMP runtime (probed once)
OPENMP_FLAGS: dict[str, tuple[str, ...]] = {"gcc": ("-fopenmp",), "clang": ("-fopenmp",)}
DEFAULT_COMPILER = os.environ.get("TINYSPEC_CC", "gcc")


class CompileError(RuntimeError):
  """The C compiler rejected a source. Carries the compiler, its message and the source."""
  def __init__(self, compiler: str, message: str, source: str):
    self.compiler, self.message, self.source = compiler, message, source
    numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(source.splitlines()))
    super().__init__(f"{compiler} failed to compile a kernel:\n{message.strip()}\n--- source ---\n{numbered}")


class CompilerUnavailable(RuntimeError):
  """The requested C compiler is not installed (or not a known one)."""


def available_compilers() -> list[str]:
  """The known compilers found on PATH."""
  return [c for c in COMPILERS if shutil.which(c)]


# by compile time of a fuzz batch, fastest first: tcc does not optimize and compiles a batch in milliseconds
FASTEST_FIRST: tuple[str, ...] = ("tcc", "clang", "gcc")


def fastest_compiler() -> str | None:
  """The known compiler on PATH that compiles fastest (None when there is none): what a fuzz campaign compiles with."""
  found = available_compilers()
  return next((c for c in FASTEST_FIRST if c in found), None)


_openmp: dict[str, bool] = {}
OPENMP_PROBE = "int ts_probe(int n) { int s = 0;\n#pragma omp parallel for reduction(+:s)\nfor (int i = 0; i < n; i++) s += i;\nreturn s; }\n"


def openmp_flags(compiler: str) -> tuple[str, ...]:
  """The flags that make compiler's objects run parallel loops as threads: () when it has none, or when it cannot
  build and link an OpenMP object here (clang without libomp), so its kernels run their loops in one thread."""
  flags = OPENMP_FLAGS.get(compiler, ())
  if not flags: return ()
  if compiler not in _openmp:
    exe = shutil.which(compiler)
    with tempfile.TemporaryDirectory(prefix="tinyspec-omp-") as tmp:
      src = Path(tmp) / "probe.c"
      src.write_text(OPENMP_PROBE)
      try: ok = exe is not None and subprocess.run([exe, *COMPILERS[compiler], *flags, "-o", str(Path(tmp) / "probe.so"), str(src)],
                                                   capture_output=True, timeout=120).returncode == 0
      except (OSError, subprocess.SubprocessError): ok = False
    _openmp[compiler] = ok
  return flags if _openmp[compiler] else ()


def compile_flags(compiler: str) -> tuple[str, ...]:
  """Every flag compiler is run with (before the output, source and link flags)."""
  return COMPILERS[compiler] + openmp_flags(compiler)


_pause: list[Callable[[], int]] = []


def _free_openmp_threads() -> None:
  for fn in _pause: fn()


def _watch_openmp(lib: ctypes.CDLL) -> None:
  """Once an object linking an OpenMP runtime is loaded, free that runtime's idle threads before every fork (OpenMP
  5.0's omp_pause_resource_all): the child starts without a pool and makes its own on its first parallel loop."""
  if _pause: return
  try: fn = lib.omp_pause_resource_all
  except AttributeError: return
  fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
  _pause.append(lambda: fn(1))  # omp_pause_soft: the threads go, the runtime stays loaded
  os.register_at_fork(before=_free_openmp_threads)


_private_dir: list[Path] = []


def cache_dir() -> Path:
  """The disk cache: $TINYSPEC_CACHE or ~/.cache/tinyspec when it is this user's and no one else can write to it (made
  0700), else a private temporary directory for this process."""
  d = Path(os.environ.get("TINYSPEC_CACHE") or Path.home() / ".cache" / "tinyspec")
  try:
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = d.stat()
    if st.st_uid == os.getuid() and not st.st_mode & 0o022:
      if st.st_mode & 0o077: os.chmod(d, 0o700)
      return d
    why = "it belongs to another user" if st.st_uid != os.getuid() else "others can write to it"
  except OSError as e:
    why = f"it cannot be used ({e.strerror or e})"
  if not _private_dir:
    _private_dir.append(Path(tempfile.mkdtemp(prefix="tinyspec-cache-")))
    print(f"tinyspec: not caching compiled kernels in {d}: {why}; using {_private_dir[0]} for this process", file=sys.stderr)
  return _private_dir[0]


def _digest(path: Path) -> str | None:
  try: return hashlib.sha256(path.read_bytes()).hexdigest()
  except OSError: return None


def _trusted(obj: Path) -> bool:
  """Whether a cached object is one this process may load: this user's, writable by no one else, its bytes the ones
  whose hash was stored beside it when it was compiled."""
  try:
    st = obj.stat()
    stored = obj.with_suffix(".sha256").read_text().strip()
  except OSError:
    return False
  return st.st_uid == os.getuid() and not st.st_mode & 0o022 and _digest(obj) == stored


@dataclass
class CompileStats:
  """How often objects came from the compiler, the disk cache and the memory cache (for benchmarks)."""
  compiled: int = 0
  disk_hits: int = 0
  memory_hits: int = 0


STATS = CompileStats()
_libs: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()


def _key(compiler: str, source: str) -> str:
  flags = " ".join(compile_flags(compiler) + LINK_FLAGS)
  return hashlib.sha256(f"{compiler}\0{flags}\0{source}".encode()).hexdigest()[:32]


def compile_source(source: str, compiler: str | None = None, use_disk_cache: bool = True) -> Path:
  """The path of a shared object built from source, from the disk cache when it holds one."""
  compiler = compiler or DEFAULT_COMPILER
  if compiler not in COMPILERS: raise CompilerUnavailable(f"unknown C compiler {compiler!r}; known: {', '.join(COMPILERS)}")
  exe = shutil.which(compiler)
  if exe is None: raise CompilerUnavailable(f"C compiler {compiler!r} is not installed (not found on PATH)")
  d = cache_dir()
  out = d / f"{_key(compiler, source)}.so"
  if use_disk_cache and _trusted(out):
    STATS.disk_hits += 1
    return out
  with tempfile.TemporaryDirectory(dir=d, prefix="build-") as tmp:
    src = Path(tmp) / "kernels.c"
    src.write_text(source)
    obj = Path(tmp) / "kernels.so"
    proc = subprocess.run([exe, *compile_flags(compiler), "-o", str(obj), str(src), *LINK_FLAGS], capture_output=True, text=True)
    if proc.returncode != 0 or not obj.exists(): raise CompileError(compiler, proc.stderr or proc.stdout or f"exit code {proc.returncode}", source)
    STATS.compiled += 1
    os.chmod(obj, 0o700)
    # the hash first, then the object (each rename atomic): a reader that sees the new object sees its hash
    atomic_write(out.with_suffix(".sha256"), _digest(obj) or "", mode=0o600)
    os.replace(obj, out)
  return out


def load_source(source: str, compiler: str | None = None) -> ctypes.CDLL:
  """The loaded shared object of source (compiled at most once per process)."""
  compiler = compiler or DEFAULT_COMPILER
  key = f"{compiler}:{_key(compiler, source) if compiler in COMPILERS else source}"
  with _lock:
    if (lib := _libs.get(key)) is not None:
      STATS.memory_hits += 1
      return lib
    lib = _libs[key] = ctypes.CDLL(str(compile_source(source, compiler)))
    if openmp_flags(compiler): _watch_openmp(lib)
    return lib

def compile_programs(prgs: list[UOp], compiler: str | None = None) -> dict[UOp, ctypes._CFuncPtr]:
  """PROGRAM -> C function for many rendered PROGRAMs compiled as one object: programs of different graphs share
  entry names (kernel_0...), so each is renamed apart in the combined source. One compile for a whole batch."""
  renamed = renamed_apart([(prg.src[2].arg.text, prg.src[2].arg.name) for prg in prgs])
  names = {prg: name for prg, (_, name) in zip(prgs, renamed)}
  lib = load_source("\n".join(text for text, _ in renamed), compiler)
  fns = {}
  for prg, n in names.items():
    fn = getattr(lib, n)
    fn.restype = None
    fns[prg] = fn
  return fns



def clear_memory_cache() -> None:
  """Forget loaded objects (the disk cache stays), so the next run loads from disk."""
  with _lock: _libs.clear()


# ---- kernels of a graph ----
def c_programs(root: UOp) -> list[UOp]:
  """The rendered C PROGRAMs of the kernel calls of root, each once, in order."""
  out, seen = [], set()
  for call in kernel_calls(root):
    prg = call.src[0]
    if prg.op is not Ops.PROGRAM or len(prg.src) < 3 or prg.src[2].op is not Ops.SOURCE:
      raise ValueError(f"kernel CALL body is {prg.op.name}, not a rendered PROGRAM; lower the graph with backend 'c' first")
    if prg.src[2].arg.lang != "c": raise ValueError(f"kernel {prg.src[2].arg.name!r} is rendered in {prg.src[2].arg.lang!r}, not C")
    if prg not in seen:
      seen.add(prg)
      out.append(prg)
  return out


def build(root: UOp, compiler: str | None = None) -> dict[UOp, Callable]:
  """PROGRAM -> its loaded C function, for every kernel of root. Kernels are compiled as one object unless two
  different kernels share a name (then as few objects as that allows)."""
  batches: list[dict[str, str]] = []  # function name -> source text
  where: dict[UOp, int] = {}
  for prg in c_programs(root):
    arg = prg.src[2].arg
    check_identifier(arg.name, "SOURCE name")
    i = next((i for i, b in enumerate(batches) if b.get(arg.name, arg.text) == arg.text), None)
    if i is None:
      i = len(batches)
      batches.append({})
    batches[i][arg.name] = arg.text
    where[prg] = i
  libs = [load_source("\n".join(b.values()), compiler) for b in batches]
  fns: dict[UOp, Callable] = {}
  for prg, i in where.items():
    fn = getattr(libs[i], prg.src[2].arg.name)
    fn.restype = None
    fns[prg] = fn
  return fns


_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
           "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64}


def scalar_arg(value: np.ndarray, dt: DType) -> ctypes._SimpleCData:
  """A variable's value as the C scalar its kernel parameter is."""
  return _CTYPES[dt.name](int(value))


def _ptr_args(args: list[np.ndarray], call: UOp | None = None) -> tuple[list, list[tuple[np.ndarray, np.ndarray]]]:
  ptrs, copies = [], []
  linear = call.src[0].src[1].src if call is not None else ()
  for k, a in enumerate(args):
    if call is not None and call.src[k + 1].op in GroupOp.Variable:  # a variable: passed by value
      ptrs.append(scalar_arg(a, var_param_dtype(call.src[k + 1], linear)))
      continue
    if not (a.flags.c_contiguous and a.flags.writeable):
      tmp = np.ascontiguousarray(a).copy()
      copies.append((a, tmp))
      a = tmp
    ptrs.append(ctypes.c_void_p(a.ctypes.data))
  return ptrs, copies


def make_runner(fns: dict[UOp, Callable], compiler: str | None = None) -> Callable[[UOp, list[np.ndarray]], None]:
  """A kernel_runner for semantics.evaluate that runs each kernel CALL's compiled C function on the arg arrays."""
  def runner(call: UOp, args: list[np.ndarray]) -> None:
    prg = call.src[0]
    if (fn := fns.get(prg)) is None:
      fns.update(build(UOp(Ops.SINK, src=(call,)), compiler))
      fn = fns[prg]
    ptrs, copies = _ptr_args(args, call)
    fn(*ptrs)
    for orig, tmp in copies: orig[...] = tmp.reshape(orig.shape)
  return runner


def prepare(root: UOp, backend: str = "c", **options) -> UOp:
  """root lowered to PROGRAMs rendered for backend (unchanged when it already is). A kernel-level graph (or one kernel
  body) runs through the passes after rangeify, a tensor graph through the whole pipeline (tinyspec.lower.start)."""
  calls = kernel_calls(root)
  def rendered(c: UOp) -> bool: return c.src[0].op is Ops.PROGRAM and len(c.src[0].src) == 3 and c.src[0].src[2].arg.lang == backend
  if calls and all(rendered(c) for c in calls): return root
  options = {**options, "backend": backend}
  return lower(root, passes=PASSES[start_index(PASSES, root):], **options)["render"]  # the spec is verified after every pass


def run(root: UOp, inputs: dict[int, np.ndarray] | None = None, compiler: str | None = None, **options) -> list[np.ndarray | None] | np.ndarray:
  """evaluate(root, inputs) with every kernel run as compiled C. options are lowering options (opts, int_dtype...)."""
  lowered = prepare(root, **options)
  return match_shapes(root, evaluate(lowered, inputs, kernel_runner=make_runner(build(lowered, compiler), compiler)))


def match_shapes(root: UOp, outs: list[np.ndarray | None] | np.ndarray) -> list[np.ndarray | None] | np.ndarray:
  """Outputs of a lowered graph (flat storage) in the shapes of root's SINK entries, as evaluate(root) gives them."""
  if root.op is not Ops.SINK or not isinstance(outs, list) or len(outs) != len(root.src): return outs
  ret = []
  for u, o in zip(root.src, outs):
    shape = u.shape if u.shape_ok else None
    ret.append(o.reshape(shape) if o is not None and shape is not None and o.size == int(np.prod(shape)) else o)
  return ret

"""Graph builders shared by several test modules: kernels in the exact forms of docs/ir.md (k_*), small graph helpers,
and the elementwise kernel graph the backend tests run."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from tinyspec import Stage, check
from tinyspec.dtype import DType, dtypes
from tinyspec.uop import AddrSpace, AxisType, Ops, UOp


def elementwise_kernel_graph(ins: list[np.ndarray], outs: list[tuple[DType, Callable[..., UOp]]]) -> tuple[UOp, dict[int, np.ndarray]]:
  """A kernel graph of one kernel: out_k[i] = f_k(in_0[i], in_1[i], ...), every output a root entry, and its inputs.
  The backends lower it through the kernel passes themselves (simplify, optimize, lower_reduce, linearize, render)."""
  n = ins[0].size
  bufs = [UOp.buffer(dtypes.from_np(x.dtype), n) for x in ins]
  i = UOp.range(n, 0)
  loads = [UOp.param(len(outs) + k, b.dtype, n).index(i).load() for k, b in enumerate(bufs)]
  stores = tuple(UOp.param(k, dt, n).index(i).store(fn(*loads)) for k, (dt, fn) in enumerate(outs))
  body = UOp(Ops.SINK, src=((stores[0] if len(stores) == 1 else UOp(Ops.GROUP, src=stores)).end(i),))
  out_bufs = [UOp.buffer(dt, n) for dt, _ in outs]
  call = UOp(Ops.CALL, src=(body, *out_bufs, *bufs), arg="elementwise")
  return UOp(Ops.SINK, src=tuple(o.after(call) for o in out_bufs)), {b.arg.id: x for b, x in zip(bufs, ins)}


# ---- spec test builders ----
f32, i32, idx = dtypes.float32, dtypes.int32, dtypes.index
VOID = dtypes.void


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, VOID, tuple(xs))
def group(*xs: UOp) -> UOp: return UOp(Ops.GROUP, VOID, tuple(xs))
def call(body: UOp, *args: UOp, name: str | None = None) -> UOp: return UOp(Ops.CALL, VOID, (body, *args), name)
def tup(*xs: UOp) -> UOp: return UOp(Ops.TUPLE, VOID, tuple(xs))
def buf(n: int, dt=f32, id: int | None = None, addrspace=AddrSpace.GLOBAL, device: str = "CPU") -> UOp:
  return UOp.buffer(dt, n, device, addrspace, id=id)
def c(v, dt=f32) -> UOp: return UOp.const(dt, v)


def rng(bound: int | UOp, axis: int, dt=idx) -> UOp:
  """RANGE of dtype dt (index in kernels, a concrete int in programs)."""
  b = bound if isinstance(bound, UOp) else UOp.const(dt, bound)
  return UOp(Ops.RANGE, dt, (b,), UOp.range(1, axis).arg)


def ic(v: int, dt=idx) -> UOp: return UOp.const(dt, v)


# ---- kernels (bodies), parametrized by the integer dtype of their index arithmetic ----

def k_add(it=idx, n=4) -> UOp:
  """out[i] = a[i] + b[i]"""
  p0, p1, p2 = (UOp.param(i, f32, n) for i in range(3))
  r = rng(n, 0, it)
  st = p0.index(r).store(p1.index(r).load() + p2.index(r).load())
  return sink(st.end(r))


def k_2d(it=idx) -> UOp:
  """out[r0*4+r1] = a[r1*3+r0] * 2 (a transpose of a 3x4)"""
  p0, p1 = UOp.param(0, f32, 12), UOp.param(1, f32, 12)
  r0, r1 = rng(3, 0, it), rng(4, 1, it)
  st = p0.index(r0 * ic(4, it) + r1).store(p1.index(r1 * ic(3, it) + r0).load() * c(2.0))
  return sink(st.end(r1).end(r0))


def k_acc(it=idx) -> UOp:
  """out[r0] = sum over rr of a[r0*4+rr], with a REG accumulator in the exact form of docs/ir.md (after lower_reduce)."""
  p0, p1 = UOp.param(0, f32, 3), UOp.param(1, f32, 12)
  r0, rr = rng(3, 0, it), rng(4, 1, it)
  acc = buf(1, f32, addrspace=AddrSpace.REG)
  zero = ic(0, it)
  init = acc.after(r0).index(zero).store(c(0.0))
  val = p1.index(r0 * ic(4, it) + rr).load()
  upd = acc.index(zero).store(acc.after(init, rr).index(zero).load() + val).end(rr)
  read = acc.after(upd).index(zero).load()
  return sink(p0.index(r0).store(read).end(r0))


def k_reduce(it=idx) -> UOp:
  """out[r0] = sum over rr of a[r0*4+rr], with a range-form REDUCE (before lower_reduce)."""
  p0, p1 = UOp.param(0, f32, 3), UOp.param(1, f32, 12)
  r0, rr = rng(3, 0, it), rng(4, 1, it)
  red = UOp(Ops.REDUCE, f32, (p1.index(r0 * ic(4, it) + rr).load(), rr), Ops.ADD)
  return sink(p0.index(r0).store(red).end(r0))


def k_pad(it=idx) -> UOp:
  """out[r] = r >= 1 ? a[r-1] : 0 for r in 0..4 (a PAD as a gate): in bounds only thanks to the gate."""
  p0, p1 = UOp.param(0, f32, 5), UOp.param(1, f32, 4)
  r = rng(5, 0, it)
  gate = ic(0, it) < r
  st = p0.index(r).store(p1.index(r - ic(1, it)).load(c(0.0), gate))
  return sink(st.end(r))


def k_gated_store(it=idx) -> UOp:
  """out[r-2] = 1 where r >= 2, r in 0..5: a STORE in bounds only thanks to its gate."""
  p0 = UOp.param(0, f32, 4)
  r = rng(6, 0, it)
  st = p0.index(r - ic(2, it)).store(c(1.0), ic(1, it) < r)
  return sink(st.end(r))


def k_z3(it=idx) -> UOp:
  """out[2*r - r] = 1: interval bounds give [-3, 6] for the index, z3 proves it is r, within [0, 4)."""
  p0 = UOp.param(0, f32, 4)
  r = rng(4, 0, it)
  st = p0.index(r * ic(2, it) - r).store(c(1.0))
  return sink(st.end(r))


def k_divmod(it=idx) -> UOp:
  """out[(r//4)*4 + r%4] = a[r]"""
  p0, p1 = UOp.param(0, f32, 16), UOp.param(1, f32, 16)
  r = rng(16, 0, it)
  st = p0.index((r // ic(4, it)) * ic(4, it) + r % ic(4, it)).store(p1.index(r).load())
  return sink(st.end(r))


def k_group(it=idx) -> UOp:
  """two outputs written in one loop, grouped"""
  p0, p1, p2 = UOp.param(0, f32, 4), UOp.param(1, f32, 4), UOp.param(2, f32, 4)
  r = rng(4, 0, it)
  v = p2.index(r).load()
  return sink(group(p0.index(r).store(v), p1.index(r).store(-v)).end(r))


def k_special(it=idx) -> UOp:
  p0, p1 = UOp.param(0, f32, 8), UOp.param(1, f32, 8)
  g = UOp(Ops.SPECIAL, it, (ic(8, it),), "gidx0")
  return sink(p0.index(g).store(p1.index(g).load().alu(Ops.SQRT)))


def k_cast(it=idx) -> UOp:
  """out[r] = float(a[r] > 0) with an int32 input"""
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, i32, 4)
  r = rng(4, 0, it)
  st = p0.index(r).store((c(0, i32) < p1.index(r).load()).cast(f32))
  return sink(st.end(r))


def k_where_idx(it=idx) -> UOp:
  """out[r] = a[r < 2 ? r : 3 - r]"""
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(4, 0, it)
  i = (r < ic(2, it)).where(r, ic(3, it) - r)
  return sink(p0.index(r).store(p1.index(i).load()).end(r))


def k_tri(it=idx) -> UOp:
  """a triangular loop: r1 runs to r0 (its bound depends on r0)"""
  p0 = UOp.param(0, f32, 16)
  r0 = rng(4, 0, it)
  r1 = rng(r0 + ic(1, it), 1, it)
  return sink(p0.index(r0 * ic(4, it) + r1).store(c(1.0)).end(r1).end(r0))


def k_max_clamp(it=idx) -> UOp:
  """out[r] = a[max(r - 2, 0)] for r in 0..3"""
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(4, 0, it)
  return sink(p0.index(r).store(p1.index((r - ic(2, it)).maximum(ic(0, it))).load()).end(r))


KERNELS = {f.__name__: f for f in (k_add, k_2d, k_acc, k_reduce, k_pad, k_gated_store, k_z3, k_divmod, k_group, k_special, k_cast,
                                   k_where_idx, k_tri, k_max_clamp)}
PROGRAM_KERNELS = {n: f for n, f in KERNELS.items() if n != "k_reduce"}  # a REDUCE never reaches PROGRAM


def assert_breaks_exactly(root: UOp, stage: Stage, rules: set[str]) -> list:
  """check(root, stage) names exactly these rules, each message saying what is wrong, then what the stage expects."""
  vs = check(root, stage)
  assert {v.rule for v in vs} == rules, [str(v) for v in vs]
  assert all("; " in v.message for v in vs)
  return vs


def linear(ksink: UOp) -> UOp:
  """LINEAR of every node of a kernel sink in source order (valid for these kernels: their ranges are reached outermost first)."""
  return UOp(Ops.LINEAR, VOID, tuple(n for n in ksink.toposort() if n is not ksink))


def program(ksink: UOp, name: str = "k") -> UOp:
  return UOp(Ops.PROGRAM, VOID, (ksink, linear(ksink)), name)


def kgraph_of(body: UOp, out_id: int = 900) -> UOp:
  """A kernel graph running one kernel: arg k is a BUFFER the size and dtype of PARAM slot k."""
  from tinyspec.spec.shared import free_params
  params = {p.arg.slot: p for p in free_params(body)}
  bufs = [buf(params[k].arg.size, params[k].dtype, id=out_id + k) for k in range(len(params))]
  return sink(bufs[0].after(call(body, *bufs)))


# ---- hand-built kernel graphs ----
def matmul(M: int, K: int, N: int, dt: DType = dtypes.float32, op: Ops = Ops.ADD):
  """C = A @ B (or its MAX / MUL analogue) as one kernel: (root, A, B)."""
  A, B, C = UOp.buffer(dt, M * K), UOp.buffer(dt, K * N), UOp.buffer(dt, M * N)
  pc, pa, pb = UOp.param(0, dt, M * N), UOp.param(1, dt, M * K), UOp.param(2, dt, K * N)
  i, j, k = UOp.range(M, 0), UOp.range(N, 1), UOp.range(K, 2, AxisType.REDUCE)
  a, b = pa.index(i * K + k).load(), pb.index(k * N + j).load()
  v = a * b if op is Ops.ADD else a + b
  body = UOp(Ops.SINK, src=(pc.index(i * N + j).store(UOp(Ops.REDUCE, dt, (v, k), op)).end(i, j),))
  return UOp(Ops.SINK, src=(C.after(UOp(Ops.CALL, src=(body, C, A, B), arg="matmul")),)), A, B


def np_matmul(a: np.ndarray, b: np.ndarray, op: Ops) -> np.ndarray:
  if op is Ops.ADD: return a @ b
  s = a[:, :, None] + b[None, :, :]
  return s.max(axis=1) if op is Ops.MAX else s.prod(axis=1, dtype=s.dtype)


def two_stage_graph(n: int = 12):
  """y = relu(x * 3 - 5) then z[i] = y[n-1-i] + max_j y[j]: two kernels ordered by AFTER, a reduce in the second."""
  dt = dtypes.float32
  X, Y, Z = UOp.buffer(dt, n), UOp.buffer(dt, n), UOp.buffer(dt, n)
  i = UOp.range(n, 0)
  x = UOp.param(1, dt, n).index(i).load()
  y = (x * UOp.const(dt, 3.0) - UOp.const(dt, 5.0)).maximum(UOp.const(dt, 0.0))
  k1 = UOp(Ops.SINK, src=(UOp.param(0, dt, n).index(i).store(y).end(i),))
  c1 = UOp(Ops.CALL, src=(k1, Y, X), arg="relu")
  j = UOp.range(n, 1, AxisType.REDUCE)
  py = UOp.param(1, dt, n)
  flip = py.index(UOp.const(dtypes.index, n - 1) - i).load()
  red = UOp(Ops.REDUCE, dt, (py.index(j).load(), j), Ops.MAX)
  k2 = UOp(Ops.SINK, src=(UOp.param(0, dt, n).index(i).store(flip + red).end(i),))
  c2 = UOp(Ops.CALL, src=(k2, Z, Y.after(c1)), arg="flipmax")
  return UOp(Ops.SINK, src=(Z.after(c2), Y.after(c1))), X


# ---- random legal tensor graphs (Hypothesis) ----
@st.composite
def tensor_graphs(draw) -> UOp:
  """Random legal tensor graphs: elementwise ops and views on 4x4 float inputs, sometimes inside a value call."""
  xs = [buf(16).reshape((4, 4)) for _ in range(draw(st.integers(1, 3)))]
  for _ in range(draw(st.integers(1, 12))):
    a, b = draw(st.sampled_from(xs)), draw(st.sampled_from(xs))
    kind = draw(st.sampled_from(["add", "mul", "max", "neg", "permute", "flip", "where", "padshrink", "reshape", "reduce"]))
    if kind == "add": y = a + b
    elif kind == "mul": y = a * b
    elif kind == "max": y = a.maximum(b)
    elif kind == "neg": y = -a
    elif kind == "permute": y = a.permute((1, 0))
    elif kind == "flip": y = a.flip((draw(st.booleans()), draw(st.booleans())))
    elif kind == "where": y = (a < b).where(a, b)
    elif kind == "padshrink": y = a.pad(((1, 6), (0, 4))).shrink(((draw(st.integers(0, 2)), 4), (0, 4)))
    elif kind == "reshape": y = a.reshape((16,)).reshape((2, 8)).reshape((4, 4))
    else: y = a.reduce(Ops.ADD, 1).expand((4,)).permute((1, 0))
    xs.append(y)
  out = xs[-1]
  if draw(st.booleans()):
    p = UOp.param(0, f32, 16).reshape((4, 4))
    out = call(tup(p * p, p), out).gettuple(draw(st.integers(0, 1)))
  return sink(out, *draw(st.lists(st.sampled_from(xs), max_size=2)))


def interrupt_after_first_status(args: list[str], status_prefix: str, cwd) -> tuple[subprocess.Popen, str]:
  """Run `python -m tinyspec.cli ARGS`, send SIGINT once it prints its first status line (the campaign runs, whatever
  imports took), and return the ended process and all it printed."""
  env = {**os.environ, "PYTHONUNBUFFERED": "1"}
  p = subprocess.Popen([sys.executable, "-m", "tinyspec.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       cwd=cwd, env=env)
  lines: queue.Queue[str] = queue.Queue()
  reader = threading.Thread(target=lambda: [lines.put(ln) for ln in p.stdout], daemon=True)  # type: ignore[union-attr]
  reader.start()
  seen: list[str] = []
  while not any(ln.startswith(status_prefix) for ln in seen):
    try: seen.append(lines.get(timeout=60))
    except queue.Empty: p.kill(); raise AssertionError(f"no status line within 60 s: {seen}") from None
  p.send_signal(signal.SIGINT)
  p.wait(timeout=60)
  reader.join(timeout=10)
  return p, "".join(seen) + "".join(lines.queue)


def without_rule(monkeypatch, op: str) -> None:
  """The tinygrad bridge without op's translation rule, for one test. A filtered copy of RULES, not a delitem: restoring
  a deleted key appends it, which would reorder the table docs/tinygrad.md holds word for word."""
  from tinyspec.bridge.tinygrad import table
  monkeypatch.setattr(table, "RULES", {k: v for k, v in table.RULES.items() if k != op})

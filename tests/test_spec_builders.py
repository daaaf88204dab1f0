"""Graph builders shared by the spec tests (kernels in the exact forms of docs/ir.md), and tests of the builders' own claims."""
from __future__ import annotations

import pytest

from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.uop import AddrSpace

pytestmark = pytest.mark.spec

f32, i32, idx = dtypes.float32, dtypes.int32, dtypes.index
VOID = dtypes.void


def sink(*xs: UOp) -> UOp: return UOp(Ops.SINK, VOID, tuple(xs))
def group(*xs: UOp) -> UOp: return UOp(Ops.GROUP, VOID, tuple(xs))
def call(body: UOp, *args: UOp, name: str | None = None) -> UOp: return UOp(Ops.CALL, VOID, (body, *args), name)
def tup(*xs: UOp) -> UOp: return UOp(Ops.TUPLE, VOID, tuple(xs))
def buf(n: int, dt=f32, id: int | None = None, addrspace=AddrSpace.GLOBAL) -> UOp: return UOp.buffer(dt, n, id=id, addrspace=addrspace)
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


# ---- the builders' kernels are legal where they claim to be ----

@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_builders_legal_at_kernel(name):
  assert check(KERNELS[name](), Stage.KERNEL) == []


@pytest.mark.parametrize("name", sorted(PROGRAM_KERNELS))
def test_kernel_builders_legal_at_program(name):
  assert check(program(PROGRAM_KERNELS[name](i32)), Stage.PROGRAM) == []

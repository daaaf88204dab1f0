"""The C renderer of the CPU backend: C99 compiled with -fwrapv, so signed arithmetic wraps as the evaluator says.

The outermost GLOBAL loop of a kernel runs as OpenMP threads (`#pragma omp parallel for`, its iterations are
independent by kernel.thread_independent) when it runs enough instructions to be worth threads (parallel_min_work);
a compiler without OpenMP ignores the pragma and runs it as a loop.

An ATOMIC is a C11 atomic on the element's bits (relaxed order: an update orders nothing else): integer ADD is one
fetch-and-add on the unsigned twin, which wraps as two's complement; MAX, and ADD of floats, are a compare-and-swap
loop that computes op(old, v) with render_alu's spelling and swaps the bits in when the element still holds old. The
swap compares bits, not values, so a NaN element never makes the loop spin and -0.0 is replaced by 0.0. tcc has no
C11 atomics (no stdatomic.h, no _Atomic, no __atomic builtins): under tcc on x86-64 the same primitives are `lock`
prefixed instructions in inline assembly; tcc on another machine stops at an #error saying so.
"""
from __future__ import annotations

from tinyspec.dtype import DType
from tinyspec.render.cstyle import CStyleRenderer, register
from tinyspec.uop import Ops

# the bits an atomic of each width swaps; may_alias: a float element is read and written through them
BITS_TYPEDEF = """#if defined(__GNUC__) && !defined(__TINYC__)
typedef uint{w}_t __attribute__((may_alias)) ts_bits{w};
#else
typedef uint{w}_t ts_bits{w};
#endif"""

# the atomic primitives on w-bit words: load, fetch-and-add, weak compare-and-swap (on failure *expected is the element)
PRIMITIVES = """#if !defined(__TINYC__)
static inline uint{w}_t ts_atomic_load{w}(ts_bits{w}* p) {{ return atomic_load_explicit((_Atomic ts_bits{w}*)p, memory_order_relaxed); }}
static inline void ts_atomic_add{w}(ts_bits{w}* p, uint{w}_t v) {{ atomic_fetch_add_explicit((_Atomic ts_bits{w}*)p, v, memory_order_relaxed); }}
static inline int ts_atomic_cas{w}(ts_bits{w}* p, uint{w}_t* expected, uint{w}_t desired) {{
  return atomic_compare_exchange_weak_explicit((_Atomic ts_bits{w}*)p, expected, desired, memory_order_relaxed, memory_order_relaxed);
}}
#elif defined(__x86_64__)
static inline uint{w}_t ts_atomic_load{w}(ts_bits{w}* p) {{ return *(volatile ts_bits{w}*)p; }}
static inline void ts_atomic_add{w}(ts_bits{w}* p, uint{w}_t v) {{ __asm__ __volatile__("lock; xadd{s} %0, %1" : "+r"(v), "+m"(*p) : : "memory"); }}
static inline int ts_atomic_cas{w}(ts_bits{w}* p, uint{w}_t* expected, uint{w}_t desired) {{
  uint{w}_t old;
  __asm__ __volatile__("lock; cmpxchg{s} %2, %1" : "=a"(old), "+m"(*p) : "r"(desired), "0"(*expected) : "memory");
  if (old == *expected) return 1;
  *expected = old;
  return 0;
}}
#else
#error "tcc has no C11 atomics (stdatomic.h, _Atomic); its atomic updates are inline x86-64 assembly, and this is not x86-64"
#endif"""


class CRenderer(CStyleRenderer):
  lang = "c"
  headers = ("stdint.h", "math.h", "string.h")
  parallel_pragma = "#pragma omp parallel for"
  # waking threads costs tens of microseconds (more when other processes hold the cores): a loop of fewer
  # instructions than this runs in the calling thread
  parallel_min_work = 1 << 17

  def prelude(self) -> list[str]:
    # stdatomic.h only where a kernel updates atomically: other kernels' sources (and their cached objects) stay as they were
    return super().prelude() + (["#ifndef __TINYC__\n#include <stdatomic.h>\n#endif"] if self.atomics else [])

  def atomic_primitives(self, bits: int) -> None:
    """Make the w-bit primitives (and the type they work on) part of the kernel's helpers."""
    self.helpers[f"ts_bits{bits}"] = BITS_TYPEDEF.format(w=bits)
    self.helpers[f"ts_atomic{bits}"] = PRIMITIVES.format(w=bits, s="l" if bits == 32 else "q")

  def render_atomic(self, op: Ops, dt: DType, ptr: str, v: str, arg: bool) -> str:
    # a declared buffer is one thread's copy (firstprivate) but still updated atomically: it costs little, and stays
    # right should threads ever share it
    w = dt.bits
    self.atomic_primitives(w)
    if op is Ops.ADD and not dt.is_float: return f"ts_atomic_add{w}((ts_bits{w}*)({ptr}), (uint{w}_t)({v}));"
    fn = f"ts_atomic_{op.name.lower()}_{dt.name}"
    t = self.type_name(dt)
    # compare-and-swap until the element still held what op combined with v; nothing to store when op leaves it as it is
    self.helpers[fn] = "\n".join([
      f"static inline void {fn}({t}* p, {t} v) {{",
      f"  ts_bits{w}* q = (ts_bits{w}*)p;",
      f"  uint{w}_t old = ts_atomic_load{w}(q), upd;",
      "  do {",
      f"    {t} a, r;",
      "    memcpy(&a, &old, sizeof(a));",
      f"    r = {self.combine(op, dt, 'a', 'v')};",
      "    memcpy(&upd, &r, sizeof(upd));",
      "    if (upd == old) return;",
      f"  }} while (!ts_atomic_cas{w}(q, &old, upd));",
      "}"])
    return f"{fn}({ptr}, {v});"


register("c", CRenderer)

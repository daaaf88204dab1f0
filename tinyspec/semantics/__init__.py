"""The reference evaluator: the numpy meaning of every op at every stage, so any intermediate graph can be run.

    evaluate(root, inputs=None, kernel_runner=None) -> list[np.ndarray | None] | np.ndarray
    evaluate_kernel(body, args) -> None

Values and storage
  A value is a numpy array of the node's shape in the dtype's numpy type (`index` is int64). BUFFER and PARAM are
  flat storage. Reading a BUFFER as a value gives its contents as given in `inputs` (zeros when absent), whatever
  was stored into it later; AFTER(storage, deps...) gives the storage's contents once its deps have run. A STORE
  writes its value through a view of storage (BUFFER, PARAM, AFTER, CONTIGUOUS, or movement ops over one) into the
  storage; elements of the target that lie in PAD regions are not written, and where a view maps several elements
  to one storage element (EXPAND) the last in row-major order wins. CONTIGUOUS used as storage is a fresh buffer
  holding its source's value. DETACH and COPY are the identity on values.

Order
  Nodes run in a topological order, sources first (src[0] before src[1] ...); AFTER is the only way to order an
  effect before a read of the storage it writes. Every effect runs once.

Calls
  CALL(TUPLE(...), args...) evaluates the TUPLE in a new scope whose PARAM slot k is a private flat copy of arg k's
  value; GETTUPLE reads output i. A PARAM belongs to the innermost CALL body it is reached from. Any other body makes
  a void call whose args are storage passed by reference (PARAM slot k is arg k's array, so the call mutates it):
  a kernel body (a SINK holding range-form ops, a LINEAR, or a PROGRAM) runs through `kernel_runner(call, args)`
  when one is given, else `evaluate_kernel`; a SINK without range-form ops is a nested kernel graph evaluated in
  the new scope; a COPY body writes its source's value into arg 0. A call arg that is a computed value or a view
  gets a scratch copy.

Kernels (vectorized; tinyspec/semantics/kernel.py)
  Each RANGE or SPECIAL is an axis of a broadcast index array; a value depends only on the ranges it uses. A
  PROGRAM runs its LINEAR's last node (its kernel SINK), or src[0] when there is no LINEAR. LOAD(idx, alt, gate)
  gives alt where the gate is false and never reads there. An index outside [0, size) where the gate holds raises
  EvalError. REDUCE(value, ranges...) reduces over those ranges; a range the value does not use still counts its
  iterations (ADD of a constant over n iterations is n times it). BUFFERs in a kernel body (REG accumulators) start
  as zeros and are private to the iterations of every range except those of the ENDs right around the STORE that
  writes them (ENDs reached from the STORE through END and GROUP only): loops outside the accumulator's own loop
  each get their own copy.
  A STORE runs for all iterations at once. When several iterations write one element (the index does not depend on
  some range of the value or the gate, or on a range of an END right around a REG store):
  - if its value is op(LOAD(same storage, same index node), x) with op ADD, MUL or MAX and x does not read that
    storage (the accumulator update lower_reduce produces), x is reduced with op over those iterations and then
    combined into the element: a sequential accumulation, up to float rounding order;
  - otherwise the last iteration wins, ordering iterations by range axis (first-seen range outermost), counting
    only iterations whose gate holds.
  Two different index values of one STORE that hit one element: the last in row-major order wins (accumulator
  updates add them all).

Integers and floats (C semantics, and a fixed choice where C leaves it undefined)
  - Fixed-width ints wrap (two's complement), including NEG, ADD, MUL, SHL, REDUCE and CAST between ints.
  - IDIV and MOD truncate toward zero as C: a == (a IDIV b) * b + (a MOD b). MIN IDIV -1 wraps to MIN, MOD gives 0.
    Division by zero: a IDIV 0 == 0 and a MOD 0 == a. Float IDIV is trunc(a / b); float MOD is fmod.
  - SHL and SHR take the count modulo the width (count & (bits - 1), as x86 does); SHR is arithmetic on signed
    types and logical on unsigned; SHL on signed shifts the two's complement bits and wraps.
  - CAST float -> int truncates toward zero; NaN gives 0 and values past the target's range (inf included)
    saturate to its min or max. Anything -> bool is x != 0. bool -> number is 0 or 1. BITCAST reinterprets bits
    (same item size; otherwise EvalError).
  - Bool arithmetic is C's (bool)(a op b): ADD and MAX are OR, MUL is AND, SUB is XOR, NEG is NOT.
  - Float math runs in the node's own dtype (float32 stays float32). MAX propagates NaN. RECIP of 0 is inf.
  - REDUCE combines in the value's dtype (ints wrap); over zero elements it gives the identity (0, 1, or the
    dtype's minimum / -inf for MAX).
  Numpy warnings are suppressed; undefined points never crash.

Errors
  A malformed graph raises EvalError (from tinyspec.semantics.alu) whose message starts with the node's op and
  dtype and says what is wrong.
"""
from tinyspec.semantics.alu import EvalError
from tinyspec.semantics.graph import evaluate, is_kernel_body
from tinyspec.semantics.kernel import evaluate_kernel

__all__ = ["evaluate", "evaluate_kernel", "EvalError", "is_kernel_body"]

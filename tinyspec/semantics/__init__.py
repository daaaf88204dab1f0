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
  when one is given, else `evaluate_kernel`; a SINK of storage entries is a nested kernel graph evaluated in the new
  scope; a SINK of tensor-level effects (a precompiled call at TENSOR: STOREs of tensor values into its PARAMs) runs in
  the new scope too, so its STOREs write the args' storage; a COPY body writes its source's value into arg 0. An arg
  that is storage seen through AFTERs and RESHAPEs is that storage; a computed value or any other view gets a scratch
  copy.

Kernels (C's memory semantics; tinyspec/semantics/loops.py and kernel.py)
  A kernel body runs as its generated C code does. A PROGRAM runs its LINEAR in the listed order: RANGE opens a loop
  over 0..bound-1, END closes the innermost open loops (one per range it names), every other node runs each time its
  place is reached (a PROGRAM without a LINEAR runs its kernel SINK). A kernel SINK runs in the order linearize gives
  it: every REDUCE(value, ranges...) first becomes lower_reduce's accumulator loop (docs/ir.md), so it accumulates
  sequentially over those ranges in loop order and a range the value does not use still counts its iterations; a
  RANGE closed by several ENDs is a separate loop in each; END(x, r0, r1, ...) runs r0 outermost; a node runs inside
  the loops of the ranges it depends on that no END closes, and outside all others (so a LOAD that names no range
  of a loop runs once, before it, even when the loop stores to that element; AFTER(storage, deps...) is how a load is
  placed after stores and inside loops); within a loop body, the order of a depth-first walk from the SINK, sources
  first. A statement runs once per iteration of its loops, in C's order; every LOAD sees every store that ran before
  it, so when several iterations write one element the last in that order wins, and a loop that reads what an
  earlier iteration wrote sees it.
  LOAD(idx, alt, gate) gives alt where the gate is false and never reads there (0 when the gate is the INDEX's own).
  STORE(idx, value, gate) writes only where the gate holds. An index outside [0, size) where the gate holds raises
  EvalError. A BUFFER in a kernel body (a REG or LOCAL accumulator) is one array, as the C declaration at its place
  is: zeros when its declaration runs (C leaves it uninitialised: a kernel that reads it before storing has no C
  result to match), then shared by every later iteration; lower_reduce's form initialises it inside the outer loops.
  Two PARAM slots given the same array are one storage. A SPECIAL (GPU thread index) runs all its threads at once;
  threads that write an element another thread reads or writes raise EvalError, as their order is undefined.
  Forms with no such execution raise EvalError naming the node: a loop bound that depends on a loaded value or on
  another range, a LOAD or STORE whose target is not an INDEX, a RANGE that no END closes or ranges used where
  their loops are not nested, a REDUCE inside a LINEAR.
  A loop nest (its loops' bounds times the kernel's threads) of more than MAX_ITERATIONS iterations (2^26, or
  $TINYSPEC_MAX_ITERATIONS; tinyspec.semantics.kernel) raises EvalError before it runs.
  Execution is vectorized where that provably gives the same result (kernel.py's docstring): a loop whose iterations
  touch pairwise disjoint elements of everything they write (an accumulator written first in every iteration counts
  as one private copy per iteration) runs all its iterations at once, the others run in order. A reduction runs one
  numpy step per reduce iteration over all its outer iterations.

Op meanings
  Every op's meaning is the registry's (tinyspec/ops: C semantics, and the value tinyspec gives each point C leaves
  undefined), as docs/spec.md's op table states it; an op outside the dtype classes it accepts is an EvalError.
  Numpy warnings are suppressed; undefined points never crash.

Errors
  A malformed graph raises EvalError (from tinyspec.semantics.alu) whose message starts with the node's op and
  dtype and says what is wrong.
"""
from tinyspec.semantics.alu import EvalError
from tinyspec.semantics.graph import evaluate
from tinyspec.uop import is_kernel_body
from tinyspec.semantics.kernel import evaluate_kernel

__all__ = ["evaluate", "evaluate_kernel", "EvalError", "is_kernel_body"]

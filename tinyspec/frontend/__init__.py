"""tinygrad 0.14's Tensor API over UOps, and @function, which traces a Python function of Tensors into a value CALL.

tensor.py is the core (construction, dtypes, broadcasting, the IR's elementwise ops, views, REDUCE); the rest of the
API is built from it, in modules named for what they hold: creation, math (elementwise math and activations), reduce
(reductions and scans), sort, movement (layout), indexing, nn, losses. Importing this package attaches them all to Tensor;
tinyspec.frontend.api lists the result (README.md's "Tensor API").

    from tinyspec.frontend import Tensor, function, inputs_of

A Tensor made from data is RESHAPE(BUFFER); its data is kept in a registry keyed by buffer id, so `inputs_of(root)`
gives the {buffer id: array} a graph needs and `.numpy()` can evaluate (`with data_scope():` forgets the data of the
Tensors made inside it, for code that builds many throwaway graphs). Conventions (documented choices):
- dtypes: Python bools -> bool, ints -> int32, floats -> float32; numpy arrays keep their dtype (float64, float16 and
  ml_dtypes' bfloat16 and fp8 dtypes included); data given a small float dtype is converted by
  tinyspec.dtype.round_float (fp8 saturates). Binary ops promote to the least upper bound in tinygrad 0.14's lattice
  (`promote` in promotion.py, the one table): bool < ints < fp8 < float16, bfloat16 < float32 < float64; two ints of
  one signedness -> the wider; signed with unsigned -> a signed type wide enough for both, and a signed int with
  uint64 -> float32 (tinygrad's weakfloat, which realizes as its default float); any float wins over ints;
  two different fp8 dtypes -> float16; float16 with bfloat16 -> float32. A Python scalar takes the tensor's
  dtype, except a float scalar with an int/bool tensor (float32) and an int scalar with a bool tensor (int32).
- Small floats (as tinygrad 0.14): float16 and bfloat16 ops are the IR's (computed in float32, rounded back after
  every op); exp and cos compute in float32 and cast back. The IR has no fp8 arithmetic, so an op on fp8 is built as
  tinygrad computes it: its operands cast to float32, the result cast back to the fp8 dtype (comparisons give bool);
  ops no float takes (`&`, `<<`, ...) raise TypeError naming the dtype. sum and mean of a small float accumulate in
  float32 and cast back (tinygrad's sum_acc_dtype; mean divides in float32), so matmul, conv2d and einsum (products
  rounded to the dtype, then summed) accumulate in float32 too; max keeps the dtype (fp8's max and prod combine in
  float32, rounded once). Gradients flow through casts into and out of small floats (a gradient into a cast is cast
  to its source's dtype), and a broadcast's gradient of a small float sums in float32.
- Every node the frontend builds is legal at TENSOR: an op on a dtype it does not take (the op registry,
  tinyspec.ops, decides) raises TypeError naming the op and the dtype, e.g. `&`, `|`, `^`, `~`, `<<`, `>>` on floats,
  `-` on bools. On bools `+` is logical or and `*` logical and, as in numpy and tinygrad.
- `/` is true division (ints and bools are cast to float32 first) computed as a * RECIP(b). `//` and `%` floor as
  Python's do, on ints and floats alike (tinygrad 0.14's Tensor semantics): -7 // 2 == -4, -7 % 2 == 1,
  7.5 // -2.0 == -4.0, 7.5 % -2.0 == -0.5, with Python's signed zeros. Ints use the IR's truncating IDIV and MOD with a
  sign correction; by the IR's a IDIV 0 == 0 and a MOD 0 == a, `a // 0` is -1 for a < 0 and 0 otherwise and
  `a % 0 == a`. Floats (the IR has no float IDIV or MOD) start from floor(a * (1/b)) and correct it by the
  remainder; `a // 0.0` is +-inf (nan for 0/0) and `a % 0.0` nan, as numpy gives.
- Axes: negative axes count from the end; an axis out of range raises IndexError (never wraps). On a 0-d tensor a
  reduction (sum, prod, max, min, mean, argmax, cumsum, softmax, ...) takes axis 0 or -1 and returns the value, as
  numpy's ufunc reductions and tinygrad do; axis None or () reduces nothing there. argmax and argmin with axis None
  index the flattened tensor; cumsum's default axis is 0 (tinygrad's).
- `Tensor.arange` picks float32 when an argument is a float, else int32, or int64 when int32 cannot hold every value;
  a dtype that cannot hold them raises OverflowError.
- Broadcasting follows numpy and is lowered to RESHAPE, EXPAND (which prepends dims) and PERMUTE.
- sum returns tinygrad's accumulation dtype: int32 for bools and narrower signed ints, uint32 for narrower unsigned
  ints, the dtype itself otherwise (`dtype=` overrides); prod keeps the dtype; integer sums wrap. mean, var and std
  give float32 for integer input; var and std take `correction` (default 1).
- transpose() and .T swap the first two axes (tinygrad's defaults dim0=1, dim1=0).
- Bounded variables (`UOp.variable(name, lo, hi)`, bound with `.bind(value)`) are integer scalars: as an operand one is
  promoted as a Python int is (it takes the tensor's dtype, int32 with a bool tensor), so `x * n` casts n; as an index
  `x[n]` selects the element at n along that axis (a sum of a one-hot mask: the IR has no gather), with n's bounds
  inside the axis (not together with index tensors). Shapes stay concrete: `Tensor.arange(n)` with a variable n needs
  symbolic shapes, which tinyspec's IR does not have.
"""
from tinyspec.frontend import creation, devices, indexing, losses, math, movement, nn, reduce, sort  # noqa: F401  (each attaches its ops to Tensor)
from tinyspec.frontend.function import function
from tinyspec.frontend.tensor import Tensor, data_scope, inputs_of

__all__ = ["Tensor", "data_scope", "function", "inputs_of"]

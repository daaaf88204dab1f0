"""A small Tensor API over UOps, and @function, which traces a Python function of Tensors into a value CALL.

    from tinyspec.frontend import Tensor, function, inputs_of

A Tensor made from data is RESHAPE(BUFFER); its data is kept in a registry keyed by buffer id, so `inputs_of(root)`
gives the {buffer id: array} a graph needs and `.numpy()` can evaluate. Conventions (documented choices):
- dtypes: Python bools -> bool, ints -> int32, floats -> float32; numpy arrays keep their dtype (float64 included).
  Binary ops promote: bool < ints < floats; two ints of one signedness -> the wider; signed with unsigned -> a signed
  type wide enough for both (int64 at most); any float wins over ints; float32 with float64 -> float64. A Python
  scalar takes the tensor's dtype, except a float scalar with an int/bool tensor (float32) and an int scalar with a
  bool tensor (int32).
- `/` is true division (ints are cast to float32 first) computed as a * RECIP(b). `//` is IDIV and `%` is MOD: both
  truncate toward zero as C does, not as Python floors.
- Broadcasting follows numpy and is lowered to RESHAPE, EXPAND (which prepends dims) and PERMUTE.
- sum and prod keep the dtype (bool sums as int32); integer sums wrap.
"""
from tinyspec.frontend.function import function
from tinyspec.frontend.tensor import Tensor, inputs_of

__all__ = ["Tensor", "function", "inputs_of"]

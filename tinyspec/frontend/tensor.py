"""The Tensor class: graph building over UOps with numpy-style broadcasting and dtype promotion."""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from tinyspec.autograd import set_tensor_grad, tensor_backward, tensor_grad
from tinyspec.dtype import DType, dtypes, round_float
from tinyspec.frontend.promotion import default_dtype, promote, scalar_dtype
from tinyspec.ops import accepts, dtype_error
from tinyspec.ops.classes import reduce_accepts
from tinyspec.runtime import run
from tinyspec.semantics import evaluate
from tinyspec.uop import GroupOp, Ops, UOp, device_conflict

# data of BUFFERs made from Python data, by buffer id; graphs only name buffers, this is where their contents live
_BUFFER_DATA: dict[int, np.ndarray] = {}


def inputs_of(root: UOp) -> dict[int, np.ndarray]:
  """{buffer id: data} for every BUFFER under root that a Tensor was made from (call bodies included)."""
  return {u.arg.id: _BUFFER_DATA[u.arg.id] for u in root.toposort() if u.op is Ops.BUFFER and u.arg.id in _BUFFER_DATA}


@contextmanager
def data_scope() -> Iterator[None]:
  """The data of Tensors made inside the block is forgotten when it ends (take what you keep with inputs_of inside):
  for code that builds many throwaway graphs, like a fuzzer's generator, so the registry does not grow with every one."""
  before = set(_BUFFER_DATA)
  try: yield
  finally:
    for k in [k for k in _BUFFER_DATA if k not in before]: del _BUFFER_DATA[k]


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
  n = max(len(s) for s in shapes)
  out = []
  for dims in zip(*((1,) * (n - len(s)) + tuple(s) for s in shapes)):
    big = {d for d in dims if d != 1}
    if len(big) > 1: raise ValueError(f"shapes {shapes} do not broadcast")
    out.append(big.pop() if big else 1)
  return tuple(out)


def is_variable(x: Any) -> bool:
  """A bounded variable as an operand: a DEFINE_VAR, or one bound to a value (BIND)."""
  return isinstance(x, UOp) and x.op in GroupOp.Variable


def broadcast_uop(u: UOp, shape: tuple[int, ...]) -> UOp:
  """u broadcast to shape with RESHAPE, EXPAND (prepending the broadcast axes) and PERMUTE."""
  s = u.shape
  if s == tuple(shape): return u
  if len(shape) < len(s): raise ValueError(f"cannot broadcast {s} to {shape}")
  full = (1,) * (len(shape) - len(s)) + tuple(s)
  for d, t in zip(full, shape):
    if d != t and d != 1: raise ValueError(f"cannot broadcast {s} to {shape}")
  grow = [i for i, (d, t) in enumerate(zip(full, shape)) if d != t]
  keep = [i for i in range(len(shape)) if i not in grow]
  x = u.reshape(tuple(full[i] for i in keep)) if tuple(full[i] for i in keep) != s else u
  if grow: x = x.expand(tuple(shape[i] for i in grow))
  order = grow + keep  # the target axis each current axis holds
  perm = tuple(order.index(i) for i in range(len(shape)))
  if perm != tuple(range(len(shape))): x = x.permute(perm)
  return x


def _axis(axis: Any, ndim: int, scalar_ok: bool = True) -> int:
  """axis in [0, ndim). Negative axes count from the end. On a 0-d tensor a reduction (scalar_ok) takes axis 0 or -1
  and reduces nothing, as numpy's ufunc reductions and tinygrad do; movement ops (permute, flip) take no axis there."""
  if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)): raise TypeError(f"axis must be an int, not {axis!r}")
  n = max(ndim, 1) if scalar_ok else ndim
  if not -n <= axis < n:
    valid = f"[{-n}, {n - 1}]" if n else "none"
    raise IndexError(f"axis {int(axis)} is out of range for a tensor of {ndim} dims (valid axes: {valid})")
  return int(axis) % n


def _norm_axes(axis: int | Sequence[int] | None, ndim: int, scalar_ok: bool = True) -> tuple[int, ...]:
  """The sorted axes named by axis (None: all). On a 0-d tensor every valid axis names the tensor itself: ()."""
  if axis is None: return tuple(range(ndim))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out = [_axis(a, ndim, scalar_ok) for a in axes]
  if len(set(out)) != len(out): raise ValueError(f"repeated axis in {axis}")
  return tuple(sorted(out)) if ndim else ()


def _le(x: Tensor, y: Tensor) -> Tensor:
  # x <= y that is False when either is NaN (the user-facing <= is not(x > y), as tinygrad's, and is True for NaN)
  return (x < y) | (x == y)


def _int_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  """Floor division and modulo of integers (same dtype and shape) from the IR's truncating IDIV and MOD.

  Truncation and floor differ exactly when the remainder is nonzero and its sign differs from b's: then the quotient
  is one lower and the remainder is r + b. With the IR's a IDIV 0 == 0 and a MOD 0 == a, this gives a // 0 == -1 for
  a < 0 and 0 otherwise, and a % 0 == a (tinygrad 0.14's PYTHON backend gives the same; its CPU backend traps)."""
  q, r = a._alu(Ops.IDIV, b), a._alu(Ops.MOD, b)
  if not a.dtype.is_signed: return q, r
  fix = (r != 0) & ((r < 0) != (b < 0))
  return fix.where(q - 1, q), fix.where(r + b, r)


def _float_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  """Floor division and modulo of floats (same dtype and shape) with Python's results, from ops the IR has on floats.

  The IR has no float IDIV, MOD or exact division, so the quotient starts as floor(a * (1/b)), which is tinygrad's
  result. That product can round across an integer (41 * (1/41) < 1 in float32), so the remainder a - q*b then
  corrects q by one wherever it falls outside [0, b) (or (b, 0] for b < 0), as Python's fmod-based result would.
  Signed zeros follow Python: the quotient's zero has the sign of a/b, a zero remainder has b's sign.
  Remaining differences from Python: a // 0.0 is +-inf or nan (numpy's answer; Python raises), inf // b is +-inf
  where Python gives nan, and a quotient within rounding of an integer whose remainder rounds to zero keeps the
  rounded quotient (0.3 // 0.1 is 3.0 in float32, as in tinygrad, where Python's float64 gives 2.0)."""
  d = a * b.reciprocal()
  t = d.trunc()
  q0 = (d < t).where(t - 1, t)
  # a quotient of zero leaves a itself as the remainder, exact, and defined for b = +-inf (a - 0 * inf is nan)
  r0 = (q0 == 0).where(a, a - q0 * b)
  neg = b < 0
  up = neg.where(_le(r0, b), _le(b, r0))
  down = neg.where(r0 > 0, r0 < 0)
  # where, not q0 + up - down: adding 0.0 would turn a quotient of -0.0 into 0.0
  q = up.where(q0 + 1, down.where(q0 - 1, q0))
  r = (q == 0).where(a, a - q * b)
  zero = neg.where(Tensor.full((), -0.0, a.dtype), Tensor.full((), 0.0, a.dtype))
  return q, (r == 0).where(zero, r)


def _leaves(data: Any) -> list[Any]:
  """The scalars of nested lists and tuples (data itself when it is a scalar)."""
  if isinstance(data, (list, tuple)): return [x for d in data for x in _leaves(d)]
  return [data]


def _is_int(x: Any) -> bool: return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_int_range(leaves: list[Any], dt: DType) -> None:
  """ValueError for an integer that dt cannot hold. Such a value is a mistake in the data, so it is not wrapped
  (tinygrad wraps it, numpy 2 rejects it with an OverflowError)."""
  if dt.kind not in "iu": return
  for x in leaves:
    if _is_int(x) and not dt.min <= int(x) <= dt.max:
      raise ValueError(f"Tensor data {int(x)} does not fit in {dt.name} (range {dt.min}..{dt.max}); pass a dtype that holds it")


def _python_data(data: Any, dtype: DType | None) -> tuple[Any, DType]:
  """Python data (nested lists, scalars) and its dtype: the given one, or bool for all bools, int32 for ints (with
  bools), float32 when any scalar is a float, float32 for no data. Integers stay Python ints until numpy converts them
  straight to the dtype: an intermediate array would turn ints above 2**63 into float64 and lose their low bits."""
  leaves = _leaves(data)
  ints = bool(leaves) and all(_is_int(x) or isinstance(x, (bool, np.bool_)) for x in leaves)
  if ints:
    dt = dtype or (dtypes.int32 if any(_is_int(x) for x in leaves) else dtypes.bool)
    _check_int_range(leaves, dt)
    return data, dt
  arr = np.array(data)
  if arr.dtype == object: raise TypeError(f"cannot make a Tensor from {type(data).__name__}")
  _check_int_range(leaves, dtype or dtypes.float32)
  if dtype is not None: return data, dtype
  flat = arr.reshape(-1)
  dt = default_dtype(flat[0].item()) if flat.size else dtypes.float32
  return arr, dtypes.float32 if arr.dtype.kind == "f" else dt


class Tensor:
  """A lazily built tensor: `uop` is its graph. Made from numpy arrays, Python lists and scalars, or a UOp.

  Python ints in data keep their exact value in any integer dtype (uint64 up to 2**64-1); one the dtype cannot hold
  is a ValueError, where tinygrad wraps it. A numpy array is converted with numpy's own casting."""
  __slots__ = ("uop", "__weakref__")
  __hash__ = object.__hash__

  def __init__(self, data: Any, dtype: DType | None = None, device: str = "CPU"):
    if isinstance(data, UOp):
      if data.shape is None: raise ValueError(f"a Tensor needs a value with a shape, not {data.op.name}")
      self.uop = data if dtype is None or dtype is data.dtype else data.cast(dtype)
      return
    if isinstance(data, Tensor):
      self.uop = data.uop if dtype is None else data.cast(dtype).uop
      return
    if isinstance(data, np.ndarray): dt = dtype or dtypes.from_np(data.dtype)
    else: data, dt = _python_data(data, dtype)
    if dt is dtypes.void or dt is dtypes.index: raise TypeError(f"a data Tensor cannot have dtype {dt.name}")
    # into a small float by the one meaning of the conversion (fp8 saturates; numpy's ml_dtypes casts would not)
    if dt.is_small_float: arr = round_float(np.asarray(data), dt).copy()
    else:
      with np.errstate(all="ignore"): arr = np.array(data, dtype=dt.np).copy()
    buf = UOp.buffer(dt, arr.size, device)
    _BUFFER_DATA[buf.arg.id] = arr.reshape(-1)
    self.uop = buf.reshape(arr.shape)

  # ---- properties ----
  @property
  def shape(self) -> tuple[int, ...]: return self.uop.shape
  @property
  def dtype(self) -> DType: return self.uop.dtype
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return math.prod(self.shape)
  @property
  def device(self) -> str | tuple[str, ...] | None: return self.uop.device
  def __repr__(self) -> str: return f"<Tensor {self.uop.op.name} {self.shape} {self.dtype.name}>"
  def __len__(self) -> int: return self.shape[0]

  # ---- creation ----
  @staticmethod
  def full(shape: tuple[int, ...] | int, value: Any, dtype: DType | None = None) -> Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(d < 0 for d in shape): raise ValueError(f"negative dimension in shape {shape}")
    dt = dtype or default_dtype(value)
    if not accepts(Ops.CAST, dt): raise TypeError(f"a Tensor cannot hold {dt.name}: {dtype_error(Ops.CAST, dt)}")
    c = UOp.const(dt, value)
    return Tensor(c.expand(shape) if shape else c)

  @staticmethod
  def zeros(shape: tuple[int, ...] | int, dtype: DType = dtypes.float32) -> Tensor: return Tensor.full(shape, 0, dtype)
  @staticmethod
  def ones(shape: tuple[int, ...] | int, dtype: DType = dtypes.float32) -> Tensor: return Tensor.full(shape, 1, dtype)

  @staticmethod
  def arange(start: int | float, stop: int | float | None = None, step: int | float = 1, dtype: DType | None = None) -> Tensor:
    """start, start+step, ... below stop (above it for a negative step); built as a prefix sum of a constant (no buffer).

    The dtype is tinygrad's: float32 when any argument is a float, else int32, or int64 when int32 cannot hold every
    value. A dtype (given or picked) that cannot hold every value raises OverflowError."""
    if stop is None: start, stop = 0, start
    if step == 0: raise ValueError("arange step must not be zero")
    floats = any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
    # exact integer arithmetic for int ranges: a float quotient rounds past 2**53
    n = max(0, math.ceil((stop - start) / step) if floats else -((start - stop) // step))
    lo, hi = sorted((start, start + (n - 1) * step)) if n else (start, start)
    dt = dtype or (dtypes.float32 if floats else dtypes.int32)
    if dtype is None and dt is dtypes.int32 and not dt.min <= lo <= hi <= dt.max: dt = dtypes.int64
    if not dt.min <= lo <= hi <= dt.max: raise OverflowError(f"arange({start}, {stop}, {step}) has values outside {dt.name}")
    if n == 0: return Tensor.full((0,), 0, dt)
    # start - step may fall outside dt; integer ops wrap, so every value the sum lands on is exact
    return (Tensor.full((n,), step, dt).cumsum() + (start - step)).cast(dt)

  @staticmethod
  def sink(*tensors: Tensor | UOp) -> UOp:
    """The root SINK of these tensors' graphs."""
    return UOp(Ops.SINK, src=tuple(t.uop if isinstance(t, Tensor) else t for t in tensors))

  def inputs(self) -> dict[int, np.ndarray]:
    """{buffer id: data} for the buffers this tensor's graph reads."""
    return inputs_of(self.uop)

  # ---- evaluation ----
  def numpy(self, backend: str = "reference") -> np.ndarray:
    root = Tensor.sink(self)
    inputs = inputs_of(root)
    out = evaluate(root, inputs)[0] if backend == "reference" else run(root, inputs, backend)[0]
    return np.asarray(out).reshape(self.shape)

  def tolist(self) -> Any: return self.numpy().tolist()
  def item(self) -> Any: return self.numpy().item()

  # ---- helpers ----
  def _wrap(self, x: Any, dtype: DType | None = None) -> Tensor:
    if isinstance(x, Tensor): return x
    if isinstance(x, (bool, int, float, np.generic)): return Tensor.full((), x, dtype or scalar_dtype(self.dtype, x))
    if is_variable(x): return Tensor(x.cast(dtype or scalar_dtype(self.dtype, 0)))  # an integer scalar, promoted as an int is
    return Tensor(x)

  def _binop_srcs(self, x: Any, reverse: bool = False) -> tuple[Tensor, Tensor]:
    other = self._wrap(x)
    a, b = (other, self) if reverse else (self, other)
    dt = promote(a.dtype, b.dtype)
    shape = broadcast_shape(a.shape, b.shape)
    return a.cast(dt)._bcast(shape), b.cast(dt)._bcast(shape)

  def _bcast(self, shape: tuple[int, ...]) -> Tensor:
    return self if self.shape == shape else Tensor(broadcast_uop(self.uop, shape))

  def _alu(self, op: Ops, *srcs: Tensor, what: str | None = None) -> Tensor:
    # the op registry decides which dtypes an op computes on, so the frontend never builds a node the spec rejects
    dt = srcs[0].dtype if op is Ops.WHERE else self.dtype
    if dt.storage_only and not accepts(op, dt) and accepts(op, dt.compute_dtype): return self._widened(op, srcs, what)
    if (msg := dtype_error(op, dt)) is not None: raise TypeError(f"{what} on {dt.name}: {msg}" if what else msg)
    # tensor.one_device's condition, so the frontend never builds a node that rule rejects
    if (clash := device_conflict(t.uop for t in (self, *srcs))) is not None:
      raise ValueError(f"{what or op.name} of tensors on {clash[0]} and {clash[1]}: ops combine tensors on one device "
                       "(or one device tuple); move one first (Tensor.to, Tensor.shard)")
    return Tensor(self.uop.alu(op, *(s.uop for s in srcs)))

  def _widened(self, op: Ops, srcs: tuple[Tensor, ...], what: str | None) -> Tensor:
    """op on fp8 operands as tinygrad 0.14 computes it (its renderers' non-native float rule): on the operands cast to
    float32, the result cast back to the fp8 dtype (a comparison's bool stays bool). The IR has no fp8 arithmetic, so
    the graph spells the casts."""
    dt, wide = self.dtype, self.dtype.compute_dtype
    out = self.cast(wide)._alu(op, *(s.cast(wide) for s in srcs), what=what)
    return out if out.dtype.is_bool else out.cast(dt)

  def _bin(self, op: Ops, x: Any, reverse: bool = False, what: str | None = None) -> Tensor:
    a, b = self._binop_srcs(x, reverse)
    return a._alu(op, b, what=what)

  def _arith(self, op: Ops, x: Any, reverse: bool, what: str) -> Tensor:
    a, b = self._binop_srcs(x, reverse)
    # on bools + is logical or and * is logical and, as in numpy and tinygrad; - is refused (numpy refuses it too)
    if a.dtype.is_bool and op in (Ops.ADD, Ops.MUL): op = Ops.OR if op is Ops.ADD else Ops.AND
    return a._alu(op, b, what=what)

  def _div(self, x: Any, reverse: bool = False) -> Tensor:
    a, b = self._binop_srcs(x, reverse)
    return a._float() * b._float().reciprocal()

  def _divmod(self, x: Any, reverse: bool = False) -> tuple[Tensor, Tensor]:
    """(a // b, a % b) with Python's floor semantics: the quotient rounds toward -inf, the remainder has b's sign."""
    a, b = self._binop_srcs(x, reverse)
    if a.dtype.is_int: return _int_divmod(a, b)
    return _float_divmod(a._float(), b._float())

  def _float(self) -> Tensor:
    return self if self.dtype.is_float else self.cast(dtypes.float32)

  def _wide(self) -> Tensor:
    # exp and cos of a small float compute in float32 and cast back, as tinygrad 0.14's exp and cos do
    return self.cast(self.dtype.compute_dtype)

  # ---- elementwise ----
  def __add__(self, x: Any) -> Tensor: return self._arith(Ops.ADD, x, False, "+")
  def __radd__(self, x: Any) -> Tensor: return self._arith(Ops.ADD, x, True, "+")
  def __sub__(self, x: Any) -> Tensor: return self._arith(Ops.SUB, x, False, "-")
  def __rsub__(self, x: Any) -> Tensor: return self._arith(Ops.SUB, x, True, "-")
  def __mul__(self, x: Any) -> Tensor: return self._arith(Ops.MUL, x, False, "*")
  def __rmul__(self, x: Any) -> Tensor: return self._arith(Ops.MUL, x, True, "*")
  def __truediv__(self, x: Any) -> Tensor: return self._div(x)
  def __rtruediv__(self, x: Any) -> Tensor: return self._div(x, True)
  def __floordiv__(self, x: Any) -> Tensor: return self._divmod(x)[0]
  def __rfloordiv__(self, x: Any) -> Tensor: return self._divmod(x, True)[0]
  def __mod__(self, x: Any) -> Tensor: return self._divmod(x)[1]
  def __rmod__(self, x: Any) -> Tensor: return self._divmod(x, True)[1]
  def __and__(self, x: Any) -> Tensor: return self._bin(Ops.AND, x, what="&")
  def __rand__(self, x: Any) -> Tensor: return self._bin(Ops.AND, x, True, what="&")
  def __or__(self, x: Any) -> Tensor: return self._bin(Ops.OR, x, what="|")
  def __ror__(self, x: Any) -> Tensor: return self._bin(Ops.OR, x, True, what="|")
  def __xor__(self, x: Any) -> Tensor: return self._bin(Ops.XOR, x, what="^")
  def __rxor__(self, x: Any) -> Tensor: return self._bin(Ops.XOR, x, True, what="^")
  def __lshift__(self, x: Any) -> Tensor: return self._bin(Ops.SHL, x, what="<<")
  def __rlshift__(self, x: Any) -> Tensor: return self._bin(Ops.SHL, x, True, what="<<")
  def __rshift__(self, x: Any) -> Tensor: return self._bin(Ops.SHR, x, what=">>")
  def __rrshift__(self, x: Any) -> Tensor: return self._bin(Ops.SHR, x, True, what=">>")
  def __neg__(self) -> Tensor: return self._alu(Ops.NEG, what="unary -")
  def __invert__(self) -> Tensor:
    if (msg := dtype_error(Ops.XOR, self.dtype)) is not None: raise TypeError(f"~ on {self.dtype.name}: {msg}")
    return self ^ (True if self.dtype.is_bool else -1 if self.dtype.is_signed else self.dtype.max)
  def __lt__(self, x: Any) -> Tensor: return self._bin(Ops.CMPLT, x)
  def __gt__(self, x: Any) -> Tensor: return self._bin(Ops.CMPLT, x, True)
  def __le__(self, x: Any) -> Tensor: return (self > x).logical_not()
  def __ge__(self, x: Any) -> Tensor: return (self < x).logical_not()
  def __eq__(self, x: Any) -> Tensor: return self._bin(Ops.CMPEQ, x)  # type: ignore[override]
  def __ne__(self, x: Any) -> Tensor: return self._bin(Ops.CMPNE, x)  # type: ignore[override]
  def logical_not(self) -> Tensor: return self.cast(dtypes.bool)._bin(Ops.CMPEQ, False)

  def maximum(self, x: Any) -> Tensor: return self._bin(Ops.MAX, x)
  def minimum(self, x: Any) -> Tensor:
    a, b = self._binop_srcs(x)
    return (a < b).where(a, b)
  def where(self, a: Any, b: Any) -> Tensor:
    """a where self is true, else b (self is cast to bool; a and b promote and broadcast)."""
    cond = self.cast(dtypes.bool)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor): a = Tensor.full((), a)
    x, y = a._binop_srcs(b) if isinstance(a, Tensor) else b._binop_srcs(a, reverse=True)
    shape = broadcast_shape(cond.shape, x.shape)
    return cond._bcast(shape)._alu(Ops.WHERE, x._bcast(shape), y._bcast(shape))

  def cast(self, dtype: DType) -> Tensor:
    if dtype is self.dtype: return self
    if not accepts(Ops.CAST, dtype): raise TypeError(f"cast to {dtype.name}: {dtype_error(Ops.CAST, dtype)}")
    return Tensor(self.uop.cast(dtype))

  def bitcast(self, dtype: DType) -> Tensor:
    for dt in (self.dtype, dtype):
      if not accepts(Ops.BITCAST, dt): raise TypeError(f"bitcast from {self.dtype.name} to {dtype.name}: {dtype_error(Ops.BITCAST, dt)}")
    if dtype.itemsize != self.dtype.itemsize: raise TypeError(f"bitcast from {self.dtype.name} to {dtype.name} changes the item size")
    return Tensor(self.uop.bitcast(dtype))

  def exp2(self) -> Tensor: return self._float()._alu(Ops.EXP2)
  def log2(self) -> Tensor: return self._float()._alu(Ops.LOG2)
  def exp(self) -> Tensor:
    x = self._float()
    return (x._wide() * (1 / math.log(2))).exp2().cast(x.dtype)
  def log(self) -> Tensor: return self._float().log2() * math.log(2)
  def sqrt(self) -> Tensor: return self._float()._alu(Ops.SQRT)
  def sin(self) -> Tensor: return self._float()._alu(Ops.SIN)
  def cos(self) -> Tensor:
    x = self._float()
    return (x._wide() + math.pi / 2).sin().cast(x.dtype)
  def reciprocal(self) -> Tensor: return self._float()._alu(Ops.RECIP)
  def trunc(self) -> Tensor: return self._alu(Ops.TRUNC) if self.dtype.is_float else self
  def square(self) -> Tensor: return self * self

  # ---- movement ----
  def reshape(self, *shape: int | Sequence[int] | None) -> Tensor:
    """The same elements in shape; -1 takes the rest, None keeps the dim at that position (tinygrad's)."""
    shp = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    if None in shp:
      if any(d is None for d in shp[self.ndim:]): raise ValueError(f"reshape {shp}: None at a position {self.shape} has no dim at")
      shp = tuple(self.shape[i] if d is None else d for i, d in enumerate(shp))
    if shp.count(-1) > 1: raise ValueError(f"reshape {shp}: at most one -1")
    if any(d < -1 for d in shp): raise ValueError(f"reshape {shp}: negative dimension")
    if -1 in shp:
      rest = math.prod(d for d in shp if d != -1)
      if rest == 0 or self.size % rest: raise ValueError(f"cannot reshape {self.shape} to {shp}")
      shp = tuple(self.size // rest if d == -1 else d for d in shp)
    if math.prod(shp) != self.size: raise ValueError(f"cannot reshape {self.shape} to {shp}")
    return self if shp == self.shape else Tensor(self.uop.reshape(shp))

  def permute(self, *order: int | Sequence[int]) -> Tensor:
    o = tuple(order[0]) if len(order) == 1 and not isinstance(order[0], int) else tuple(order)
    if len(o) != self.ndim: raise ValueError(f"permute {o} needs {self.ndim} axes")
    o = tuple(_axis(a, self.ndim, scalar_ok=False) for a in o)
    if sorted(o) != list(range(self.ndim)): raise ValueError(f"{o} is not a permutation of {self.ndim} axes")
    return self if o == tuple(range(self.ndim)) else Tensor(self.uop.permute(o))

  @property
  def T(self) -> Tensor: return self.transpose()

  def expand(self, *shape: int | Sequence[int]) -> Tensor:
    """numpy-style broadcast to shape (-1 keeps a dim)."""
    shp = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)
    if len(shp) < self.ndim: raise ValueError(f"cannot expand {self.shape} to {shp}: fewer dims")
    full = (1,) * (len(shp) - self.ndim) + self.shape
    out = tuple(f if s == -1 and i >= len(shp) - self.ndim else s for i, (s, f) in enumerate(zip(shp, full)))
    if any(d < 0 for d in out): raise ValueError(f"cannot expand {self.shape} to {shp}")
    return self._bcast(out)

  def _pad(self, padding: Sequence[tuple[int, int] | None]) -> Tensor:
    """padding[i] = (before, after) zeros on axis i (None: no padding)."""
    if len(padding) != self.ndim: raise ValueError(f"pad needs {self.ndim} entries, got {len(padding)}")
    arg = tuple((0, d) if p is None else (p[0], p[0] + d + p[1]) for p, d in zip(padding, self.shape))
    if any(p is not None and (p[0] < 0 or p[1] < 0) for p in padding): raise ValueError(f"negative padding {padding}")
    return self if all(o == 0 and n == d for (o, n), d in zip(arg, self.shape)) else Tensor(self.uop.pad(arg))

  def shrink(self, window: Sequence[tuple[int, int] | None]) -> Tensor:
    """window[i] = (start, end) kept on axis i (None: all)."""
    if len(window) != self.ndim: raise ValueError(f"shrink needs {self.ndim} entries, got {len(window)}")
    for i, (w, d) in enumerate(zip(window, self.shape)):
      if w is not None and not 0 <= w[0] <= w[1] <= d: raise ValueError(f"shrink window {tuple(w)} does not fit axis {i} of size {d}")
    arg = tuple((0, d) if w is None else (w[0], w[1] - w[0]) for w, d in zip(window, self.shape))
    return self if all(o == 0 and n == d for (o, n), d in zip(arg, self.shape)) else Tensor(self.uop.shrink(arg))

  def flip(self, axis: int | Sequence[int]) -> Tensor:
    axes = _norm_axes(axis, self.ndim, scalar_ok=False)
    return Tensor(self.uop.flip(tuple(i in axes for i in range(self.ndim)))) if axes else self

  # ---- reductions ----
  def _reduce(self, op: Ops, axis: int | Sequence[int] | None, keepdim: bool) -> Tensor:
    axes = _norm_axes(axis, self.ndim)
    # fp8 has no REDUCE: combined in float32 and cast back, exact for MAX (a sum casts to float32 itself, see sum)
    if axes and not reduce_accepts(self.dtype): return self.cast(self.dtype.compute_dtype)._reduce(op, axis, keepdim).cast(self.dtype)
    rest = [i for i in range(self.ndim) if i not in axes]
    x = self.permute(list(axes) + rest) if axes else self
    out = Tensor(x.uop.reduce(op, len(axes))) if axes else x
    if keepdim: out = out.reshape(tuple(1 if i in axes else d for i, d in enumerate(self.shape)))
    return out

  def max(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    return self._reduce(Ops.MAX, axis, keepdim)

  def min(self, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    # an order-reversing bijection of the dtype, so no value is lost: -x for floats, ~x for ints and bools
    if self.dtype.is_float: return -((-self).max(axis, keepdim))
    return ~((~self).max(axis, keepdim))

  def argmax(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum along axis (int32); axis None: into the flattened tensor, as tinygrad and numpy."""
    if axis is None:
      out = self.reshape(-1).argmax(0)
      return out.reshape((1,) * self.ndim) if keepdim else out
    axis = _axis(axis, self.ndim)
    if self.ndim == 0: return Tensor.full((), 0, dtypes.int32)
    n = self.shape[axis]
    if n == 0: raise ValueError(f"argmax of an empty axis {axis} (shape {self.shape})")
    mask = self == self.max(axis, keepdim=True)
    rev = Tensor.arange(n, 0, -1).reshape(tuple(n if i == axis else 1 for i in range(self.ndim)))
    return (n - mask.where(rev, 0).max(axis, keepdim)).cast(dtypes.int32)

  def argmin(self, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum along axis (int32), as argmax of an order-reversing bijection (see min)."""
    return (-self if self.dtype.is_float else ~self).argmax(axis, keepdim)

  # ---- windows, prefix sums ----
  def windows(self, k: int) -> Tensor:
    """Sliding windows of length k along the last axis, by repeat / reshape / shrink: shape (..., k, L-k+1),
    out[..., r, c] = x[..., c + r]."""
    if self.ndim == 0: raise ValueError("windows needs at least 1 dim")
    L = self.shape[-1]
    o = L - k + 1
    if o <= 0 or k <= 0: raise ValueError(f"window {k} does not fit length {L}")
    e = -(-k * (L + 1) // L)
    lead = self.shape[:-1]
    x = Tensor(self.uop.expand((e,)))  # (e, ..., L)
    x = x.permute(list(range(1, len(lead) + 1)) + [0, len(lead) + 1]).reshape(lead + (e * L,))
    x = x.shrink([None] * len(lead) + [(0, k * (L + 1))]).reshape(lead + (k, L + 1))
    return x.shrink([None] * len(lead) + [None, (0, o)])

  # ---- realization and effects ----
  def contiguous(self) -> Tensor: return Tensor(UOp(Ops.CONTIGUOUS, self.dtype, (self.uop,)))
  def detach(self) -> Tensor: return Tensor(UOp(Ops.DETACH, self.dtype, (self.uop,)))
  def copy_to(self, device: str) -> Tensor: return Tensor(self.uop.copy_to(device))

  # ---- gradients (tinyspec.gradient) ----
  def backward(self, *wrt: Tensor) -> Tensor:
    """self is a scalar loss: add d self / d data to the .grad of every float Tensor made from data it reads (or of wrt)."""
    tensor_backward(self, wrt)
    return self

  @property
  def grad(self) -> Tensor | None:
    """The gradient backward() accumulated for this Tensor made from data; None when no backward reached it."""
    g = tensor_grad(self)
    return None if g is None else Tensor(g)

  @grad.setter
  def grad(self, g: Tensor | None) -> None:
    set_tensor_grad(self, g)

  def is_storage(self) -> bool:
    u = self.uop
    while u.op in GroupOp.Movement or u.op is Ops.AFTER: u = u.src[0]
    return u.op in (Ops.BUFFER, Ops.PARAM, Ops.CONTIGUOUS)

  def assign(self, x: Any) -> Tensor:
    """Store x into this tensor's storage: STORE(self, x) then AFTER, which this tensor then refers to."""
    if not self.is_storage(): raise ValueError(f"assign target {self.uop.op.name} is not storage (a buffer or a view of one)")
    v = self._wrap(x, self.dtype).cast(self.dtype)._bcast(self.shape)
    self.uop = self.uop.after(self.uop.store(v.uop))
    return self

  def _iop(self, op: str, x: Any) -> Tensor:
    out = getattr(self, op)(x)
    return self.assign(out) if self.is_storage() else out

  def __iadd__(self, x: Any) -> Tensor: return self._iop("__add__", x)
  def __isub__(self, x: Any) -> Tensor: return self._iop("__sub__", x)
  def __imul__(self, x: Any) -> Tensor: return self._iop("__mul__", x)


# the axis rules above, for the modules that attach the rest of tinygrad's API to Tensor (frontend/*.py)
resolve_axis = _axis
resolve_axes = _norm_axes

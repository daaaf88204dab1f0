"""Elementwise math and activations, built from the IR's elementwise ops the way tinygrad 0.14 builds them.

pow follows tinygrad: a Python scalar exponent is expanded as tinygrad's simplifier expands a constant power (x ** 0
is 1, a negative exponent takes the reciprocal first, x ** (n + 0.5) is x ** n * sqrt(x), an integer power is repeated
squaring, so integer tensors keep their dtype), a positive scalar base is exp2(x * log2(c)), and every other power is
exp2(e * log2(|b|)) with tinygrad's rule for negative bases: nan for a non-integer exponent, negated for an odd one,
and b ** 0 == 1 everywhere (0 ** 0, nan ** 0 and inf ** 0 included). A negative scalar exponent on an integer tensor,
and an integer tensor raised to an integer tensor, raise TypeError (tinygrad refuses the first and cannot compile the
second).

The rest is tinygrad's formula for each op: floor and ceil correct TRUNC by one, round is half to even, sign and abs
go through WHERE (abs(x) = x * sign(x)), relu is (x > 0).where(x, 0), sigmoid is 1 / (1 + exp2(-x / ln 2)), tanh is
2 * sigmoid(2x) - 1, erf is Abramowitz and Stegun 7.1.26 (gelu(approximate="none") uses it), softplus goes through
logaddexp. Integer and bool inputs of a float op compute in float32, as in tinygrad."""
from __future__ import annotations

import functools
import math
from typing import Any, Sequence

from tinyspec.dtype import dtypes
from tinyspec.frontend.attach import alias, method, named
from tinyspec.frontend.tensor import Tensor
from tinyspec.uop import Ops


def _is_scalar(x: Any) -> bool: return isinstance(x, (int, float)) and not isinstance(x, bool)


def _poly(x: Tensor, coeffs: Sequence[float]) -> Tensor:
  """Horner's rule: coeffs[0] * x**(n-1) + ... + coeffs[-1]."""
  return functools.reduce(lambda acc, c: acc * x + c, coeffs[1:], x * 0 + coeffs[0])


# ---- powers ----
def _xpow(base: Tensor, e: Tensor) -> Tensor:
  """base ** e (float, same shape) as tinygrad's decomposition of POW. The exponent is cast to int32 only where it is
  below 2**31 in magnitude (a float that large is an even integer in float32), so no cast leaves int32's range."""
  ret = ((base < 0).where(-base, base).log2() * e).exp2()
  small = e.abs() < 2.0 ** 31
  es = small.where(e, 0.0)
  ei = es.cast(dtypes.int32)
  non_int = small.where(es != ei.cast(e.dtype), e != e)  # a big finite or infinite float is an integer; nan is not
  odd = small & ((ei & 1) == 1)
  neg = non_int.where((base != -math.inf).where(math.nan, ret), odd.where(-ret, ret))
  return (e == 0).where(Tensor.full((), 1, ret.dtype), (base < 0).where(neg, ret))


def _pow_const(x: Tensor, c: int | float) -> Tensor:
  x = x.cast(x._binop_srcs(c)[0].dtype)  # the scalar promotes as in any binary op: an int tensor ** 2.0 is float32
  if not x.dtype.is_float and c < 0: raise TypeError(f"an integer tensor ({x.dtype.name}) to a negative power {c}: cast it to a float first")
  if c == 0: return x.full_like(1)
  if c == 1: return x
  if x.dtype.is_float:
    if c < 0: return _pow_const(x.reciprocal(), -c)
    if abs(c) > 2 ** 16: return _xpow(x, x.full_like(c))
    if int(c - 0.5) + 0.5 == c: return _pow_const(x, c - 0.5) * x.sqrt()
    if int(c) != c: return _xpow(x, x.full_like(c))
  c = int(c)
  y = _pow_const(x, c // 2)
  y = y * y
  return y * x if c % 2 else y


@named("pow")
def tensor_pow(self: Tensor, x: Any, reverse: bool = False) -> Tensor:
  """self ** x (x ** self with reverse)."""
  if not reverse and _is_scalar(x): return _pow_const(self, x)
  if reverse and _is_scalar(x) and x > 0:
    e = self if self.dtype.is_float else self._float()
    return e.full_like(1.0) if x == 1 else (e * math.log2(x)).exp2()
  base, e = self._binop_srcs(x, reverse)
  if not base.dtype.is_float:
    if not isinstance(x, Tensor) and not reverse: return _pow_const(self, x)
    raise TypeError(f"{base.dtype.name} ** {e.dtype.name} tensor: an integer power of a tensor exponent needs a float base")
  return _xpow(base, e)


alias("__pow__", lambda self, x: self.pow(x))
alias("__rpow__", lambda self, x: self.pow(x, True))


@method
def rsqrt(self: Tensor) -> Tensor: return self.sqrt().reciprocal()
@method
def tan(self: Tensor) -> Tensor: return self.sin() / self.cos()
@method
def log10(self: Tensor) -> Tensor: return self.log2() * math.log10(2)
@method
def sinh(self: Tensor) -> Tensor: return (self.exp() - (-self._float()).exp()) / 2
@method
def cosh(self: Tensor) -> Tensor: return (self.exp() + (-self._float()).exp()) / 2
@method
def erf(self: Tensor) -> Tensor:
  x = self._float()
  t = 1.0 / (1.0 + 0.3275911 * x.abs())
  return x.sign() * (1.0 - t * _poly(t, [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]) * (-x.square()).exp())


# ---- rounding, sign ----
@method
def floor(self: Tensor) -> Tensor:
  if not self.dtype.is_float: return self
  b = self.trunc()
  return (self < b).where(b - 1, b)


@method
def ceil(self: Tensor) -> Tensor:
  if not self.dtype.is_float: return self
  b = self.trunc()
  return (self > b).where(b + 1, b)


@named("round")
def tensor_round(self: Tensor) -> Tensor:
  """Half to even (2.5 -> 2, -0.5 -> -0), as tinygrad and numpy."""
  if not self.dtype.is_float: return self
  b = self.trunc() / 2.0
  return ((self > 0) == (b.trunc() == b)).where((self - 0.5).ceil(), (self + 0.5).floor())


@method
def sign(self: Tensor) -> Tensor:
  if self.dtype.is_bool: return self
  one = Tensor.full((), 1, self.dtype)
  neg = one if self.dtype.kind == "u" else Tensor.full((), -1, self.dtype)
  return (self != 0).where((self < 0).where(neg, one), Tensor.full((), 0, self.dtype))


@named("abs")
def tensor_abs(self: Tensor) -> Tensor:
  """x * sign(x), tinygrad's: its gradient is sign(x), 0 at 0; abs(-0.0) is -0.0 (0 * -0.0)."""
  if self.dtype.is_bool or self.dtype.kind == "u": return self
  return self * self.sign()


@method
def copysign(self: Tensor, other: Any) -> Tensor:
  a, b = self._binop_srcs(other)
  mag = a.abs()
  return ((b < 0) | (b.reciprocal() < 0)).where(-mag, mag)


# ---- comparisons and selection ----
@method
def clamp(self: Tensor, min_: Any = None, max_: Any = None) -> Tensor:
  if min_ is None and max_ is None: raise ValueError("clamp needs min_ or max_")
  ret = (self < min_).where(min_, self) if min_ is not None else self
  return (ret > max_).where(max_, ret) if max_ is not None else ret


alias("clip", clamp)


@method
def isnan(self: Tensor) -> Tensor: return self != self
@method
def isinf(self: Tensor, detect_positive: bool = True, detect_negative: bool = True) -> Tensor:
  return ((self == math.inf) & detect_positive) | ((self == -math.inf) & detect_negative)
@method
def isfinite(self: Tensor) -> Tensor: return (self.isinf() | self.isnan()).logical_not()


@method
def isclose(self: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
  other = self._wrap(other)
  finite = self.isfinite() & other.isfinite() & ((self - other).abs() <= atol + rtol * other.abs())
  infinite = (self.isinf() | other.isinf()) & (self == other)
  nan = self.isnan() & other.isnan() & equal_nan
  return finite | infinite | nan


@method
def allclose(self: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
  return self.isclose(other, rtol, atol, equal_nan).all()


@method
def lerp(self: Tensor, end: Any, weight: Any) -> Tensor: return self + (end - self) * weight


@method
def masked_fill(self: Tensor, mask: Tensor, value: Any) -> Tensor: return mask.where(value, self)


# ---- division ----
@method
def fmod(self: Tensor, x: Any) -> Tensor:
  """The remainder with the sign of self (C's fmod; the IR's MOD on integers)."""
  a, b = self._binop_srcs(x)
  if a.dtype.is_int: return a._alu(Ops.MOD, b, what="fmod")
  return a - a.div(b, rounding_mode="trunc") * b


@method
def div(self: Tensor, x: Any, reverse: bool = False, rounding_mode: str | None = None) -> Tensor:
  """True division; rounding_mode "trunc" or "floor" rounds the quotient (integers stay integers: IDIV, or //)."""
  if rounding_mode not in (None, "trunc", "floor"): raise ValueError(f"rounding_mode {rounding_mode!r} is not one of None, 'trunc', 'floor'")
  a, b = self._binop_srcs(x, reverse)
  if a.dtype.is_int and rounding_mode == "trunc": return a._alu(Ops.IDIV, b, what="div")
  if a.dtype.is_int and rounding_mode == "floor": return a // b
  d = a._float() * b._float().reciprocal()
  return d if rounding_mode is None else d.trunc() if rounding_mode == "trunc" else d.floor()


@method
def logaddexp(self: Tensor, other: Any) -> Tensor:
  a, b = self._binop_srcs(other)
  m = a.maximum(b)
  return ((a - m).exp() + (b - m).exp()).log() + m


# ---- activations ----
@method
def relu(self: Tensor) -> Tensor: return (self > 0).where(self, 0)
@method
def relu6(self: Tensor) -> Tensor: return self.relu() - (self - 6).relu()
@method
def sigmoid(self: Tensor) -> Tensor: return (1 + (self * (-1 / math.log(2))).exp2()).reciprocal()
@method
def logsigmoid(self: Tensor) -> Tensor: return -(-self).softplus()
@method
def hardsigmoid(self: Tensor, alpha: float = 1 / 6, beta: float = 0.5) -> Tensor:
  return (alpha * self + beta).relu() - (alpha * self + beta - 1).relu()
@method
def hardswish(self: Tensor) -> Tensor: return self * (self + 3).relu6() * (1 / 6)
@method
def hardtanh(self: Tensor, min_val: float = -1, max_val: float = 1) -> Tensor: return self.clip(min_val, max_val)
@method
def leaky_relu(self: Tensor, neg_slope: float = 0.01) -> Tensor: return (self < 0).where(neg_slope * self, self)
@method
def tanh(self: Tensor) -> Tensor: return 2.0 * (2.0 * self).sigmoid() - 1.0
@method
def quick_gelu(self: Tensor) -> Tensor: return self * (self * 1.702).sigmoid()


@method
def gelu(self: Tensor, approximate: str = "tanh") -> Tensor:
  if approximate == "tanh": return 0.5 * self * (1 + (math.sqrt(2 / math.pi) * (self + 0.044715 * self ** 3)).tanh())
  if approximate == "none": return self * 0.5 * (1.0 + (self / math.sqrt(2)).erf())
  raise ValueError(f"gelu approximate={approximate!r} is not one of 'tanh', 'none'")


@method
def swish(self: Tensor) -> Tensor: return self * self.sigmoid()
alias("silu", swish)
@method
def elu(self: Tensor, alpha: float = 1.0) -> Tensor: return self.relu() - alpha * (1 - self.exp()).relu()
@method
def celu(self: Tensor, alpha: float = 1.0) -> Tensor: return self.maximum(0) + (alpha * ((self / alpha).exp() - 1)).minimum(0)
@method
def selu(self: Tensor, alpha: float = 1.67326, gamma: float = 1.0507) -> Tensor:
  return gamma * (self >= 0).where(self, alpha * (self.exp() - 1))
@method
def softplus(self: Tensor, beta: float = 1.0) -> Tensor: return (1 / beta) * (self * beta).logaddexp(0.0)
@method
def mish(self: Tensor) -> Tensor: return self * self.softplus().tanh()
@method
def softsign(self: Tensor) -> Tensor: return self / (1 + self.abs())


# ---- tinygrad's method spellings of the operators, and its cast shorthands ----
@method
def add(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._arith(Ops.ADD, x, reverse, "+")
@method
def sub(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._arith(Ops.SUB, x, reverse, "-")
@method
def mul(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._arith(Ops.MUL, x, reverse, "*")
@method
def neg(self: Tensor) -> Tensor: return -self
@method
def eq(self: Tensor, x: Any) -> Tensor: return self == x
@method
def ne(self: Tensor, x: Any) -> Tensor: return self != x
@method
def bitwise_and(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._bin(Ops.AND, x, reverse, what="&")
@method
def bitwise_or(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._bin(Ops.OR, x, reverse, what="|")
@method
def bitwise_xor(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._bin(Ops.XOR, x, reverse, what="^")
@method
def bitwise_not(self: Tensor) -> Tensor: return ~self
@method
def lshift(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._bin(Ops.SHL, x, reverse, what="<<")
@method
def rshift(self: Tensor, x: Any, reverse: bool = False) -> Tensor: return self._bin(Ops.SHR, x, reverse, what=">>")
@named("float")
def tensor_float(self: Tensor) -> Tensor: return self.cast(dtypes.float32)
@method
def double(self: Tensor) -> Tensor: return self.cast(dtypes.float64)
@method
def half(self: Tensor) -> Tensor: return self.cast(dtypes.float16)
@method
def bfloat16(self: Tensor) -> Tensor: return self.cast(dtypes.bfloat16)
@named("int")
def tensor_int(self: Tensor) -> Tensor: return self.cast(dtypes.int32)
@method
def long(self: Tensor) -> Tensor: return self.cast(dtypes.int64)
@named("bool")
def tensor_bool(self: Tensor) -> Tensor: return self.cast(dtypes.bool)
@method
def numel(self: Tensor) -> int: return self.size
@method
def element_size(self: Tensor) -> int: return self.dtype.itemsize

"""Property tests of the Tensor frontend: every graph it builds from a random program is legal at TENSOR and evaluates,
an invalid request raises its documented error, and // and % agree with numpy's floor division everywhere."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyspec.dtype import DType, dtypes
from tinyspec.frontend import Tensor, function, inputs_of
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = [dtypes.bool, dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.float32, dtypes.float64]
FLOATS = [0.0, -0.0, 0.5, -1.5, 2.0, 3.0, -4.0, 7.25, math.inf, -math.inf]


def is_float(v: Any) -> bool: return v.dtype.is_float if isinstance(v, Tensor) else isinstance(v, float)
def is_bool(v: Any) -> bool: return v.dtype.is_bool if isinstance(v, Tensor) else isinstance(v, bool)
def shape_of(v: Any) -> tuple[int, ...]: return v.shape if isinstance(v, Tensor) else ()


def broadcasts(*vs: Any) -> bool:
  try: np.broadcast_shapes(*(shape_of(v) for v in vs))
  except ValueError: return False
  return True


def axis_ok(a: int, ndim: int) -> bool:
  """numpy's and tinygrad's range for a reduction axis: a 0-d tensor takes 0 and -1."""
  n = max(ndim, 1)
  return -n <= a < n


def attempt(expect: type[Exception] | None, fn: Callable[[], Any]) -> Any:
  """fn(), which must raise expect when that is given (and then gives None)."""
  if expect is None: return fn()
  with pytest.raises(expect):
    fn()
  return None


@st.composite
def shapes(draw: st.DrawFn, max_dims: int = 3) -> tuple[int, ...]:
  return tuple(draw(st.lists(st.one_of(st.integers(1, 3), st.just(0)), max_size=max_dims)))


@st.composite
def tensors(draw: st.DrawFn, shape: tuple[int, ...] | None = None, dtype: DType | None = None) -> Tensor:
  shape = draw(shapes()) if shape is None else shape
  dt = dtype or draw(st.sampled_from(DTYPES))
  n = math.prod(shape)
  if dt.is_bool: elems = st.booleans()
  elif dt.is_float: elems = st.sampled_from(FLOATS)
  elif dt.kind == "u": elems = st.integers(0, 9)
  else: elems = st.integers(-9, 9)
  return Tensor(np.array(draw(st.lists(elems, min_size=n, max_size=n)), dt.np).reshape(shape))


@st.composite
def broadcast_partner(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
  """A shape that broadcasts with shape: a suffix of it, some dims set to 1, maybe with leading dims added."""
  keep = draw(st.integers(0, len(shape)))
  out = [1 if draw(st.booleans()) else d for d in shape[len(shape) - keep:]]
  return tuple(draw(st.lists(st.integers(1, 2), max_size=1))) + tuple(out)


def scalars() -> st.SearchStrategy:
  return st.one_of(st.booleans(), st.integers(-5, 5), st.sampled_from([0.5, -2.0, 3.0, 0.0]))


BINARY: dict[str, Callable[[Any, Any], Tensor]] = {
  "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
  "//": lambda a, b: a // b, "%": lambda a, b: a % b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
  "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
  "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
  "maximum": lambda a, b: (a if isinstance(a, Tensor) else Tensor(a)).maximum(b),
  "minimum": lambda a, b: (a if isinstance(a, Tensor) else Tensor(a)).minimum(b),
}


def binary_error(name: str, a: Any, b: Any) -> type[Exception] | None:
  """The documented error of a OP b: broadcasting first, then the op's dtypes (bitwise ops take no floats, shifts
  take integers only, - takes no bools)."""
  if not broadcasts(a, b): return ValueError
  flt, both_bool = is_float(a) or is_float(b), is_bool(a) and is_bool(b)
  if name in ("&", "|", "^") and flt: return TypeError
  if name in ("<<", ">>") and (flt or both_bool): return TypeError
  if name == "-" and both_bool: return TypeError
  return None


def step_binary(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  name = draw(st.sampled_from(sorted(BINARY)))
  src = draw(st.sampled_from(["pool", "partner", "scalar"]))
  if src == "pool": y: Any = draw(st.sampled_from(pool))
  elif src == "partner": y = draw(tensors(draw(broadcast_partner(x.shape))))
  else: y = draw(scalars())
  a, b = (y, x) if draw(st.booleans()) else (x, y)
  return attempt(binary_error(name, a, b), lambda: BINARY[name](a, b))


UNARY: dict[str, Callable[[Tensor], Tensor]] = {
  "neg": lambda t: -t, "abs": lambda t: t.abs(), "exp": lambda t: t.exp(), "log": lambda t: t.log(), "sqrt": lambda t: t.sqrt(),
  "sin": lambda t: t.sin(), "cos": lambda t: t.cos(), "relu": lambda t: t.relu(), "sigmoid": lambda t: t.sigmoid(),
  "tanh": lambda t: t.tanh(), "trunc": lambda t: t.trunc(), "invert": lambda t: ~t, "not": lambda t: t.logical_not(),
  "square": lambda t: t.square(), "reciprocal": lambda t: t.reciprocal(), "exp2": lambda t: t.exp2(),
}


def step_unary(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  name = draw(st.sampled_from(sorted(UNARY) + ["cast"]))
  if name == "cast": return x.cast(draw(st.sampled_from(DTYPES)))
  err = TypeError if (name == "neg" and x.dtype.is_bool) or (name == "invert" and x.dtype.is_float) else None
  return attempt(err, lambda: UNARY[name](x))


def step_where(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  c = draw(st.sampled_from(pool))
  a = draw(st.one_of(st.sampled_from(pool), scalars()))
  b = draw(st.one_of(st.sampled_from(pool), scalars()))
  return attempt(None if broadcasts(c, a, b) else ValueError, lambda: c.where(a, b))


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "argmax", "argmin", "cumsum", "softmax", "log_softmax"]


def step_reduce(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  name = draw(st.sampled_from(REDUCTIONS))
  nd = x.ndim
  one = st.integers(-nd - 2, nd + 1)
  if name in ("cumsum", "softmax", "log_softmax"): axis: Any = draw(one)
  elif name in ("argmax", "argmin"): axis = draw(st.one_of(st.none(), one))
  else: axis = draw(st.one_of(st.none(), one, st.tuples(one, one)))
  keepdim = draw(st.booleans())
  axes = () if axis is None else axis if isinstance(axis, tuple) else (axis,)
  err: type[Exception] | None = None
  if not all(axis_ok(a, nd) for a in axes): err = IndexError
  elif len({a % max(nd, 1) for a in axes}) != len(axes): err = ValueError
  elif name in ("argmax", "argmin") and (x.size == 0 if axis is None else nd and x.shape[axis] == 0): err = ValueError
  if name in ("cumsum", "softmax", "log_softmax"): return attempt(err, lambda: getattr(x, name)(axis))
  return attempt(err, lambda: getattr(x, name)(axis, keepdim))


def step_movement(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  nd, shp = x.ndim, x.shape
  kind = draw(st.sampled_from(["reshape", "permute", "transpose", "expand", "pad", "shrink", "flip", "getitem"]))
  if kind == "reshape":
    opts = [(x.size,), (-1,), shp[::-1], (1,) + shp, shp + (1,)] + [shp[:i] + (shp[i] * shp[i + 1],) + shp[i + 2:] for i in range(nd - 1)]
    new = draw(st.sampled_from(opts))
    bad = draw(st.booleans()) and x.size > 0
    return attempt(ValueError if bad else None, lambda: x.reshape((x.size + 1,) if bad else new))
  if kind == "permute":
    perm = list(draw(st.permutations(range(nd))))
    perm = [p - nd if draw(st.booleans()) else p for p in perm]
    if nd and draw(st.integers(0, 3)) == 0: perm[0] = nd + draw(st.integers(0, 2))
    return attempt(None if all(-nd <= p < nd for p in perm) else IndexError, lambda: x.permute(perm))
  if kind == "transpose":
    a, b = draw(st.integers(-nd - 1, nd)), draw(st.integers(-nd - 1, nd))
    return attempt(None if -nd <= a < nd and -nd <= b < nd else IndexError, lambda: x.transpose(a, b))
  if kind == "expand":
    new = tuple(draw(st.integers(0, 3)) if d == 1 and draw(st.booleans()) else d for d in shp)
    return x.expand(tuple(draw(st.lists(st.integers(1, 2), max_size=1))) + new)
  if kind == "pad":
    return x.pad([None if draw(st.booleans()) else (draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shp])
  if kind == "shrink":
    win = []
    for d in shp:
      lo = draw(st.integers(0, d))
      win.append((lo, draw(st.integers(lo, d))))
    return x.shrink(win)
  if kind == "flip":
    axes = draw(st.lists(st.integers(-nd - 1, nd), max_size=2, unique=True))
    norm = [a % nd for a in axes if -nd <= a < nd]
    err = IndexError if len(norm) != len(axes) else ValueError if len(set(norm)) != len(norm) else None
    return attempt(err, lambda: x.flip(axes))
  key: list[Any] = []
  for d in shp[:draw(st.integers(0, nd))]:
    if d and draw(st.booleans()): key.append(draw(st.integers(-d, d - 1)))
    else: key.append(slice(draw(st.one_of(st.none(), st.integers(-4, 4))), draw(st.one_of(st.none(), st.integers(-4, 4))),
                           draw(st.sampled_from([None, 1, -1]))))
  return x[tuple(key)]


def step_matmul(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  if x.ndim == 0: return attempt(ValueError, lambda: x @ Tensor([1.0]))
  w = draw(tensors((x.shape[-1],) + tuple(draw(st.lists(st.integers(1, 3), max_size=1)))))
  return x @ w


@function
def _pair(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
  return x + y, (x < y).where(x // 2, y % 3)


@function
def _nested(x: Tensor, y: Tensor) -> Tensor:
  s, m = _pair(x, y)
  return s.cast(dtypes.float32) * 0.5 - m.cast(dtypes.float32)


def step_call(draw: st.DrawFn, pool: list[Tensor]) -> Tensor | None:
  x = draw(st.sampled_from(pool))
  y = draw(st.one_of(st.sampled_from(pool), tensors(draw(broadcast_partner(x.shape)))))
  if not broadcasts(x, y): return attempt(ValueError, lambda: _pair(x, y))
  which = draw(st.sampled_from(["pair", "nested", "captured"]))
  if which == "pair": return _pair(x, y)[draw(st.integers(0, 1))]
  if which == "nested": return _nested(x, y)
  w = draw(tensors(()))

  @function
  def captured(a: Tensor) -> Tensor:
    return a.maximum(w) + y.sum()
  return captured(x)


STEPS = [step_binary, step_unary, step_where, step_reduce, step_movement, step_matmul, step_call]


@PROPS
@given(st.data())
def test_random_frontend_programs_are_legal_at_tensor_and_evaluate(data):
  pool = [data.draw(tensors()) for _ in range(data.draw(st.integers(1, 2)))]
  for _ in range(data.draw(st.integers(1, 6))):
    out = data.draw(st.sampled_from(STEPS))(data.draw, pool)
    if out is not None: pool.append(out)
  root = Tensor.sink(*pool)
  assert check(root, Stage.TENSOR) == []
  with np.errstate(all="ignore"):
    outs = evaluate(root, inputs_of(root))
  for t, o in zip(pool, outs, strict=True):
    o = np.asarray(o)
    assert o.size == t.size and o.dtype == t.dtype.np, f"{t}: evaluated to {o.dtype} of {o.size} elements"


# ---- // and % against numpy ----
INT_DTYPES = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]


@PROPS
@given(st.sampled_from(INT_DTYPES), st.data())
def test_int_floordiv_mod_match_numpy(dt, data):
  n = data.draw(st.integers(1, 8))
  vals = st.integers(dt.min, dt.max)
  a = np.array(data.draw(st.lists(vals, min_size=n, max_size=n)), dt.np)
  # nonzero divisors; numpy's floor_divide(INT_MIN, -1) overflows like the IR, Python's would not fit the dtype
  b = np.array(data.draw(st.lists(vals.filter(lambda v: v != 0), min_size=n, max_size=n)), dt.np)
  if dt.is_signed: b[(a == dt.min) & (b == -1)] = 1
  q, r = Tensor(a) // Tensor(b), Tensor(a) % Tensor(b)
  assert check(Tensor.sink(q, r), Stage.TENSOR) == []
  np.testing.assert_array_equal(q.numpy(), np.floor_divide(a, b))
  np.testing.assert_array_equal(r.numpy(), np.mod(a, b))
  assert [int(x) for x in q.numpy()] == [int(x) // int(y) for x, y in zip(a, b)]


@PROPS
@given(st.sampled_from([dtypes.float32, dtypes.float64]), st.data())
def test_float_floordiv_mod_match_numpy_to_the_bit(dt, data):
  # quarters with small numerators: every quotient and remainder is exact, so numpy (fmod-based, as Python) is exact
  n = data.draw(st.integers(1, 8))
  a = np.array(data.draw(st.lists(st.integers(-64, 64), min_size=n, max_size=n)), dt.np) / 4
  a = np.where(a == 0, np.array(data.draw(st.sampled_from([0.0, -0.0])), dt.np), a)
  b = np.array(data.draw(st.lists(st.integers(-24, 24).filter(lambda v: v != 0), min_size=n, max_size=n)), dt.np) / 4
  q, r = Tensor(a) // Tensor(b), Tensor(a) % Tensor(b)
  assert check(Tensor.sink(q, r), Stage.TENSOR) == []
  wq, wr = np.floor_divide(a, b), np.mod(a, b)
  for got, want in ((q.numpy(), wq), (r.numpy(), wr)):
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got).tolist() == np.signbit(want).tolist()
  assert wq.tolist() == [float(x) // float(y) for x, y in zip(a, b)]

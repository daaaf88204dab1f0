"""The tinygrad bridge on what random numbers and common math make: THREEFRY, STACK as a value, POW, FDIV, MUL on bool,
a program's vector load read lane by lane, and every random op checked at every stage with its numbers compared."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from tinyspec.bridge.tinygrad import Untranslatable, capture, translate  # noqa: E402
from tinyspec.bridge.tinygrad.check import check_capture, evaluate_callified, evaluate_tensor  # noqa: E402
from tinyspec.dtype import dtypes  # noqa: E402
from tinyspec.spec import Stage, check  # noqa: E402
from tinyspec.uop import Ops  # noqa: E402
from builders import without_rule  # noqa: E402

pytestmark = pytest.mark.tinygrad

# Random123's known-answer vectors of Threefry-2x32 with 20 rounds: (counter words, key words) -> output words
THREEFRY_KAT = [((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
                ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
                ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7))]


def pack(lo: int, hi: int) -> int: return (hi << 32) | lo


def holds(rep) -> None:
  """Every stage translated in full and legal, and every comparison of numbers ran and matched."""
  cov = rep.translation.coverage()
  assert all(total > 0 and done == total for done, total in cov.values()), cov
  assert {s: [str(v) for _, v in vs] for s, vs in rep.violations.items() if vs} == {}
  assert rep.ran == {"tensor": True, "callified": True, "kernel ASTs": True, "programs": True}, rep.numbers
  assert all(r is None for r in rep.numbers.values()), rep.numbers
  assert rep.unchecked == [] and rep.ok


# ---- THREEFRY ----
def test_threefry_spelling_gives_tinygrads_bits_and_random123s():
  from tinygrad import Tensor
  rng = np.random.default_rng(0)
  x = np.array([pack(*c) for c, _, _ in THREEFRY_KAT] + list(rng.integers(0, 2 ** 63, 5, dtype=np.uint64) * 2 + 1), np.uint64)
  k = np.array([pack(*k) for _, k, _ in THREEFRY_KAT] + list(rng.integers(0, 2 ** 63, 5, dtype=np.uint64)), np.uint64)
  cap = capture(lambda: Tensor(x).threefry(Tensor(k)))
  t = translate(cap)
  root = t.graphs["tensor"][0][1]
  ops = {u.op for u in root.toposort()}
  assert {Ops.XOR, Ops.SHL, Ops.SHR, Ops.OR, Ops.CAST} <= ops and check(root, Stage.TENSOR) == []
  got = np.asarray(evaluate_tensor(t)[0]).reshape(-1)
  want = cap.outputs[0].reshape(-1)
  assert got.dtype == np.uint64 and np.array_equal(got, want)   # bit for bit, every word
  assert [(int(v) & 0xFFFFFFFF, int(v) >> 32) for v in got[:3]] == [o for _, _, o in THREEFRY_KAT]
  holds(check_capture(cap))


def test_a_wrong_threefry_spelling_is_caught_by_the_numbers(monkeypatch):
  # the comparison with tinygrad's numbers is what holds the spelling: one rotation constant off and the bits differ
  from tinygrad import Tensor

  import tinyspec.bridge.tinygrad.composite as composite
  monkeypatch.setattr(composite, "ROTATIONS", ((13, 15, 26, 6), (17, 29, 16, 23)))
  cap = capture(lambda: Tensor(np.arange(1, 5, dtype=np.uint64)).threefry(Tensor(np.full(4, 7, np.uint64))))
  rep = check_capture(cap)
  assert rep.ran["tensor"] and rep.numbers["tensor"] is not None and "differs" in rep.numbers["tensor"]


# ---- every random op ----
def _random_programs():
  from tinygrad import Context, Tensor, nn

  def seeded(make):
    def program():
      Tensor.manual_seed(3)
      return make()
    return program

  def dropout():
    with Context(TRAINING=1): return Tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)).dropout(0.3)

  return {"rand": lambda: Tensor.rand(2, 3), "randn": lambda: Tensor.randn(5), "randint": lambda: Tensor.randint(7, low=-4, high=11),
          "uniform": lambda: Tensor.uniform(3, 2, low=-2, high=3), "kaiming_uniform": lambda: Tensor.kaiming_uniform(4, 3),
          "glorot_uniform": lambda: Tensor.glorot_uniform(3, 4), "dropout": dropout,
          "linear": lambda: (lambda m: (m.weight, m.bias))(nn.Linear(3, 2)),
          "conv2d": lambda: (lambda m: (m.weight, m.bias))(nn.Conv2d(2, 3, 3)),
          "embedding": lambda: nn.Embedding(5, 3).weight}, seeded


RANDOM_OPS = ["rand", "randn", "randint", "uniform", "kaiming_uniform", "glorot_uniform", "dropout", "linear", "conv2d", "embedding"]


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_random_op_holds_at_every_stage(name):
  progs, seeded = _random_programs()
  cap = capture(seeded(progs[name]))
  assert any(k.op.name == "SINK" and any(u.op.name == "THREEFRY" for u in k.toposort()) for k in cap.kernels)
  rep = check_capture(cap)
  holds(rep)
  # the draw is the seed's: the same program again gives the same numbers, another seed others
  again = capture(seeded(progs[name]))
  assert all(np.array_equal(a, b) for a, b in zip(cap.outputs, again.outputs))


def test_randint_values_are_in_range_and_bit_exact():
  from tinygrad import Tensor
  Tensor.manual_seed(9)
  cap = capture(lambda: Tensor.randint(64, low=-3, high=5))
  t = translate(cap)
  got = np.asarray(evaluate_callified(t)[0]).reshape(-1)
  assert got.dtype == cap.outputs[0].dtype and np.array_equal(got, cap.outputs[0].reshape(-1)) and set(got.tolist()) <= set(range(-3, 5))


# ---- STACK as a value ----
def test_stack_value_is_a_where_of_padded_rows_and_keeps_negative_zero():
  from tinygrad import Tensor
  a = np.array([[-0.0, 1.5], [np.nan, -2.0]], np.float32)
  b = np.array([[3.0, -0.0], [4.0, 5.0]], np.float32)
  cap = capture(lambda: Tensor.stack(Tensor(a), Tensor(b)))
  t = translate(cap)
  root = t.graphs["tensor"][0][1]
  w = root.src[0]
  while w.op is not Ops.WHERE: w = w.src[0]
  mask, row1, row0 = w.src
  assert mask.dtype is dtypes.bool and mask.op is Ops.PAD and mask.arg[0] == (1, 2)
  assert row1.op is Ops.PAD and row1.arg == ((1, 2), (0, 2), (0, 2)) and row0.op is Ops.PAD and row0.arg[0] == (0, 2)
  got = np.asarray(evaluate_tensor(t)[0])
  assert np.array_equal(got, np.stack([a, b]), equal_nan=True) and np.signbit(got[0, 0, 0]) and np.signbit(got[1, 0, 1])
  holds(check_capture(cap))


# ---- POW ----
def test_pow_is_tinygrads_xpow_at_negative_bases_zero_and_infinities():
  from tinygrad import Tensor
  x = np.array([-2.0, -2.0, -2.0, 0.0, 0.0, -np.inf, np.inf, 3.0, -0.5], np.float32)
  y = np.array([3.0, 2.0, 0.5, 0.0, -1.0, 0.5, -2.0, 1.25, -3.0], np.float32)
  cap = capture(lambda: Tensor(x) ** Tensor(y))
  t = translate(cap)
  ops = {u.op for u in t.graphs["tensor"][0][1].toposort()}
  assert {Ops.EXP2, Ops.LOG2, Ops.WHERE} <= ops
  got, want = np.asarray(evaluate_tensor(t)[0]), cap.outputs[0]
  np.testing.assert_allclose(got, want, rtol=1e-6)   # NaN where tinygrad gives NaN, infinities where it gives them
  assert np.isnan(got[2]) and got[0] == -8.0 and got[3] == 1.0 and got[4] == np.inf
  holds(check_capture(cap))


# ---- FDIV and MUL on bool ----
def test_fdiv_in_programs_is_the_registrys_fdiv_and_runs_as_programs():
  from tinygrad import Tensor
  x = np.random.default_rng(3).uniform(-3, 3, (3, 5)).astype(np.float32)
  cap = capture(lambda: Tensor(x).softmax(-1))
  t = translate(cap)   # strict: nothing untranslatable
  fdivs = [u for _, p in t.graphs["program"] for u in p.toposort() if u.op is Ops.FDIV]
  assert fdivs and all(u.dtype is dtypes.float32 for u in fdivs)
  rep = check_capture(cap)
  holds(rep)
  assert rep.as_programs[0] == len(cap.programs)   # every compiled kernel ran as its translated program


def test_a_missing_rule_is_named_with_its_stage(monkeypatch):
  from tinygrad import Tensor
  without_rule(monkeypatch, "FDIV")
  cap = capture(lambda: Tensor(np.arange(1, 7, dtype=np.float32)).softmax())
  with pytest.raises(Untranslatable) as e: translate(cap)
  assert (e.value.op, e.value.stage) == ("FDIV", "program")


def test_bool_mul_is_and_in_sparse_categorical_crossentropy():
  from tinygrad import Tensor
  x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
  y = np.array([1, 0, 4, 2], np.int32)
  cap = capture(lambda: Tensor(x).sparse_categorical_crossentropy(Tensor(y)))
  t = translate(cap)
  assert any(u.op is Ops.MUL and u.dtype is dtypes.bool for u in t.graphs["tensor"][0][1].toposort())
  holds(check_capture(cap))


# ---- a program's vector load ----
def test_a_vector_load_read_by_lane_is_a_load_of_each_element():
  from tinygrad import Tensor
  Tensor.manual_seed(4)
  cap = capture(lambda: Tensor.randn(3))
  (prg,) = [p for _, p in cap.programs if any(u.op.name == "SHRINK" for u in p.src[1].src)][:1]
  t = translate(cap)
  mine = next(g for tg, g in t.graphs["program"] if tg is prg)
  assert not any(u.op is Ops.LOAD and u.src[0].op is not Ops.INDEX for u in mine.toposort())
  loads = [u for u in mine.src[1].src if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.PARAM and u.src[0].src[0].arg.size == 2]
  assert len(loads) >= 2 and check(mine, Stage.PROGRAM) == []


# ---- BITCAST between item sizes (a random float16 or float64 is a BITCAST of uint32 bits) ----
BITCASTS = {
  "uint32 to uint16": (np.array([[0x12345678, 0xFFFF0001], [7, 0x80000000]], np.uint32), "uint16"),
  "float32 to uint8": (np.array([[1.5, -0.0, np.inf]], np.float32), "uint8"),
  "uint16 to float32": (np.arange(0x3F00, 0x3F08, dtype=np.uint16).reshape(2, 4), "float32"),
  "uint32 to float64": (np.array([0, 0x3FF00000, 0x54442D18, 0x400921FB], np.uint32), "float64"),
  "int8 to int32": (np.array([[-1, 2, -3, 4, 5, -6, 7, -128]], np.int8), "int32"),
}


@pytest.mark.parametrize("name", list(BITCASTS))
def test_bitcast_between_item_sizes_rescales_the_last_axis(name):
  from tinygrad import Tensor
  from tinygrad import dtypes as tdt
  x, to = BITCASTS[name]
  cap = capture(lambda: Tensor(x).bitcast(getattr(tdt, to)) + 0)
  t = translate(cap)
  got = np.asarray(evaluate_tensor(t)[0])
  want = cap.outputs[0]
  assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)) and got.shape == want.shape
  assert np.array_equal(want.view(np.uint8).reshape(-1), x.view(np.uint8).reshape(-1))   # tinygrad's is numpy's view of the bytes
  holds(check_capture(cap))


def test_integer_pow_is_the_exact_power_and_the_check_flags_tinygrads_float_route():
  # tinygrad 0.14 computes an int tensor ** an int tensor through exp2(e * log2(b)) in float32 and stores the float into
  # the int32 buffer (5 ** 2 gives 24); its constant exponents simplify to products and are exact. tinyspec's POW on ints
  # is the exact power, so the check reports a numbers mismatch exactly where tinygrad's differ from it
  from tinygrad import Tensor
  b = np.array([1, 2, 3, -2, 5, 7, -1, 1, 0, 3], np.int32)
  e = np.array([2, 0, 1, 3, 2, 3, 5, -3, 4, 4], np.int32)
  exact = np.array([int(x) ** int(y) if y >= 0 else int(1 / x ** -int(y)) for x, y in zip(b, e)], np.int32)
  cap = capture(lambda: Tensor(b) ** Tensor(e))
  t = translate(cap)
  assert np.array_equal(np.asarray(evaluate_tensor(t)[0]), exact)
  rep = check_capture(cap)
  assert (rep.numbers["tensor"] is None) == np.array_equal(cap.outputs[0], exact), (rep.numbers, cap.outputs[0])
  const = capture(lambda: Tensor(b) ** 3)
  assert np.array_equal(np.asarray(evaluate_tensor(translate(const))[0]), b.astype(np.int64) ** 3) and check_capture(const).ok

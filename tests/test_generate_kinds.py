"""The kinds of fuzz case (fuzz.generate.kinds): one row each, case_for going down them, the weights that share the
cases out and their check (fuzz.generate.case.check_weights)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from fuzz.generate import kinds
from fuzz.generate.case import Case, check_weights, default_weights
from fuzz.generate.kinds import KINDS, Draw, Kind, case_for, kind_weights
from tinyspec import Stage, check
from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp


def _new_case(rng: random.Random, d: Draw) -> Case:
  b = UOp.buffer(dtypes.int32, 2, id=1)
  root = UOp(Ops.SINK, src=(b.alu(Ops.ADD, UOp.const(dtypes.int32, rng.randint(0, 9)).expand((2,))),))
  return Case(root, {1: np.array([rng.randint(-9, 9) for _ in range(2)], np.int32)}, features=frozenset({"kind:new"}))


def _same(a: Case, b: Case) -> bool:
  return a.root is b.root and a.options == b.options and a.features == b.features and \
    a.inputs.keys() == b.inputs.keys() and all(a.inputs[k].tobytes() == b.inputs[k].tobytes() for k in a.inputs)


def test_a_new_kind_is_one_row(monkeypatch):
  before = [case_for(5, i, {"kind:new": 0.5}) for i in range(120)]
  with pytest.raises(ValueError, match="kind:new"): check_weights({"kind:new": 0.5}, kind_weights())
  monkeypatch.setattr(kinds, "KINDS", [Kind("new", 0.0, _new_case), *KINDS])
  # its default share is 0: no case is one, and every case is the one it was
  assert all(_same(case_for(5, i), c) for i, c in zip(range(40), before))
  # under its weight it takes about that share of the cases, from a Random of its own (the same case again for the same
  # seed and index), and every case it does not take is the one it was
  got = [case_for(5, i, {"kind:new": 0.5}) for i in range(120)]
  new = [c for c in got if "kind:new" in c.features]
  assert 30 < len(new) < 90
  assert all(check(c.root, Stage.TENSOR) == [] and (c.seed, c.index) == (5, i) for i, c in enumerate(got) if "kind:new" in c.features)
  assert all(_same(c, case_for(5, c.index, {"kind:new": 0.5})) for c in new[:5])
  assert all(_same(c, b) for c, b in zip(got, before) if "kind:new" not in c.features)
  # and the weights check knows its weight
  assert check_weights({"kind:new": 0.5}, kind_weights()) == {"kind:new": 0.5}


def test_each_kind_takes_the_cases_under_its_weight():
  rolled = [k for k in KINDS if k.default is not None]
  for k in rolled:
    w = {o.weight: 0.0 for o in rolled} | {k.weight: 1.0}
    got = [case_for(11, i, w) for i in range(12)]
    assert sum(k.weight in c.features for c in got) >= 9, k.key
  # with every share 0, the last row (tensor graphs of single ops) takes them all
  off = {k.weight: 0.0 for k in rolled}
  assert all(c.kind == "tensor" and not any(f.startswith("kind:") for f in c.features) for c in (case_for(11, i, off) for i in range(12)))


def test_kernel_kinds_follow_kind_kernel():
  # the integer, edge and scatter kernels are off by default when kernel graphs are (kind:kernel 0), on when their own
  # weight says so
  by_key = {k.key: k for k in KINDS}
  for key in ("int", "edge", "scatter"):
    assert by_key[key].share({"kind:kernel": 0.0}) == 0.0
    assert by_key[key].share({"kind:kernel": 0.0, f"kind:{key}": 0.3}) == 0.3
    assert by_key[key].share({}) == by_key[key].default
  # a share is capped below 1 (the rows after it keep cases), except kernel graphs': kind:kernel 1 makes every case one
  assert by_key["int"].share({"kind:int": 5.0}) == 0.95 and by_key["kernel"].share({"kind:kernel": 5.0}) == 5.0


def test_weights_check():
  w = default_weights()
  assert check_weights(w, kind_weights()) == w
  given = {"kind:int": 0.2, "kind:kernel": 0, "edge:small": 4, "images:on": 1, "multi:grad": 2, "scatter:atomic": 1, "opt:split": 3}
  assert check_weights(given, kind_weights()) == {k: float(v) for k, v in given.items()}
  for bad, word in (({"dtype:smal": 1.0}, "dtype:smal"), ({"kind:kernel": -1.0}, "at least 0"), ({"value:edge": math.nan}, "finite"),
                    ({"value:edge": math.inf}, "finite"), ({"step:call": "2"}, "number"), ({"step:call": True}, "number")):
    with pytest.raises(ValueError, match=word): check_weights(bad, kind_weights())

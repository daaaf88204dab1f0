"""check() never raises and is linear in the graph: 10,000 corrupted graphs (hostile reprs, huge ints, deep tuples, forged
dtypes and ops, sources that are not nodes), and chains of 100,000 and 300,000 nodes at every stage."""
from __future__ import annotations

import random

import pytest

from builders import buf, kgraph_of, sink, tensor_graphs
from tinyspec import Ops, Stage, UOp, check, dtypes
from tinyspec.dtype import DType
from tinyspec.uop import AddrSpace, AxisType, BufferArg, ParamArg, RangeArg

pytestmark = pytest.mark.spec
TRIALS = 10_000


class Hostile:
  """An object that breaks every protocol a message might use, except hashing (so a UOp can hold it)."""
  def __repr__(self): raise RuntimeError("repr")
  def __str__(self): raise RuntimeError("str")
  def __eq__(self, o): raise RuntimeError("eq")
  def __lt__(self, o): raise RuntimeError("lt")
  def __bool__(self): raise RuntimeError("bool")
  def __index__(self): raise RuntimeError("index")
  def __hash__(self): return id(self) >> 4  # distinct, so building a node that holds it never compares it
  def __getattr__(self, name): raise RuntimeError(f"getattr {name}")


class HostileDType(DType):
  def __repr__(self): raise RuntimeError("dtype repr")


def _deep(n: int):
  x: tuple = (1,)
  for _ in range(n): x = (x,)
  return x


HOSTILE_VALUES = [Hostile(), 10 ** 5000, -(10 ** 5000), _deep(1000), _deep(3000), float("nan"), float("inf"), "x" * 100_000, (1, Hostile()),
                  ParamArg(Hostile(), 10 ** 5000), BufferArg(10 ** 5000, -1), RangeArg(_deep(50), Hostile()), AxisType.LOOP, AddrSpace.REG,
                  Ops.ADD, (Ops.ADD, 10 ** 5000), dtypes.int32, b"bytes", frozenset({1}), None, True, -1, (), ((1,), (2, 3)), 3.5]
FORGED_DTYPES = [DType("float16", 2, "f", "half", "half"), DType("float32", 4, "f", "float", "float"), HostileDType("x", 4, "i", "int", "int"),
                 DType(Hostile(), 4, "i", "x", "x"), DType("int32", -1, "q", "", ""), 5, "float32", None, Hostile(), (1,)]
FORGED_OPS = ["ADD", 7, None, AxisType.LOOP, Hostile(), Ops]


def corrupt(u: UOp, rng: random.Random) -> UOp:
  kind = rng.randrange(9)
  if kind == 0: return UOp(u.op, u.dtype, u.src, rng.choice(HOSTILE_VALUES), u.tag)
  if kind == 1: return UOp(u.op, rng.choice(FORGED_DTYPES), u.src, u.arg, u.tag)
  if kind == 2: return UOp(rng.choice(FORGED_OPS), u.dtype, u.src, u.arg, u.tag)
  if kind == 3: return UOp(u.op, u.dtype, u.src + (rng.choice(HOSTILE_VALUES),), u.arg)
  if kind == 4: return UOp(u.op, u.dtype, u.src[:-1], u.arg)
  if kind == 5: return UOp(u.op, u.dtype, u.src, u.arg, rng.choice(HOSTILE_VALUES))
  if kind == 6: return UOp(rng.choice(list(Ops)), u.dtype, u.src, u.arg)
  if kind == 7: return UOp(u.op, u.dtype, u.src + (buf(3),) * rng.randint(1, 3), u.arg)
  return UOp(Ops.PARAM, rng.choice([u.dtype, *FORGED_DTYPES]), (), rng.choice(HOSTILE_VALUES))


def nodes_of(g: UOp) -> list[UOp]:
  """g's nodes, sources first, stepping over sources that are not nodes (a corrupted graph has some)."""
  from tinyspec.uop import walk
  return walk((g,), lambda u: tuple(s for s in u.src if isinstance(s, UOp)))


def substitute_one(g: UOp, target: UOp, bad: UOp) -> UOp:
  memo: dict = {}
  for x in nodes_of(g):
    src = tuple(memo.get(s, s) if isinstance(s, UOp) else s for s in x.src)
    memo[x] = bad if x is target else (x.replace(src=src) if any(a is not b for a, b in zip(src, x.src)) else x)
  return memo[g]


def graphs() -> list[tuple[UOp, Stage]]:
  """Legal graphs of every stage to corrupt: random tensor graphs, and kernel graphs of kernels and programs."""
  from hypothesis import HealthCheck, given, settings
  from builders import k_acc, k_add, k_reduce, program
  from tinyspec.dtype import dtypes as d
  out: list[tuple[UOp, Stage]] = []
  @given(tensor_graphs())
  @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
  def grab(g): out.append((g, Stage.TENSOR))
  grab()
  out += [(kgraph_of(k()), Stage.KERNEL_GRAPH) for k in (k_add, k_acc, k_reduce)]
  out += [(kgraph_of(k_acc(d.index)), Stage.KERNEL), (kgraph_of(k_reduce()), Stage.KERNEL)]
  out += [(kgraph_of(program(k_acc(d.int32))), Stage.PROGRAM), (kgraph_of(program(k_add(d.int32))), Stage.PROGRAM)]
  return out


def test_check_never_raises_on_10000_corrupted_graphs():
  rng = random.Random(16)
  pool = graphs()
  raised: list[str] = []
  for t in range(TRIALS):
    g, stage = rng.choice(pool)
    nodes = g.toposort()
    bad = g
    for _ in range(rng.randint(1, 3)):
      target = rng.choice(nodes_of(bad))
      try: bad = substitute_one(bad, target, corrupt(target, rng))
      except Exception: pass  # a node that cannot even be built (unhashable, a comparison raising while interning)
    st = stage if rng.random() < 0.7 else rng.choice(list(Stage))
    try:
      vs = check(bad, st)
      for v in vs: assert isinstance(v.rule, str) and v.message and str(v) and len(v.message) <= 2000
    except Exception as e:
      raised.append(f"trial {t} at {st.name}: {type(e).__name__}: {str(e)[:200]}")
  assert raised == [], f"{len(raised)} of {TRIALS} raised; first: {raised[:3]}"
  assert len(nodes) > 0


def test_hostile_values_are_named_not_raised():
  g = sink(UOp(Ops.ADD, dtypes.float32, (buf(4), buf(4)), Hostile()), UOp(Ops.CONST, dtypes.int32, (), 10 ** 5000),
           UOp(Ops.RESHAPE, dtypes.float32, (buf(4),), _deep(3000)), UOp(Ops.NEG, HostileDType("x", 4, "i", "int", "int"), (buf(4),)))
  rules = sorted(v.rule for v in check(g, Stage.TENSOR))
  assert rules == ["node.arg", "node.arg", "node.arg", "node.dtype"], rules
  text = "\n".join(str(v) for v in check(g, Stage.TENSOR))
  assert "<an int of 16610 bits>" in text and "<Hostile instance at" in text and "<HostileDType instance at" in text, text


# ---- linear in the graph ----
def tensor_chain(n: int) -> UOp:
  x = buf(4)
  for i in range(n - 2): x = -x if i % 2 else x.reshape((4,))
  return sink(x)


def long_kernel(n: int, program: bool = False) -> UOp:
  """A kernel graph of one kernel storing a chain of n ADDs (a PROGRAM with its LINEAR when program)."""
  from builders import program as to_program
  from builders import rng
  f32 = dtypes.float32
  p0, p1 = UOp.param(0, f32, 4), UOp.param(1, f32, 4)
  r = rng(4, 0, dtypes.int32 if program else dtypes.index)
  v = p1.index(r).load()
  for _ in range(n): v = UOp(Ops.ADD, f32, (v, v))
  body = UOp(Ops.SINK, src=(p0.index(r).store(v).end(r),))
  return kgraph_of(to_program(body) if program else body)


@pytest.fixture(scope="module")
def chains():
  """(n, stage) -> the chain legal at that stage: a tensor graph; a kernel graph whose kernel stores n ADDs; the same as
  a PROGRAM. Each built once, when a test first asks for it: building is slower than checking (and a test run split
  over processes builds in each only what its tests there check)."""
  build = {Stage.TENSOR: tensor_chain, Stage.KERNEL_GRAPH: long_kernel, Stage.KERNEL: long_kernel,
           Stage.PROGRAM: lambda n: long_kernel(n, program=True)}
  made: dict[tuple[int, Stage], UOp] = {}
  def get(n: int, stage: Stage) -> UOp:
    key = (n, Stage.KERNEL_GRAPH if stage is Stage.KERNEL else stage)  # one kernel graph serves both stages
    if key not in made: made[key] = build[stage](n)
    return made[key]
  return get


def _check_chains(chains, stage: Stage, n: int) -> None:
  g = chains(n, stage)
  assert len(g.toposort()) >= n
  assert check(g, stage) == []  # legal, checked in one linear walk
  if stage is not Stage.TENSOR:  # the tensor chain at this stage: a violation at nearly every node, each path a link
    vs = check(chains(n, Stage.TENSOR), stage)
    assert len(vs) >= n // 2 - 1 and max(len(v.path) for v in vs[-10:]) >= n - 3


@pytest.mark.parametrize("stage", list(Stage), ids=[s.name for s in Stage])
def test_100000_node_chains_at_every_stage(chains, stage):
  _check_chains(chains, stage, 100_000)


@pytest.mark.slow
@pytest.mark.parametrize("stage", list(Stage), ids=[s.name for s in Stage])
def test_300000_node_chains_at_every_stage(chains, stage):
  _check_chains(chains, stage, 300_000)


def test_violations_deep_in_a_chain_have_their_paths():
  x = buf(4)
  for _ in range(100_000): x = -x
  bad = UOp(Ops.ADD, dtypes.float32, (x, buf(8)))
  vs = check(sink(bad), Stage.TENSOR)
  assert [v.rule for v in vs] == ["tensor.elementwise_shape"] and vs[0].path == (0,)
  # a NEG chain over a bad source at its bottom: the one violation, 100,000 links down
  y = UOp(Ops.ADD, dtypes.float32, (buf(4), buf(8)))
  for _ in range(100_000): y = -y
  vs = check(sink(y), Stage.TENSOR)
  assert [v.rule for v in vs] == ["tensor.elementwise_shape"] and vs[0].path == (0,) * 100_001


def test_a_malformed_buffer_id_leaves_the_next_ids_alone():
  # building a BUFFER arg with a hostile id (as HOSTILE_VALUES does on import) must not move every later id out of range
  BufferArg(10 ** 5000, 4), BufferArg(-5, 4), BufferArg(2 ** 63, 4)
  b = buf(4)
  assert 0 <= b.arg.id < 2 ** 63

"""The rewrite engine: UPat matching, named rules, PatternMatcher dispatch, graph_rewrite's orders, observer,
step limit and cycle detection, and the compiled matchers against the generic UPat.match they stand for."""
from __future__ import annotations

import pytest
from programs import PROGRAMS

from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import PASSES, lower, passes_through
from tinyspec.rewrite import PatternMatcher, Rule, RewriteCycle, UPat, count_steps, graph_rewrite
from tinyspec.uop import Ops, UOp

pytestmark = pytest.mark.spec

x = UOp.range(8, 0)
y = UOp.range(5, 1)
zero, one = UOp.const(dtypes.index, 0), UOp.const(dtypes.index, 1)

ADD0 = ("add_zero", UPat(Ops.ADD, src=[UPat.var("a"), UPat.const(None, 0)]), lambda a: a)
MUL1 = ("mul_one", UPat(Ops.MUL, src=[UPat.var("a"), UPat.const(None, 1)]), lambda a: a)
PM = PatternMatcher([ADD0, MUL1], "identities")


def test_ordered_sources_match_in_order_only() -> None:
  p = UPat(Ops.ADD, src=(UPat(Ops.RANGE, name="r"), UPat(Ops.CONST, name="c")))
  assert p.match(x + 3, {}) == [{"r": x, "c": UOp.const(dtypes.index, 3)}]
  assert p.match(UOp.const(dtypes.index, 3) + x, {}) == []


def test_commutative_sources_match_both_orders() -> None:
  p = UPat(Ops.ADD, src=[UPat(Ops.RANGE, name="r"), UPat(Ops.CONST, name="c")])
  assert len(p.match(x + 3, {})) == 1 and len(p.match(UOp.const(dtypes.index, 3) + x, {})) == 1
  assert len(UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]).match(x + y, {})) == 2  # every binding is listed


def test_a_name_used_twice_binds_one_node() -> None:
  p = UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("a")))
  assert p.match(x + x, {}) == [{"a": x}]
  assert p.match(x + y, {}) == []


def test_filters_any_len_and_predicate() -> None:
  assert UPat(Ops.CONST, dtypes.index, arg=3).match(UOp.const(dtypes.index, 3), {})
  assert not UPat(Ops.CONST, dtypes.int32, arg=3).match(UOp.const(dtypes.index, 3), {})
  assert not UPat(Ops.CONST, arg=3).match(UOp.const(dtypes.index, 4), {})
  end = UOp(Ops.END, dtypes.void, (UOp(Ops.SINK), x, y))
  assert not UPat(Ops.END, src=(UPat(Ops.SINK),)).match(end, {})
  assert UPat(Ops.END, src=(UPat(Ops.SINK),), allow_any_len=True).match(end, {})
  assert UPat(Ops.END, src=UPat(), name="e").match(end, {}) == [{"e": end}]  # one pattern for every source
  assert not UPat(Ops.RANGE, pred=lambda u: u.arg.axis == 1).match(x, {})


def test_rules_know_name_and_location() -> None:
  r = PM.rules[0]
  assert r.name == "add_zero" and r.location.endswith(f"test_rewrite.py:{ADD0[2].__code__.co_firstlineno}")
  with pytest.raises(ValueError, match="duplicate rule names"): PatternMatcher([ADD0, ADD0])
  with pytest.raises(KeyError): PM.replace_rule("no_such_rule", fn=lambda a: a)


def test_graph_rewrite_reaches_a_fixed_point_in_both_orders() -> None:
  e = ((x + 0) * 1 + 0) * (y * 1)
  for bottom_up in (True, False):
    assert graph_rewrite(e, PM, bottom_up=bottom_up) is x * y


def test_rule_results_are_rewritten_again() -> None:
  # the rule builds a node another rule folds: (a*1)+0 -> a*1 -> a within one traversal
  pm = PatternMatcher([("wrap_in_mul", UPat(Ops.SUB, src=(UPat.var("a"), UPat.const(None, 0))), lambda a: a * 1), MUL1])
  assert graph_rewrite(x - 0, pm) is x


def test_observer_sees_every_application_and_step_limits_stop_midway() -> None:
  e = (((x + 0) + 0) + 0) * 1
  seen: list[tuple[str, UOp, UOp]] = []
  assert graph_rewrite(e, PM, observer=lambda r, b, a: seen.append((r.name, b, a))) is x
  assert [s[0] for s in seen].count("add_zero") == 3 and [s[0] for s in seen].count("mul_one") == 1
  assert all(isinstance(b, UOp) and isinstance(a, UOp) and b is not a for _, b, a in seen)
  assert count_steps(e, PM) == 4
  partial = [graph_rewrite(e, PM, max_steps=k) for k in range(5)]
  assert partial[0] is e and partial[4] is x
  assert len({id(p) for p in partial}) == 5  # each extra step changes the graph once
  assert all(len(p.toposort()) > len(q.toposort()) for p, q in zip(partial, partial[1:]))


def test_a_rule_that_rebuilds_its_input_is_a_cycle() -> None:
  def flip_flop(a: UOp) -> UOp:  # x+y -> (x*2)+y -> x+y -> ...: its result leads back to its input
    return (a.src[0] * 2) + a.src[1] if a.src[0].op is not Ops.MUL else a.src[0].src[0] + a.src[1]
  grow = PatternMatcher([("grow", UPat(Ops.ADD, name="a"), flip_flop)])
  with pytest.raises(RewriteCycle): graph_rewrite(x + y, grow)


def test_a_long_chain_rewrites_without_recursion() -> None:
  e = x
  for _ in range(100_000): e = (e + 0) * 1
  assert graph_rewrite(e, PM) is x


def _generic(rule: Rule, u: UOp) -> UOp | None:
  """What rule.apply means, from UPat.match: fn on every binding in order, the first result not None nor u."""
  for store in rule.pat.match(u, {}):
    if (ret := rule.fn(**store)) is not None and ret is not u: return ret
  return None


def _corpus_nodes() -> list[UOp]:
  nodes: dict[UOp, None] = {}
  for name in sorted(PROGRAMS)[::3]:
    for g in lower(PROGRAMS[name]().root).values(): nodes.update(dict.fromkeys(g.toposort()))
  return list(nodes)


def test_compiled_matchers_agree_with_upat_match() -> None:
  """Every rule of the pipeline that needs no context, on every node of lowered programs: the compiled matcher
  and the generic UPat.match give the same result (the same node, or no match)."""
  nodes = _corpus_nodes()
  rules = [r for p in PASSES for r in p.rules() if not r.takes_ctx]
  assert len(rules) > 40 and len(nodes) > 1000
  fired = 0
  for r in rules:
    ops = r.pat.op
    for u in nodes:
      if ops is not None and u.op not in ops: continue
      want, got = _generic(r, u), r.apply(u, None)
      if want is not None and _generic(r, u) is not want:  # a rule that makes fresh nodes (new buffer ids) each call
        assert got is not None and got.op is want.op and got.dtype is want.dtype, f"rule {r.name} on {u}"
      else:
        assert got is want, f"rule {r.name} on {u}"
      fired += want is not None
  assert fired > 20  # the comparison saw rules fire, not only misses


def test_compiled_matchers_agree_on_every_pattern_feature() -> None:
  """Each feature the rule compiler turns into code (op sets, dtype filters with a dtype equal to a singleton but not
  it, args of the right type only, a name bound twice, commutative and any-length sources, a pattern for every
  source, predicates, ctx) and the generic fallback, each as compiled for any node and for a node of a known op:
  the same result as UPat.match, on nodes that match and nodes that do not."""
  from tinyspec.dtype import DType
  f32_copy = DType("float32", 4, "f", "float", "float")  # equal to dtypes.float32, not the same object
  c3, t = UOp.const(dtypes.index, 3), UOp.const(dtypes.bool, True)
  nodes = [x, y, c3, one, t, x + x, x + y, x + 3, c3 + x, x * y, (x + y) * (x + y), UOp(Ops.CONST, f32_copy, (), 1.0),
           UOp.const(dtypes.float32, 1.0), UOp(Ops.END, dtypes.void, (UOp(Ops.SINK), x, y)), UOp(Ops.END, dtypes.void, (x,)),
           UOp(Ops.SINK, src=(x, y)), UOp(Ops.SINK, src=(x, c3)), UOp(Ops.SINK), UOp(Ops.END), one + x, y + x]
  pats = [
    UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("a")]),
    UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]),
    UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("c", dtypes.index))),
    UPat((Ops.ADD, Ops.MUL), dtypes.index, name="n", src=[UPat(Ops.RANGE, name="r"), UPat(name="o")]),
    UPat(Ops.MUL, src=(UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]))),
    UPat(Ops.CONST, dtypes.float32, name="c"),
    UPat(Ops.CONST, (dtypes.float32, dtypes.float64), name="c"),
    UPat(Ops.CONST, arg=1, name="c"),
    UPat(Ops.CONST, arg=True, name="c"),
    UPat(Ops.END, src=(UPat(Ops.SINK, name="s"),), allow_any_len=True),
    UPat(Ops.END, src=UPat(), name="e"),
    UPat(Ops.SINK, src=UPat(Ops.RANGE), name="s"),
    UPat(Ops.SINK, src=UPat(Ops.RANGE, pred=lambda u: u.arg.axis == 0), name="s"),
    UPat(Ops.SINK, src=UPat(Ops.RANGE, name="r")),  # a name under a pattern for every source: matched generically
    UPat(Ops.ADD, src=(UPat(name="class"), UPat())),  # a name that is no keyword argument: matched generically
    UPat(Ops.SINK, src=(UPat(Ops.RANGE, name="r"),)),
    UPat(Ops.ADD, src=(UPat(Ops.RANGE, name="r", pred=lambda u: u.arg.axis == 1), UPat(name="o"))),
    UPat(Ops.ADD, name="n", pred=lambda u: u.src[0] is x),
    UPat(Ops.RANGE, name="r"),
    UPat(None, name="any"),
  ]

  def fn(ctx: object = None, **kw: UOp) -> UOp | None:
    # a node built from the bindings, so a different binding gives a different result; None for some bindings, so
    # the next binding is tried; a lone RANGE binding itself, which on the matched node counts as no rewrite
    if any(v.op is Ops.CONST and v.arg == 3 for v in kw.values()): return None
    vals = [kw[k] for k in sorted(kw)]
    if len(vals) == 1 and vals[0].op is Ops.RANGE: return vals[0]
    return UOp(Ops.SINK, src=(*vals, *([ctx] if ctx is not None else [])))

  def fn_no_ctx(**kw: UOp) -> UOp | None: return fn(None, **kw)

  kinds = set()
  for i, p in enumerate(pats):
    for rule_fn, ctx in ((fn_no_ctx, None), (fn, y)):
      r = Rule(f"r{i}", p, rule_fn)
      assert r.takes_ctx == (rule_fn is fn)
      kinds.add(r.compiled(False).__name__)
      for u in nodes:
        want = None
        for store in p.match(u, {}):
          if (ret := rule_fn(**store, **({"ctx": ctx} if r.takes_ctx else {}))) is not None and ret is not u:
            want = ret
            break
        assert r.apply(u, ctx) is want, f"{p} on {u}"
        if p.op is None or u.op in p.op: assert r.compiled(True)(u, ctx) is want, f"{p} on {u}, op known"
  assert kinds == {"match", "slow"}  # both the generated matchers and the generic fallback were compared


def _snapshots(root: UOp, pm: PatternMatcher, bottom_up: bool) -> list[UOp]:
  got: list[UOp] = []
  out = graph_rewrite(root, pm, bottom_up=bottom_up, snapshot=lambda current: got.append(current()))
  assert not got or got[-1] is out, "the graph after the last application is the result"
  return got


def test_snapshots_are_the_rewrite_stopped_at_each_application() -> None:
  # the graph a snapshot builds from the walk's state is what max_steps = k returns, in both orders, on rules whose
  # results are rewritten again (nested pending replacements) and on shared subgraphs
  shared = (x + 0) * 1
  e = (shared + (shared * 1 + 0)) * ((y + 0) * 1 + 0)
  pm = PatternMatcher([("wrap_in_mul", UPat(Ops.SUB, src=(UPat.var("a"), UPat.const(None, 0))), lambda a: (a + 0) * 1), ADD0, MUL1])
  for root in (e, (e - 0) + (x - 0)):
    for bottom_up in (True, False):
      snaps = _snapshots(root, pm, bottom_up)
      assert len(snaps) == count_steps(root, pm, bottom_up=bottom_up) >= 6
      for k, s in enumerate(snaps, 1):
        assert s is graph_rewrite(root, pm, bottom_up=bottom_up, max_steps=k), (bottom_up, k)


def test_snapshots_of_the_lowering_tables_on_generated_kernels() -> None:
  from fuzz.generate.kinds import case_for
  from tinyspec.lower.base import LowerOptions, Trace
  from tinyspec.lower.kernel_map import map_kernels
  from tinyspec.lower.simplify import pm_simplify
  bodies: list[UOp] = []
  for i in range(12):
    g = case_for(4, i).root
    for p in passes_through("rangeify"): g = p.run(g, LowerOptions(), Trace())
    map_kernels(g, lambda call, body: bodies.append(body) or body)
  checked = 0
  for body in bodies:
    for bottom_up in (True, False):
      snaps = _snapshots(body, pm_simplify, bottom_up)
      for k in sorted({1, max(1, len(snaps) // 2), len(snaps)}) if snaps else ():
        assert snaps[k - 1] is graph_rewrite(body, pm_simplify, bottom_up=bottom_up, max_steps=k)
        checked += 1
  assert checked >= 20


def test_a_rule_and_a_pass_sent_by_value_keep_their_locations():
  """cloudpickle (how a campaign's passes reach Dask workers) sends a lambda by value and drops its file: the location
  a blame names is taken where the rule and the pass are made, and travels with them."""
  cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle comes with the dask extra")
  rule = Rule("neg_neg", UPat(Ops.NEG, src=(UPat(Ops.NEG, name="x"),)), lambda x: x.src[0])
  p = PASSES[1].replace_rule(PASSES[1].rules()[0].name, lambda **kw: None)
  here = f"tests/test_rewrite.py:{rule.fn.__code__.co_firstlineno}"
  got_rule, got_pass = cloudpickle.loads(cloudpickle.dumps((rule, p)))
  assert got_rule.fn.__code__.co_filename == "<dynamic-code>"  # what the function alone would say
  assert rule.location.endswith(here) and got_rule.location == rule.location
  assert got_pass.location == p.location == PASSES[1].location and "<dynamic-code>" not in p.location
  # the replaced rule names the function put in its place, here, after the journey too
  name = PASSES[1].rules()[0].name
  changed = next(r for r in got_pass.rules() if r.name == name)
  assert changed.fn.__code__.co_filename == "<dynamic-code>"
  assert changed.location == f"tests/test_rewrite.py:{p.rules()[0].fn.__code__.co_firstlineno}"

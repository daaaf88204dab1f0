"""A pass runs the tables it holds: a broken pipeline is built by handing a pass a table, never by swapping module globals."""
from __future__ import annotations

import importlib
import pickle
import pkgutil
import textwrap

import pytest
from programs import PROGRAMS

import tinyspec.lower
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, SEEDED_BUGS, broken_pipeline
from fuzz.testbed.unsound import VARIANTS
from tinyspec.dtype import dtypes
from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.lower.optimize import OPTIMIZE
from tinyspec.lower.pipeline import PASSES, describe_passes, lower
from tinyspec.lower.simplify import SIMPLIFY, pm_simplify
from tinyspec.rewrite import PatternMatcher
from tinyspec.spec import Stage
from tinyspec.uop import Ops, UOp

LOWER_MODULES = [importlib.import_module(m.name) for m in pkgutil.iter_modules(tinyspec.lower.__path__, "tinyspec.lower.")]


def lower_globals() -> dict[tuple[str, str], int]:
  """(module, name) -> id of the value, for every global of every tinyspec.lower module."""
  return {(m.__name__, k): id(v) for m in LOWER_MODULES for k, v in vars(m).items()}


def pipeline_state(passes: list[Pass]) -> list[tuple[Pass, list[int]]]:
  return [(p, [id(t) for t in p.tables.values()]) for p in passes]


def test_every_table_of_a_pass_module_is_named_pm():
  for m in LOWER_MODULES:
    tables = [k for k, v in vars(m).items() if isinstance(v, PatternMatcher)]
    bad = [k for k in tables if not k.startswith("pm_")]
    assert not bad, f"{m.__name__}: tables not named pm_*: {bad}"
    # one name per table: the name a pass looks it up by is the name it is defined with
    assert [(k, vars(m)[k].name) for k in tables if vars(m)[k].name != k] == [], m.__name__
  for p in PASSES:
    assert p.fn is importlib.import_module(f"tinyspec.lower.{p.name}").run, p.name


def test_a_pipeline_with_one_table_replaced_lowers_differently_and_leaves_the_reference_as_it_was():
  root = PROGRAMS["pad_shrink"]().root
  before, globals_before = pipeline_state(PASSES), lower_globals()
  ref = lower(root, opts=())  # no opts: optimize, which re-simplifies with its own tables, leaves the kernels alone
  assert ref["simplify"] is not ref["rangeify"]  # the reference simplify folds something here
  passes = [p.with_table(PatternMatcher([], "pm_simplify")) if p.name == "simplify" else p for p in PASSES]
  assert passes[PASSES.index(SIMPLIFY)].tables.pm_simplify is not pm_simplify
  out = lower(root, passes=passes, opts=())
  assert out["rangeify"] is ref["rangeify"]
  assert out["simplify"] is not ref["simplify"] and out["render"] is not ref["render"]
  # the replacement was an input of that one pipeline: the module's passes, their tables and the globals are unchanged
  assert pipeline_state(PASSES) == before and lower_globals() == globals_before
  assert SIMPLIFY.tables.pm_simplify is pm_simplify
  again = lower(root, opts=())
  assert all(again[k] is ref[k] for k in ref)


def test_with_table_and_replace_rule_name_what_is_missing():
  with pytest.raises(KeyError, match="no table .nope. to replace"): SIMPLIFY.with_table(PatternMatcher([], "nope"))
  with pytest.raises(KeyError, match="no rule"): SIMPLIFY.replace_rule("no_such_rule", lambda x: x)
  with pytest.raises(ValueError, match="needs a name"): Tables([PatternMatcher([])])
  p = SIMPLIFY.replace_rule("mod_below_divisor", lambda x, c: None)
  assert p.tables.pm_simplify is not pm_simplify and p.tables.pm_pin_order is SIMPLIFY.tables.pm_pin_order
  assert [r.name for r in p.rules()] == [r.name for r in SIMPLIFY.rules()]


@pytest.mark.parametrize("bug", SEEDED_BUGS, ids=lambda b: b.name)
def test_a_seeded_bug_is_a_table_of_its_pipeline_not_a_module_global(bug):
  before, globals_before = pipeline_state(PASSES), lower_globals()
  passes = broken_pipeline(bug.name)  # rebuilt from the name alone, as a worker process would
  assert [p.name for p in passes] == [p.name for p in PASSES]
  for p, ref in zip(passes, PASSES):
    fns = {r.fn for r in p.rules()}
    assert (bug.fn in fns) == (p.name == bug.pass_name) and bug.fn not in {r.fn for r in ref.rules()}
    if p.name != bug.pass_name: assert p is ref
  # while the broken pipeline runs, at every rule application, the lower modules' globals are what they were
  seen = []
  def watch(rule, before_node, after_node) -> None: seen.append(lower_globals() == globals_before)
  for prog in ("pad_shrink", "call_two_returns", "reshape_permute", "reductions_int", "assign_int_view", "casts_int"):
    try: lower(PROGRAMS[prog]().root, passes=passes, trace_for=lambda name: Trace(observer=watch))
    except Exception: pass  # a broken pipeline may break a spec: only what it touched matters here
  assert seen and all(seen)
  assert pipeline_state(PASSES) == before and lower_globals() == globals_before
  def fns(ps: list[Pass]) -> list[list]: return [[r.fn for r in p.rules()] for p in ps]
  assert fns(broken_pipeline(BUGS_BY_NAME[bug.name])) == fns(passes)  # the same rules, from the bug or from its name


def test_an_unsound_variant_builds_its_pipeline_the_same_way():
  v = VARIANTS[0]
  passes = v.pipeline()
  simplify = next(p for p in passes if p.name == "simplify")
  assert v.fn in {r.fn for r in simplify.rules()} and v.fn not in {r.fn for r in SIMPLIFY.rules()}
  assert all(p is q for p, q in zip(passes, PASSES) if p.name != "simplify")


def test_tables_are_attributes_named_once_and_frozen():
  t = SIMPLIFY.tables
  assert t.pm_simplify is pm_simplify and list(t) == [pm.name for pm in t.values()]
  with pytest.raises(AttributeError, match="no table 'pm_nope'; the pass has"): t.pm_nope  # noqa: B018
  with pytest.raises(AttributeError, match="frozen"): t.pm_simplify = PatternMatcher([], "pm_simplify")
  with pytest.raises(ValueError, match="cannot be one"): Tables([PatternMatcher([], "values")])
  with pytest.raises(ValueError, match="cannot be one"): Tables([PatternMatcher([], "pm simplify")])
  two = Tables([OPTIMIZE.tables.pm_global, OPTIMIZE.tables.pm_place])  # tables of named functions: pickle takes them
  back = pickle.loads(pickle.dumps(two))
  assert list(back) == ["pm_global", "pm_place"] and [r.name for r in back.pm_place.rules] == ["place_after"]


# ---- rewrites a rule makes inside its own application (lower.base.nested_rewrite) ----
def _placed_in_a_loop() -> UOp:
  """p[0] = p[0] * 3 + r in loop r: the store's storage is placed in r (AFTER(p, r)), which a split of r re-places
  inside its rules, with a nested rewrite of the pass's pm_place."""
  i32, r = dtypes.int32, UOp.range(6, 0)
  slot = UOp.param(0, i32, 1).after(r).index(UOp.const(dtypes.index, 0))
  return UOp(Ops.SINK, src=(slot.store(slot.load() * UOp.const(i32, 3) + r.cast(i32)).end(r),))


SPLIT = LowerOptions(opts=(("split", 0, 2),))


def test_a_rule_applied_only_inside_a_nested_rewrite_is_observed_and_replaceable():
  body = _placed_in_a_loop()
  depth: list[bool] = []
  trace = Trace()
  trace.observer = lambda rule, before, after: depth.append((rule.name, trace.depth > 1))
  ref = OPTIMIZE.run(body, SPLIT, trace)
  assert ref is not body and ("place_after", True) in depth and ("place_after", False) not in depth  # only ever nested
  assert trace.steps == len(depth)
  seen = []
  def unplaced(ctx, u: UOp) -> UOp:
    seen.append(u)
    return u.src[0]  # storage placed in nothing: another graph
  out = OPTIMIZE.replace_rule("place_after", unplaced).run(body, SPLIT)
  assert seen and out is not ref
  assert OPTIMIZE.with_table(PatternMatcher([], "pm_place")).run(body, SPLIT) is not ref  # a table replaced whole, too
  assert OPTIMIZE.run(body, SPLIT) is ref


def _recombined() -> UOp:
  """out[x] = (x//2) % 3 + ((x//2)//3) * 3: the outer rewrite makes the quotient x//6 (idiv_idiv), and divmod_recombine
  finds it by simplifying (x//2)//3 itself, a nested rewrite with the pass's pm_simplify."""
  x, k3 = UOp.range(24, 0), UOp.const(dtypes.index, 3)
  half = x.alu(Ops.IDIV, UOp.const(dtypes.index, 2))
  e = half.alu(Ops.MOD, k3) + half.alu(Ops.IDIV, k3) * k3
  return UOp(Ops.SINK, src=(UOp.param(0, dtypes.int32, 24).index(x).store(e.cast(dtypes.int32)).end(x),))


def test_the_simplifier_quotient_is_simplified_with_the_pass_table_through_its_trace():
  body = _recombined()
  x = body.src[0].src[1]
  trace = Trace()
  apps: list[tuple[str, bool]] = []
  trace.observer = lambda rule, before, after: apps.append((rule.name, trace.depth > 1))
  simplified = SIMPLIFY.run(body, LowerOptions(), trace)
  assert ("idiv_idiv", True) in apps and ("idiv_idiv", False) in apps and ("divmod_recombine", False) in apps
  assert simplified.src[0].src[0].src[1].src[0] is x.alu(Ops.IDIV, UOp.const(dtypes.index, 2))  # recombined to x // 2
  nested: list[UOp] = []
  orig = next(r.fn for r in pm_simplify.rules if r.name == "idiv_idiv")
  def watched(x: UOp, a: UOp, b: UOp) -> UOp | None:
    if watching.depth > 1: nested.append(x)
    return orig(x, a, b)
  watching = Trace()
  assert SIMPLIFY.replace_rule("idiv_idiv", watched).run(body, LowerOptions(), watching) is simplified and nested == [x]


STEPPED = [(OPTIMIZE, _placed_in_a_loop(), SPLIT, "place_after"), (OPTIMIZE, _placed_in_a_loop(), LowerOptions(opts=(("unroll", 0),)), "place_after"),
           (SIMPLIFY, _recombined(), LowerOptions(), "idiv_idiv")]


@pytest.mark.parametrize("p, body, options, inner", STEPPED, ids=["split", "unroll", "recombine"])
def test_a_step_limit_counts_nested_applications_as_one_sequence(p, body, options, inner):
  # blame bisects over a pass's applications: the run stopped after k makes the first k of the full run, no more
  full: list = []
  trace = Trace()
  trace.observer = lambda r, b, a: full.append((r.name, b, a, trace.depth > 1))
  p.run(body, options, trace)
  assert (inner, True) in {(name, nested) for name, _, _, nested in full}
  for k in range(len(full) + 1):
    got: list = []
    limited = Trace(max_steps=k)
    limited.observer = lambda r, b, a, got=got, t=limited: got.append((r.name, b, a, t.depth > 1))
    p.run(body, options, limited)
    assert got == full[:k] and limited.steps == k, k


def test_a_nested_rewrite_shows_no_graph_of_its_own():
  roots: list[UOp] = []
  body = _placed_in_a_loop()
  OPTIMIZE.run(body, SPLIT, Trace(on_graph=lambda k, current, is_body: roots.append(current())))
  assert roots and all(r.op is Ops.SINK for r in roots)


def test_the_package_docstring_lists_the_passes_of_the_pipeline():
  # generated by describe_passes: a pass added to PASSES and not listed (or listed with other stages) fails here
  listed = textwrap.indent(describe_passes(), "    ")
  assert listed in tinyspec.lower.__doc__, f"tinyspec/lower/__init__.py should list the passes as\n{listed}"
  assert [ln.split()[0] for ln in describe_passes().splitlines()] == [p.name for p in PASSES]
  # each line is its module's head: the pass's own name and stages, as the Pass declares them
  for p in PASSES:
    head = importlib.import_module(p.fn.__module__).__doc__.split("\n", 1)[0]
    assert head.startswith(f"{p.name} ({p.stage_in.name} -> {p.stage_out.name}): "), head
  fake = Pass("newpass", Stage.KERNEL, Stage.KERNEL, lambda root, options, trace, tables: root)
  assert textwrap.indent(describe_passes([*PASSES, fake]), "    ") not in tinyspec.lower.__doc__

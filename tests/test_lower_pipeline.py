"""A pass runs the tables it holds: a broken pipeline is built by handing a pass a table, never by swapping module globals."""
from __future__ import annotations

import importlib
import pkgutil

import pytest
from programs import PROGRAMS

import tinyspec.lower
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, SEEDED_BUGS, broken_pipeline
from fuzz.testbed.unsound import VARIANTS
from tinyspec.lower.base import Pass, Tables, Trace
from tinyspec.lower.pipeline import PASSES, lower
from tinyspec.lower.simplify import SIMPLIFY, pm_simplify
from tinyspec.rewrite import PatternMatcher

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

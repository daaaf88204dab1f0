"""`tinyspec repro PATH --viz`: the blamed rule application of a real corpus entry (found by a campaign against a
pipeline with one seeded bug) drawn before and after; without a blamed application, the graph with the failure
highlighted; and the note printed says which."""
from __future__ import annotations

import inspect
import io
import os
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.corpus.store import load_entry, write_entry
from fuzz.check.oracles import lower_options
from fuzz.report.pictures import draw_entry, replay_findings
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, broken_pipeline
from tinyspec.cli import main
from tinyspec.lower.base import Trace
from tinyspec.spec import check

from svgread import SVG, classes, op_of
from svgread import elems as groups
from svgread import text as svg_text
from svgread import title as node_name


def found_entry(tmp_path_factory, bug: str) -> Path:
  """The corpus file a short campaign against the pipeline with `bug` writes (the first finding with a blamed rule)."""
  d = tmp_path_factory.mktemp(bug)
  cfg = CampaignConfig(seconds=40, seed=0, workers=0, corpus=str(d), passes=broken_pipeline(BUGS_BY_NAME[bug]), max_cases=200,
                       reduce_seconds=10, resume=False, stop_when=lambda r: r.signature[2] == BUGS_BY_NAME[bug].rule)
  s = run_campaign(cfg, io.StringIO())
  hits = [f for f in s.findings if f.signature[2] == BUGS_BY_NAME[bug].rule]
  assert hits, f"a campaign against {bug} found {[f.signature for f in s.findings]} in {s.cases} cases"
  return Path(hits[0].path)


@pytest.fixture(scope="module")
def pad_entry(tmp_path_factory) -> Path:
  return found_entry(tmp_path_factory, "pad_gate_dropped")


@pytest.fixture(scope="module")
def reshape_entry(tmp_path_factory) -> Path:
  return found_entry(tmp_path_factory, "view_as_kernel_arg")


def seeded_location(bug: str) -> str:
  fn = BUGS_BY_NAME[bug].fn
  return f"{os.path.relpath(inspect.getsourcefile(fn))}:{inspect.getsourcelines(fn)[1]}"


@pytest.fixture
def broken(monkeypatch):
  """Make the pipeline the one with a seeded bug, as the campaign that found the entry ran it."""
  import tinyspec.lower.pipeline as pipeline
  def use(bug: str) -> None: monkeypatch.setattr(pipeline, "PASSES", broken_pipeline(BUGS_BY_NAME[bug]))
  return use


@pytest.mark.parametrize("bug", ["pad_gate_dropped", "view_as_kernel_arg"])
def test_repro_viz_draws_the_blamed_application(bug, request, broken, tmp_path, capsys):
  entry = request.getfixturevalue("pad_entry" if bug == "pad_gate_dropped" else "reshape_entry")
  broken(bug)
  out = tmp_path / "pic.svg"
  assert main(["repro", str(entry), "--viz", "-o", str(out)]) == 1
  printed = capsys.readouterr().out.splitlines()
  assert printed[-1] == f"still fails: {'/'.join(load_entry(entry).signature)}"
  assert str(out) in printed and any(ln.startswith("picture: rule application") for ln in printed)
  svg = ET.parse(out).getroot()
  assert svg.tag == SVG + "svg"
  rule = BUGS_BY_NAME[bug].rule
  assert f"{rule} @ {seeded_location(bug)}" in svg_text(svg)
  sides = {g.get("id"): g for g in groups(svg, "side")}
  assert set(sides) == {"before", "after"}
  focus = sorted(node_name(g)[:2] for g in groups(svg, "focus"))
  assert focus == ["a_", "b_"], "the rewritten node is highlighted on each side"
  # the node the rule matched is drawn on the left, and is no longer there on the right
  (before_focus,) = [g for g in groups(svg, "focus") if node_name(g).startswith("b_")]
  assert "gone" in classes(before_focus)
  assert groups(svg, "new") and all(node_name(g).startswith("a_") for g in groups(svg, "new"))


def test_repro_viz_default_output_is_the_entry_name_here(pad_entry, broken, tmp_path, monkeypatch, capsys):
  broken("pad_gate_dropped")
  monkeypatch.chdir(tmp_path)
  assert main(["repro", str(pad_entry), "--viz"]) == 1
  out = tmp_path / (pad_entry.stem + ".svg")
  assert capsys.readouterr().out.splitlines()[-2] == out.name
  assert groups(ET.parse(out).getroot(), "focus")


def test_without_a_blamed_application_the_violation_is_highlighted(reshape_entry, tmp_path):
  bug = BUGS_BY_NAME["view_as_kernel_arg"]
  passes = broken_pipeline(bug)
  entry = load_entry(reshape_entry)
  (f,) = [f for f in replay_findings(entry, passes) if f.oracle == "spec"]
  pic = draw_entry(entry, tmp_path / "v.svg", passes, findings=[replace(f, blame=None)])
  assert pic.kind == "violation" and pic.note.startswith("no rule application is to blame")
  svg = ET.parse(pic.path).getroot()
  flagged = groups(svg, "violation")
  # the violations are the spec's own verdict on the graph after rangeify, computed here independently
  g = entry.case.root
  for p in passes[:[p.name for p in passes].index("rangeify") + 1]: g = p.run(g, lower_options(entry.case.options), Trace())
  vs = check(g, p.stage_out)
  assert vs and len(flagged) == len({id(v.node) for v in vs})
  assert {op_of(x) for x in flagged} == {v.node.op.name for v in vs}
  assert [e for e in svg.iter(SVG + "g") if "path" in classes(e)], "the path from the root to the violation is drawn"


def test_a_parity_failure_without_blame_marks_the_differing_output(pad_entry, tmp_path):
  passes = broken_pipeline(BUGS_BY_NAME["pad_gate_dropped"])
  entry = load_entry(pad_entry)
  (f,) = [f for f in replay_findings(entry, passes) if f.oracle == "parity"]
  assert "output 0:" in f.message
  pic = draw_entry(entry, tmp_path / "p.svg", passes, findings=[replace(f, blame=None)])
  assert pic.kind == "violation" and "differing output" in pic.note
  (marked,) = groups(ET.parse(pic.path).getroot(), "violation")
  assert op_of(marked) == "AFTER", "output 0 of the kernel graph after rangeify is the AFTER of its buffer"


def test_repro_viz_of_a_fixed_entry_draws_the_graph_and_says_so(pad_entry, tmp_path, capsys):
  out = tmp_path / "fixed.svg"
  # on the reference pipeline the seeded bug is gone: the entry replays clean
  assert main(["repro", str(pad_entry), "--viz", "-o", str(out)]) == 0
  printed = capsys.readouterr().out
  assert "picture: the entry no longer fails: the graph, with nothing to highlight" in printed and "fixed:" in printed
  svg = ET.parse(out).getroot()
  assert not groups(svg, "side") and not groups(svg, "violation")
  ops = sorted(op_of(g) for g in groups(svg, "uop"))
  assert ops == sorted(u.op.name for u in load_entry(pad_entry).case.root.toposort())


def test_an_entry_that_killed_a_worker_is_drawn_without_replaying_it_here(pad_entry, tmp_path):
  e = load_entry(pad_entry)
  path, _ = write_entry(tmp_path, e.case, ("crash", "worker", "signal11"), message="the worker running case 3 died (signal11)")
  pic = draw_entry(load_entry(path), tmp_path / "w.svg")
  assert pic.fails is None and pic.kind == "graph" and "not replayed here" in pic.note
  assert groups(ET.parse(pic.path).getroot(), "uop")


def test_repro_viz_to_an_unknown_format_is_bad_usage(pad_entry, tmp_path, capsys):
  assert main(["repro", str(pad_entry), "--viz", "-o", str(tmp_path / "x.txt")]) == 2
  assert "format 'txt' is not one of svg" in capsys.readouterr().err
  assert not (tmp_path / "x.txt").exists()

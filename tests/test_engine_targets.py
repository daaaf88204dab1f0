"""The campaign engine's table of targets: every target is a row the engine and the CLI know by name alone, every corpus
KIND replays through exactly one of them, and the campaign gives back its corpus lock and signal handlers however it
ends."""
from __future__ import annotations

import argparse
import io
import signal

import pytest

from fuzz.corpus.store import KINDS
from fuzz.engine import dask_runner
from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig, ConfigError
from fuzz.engine.corpus_dir import CorpusLock
from fuzz.engine.targets import TARGET_NAMES, TARGETS, get_target, target_for_kind
from tinyspec.cli import UsageError, build_parser


def test_every_corpus_kind_has_exactly_one_target():
  for kind in KINDS:
    assert [name for name in TARGET_NAMES if kind in get_target(name).kinds] == [target_for_kind(kind).name]
  with pytest.raises(ValueError, match="no fuzz target stores"):
    target_for_kind("no-such-kind")


def test_targets_are_looked_up_by_their_own_name():
  assert TARGET_NAMES[0] == "reference" and set(TARGET_NAMES) == {"reference", "symbolic", "tinygrad"}
  for name, kind in TARGETS.items():
    assert kind.name == name and get_target(name).name == name
  assert get_target(None).name == "reference"
  assert get_target("symbolic", depth=2).depth == 2
  with pytest.raises(ValueError, match="unknown fuzz target 'nope'"):
    get_target("nope")


def test_the_cli_offers_the_table_s_targets():
  parser = build_parser()
  assert [parser.parse_args(["fuzz", "--target", name]).target for name in TARGET_NAMES] == list(TARGET_NAMES)
  with pytest.raises(UsageError, match="invalid choice: 'nope' \\(choose from " + ", ".join(repr(n) for n in TARGET_NAMES)):
    parser.parse_args(["fuzz", "--target", "nope"])


def test_a_target_reads_its_own_options():
  assert TARGETS["symbolic"].from_args(argparse.Namespace(depth=3, z3_timeout_ms=50)).z3_timeout_ms == 50
  with pytest.raises(ConfigError, match="--depth must be at least 1"):
    TARGETS["symbolic"].from_args(argparse.Namespace(depth=0, z3_timeout_ms=50))
  assert TARGETS["reference"].from_args(argparse.Namespace()).name == "reference"


def test_a_campaign_that_cannot_start_gives_back_its_lock_and_handlers(tmp_path, monkeypatch):
  monkeypatch.setattr(dask_runner, "CONNECT_SECONDS", 1.0)
  before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
  cfg = CampaignConfig(seconds=5, corpus=str(tmp_path), workers=0, max_cases=1, scheduler="tcp://127.0.0.1:1", prove_changed=False)
  with pytest.raises(ConfigError, match="--scheduler"):
    run_campaign(cfg)
  assert {s: signal.getsignal(s) for s in before} == before
  CorpusLock(tmp_path).acquire().release()  # free again: a second campaign may take the directory


def test_a_misspelt_weight_is_refused_before_any_case(tmp_path):
  # a weight no generator reads would steer nothing: the campaign says which, and runs no case
  cfg = CampaignConfig(seconds=5, seed=0, workers=0, corpus=str(tmp_path), max_cases=1, weights={"kind:kernal": 0.5, "dtype:small": -1})
  with pytest.raises(ConfigError, match=r"'kind:kernal' is not a generator weight.*'dtype:small' is -1"):
    run_campaign(cfg, io.StringIO())
  assert not list(tmp_path.glob("*.py"))
  cfg = CampaignConfig(seconds=5, seed=0, workers=0, corpus=str(tmp_path), max_cases=1, weights={"kind:kernel": 0.0}, prove_changed=False)
  assert run_campaign(cfg, io.StringIO()).cases == 1

"""The campaign report: a static HTML page in a directory, kept up to date while a campaign runs.

`tinyspec fuzz --report DIR` rewrites DIR/index.html after every status interval, after every epoch and at the end.
DIR holds, besides the page:
  history.json      (elapsed, cases, findings) samples of the campaign, for the progress plot; a resumed campaign
                    (same seed) continues its history, a fresh one starts a new one
  pictures/*.svg    one picture per finding (fuzz.report.pictures: the blamed rule application before and after, or the
                    graph with the failure marked), drawn once per corpus file
  pictures.json     what each picture shows, so it is not drawn again
Every file is written whole (a temp file, then a rename), so a browser or a copy never sees half a page.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from fuzz.corpus.store import bug_group, entry_path, load_entry
from fuzz.report.html import FindingRow, ReportData, RuleRow, page
from fuzz.report.pictures import draw_entry, passes_of
from tinyspec.fileio import atomic_write

MAX_SAMPLES = 2000  # history samples kept: past this, every other old one is dropped
BLAMED = re.compile(r"blamed: rule '(?P<rule>.*?)' of pass (?P<pass>\S+) at (?P<loc>\S+), application (?P<step>\d+) of (?P<total>\d+)")


def rule_locations(passes: Sequence | None) -> dict[str, tuple[str, str, str]]:
  """"pass/rule" -> (pass, rule, file:line) for every rule of the pipeline."""
  out = {}
  for p in passes_of(passes):
    for r in p.rules(): out.setdefault(f"{p.name}/{r.name}", (p.name, r.name, r.location))
  return out


def header_of(path: str | Path) -> dict[str, Any]:
  """What a corpus file's header comments say: its message, the blame line, the case number."""
  out: dict[str, Any] = {"message": "", "blame": "", "case": None}
  try: text = Path(path).read_text()
  except OSError: return out
  msg: list[str] = []
  for i, ln in enumerate(text.splitlines()):
    if not ln.startswith("#"): break
    if i == 1 and (m := re.search(r"case (\d+)", ln)): out["case"] = int(m.group(1))
    if i < 2: continue
    if ln[1:].strip().startswith("blamed:"):
      out["blame"] = ln[1:].strip()
      break
    msg.append(ln[2:] if ln.startswith("# ") else ln[1:])
  out["message"] = "\n".join(msg)
  return out


def repro_command(path: str) -> str:
  p = Path(path)
  if p.is_absolute():
    try: p = p.relative_to(Path.cwd())
    except ValueError: pass
  return f"tinyspec repro {p}"


class CampaignReport:
  """The report of one campaign in out_dir. update() gathers what the campaign knows and rewrites the page."""

  def __init__(self, out_dir: str | os.PathLike, seed: int, passes: Sequence | None = None, continue_history: bool = False,
               refresh: int | None = 30, target: Any = None):
    self.dir = Path(out_dir)
    self.dir.mkdir(parents=True, exist_ok=True)
    (self.dir / "pictures").mkdir(exist_ok=True)
    self.seed, self.passes, self.refresh = seed, passes, refresh
    self.target = target  # the campaign's fuzz.engine.protocol.Target (None: the reference pipeline of passes)
    self.target_name = "reference" if target is None else target.name
    self.locations = rule_locations(passes) if target is None else target.rule_locations(SimpleNamespace(passes=passes))
    self.history: list[tuple[float, int, int]] = []
    self.offset = 0.0
    if continue_history: self._load_history()
    self.pictures: dict[str, dict[str, Any]] = self._load_json(self.dir / "pictures.json", {})
    self.warned = False

  @property
  def index(self) -> Path: return self.dir / "index.html"

  def _load_json(self, path: Path, default: Any) -> Any:
    try: return json.loads(path.read_text())
    except (OSError, ValueError): return default

  def _load_history(self) -> None:
    h = self._load_json(self.dir / "history.json", {})
    if h.get("seed") != self.seed or h.get("target", "reference") != self.target_name: return
    self.history = [(float(t), int(c), int(f)) for t, c, f in h.get("samples", [])]
    if self.history: self.offset = self.history[-1][0]

  def record(self, elapsed: float, cases: int, findings: int) -> None:
    self.history.append((self.offset + elapsed, cases, findings))
    if len(self.history) > MAX_SAMPLES: self.history = self.history[:-1:2] + self.history[-1:]
    atomic_write(self.dir / "history.json", json.dumps({"seed": self.seed, "target": self.target_name, "samples": self.history}))

  # ---- findings ----
  def picture_for(self, path: str, message: str) -> dict[str, Any]:
    """The picture of a corpus file, drawn when the file is new or changed since it was last drawn."""
    p = Path(path)
    try: mtime = p.stat().st_mtime
    except OSError: return {"note": f"no corpus file {path}"}
    key = p.name
    old = self.pictures.get(key)
    if old and old.get("mtime") == mtime and (not old.get("picture") or (self.dir / old["picture"]).exists()): return old
    rel = f"pictures/{p.stem}.svg"
    try:
      entry = load_entry(p)
      if self.target is not None and entry.case.kind in self.target.kinds: pic = self.target.draw(entry, self.dir / rel, self.passes, message=message)
      else: pic = draw_entry(entry, self.dir / rel, self.passes, message=message)
      os.chmod(pic.path, 0o644)
      info = {"mtime": mtime, "picture": rel, "kind": pic.kind, "note": pic.note, "rule": pic.rule, "pass_name": pic.pass_name,
              "location": pic.location, "step": pic.step, "total": pic.total}
    except Exception as e:  # a finding whose picture cannot be drawn is still reported
      info = {"mtime": mtime, "picture": "", "note": f"could not draw it: {type(e).__name__}: {str(e)[:300]}"}
    self.pictures[key] = info
    atomic_write(self.dir / "pictures.json", json.dumps(self.pictures, indent=1, sort_keys=True))
    return info

  def finding_row(self, signature: tuple[str, str, str], path: str, message: str, blame: str, case: int | None, nodes: int | None,
                  new: bool) -> FindingRow:
    row = FindingRow(tuple(signature), path, repro_command(path) if path != "-" else "-", message, case, nodes, new)  # type: ignore[arg-type]
    if (m := BLAMED.search(blame or "")) is not None:
      row.rule, row.pass_name, row.location = m["rule"], m["pass"], m["loc"]
      row.step, row.total = int(m["step"]), int(m["total"])
    if path == "-":
      row.picture_note = "no corpus file: nothing to draw"
      return row
    info = self.picture_for(path, message)
    row.picture, row.picture_kind, row.picture_note = info.get("picture", ""), info.get("kind", ""), info.get("note", "")
    if info.get("rule") and info.get("step"):
      row.rule, row.pass_name, row.location, row.step, row.total = info["rule"], info["pass_name"], info["location"], info["step"], info["total"]
    return row

  # ---- the page ----
  def update(self, campaign: Any, elapsed: float, status: str = "running") -> Path | None:
    """Record a history sample and rewrite the page from the campaign's state. A failure to write the report is
    printed once and never ends the campaign."""
    try:
      data = self.gather(campaign, elapsed, status)
      self.record(elapsed, data.cases, len(data.findings))
      data.history = list(self.history)
      atomic_write(self.index, page(data))
      return self.index
    except Exception as e:
      if not self.warned:
        print(f"fuzz: could not write the report in {self.dir}: {type(e).__name__}: {e}", file=sys.stderr)
        self.warned = True
      return None

  def gather(self, c: Any, elapsed: float, status: str) -> ReportData:
    """The report's data from a fuzz.engine.campaign.Campaign."""
    cfg = c.cfg
    counts: dict[str, int] = dict(c.coverage.counts)
    for _, fired in c.epoch_results.values():  # the epoch in progress is not in the coverage yet
      for k, n in fired.items(): counts[k] = counts.get(k, 0) + n
    rules = []
    for name in c.rules:
      pass_name, rule, loc = self.locations.get(name, (name.split("/")[0], name.split("/", 1)[-1], "<unknown>"))
      rules.append(RuleRow(name, pass_name, rule, loc, int(counts.get(name, 0))))
    findings, seen = [], set()
    for r in c.findings:
      seen.add(bug_group(r.signature))
      # a rule refuted at the campaign's start (case -1) comes from no case
      row = self.finding_row(tuple(r.signature), r.path, r.message, r.blame, r.case if r.case >= 0 else None, r.nodes, r.new)
      row.also = tuple(getattr(r, "also", ()))
      findings.append(row)
    for sig in sorted(c.known):  # found by an earlier run of this campaign
      if bug_group(sig) in seen: continue
      path = entry_path(cfg.corpus, sig)
      if not path.exists(): continue
      h = header_of(path)
      findings.append(self.finding_row(tuple(sig), str(path), h["message"], h["blame"], h["case"], None, False))
    total = c.prior_cases + c.cases
    backends, mode = c.target.describe(cfg) if getattr(c, "target", None) is not None else (tuple(cfg.backends), "")
    return ReportData(seed=cfg.seed, status=status, updated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
                      elapsed=self.offset + elapsed, cases=total, rate=c.cases / elapsed if elapsed > 0 else 0.0,
                      backends=tuple(backends), per_rewrite=bool(cfg.per_rewrite), corpus=str(cfg.corpus), rules=rules,
                      findings=findings, refresh=self.refresh, target=self.target_name, mode=mode)


def for_campaign(campaign: Any) -> CampaignReport:
  """The report a campaign keeps in its cfg.report directory; a resumed campaign continues the history there."""
  cfg = campaign.cfg
  return CampaignReport(cfg.report, cfg.seed, cfg.passes, continue_history=campaign.prior_cases > 0,
                        refresh=max(10, int(round(cfg.status_every))), target=getattr(campaign, "target", None))


__all__ = ["CampaignReport", "for_campaign", "rule_locations", "header_of", "repro_command", "FindingRow", "ReportData", "RuleRow"]

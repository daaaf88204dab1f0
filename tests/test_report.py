"""`tinyspec fuzz --report DIR`: a campaign keeps a static HTML report up to date. The report of a real short campaign
against a pipeline with a seeded bug is opened in a headless browser (Debian's chromium), which must render the
summary, the progress plot, the rule coverage table and every finding's picture; a screenshot is saved (into
$TINYSPEC_SCREENSHOT_DIR when set)."""
from __future__ import annotations

import inspect
import io
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fuzz.engine.campaign import run_campaign
from fuzz.engine.config import CampaignConfig
from fuzz.report.writer import header_of
from fuzz.report.html import nice_ticks, rates
from fuzz.testbed.seeded_bugs import BUGS_BY_NAME, broken_pipeline
from tinyspec.cli import main

SVG = "{http://www.w3.org/2000/svg}"
BUG = "pad_gate_dropped"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


# ---- a small DOM from HTML text (the page as written, or as the browser rendered it) ----
class El:
  def __init__(self, tag: str, attrs: dict[str, str], parent: El | None):
    self.tag, self.attrs, self.parent, self.children, self.text_parts = tag, attrs, parent, [], []

  @property
  def classes(self) -> set[str]: return set(self.attrs.get("class", "").split())

  def text(self) -> str: return "".join(self.text_parts + [c.text() for c in self.children]).strip()

  def iter(self):
    yield self
    for c in self.children: yield from c.iter()

  def find_all(self, tag: str | None = None, cls: str | None = None) -> list[El]:
    return [e for e in self.iter() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)]

  def by_id(self, id_: str) -> El:
    (e,) = [e for e in self.iter() if e.attrs.get("id") == id_]
    return e


class DomBuilder(HTMLParser):
  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.root = self.cur = El("#document", {}, None)

  def handle_starttag(self, tag, attrs):
    el = El(tag, {k: v or "" for k, v in attrs}, self.cur)
    self.cur.children.append(el)
    if tag not in VOID: self.cur = el

  def handle_startendtag(self, tag, attrs):
    self.cur.children.append(El(tag, {k: v or "" for k, v in attrs}, self.cur))

  def handle_endtag(self, tag):
    e = self.cur
    while e is not None and e.tag != tag: e = e.parent
    if e is not None and e.parent is not None: self.cur = e.parent

  def handle_data(self, data): self.cur.text_parts.append(data)


def dom(html: str) -> El:
  b = DomBuilder()
  b.feed(html)
  return b.root


# ---- a real campaign with a report ----
@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
  d = tmp_path_factory.mktemp("campaign")
  bug = BUGS_BY_NAME[BUG]
  # a short status interval: the report is rewritten many times while the campaign runs, as over hours of a long one
  cfg = CampaignConfig(seconds=40, seed=0, workers=0, corpus=str(d / "corpus"), passes=broken_pipeline(bug), max_cases=64,
                       reduce_seconds=10, resume=False, status_every=0.05, report=str(d / "report"))
  summary = run_campaign(cfg, io.StringIO())
  assert any(f.signature[2] == bug.rule for f in summary.findings), f"no {bug.rule} finding in {summary.cases} cases"
  return cfg, summary, d / "report"


def rule_names(passes) -> list[str]:
  return sorted({f"{p.name}/{r.name}" for p in passes for r in p.rules()})


def summary_values(page: El) -> dict[str, str]:
  return {tr.attrs["data-key"]: tr.find_all("td", "value")[0].text() for tr in page.by_id("summary").find_all("tr")}


def test_the_campaign_keeps_its_history_and_writes_whole_files(campaign):
  cfg, summary, report = campaign
  h = json.loads((report / "history.json").read_text())
  samples = h["samples"]
  assert h["seed"] == cfg.seed and samples[0] == [0.0, 0, 0]
  assert len(samples) > 5, "a sample per status interval"
  assert all(a[0] <= b[0] and a[1] <= b[1] and a[2] <= b[2] for a, b in zip(samples, samples[1:]))
  assert samples[-1][1:] == [summary.cases, len(summary.findings)]
  assert any(0 < s[1] < summary.cases for s in samples), "the report was rewritten while the campaign ran, not only at its end"
  assert not [p for p in report.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"], "no temp file is left behind"
  assert (report / "index.html").stat().st_mode & 0o044 == 0o044, "the page is readable by others, like any web page"


def test_the_page_as_written(campaign):
  cfg, summary, report = campaign
  page = dom((report / "index.html").read_text())
  assert page.by_id("status").text() == "finished"
  assert not [m for m in page.find_all("meta") if m.attrs.get("http-equiv") == "refresh"], "a finished campaign's page does not reload"
  vals = summary_values(page)
  assert vals["seed"] == str(cfg.seed) and vals["cases"] == str(summary.cases) and vals["findings"] == str(len(summary.findings))
  assert vals["backends"] == "reference"
  assert float(vals["cases/s"]) == pytest.approx(summary.cases / summary.seconds, rel=0.1, abs=0.2)
  assert not [e for e in page.iter() if e.tag == "script" and e.attrs.get("src")], "no script is fetched from anywhere"
  assert not [e for e in page.iter() if e.tag == "link"]
  # the coverage table: every rule of the pipeline once, never-fired ones first, counts as the campaign saw them
  rows = page.by_id("coverage").find_all("tr")[1:]
  names = [f"{r.find_all('td', 'pass')[0].text()}/{r.find_all('td', 'rule')[0].text()}" for r in rows]
  assert sorted(names) == rule_names(broken_pipeline(BUGS_BY_NAME[BUG]))
  counts = [int(r.find_all("td", "count")[0].text()) for r in rows]
  nfired = sum(1 for c in counts if c)
  assert counts[:len(counts) - nfired] == [0] * (len(counts) - nfired) and all(counts[len(counts) - nfired:])
  assert {n for n, c in zip(names, counts) if c} == set(summary.rules_fired)
  for r in rows: assert ":" in r.find_all("td", "location")[0].text()


def test_each_finding_has_its_signature_blame_command_and_picture(campaign):
  cfg, summary, report = campaign
  page = dom((report / "index.html").read_text())
  arts = page.find_all("article", "finding")
  assert [a.attrs["data-signature"] for a in arts] == ["/".join(f.signature) for f in summary.findings]
  bug = BUGS_BY_NAME[BUG]
  loc = f"{os.path.relpath(inspect.getsourcefile(bug.fn))}:{inspect.getsourcelines(bug.fn)[1]}"
  by_sig = {a.attrs["data-signature"]: a for a in arts}
  for f in summary.findings:
    a = by_sig["/".join(f.signature)]
    assert a.find_all("code", "repro")[0].text() == f"tinyspec repro {f.path}"
    assert a.find_all("dd", "oracle")[0].text() == f.signature[0] and a.find_all("dd", "stage")[0].text() == f.signature[1]
    (img,) = a.find_all("img")
    pic = report / img.attrs["src"]
    assert pic.is_file() and ET.parse(pic).getroot().tag == SVG + "svg"
  seeded = by_sig["/".join(next(f for f in summary.findings if f.signature[2] == bug.rule).signature)]
  assert seeded.find_all("dd", "blamed-rule")[0].text().startswith(f"{bug.pass_name}/{bug.rule} (application ")
  assert seeded.find_all("dd", "location")[0].text() == loc
  svg = ET.parse(report / seeded.find_all("img")[0].attrs["src"]).getroot()
  assert {g.get("id") for g in svg.iter(SVG + "g") if "side" in (g.get("class") or "").split()} == {"before", "after"}


def test_a_running_campaign_page_reloads_itself(campaign, tmp_path):
  from fuzz.engine.campaign import Campaign
  from fuzz.report.writer import for_campaign
  cfg, summary, _ = campaign
  c = Campaign(CampaignConfig(seed=cfg.seed, workers=0, corpus=cfg.corpus, passes=cfg.passes, report=str(tmp_path / "r"), status_every=12))
  assert for_campaign(c).update(c, 3.0, "running") == tmp_path / "r" / "index.html"
  page = dom((tmp_path / "r" / "index.html").read_text())
  assert page.by_id("status").text() == "running"
  assert [m.attrs["content"] for m in page.find_all("meta") if m.attrs.get("http-equiv") == "refresh"] == ["12"]
  assert summary_values(page)["cases"] == str(summary.cases), "the saved state's cases, before this run made any"


def test_a_resumed_campaign_continues_the_report(campaign, tmp_path):
  cfg, summary, report = campaign
  d = tmp_path / "r"
  shutil.copytree(report, d)
  shutil.copytree(cfg.corpus, tmp_path / "corpus")
  before = json.loads((d / "history.json").read_text())["samples"]
  more = CampaignConfig(seconds=40, seed=cfg.seed, workers=0, corpus=str(tmp_path / "corpus"), passes=cfg.passes, max_cases=summary.cases + 8,
                        reduce_seconds=10, resume=True, status_every=0.0, report=str(d))
  s2 = run_campaign(more, io.StringIO())
  after = json.loads((d / "history.json").read_text())["samples"]
  assert after[:len(before)] == before and after[-1][1] == summary.cases + s2.cases and all(t >= before[-1][0] for t, _, _ in after[len(before):])
  page = dom((d / "index.html").read_text())
  assert summary_values(page)["cases"] == str(summary.cases + s2.cases)
  # findings of the first run are still listed, read back from the corpus
  assert {a.attrs["data-signature"] for a in page.find_all("article", "finding")} >= {"/".join(f.signature) for f in summary.findings}


def test_corpus_header_is_read_back(campaign):
  _, summary, _ = campaign
  f = next(f for f in summary.findings if f.blame)
  h = header_of(f.path)
  assert h["message"].splitlines()[0] == f.message.splitlines()[0]
  assert h["blame"] == f.blame.splitlines()[0] and h["case"] == f.case


def test_rates_ignore_samples_taken_close_together():
  hist = [(0.0, 0, 0), (10.0, 100, 0), (20.0, 300, 1), (20.01, 300, 1)]
  assert rates(hist) == [(10.0, 10.0), (20.01, pytest.approx(200 / 10.01))]
  assert rates(hist[:1]) == []


def test_ticks_cover_the_range_with_round_steps():
  assert nice_ticks(0, 96) == [0, 20, 40, 60, 80, 100]
  assert nice_ticks(0, 2.0) == [0, 0.5, 1.0, 1.5, 2.0]
  assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_cli_fuzz_report_into_a_file_is_bad_usage(tmp_path, capsys):
  (tmp_path / "f").write_text("")
  assert main(["fuzz", "--max-cases", "1", "--corpus", str(tmp_path / "c"), "--report", str(tmp_path / "f")]) == 2
  assert f"cannot keep the report in {tmp_path / 'f'}" in capsys.readouterr().err


def test_cli_fuzz_report(tmp_path, capsys):
  rc = main(["fuzz", "--seconds", "30", "--max-cases", "4", "--workers", "0", "--corpus", str(tmp_path / "c"), "--report", str(tmp_path / "r"),
             "--fresh"])
  out = capsys.readouterr().out
  assert rc in (0, 1) and f"report: {tmp_path / 'r' / 'index.html'}" in out
  page = dom((tmp_path / "r" / "index.html").read_text())
  assert summary_values(page)["cases"] == "4" and page.by_id("status").text() == "finished"


# ---- in a real browser ----
def chromium() -> str:
  exe = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
  if exe is None:
    if os.environ.get("CI") == "true": pytest.fail("chromium is missing: scripts/setup.sh installs it (apt-get install chromium); CI runs this test")
    pytest.skip("chromium is not installed (scripts/setup.sh installs it as root: apt-get install -y chromium)")
  return exe


def browse(exe: str, url: str, tmp: Path, *extra: str) -> str:
  profile = tmp / f"profile{len(list(tmp.glob('profile*')))}"
  cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", *extra, url]
  r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, f"chromium failed ({r.returncode}): {r.stderr[-2000:]}"
  return r.stdout


def test_the_report_renders_in_a_browser(campaign, tmp_path):
  exe = chromium()
  cfg, summary, report = campaign
  url = (report / "index.html").resolve().as_uri()
  page = dom(browse(exe, url, tmp_path, "--dump-dom"))
  vals = summary_values(page)
  assert vals["seed"] == "0" and vals["cases"] == str(summary.cases) and vals["findings"] == str(len(summary.findings))
  assert len(page.by_id("coverage").find_all("tr")) == 1 + len(rule_names(cfg.passes))
  plot = page.by_id("progress-plot")
  assert plot.tag == "svg" and len(plot.find_all("polyline", "series")) == 2
  imgs = [i for a in page.find_all("article", "finding") for i in a.find_all("img")]
  assert len(imgs) == len(summary.findings)
  for img in imgs:
    assert (report / img.attrs["src"]).is_file()
    # set by the page's script once the browser has decoded the picture
    assert img.attrs.get("data-loaded") == "true", f"the browser could not show {img.attrs['src']}"
  shots = Path(os.environ.get("TINYSPEC_SCREENSHOT_DIR") or tmp_path)
  shots.mkdir(parents=True, exist_ok=True)
  shot = shots / "fuzz-report.png"
  browse(exe, url, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars")
  png = shot.read_bytes()
  assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1280 and len(png) > 50_000

"""The HTML of the campaign report and the SVG of its progress plot, from plain data (fuzz.report.writer gathers it).

The page is one self-contained file: styles and the plot inline, finding pictures as SVG files next to it, no
script or font from the network, so it reads the same opened from disk as served.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Sequence


@dataclass
class FindingRow:
  """One finding as the report shows it. picture is relative to the report directory ("" when there is none)."""
  signature: tuple[str, str, str]
  path: str                 # the corpus file, "-" when the finding has none
  command: str              # the command that replays it
  message: str = ""
  case: int | None = None
  nodes: int | None = None
  new: bool = True
  picture: str = ""
  picture_kind: str = ""
  picture_note: str = ""
  rule: str = ""            # the blamed rule, its pass and location ("" when no rule application is to blame)
  pass_name: str = ""
  location: str = ""
  step: int = 0
  total: int = 0
  also: tuple[str, ...] = ()  # the other signatures the finding's bug group was found with (one entry holds the group)


@dataclass
class RuleRow:
  name: str                 # pass/rule
  pass_name: str
  rule: str
  location: str
  count: int


@dataclass
class ReportData:
  seed: int
  status: str               # running, finished or interrupted
  updated: str              # when the page was written (UTC)
  elapsed: float            # seconds, over every run of the campaign
  cases: int                # cases, over every run
  rate: float               # cases per second in this run
  backends: tuple[str, ...]
  per_rewrite: bool
  corpus: str
  rules: list[RuleRow] = field(default_factory=list)
  findings: list[FindingRow] = field(default_factory=list)
  history: list[tuple[float, int, int]] = field(default_factory=list)  # (elapsed s, cases, findings)
  refresh: int | None = None  # seconds between reloads of an open page while the campaign runs
  target: str = "reference"   # what the campaign fuzzes (fuzz.engine.targets)
  mode: str = ""              # what it checks ("": the reference pipeline's, from per_rewrite)


def duration(s: float) -> str:
  s = max(0.0, s)
  if s < 60: return f"{s:.1f} s"
  m, sec = divmod(int(round(s)), 60)
  if m < 60: return f"{m} min {sec:02d} s"
  h, m = divmod(m, 60)
  return f"{h} h {m:02d} min"


# ---- the plot ----
def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
  """About n round tick values covering [lo, hi]."""
  if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo: hi = lo + 1.0
  raw = (hi - lo) / max(n, 1)
  mag = 10 ** math.floor(math.log10(raw))
  step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
  first = math.floor(lo / step) * step
  ticks, t = [], first
  while t <= hi + step * 1e-9:
    ticks.append(round(t, 10))
    t += step
  if ticks[-1] < hi: ticks.append(round(ticks[-1] + step, 10))
  return ticks


def _fmt(v: float) -> str:
  return f"{int(v)}" if float(v).is_integer() else f"{v:.3g}"


def _time_unit(tmax: float) -> tuple[float, str]:
  return (3600.0, "h") if tmax >= 3 * 3600 else (60.0, "min") if tmax >= 180 else (1.0, "s")


def _panel(title: str, pts: list[tuple[float, float]], x0: float, unit: tuple[float, str], color: str, step: bool, cls: str) -> str:
  """One chart of a series at horizontal offset x0: axes, ticks, the line and a dot (with a tooltip) per point."""
  w, h, ml, mr, mt, mb = 440, 230, 52, 14, 28, 38
  pw, ph = w - ml - mr, h - mt - mb
  div, uname = unit
  xs = [p[0] / div for p in pts]
  ys = [p[1] for p in pts]
  xt = nice_ticks(0.0, max(xs) if xs else 1.0)
  yt = nice_ticks(0.0, max(ys) if ys and max(ys) > 0 else 1.0)
  sx = lambda x: x0 + ml + pw * (x - xt[0]) / (xt[-1] - xt[0])
  sy = lambda y: mt + ph * (1 - (y - yt[0]) / (yt[-1] - yt[0]))
  out = [f'<g class="panel {cls}">', f'<text x="{x0 + ml}" y="16" class="ptitle">{escape(title)}</text>']
  for y in yt:
    out.append(f'<line x1="{x0 + ml}" x2="{x0 + ml + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" class="grid"/>')
    out.append(f'<text x="{x0 + ml - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{_fmt(y)}</text>')
  for x in xt:
    out.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{mt + ph}" y2="{mt + ph + 4}" class="axis"/>')
    out.append(f'<text x="{sx(x):.1f}" y="{mt + ph + 16}" text-anchor="middle">{_fmt(x)}</text>')
  out.append(f'<text x="{x0 + ml + pw / 2}" y="{h - 4}" text-anchor="middle">elapsed ({uname})</text>')
  out.append(f'<polyline points="{x0 + ml},{mt} {x0 + ml},{mt + ph} {x0 + ml + pw},{mt + ph}" class="axis" fill="none"/>')
  if pts:
    coords: list[tuple[float, float]] = []
    for i, (x, y) in enumerate(zip(xs, ys)):
      if step and i: coords.append((sx(x), sy(ys[i - 1])))
      coords.append((sx(x), sy(y)))
    out.append(f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in coords)}" fill="none" stroke="{color}" stroke-width="2" class="series"/>')
    for (x, y), p in zip(zip(xs, ys), pts):
      out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"><title>{duration(p[0])}: {_fmt(round(y, 2))}</title></circle>')
  out.append("</g>")
  return "\n".join(out)


def rates(hist: Sequence[tuple[float, int, int]], points: int = 60) -> list[tuple[float, float]]:
  """Cases per second over windows of at least 1/points of the elapsed time, so samples taken close together (the
  last one of a run, an epoch ending right after a status line) do not give spikes; (window end, rate)."""
  if len(hist) < 2: return []
  min_dt = (hist[-1][0] - hist[0][0]) / points
  out: list[tuple[float, float]] = []
  t0, c0 = hist[0][0], hist[0][1]
  starts: list[tuple[float, int]] = []
  for t, c, _ in hist[1:]:
    if t - t0 <= 0 or t - t0 < min_dt: continue
    starts.append((t0, c0))
    out.append((t, (c - c0) / (t - t0)))
    t0, c0 = t, c
  if t0 < hist[-1][0] and starts:  # a short tail joins the last window
    (ts, cs), (t, c) = starts[-1], hist[-1][:2]
    out[-1] = (t, (c - cs) / (t - ts))
  return out


def progress_svg(history: Sequence[tuple[float, int, int]]) -> str:
  """Cases per second (between consecutive samples) and findings found, both over elapsed time, as one inline SVG."""
  hist = sorted(history)
  rate = rates(hist)
  found = [(t, float(f)) for t, _, f in hist]
  unit = _time_unit(hist[-1][0] if hist else 0.0)
  body = _panel("cases per second", rate, 0, unit, "#1565c0", False, "rate") + _panel("findings", found, 450, unit, "#c62828", True, "findings")
  return (f'<svg xmlns="http://www.w3.org/2000/svg" id="progress-plot" width="890" height="230" viewBox="0 0 890 230" role="img" '
          f'aria-label="cases per second and findings over elapsed time">{body}</svg>')


# ---- the page ----
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 20px 40px; color: #212121; background: #fff; }
h1 { font-size: 22px; margin: 18px 0 4px; } h2 { font-size: 18px; margin: 26px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 0 0 6px; font-family: ui-monospace, Menlo, Consolas, monospace; }
nav a { margin-right: 14px; } code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; white-space: pre-wrap; margin: 6px 0; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; color: #fff; background: #757575; }
.status.running { background: #1565c0; } .status.finished { background: #2e7d32; } .status.interrupted { background: #ef6c00; }
table { border-collapse: collapse; } td, th { padding: 3px 10px; text-align: left; vertical-align: top; }
#summary td:first-child { color: #616161; } #summary td { border-bottom: 1px solid #eee; }
#coverage th { background: #f5f5f5; position: sticky; top: 0; } #coverage td { border-bottom: 1px solid #eee; }
#coverage td.count { text-align: right; font-variant-numeric: tabular-nums; }
#coverage tr.never td { background: #fff3e0; } #coverage tr.never td.count { color: #e65100; font-weight: bold; }
.finding { border: 1px solid #ddd; border-radius: 6px; padding: 12px; margin: 12px 0; }
.finding dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 6px 0; }
.finding dt { color: #616161; } .finding dd { margin: 0; }
.picture { margin-top: 8px; } .picture img { max-width: 100%; height: auto; border: 1px solid #eee; background: #fff; }
.picture img.missing { min-height: 2em; border-color: #c62828; } .note { color: #616161; font-style: italic; font-size: 13px; }
#progress-plot text { font-size: 11px; fill: #424242; } #progress-plot .ptitle { font-size: 13px; font-weight: bold; }
#progress-plot .grid { stroke: #eee; } #progress-plot .axis { stroke: #9e9e9e; }
"""

# marks each picture the browser could or could not load, so a broken one is visible on the page
SCRIPT = """window.addEventListener("load", function () {
  document.querySelectorAll(".picture img").forEach(function (img) {
    var ok = img.complete && img.naturalWidth > 0;
    img.setAttribute("data-loaded", ok ? "true" : "false");
    if (!ok) { img.classList.add("missing"); img.alt = "picture missing: " + img.getAttribute("src"); }
  });
});"""


def _summary(d: ReportData) -> str:
  fired = sum(1 for r in d.rules if r.count)
  rows = [("target", d.target), ("seed", str(d.seed)), ("elapsed", duration(d.elapsed)), ("cases", str(d.cases)), ("cases/s", f"{d.rate:.1f}"),
          ("findings", str(len(d.findings))), ("backends", ", ".join(d.backends)),
          ("rule coverage", f"{fired}/{len(d.rules)} rules fired" if d.rules else "-"),
          ("mode", d.mode or ("spec checked after every rule application" if d.per_rewrite else "spec checked after every pass")),
          ("corpus", d.corpus)]
  body = "".join(f'<tr data-key="{escape(k)}"><td>{escape(k)}</td><td class="value">{escape(v)}</td></tr>' for k, v in rows)
  return f'<section id="summary-section"><h2>Summary</h2><table id="summary">{body}</table></section>'


def _finding(i: int, f: FindingRow) -> str:
  sig = "/".join(f.signature)
  blamed = f"{f.pass_name}/{f.rule}" if f.rule and f.pass_name else (f.rule or "none")
  app = f" (application {f.step} of {f.total})" if f.step else ""
  rows = [("oracle", f.signature[0]), ("stage", f.signature[1]), ("signature rule", f.signature[2]), ("blamed rule", blamed + app),
          ("location", f.location or "-"), ("case", "-" if f.case is None else str(f.case)),
          ("nodes", "-" if f.nodes is None else str(f.nodes)), ("corpus file", f.path)]
  if f.also: rows.append(("also found as", ", ".join(f.also)))
  dl = "".join(f'<dt>{escape(k)}</dt><dd class="{escape(k.replace(" ", "-"))}">{escape(v)}</dd>' for k, v in rows)
  if f.picture:
    pic = (f'<div class="picture {escape(f.picture_kind)}"><a href="{escape(f.picture)}"><img src="{escape(f.picture)}" '
           f'alt="{escape(sig)}: {escape(f.picture_note)}" loading="eager"></a><div class="note">{escape(f.picture_note)}</div></div>')
  else:
    pic = f'<div class="picture none"><div class="note">{escape(f.picture_note or "no picture")}</div></div>'
  return (f'<article class="finding" id="finding-{i}" data-signature="{escape(sig)}"><h3>{escape(sig)}</h3>'
          f'<pre class="message">{escape(f.message)}</pre><dl>{dl}</dl>'
          f'<div>reproduce: <code class="repro">{escape(f.command)}</code></div>{pic}</article>')


def _coverage(d: ReportData) -> str:
  rows = sorted(d.rules, key=lambda r: (r.count > 0, r.count, r.name)) if d.rules else []
  never = sum(1 for r in rows if not r.count)
  body = "".join(f'<tr class="{"never" if not r.count else "fired"}"><td class="rule">{escape(r.rule)}</td>'
                 f'<td class="pass">{escape(r.pass_name)}</td><td class="location"><code>{escape(r.location)}</code></td>'
                 f'<td class="count">{r.count}</td></tr>' for r in rows)
  return (f'<section id="coverage-section"><h2>Rule coverage</h2><p>{never} of {len(rows)} rules never fired (listed first), then the '
          f'rest, rarest first.</p><table id="coverage"><thead><tr><th>rule</th><th>pass</th><th>location</th><th>firings</th></tr></thead>'
          f'<tbody>{body}</tbody></table></section>')


def page(d: ReportData) -> str:
  refresh = f'<meta http-equiv="refresh" content="{d.refresh}">' if d.refresh and d.status == "running" else ""
  plot = (progress_svg(d.history) if len(d.history) >= 2 else
          '<p class="note">Not enough samples yet: the plot starts after the second status update.</p>')
  findings = "".join(_finding(i, f) for i, f in enumerate(d.findings)) or '<p id="no-findings">No findings.</p>'
  return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{refresh}
<title>tinyspec fuzz: seed {d.seed}, {len(d.findings)} finding(s)</title>
<style>{CSS}</style></head>
<body>
<h1>tinyspec fuzz campaign <span class="status {escape(d.status)}" id="status">{escape(d.status)}</span></h1>
<div class="note">updated {escape(d.updated)}</div>
<nav><a href="#summary-section">summary</a><a href="#progress">progress</a><a href="#findings">findings ({len(d.findings)})</a>
<a href="#coverage-section">rule coverage</a></nav>
{_summary(d)}
<section id="progress"><h2>Progress</h2>{plot}</section>
<section id="findings"><h2>Findings ({len(d.findings)})</h2>{findings}</section>
{_coverage(d)}
<script>{SCRIPT}</script>
</body></html>
"""

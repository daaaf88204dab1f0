"""The `tinyspec fuzz` and `tinyspec repro` verbs (argument parsing lives in tinyspec/cli.py)."""
from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import sys
from pathlib import Path

from fuzz.corpus.store import Entry, load_entry
from fuzz.engine.campaign import StateError, run_campaign
from fuzz.engine.config import CampaignConfig, ConfigError, validate
from fuzz.engine.corpus_dir import CorpusBusy
from fuzz.engine.targets import TARGET_NAMES, TARGETS, replay, target_for_kind
from fuzz.report.pictures import draw_entry
from fuzz.report.standalone import standalone_script
from tinyspec import viz
from tinyspec.cliargs import number
from tinyspec.fileio import atomic_write
from tinyspec.loadfile import InputError
from tinyspec.runtime import cpu, procs
from tinyspec.runtime.host import shared

BACKENDS = ("reference", "cpu", "opencl")


def add_fuzz_arguments(p: argparse.ArgumentParser) -> None:
  t = p.add_mutually_exclusive_group()
  t.add_argument("--seconds", type=float, default=None, help="time budget in seconds (default 60)")
  t.add_argument("--hours", type=float, default=None, help="time budget in hours")
  p.add_argument("--seed", type=int, default=0, help="campaign seed: the same seed and code give the same cases (default 0)")
  p.add_argument("--workers", type=int, default=1, help="worker processes (default 1; 0 runs cases in this process)")
  p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                 help="run the cases on the Dask cluster of the scheduler at ADDRESS (tcp://HOST:8786; needs the dask extra) "
                 "instead of in local worker processes (--workers is then unused); this process keeps the corpus and the state")
  p.add_argument("--corpus", default="corpus", help="where findings and the campaign state go (default corpus/)")
  p.add_argument("--backends", default=None,
                 help="comma-separated: reference, cpu, opencl (default reference,cpu for the reference target: every case is "
                 "also compiled with the fastest C compiler present, tcc, else clang or gcc; reference for the others)")
  p.add_argument("--cc", default=None, help="C compiler of the cpu backend (default: the fastest present, tcc, clang, gcc)")
  mode = p.add_mutually_exclusive_group()
  mode.add_argument("--per-rewrite", dest="per_rewrite", action="store_const", const=True, default=None,
                    help="check the spec after every single rule application (the default of the reference target)")
  mode.add_argument("--per-pass", dest="per_rewrite", action="store_const", const=False,
                    help="check the spec only after every pass (faster, sees less)")
  p.add_argument("--weights", type=parse_weights, default=None, metavar="NAME=W,...",
                 help="generator weights to start from, by feature name (fuzz.generate.case.default_weights and the kind:* "
                 "shares: dtype:small=8,kind:edge=0.3,edge:small=4 weights the small floats up)")
  p.add_argument("--max-cases", type=int, default=None, help="stop after this many cases")
  p.add_argument("--case-timeout", type=float, default=30.0, help="seconds before a case counts as a hang (default 30)")
  p.add_argument("--fresh", action="store_true", help="start from case 0 instead of resuming the seed's saved state")
  p.add_argument("--report", default=None, metavar="DIR",
                 help="keep a static HTML report in DIR (DIR/index.html: summary, progress plot, findings with pictures, rule coverage)")
  p.add_argument("--target", default=None, choices=TARGET_NAMES,
                 help="what to fuzz: reference (default: random graphs through the reference pipeline, every oracle), symbolic "
                 "(the integer simplifier alone, as --symbolic) or tinygrad (random Tensor programs through tinygrad and "
                 "tinyspec, compared; needs the tinygrad extra)")


def parse_weights(s: str) -> dict[str, float]:
  """NAME=W pairs, comma-separated, into {feature name: weight}: each name a `prefix:name` of the generators' features,
  each weight a finite number of at least 0."""
  out: dict[str, float] = {}
  for item in (x.strip() for x in s.split(",") if x.strip()):
    name, eq, w = item.partition("=")
    if not eq or not re.fullmatch(r"[a-z_0-9]+:[A-Za-z_0-9:]+", name.strip()):
      raise argparse.ArgumentTypeError(f"{item!r} is not NAME=W with a feature name such as dtype:small")
    out[name.strip()] = number(float, 0)(w.strip())
  if not out: raise argparse.ArgumentTypeError("no NAME=W pairs")
  return out


def parse_backends(s: str) -> tuple[str, ...]:
  out = tuple(b.strip() for b in s.split(",") if b.strip())
  bad = [b for b in out if b not in BACKENDS]
  if bad or not out: raise argparse.ArgumentTypeError(f"unknown backend(s) {bad or [s]}; choose from {', '.join(BACKENDS)}")
  return out if "reference" in out else ("reference", *out)


def target_of(args: argparse.Namespace) -> tuple[str | None, str]:
  """(the target name, "") or (None, why the arguments name none): --symbolic is --target symbolic."""
  name = getattr(args, "target", None)
  if getattr(args, "symbolic", False):
    if name not in (None, "symbolic"): return None, f"--symbolic and --target {name} name two targets"
    name = "symbolic"
  return name or "reference", ""


def fuzz_main(args: argparse.Namespace) -> int:
  """A campaign of the chosen target (fuzz.engine.targets) on the one engine (fuzz.engine.campaign)."""
  name, why = target_of(args)
  if name is None:
    print(f"tinyspec fuzz: {why}", file=sys.stderr)
    return 2
  kind = TARGETS[name]
  try: backends = parse_backends(args.backends or ("reference,cpu" if kind.pipeline_options else "reference"))
  except argparse.ArgumentTypeError as e:
    print(f"tinyspec fuzz: {e}", file=sys.stderr)
    return 2
  cc = getattr(args, "cc", None)
  if cc is not None and cc not in cpu.available_compilers():
    print(f"tinyspec fuzz: --cc {cc}: not a C compiler found on PATH (found: {', '.join(cpu.available_compilers()) or 'none'})",
          file=sys.stderr)
    return 2
  if "cpu" in backends:
    cc = cc or cpu.fastest_compiler()
    if cc is None:
      print("tinyspec fuzz: cpu backend unavailable: no C compiler found (tcc, clang or gcc); continuing without it", file=sys.stderr)
      backends = tuple(b for b in backends if b != "cpu")
  if args.workers < 0:
    print("tinyspec fuzz: --workers must be 0 or more", file=sys.stderr)
    return 2
  try:
    if not kind.pipeline_options and (backends != ("reference",) or args.per_rewrite is not None):
      raise ConfigError(f"--backends, --per-rewrite and --per-pass are options of the reference target, not of {name}")
    target = kind.from_args(args)
  except ConfigError as e:
    print(f"tinyspec fuzz: {e}", file=sys.stderr)
    return 2
  seconds = args.hours * 3600 if args.hours is not None else (args.seconds if args.seconds is not None else 60.0)
  if args.report:
    try: Path(args.report).mkdir(parents=True, exist_ok=True)
    except OSError as e:
      print(f"tinyspec fuzz: cannot keep the report in {args.report}: {e}", file=sys.stderr)
      return 2
  if "opencl" in backends:
    ok, why = shared().available("opencl")  # asked in the kernel host: this process never opens OpenCL itself
    if not ok:
      print(f"tinyspec fuzz: opencl backend unavailable: {why}; continuing without it", file=sys.stderr)
      backends = tuple(b for b in backends if b != "opencl")
  cfg = CampaignConfig(seconds=seconds, seed=args.seed, workers=args.workers, corpus=args.corpus, backends=backends,
                       per_rewrite=args.per_rewrite is not False and kind.pipeline_options, max_cases=args.max_cases,
                       case_timeout=args.case_timeout, resume=not args.fresh, report=args.report, target=target, cc=cc,
                       scheduler=getattr(args, "scheduler", None), weights=getattr(args, "weights", None))
  try:
    validate(cfg)
    summary = run_campaign(cfg)
  except (ConfigError, CorpusBusy) as e:
    print(f"tinyspec fuzz: {e}", file=sys.stderr)
    return 2
  except StateError as e:
    print(f"tinyspec fuzz: {e}; --fresh starts over without it", file=sys.stderr)
    return 2
  print(summary.text(), flush=True)
  if args.report: print(f"report: {Path(args.report) / 'index.html'}", flush=True)
  return 1 if any(f.new for f in summary.findings) else 0  # a bug the corpus already holds is not news


def add_repro_arguments(p: argparse.ArgumentParser) -> None:
  p.add_argument("path", help="a corpus file")
  p.add_argument("--viz", action="store_true", help="draw the blamed rule application before and after, side by side (without one: the "
                 "graph with the violation highlighted) and print the file's path")
  p.add_argument("--standalone", action="store_true", help="write the entry's standalone script instead (a tinygrad entry): it imports only "
                 "tinygrad and numpy, asserts what the program means and fails on the defect")
  p.add_argument("-o", "--output", default=None, metavar="OUT",
                 help="where --viz draws: .svg (default: the entry's name + .svg here), .png, .pdf, .dot; with --standalone the "
                 "script's file (default: stdout)")


REPLAY_TIMEOUT = 120.0  # seconds a replay of a case that once hung may take before it counts as hanging again


def died_or_hung(signature: tuple[str, ...]) -> bool:
  """Whether an entry's case killed (a signal, an exit) or hung the process that checked it, outside a kernel."""
  return signature[0] == "hang" and signature[1] not in BACKENDS or re.fullmatch(r"(signal|exit)-?\d+", signature[2]) is not None


def _replay_in_child(path: str, conn) -> None:
  try: fails, findings = replay(load_entry(path))
  except InputError as e:
    conn.send(str(e))
    return
  conn.send((fails, [f.describe() for f in findings]))


def repro_main(args: argparse.Namespace) -> int:
  if args.standalone: return standalone_main(args)
  draw_to = _draw_target(args)
  if draw_to == "":
    return 2
  try: entry = load_entry(args.path)
  except InputError as e:
    print(f"tinyspec repro: {e}", file=sys.stderr)
    return 2
  sig = "/".join(entry.signature)
  print(f"{args.path}: {sig} (expected: {entry.expect}), options {entry.case.options}, backends {', '.join(entry.backends)}")
  if died_or_hung(entry.signature):
    # the case killed or hung the process checking it: replay it in a child so this process survives
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = procs.start(ctx, _replay_in_child, (args.path, child))
    child.close()
    proc.join(REPLAY_TIMEOUT)
    if proc.is_alive():
      procs.kill_tree(proc)
      print(f"still fails: the replay hung (killed after {REPLAY_TIMEOUT:g} s)")
      return 1
    got = parent.recv() if parent.poll() else None
    procs.kill_tree(proc)
    if got is None:
      print(f"still fails: the replay died ({procs.how_it_ended(proc.exitcode)})")
      return 1
    if isinstance(got, str):
      print(f"tinyspec repro: {got}", file=sys.stderr)
      return 2
    fails, texts = got
    for t in texts: print(t)
    if draw_to: _draw(entry, None, draw_to)
  else:
    try: fails, findings = replay(entry)
    except InputError as e:  # a tinygrad entry's PROGRAM outside the generator's grammar is refused before it runs
      print(f"tinyspec repro: {e}", file=sys.stderr)
      return 2
    for f in findings: print(f.describe())
    if draw_to: _draw(entry, findings, draw_to)
  if fails:
    print(f"still fails: {sig}")
    return 1
  print(f"fixed: {sig} no longer fails" + (" (set EXPECT = 'passes')" if entry.expect == "fails" else ""))
  return 0


def standalone_main(args: argparse.Namespace) -> int:
  """`repro --standalone ENTRY [-o FILE]`: the entry's standalone script to FILE or stdout. Exit 0 when written, 2 when
  the entry is unreadable or has no standalone form (the reason on stderr)."""
  if args.viz:
    print("tinyspec repro: --standalone writes a script; --viz draws a picture: give one of them", file=sys.stderr)
    return 2
  try: text = standalone_script(load_entry(args.path))
  except InputError as e:
    print(f"tinyspec repro: {e}", file=sys.stderr)
    return 2
  if args.output is None: sys.stdout.write(text)
  else:
    atomic_write(args.output, text)
    print(args.output)
  return 0


def _draw_target(args: argparse.Namespace) -> str | None:
  """Where --viz draws (None: no drawing); "" after printing why the path cannot be drawn to."""
  if not args.viz: return None
  out = args.output or Path(args.path).stem + ".svg"
  try: viz.output_format(out)
  except ValueError as e:
    print(f"tinyspec repro: {e}", file=sys.stderr)
    return ""
  return str(out)


def _draw(entry: Entry, findings: list | None, out: str) -> None:
  """The blamed rule application before and after (fuzz.report.pictures); without one, the graph with the failure marked."""
  try:
    if entry.case.kind in ("tensor", "kernel"): pic = draw_entry(entry, out, findings=findings)
    else: pic = target_for_kind(entry.case.kind).draw(entry, out)
  except Exception as e:  # drawing is a convenience: the replay result stands without it
    print(f"could not draw: {type(e).__name__}: {e}", file=sys.stderr)
    return
  print(f"picture: {pic.note}")
  print(pic.path)


# ---- --target symbolic: the integer simplifier alone ----
def add_symbolic_arguments(p: argparse.ArgumentParser) -> None:
  p.add_argument("--symbolic", action="store_true",
                 help="--target symbolic: fuzz the integer simplifier alone (random view index expressions, simplified, checked "
                 "equal and within bounds)")
  p.add_argument("--depth", type=number(int, 1), default=4, help="expression depth of --symbolic cases (default 4)")
  p.add_argument("--z3-timeout-ms", type=number(int, 1), default=300, help="z3 timeout per --symbolic case in ms (default 300)")

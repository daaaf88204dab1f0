"""The `tinyspec` command. Exit 0 when all holds, 1 when something is found or fails, 2 on bad usage or input (one
line on stderr, never a traceback), 3 when `tinygrad check` found nothing but could not check part of the program,
130 on ^C."""
from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from fuzz.corpus.refutations import write_counterexample
from fuzz.engine.cli_verbs import add_fuzz_arguments, add_repro_arguments, add_symbolic_arguments, fuzz_main, repro_main
from tinyspec import viz
from tinyspec.cliargs import number
from tinyspec.loadfile import InputError, graph_of, load_graph, load_module, run_user_code
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.lower.optimize import validate_opts
from tinyspec.lower.pipeline import PASSES, PassError, lower
from tinyspec.lower.start import graph_level, start_index
from tinyspec.prove.cli import add_prove_arguments, prove_main
from tinyspec.runtime.cpu import match_shapes, prepare
from tinyspec.runtime.host import KernelError, run_graph
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, check
from tinyspec.uop import Ops, is_kernel_body

RUN_TIMEOUT = 60.0  # default seconds the kernels of `tinyspec run` may take in their child process


class UsageError(Exception):
  """Arguments argparse rejects; main prints them in one line."""


class Parser(argparse.ArgumentParser):
  """argparse, except that an error is one line (`tinyspec VERB: what is wrong`) and exit 2, not the usage and a line."""
  def error(self, message: str):  # type: ignore[override]
    raise UsageError(f"{self.prog}: {message}")


def _graph_stage(root):
  """The stage a FILE's graph is at: TENSOR, KERNEL_GRAPH, or KERNEL / PROGRAM for one kernel body."""
  if graph_level(root) == "tensor": return Stage.TENSOR
  if is_kernel_body(root): return Stage.PROGRAM if root.op in (Ops.PROGRAM, Ops.LINEAR) else Stage.KERNEL
  return Stage.KERNEL_GRAPH


def _refuse_illegal(root, file: str, verb: str) -> int | None:
  """None when root is legal at its stage; else print its violations (stdout) and why it is not lowered or run (one
  line, stderr), and return 2: an illegal graph is input the verb does not take."""
  try: stage = _graph_stage(root)
  except Exception: stage = Stage.TENSOR  # too malformed to tell its level: the TENSOR rules name what is wrong
  vs = check(root, stage)
  if not vs: return None
  for i, v in enumerate(vs[:50], 1): print(f"{i}. {v}")
  rules = ", ".join(f"{rid} x{n}" if n > 1 else rid for rid, n in Counter(v.rule for v in vs).items())
  print(f"tinyspec: {file}: not {verb}: {len(vs)} violation(s) at {stage.name} ({rules[:200]}); --no-check {verb.split()[0]}s it anyway",
        file=sys.stderr)
  return 2


def _stage(name: str):
  try: return Stage[name.upper()]
  except KeyError: raise argparse.ArgumentTypeError(f"unknown stage {name!r}; one of {', '.join(s.name.lower() for s in Stage)}") from None


def cmd_check(args: argparse.Namespace) -> int:
  """Check FILE's graph at a stage: every violation printed, then a one-line summary. Exit 0 legal, 1 violations."""
  root = load_graph(args.file)
  stage = args.stage or Stage.TENSOR
  vs = check(root, stage)
  for i, v in enumerate(vs, 1):
    print(f"{i}. {v}")
  if not vs:
    print(f"{args.file}: legal at {stage.name}")
    return 0
  by_rule = ", ".join(f"{rid} x{n}" if n > 1 else rid for rid, n in Counter(v.rule for v in vs).items())
  print(f"{args.file}: {len(vs)} violation(s) at {stage.name} ({by_rule})")
  return 1


def _parse_opts(text: str | None):
  if text is None: return None
  try: opts = ast.literal_eval(text)
  except (ValueError, SyntaxError): raise InputError(f"--opts {text!r} is not a Python literal tuple of opts") from None
  try: return tuple(validate_opts(opts))
  except (ValueError, TypeError) as e: raise InputError(f"--opts: {e}") from None


def _lower_stages(root, options: dict) -> dict:
  """The graph after each pass: from the start for a tensor graph, from simplify for a kernel graph or body."""
  return lower(root, passes=PASSES[start_index(PASSES, root):], **options)


def cmd_lower(args: argparse.Namespace) -> int:
  """Lower FILE's graph: each stage's pass name, node count and kernel count, then every kernel's source."""
  root = load_graph(args.file)
  opts = _parse_opts(args.opts)
  if not args.no_check and (code := _refuse_illegal(root, args.file, "lowered")) is not None: return code
  try: stages = _lower_stages(root, {"backend": args.backend, "opts": opts, "images": args.images})
  except PassError as e:
    print(f"{args.file}: {e}")
    return 1
  except Exception as e:  # a graph no pass can take (with --no-check): one line, not a traceback
    print(f"{args.file}: lowering failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:400])
    return 1
  for name, g in stages.items():
    print(f"{name:>13}: {len(g.toposort()):6d} nodes, {len(kernel_calls(g)):3d} kernel(s)")
  for call in kernel_calls(stages[list(stages)[-1]]):
    prg = call.src[0]
    if prg.op is Ops.PROGRAM and len(prg.src) == 3:
      src = prg.src[2].arg
      print(f"\n// ---- kernel {src.name} ({src.lang}) ----\n{src.text}", end="")
  return 0


def cmd_run(args: argparse.Namespace) -> int:
  """Run FILE's graph on a backend and print its outputs. FILE may define inputs() -> {BUFFER id: array}. A graph that
  breaks its stage's spec is not run (unless --no-check); compiled kernels run in a child process with a time limit, so
  a kernel that crashes or hangs is reported in one line."""
  ns = load_module(args.file)  # graph() and inputs() from one execution of FILE, so their BUFFER ids agree
  root = graph_of(ns, args.file)
  inputs = {}
  if callable(ns.get("inputs")):
    inputs = run_user_code(args.file, "inputs()", ns["inputs"])
    if not isinstance(inputs, dict): raise InputError(f"{args.file}: inputs() returned {type(inputs).__name__}, not a dict")
    try: inputs = {int(k): np.asarray(v) for k, v in inputs.items()}
    except (TypeError, ValueError) as e: raise InputError(f"{args.file}: inputs() is not {{BUFFER id: array}}: {e}") from None
  if not args.no_check and (code := _refuse_illegal(root, args.file, "run")) is not None: return code
  try: outs = _run_on(root, inputs, args)
  except Exception as e:
    what = str(e) if isinstance(e, KernelError) else f"{type(e).__name__}: {e}"
    print(f"{args.file}: {args.backend} failed: {what.splitlines()[0] if what else ''}"[:500])
    return 1
  outs = outs if isinstance(outs, list) else [outs]
  for i, o in enumerate(outs):
    if o is None:
      print(f"output {i}: (effect)")
      continue
    o = np.asarray(o)
    print(f"output {i}: {o.dtype} {tuple(o.shape)}\n{np.array2string(o, threshold=200, max_line_width=150)}")
  return 0


def _run_on(root, inputs: dict, args: argparse.Namespace):
  """The outputs of root on args.backend: the evaluator in this process; CPU and OpenCL kernels in the kernel host."""
  if args.backend == "reference":
    return evaluate(root, inputs)
  lowered = prepare(root, backend="c" if args.backend == "cpu" else "opencl", images=args.images)
  return match_shapes(root, run_graph(args.backend, lowered, inputs, args.compiler if args.backend == "cpu" else None, args.timeout))


def cmd_viz(args: argparse.Namespace) -> int:
  out = Path(args.output) if args.output else Path(Path(args.file).stem + ".svg")
  try: viz.output_format(out)
  except ValueError as e:
    print(f"tinyspec: {e}", file=sys.stderr)
    return 2
  root = load_graph(args.file)
  vs = []
  title = str(args.file)
  if args.stage is not None:
    vs = check(root, args.stage)
    title += f": {len(vs)} violation(s) at {args.stage.name}" if vs else f": legal at {args.stage.name}"
  path = viz.render(root, out, vs, title=title, max_nodes=viz.MAX_NODES if args.max_nodes is None else args.max_nodes,
                    collapse_min=viz.COLLAPSE_MIN if args.collapse is None else args.collapse)
  if vs: print(f"{args.file}: {len(vs)} violation(s) at {args.stage.name}, highlighted")
  print(path)
  return 1 if vs else 0


def cmd_fuzz(args: argparse.Namespace) -> int:
  """A campaign of one target (--target reference|symbolic; --symbolic is --target symbolic) on the one engine."""
  return fuzz_main(args)


def cmd_prove(args: argparse.Namespace) -> int:
  """Prove every integer and boolean rewrite rule sound with z3: one line per rule. Exit 1 when one is refuted."""
  if getattr(args, "target", "tinyspec") == "tinygrad":  # tinygrad's own rule tables, through the optional bridge
    try: from tinyspec.bridge.tinygrad.rules import prove_main as prove_tinygrad
    except ImportError as e:
      print(f"tinyspec prove --target tinygrad: {e}", file=sys.stderr)
      return 2
    return prove_tinygrad(args)
  # a refuted rule's counterexample becomes a corpus entry, replayed like any fuzz finding
  return prove_main(args, lambda ref, cx: write_counterexample(args.corpus, ref, cx))


def cmd_repro(args: argparse.Namespace) -> int:
  return repro_main(args)


def cmd_tinygrad(args: argparse.Namespace) -> int:
  """Hold a tinygrad program to tinyspec's spec (the bridge, imported only here, needs the tinygrad extra)."""
  try: from tinyspec.bridge.tinygrad.check import main as tinygrad_check
  except ImportError as e:
    print(f"tinyspec: {e}", file=sys.stderr)
    return 2
  return tinygrad_check(args.file, device=args.device, show=args.viz, output=args.output)


def build_parser() -> argparse.ArgumentParser:
  p = Parser(prog="tinyspec", description=__doc__)
  sub = p.add_subparsers(dest="verb", required=True, parser_class=Parser)
  c = sub.add_parser("check", help="check a graph against a stage's spec")
  c.add_argument("file", help="a Python file defining graph()")
  c.add_argument("--stage", type=_stage, default=None, help="tensor (default), kernel_graph, kernel or program")
  c.set_defaults(fn=cmd_check)
  lo = sub.add_parser("lower", help="lower a graph and print every stage")
  lo.add_argument("file")
  lo.add_argument("--backend", default="c", choices=("c", "opencl"), help="renderer: c (default) or opencl")
  lo.add_argument("--no-check", action="store_true", help="lower the graph even when it breaks its stage's spec")
  lo.add_argument("--opts", default=None, help="optimize opts as a Python tuple, e.g. \"(('split', 0, 4), ('global', 0))\"")
  lo.add_argument("--images", action="store_true", help="keep kernel args whose storage and accesses fit an RGBA image as images")
  lo.set_defaults(fn=cmd_lower)
  r = sub.add_parser("run", help="run a graph and print its outputs")
  r.add_argument("file")
  r.add_argument("--backend", default="reference", choices=("reference", "cpu", "opencl"), help="reference (default), cpu or opencl")
  r.add_argument("--compiler", default=None, choices=("gcc", "clang", "tcc"), help="C compiler of the cpu backend: gcc (default), clang or tcc")
  r.add_argument("--no-check", action="store_true", help="run the graph even when it breaks its stage's spec")
  r.add_argument("--images", action="store_true", help="lower with images (LowerOptions.images; the reference backend has no kernels)")
  r.add_argument("--timeout", type=number(float, 0, above=True), default=RUN_TIMEOUT,
                 help=f"seconds the kernels may run in their child process before they count as hung (default {RUN_TIMEOUT:g})")
  r.set_defaults(fn=cmd_run)
  vz = sub.add_parser("viz", help="draw a graph (and its violations at a stage) with graphviz")
  vz.add_argument("file", help="a Python file defining graph()")
  vz.add_argument("--stage", type=_stage, default=None,
                  help="check at this stage and highlight each violation and its path (exit 1 when there are any)")
  vz.add_argument("-o", "--output", default=None, help="out.svg, out.png, out.pdf or out.dot (default: FILE's stem + .svg here)")
  vz.add_argument("--max-nodes", type=number(int, 0), default=None,
                  help="above this many boxes (default 250) draw the part nearest the root (0: all)")
  vz.add_argument("--collapse", type=number(int, 0), default=None, help="fold single-use elementwise trees of this many ops (default 6; 0: never)")
  vz.set_defaults(fn=cmd_viz)
  fz = sub.add_parser("fuzz", help="run a fuzz campaign: random legal graphs, every oracle, findings minimized into the corpus")
  add_fuzz_arguments(fz)
  add_symbolic_arguments(fz)
  fz.set_defaults(fn=cmd_fuzz)
  pv = sub.add_parser("prove", help="prove every integer and boolean rewrite rule sound with z3 (int32, int64, index)")
  add_prove_arguments(pv)
  pv.set_defaults(fn=cmd_prove)
  rp = sub.add_parser("repro", help="replay one corpus entry: exit 1 if it still fails, 0 if fixed, 2 if unreadable")
  add_repro_arguments(rp)
  rp.set_defaults(fn=cmd_repro)
  tg = sub.add_parser("tinygrad", help="capture a tinygrad program, check every stage against the spec, compare numbers")
  tgsub = tg.add_subparsers(dest="tinygrad_verb", required=True)
  tgc = tgsub.add_parser("check", help="check FILE's program() at every stage of tinygrad")
  tgc.add_argument("file", help="a Python file using tinygrad's Tensor API that defines program()")
  tgc.add_argument("--device", choices=("CPU", "PYTHON"), default=None, help="tinygrad device (default CPU when clang exists, else PYTHON)")
  tgc.add_argument("--viz", action="store_true", help="draw the first violating stage, violations highlighted")
  tgc.add_argument("-o", "--output", default=None, help="the drawing's path (default FILE's stem + _STAGE.svg)")
  tgc.set_defaults(fn=cmd_tinygrad)
  return p


def main(argv: list[str] | None = None) -> int:
  try:
    p = build_parser()
    try: args = p.parse_args(argv)
    except SystemExit as e: return 0 if not e.code else 2  # --help
    except UsageError as e:
      print(e, file=sys.stderr)
      return 2
    try: return args.fn(args)
    except InputError as e:
      print(f"tinyspec: {str(e).splitlines()[0] if str(e) else 'bad input'}"[:1000], file=sys.stderr)
      return 2
  except KeyboardInterrupt:
    print("tinyspec: interrupted", file=sys.stderr)
    return 130
  except BrokenPipeError:  # the reader of our output went away: nothing more to say to it
    try: sys.stdout = open(os.devnull, "w")  # Python's own flush at exit would fail again on the closed pipe
    except OSError: pass
    print("tinyspec: output closed (broken pipe)", file=sys.stderr)
    return 2
  except Exception as e:  # a bug of tinyspec's: one line, and the traceback when asked for
    if os.environ.get("TINYSPEC_TRACEBACK"): raise
    msg = str(e).splitlines()[0] if str(e) else ""
    print(f"tinyspec: internal error: {type(e).__name__}: {msg}"[:500] + " (TINYSPEC_TRACEBACK=1 shows where)", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())

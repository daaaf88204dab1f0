"""The `tinyspec` command. Exit 0 when all holds, 1 when something is found or fails, 2 on bad usage or input."""
from __future__ import annotations

import argparse
import sys

from tinyspec.loadfile import InputError, load_graph


def _stage(name: str):
  from tinyspec.spec import Stage
  try: return Stage[name.upper()]
  except KeyError: raise argparse.ArgumentTypeError(f"unknown stage {name!r}; one of {', '.join(s.name.lower() for s in Stage)}") from None


def cmd_check(args: argparse.Namespace) -> int:
  from tinyspec.spec import Stage, check
  root = load_graph(args.file)
  stage = args.stage or Stage.TENSOR
  vs = check(root, stage)
  for v in vs: print(v)
  print(f"{args.file}: {len(vs)} violation(s) at {stage.name}" if vs else f"{args.file}: legal at {stage.name}")
  return 1 if vs else 0


def cmd_lower(args: argparse.Namespace) -> int:
  raise NotImplementedError("tinyspec lower is not built yet")


def cmd_run(args: argparse.Namespace) -> int:
  raise NotImplementedError("tinyspec run is not built yet")


def build_parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="tinyspec", description=__doc__)
  sub = p.add_subparsers(dest="verb", required=True)
  c = sub.add_parser("check", help="check a graph against a stage's spec")
  c.add_argument("file", help="a Python file defining graph()")
  c.add_argument("--stage", type=_stage, default=None, help="tensor (default), kernel_graph, kernel or program")
  c.set_defaults(fn=cmd_check)
  lo = sub.add_parser("lower", help="lower a graph and print every stage")
  lo.add_argument("file")
  lo.set_defaults(fn=cmd_lower)
  r = sub.add_parser("run", help="run a graph and print its outputs")
  r.add_argument("file")
  r.add_argument("--backend", default="reference", help="reference, cpu or opencl")
  r.set_defaults(fn=cmd_run)
  return p


def main(argv: list[str] | None = None) -> int:
  p = build_parser()
  try: args = p.parse_args(argv)
  except SystemExit as e: return 2 if e.code else 0
  try: return args.fn(args)
  except InputError as e:
    print(f"tinyspec: {e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())

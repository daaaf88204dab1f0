"""The `tinyspec prove` verb and the `--symbolic` mode of `tinyspec fuzz` (argument parsing is added in tinyspec/cli.py)."""
from __future__ import annotations

import argparse
import fnmatch
import sys
import time

from tinyspec.dtype import DType, dtypes


def _dtypes(s: str) -> tuple[DType, ...]:
  out = []
  for name in (x.strip() for x in s.split(",") if x.strip()):
    dt = dtypes.by_name.get(name)
    if dt is None or dt.kind not in "iux": raise argparse.ArgumentTypeError(f"unknown integer dtype {name!r}; e.g. int32,int64,index")
    out.append(dt)
  if not out: raise argparse.ArgumentTypeError("no dtype given")
  return tuple(out)


def add_prove_arguments(p: argparse.ArgumentParser) -> None:
  p.add_argument("--rules", default=None, help="only rules whose name or pass/name matches this glob, e.g. 'mod_*' or 'simplify/*'")
  p.add_argument("--dtypes", type=_dtypes, default=None, help="integer dtypes to prove for (default int32,int64,index)")
  p.add_argument("--samples", type=int, default=300, help="pattern instances per rule and dtype (default 300)")
  p.add_argument("--timeout-ms", type=int, default=1000, help="z3 timeout per query and encoding in ms (default 1000)")
  p.add_argument("--retry-timeout-ms", type=int, default=10000,
                 help="a second z3 timeout for the queries no encoding decided within --timeout-ms (default 10000; 0: no retry);"
                      " a query still undecided makes its rule unknown")
  p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the number of cores)")
  p.add_argument("--seed", type=int, default=0, help="seed of the instances (default 0)")
  p.add_argument("--corpus", default="corpus", help="where refuted rules' counterexamples are written (default corpus/)")
  p.add_argument("--undefined", choices=("c", "evaluator"), default="c",
                 help="c (default): a rewrite may change a value only where C leaves it undefined (division by zero); "
                      "evaluator: it must also keep the evaluator's values there")


def prove_main(args: argparse.Namespace) -> int:
  from fuzz.prove import DEFAULT_DTYPES, INDEX_MODEL, Prover, default_jobs, encoding_stats, expression_rules, prove_rules, summary
  refs = expression_rules()
  if args.rules:
    refs = [r for r in refs if fnmatch.fnmatch(r.name, args.rules) or fnmatch.fnmatch(r.qualname, args.rules)]
    if not refs:
      print(f"tinyspec prove: no rule matches {args.rules!r}", file=sys.stderr)
      return 2
  if args.samples < 1 or args.timeout_ms < 1 or args.retry_timeout_ms < 0 or (args.jobs is not None and args.jobs < 1):
    print("tinyspec prove: --samples, --timeout-ms and --jobs must be at least 1, --retry-timeout-ms at least 0", file=sys.stderr)
    return 2
  jobs = default_jobs() if args.jobs is None else args.jobs
  prover = Prover(args.dtypes or DEFAULT_DTYPES, args.samples, args.timeout_ms, args.seed, args.corpus, args.undefined, args.retry_timeout_ms)
  dts = ", ".join(d.name for d in prover.dts)
  retry = f", retry {args.retry_timeout_ms} ms" if args.retry_timeout_ms > args.timeout_ms else ""
  print(f"proving {len(refs)} integer and boolean rewrite rules for {dts} ({args.samples} instances each, z3 timeout {args.timeout_ms} ms"
        f"{retry}, {jobs} job{'s' if jobs != 1 else ''})", flush=True)
  if dtypes.index in prover.dts: print(f"assumption: {INDEX_MODEL}", flush=True)
  t0 = time.perf_counter()
  results = prove_rules(refs, prover, sys.stdout, jobs)
  print(f"{summary(results)} in {time.perf_counter() - t0:.1f} s")
  print(f"z3 answers by encoding: {encoding_stats(prover.stats)}")
  return 1 if any(r.status == "refuted" for r in results) else 0


def add_symbolic_arguments(p: argparse.ArgumentParser) -> None:
  p.add_argument("--symbolic", action="store_true",
                 help="fuzz the integer simplifier alone: random view index expressions, simplified, checked equal and within bounds")
  p.add_argument("--depth", type=int, default=4, help="expression depth of --symbolic cases (default 4)")
  p.add_argument("--z3-timeout-ms", type=int, default=300, help="z3 timeout per --symbolic case in ms (default 300)")


def symbolic_main(args: argparse.Namespace) -> int:
  from fuzz.symbolic import symbolic_campaign
  seconds = args.hours * 3600 if args.hours is not None else (args.seconds if args.seconds is not None else 60.0)
  if args.depth < 1:
    print("tinyspec fuzz: --depth must be at least 1", file=sys.stderr)
    return 2
  summ = symbolic_campaign(seconds, args.seed, max_cases=args.max_cases, depth=args.depth, z3_timeout_ms=args.z3_timeout_ms, out=sys.stdout)
  print(summ.text(), flush=True)
  return 1 if summ.findings else 0

"""The `tinyspec prove` verb: its arguments and its run (tinyspec/cli.py adds the parser and where refutations are stored)."""
from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from typing import Callable

from tinyspec.cliargs import number
from tinyspec.dtype import DType, dtypes
from tinyspec.prove.prover import DEFAULT_DTYPES, INDEX_MODEL, Prover, default_jobs, encoding_stats, expression_rules, prove_rules, summary


def _dtypes(s: str) -> tuple[DType, ...]:
  out = []
  for name in (x.strip() for x in s.split(",") if x.strip()):
    dt = dtypes.by_name.get(name)
    if dt is None or dt.kind not in "iux": raise argparse.ArgumentTypeError(f"unknown integer dtype {name!r}; e.g. int32,int64,index")
    out.append(dt)
  if not out: raise argparse.ArgumentTypeError("no dtype given")
  return tuple(out)


def add_prove_arguments(p: argparse.ArgumentParser) -> None:
  p.add_argument("--target", choices=("tinyspec", "tinygrad"), default="tinyspec",
                 help="tinyspec (default): the reference lowering's rules; tinygrad: the imported tinygrad's own symbolic and decomposition"
                      " rules (needs the tinygrad extra), default dtypes int32,uint32,int64,index")
  p.add_argument("--rules", default=None, help="only rules whose name or pass/name matches this glob, e.g. 'mod_*' or 'simplify/*'")
  p.add_argument("--dtypes", type=_dtypes, default=None, help="integer dtypes to prove for (default int32,int64,index; with --target tinygrad"
                                                                   " int32,uint32,int64,index)")
  p.add_argument("--samples", type=number(int, 1), default=None,
                 help="pattern instances per rule and dtype (default 300; 100 with --target tinygrad)")
  p.add_argument("--timeout-ms", type=number(int, 1), default=1000, help="z3 timeout per query and encoding in ms (default 1000)")
  p.add_argument("--retry-timeout-ms", type=number(int, 1), default=None,
                 help="a second z3 timeout for the queries no encoding decided within --timeout-ms (default 10000, 3000 with"
                      " --target tinygrad; 0: no retry); a query still undecided makes its rule unknown")
  p.add_argument("--jobs", type=number(int, 1), default=None, help="worker processes (default: the number of cores)")
  p.add_argument("--seed", type=number(int, 0), default=0, help="seed of the instances (default 0)")
  p.add_argument("--corpus", default="corpus", help="where refuted rules' counterexamples are written (default corpus/)")
  p.add_argument("--undefined", choices=("c", "evaluator"), default="c",
                 help="c (default): a rewrite may change a value only where C leaves it undefined (division by zero); "
                      "evaluator: it must also keep the evaluator's values there")


def resolve_args(args: argparse.Namespace) -> str | None:
  """Fill the options left unset with the defaults of the chosen target (tinygrad's tables are proven with fewer samples
  and a shorter retry: many more of its rules build large rewrites); what is wrong with the numbers given, or None."""
  tinygrad = getattr(args, "target", "tinyspec") == "tinygrad"
  if args.samples is None: args.samples = 100 if tinygrad else 300
  if args.retry_timeout_ms is None: args.retry_timeout_ms = 3000 if tinygrad else 10000
  if args.samples < 1 or args.timeout_ms < 1 or args.retry_timeout_ms < 0 or (args.jobs is not None and args.jobs < 1):
    return "--samples, --timeout-ms and --jobs must be at least 1, --retry-timeout-ms at least 0"
  return None


def prove_main(args: argparse.Namespace, store: Callable | None = None) -> int:
  """Run the prover as the arguments say; store(ref, counterexample) keeps each refutation (None: print only)."""
  if (err := resolve_args(args)) is not None:
    print(f"tinyspec prove: {err}", file=sys.stderr)
    return 2
  refs = expression_rules()
  if args.rules:
    refs = [r for r in refs if fnmatch.fnmatch(r.name, args.rules) or fnmatch.fnmatch(r.qualname, args.rules)]
    if not refs:
      print(f"tinyspec prove: no rule matches {args.rules!r}", file=sys.stderr)
      return 2
  jobs = default_jobs() if args.jobs is None else args.jobs
  prover = Prover(args.dtypes or DEFAULT_DTYPES, args.samples, args.timeout_ms, args.seed, store, args.undefined, args.retry_timeout_ms)
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

"""The rules a campaign's pipeline has swapped in, proven or refuted by the rule prover before the first case runs.

A pipeline under test differs from the reference lowering by the rules it replaced (Pass.replace_rule, with_table):
those are what may be wrong, and the integer ones among them tinyspec.prove decides in well under a second each. So a
campaign starts by comparing every pass's tables with the reference pass of the same name, rule by rule (a rule whose
function or pattern is another object, or a rule the reference table lacks), and proves the changed rules the prover
handles, with a short z3 timeout and a time budget, and with the evaluator's values at the points C leaves undefined
(UNDEFINED): a rule wrong only at a zero divisor is refuted too. A refuted rule is a finding at once, oracle "prove", stored like
any other: its counterexample as a one-kernel KERNEL_GRAPH (fuzz.corpus.refutations) whose lowering through the rule
changes the stored value; the campaign (fuzz.engine.campaign) proves in its proofs phase and stores the entries. The
reference pipeline has no changed rule, so it proves nothing at start: the full table is `tinyspec prove`'s job.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence, TextIO

from fuzz.check.oracles import Checker, Config
from fuzz.corpus.refutations import counterexample_case
from fuzz.corpus.store import placeholder_entry, render_entry, same_bug
from fuzz.generate.case import Case
from tinyspec.dtype import dtypes
from tinyspec.lower.pipeline import PASSES
from tinyspec.prove.prover import Counterexample, Prover, RuleRef, RuleResult, in_scope
from tinyspec.rewrite import PatternMatcher, Rule

DTYPES = (dtypes.int8, dtypes.uint32, dtypes.int32, dtypes.int64, dtypes.index)  # narrow, unsigned and wide wrap points, and unbounded
SAMPLES = 100          # pattern instances per rule and dtype
TIMEOUT_MS = 200       # z3 timeout per query: a query still undecided leaves the rule unknown, never refuted
BUDGET_SECONDS = 30.0  # at most this long proving at the start of a campaign (and no more than a quarter of its time)
# a pass must keep the evaluated meaning wherever the spec gives one, C's undefined points included (a IDIV 0 == 0,
# a MOD 0 == a, MIN IDIV -1 == MIN: the renderers guard them to the same values), so a swapped rule is proven with the
# evaluator's values there: x // x -> 1 without its x != 0 guard is refuted at x == 0
UNDEFINED = "evaluator"
MORE_SEEDS = 4         # further draws of a refuted rule's instances, for a counterexample kernel that fails through the pipeline


def _table_rules(tables: dict[str, PatternMatcher]) -> dict[tuple[str, str], Rule]:
  return {(name, r.name): r for name, pm in tables.items() for r in pm.rules}


def changed_rules(passes: Sequence, reference: Sequence | None = None) -> list[RuleRef]:
  """The rules of passes that differ from the rule of the same table and name in the reference pass of the same name
  (another function or pattern object, or no such rule there) and that the prover handles (in_scope), each once."""
  by_name = {p.name: p for p in (PASSES if reference is None else reference)}
  out: list[RuleRef] = []
  seen: set[tuple[str, int, int]] = set()
  for p in passes:
    ref = by_name.get(p.name)
    old = _table_rules(dict(ref.tables)) if ref is not None else {}
    for tname, pm in p.tables.items():
      for r in pm.rules:
        was = old.get((tname, r.name))
        if was is not None and was.fn is r.fn and was.pat is r.pat: continue
        key = (r.name, id(r.fn), id(r.pat))  # one swapped rule shared by several tables is proven once
        if key in seen: continue
        seen.add(key)
        rr = RuleRef(p.name, tname, r)
        if in_scope(rr): out.append(rr)
  return out


def changed_table_rules(pm: PatternMatcher, reference: PatternMatcher, pass_name: str) -> list[RuleRef]:
  """changed_rules for one table against its reference table (the symbolic target's simplifier)."""
  old = {r.name: r for r in reference.rules}
  out = []
  for r in pm.rules:
    was = old.get(r.name)
    if was is not None and was.fn is r.fn and was.pat is r.pat: continue
    rr = RuleRef(pass_name, pm.name or "-", r)
    if in_scope(rr): out.append(rr)
  return out


@dataclass
class Proved:
  """The start-of-campaign verdicts: each rule's result, and the rules the time budget left unproven."""
  results: list[RuleResult]
  skipped: list[RuleRef]
  seconds: float


def _prover(seed: int) -> Prover:
  return Prover(DTYPES, SAMPLES, TIMEOUT_MS, seed=seed, store=None, undefined=UNDEFINED, retry_ms=0)


def prove_changed(refs: Sequence[RuleRef], budget: float = BUDGET_SECONDS) -> Proved:
  """Each rule proven or refuted in turn until the budget is spent (a rule started is finished: one takes a second or so)."""
  t0 = time.monotonic()
  prover = _prover(0)
  results: list[RuleResult] = []
  for k, ref in enumerate(refs):
    if time.monotonic() - t0 >= budget: return Proved(results, list(refs[k:]), time.monotonic() - t0)
    try: results.append(prover.prove(ref))
    except Exception as e:  # the campaign still runs its cases; the rule is unknown, with why
      results.append(RuleResult(ref, reason=f"the prover raised {type(e).__name__}: {str(e)[:200]}"))
  return Proved(results, [], time.monotonic() - t0)


def counterexamples(res: RuleResult, more_seeds: int) -> Iterator[Counterexample]:
  """The result's counterexamples (one per dtype refuted), then those of the prover drawing its instances with other
  seeds (other constants and bounds), more_seeds times."""
  yield from (d.refuted for d in res.per_dtype if d.refuted is not None)
  for seed in range(1, more_seeds + 1):
    yield from (d.refuted for d in _prover(seed).prove(res.ref).per_dtype if d.refuted is not None)


def signature(ref: RuleRef) -> tuple[str, str, str]: return ("prove", ref.pass_name, ref.rule.name)


def message(ref: RuleRef, cx: Counterexample | None) -> str:
  what = f"counterexample {cx.describe()}" if cx is not None else "no counterexample"
  return f"{ref.qualname} ({ref.rule.location}) is unsound, refuted by the rule prover at the campaign's start: {what}"


@dataclass
class Refutation:
  """A refuted rule as a corpus entry: its signature, its message, the entry's text and the size of its kernel."""
  signature: tuple[str, str, str]
  message: str
  text: str
  nodes: int


def refutation_entry(res: RuleResult, replays: Callable[[Case, tuple], bool] | None = None) -> Refutation:
  """A refuted rule's corpus entry: a counterexample kernel, the first counterexample whose kernel replays(case,
  signature) says still fails through the campaign's pipeline (another rule of the table may rewrite an instance
  before the refuted one sees it; up to MORE_SEEDS more draws of instances are tried), else the first one; a
  placeholder when the rewrite is of an effect or a load, which has no such kernel."""
  sig = signature(res.ref)
  first: tuple[Case, Counterexample] | None = None
  chosen: tuple[Case, Counterexample] | None = None
  for cx in counterexamples(res, MORE_SEEDS if replays is not None else 0):
    try: case = counterexample_case(res.ref, cx)
    except Exception: continue  # the counterexample is still reported; only its kernel form failed to build
    first = first or (case, cx)
    if replays is not None and _replays(replays, case, sig):
      chosen = (case, cx)
      break
  pick = chosen or first
  msg = message(res.ref, pick[1] if pick is not None else res.counterexample)
  if chosen is None and first is not None and replays is not None:
    msg += "\n(no counterexample kernel fails through this pipeline: other rules rewrite its instances first)"
  if pick is None: return Refutation(sig, msg, placeholder_entry(sig, msg, None, None), 0)
  return Refutation(sig, msg, render_entry(pick[0], sig, message=msg), len(pick[0].root.toposort()))


def _replays(replays: Callable[[Case, tuple], bool], case: Case, sig: tuple) -> bool:
  try: return replays(case, sig)
  except Exception: return False  # a kernel the checker cannot run is no better an entry than the first one


def replays_through(passes: Sequence | None) -> Callable[[Case, tuple], bool]:
  """Whether a kernel case still fails the same way through passes: the reference oracles on it."""
  checker = Checker(Config(passes=passes, backends=("reference",), metamorphic=False))
  return lambda case, sig: any(same_bug(f.signature, sig) for f in checker.check(case))


def describe(proved: Proved, out: TextIO) -> None:
  """One line per changed rule, as `tinyspec prove` prints it, and what the budget left."""
  n = len(proved.results) + len(proved.skipped)
  print(f"prove: {n} rule{'s' if n != 1 else ''} of the pipeline differ{'s' if n == 1 else ''} from the reference lowering; "
        f"proven at start in {proved.seconds:.1f} s", file=out, flush=True)
  for r in proved.results: print("  " + r.line().replace("\n", "\n  "), file=out, flush=True)
  if proved.skipped:
    print(f"  out of time, not proven: {', '.join(r.qualname for r in proved.skipped)}", file=out, flush=True)

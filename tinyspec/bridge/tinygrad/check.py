"""`tinyspec tinygrad check FILE.py`: capture a tinygrad program, translate every stage, check each against tinyspec's
spec, and evaluate with tinyspec's evaluator against tinygrad's numbers (the MODES, in pipeline order) the tensor graph,
the callified graph (a precompiled call over the program's BUFFERs) and the kernel graph (a) with tinygrad's kernel
ASTs as the kernel bodies and (b) with its linearized programs as the bodies, where they translate.

FILE uses tinygrad's Tensor API and defines `program()` returning the tensor (or tuple of tensors) to realize.
Exit 0 when everything holds, 1 when a violation or a mismatch is found, 2 on bad usage or unreadable input, 3 when
nothing was found but a stage or a comparison of numbers did not run (a sharded program's tensor graph, say): "all
holds" is printed only when every stage was checked and every comparison ran.
"""
from __future__ import annotations

import runpy
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tinyspec import viz
from tinyspec.bridge.tinygrad import compat
from tinyspec.bridge.tinygrad.capture import Capture, capture
from tinyspec.bridge.tinygrad.translate import translate
from tinyspec.bridge.tinygrad.translator import STAGES, Translation
from tinyspec.dtype import dtypes, holds_floats
from tinyspec.semantics import evaluate
from tinyspec.spec import Stage, Violation, check
from tinyspec.uop import Ops, UOp

# the evaluations of a capture, in the order tinygrad's pipeline makes their graphs
MODES = ("tensor", "callified", "kernel ASTs", "programs")
SPEC_STAGE = {"tensor": Stage.TENSOR, "callified": Stage.TENSOR, "kernel_graph": Stage.KERNEL_GRAPH,
              "kernel": Stage.KERNEL, "program": Stage.PROGRAM}


class BadInput(Exception):
  """FILE cannot be read as a tinygrad program (exit 2)."""


@dataclass
class Report:
  """What the check found: per stage the violations (graph index, violation), the numeric comparisons and notes."""
  capture: Capture
  translation: Translation
  violations: dict[str, list[tuple[int, Violation]]] = field(default_factory=dict)
  numbers: dict[str, str | None] = field(default_factory=dict)   # mode -> None (matches) or the mismatch / why not run
  ran: dict[str, bool] = field(default_factory=dict)              # mode -> whether it was evaluated at all
  as_programs: tuple[int, int] = (0, 0)                           # (kernels run as their translated PROGRAM, all kernels)
  differs: dict[str, int] = field(default_factory=dict)            # mode -> the first output whose numbers differ
  values: dict[str, list] = field(default_factory=dict)             # mode -> tinyspec's evaluation of each output (None: no value)
  errors: dict[str, Exception] = field(default_factory=dict)        # mode -> what the evaluator raised on that stage's graph
  steps: list[Report] = field(default_factory=list)                 # the report of each step (Capture.steps), in order

  @property
  def all_ok(self) -> bool:
    """ok, and ok at every step."""
    return self.ok and all(s.ok for s in self.steps)

  @property
  def all_unchecked(self) -> list[str]:
    """unchecked, every step's first (named by its number)."""
    n = len(self.steps) + 1
    return [f"step {i + 1} of {n}, {u}" for i, s in enumerate(self.steps) for u in s.unchecked] + \
           [f"step {n} of {n}, {u}" if self.steps else u for u in self.unchecked]

  @property
  def ok(self) -> bool:
    """No violation and no mismatch among what was checked (what was not checked is `unchecked`)."""
    return not any(self.violations.values()) and all(v is None for m, v in self.numbers.items() if self.ran.get(m))

  @property
  def unchecked(self) -> list[str]:
    """What the check could not vouch for, one sentence each: a stage none of whose graphs was checked (none
    translated, or none captured, as with 0 kernels), and a comparison of numbers that did not run. Empty when every
    stage had a graph checked and every comparison ran (a stage of which only some graphs translated, as a program
    holding FDIV, still counts as checked: its other graphs were, and the numbers ran with that kernel's AST)."""
    # a hook this tinygrad has no target for (another version moved it, compat.hook_target): what it sees is not captured
    out = [f"capture: tinygrad {compat.identity()} has no {where}, so what it makes was not captured" for where in compat.missing_hooks()]
    for stage in STAGES if self.capture.scheduled else ("tensor",):
      graphs = self.translation.graphs[stage]
      # the capture cannot tell a stage tinygrad made nothing at (a program that only copies its input compiles no
      # program) from one it failed to see: either way nothing was checked there
      what = "kernels" if stage == "kernel" else "graphs"
      if not graphs: out.append(f"{stage}: 0 {what} captured (tinygrad made none, or the capture did not see them)")
      elif all(g is None for _, g in graphs): out.append(f"{stage}: none of its {len(graphs)} graph(s) translated")
    out += [f"numbers, {mode}: not compared ({self.numbers[mode]})" for mode in MODES if mode in self.numbers and not self.ran.get(mode)]
    return out


def load_program(path: str | Path) -> Callable[[], Any]:
  p = Path(path)
  if not p.is_file(): raise BadInput(f"{p}: no such file")
  try: ns = runpy.run_path(str(p))
  except Exception as e: raise BadInput(f"{p}: cannot execute: {type(e).__name__}: {e}") from e
  fn = ns.get("program")
  if not callable(fn): raise BadInput(f"{p}: defines no program() function")
  return fn


def first_difference(got: list, want: list[np.ndarray], rtol: float = 1e-5, atol: float = 1e-6,
                     skip: frozenset[int] = frozenset()) -> tuple[int, str] | None:
  """None when every output agrees (floats within rtol/atol, NaNs equal; integers and bools exactly), else (the first
  differing output, a sentence naming where and both values). Outputs in skip are not compared."""
  for i, (g, w) in enumerate(zip(got, want)):
    if i in skip: continue
    if g is None: return i, f"output {i}: the evaluator gave no value"
    g = np.asarray(g).reshape(w.shape)
    if holds_floats(w):
      # ml_dtypes' bfloat16 and fp8 (storage read as its elements) widen exactly to float32, where NaN equals NaN
      if w.dtype.kind != "f": g, w = g.astype(np.float32), w.astype(np.float32)
      if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True))[0]
        return i, f"output {i} differs at {tuple(int(x) for x in bad)}: tinyspec {g[tuple(bad)]!r}, tinygrad {w[tuple(bad)]!r}"
    elif not np.array_equal(g.astype(w.dtype), w):
      bad = np.argwhere(g.astype(w.dtype) != w)[0]
      return i, f"output {i} differs at {tuple(int(x) for x in bad)}: tinyspec {g[tuple(bad)]!r}, tinygrad {w[tuple(bad)]!r}"
  return None


def compare(got: list, want: list[np.ndarray]) -> str | None:
  """None when every output agrees (floats within a tight tolerance, integers and bools exactly), else a sentence."""
  diff = first_difference(got, want)
  return None if diff is None else diff[1]


def _record(rep: Report, mode: str, got: list) -> None:
  """Compare one evaluation with tinygrad's numbers into the report (and which output differs first)."""
  # an output that is a view of storage whose view did not translate has no value to compare
  t = rep.translation
  missing = frozenset(i for i, (b, v, m) in enumerate(zip(t.outputs, t.output_views, t.output_shards)) if b is None and v is None and m is None)
  diff = first_difference(got, rep.capture.outputs, skip=missing)
  rep.values[mode] = list(got)
  rep.ran[mode], rep.numbers[mode] = True, None if diff is None else diff[1]
  if diff is not None: rep.differs[mode] = diff[0]


def _failed(rep: Report, mode: str, e: Exception) -> None:
  rep.ran[mode], rep.numbers[mode], rep.errors[mode] = True, f"the evaluator failed: {type(e).__name__}: {e}", e


def read_outputs(t: Translation, storage: dict[int, Any]) -> list:
  """Each output from the contents of the program's BUFFERs (by id) after a stage ran: its own storage, or the view
  tinygrad left it, evaluated over that storage (None when neither is known)."""
  store = {**t.inputs, **storage}
  out: list = []
  for b, v, m, want in zip(t.outputs, t.output_views, t.output_shards, t.output_shapes):
    if m is not None: out.append(_unshard(m, store, want))
    elif b is not None: out.append(store.get(b.arg.id))
    elif v is not None and all(x.arg.id in store for x in v.toposort() if x.op is Ops.BUFFER): out.append(evaluate(v, store))
    else: out.append(None)
  return out


def _unshard(m: tuple[tuple[UOp, ...], int | None], store: dict[int, Any], shape: tuple[int, ...]) -> Any:
  """An output over a device tuple from its per-device BUFFERs: replicated, device 0's; split, the shards concatenated
  along the axis (each shard the output's shape with that axis divided among the devices). None when a shard is
  missing."""
  bufs, axis = m
  vals = [store.get(b.arg.id) for b in bufs]
  if any(v is None for v in vals): return None
  if axis is None: return vals[0]
  parts = [np.asarray(v).reshape(shape[:axis] + (-1,) + shape[axis + 1:]) for v in vals]
  return np.concatenate(parts, axis=axis)


def missing_inputs(t: Translation, root: UOp) -> str | None:
  """None when the contents of every program BUFFER root holds are known (captured, or storage the run allocated), else
  a sentence naming those that are not: such a graph's numbers are not compared (an unknown input read as zeros would
  report a mismatch that is the capture's, not tinygrad's)."""
  ids = sorted({u.arg.id for u in root.toposort() if u.op is Ops.BUFFER and u.arg.id in t.unknown})
  if not ids: return None
  return "the contents of " + ", ".join(t.unknown[i] for i in ids) + " before the run were not captured"


def evaluate_outputs(t: Translation, kg: UOp) -> list:
  """Evaluate a translated kernel graph and read each output from the storage it leaves."""
  vals = evaluate(kg, dict(t.inputs))
  by_id: dict[int, Any] = {}
  for entry, v in zip(kg.src, vals):
    base = entry
    while base.op is Ops.AFTER: base = base.src[0]
    if base.op is Ops.BUFFER: by_id[base.arg.id] = v
  return read_outputs(t, by_id)


def evaluate_tensor(t: Translation) -> list:
  """Evaluate the translated tensor graph (a SINK of the outputs, before tinygrad realizes anything): each output's value."""
  return list(evaluate(t.graphs["tensor"][0][1], dict(t.inputs)))


def evaluate_callified(t: Translation) -> list:
  """Evaluate the translated callified CALL (a precompiled call over the program's BUFFERs: its body stores every output
  into its storage) and read each output from the storage after it."""
  call = t.graphs["callified"][-1][1]
  bufs = list(dict.fromkeys(a for a in call.src[1:] if a.op is Ops.BUFFER))
  vals = evaluate(UOp(Ops.SINK, dtypes.void, tuple(UOp(Ops.AFTER, b.dtype, (b, call)) for b in bufs)), dict(t.inputs))
  return read_outputs(t, {b.arg.id: v for b, v in zip(bufs, vals)})


def run_check(program: Callable[[], Any], device: str | None = None) -> Report:
  """Capture, translate (counting coverage), check every translated graph, evaluate the callified graph and the kernel
  graph both ways."""
  return check_capture(capture(program, device=device))


def check_capture(cap: Capture) -> Report:
  """run_check of a capture already taken: its own realize and each of its steps, each checked on its own (a step's
  inputs are tinygrad's contents of its storage when it ran, its outputs tinygrad's numbers after it)."""
  rep = _check_one(cap)
  rep.steps = [_check_one(s) for s in cap.steps]
  return rep


def _check_one(cap: Capture) -> Report:
  t = translate(cap, strict=False)
  rep = Report(cap, t, violations=spec_violations(t))
  compare_numbers(rep)
  return rep


def spec_violations(t: Translation, memo: dict | None = None) -> dict[str, list[tuple[int, Violation]]]:
  """Per stage, every violation of its translated graphs as (graph index, violation). memo (tinyspec graph, stage) ->
  violations: tinyspec's UOps are interned, so a graph translated before is the same object and is checked once."""
  out: dict[str, list[tuple[int, Violation]]] = {}
  for stage in STAGES:
    out[stage] = []
    for i, (_, g) in enumerate(t.graphs[stage]):
      if g is None: continue
      key = (g, SPEC_STAGE[stage])
      vs = memo.get(key) if memo is not None else None
      if vs is None:
        vs = check(g, SPEC_STAGE[stage])
        if memo is not None: memo[key] = vs
      out[stage] += [(i, v) for v in vs]
  return out


def compare_numbers(rep: Report) -> None:
  """Evaluate each stage of the report's translation with tinyspec's evaluator (the MODES) and compare with tinygrad's
  numbers, into rep.numbers / rep.ran."""
  t, cap = rep.translation, rep.capture
  for mode, stage, run in (("tensor", "tensor", evaluate_tensor), ("callified", "callified", evaluate_callified)):
    if not cap.scheduled and mode != "tensor": return   # tinygrad made no later graph to evaluate
    if not t.graphs[stage] or t.graphs[stage][-1][1] is None:
      rep.ran[mode], rep.numbers[mode] = False, f"the {stage} graph did not translate"
      continue
    if (why := cap.unread or missing_inputs(t, t.graphs[stage][0 if stage == "tensor" else -1][1])) is not None:
      rep.ran[mode], rep.numbers[mode] = False, why
      continue
    try: _record(rep, mode, run(t))
    except Exception as e: _failed(rep, mode, e)
  main = t.main_kernel_graph
  kg_ok = main is not None and t.graphs["kernel_graph"][main][1] is not None
  for mode, with_programs in (("kernel ASTs", False), ("programs", True)):
    if not kg_ok:
      rep.ran[mode], rep.numbers[mode] = False, "the kernel graph did not translate"
      continue
    if with_programs and not t.programs:
      why = "no program translated" if cap.programs else "tinygrad compiled no program in this realize"
      rep.ran[mode], rep.numbers[mode] = False, why
      continue
    try:
      kg = t.kernel_graph(with_programs=with_programs)
      if (why := cap.unread or missing_inputs(t, kg)) is not None:
        rep.ran[mode], rep.numbers[mode] = False, why
        continue
      if with_programs:
        bodies = [u.src[0] for u in kg.toposort() if u.op is Ops.CALL and u.src[0].op in (Ops.PROGRAM, Ops.SINK)]
        rep.as_programs = (sum(b.op is Ops.PROGRAM for b in bodies), len(bodies))
      _record(rep, mode, evaluate_outputs(t, kg))
    except Exception as e: _failed(rep, mode, e)


def format_report(rep: Report, name: str) -> str:
  """Each step's lines (a program that realizes several times), then the last realize's, then the verdict over all."""
  n = len(rep.steps) + 1
  lines: list[str] = []
  for i, r in enumerate([*rep.steps, rep]):
    lines += _format_one(r, f"{name}, step {i + 1} of {n}" if n > 1 else name)
  if rep.all_ok and not rep.all_unchecked: lines.append(f"{name}: all holds")
  elif rep.all_ok:
    # a CI user reads "all holds" as "checked, and held": when a stage or a comparison did not run, say so instead
    lines.append(f"{name}: NOT CHECKED: {len(rep.all_unchecked)} part(s) of the check did not run, so nothing is claimed for them "
                 "(no violation or mismatch among the rest):")
    lines += [f"  {u}" for u in rep.all_unchecked]
  else:
    reps = [*rep.steps, rep]
    by_rule = Counter(v.rule for r in reps for vs in r.violations.values() for _, v in vs)
    rules = ", ".join(f"{r} x{k}" if k > 1 else r for r, k in by_rule.items())
    mismatches = sum(1 for r in reps for m, x in r.numbers.items() if r.ran.get(m) and x is not None)
    lines.append(f"{name}: {sum(by_rule.values())} violation(s)" + (f" ({rules})" if rules else "") + f", {mismatches} mismatch(es)")
  return "\n".join(lines)


def _format_one(rep: Report, name: str) -> list[str]:
  t = rep.translation
  lines = [f"{name}: tinygrad on {rep.capture.device}, {len(rep.capture.kernels)} kernel(s), {len(rep.capture.programs)} program(s)"
           + ("" if rep.capture.scheduled else "; its realize scheduled nothing (the outputs were storage already)")]
  cov = t.coverage()
  for stage in STAGES:
    done, total = cov[stage]
    graphs = t.graphs[stage]
    skipped = sum(g is None for _, g in graphs)
    # a stage with no node says so (a realize that only copies compiles no program): nothing there was translated
    share = f"{100.0 * done / total:6.2f}% translated" if total else "nothing captured"
    vs = rep.violations.get(stage, [])
    lines.append(f"{stage:>13}: {len(graphs):3d} graph(s), {total:5d} nodes, {share}"
                 + (f", {skipped} not checked (untranslatable)" if skipped else "")
                 + (f", {len(vs)} violation(s)" if vs else ", legal" if len(graphs) > skipped else ""))
    counts = t.untranslatable_counts(stage)
    for op, why in t.untranslatable(stage).items(): lines.append(f"               untranslatable {op} x{counts[op]}: {why}")
  n = 0
  for stage in STAGES:
    for i, v in rep.violations.get(stage, []):
      n += 1
      lines.append(f"{n}. ({stage} #{i}) {v}")
  for mode, res in rep.numbers.items():
    what = {"tensor": "tensor graph", "callified": "callified graph (its precompiled CALL)", "kernel ASTs": "kernel graph with kernel ASTs",
            "programs": f"kernel graph with programs ({rep.as_programs[0]} of {rep.as_programs[1]} kernel calls; the rest as ASTs)"}[mode]
    if not rep.ran.get(mode): lines.append(f"numbers, {what}: not run ({res})")
    elif res is None: lines.append(f"numbers, {what}: tinyspec's evaluator reproduces tinygrad's outputs")
    else: lines.append(f"numbers, {what}: MISMATCH: {res}")
  return lines


def draw(rep: Report, name: str, output: str | None = None) -> str | None:
  """Draw the first violating stage's graph (of the first step that has one) with tinyspec's viz, violations highlighted."""
  for stage, vs, r in ((s, r.violations.get(s, []), r) for r in [*rep.steps, rep] for s in STAGES):
    if not vs: continue
    i = vs[0][0]
    g = r.translation.graphs[stage][i][1]
    mine = [v for j, v in vs if j == i]
    out = Path(output) if output else Path(f"{Path(name).stem}_{stage}.svg")
    return str(viz.render(g, out, mine, title=f"{name}: {len(mine)} violation(s) at {stage} (tinygrad)"))
  return None


EXIT_UNCHECKED = 3  # nothing found, but a stage or a comparison did not run (Report.unchecked): not a pass


def main(file: str, device: str | None = None, show: bool = False, output: str | None = None) -> int:
  """The verb: print the report; exit 0 when all holds, 1 on a violation or mismatch, 2 on unreadable input, 3
  (EXIT_UNCHECKED) when nothing was found but part of the check did not run."""
  try: program = load_program(file)
  except BadInput as e:
    print(f"tinyspec: {e}", file=sys.stderr)
    return 2
  try: rep = run_check(program, device=device)
  except Exception as e:
    print(f"tinyspec: {file}: tinygrad could not run program(): {type(e).__name__}: {e}", file=sys.stderr)
    return 2
  print(format_report(rep, file))
  if show and (path := draw(rep, file, output)) is not None: print(path)
  return 1 if not rep.all_ok else EXIT_UNCHECKED if rep.all_unchecked else 0

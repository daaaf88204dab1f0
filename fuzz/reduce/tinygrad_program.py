"""Reduce a generated tinygrad program while it still fails the same way: fewer outputs and lines, lines bypassed,
simpler constants, smaller inputs with simpler values. Every candidate is checked valid first
(fuzz.generate.tinygrad_programs.check_program), so the predicate only ever runs programs both APIs accept.
Greedy: a pass keeps every candidate that still fails and the passes repeat until none shrinks the program or the time
budget is spent."""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Iterator

import numpy as np

from fuzz.generate.tinygrad_programs import Input, Line, Program, Raw, check_program, is_int


def _live(p: Program) -> Program:
  """p without the lines no output depends on."""
  need = set(p.outputs)
  keep: list[Line] = []
  for ln in reversed(p.lines):
    if need & set(ln.outs):
      keep.append(ln)
      need |= {a for a in ln.args if isinstance(a, str) and not isinstance(a, Raw)}
  inputs = tuple(i for i in p.inputs if i.name in need) or p.inputs[:1]
  return replace(p, lines=tuple(reversed(keep)), inputs=inputs)


def _rename(ln: Line, old: str, new: str) -> Line:
  return replace(ln, args=tuple(new if a == old and not isinstance(a, Raw) else a for a in ln.args))


def _fewer_outputs(p: Program) -> Iterator[Program]:
  if len(p.outputs) > 1:
    for o in p.outputs: yield replace(p, outputs=(o,))


def _earlier_outputs(p: Program) -> Iterator[Program]:
  """An output replaced by a variable its line reads: the program ends one line earlier."""
  by_out = {o: ln for ln in p.lines for o in ln.outs}
  for k, o in enumerate(p.outputs):
    ln = by_out.get(o)
    if ln is None: continue
    for a in ln.args:
      if isinstance(a, str) and not isinstance(a, Raw) and a not in p.outputs:
        yield replace(p, outputs=p.outputs[:k] + (a,) + p.outputs[k + 1:])


def _bypassed(p: Program) -> Iterator[Program]:
  """A line dropped, its readers reading its first variable instead (valid when dtype and shape agree)."""
  for k, ln in enumerate(p.lines):
    src = next((a for a in ln.args if isinstance(a, str) and not isinstance(a, Raw)), None)
    if src is None or len(ln.outs) != 1: continue
    out = ln.outs[0]
    rest = tuple(_rename(x, out, src) for x in p.lines[k + 1:])
    yield replace(p, lines=p.lines[:k] + rest, outputs=tuple(src if o == out else o for o in p.outputs))


def _simpler_constants(p: Program) -> Iterator[Program]:
  for k, ln in enumerate(p.lines):
    if ln.op in ("reshape", "permute", "pad", "shrink", "expand", "cast", "call"): continue
    for j, a in enumerate(ln.args):
      if isinstance(a, bool) or not isinstance(a, (int, float)): continue
      for c in dict.fromkeys(type(a)(x) for x in (0, 1, 2, -1, a // 2 if isinstance(a, int) else a / 2)):
        if c != a and (abs(c) < abs(a) or (abs(c) == abs(a) and c > a)):
          yield replace(p, lines=p.lines[:k] + (replace(ln, args=ln.args[:j] + (c,) + ln.args[j + 1:]),) + p.lines[k + 1:])


def _smaller_inputs(p: Program) -> Iterator[Program]:
  """An input with one fewer index along one axis (every later line must still apply)."""
  for k, i in enumerate(p.inputs):
    a = np.array(i.values, dtype=object).reshape(i.shape)
    for ax, d in enumerate(i.shape):
      if d > 1:
        sm = a.take(range(d - 1), axis=ax)
        yield replace(p, inputs=p.inputs[:k] + (Input(i.name, i.dtype, sm.shape, tuple(sm.reshape(-1).tolist())),) + p.inputs[k + 1:])


def _simpler_values(p: Program) -> Iterator[Program]:
  """All of an input's values set to 0 or 1, then one value at a time."""
  for k, i in enumerate(p.inputs):
    zero, one = (0, 1) if is_int(i.dtype) else (0.0, 1.0)
    for v in (zero, one):
      if any(x != v for x in i.values): yield _with_values(p, k, (v,) * len(i.values))
    for j, x in enumerate(i.values):
      for v in (zero, one):
        if x != v and abs(x) > abs(v): yield _with_values(p, k, i.values[:j] + (v,) + i.values[j + 1:])


def _with_values(p: Program, k: int, values: tuple) -> Program:
  return replace(p, inputs=p.inputs[:k] + (replace(p.inputs[k], values=values),) + p.inputs[k + 1:])


PASSES: tuple[Callable[[Program], Iterator[Program]], ...] = (_fewer_outputs, _earlier_outputs, _bypassed, _simpler_constants,
                                                              _smaller_inputs, _simpler_values)


def weight(p: Program) -> tuple:
  """What reducing lowers, in order: lines, elements, then how far values are from 0."""
  return (p.size(), len(p.outputs), sum(int(np.prod(i.shape)) for i in p.inputs),
          sum(min(abs(float(v)), 1e30) for i in p.inputs for v in i.values))


def reduce_program(p: Program, fails: Callable[[Program], bool], max_seconds: float = 60.0) -> Program:
  """A program no heavier than p (by weight) for which fails still holds."""
  deadline = time.monotonic() + max_seconds
  best = p
  changed = True
  while changed and time.monotonic() < deadline:
    changed = False
    for make in PASSES:
      for cand in make(best):
        if time.monotonic() >= deadline: return best
        cand = _live(cand)
        if weight(cand) >= weight(best) or check_program(cand) is None: continue
        if fails(cand):
          best, changed = cand, True
          break
  return best

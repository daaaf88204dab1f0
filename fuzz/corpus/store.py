"""The corpus: one file per counterexample, written with tinyspec.pyrender and read back with tinyspec.pyread.

A file holds a header comment (signature, seed, case, date, message), SIGNATURE, EXPECT ("fails" for an open bug,
"passes" for a fixed one), KIND, OPTIONS (the lowering choices), BACKENDS, PER_REWRITE, a target's own constants
(e.g. PROGRAM, the source of a tinygrad program, and REPRODUCES, the tinygrad versions its standalone script fails on;
loaded into Entry.meta), `graph()` and `inputs()`.
It is valid Python, but it is data: load_entry parses it and accepts only that grammar (UOp constructions, the IR's
arg classes, literals, np.array literals), so loading an entry never runs code from it; anything else is an
InputError naming the line. It is named by a stable hash of the signature, so the same bug found twice is one file.
Writes are atomic: a temp file in the same directory, fsync, rename.
"""
from __future__ import annotations

import ast
import datetime
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fuzz.generate.case import Case
from tinyspec.fileio import atomic_write
from tinyspec.loadfile import InputError
from tinyspec.pyread import read_module
from tinyspec.pyrender import HEADER, literal_source, render_body
from tinyspec.uop import Ops, UOp


@dataclass
class Entry:
  """A corpus file, loaded."""
  path: Path
  case: Case
  signature: tuple[str, str, str]
  expect: str = "fails"
  backends: tuple[str, ...] = ("reference",)
  per_rewrite: bool = False
  meta: dict[str, Any] = field(default_factory=dict)


def signature_hash(signature: Sequence[str]) -> str:
  return hashlib.sha256("/".join(signature).encode()).hexdigest()[:12]


def entry_name(signature: Sequence[str]) -> str:
  """The file of a signature's bug group: the signatures of one bug share it."""
  group = bug_group(signature)
  slug = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(group[:2])).strip("_")[:40]
  return f"{slug}_{signature_hash(group)}.py"


def entry_path(corpus_dir: str | Path, signature: Sequence[str]) -> Path:
  return Path(corpus_dir) / entry_name(signature)


KINDS = ("tensor", "kernel", "symbolic", "tinygrad")  # what a case is: fuzz.engine.targets.target_for_kind replays each


def _value_source(x: Any) -> str:
  if isinstance(x, float) and not math.isfinite(x): return f"float({str(x)!r})"
  return literal_source(x)


def render_inputs(inputs: dict[int, np.ndarray]) -> list[str]:
  lines = ["def inputs():", "  return {"]
  for k in sorted(inputs):
    a = np.asarray(inputs[k]).reshape(-1)
    vals = ", ".join(_value_source(v) for v in a.tolist())
    lines.append(f"    {k}: np.array([{vals}], dtype={a.dtype.name!r}),")
  lines.append("  }")
  return lines


def render_entry(case: Case, signature: Sequence[str], message: str = "", expect: str = "fails", backends: Sequence[str] = ("reference",),
                 per_rewrite: bool = False, blame: str = "", date: str | None = None, extra: dict[str, Any] | None = None) -> str:
  """The text of a corpus file. extra: upper-case names and the values (with a repr that rebuilds them) a target adds."""
  date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
  head = [f"# tinyspec counterexample: {'/'.join(signature)}",
          f"# seed {case.seed}, case {case.index}, found {date}"]
  head += [f"# {ln}" for ln in message.splitlines()[:6]]
  head += [f"# {ln}" for ln in blame.splitlines()[:3]]
  body = [
    "import numpy as np",
    HEADER.rstrip("\n"),
    "",
    f"SIGNATURE = {literal_source(tuple(signature))}",
    f"EXPECT = {literal_source(expect)}",
    f"KIND = {literal_source(case.kind)}",
    f"OPTIONS = {literal_source(dict(case.options))}",
    f"BACKENDS = {literal_source(tuple(backends))}",
    f"PER_REWRITE = {literal_source(bool(per_rewrite))}",
    f"SEED = {literal_source(case.seed)}",
    f"CASE = {literal_source(case.index)}",
    *_extra_lines(extra or {}),
    "",
    "",
    "def graph():",
    *render_body(case.root),
    "",
    "",
    *render_inputs(case.inputs),
  ]
  return "\n".join(head + body) + "\n"


# the names every entry has (Entry's own fields); a target's extra names go to Entry.meta
_OWN = frozenset({"SIGNATURE", "EXPECT", "KIND", "OPTIONS", "BACKENDS", "PER_REWRITE"})


def _extra_lines(extra: dict[str, Any]) -> list[str]:
  """NAME = value for each extra; a multi-line string as a triple-quoted block, so a program reads as written."""
  out = []
  for k, v in extra.items():
    if not k.isupper() or k in _OWN: raise ValueError(f"a corpus entry's extra name must be upper case and none of {sorted(_OWN)}: {k!r}")
    block = isinstance(v, str) and "\n" in v and "'''" not in v and "\\" not in v  # nothing the block would escape
    out.append(f"{k} = '''\\\n{v}'''" if block else f"{k} = {literal_source(v)}")
  return out


def placeholder_entry(signature: Sequence[str], message: str, seed: int | None, index: int | None) -> str:
  """The entry of a finding whose case cannot be written as it is (its graph is outside pyrender's grammar): the
  signature, the message and where the case comes from, with an empty graph."""
  return render_entry(Case(UOp(Ops.SINK), {}, {}, "tensor", seed, index), signature, message=message)


def write_entry(corpus_dir: str | Path, case: Case, signature: Sequence[str], **kw) -> tuple[Path, bool]:
  """(path, True) when a new file was written; (path, False) when the signature already has one (kept as is)."""
  path = entry_path(corpus_dir, signature)
  if path.exists(): return path, False
  atomic_write(path, render_entry(case, signature, **kw))
  return path, True


def load_entry(path: str | Path) -> Entry:
  """A corpus file as an Entry, read without executing it (tinyspec.pyread); InputError naming the file, the line
  and what is wrong."""
  p = Path(path)
  if not p.is_file(): raise InputError(f"{p}: no such file")
  try: text = p.read_text(encoding="utf-8")
  except (OSError, UnicodeDecodeError) as e: raise InputError(f"{p}: cannot be read: {e}") from None
  ns = read_module(text, str(p))
  for name in ("graph", "inputs", "SIGNATURE"):
    if name not in ns: raise InputError(f"{p}: defines no {name}")
  root, inputs = ns["graph"], ns["inputs"]
  if not isinstance(root, UOp): raise InputError(f"{p}: graph() returned {type(root).__name__}, not a UOp")
  if not isinstance(inputs, dict) or not all(type(k) is int and isinstance(v, np.ndarray) for k, v in inputs.items()):
    raise InputError(f"{p}: inputs() must return {{BUFFER id: np.array(...)}}")
  sig = ns["SIGNATURE"]
  if not (isinstance(sig, tuple) and len(sig) == 3 and all(isinstance(s, str) for s in sig)):
    raise InputError(f"{p}: SIGNATURE must be three strings, got {str(sig)[:100]}")
  expect = ns.get("EXPECT", "fails")
  if expect not in ("fails", "passes"): raise InputError(f"{p}: EXPECT must be 'fails' or 'passes', got {str(expect)[:100]!r}")
  kind = ns.get("KIND", "tensor")
  if kind not in KINDS: raise InputError(f"{p}: KIND must be one of {', '.join(KINDS)}, got {str(kind)[:100]!r}")
  options, backends, per_rewrite = ns.get("OPTIONS", {}), ns.get("BACKENDS", ("reference",)), ns.get("PER_REWRITE", False)
  if not isinstance(options, dict): raise InputError(f"{p}: OPTIONS must be a dict")
  if not (isinstance(backends, tuple) and all(isinstance(b, str) for b in backends)): raise InputError(f"{p}: BACKENDS must be a tuple of names")
  if not isinstance(per_rewrite, bool): raise InputError(f"{p}: PER_REWRITE must be True or False")
  seed, index = ns.get("SEED"), ns.get("CASE")
  if not all(x is None or type(x) is int for x in (seed, index)): raise InputError(f"{p}: SEED and CASE must be ints")
  rep = ns.get("REPRODUCES", {})
  if not (isinstance(rep, dict) and all(isinstance(k, str) and type(v) is bool for k, v in rep.items())):
    raise InputError(f"{p}: REPRODUCES must be {{tinygrad version: True or False}}, got {str(rep)[:100]}")
  case = Case(root, inputs, dict(options), kind, seed, index)
  return Entry(p, case, sig, expect, backends, per_rewrite, {k: v for k, v in ns.items() if k.isupper() and k not in _OWN})


def header_lines(path: str | Path) -> list[str]:
  """The comment lines render_entry wrote under the signature and the seed line (the finding's message, its blame)."""
  lines = Path(path).read_text(encoding="utf-8").splitlines()
  head = lines[:next((i for i, ln in enumerate(lines) if not ln.startswith("#")), len(lines))]
  return [ln[2:] if ln.startswith("# ") else ln[1:] for ln in head[2:]]


def set_constant(path: str | Path, name: str, value: Any) -> None:
  """Write NAME = value into a corpus file, in place of its NAME line or after its last constant, the rest unchanged
  (atomically). For a record added to an entry after it was found, e.g. REPRODUCES."""
  p = Path(path)
  text = p.read_text(encoding="utf-8")
  lines = text.splitlines(keepends=True)
  consts = [st for st in ast.parse(text).body if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)]
  if not consts: raise InputError(f"{p}: no constants to put {name} beside")
  new = _extra_lines({name: value})[0] + "\n"
  old = next((st for st in consts if st.targets[0].id == name), None)  # type: ignore[attr-defined]
  if old is not None: lines[old.lineno - 1:old.end_lineno] = [new]
  else: lines.insert(consts[-1].end_lineno or consts[-1].lineno, new)
  atomic_write(p, "".join(lines))


def entries(corpus_dir: str | Path) -> list[Path]:
  """The corpus files of a directory, sorted (hidden temp files are not entries)."""
  d = Path(corpus_dir)
  if not d.is_dir(): return []
  return sorted(p for p in d.glob("*.py") if not p.name.startswith((".", "_")))


MEANING_ORACLES = ("parity", "metamorphic", "prove")  # the oracles that see a rewrite change what a graph computes


def bug_group(signature: Sequence[str]) -> tuple[str, ...]:
  """The bug a signature names: the oracle, and the pass and rule blame found. The oracles that see a change of meaning
  are one: a metamorphic difference replays as a parity difference under the other lowering choices it was found with,
  and a rule the prover refuted as a parity difference of its counterexample kernel (fuzz.corpus.refutations). One
  group is one corpus entry."""
  return ("parity" if signature[0] in MEANING_ORACLES else signature[0], *signature[1:])


def same_bug(a: Sequence[str], b: Sequence[str]) -> bool:
  """Whether two signatures name the same failure (bug_group)."""
  return bug_group(a) == bug_group(b)


class StillFails:
  """The predicate a reducer shrinks by: still(c) when check(c) gives a finding of the same bug as `finding` (same_bug
  of the signatures). `last` is the finding it gave the last time it held (the original finding until then), so a
  reducer's result comes with its own message. It calls the check it is given; storage imports no oracle."""

  def __init__(self, check: Callable[[Any], Iterable[Any]], finding: Any):
    self.check, self.signature, self.last = check, finding.signature, finding

  def __call__(self, candidate: Any) -> bool:
    for g in self.check(candidate):
      if same_bug(g.signature, self.signature):
        self.last = g
        return True
    return False




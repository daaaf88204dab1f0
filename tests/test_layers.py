"""Imports point one way, down the layers of the design, and no module imports another's `_private` name.

    IR (dtype, opcodes, args, uop, loop_order, rewrite, pyrender, pyread, fileio, loadfile, cliargs) <- op meanings (ops)
    <- z3 translation (smt) <- spec <- semantics <- render <- lower <- runtime <- frontend, autograd, viz <- fuzz, prove, bridge <- cli

Inside fuzz/, a package imports only those below it: what a case is and how it is stored come first, then what checks
and reduces it, then what reports on and runs a campaign.

    generate <- corpus (storage, no oracle) <- check <- reduce <- report <- engine;   testbed imports no fuzz package

fuzz.generate imports nothing of the lowering, its renderers or runtimes: a case is built and screened with the IR, the op
registry and the evaluator only. Every import counts, those inside functions too.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS: list[tuple[str, ...]] = [
  ("tinyspec.dtype", "tinyspec.opcodes", "tinyspec.args", "tinyspec.uop", "tinyspec.loop_order", "tinyspec.rewrite", "tinyspec.pyrender",
   "tinyspec.pyread", "tinyspec.fileio", "tinyspec.loadfile", "tinyspec.cliargs"),
  ("tinyspec.ops",), ("tinyspec.smt",), ("tinyspec.spec",), ("tinyspec.semantics",), ("tinyspec.render",), ("tinyspec.lower",),
  ("tinyspec.runtime",), ("tinyspec.frontend", "tinyspec.autograd", "tinyspec.viz"),
  ("fuzz", "tinyspec.prove", "tinyspec.bridge"), ("tinyspec.cli",),
]
FUZZ_FLOW = ["fuzz.generate", "fuzz.corpus", "fuzz.check", "fuzz.reduce", "fuzz.report", "fuzz.engine"]
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def rank(mod: str) -> int | None:
  for i, layer in enumerate(LAYERS):
    if any(mod == p or mod.startswith(p + ".") for p in layer): return i
  return None


def modules() -> dict[str, Path]:
  out = {}
  for top in ("tinyspec", "fuzz"):
    for p in (ROOT / top).rglob("*.py"):
      parts = list(p.relative_to(ROOT).with_suffix("").parts)
      if parts[-1] == "__init__": parts = parts[:-1]
      out[".".join(parts)] = p
  return out


MODULES = modules()


def imports(mod: str) -> list[tuple[str, str | None, int]]:
  """(imported module, imported name or None, line) of every import of tinyspec or fuzz in mod."""
  path = MODULES[mod]
  out = []
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.Import):
      out += [(a.name, None, node.lineno) for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        base = ".".join(pkg[:len(pkg) - node.level + 1] + ([base] if base else []))
      for a in node.names:
        full = f"{base}.{a.name}"
        out.append((full, None, node.lineno) if full in MODULES else (base, a.name, node.lineno))
  return [x for x in out if x[0].split(".")[0] in ("tinyspec", "fuzz")]


def wrong_way(mod: str) -> list[str]:
  r = rank(mod)
  if r is None or mod == "tinyspec": return []  # the package's public surface re-exports from every layer
  bad = []
  for tgt, _, line in imports(mod):
    t = rank(tgt)
    if t is not None and t > r and (mod, tgt) not in ALLOWED_UPWARD: bad.append(f"{mod}:{line} imports {tgt} (layer {t} above {r})")
  return bad


def fuzz_rank(mod: str) -> int | None:
  return next((i for i, p in enumerate(FUZZ_FLOW) if mod == p or mod.startswith(p + ".")), None)


def against_the_flow(mod: str) -> list[str]:
  """Imports of a fuzz package from one above it in FUZZ_FLOW (testbed: of any other fuzz package)."""
  if not mod.startswith("fuzz."): return []
  r = fuzz_rank(mod)
  bad = []
  for tgt, _, line in imports(mod):
    if not tgt.startswith("fuzz.") or tgt.split(".")[1] == mod.split(".")[1]: continue
    t = fuzz_rank(tgt)
    if r is None or t is None or t > r: bad.append(f"{mod}:{line} imports {tgt}")
  return bad


def private_names(mod: str) -> list[str]:
  return [f"{mod}:{line} imports {name} from {tgt}" for tgt, name, line in imports(mod)
          if name is not None and name.startswith("_") and not name.startswith("__") and tgt != mod]


def test_every_module_has_a_layer():
  assert [m for m in MODULES if rank(m) is None and m != "tinyspec"] == []


def test_imports_point_down_the_layers():
  bad = [b for m in sorted(MODULES) for b in wrong_way(m)]
  assert bad == [], "\n".join(bad)


def test_fuzz_packages_follow_the_flow():
  assert [m for m in MODULES if m.startswith("fuzz.") and fuzz_rank(m) is None and not m.startswith("fuzz.testbed")] == []
  bad = [b for m in sorted(MODULES) for b in against_the_flow(m)]
  assert bad == [], "\n".join(bad)


def test_the_flow_check_fires_on_storage_importing_an_oracle(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  fake.write_text("from fuzz.check.oracles import Checker\n")
  monkeypatch.setitem(MODULES, "fuzz.corpus.fake", fake)
  assert against_the_flow("fuzz.corpus.fake") == ["fuzz.corpus.fake:1 imports fuzz.check.oracles"]


def test_no_private_name_crosses_modules():
  bad = [b for m in sorted(MODULES) for b in private_names(m)]
  assert bad == [], "\n".join(bad)


@pytest.mark.parametrize("line,expect", [("from tinyspec.lower.pipeline import lower", "imports tinyspec.lower.pipeline"),
                                         ("from tinyspec.semantics.alu import _private", None)])
def test_the_check_fires_on_a_wrong_way_import(tmp_path, monkeypatch, line, expect):
  # a spec module that imports the lowering (above it) is reported; so is a private name, by the other check
  fake = tmp_path / "fake.py"
  fake.write_text(f"{line}\n")
  monkeypatch.setitem(MODULES, "tinyspec.spec.fake", fake)
  if expect: assert any(expect in b for b in wrong_way("tinyspec.spec.fake"))
  else: assert private_names("tinyspec.spec.fake") == ["tinyspec.spec.fake:1 imports _private from tinyspec.semantics.alu"]


# a generator that ran a pass would fail with the pass: a broken rule would stop the campaign from making cases at all
GENERATION_MAY_NOT_IMPORT = ("tinyspec.lower", "tinyspec.runtime", "tinyspec.render")


def generation_runs_the_pipeline(mod: str) -> list[str]:
  if not (mod == "fuzz.generate" or mod.startswith("fuzz.generate.")): return []
  return [f"{mod}:{line} imports {tgt}" for tgt, _, line in imports(mod)
          if any(tgt == p or tgt.startswith(p + ".") for p in GENERATION_MAY_NOT_IMPORT)]


def test_generation_imports_nothing_of_the_lowering():
  assert [m for m in MODULES if m.startswith("fuzz.generate.")], "no generator module found"
  bad = [b for m in sorted(MODULES) for b in generation_runs_the_pipeline(m)]
  assert bad == [], "\n".join(bad)


def test_the_generation_check_fires_on_an_import_inside_a_function(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  fake.write_text("def f():\n  from tinyspec.lower.callify import CALLIFY\n")
  monkeypatch.setitem(MODULES, "fuzz.generate.fake", fake)
  assert generation_runs_the_pipeline("fuzz.generate.fake") == ["fuzz.generate.fake:2 imports tinyspec.lower.callify"]

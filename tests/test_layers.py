"""Imports point one way, down the layers of the design, and no module imports another's `_private` name.

    IR (dtype, opcodes, args, uop, loop_order, rewrite, pyrender, pyread, fileio, loadfile, cliargs) <- op meanings (ops)
    <- z3 translation (smt) <- spec <- semantics <- render <- lower <- runtime <- frontend, autograd, viz <- fuzz, prove, bridge <- cli

Inside fuzz/, a package imports only those below it: what a case is and how it is stored come first, then what checks
and reduces it, then what reports on and runs a campaign.

    generate <- corpus (storage, no oracle) <- check <- reduce <- report <- engine;   testbed imports no fuzz package

fuzz.generate imports nothing of the lowering, its renderers or runtimes: a case is built and screened with the IR, the op
registry and the evaluator only; fuzz.engine holds no generation or checking, it wires a target's generator, checker and
reducer together. Every import counts, those inside functions too.

The shape is held too: no import cycle, even inside a package; every import at the top of its module but those of an
optional extra (LAZY_EXTRAS); no module over 600 lines and no function over 80; a pass's table is reached by attribute.
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
# the packages a module may import inside a function: optional extras, so that tinyspec runs where they are not installed
LAZY_EXTRAS = {
  "tinygrad": "the bridge's extra (pip install tinyspec[tinygrad])",
  "pyopencl": "the OpenCL backend's extra (tinyspec[opencl])",
  "dask": "campaigns on a cluster (tinyspec[dask])", "distributed": "the same extra", "cloudpickle": "comes with Dask",
  # the bridge's package refuses to import without tinygrad (TinygradMissingError): a part of tinyspec that offers a
  # tinygrad target or oracle imports it where that target runs, so that tinyspec without the extra still runs the rest
  "tinyspec.bridge.tinygrad": "the bridge itself, which needs the tinygrad extra",
}
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 80


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
    if t is not None and t > r: bad.append(f"{mod}:{line} imports {tgt} (layer {t} above {r})")
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


# fuzz.engine runs a campaign: which graphs are drawn, what is checked and how a case is reduced belong to the target's
# modules in generate/, check/ and reduce/, so the engine imports none of what those are written with
ENGINE_MAY_NOT_IMPORT = ("hypothesis", "z3", "tinyspec.smt", "tinyspec.semantics", "tinyspec.spec", "tinyspec.prove")


def all_imports(path: Path) -> list[tuple[str, int, bool]]:
  """(module named, line, inside a function) of every absolute import in path, of any package."""
  tree = ast.parse(path.read_text())
  in_fn = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import): out += [(a.name, node.lineno, id(node) in in_fn) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level: out.append((node.module or "", node.lineno, id(node) in in_fn))
  return out


def engine_generates_or_checks(mod: str) -> list[str]:
  if not (mod == "fuzz.engine" or mod.startswith("fuzz.engine.")): return []
  return [f"{mod}:{line} imports {name}" for name, line, _ in all_imports(MODULES[mod])
          if any(name == p or name.startswith(p + ".") for p in ENGINE_MAY_NOT_IMPORT)]


def test_engine_holds_no_generation_or_checking():
  bad = [b for m in sorted(MODULES) for b in engine_generates_or_checks(m)]
  assert bad == [], "\n".join(bad)


def test_the_engine_check_fires_on_a_strategy(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  fake.write_text("import hypothesis.strategies as st\n")
  monkeypatch.setitem(MODULES, "fuzz.engine.fake", fake)
  assert engine_generates_or_checks("fuzz.engine.fake") == ["fuzz.engine.fake:1 imports hypothesis.strategies"]


def import_graph() -> dict[str, set[str]]:
  return {m: {t for t, _, _ in imports(m) if t in MODULES and t != m} for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The import cycles of graph: its strongly connected components of more than one module (Tarjan, iterative)."""
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on_stack: set[str] = set()
  found: list[list[str]] = []
  for start in sorted(graph):
    if start in index: continue
    work = [(start, iter(sorted(graph[start])))]
    index[start] = low[start] = len(index)
    stack.append(start); on_stack.add(start)
    while work:
      v, it = work[-1]
      w = next(it, None)
      if w is not None:
        if w not in index:
          index[w] = low[w] = len(index)
          stack.append(w); on_stack.add(w)
          work.append((w, iter(sorted(graph[w]))))
        elif w in on_stack: low[v] = min(low[v], index[w])
        continue
      work.pop()
      if work: low[work[-1][0]] = min(low[work[-1][0]], low[v])
      if low[v] == index[v]:
        comp = []
        while True:
          x = stack.pop(); on_stack.discard(x); comp.append(x)
          if x == v: break
        if len(comp) > 1: found.append(sorted(comp))
  return found


def test_no_import_cycles():
  assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle_through_three_modules():
  graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
  assert cycles(graph) == [["a", "b", "c"]]
  assert cycles({"a": {"b"}, "b": set()}) == []


def lazy_imports(mod: str) -> list[str]:
  return [f"{mod}:{line} imports {name} inside a function" for name, line, in_fn in all_imports(MODULES[mod])
          if in_fn and not any(name == x or name.startswith(x + ".") for x in LAZY_EXTRAS)] + \
         [f"{mod}:{line} imports {tgt} inside a function" for tgt, line in relative_imports_in_functions(MODULES[mod])]


def relative_imports_in_functions(path: Path) -> list[tuple[str, int]]:
  tree = ast.parse(path.read_text())
  return [("." * n.level + (n.module or ""), n.lineno) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
          for n in ast.walk(f) if isinstance(n, ast.ImportFrom) and n.level]


def test_imports_are_at_the_top():
  bad = [b for m in sorted(MODULES) for b in lazy_imports(m)]
  assert bad == [], "\n".join(bad)


def test_the_top_check_fires_on_an_import_in_a_function_and_allows_an_extra(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  fake.write_text("def f():\n  import tinygrad\n  from tinyspec.uop import UOp\n  import json\n")
  monkeypatch.setitem(MODULES, "tinyspec.runtime.fake", fake)
  assert lazy_imports("tinyspec.runtime.fake") == ["tinyspec.runtime.fake:3 imports tinyspec.uop inside a function",
                                                   "tinyspec.runtime.fake:4 imports json inside a function"]


# outside the packages, the code that is not a test is held to the same lengths: benchmarks, scripts, the plugin's entry
OTHER_CODE = sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "scripts").glob("*.py"), ROOT / "pytest_tinyspec.py"])


def too_long(mod: str, path: Path | None = None) -> list[str]:
  path = MODULES[mod] if path is None else path
  src = path.read_text()
  bad = [f"{mod}: {n} lines" for n in [len(src.splitlines())] if n > MAX_MODULE_LINES]
  for node in ast.walk(ast.parse(src)):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
      bad.append(f"{mod}:{node.lineno} {node.name}: {n} lines")
  return bad


def test_no_module_or_function_is_too_long():
  bad = [b for m in sorted(MODULES) for b in too_long(m)] + [b for p in OTHER_CODE for b in too_long(str(p.relative_to(ROOT)), p)]
  assert bad == [], "\n".join(bad)


def test_the_length_check_fires(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  body = "".join(f"  x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
  fake.write_text(f"def f():\n{body}" + "\n" * (MAX_MODULE_LINES - MAX_FUNCTION_LINES))
  monkeypatch.setitem(MODULES, "tinyspec.fake", fake)
  assert too_long("tinyspec.fake") == [f"tinyspec.fake: {MAX_MODULE_LINES + 1} lines", f"tinyspec.fake:1 f: {MAX_FUNCTION_LINES + 1} lines"]


def tables_by_string(mod: str) -> list[str]:
  """Subscripts of a pass's tables by a string (`tables["pm_x"]`): a table is reached by attribute, its name written once."""
  return [f"{mod}:{n.lineno} {ast.unparse(n)}" for n in ast.walk(ast.parse(MODULES[mod].read_text()))
          if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
          and ast.unparse(n.value).split(".")[-1] == "tables"]


def test_tables_are_reached_by_attribute():
  bad = [b for m in sorted(MODULES) for b in tables_by_string(m)]
  assert bad == [], "\n".join(bad)


def test_the_table_check_fires(tmp_path, monkeypatch):
  fake = tmp_path / "fake.py"
  fake.write_text("def run(root, tables):\n  return tables['pm_x'], tables.pm_y\n")
  monkeypatch.setitem(MODULES, "tinyspec.lower.fake", fake)
  assert tables_by_string("tinyspec.lower.fake") == ["tinyspec.lower.fake:2 tables['pm_x']"]

"""Where a lowering starts (tinyspec.lower.start): one decision for the fuzzer, `tinyspec lower` and the runtimes.
A kernel-level graph starts after rangeify; a TENSOR graph, even one that calls an opaque kernel, at the first pass."""
from __future__ import annotations

import pytest

from fuzz.generate.case import default_weights
from fuzz.generate.kinds import case_for
from tinyspec.lower.kernel_map import kernel_calls
from tinyspec.lower.pipeline import PASSES
from tinyspec.lower.start import graph_level, start_index
from tinyspec.pyrender import render_module

pytestmark = pytest.mark.spec
AFTER_RANGEIFY = [p.name for p in PASSES].index("rangeify") + 1


def _cases():
  """A kernel graph and a TENSOR graph that calls a kernel, from the generator."""
  w = default_weights()
  kernel = tensor_with_call = None
  for i in range(400):
    c = case_for(0, i, w)
    if c.kind == "kernel" and kernel is None: kernel = c
    if c.kind == "tensor" and kernel_calls(c.root) and tensor_with_call is None: tensor_with_call = c
    if kernel is not None and tensor_with_call is not None: return kernel, tensor_with_call
  pytest.fail("the generator made no kernel graph or no tensor graph with a kernel call in 400 cases")


def test_the_level_of_a_graph():
  kernel, tensor = _cases()
  assert graph_level(kernel.root) == "kernel"
  assert graph_level(tensor.root) == "tensor", "a tensor graph that calls an opaque kernel is still a tensor graph"
  assert start_index(PASSES, kernel.root) == AFTER_RANGEIFY and PASSES[AFTER_RANGEIFY - 1].name == "rangeify"
  assert start_index(PASSES, tensor.root) == 0
  # a declared level (a fuzz case's kind) decides over the graph's look
  assert start_index(PASSES, tensor.root, "kernel") == AFTER_RANGEIFY and start_index(PASSES, kernel.root, "tensor") == 0
  with pytest.raises(ValueError, match="unknown graph level"): start_index(PASSES, kernel.root, "symbolic")


def test_generated_cases_declare_the_level_their_graphs_have():
  w = default_weights()
  cases = [case_for(1, i, w) for i in range(150)]
  kernel = [c for c in cases if c.kind == "kernel"]
  assert kernel and all(graph_level(c.root) == "kernel" for c in kernel)


def test_cli_lower_starts_a_tensor_graph_with_a_kernel_call_at_the_first_pass(tmp_path, capsys):
  from tinyspec.cli import main
  _, tensor = _cases()
  f = tmp_path / "g.py"
  f.write_text(render_module(tensor.root))
  assert main(["lower", str(f)]) == 0, capsys.readouterr().out
  out = capsys.readouterr().out
  assert "callify:" in out and "rangeify:" in out and "render:" in out

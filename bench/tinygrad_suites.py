"""The table of tinygrad's own test suites under the spec, from the JSON files of `pytest --tinyspec=check --tinyspec-json`.

    python bench/tinygrad_suites.py unit=unit.json null=null.json backend=backend.json

Per suite: tests run, tests that made graphs, graphs, nodes, % translated, the untranslated ops (nodes, all stages) and
the violations by rule id and by class. The classes are docs/tinygrad.md's ("tinygrad's own test suites"); a violation
is put in one by its rule id, its sentence and the test it came from, and one no class claims is printed as
UNCLASSIFIED. The commands that made the JSON files are in bench/tinygrad_suites.txt.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter

# tests whose kernels are written by hand in tinygrad's UOp kernel language (Tensor.custom_kernel, UOp programs)
CUSTOM = ("test_custom_kernel.py", "test_uops.py", "custom_kernel", "custom_function", "simple_precompile")
STORAGE_VIEWS = ("test_disk_tensor.py", "test_shm_tensor.py", "on_disk", "test_assign_bitcast")


def violation_class(test: str, v: dict) -> str:
  """The class of one violation (docs/tinygrad.md names and explains each)."""
  rule, msg = v["rule"], v["message"]
  # a TinyJit replay's output keeps the capture call's binding in its shape; slicing it to the replay's is past the view
  if rule == "tensor.movement_arg" and "test_symbolic_jit" in test: return "tinygrad defect: TinyJit replays keep the capture's binding"
  # a shrink by a variable whose range passes the buffer's end: tinygrad reads past it (its own test's TODO says so)
  if "test_shrink_beyond_buffer_variable" in test and rule in ("tensor.movement_arg", "kernel.index_bounds"):
    return "tinygrad defect: a shrink by a variable past the buffer reads out of bounds"
  # a proof z3 could not finish within its time (setitem's advanced indexing: 30 s of index arithmetic per store)
  if rule.endswith("_timeout") or "could not prove within" in msg: return "stricter: not proven within z3's time"
  # tinygrad rejects two values of one variable in one schedule (test_variable_slice_ordering asserts it raises)
  if rule == "bind.one_value": return "illegal on purpose (tinygrad raises too)"
  # a precompiled call writing its output into a view of storage (a symbolic-size output in a larger buffer, a KV cache's
  # window): a call's PARAM is a whole storage arg
  if rule == "tensor.precompiled_output" and "view" in msg: return "stricter: a call writes whole storage"
  # bounds that hold only under a relation between variables (start_pos + T <= max_context) their ranges do not state
  if rule == "kernel.index_bounds" and any(not re.fullmatch(r"r\d+", n) for n in re.findall(r"(\w+)=-?\d+", msg.split(" gives ")[0])):
    return "stricter: bounds over every value of a variable's range"
  if rule in ("alu.dtype_class", "alu.dtype_match") and ("float8" in msg or "RECIP" in msg): return "stricter: dtypes"
  if rule == "kernel.local_read_after_write": return "the test's kernel reads unwritten registers"
  if rule.endswith("one_device") and "device_mismatch" in test: return "illegal on purpose (tinygrad raises too)"
  if any(c in test for c in CUSTOM): return "stricter: hand-written kernels"
  if "BITCAST" in msg or any(c in test for c in STORAGE_VIEWS): return "stricter: storage reinterpreted"
  if rule == "call.param_outside": return "tinyspec bug (open): precompiled PARAM slots"
  if rule == "tensor.after_deps": return "stricter: AFTER dependencies"
  if rule == "tensor.multi_shards" or "zero_size" in test: return "stricter: other"
  return "UNCLASSIFIED"


def table(suites: dict[str, dict]) -> str:
  lines = ["| suite | tests run | tests with graphs | graphs | nodes | % translated | violations by class |", "|---|---|---|---|---|---|---|"]
  notes = []
  for name, d in suites.items():
    s = d["session"]
    by_class = Counter(violation_class(t, v) for t, rec in d["tests"].items() for v in rec["violations"])
    ops = Counter()
    for what, n in s["untranslated"].items(): ops[what.split(" at ")[0]] += n
    classes = "; ".join(f"{c} {n}" for c, n in by_class.most_common()) or "none"
    lines.append(f"| {name} | {s['tests']} | {s['tests_with_graphs']} | {sum(s['graphs'].values()):,} | {sum(s['nodes'].values()):,} | "
                 f"{s['percent_translated']:.2f} | {classes} |")
    notes.append(f"{name}: untranslated nodes by op: " + ", ".join(f"{op} {n}" for op, n in ops.most_common()))
    notes.append(f"{name}: violations by rule: " + ", ".join(f"{r} {n}" for r, n in s["violations_by_rule"].items()))
    notes.append(f"{name}: tinyspec errors: {s['tinyspec_errors'] or 'none'}; seconds (plugin's clock): {s['seconds']}")
  return "\n".join(lines + [""] + notes)


def main(argv: list[str]) -> int:
  if not argv or any("=" not in a for a in argv):
    print(__doc__, file=sys.stderr)
    return 2
  suites = {}
  for a in argv:
    name, path = a.split("=", 1)
    with open(path, encoding="utf-8") as f: suites[name] = json.load(f)
  print(table(suites))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))

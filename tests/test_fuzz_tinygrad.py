"""`tinyspec fuzz --target tinygrad`: the program generator, the exact-integer overflow screen, every oracle firing on a
known tinygrad defect or a deliberately broken translation (and not on a correct program), the reducer, corpus entries
that carry the program and replay, and a short campaign end to end."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason="the tinygrad extra is not installed (pip install 'tinyspec[tinygrad]')")

from fuzz.check.exact_ints import overflows_signed, run_exact  # noqa: E402
from fuzz.check.tinygrad_oracles import TinygradChecker, tinygrad_outputs, tinyspec_outputs  # noqa: E402
from fuzz.corpus.store import entry_name, load_entry  # noqa: E402
from fuzz.engine.campaign import run_campaign  # noqa: E402
from fuzz.engine.config import CampaignConfig  # noqa: E402
from fuzz.engine.targets import replay  # noqa: E402
from fuzz.engine.tinygrad_target import TinygradSession, TinygradTarget  # noqa: E402
from fuzz.generate.tinygrad_programs import Input, Line, Program, check_program, program_for, source  # noqa: E402
from fuzz.reduce.tinygrad_program import reduce_program  # noqa: E402
from tinyspec.spec import Stage, check  # noqa: E402
from tinyspec.uop import UOp  # noqa: E402

pytestmark = pytest.mark.tinygrad
ROOT = Path(__file__).resolve().parent.parent

# tinygrad 0.14 compares a uint8 tensor with the literal -1 as if the literal were not converted to uint8: 255 != -1
# (its weak-literal policy: a literal keeps its own value); tinyspec converts it: 255 != 255
NE_MINUS_ONE = Program((Input("x0", "uint8", (2,), (0, 255)),), (Line(("v0",), "ne", ("x0", -1)),), ("v0",))
# tinygrad 0.14's kernels divide a uint8 by the literal -2 under neither reading: 5 // -2 gives 255 (tinyspec's reading,
# 5 // 254, gives 0; tinygrad's own, -3 wrapped, 253)
DIV_MINUS_TWO = Program((Input("x0", "uint8", (3,), (1, 5, 255)),), (Line(("v0",), "idiv", ("x0", -2)),), ("v0",))
def _raw(name: str):
  from fuzz.generate.tinygrad_programs import Raw
  return Raw(name)


def shift_cast() -> Program:
  """tinygrad's C code leaves a uint8 sum in int (C's promotion) when it is cast to float: 128 + 128 gives 256, not 0."""
  return Program((Input("x0", "uint8", (2,), (1, 3)),), (Line(("v0",), "shl", ("x0", 7)), Line(("v1",), "add", ("v0", "v0")),
                                                         Line(("v2",), "cast", ("v1", _raw("float32")))), ("v2",))


def sigs(findings) -> set[tuple[str, str, str]]: return {f.signature for f in findings}


# ---- the generator ----
def test_programs_are_deterministic_valid_and_run_in_both_apis():
  progs = [program_for(3, i) for i in range(40)]
  assert [source(p) for p in progs] == [source(program_for(3, i)) for i in range(40)]
  assert len({source(p) for p in progs}) == 40
  for p in progs:
    env = check_program(p)
    assert env is not None, source(p)
    ts = tinyspec_outputs(source(p))
    tg = tinygrad_outputs(source(p), "PYTHON")
    # both APIs give every output the shape the generator inferred for it
    assert [a.shape for a in ts] == [b.shape for b in tg] == [env[o][1] for o in p.outputs], source(p)


def test_generator_draws_the_promised_forms():
  ops = {op for i in range(400) for op in program_for(0, i).ops()}
  assert {"call", "matmul", "where", "cast", "sum", "idiv", "mod", "pad", "shrink", "expand", "permute", "flip"} <= ops
  srcs = "".join(source(program_for(0, i)) for i in range(400))
  assert "// -1" in srcs and "@function" in srcs and "np.uint64" in srcs and "18446744073709551615" in srcs
  assert ".cast(dtypes.float16)" in srcs and ".cast(dtypes.bfloat16)" in srcs  # float32 through the small floats


def test_generator_draws_an_integer_tensor_to_an_integer_tensors_power():
  # `x ** y` as ordinary code writes it: both operands tensors of one int dtype (and int ** a literal >= 0); never a float
  # power (transcendental) nor a negative literal exponent (tinygrad refuses it)
  pows = [(p, ln) for i in range(400) for p in [program_for(0, i)] for ln in p.lines + tuple(b for x in p.lines if x.body for b in x.body.lines)
          if ln.op == "pow"]
  envs = {id(p): check_program(p) for p, _ in pows}
  tensor_exps = [ln for p, ln in pows if isinstance(ln.args[1], str)]
  literal_exps = [ln.args[1] for p, ln in pows if not isinstance(ln.args[1], str)]
  assert len(tensor_exps) >= 10 and len(literal_exps) >= 10, (len(tensor_exps), len(literal_exps))
  assert all(c >= 0 and isinstance(c, int) for c in literal_exps)
  top = [(envs[id(p)], ln) for p, ln in pows if ln in p.lines]
  assert top and all(env[ln.args[0]][0].startswith(("int", "uint")) for env, ln in top)
  assert all(env[ln.args[1]][0] == env[ln.args[0]][0] for env, ln in top if isinstance(ln.args[1], str))
  src = source(Program((Input("x0", "int32", (3,), (5, 7, 3)), Input("x1", "int32", (3,), (2, 3, 4))), (Line(("v0",), "pow", ("x0", "x1")),),
                       ("v0",)))
  assert "  v0 = x0 ** x1\n" in src
  assert check_program(Program((Input("x0", "float32", (1,), (2.0,)),), (Line(("v0",), "pow", ("x0", "x0")),), ("v0",))) is None
  assert check_program(Program((Input("x0", "int8", (1,), (2,)),), (Line(("v0",), "pow", ("x0", -1)),), ("v0",))) is None


# ---- the exact-integer screen ----
@pytest.mark.parametrize("body, overflows", [
  ("Tensor(np.array([100], dtype=np.int8)) + 100", True),          # 200 does not fit int8
  ("Tensor(np.array([100], dtype=np.int8)) + 27", False),          # 127 does
  ("Tensor(np.array([200], dtype=np.uint8)) + 100", False),        # unsigned wraps, as defined
  ("-Tensor(np.array([-128], dtype=np.int8))", True),
  ("Tensor(np.array([1], dtype=np.int16)) << 15", True),
  ("Tensor(np.array([7], dtype=np.uint32)) // -1", False),         # the literal is converted to uint32, no overflow
  ("Tensor(np.array([70000], dtype=np.int32)).cast(dtypes.int16)", True),
  ("Tensor(np.array([2], dtype=np.int8)) ** Tensor(np.array([7], dtype=np.int8))", True),   # 128 does not fit int8
  ("Tensor(np.array([-2], dtype=np.int8)) ** Tensor(np.array([7], dtype=np.int8))", False),  # -128 does
  ("Tensor(np.array([2], dtype=np.uint8)) ** 8", False),
  ("Tensor(np.array([3], dtype=np.int64)) ** Tensor(np.array([2 ** 62], dtype=np.int64))", True),  # never formed, still seen
  ("Tensor(np.array([5, -1], dtype=np.int16)) ** Tensor(np.array([-2, -3], dtype=np.int16))", False),
])
def test_overflows_signed(body: str, overflows: bool):
  assert overflows_signed(f"def program():\n  return {body},\n") is overflows


# ---- the oracles ----
def test_a_correct_program_has_no_finding():
  p = Program((Input("x0", "int32", (2, 3), (1, -2, 3, 4, 5, -6)),), (Line(("v0",), "add", ("x0", 7)), Line(("v1",), "sum", ("v0", 1))),
              ("v1",))
  assert TinygradChecker().check(source(p)) == []


def test_a_tinygrad_defect_is_blamed_on_the_link_that_changes_the_meaning():
  fs = TinygradChecker().check(source(DIV_MINUS_TWO))
  # every stage up to the kernel ASTs means 5 // 254 = 0; the linearized programs already give 255
  assert sigs(fs) == {("parity", "tinygrad-codegen", "uint8")}, [f.describe() for f in fs]
  assert "kernel ASTs against programs" in fs[0].message and "tinyspec, tensor, callified, kernel ASTs agree" in fs[0].message


def test_a_weak_literal_difference_is_a_policy_not_a_bug():
  fs = TinygradChecker().check(source(NE_MINUS_ONE))
  # the tensor and callified graphs, translated, mean 255 != 255 (False); tinygrad's kernels keep the literal's value
  assert sigs(fs) == {("parity-literal-policy", "tinygrad-schedule", "weak-literal")}, [f.describe() for f in fs]
  assert tinyspec_outputs(source(NE_MINUS_ONE))[0].tolist() == [True, False]
  assert run_exact(source(NE_MINUS_ONE), exact_literals=True).outputs[0].tolist() == [True, True]


@pytest.mark.parametrize("base, exp, dtype, want", [
  ([5, 7, 3, 0], [2, 3, 4, 0], "int32", [25, 343, 81, 1]),
  ([-1, -1, 2, 1, 0], [-3, -2, -1, -7, -1], "int8", [-1, 1, 0, 1, 0]),   # a negative exponent: the real power truncated
  ([3], [2 ** 63], "uint64", (np.array([3], np.uint64) ** np.array([2 ** 63], np.uint64)).tolist()),  # wrapped as numpy's power wraps
  ([2, 3], [8, 5], "uint8", [0, 243]),
])
def test_exact_integer_powers(base, exp, dtype, want):
  src = (f"def program():\n  x0 = Tensor(np.array({base!r}, dtype=np.{dtype}))\n  x1 = Tensor(np.array({exp!r}, dtype=np.{dtype}))\n"
         "  v0 = x0 ** x1\n  return v0,\n")
  assert run_exact(src).outputs[0].tolist() == want


def test_an_integer_tensor_to_an_integer_tensors_power_is_a_spec_finding():
  # tinygrad 0.14 computes it through exp2 and log2 in float32 and stores the float into the int buffer: 5 ** 2 is 24
  p = Program((Input("x0", "int32", (3,), (5, 7, 3)), Input("x1", "int32", (3,), (2, 3, 4))), (Line(("v0",), "pow", ("x0", "x1")),), ("v0",))
  chk = TinygradChecker()
  assert ("spec", "tinygrad-program", "kernel.store_dtype") in sigs(chk.check(source(p)))
  assert chk.counts["rejected by tinyspec's frontend"] == 1  # tinyspec's frontend refuses an integer tensor exponent


def test_exact_runs_agree_with_tinyspec_on_random_programs():
  # the exact-integer model of a program (tinyspec's reading of its literals) is an independent computation of what
  # tinyspec's frontend and evaluator give: they agree wherever no signed int overflows
  compared = 0
  for i in range(60):
    src = source(program_for(5, i))
    run = run_exact(src)
    if run.overflowed: continue
    try: ts = tinyspec_outputs(src)
    except TypeError as e:  # tinyspec's frontend refuses an integer tensor to an integer tensor's power
      assert "an integer power of a tensor exponent" in str(e), src
      continue
    for a, b in zip(run.outputs, ts):
      if a.dtype.kind in "biu":
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), src
        compared += 1
  assert compared >= 20


def test_cpu_code_that_differs_from_its_program_is_blamed_on_render_once():
  fs = TinygradChecker().check(source(shift_cast()))
  # tinyspec's evaluation of tinygrad's own linearized program wraps in uint8 as PYTHON does; the compiled C does not
  assert sigs(fs) == {("parity", "tinygrad-render", "float32")}, [f.describe() for f in fs]
  assert tinygrad_outputs(source(shift_cast()), "PYTHON")[0].tolist() == [0.0, 0.0]   # (1 << 7) + (1 << 7) wraps in uint8


def half_add() -> Program:
  """tinygrad's CPU backend renders half as clang's __fp16 and adds two of them in float without rounding back to half:
  1024 + 0.5 in float16 is 1024 (a tie, to even), tinygrad gives 1024.5."""
  return Program((Input("x0", "float32", (1,), (1024.0,)), Input("x1", "float32", (1,), (0.5,))),
                 (Line(("v0",), "cast", ("x0", _raw("float16"))), Line(("v1",), "cast", ("x1", _raw("float16"))),
                  Line(("v2",), "add", ("v0", "v1")), Line(("v3",), "cast", ("v2", _raw("float32")))), ("v3",))


# tinygrad's CPU backend has no fp8: a cast to float8_e4m3 inside a kernel rounds only to half (0.1 stays 0.099975586,
# where float8_e4m3fn holds 0.1015625). The generator draws no fp8; a stored program may name it (STORED_ONLY_DTYPES)
FP8_CAST = """\
def program():
  x0 = Tensor(np.array([0.1], dtype=np.float32).reshape((1,)))
  v0 = x0.cast(dtypes.float8_e4m3fn)
  v1 = v0.cast(dtypes.float32)
  return (v1,)
"""


def test_a_parity_signature_names_the_small_float_the_difference_arose_in():
  from fuzz.check.tinygrad_oracles import arose_in, parity_rule
  from tinyspec.dtype import dtypes
  # the output is float32, but the value passed through float16: keyed on float32 it would share the corpus entry of the
  # uint8-shift-cast float32 bug (test_cpu_code_that_differs_from_its_program_is_blamed_on_render_once) and be hidden
  fs = TinygradChecker().check(source(half_add()))
  assert sigs(fs) == {("parity", "tinygrad-render", "float16")}, [f.describe() for f in fs]
  fs = TinygradChecker().check(FP8_CAST)
  assert sigs(fs) == {("parity", "tinygrad-codegen", "float8_e4m3fn")}, [f.describe() for f in fs]
  # the rule: the narrowest small float on the path (fewest bits, then fewest significand bits), else the output's dtype
  assert arose_in("float32", {dtypes.float32, dtypes.uint8}) == "float32"
  assert arose_in("bool", {dtypes.float16, dtypes.float32}) == "float16"
  assert arose_in("float32", {dtypes.float16, dtypes.bfloat16}) == "bfloat16"
  assert arose_in("float32", {dtypes.bfloat16, dtypes.float8_e4m3fn, dtypes.float8_e5m2}) == "float8_e5m2"
  # a policy's signature names the policy, whatever the path
  assert parity_rule("parity-signed-overflow", np.zeros(1, np.float32), {dtypes.float16}) == "undefined"


def test_stored_programs_may_name_every_dtype_the_generator_writes():
  from fuzz.generate.tinygrad_programs import check_program_source
  check_program_source(source(half_add()))   # the generator's own float16 casts (refused before: `dtypes.float16`)
  check_program_source(FP8_CAST)
  assert tinygrad_outputs(FP8_CAST, "CPU")[0].tolist() == [np.float32(0.099975586)]


def test_python_device_against_the_shared_stages():
  from fuzz.check.tinygrad_oracles import Point, TinygradChecker as C
  w = np.array([1, 2], dtype=np.int32)
  chain = [Point("tinyspec", w), Point("tensor", w), Point("callified", w), Point("kernel ASTs", w), Point("programs", w),
           Point("device", w, "tinygrad on CPU")]
  real = lambda i, got: "parity"
  assert C._device_finding([chain], [w.copy()], real, "PYTHON") is None
  f = C._device_finding([chain], [np.array([1, 3], dtype=np.int32)], real, "PYTHON")
  assert f is not None and f.signature == ("parity", "tinygrad-PYTHON", "int32") and "kernel ASTs" in f.message
  # PYTHON agreeing with a CPU that differs from the shared stages is the CPU's finding, not a second one
  chain[-1] = Point("device", np.array([1, 3], dtype=np.int32), "tinygrad on CPU")
  assert C._device_finding([chain], [np.array([1, 3], dtype=np.int32)], real, "PYTHON") is None


def test_a_gap_in_the_chain_widens_the_blamed_link():
  from fuzz.check.tinygrad_oracles import Point, first_break, link_name
  a, b = np.array([0], dtype=np.uint8), np.array([1], dtype=np.uint8)
  chain = [Point("tinyspec", a), Point("tensor", a), Point("callified", None), Point("kernel ASTs", b), Point("programs", b),
           Point("device", b)]
  lo, hi, _ = first_break(chain)
  assert (lo, hi) == (1, 3) and link_name(chain, lo, hi) == "callify+schedule"


def test_signed_overflow_is_reported_apart():
  # (-128) * (-128) overflows int8: tinygrad's C code compares the product in int (16384 < 127 is false), PYTHON wraps it (0)
  p = Program((Input("x0", "int8", (2,), (0, -128)),), (Line(("v0",), "mul", ("x0", "x0")), Line(("v1",), "lt", ("v0", 127))), ("v1",))
  fs = TinygradChecker().check(source(p))
  assert ("parity-signed-overflow", "tinygrad-render", "undefined") in sigs(fs), [f.describe() for f in fs]
  assert all(f.oracle != "parity" for f in fs)


def test_an_uninitialized_accumulator_is_a_spec_finding():
  # tinygrad 0.14 folds x // -1 on zeros of uint32 to the max's identity and drops the accumulator's initial store: its
  # C code reads an uninitialized register (the numbers it gives vary from run to run); the spec says so every time
  p = Program((Input("x0", "uint32", (2,), (0, 0)),), (Line(("v0",), "idiv", ("x0", -1)), Line(("v1",), "max", ("v0", 0))), ("v1",))
  assert ("spec", "tinygrad-program", "kernel.local_read_after_write") in sigs(TinygradChecker().check(source(p)))


def test_spec_oracle_fires_on_a_broken_translation(monkeypatch):
  import tinyspec.bridge.tinygrad.check as chk
  from tinyspec.dtype import dtypes
  orig = chk.translate
  def broken(cap, strict=True):
    t = orig(cap, strict)
    # every translated kernel gets a stray value entry in its SINK: a kernel SINK holds only effects
    t.graphs["kernel"] = [(a, None if g is None else g.replace(src=(*g.src, UOp.const(dtypes.int32, 1)))) for a, g in t.graphs["kernel"]]
    return t
  monkeypatch.setattr(chk, "translate", broken)
  p = Program((Input("x0", "float32", (3,), (1.0, 2.0, 3.0)),), (Line(("v0",), "mul", ("x0", 2.0)),), ("v0",))
  fs = TinygradChecker().check(source(p))
  assert any(f.signature[:2] == ("spec", "tinygrad-kernel") for f in fs), [f.describe() for f in fs]


def test_a_translation_rule_that_raises_is_a_finding_of_the_bridge(monkeypatch):
  # the check counts a node whose rule raised as untranslatable and goes on (another tinygrad's form, say); on the
  # generator's own programs that is the bridge's bug, and the fuzzer says so
  import dataclasses

  from tinyspec.bridge.tinygrad.table import RULES
  def broken(tr, u, want): raise TypeError("a rule broken on purpose")
  monkeypatch.setitem(RULES, "MUL", dataclasses.replace(RULES["MUL"], fn=broken))
  p = Program((Input("x0", "float32", (3,), (1.0, 2.0, 3.0)),), (Line(("v0",), "mul", ("x0", 2.0)),), ("v0",))
  fs = [f for f in TinygradChecker().check(source(p)) if f.signature[0] == "error"]
  assert [f.signature for f in fs][:1] == [("error", "tinyspec-translate-tensor", "TypeError@MUL")], [f.describe() for f in fs]
  assert "the bridge's rule for MUL at tensor raised TypeError: a rule broken on purpose" in fs[0].message


def test_frontend_oracle_fires_on_a_broken_frontend(monkeypatch):
  from tinyspec.frontend import Tensor
  monkeypatch.setattr(Tensor, "__add__", lambda self, x: self._arith(__import__("tinyspec.uop").uop.Ops.SUB, x, False, "-"))
  p = Program((Input("x0", "int32", (2,), (1, 2)),), (Line(("v0",), "add", ("x0", 5)),), ("v0",))
  assert sigs(TinygradChecker().check(source(p))) == {("parity", "tinygrad-frontend", "int32")}


def test_error_oracle_names_the_device():
  # tinygrad 0.14's PYTHON device fails on minimum of a uint32 tensor of 4 elements (run as a vector of 4)
  p = Program((Input("x0", "uint32", (4,), (0, 5, 0, 1)),), (Line(("v0",), "minimum", ("x0", 0)),), ("v0",))
  assert ("error", "tinygrad-PYTHON", "TypeError") in sigs(TinygradChecker().check(source(p)))


# ---- the reducer ----
def test_reducer_keeps_the_signature_and_shrinks():
  big = Program((Input("x0", "uint8", (2, 3), (0, 252, 7, 9, 255, 5)), Input("x1", "float32", (3,), (1.0, 2.0, 3.0))),
                (Line(("v0",), "mul", ("x1", 2.0)), Line(("v1",), "add", ("x0", 3)), Line(("v2",), "idiv", ("v1", -2)),
                 Line(("v3",), "flip", ("v2", 0))), ("v3", "v0"))
  chk = TinygradChecker()
  sig = ("parity", "tinygrad-codegen", "uint8")
  assert sig in sigs(chk.check(source(big))), [f.describe() for f in chk.check(source(big))]
  small = reduce_program(big, lambda p: sig in sigs(chk.check(source(p))), max_seconds=60)
  assert sig in sigs(chk.check(source(small)))
  assert small.size() < big.size() and len(small.outputs) == 1 and len(small.inputs) == 1


# ---- corpus entries ----
def test_entry_carries_program_and_translated_graph_and_replays(tmp_path):
  session = TinygradSession(CampaignConfig(corpus=str(tmp_path)))
  f = next(f for f in session.checker.check(source(DIV_MINUS_TWO)) if f.stage == "tinygrad-codegen")
  text, _ = session.entry(DIV_MINUS_TWO, f, f.signature)
  path = tmp_path / entry_name(f.signature)
  path.write_text(text)
  entry = load_entry(path)
  assert entry.case.kind == "tinygrad" and entry.meta["PROGRAM"] == source(DIV_MINUS_TWO)
  # the tinygrad it was found on, as compat names it (this module runs on 0.14.0, and on the snapshot by hand)
  import tinygrad
  from tinyspec.bridge.tinygrad.compat import KNOWN
  assert entry.meta["FOUND_ON"] in KNOWN and (entry.meta["FOUND_ON"] == "a9069c17") == hasattr(tinygrad.uop.ops.Ops, "WAIT")
  assert check(entry.case.root, Stage.TENSOR) == []          # tinygrad's tensor graph, translated, is legal
  assert sorted(np.concatenate([a.reshape(-1) for a in entry.case.inputs.values()]).tolist()) == [1, 5, 255]
  fails, findings = replay(entry)
  assert fails and f.signature in sigs(findings)
  out = subprocess.run([sys.executable, "-m", "tinyspec.cli", "repro", str(path)], capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 1 and "tinygrad-codegen" in out.stdout + out.stderr


# ---- the campaign ----
def test_campaign_finds_reduces_and_stores(tmp_path):
  # until the first parity finding (case 52 at seed 0 with tinygrad 0.14.0), within 70 cases
  cfg = CampaignConfig(seconds=300, seed=0, workers=0, corpus=str(tmp_path), max_cases=70, reduce_seconds=3, target="tinygrad",
                       stop_when=lambda r: r.signature[0] == "parity")
  s = run_campaign(cfg)
  assert s.target == "tinygrad" and 0 < s.cases <= 70 and s.counts["nodes"] > 0
  assert s.findings, s.text()
  for r in s.findings:
    e = load_entry(r.path)
    assert e.signature == r.signature and "def program():" in e.meta["PROGRAM"]
  assert any(r.signature[0] == "parity" for r in s.findings)
  assert "generate/call" in s.rules_fired and "tinygrad/kernel" in s.rules_fired


def test_cli_rejects_reference_options():
  out = subprocess.run([sys.executable, "-m", "tinyspec.cli", "fuzz", "--target", "tinygrad", "--backends", "cpu", "--seconds", "1"],
                       capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 2 and "not of tinygrad" in out.stderr


def test_target_is_registered():
  assert TinygradTarget().kinds == ("tinygrad",)


def test_a_shift_past_the_width_is_a_spec_finding_and_explains_the_numbers():
  # tinygrad 0.14 rewrites x.cast(int64) >> 47 into (x >> 47).cast(int64) on an int32 x: a shift past the width (undefined
  # in C; the compiled code gives 0 or -65536, the answer is -1). The kernel stage breaks kernel.shift_count, and the
  # differing numbers after it are its consequence, not a second finding
  p = Program((Input("x0", "int32", (1,), (-2147483648,)),), (Line(("v0",), "cast", ("x0", _raw("int64"))), Line(("v1",), "shr", ("v0", 47))),
              ("v1",))
  chk = TinygradChecker()
  fs = chk.check(source(p))
  # reported once, at the first stage that shows it: the kernel graph, whose kernel bodies are checked at KERNEL
  assert [f.signature for f in fs if f.oracle == "spec"] == [("spec", "tinygrad-kernel_graph", "kernel.shift_count")], [f.describe() for f in fs]
  assert not any(f.oracle == "parity" for f in fs) and chk.counts["parity differences after a spec violation"] >= 1


def test_downstream_of_a_violation():
  from fuzz.check.tinygrad_oracles import STAGE_ORDER, downstream
  k = STAGE_ORDER.index("kernel")
  assert downstream("schedule", k) and downstream("render", k) and downstream("callify+schedule", k)
  assert not downstream("callify", k) and not downstream("frontend", k)
  assert not downstream("render", None)


# ---- under faults: tinygrad runs its kernels in the process that realizes ----
class _DyingChecker(TinygradChecker):
  """tinygrad's checker, except that the run on the CPU device dies of a real SIGSEGV (a read of address 0)."""
  def check(self, src: str):
    import ctypes
    self.at("tinygrad-CPU")
    ctypes.string_at(0)


class _HangingChecker(TinygradChecker):
  """tinygrad's checker, except that the run on the CPU device never returns."""
  def check(self, src: str):
    import time
    self.at("tinygrad-CPU")
    time.sleep(3600)


class _Faulty(TinygradTarget):
  def __init__(self, checker: type) -> None: self.checker = checker

  def session(self, cfg):
    s = super().session(cfg)
    s.make_checker = self.checker
    return s


@pytest.mark.parametrize("checker, signature", [(_DyingChecker, ("crash", "tinygrad-CPU", "signal11")),
                                                (_HangingChecker, ("hang", "tinygrad-CPU", "timeout"))], ids=["segfault", "hang"])
def test_with_workers_0_a_case_that_kills_or_hangs_its_process_is_a_finding(tmp_path, checker, signature):
  # --workers 0: each case is checked in a child of the campaign, so the campaign survives every case and keeps its budget
  import time
  cfg = CampaignConfig(seconds=120, seed=0, workers=0, corpus=str(tmp_path), max_cases=3, case_timeout=1.5, reduce_seconds=0,
                       target=_Faulty(checker))
  t = time.monotonic()
  s = run_campaign(cfg)
  assert s.cases == 3 and [f.signature for f in s.findings] == [signature]
  assert time.monotonic() - t <= cfg.seconds + 10
  e = load_entry(s.findings[0].path)
  assert e.signature == signature and "def program():" in e.meta["PROGRAM"]


@pytest.mark.parametrize("workers, want", [("2", 2), ("0", 1)])
def test_sigkill_of_a_tinygrad_campaign_leaves_no_process_and_no_broken_entry(tmp_path, workers, want):
  # with 2 workers, the workers; with --workers 0, the child checking the campaign's cases
  import os
  import signal

  from test_campaign_faults import Lines, _alive, _descendants, _reap, _wait_for
  p = subprocess.Popen([sys.executable, "-m", "tinyspec.cli", "fuzz", "--target", "tinygrad", "--seconds", "600", "--workers", workers,
                        "--corpus", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       start_new_session=True)
  lines = Lines(p)
  kids: set[int] = set()
  try:
    kids = _wait_for(lambda: (d := {x for x in _descendants(p.pid) if _alive(x)}) and len(d) >= want and d, 300, f"{want} children")
    # the children are checking cases, in tinygrad or in tinyspec: killed as the first finding is reported (its entry
    # just written, the next cases being checked), or after 15 s of checking when none comes by then
    lines.until(lambda ln: ln.startswith("finding: "), 15)
    kids |= {x for x in _descendants(p.pid) if _alive(x)}
    os.kill(p.pid, signal.SIGKILL)
    p.wait(60)
    out = lines.rest()
    _wait_for(lambda: not [k for k in kids if _alive(k)] or None, 10, "the children to die")
  finally:
    _reap(p, kids)
  from fuzz.corpus.store import entries
  reported = [ln.split(" -> ", 1)[1].strip() for ln in out if ln.startswith("finding: ")]
  for path in [*reported, *map(str, entries(tmp_path))]:
    assert load_entry(path).case.kind == "tinygrad"


def _segfault_graph(src: str):
  import ctypes
  ctypes.string_at(0)


def _hang_graph(src: str):
  import time
  time.sleep(3600)


def test_an_entrys_graph_is_made_in_a_child_that_may_die():
  # a crash or hang finding's program is run again to make its entry's graph: in a child, so it cannot take the
  # campaign with it; then the entry holds tinyspec's frontend graph of the program
  from fuzz.engine.tinygrad_target import translated_graph_apart
  src = source(DIV_MINUS_TWO)
  root, inputs, what = translated_graph_apart(src, 120)
  assert what == "tinygrad's tensor graph, translated" and check(root, Stage.TENSOR) == [] and inputs
  root, inputs, what = translated_graph_apart(src, 120, _segfault_graph)
  assert what == "tinyspec's frontend graph of the program (tinygrad's run of it ended (signal11))" and check(root, Stage.TENSOR) == []
  root, _, what = translated_graph_apart(src, 2, _hang_graph)
  assert what.endswith("(tinygrad's run of it did not finish)") and root.op.name == "SINK"

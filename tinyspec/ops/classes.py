"""Which dtypes each elementwise op accepts: the one table the spec, the frontend, the evaluator and the renderers ask.

A dtype class is a set of dtype kinds (DType.kind): b bool, i signed, u unsigned, x index, f float. An op accepts
a dtype when the kind of its operands' dtype is in its class. WHERE's class is that of its two value operands (its
condition is always bool); CAST converts between any two value dtypes; BITCAST reinterprets the bits of a
fixed-width int or float of the same item size.

The fp8 dtypes (DType.storage_only) are storage: the ops on them are STORAGE_OPS only (a value is converted,
reinterpreted or selected, never computed on); a program casts them to a wider float first, as fp8 hardware does.
"""
from __future__ import annotations

from tinyspec.dtype import DType
from tinyspec.opcodes import Ops

BOOL, SIGNED, UNSIGNED, INDEX, FLOAT = "b", "i", "u", "x", "f"
INTS = frozenset({SIGNED, UNSIGNED, INDEX})
NUMBERS = INTS | {FLOAT}
VALUES = NUMBERS | {BOOL}

# the name of each class, as docs/spec.md and error messages say it
CLASS_NAMES: dict[frozenset, str] = {
  frozenset({FLOAT}): "floats", INTS: "integers", INTS | {BOOL}: "integers or bool", NUMBERS: "numbers (not bool)",
  VALUES: "every value dtype", frozenset({SIGNED, UNSIGNED, FLOAT}): "fixed-width ints and floats",
}

DTYPE_CLASS: dict[Ops, frozenset] = {
  **{op: frozenset({FLOAT}) for op in (Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.TRUNC, Ops.FDIV)},
  **{op: INTS for op in (Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR)},
  **{op: INTS | {BOOL} for op in (Ops.AND, Ops.OR, Ops.XOR)},
  **{op: NUMBERS for op in (Ops.NEG, Ops.SUB)},
  # MUL on bool is AND and ADD on bool is OR (C's (bool)(a * b) and (bool)(a + b); tinygrad's spec and emulator mean
  # the same: its losses multiply masks, its kernels add bools)
  **{op: VALUES for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.WHERE, Ops.CAST)},
  Ops.BITCAST: frozenset({SIGNED, UNSIGNED, FLOAT}),
}


# the only elementwise ops on the fp8 dtypes: WHERE selects them, CAST and BITCAST convert them
STORAGE_OPS = frozenset({Ops.CAST, Ops.BITCAST, Ops.WHERE})


# DEFINE_VAR (and BIND, which has its variable's dtype) is an integer scalar: index, or a fixed-width int
VAR_CLASS: frozenset = INTS


def var_accepts(dt: DType) -> bool:
  """Whether a variable (DEFINE_VAR, BIND) may have dtype dt."""
  return isinstance(dt, DType) and dt.kind in VAR_CLASS


def accepts(op: Ops, dt: DType) -> bool:
  """Whether elementwise op computes on operands of dtype dt (for CAST and BITCAST: converts from or to dt)."""
  cls = DTYPE_CLASS.get(op)
  return cls is not None and isinstance(dt, DType) and dt.kind in cls and (op in STORAGE_OPS or not dt.storage_only)


def reduce_accepts(dt: DType) -> bool:
  """Whether a REDUCE (ADD, MUL or MAX; on bool they combine as OR, AND, OR) may combine values of dtype dt: every
  value dtype but the fp8 dtypes, which are storage only."""
  return isinstance(dt, DType) and dt.kind in VALUES and not dt.storage_only


def class_name(op: Ops) -> str:
  """The dtype class of op in words, e.g. 'integers or bool'."""
  return CLASS_NAMES[DTYPE_CLASS[op]]


def dtype_error(op: Ops, dt: DType) -> str | None:
  """None when op accepts dt, else a sentence naming the op, the dtype and what the op takes."""
  if accepts(op, dt): return None
  name = getattr(dt, "name", repr(dt))
  if isinstance(dt, DType) and dt.storage_only and op in DTYPE_CLASS and dt.kind in DTYPE_CLASS[op]:
    return f"{op.name} on {name}: {name} is storage only ({storage_summary()}); cast it to a wider float first"
  return f"{op.name} on {name}: {op.name} takes {class_name(op)}"


def storage_summary() -> str:
  """The ops the fp8 dtypes admit, in words ('CAST BITCAST WHERE')."""
  return " ".join(op.name for op in sorted(STORAGE_OPS, key=lambda o: o.value))


def class_summary() -> str:
  """The ALU ops grouped by dtype class in one sentence, e.g. 'IDIV MOD SHL SHR on integers; ...' (docs/ir.md and the
  alu.dtype_class rule say it in these words)."""
  groups: dict[str, list[str]] = {}
  for op in sorted(DTYPE_CLASS, key=lambda o: o.value):
    if op not in (Ops.CAST, Ops.BITCAST, Ops.WHERE): groups.setdefault(class_name(op), []).append(op.name)
  return "; ".join(f"{' '.join(ops)} on {name}" for name, ops in groups.items()) + f"; on the fp8 dtypes only {storage_summary()}"

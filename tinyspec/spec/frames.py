"""The frame of an op's fused check: the node checks every stage makes of it, before any rule of a table (well-formedness, the
shape rule), written as clauses, and how the check reads the node's sources.

A frame names what the clauses of the op's rules read (spec/base.py Code, In, Same):
  u the node, a its arg, dt its dtype;
  s0, s1, s2 its sources, d0.. their dtypes, sh0.. their shapes, dv0.. their devices where the walk knows them (else
  devices.UNKNOWN); the check runs only once every source is clean with no BIND under it (verdict True), so a source is
  well formed: d_i is a known dtype, and a source whose dtype is a value dtype (by identity) is a value;
  dv the node's device once a clause has learnt it (devices.UNKNOWN before);
  for a frame of any number of sources (n None), its clauses and its rules' read each source in turn as s and d.
The clauses of a frame hold only where wellformed finds nothing and the shape rule (uop._shape_rules) derives `shape`:
node.op, node.src_type, node.dtype, node.dtype_void, node.src_count, node.arg and node.shape are then silent.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from operator import itemgetter

from tinyspec.dtype import dtypes
from tinyspec.spec.base import Clause, Code, In
from tinyspec.spec.shared import VALUE_IDS
from tinyspec.uop import AddrSpace, BufferArg, GroupOp, Ops, ParamArg


@dataclass(frozen=True)
class Frame:
  """n: the number of sources (None: any, read one by one); clauses: the node checks; shape: the node's shape once they hold
  (a tuple where n is a number: the walk reads it as the shape of a source, see fast.branch_source); device: the node's
  device as the frame knows it (dv0: its source's), None when only a clause may learn it; rank: where the walk tries it
  (the most frequent first)."""
  n: int | None
  clauses: tuple[Clause, ...]
  shape: str
  device: str | None
  rank: int


_VALUE = In("dt", VALUE_IDS)
_NO_ARG = Code.of("a is None")


def shaped(i: int) -> Code:
  """The clause that source i has a shape (the walk knows it of a source that is the node it accepted last)."""
  return Code.of(f"type(sh{i}) is tuple")


_SHAPED = shaped(0)

# CONST args: (python type, min, max) per dtype name; ints are range-checked, bool and float only type-checked (small float CONSTs
# have none: wf.arg checks their value is one of the dtype's)
_CONST_FORM = {d.name: (bool, None, None) if d.kind == "b" else (float, None, None) if d.kind == "f" else (int, d.min, d.max)
               for d in dtypes.all if d is not dtypes.void and not d.is_small_float}
_CONST_DTYPE = In("dt", frozenset(id(d) for d in dtypes.all if d.name in _CONST_FORM))
# the permutations of up to 6 axes, each with the getter that applies it to a shape (an itemgetter of one item returns the
# item, not a tuple: tuple stands in for ranks 0 and 1, where the permutation is the identity); more axes: the rules decide
_PERMS = {p: itemgetter(*p) if len(p) > 1 else tuple for r in range(7) for p in itertools.permutations(range(r))}

_RESHAPE = Code.of("""if type(a) is tuple:
  f_n = 1
  for f_y in a:
    if type(f_y) is not int or f_y < 0: break
    f_n *= f_y
  else:
    if f_n == prod(sh0):
      $""", prod=math.prod)
# (True, False) and (1.0, 0) are equal to (1, 0), and are no axis numbers
_PERMUTE = Code.of("""if type(a) is tuple and len(a) == len(sh0) and (f_get := PERMS.get(a)) is not None:
  for f_y in a:
    if type(f_y) is not int: break
  else:
    $""", PERMS=_PERMS)
_EXPAND = Code("""if type(a) is tuple:
  for f_y in a:
    if type(f_y) is not int or f_y < 0: break
  else:
    $""")
_FLIP = Code("""if type(a) is tuple and len(a) == len(sh0):
  for f_y in a:
    if type(f_y) is not bool: break
  else:
    $""")


def _window(pad: bool) -> Code:
  bad = "f_o + f_d > f_n" if pad else "f_n < 0 or f_o + f_n > f_d"
  return Code(f"""if type(a) is tuple and len(a) == len(sh0):
  f_out = []
  for f_p, f_d in zip(a, sh0):
    if type(f_p) is not tuple or len(f_p) != 2: break
    f_o, f_n = f_p
    if type(f_o) is not int or type(f_n) is not int or f_o < 0 or {bad}: break
    f_out.append(f_n)
  else:
    $""")


_REDUCE = Code.of("""if type(a) is tuple and len(a) == 2:
  f_op, f_n = a
  if f_op in REDUCE_OPS and type(f_n) is int and 0 <= f_n <= len(sh0):
    $""", REDUCE_OPS=(Ops.ADD, Ops.MAX, Ops.MUL))
# (read after _CONST_DTYPE: dt is one of its dtypes, by identity)
_CONST = Code.of("type(a) is (f_form := CONST_FORM[dt.name])[0] and (f_form[1] is None or f_form[1] <= a <= f_form[2])", CONST_FORM=_CONST_FORM)
_STORAGE = ("type(a.size) is int and a.size >= 0 and type(a.device) is str and type(a.addrspace) is AddrSpace and a.image is None")
_BUFFER = Code.of(f"type(a) is BufferArg and type(a.id) is int and {_STORAGE}", BufferArg=BufferArg, AddrSpace=AddrSpace)
_PARAM = Code.of(f"type(a) is ParamArg and type(a.slot) is int and a.slot >= 0 and {_STORAGE}", ParamArg=ParamArg, AddrSpace=AddrSpace)


def _frames() -> dict[Ops, Frame]:
  out: dict[Ops, Frame] = {}
  for op in GroupOp.Unary: out[op] = Frame(1, (_NO_ARG, _VALUE, _SHAPED), "sh0", "dv0", 3)
  for op in GroupOp.Binary: out[op] = Frame(2, (_NO_ARG, _VALUE, _SHAPED, Code.of("sh1 is sh0 or sh1 == sh0")), "sh0", None, 2)
  out[Ops.WHERE] = Frame(3, (_NO_ARG, _VALUE, shaped(1), Code.of("sh2 == sh1")), "sh1", None, 4)
  for op in GroupOp.Cast: out[op] = Frame(1, (_NO_ARG, _VALUE, _SHAPED), "sh0", "dv0", 5)
  views = {Ops.RESHAPE: (_RESHAPE, "a", 0), Ops.PERMUTE: (_PERMUTE, "f_get(sh0)", 1), Ops.EXPAND: (_EXPAND, "a + sh0", 6),
           Ops.FLIP: (_FLIP, "sh0", 6), Ops.PAD: (_window(True), "tuple(f_out)", 6), Ops.SHRINK: (_window(False), "tuple(f_out)", 6)}
  for op, (arg, shape, rank) in views.items(): out[op] = Frame(1, (_VALUE, _SHAPED, arg), shape, "dv0", rank)
  out[Ops.REDUCE] = Frame(1, (_VALUE, _SHAPED, _REDUCE), "sh0[f_n:]", "dv0", 7)
  for op in (Ops.CONTIGUOUS, Ops.DETACH): out[op] = Frame(1, (_NO_ARG, _VALUE, _SHAPED), "sh0", "dv0", 7)
  out[Ops.COPY] = Frame(1, (Code.of("type(a) is str"), _VALUE, _SHAPED), "sh0", "a", 7)  # a COPY is on its arg's device
  out[Ops.CONST] = Frame(0, (_CONST_DTYPE, _CONST), "()", None, 8)
  out[Ops.BUFFER] = Frame(0, (_VALUE, _BUFFER), "(a.size,)", None, 8)
  out[Ops.PARAM] = Frame(0, (_VALUE, _PARAM), "(a.size,)", None, 8)
  out[Ops.SINK] = Frame(None, (Code.of("dt is VOID and a is None", VOID=dtypes.void),), "None", None, 9)
  return out


FRAMES = _frames()

"""The IR's op codes: the Ops enum and GroupOp, the ops by group (what each op means is tinyspec.ops, a layer above)."""
from __future__ import annotations

from enum import Enum, auto


class Ops(Enum):
  # source
  CONST = auto(); PARAM = auto(); BUFFER = auto()  # noqa: E702
  # movement (views)
  RESHAPE = auto(); PERMUTE = auto(); EXPAND = auto(); PAD = auto(); SHRINK = auto(); FLIP = auto()  # noqa: E702
  # elementwise: unary
  NEG = auto(); RECIP = auto(); SQRT = auto(); EXP2 = auto(); LOG2 = auto(); SIN = auto(); TRUNC = auto()  # noqa: E702
  CAST = auto(); BITCAST = auto()  # noqa: E702
  # elementwise: binary
  ADD = auto(); SUB = auto(); MUL = auto(); MAX = auto(); IDIV = auto(); MOD = auto(); FDIV = auto()  # noqa: E702
  CMPLT = auto(); CMPNE = auto(); CMPEQ = auto(); AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()  # noqa: E702
  # elementwise: ternary
  WHERE = auto()
  # reduce
  REDUCE = auto()
  # calls
  CALL = auto(); TUPLE = auto(); GETTUPLE = auto()  # noqa: E702
  # effects and order
  STORE = auto(); AFTER = auto(); GROUP = auto(); SINK = auto(); CONTIGUOUS = auto(); DETACH = auto(); COPY = auto()  # noqa: E702
  # range form
  RANGE = auto(); END = auto(); INDEX = auto(); LOAD = auto(); SPECIAL = auto()  # noqa: E702
  # program
  LINEAR = auto(); PROGRAM = auto(); SOURCE = auto()  # noqa: E702
  # bounded variables: an integer scalar known only by its bounds, and its binding to a value at a call site
  DEFINE_VAR = auto(); BIND = auto()  # noqa: E702
  # an atomic read-modify-write store in a kernel body: ATOMIC(index, value[, gate]), arg the combining op (ADD, MAX)
  ATOMIC = auto()
  # multi-device tensors: MULTI(shard_0, ..., shard_n-1), arg the sharded axis (None: replicas of one value)
  MULTI = auto()
  # image storage in a kernel body: IMAGE(PARAM), arg (height, width), the PARAM's flat elements seen as RGBA pixels
  IMAGE = auto()

  def __repr__(self) -> str: return f"Ops.{self.name}"


class GroupOp:
  """Ops by group. Sets, so membership tests are cheap."""
  Source = frozenset({Ops.CONST, Ops.PARAM, Ops.BUFFER})
  Storage = frozenset({Ops.PARAM, Ops.BUFFER})
  Movement = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP})
  Unary = frozenset({Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.TRUNC})
  Binary = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX, Ops.IDIV, Ops.MOD, Ops.FDIV, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ,
                      Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR})
  Ternary = frozenset({Ops.WHERE})
  Cast = frozenset({Ops.CAST, Ops.BITCAST})
  ALU = Unary | Binary | Ternary
  Elementwise = ALU | Cast
  Comparison = frozenset({Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ})
  Commutative = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR})
  Reduce = frozenset({Ops.REDUCE})
  ReduceOps = frozenset({Ops.ADD, Ops.MAX, Ops.MUL})  # the ops a REDUCE may combine with
  Call = frozenset({Ops.CALL, Ops.TUPLE, Ops.GETTUPLE})
  Effect = frozenset({Ops.STORE, Ops.ATOMIC, Ops.GROUP, Ops.END})  # what a GROUP may hold
  Writes = frozenset({Ops.STORE, Ops.ATOMIC})  # the effects that write memory: a plain store and an atomic update
  Access = Writes | {Ops.LOAD}  # the nodes that touch memory through an INDEX
  AtomicOps = frozenset({Ops.ADD, Ops.MAX})  # the ops an ATOMIC may combine with
  Order = frozenset({Ops.STORE, Ops.ATOMIC, Ops.AFTER, Ops.GROUP, Ops.SINK, Ops.CONTIGUOUS, Ops.DETACH, Ops.COPY})
  RangeForm = frozenset({Ops.RANGE, Ops.END, Ops.INDEX, Ops.LOAD, Ops.SPECIAL, Ops.ATOMIC, Ops.IMAGE})  # kernel-body ops
  Program = frozenset({Ops.LINEAR, Ops.PROGRAM, Ops.SOURCE})
  Variable = frozenset({Ops.DEFINE_VAR, Ops.BIND})
  Multi = frozenset({Ops.MULTI})  # a tensor over several devices (TENSOR stage only: the multi pass resolves it)
  groups: dict[str, frozenset] = {"source": Source, "movement": Movement, "elementwise": Elementwise, "reduce": Reduce,
                                  "call": Call, "effects": Order, "range": RangeForm, "program": Program, "variable": Variable,
                                  "multi": Multi}


def op_group(op: Ops) -> str:
  """The name of the group an op belongs to (source, movement, elementwise, reduce, call, effects, range, program)."""
  for name, ops in GroupOp.groups.items():
    if op in ops: return name
  raise KeyError(op)

"""A fuzz case, and the weights of every generator's choices: their names, their defaults and their validation.

A weight is named by the feature it scales (`prefix:name`, the features a case records): coverage steering
(fuzz.engine.coverage) boosts the weights of features of cases that fired rare rules, and `tinyspec fuzz --weights`
sets them. A generator reads its weights as `weights.get(name, default)`, so every default is written here once, next to
its name. The kinds of case (fuzz.generate.kinds: one row each) are weighted by `kind:<key>`, the share of the cases
that kind takes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from tinyspec.dtype import dtypes
from tinyspec.uop import Ops, UOp


@dataclass
class Case:
  """One fuzz case: a graph, its inputs {BUFFER id: array} and the lowering choices (LowerOptions fields)."""
  root: UOp
  inputs: dict[int, np.ndarray]
  options: dict[str, Any] = field(default_factory=dict)
  kind: str = "tensor"               # tensor: a TENSOR graph; kernel: a KERNEL_GRAPH (lowering starts after rangeify,
                                     # tinyspec.lower.start); symbolic: an index expression of fuzz.generate.symbolic
  seed: int | None = None
  index: int | None = None
  features: frozenset = frozenset()

  def copy_inputs(self) -> dict[int, np.ndarray]:
    return {k: v.copy() for k, v in self.inputs.items()}


# ---- the kinds of case: the default share of the cases each takes (weight kind:<key>, fuzz.generate.kinds) ----
KERNEL_SHARE = 0.1   # kernel graphs (weight "kind:kernel")
RMW_SHARE = 0.5      # of kernel cases, read-modify-write kernels (fuzz.generate.kernels; weight "kind:rmw")
INT_SHARE = 0.1      # integer kernels (fuzz.generate.int_kernels; weight "kind:int", which, like "kind:kernel", steering
                     # leaves alone): simplify's rules on signed and unsigned values and wrap points
EDGE_SHARE = 0.1     # edge kernels (fuzz.generate.edge_kernels; weight "kind:edge"): the points the spec defines where C
                     # does not, and special floats, through the constructs the renderers must guard
SCATTER_SHARE = 0.05  # scatter kernels (fuzz.generate.scatters; weight "kind:scatter"): atomics and the one-hot sums over
                      # data indices the scatter pass turns into them
MULTI_SHARE = 0.05  # of tensor cases, sharded tensor cases (fuzz.generate.shards; weight "kind:multi"): tensors over
                    # several devices, which the multi pass runs per device with gathers and all-reduces
COMPOSE_SHARE = 0.15  # of tensor cases, those built with the frontend's compositions (fuzz.generate.compositions; weight
                      # "kind:compose"): convolutions, pooling, gathers and scatters the one-op tensor generator rarely reaches
ALIAS_SHARE = 0.1  # of tensor cases, those about aliasing (fuzz.generate.aliasing; weight "kind:alias"): a buffer read and
                   # written by one kernel, stores through views, versions read unordered, assign chains across calls

# ---- the tensor generator's choices (fuzz.generate.tensor) ----
NUM_DTYPES = (*dtypes.ints, dtypes.float32, dtypes.float64)
VALUE_DTYPES = (dtypes.bool, *NUM_DTYPES)
SMALL_FLOATS = dtypes.small_floats  # weights dtype:<name>; dtype:small scales the share of cases that hold them
UNARY_FLOAT = (Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.TRUNC)
ARITH = (Ops.ADD, Ops.SUB, Ops.MUL, Ops.MAX)
INT_ONLY = (Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR)
BITWISE = (Ops.AND, Ops.OR, Ops.XOR)
COMPARE = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)
ELEMENTWISE = (Ops.NEG, *UNARY_FLOAT, *ARITH, *INT_ONLY, *BITWISE, *COMPARE, Ops.WHERE, Ops.CAST, Ops.BITCAST)
MOVEMENT = (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP)
# what a generator step builds, and how often
STEP_WEIGHTS: dict[str, float] = {
  "elementwise": 6.0, "movement": 3.0, "reduce": 1.5, "call": 1.2, "assign": 0.8, "contiguous": 0.5, "detach": 0.3,
  "input": 0.6, "tuple": 0.2,
}
# steps of the outer graph drawn from the generator's side Random (see TensorGen): the chance of each before every step
SIDE_STEP_WEIGHTS: dict[str, float] = {"copy": 0.03, "opaque": 0.04}

# ---- the other generators' choices ----
ALIAS_FORMS = ("inplace", "target_view", "two_versions", "old_read", "call")  # aliasing's write forms, each a feature alias:<form>
# the frontend compositions of fuzz.generate.compositions, each a feature compose:<name> with its weight
COMPOSITION_NAMES = ("conv2d", "max_pool2d", "pad", "gather", "scatter", "layout", "window", "scan", "contract", "embedding")
# edge kernel constructs (fuzz.generate.edge_kernels), each a feature edge:<name> whose weight scales it; "small" (weight
# edge:small, a share of its own) takes a construct's place
EDGE_CONSTRUCT_WEIGHTS: dict[str, float] = {"divmod": 1.0, "shift": 1.0, "cast": 1.0, "negzero": 1.0, "nan": 1.0, "math64": 1.0, "wrap": 1.0}
EDGE_CONSTRUCTS = (*EDGE_CONSTRUCT_WEIGHTS, "small")
SCATTER_FORM_WEIGHTS: dict[str, float] = {"onehot": 1.0, "atomic": 1.0}  # scatter kernels' forms, weights scatter:<form>
# sharded tensor cases' steps (fuzz.generate.shards), weights multi:<step>; multi:grad scales the share that take gradients
MULTI_STEP_WEIGHTS: dict[str, float] = {"elementwise": 3.0, "reduce": 1.5, "view": 2.5, "matmul": 0.7, "to": 0.5, "call": 1.2}
# optimize actions (fuzz.generate.opts): the action, and the kind of range it names
OPT_WEIGHTS: dict[str, float] = {"opt:split": 2.0, "opt:unroll": 1.5, "opt:global": 0.7, "opt:on_reduce": 1.0, "opt:on_loop": 1.0}
# lowering with images (LowerOptions.images: eligible kernel args become RGBA images), weights images:<off|on>
IMAGE_SHARE = {"off": 1.0, "on": 0.25}


def default_weights() -> dict[str, float]:
  """Weights of every generator choice, by feature name (step:*, op:*, dtype:*, callify:*, realize:*, opts:*): the ones
  coverage steering may boost."""
  w = {f"step:{k}": v for k, v in {**STEP_WEIGHTS, **SIDE_STEP_WEIGHTS}.items()}
  w.update({f"op:{o.name}": 1.0 for o in (*ELEMENTWISE, *MOVEMENT)})
  w.update({f"op:{o.name}": 1.0 for o in (Ops.CAST, Ops.BITCAST)})
  w.update({f"dtype:{d.name}": 1.0 for d in VALUE_DTYPES})
  w.update({"dtype:float32": 3.0, "dtype:int32": 2.0})
  w.update({"reduce:ADD": 1.0, "reduce:MAX": 1.0, "reduce:MUL": 0.4})
  w.update({"callify:inline": 2.0, "callify:precompile": 1.0, "realize:minimal": 2.0, "realize:all": 1.0,
            "opts:none": 2.0, "opts:some": 1.0, "call:nested": 0.7, "call:reuse": 0.5, "call:capture": 0.5, "assign:chain": 1.0,
            "copy:back": 1.0, "opaque:two_reads": 1.0, "opaque:inplace": 1.0, "opaque:effect_entry": 1.0,
            "divmod:bounded": 1.0, "kind:rmw": RMW_SHARE, "var:bound": 1.0, "kind:compose": COMPOSE_SHARE,
            "value:edge": 1.0, "value:special": 1.0, "dtype:small": 1.0})
  w.update({f"dtype:{d.name}": 1.0 for d in SMALL_FLOATS})
  w.update({f"compose:{k}": 1.0 for k in (*COMPOSITION_NAMES, "call", "cast")})
  w.update({"kind:alias": ALIAS_SHARE, **{f"alias:{k}": 1.0 for k in ALIAS_FORMS}})
  w.update(OPT_WEIGHTS)
  return w


def weight_names(kind_weights: Sequence[str]) -> set[str]:
  """Every weight name a generator reads: default_weights' names, the ones whose defaults stay with the generator that
  reads them (images, edge constructs, scatter forms, sharded steps), and the kinds' (kind_weights: kind:<key> of each
  row of fuzz.generate.kinds.KINDS)."""
  return {*default_weights(), *(f"images:{k}" for k in IMAGE_SHARE), *(f"edge:{k}" for k in EDGE_CONSTRUCTS),
          *(f"scatter:{k}" for k in SCATTER_FORM_WEIGHTS), *(f"multi:{k}" for k in (*MULTI_STEP_WEIGHTS, "grad")), *kind_weights}


def check_weights(weights: Mapping[str, Any], kind_weights: Sequence[str]) -> dict[str, float]:
  """weights as {name: float}, each name one a generator reads (weight_names) and each weight a finite number of at least
  0; raises ValueError naming every name or weight that is not."""
  known = weight_names(kind_weights)
  bad = [f"{k!r} is not a generator weight" for k in weights if k not in known]
  for k, v in weights.items():
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
      bad.append(f"weight {k!r} is {v!r}, not a finite number of at least 0")
  if bad: raise ValueError("; ".join(bad))
  return {k: float(v) for k, v in weights.items()}
